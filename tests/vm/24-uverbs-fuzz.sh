#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Hostile userspace at the system-call level: sroce_uverbs_fuzz writes
# random uverbs commands straight to sroce0's /dev/infiniband/uverbsN
# (live, stale and random handles, edge values, random udata sizes, bad
# headers and response pointers, guided walks to RTS, garbage in mmap'd
# rings), several seeds. Every refusal must carry a documented errno;
# afterwards no object is left, a connection between sroce0 and sroce1
# still carries data, the module unloads, and the kernel log is clean
# (run-all checks it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

OPS=${OPS:-25000}
SEEDS=${SEEDS:-"1 2 3 4"}
sroce_debug_kernel && OPS=5000

fuzz() {
	# The tool's own TAP lines become diagnostics; its exit status the point.
	ip netns exec nsA timeout 600 "$SROCE_BIN/sroce_uverbs_fuzz" -d sroce0 \
		-g "$SROCE_GID_A" -n "$OPS" -s "$1"
}

pingpong() {
	sroce_pair nsB nsA 18515 \
		ibv_rc_pingpong -d sroce1 -g "$SROCE_GID_B" -s 4096 -n 20 -c -- \
		ibv_rc_pingpong -d sroce0 -g "$SROCE_GID_A" -s 4096 -n 20 -c 10.77.0.2 &&
	grep -Eq "^$((2 * 20 * 4096)) bytes in" "$SROCE_PAIR_DIR/client"
}

set -- $SEEDS
tap_plan $(($# + 4))
sroce_two_devices || tap_bail "set-up: sroce0/sroce1"
for seed in $SEEDS; do
	TAP_VERBOSE=1 tap_check "seed $seed: $OPS random uverbs commands, every errno documented" \
		fuzz "$seed"
done
tap_check "no object left: sroce0 back to the MAD layer's own" \
	sroce_wait 10 bash -c '[ "$(sroce_resources sroce0)" = "'"$SROCE_MAD_OBJECTS"'" ]'
tap_check "sroce0 <-> sroce1 still carry data (ibv_rc_pingpong -c)" pingpong
tap_check "bad_wqe or bad_ring_index counted the garbage" \
	bash -c '[ $(( $(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/bad_wqe) +
		$(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/bad_ring_index) )) -gt 0 ]'
tap_check "the device is deleted and the module unloads" \
	bash -c 'ip netns exec nsA rdma link delete sroce0 &&
		ip netns exec nsB rdma link delete sroce1 && rmmod sroce'
tap_done
