#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC between two hosts: ibv_rc_pingpong between sroce0 (nsA) and sroce1
# (nsB) at 1 B, 4 KiB and 1 MiB, each device as the server in turn, with
# the received buffers checked (-c), at netdev MTU 1500 (path MTU 1024)
# and 9000 (path MTU 4096).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# pingpong SERVER_NS SERVER_DEV SERVER_GID CLIENT_NS CLIENT_DEV CLIENT_GID
#          SERVER_IP SIZE PATH_MTU
pingpong() {
	local n=50 out
	[ "$8" -lt 1048576 ] || n=20
	sroce_pair "$1" "$4" 18515 \
		ibv_rc_pingpong -d "$2" -g "$3" -s "$8" -n "$n" -m "$9" -c -- \
		ibv_rc_pingpong -d "$5" -g "$6" -s "$8" -n "$n" -m "$9" -c "$7" ||
		return 1
	out=$(cat "$SROCE_PAIR_DIR/client")
	echo "$out"
	contains "$out" "^$((2 * n * $8)) bytes in .* seconds" &&
	contains "$out" "^$n iters in"
}

tap_plan 13
for mtu in 1500 9000; do
	pmtu=1024
	[ "$mtu" = 1500 ] || pmtu=4096
	sroce_reset
	sroce_two_devices "$mtu" || tap_bail "set-up: sroce0/sroce1 at MTU $mtu"
	for size in 1 4096 1048576; do
		tap_check "MTU $mtu: $size B, sroce1 serves" pingpong \
			nsB sroce1 "$SROCE_GID_B" nsA sroce0 "$SROCE_GID_A" \
			10.77.0.2 "$size" "$pmtu"
		tap_check "MTU $mtu: $size B, sroce0 serves" pingpong \
			nsA sroce0 "$SROCE_GID_A" nsB sroce1 "$SROCE_GID_B" \
			10.77.0.1 "$size" "$pmtu"
	done
done
# Retransmissions are not checked: a TCG guest may starve a softirq for
# longer than a retransmission timeout.
tap_check "nothing malformed, corrupt or unrouted on a clean link" \
	sroce_nothing_malformed
tap_done
