#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC data integrity between sroce0 (nsA) and sroce1 (nsB) with
# tests/tools/sroce_integrity: SEND, SEND with immediate, WRITE, WRITE
# with immediate and READ from 0 B to 8 MiB, odd sizes and offsets,
# multi-SGE, every byte and every completion checked; at path MTU 1024
# and 4096; then over a lossy link (netem loss 5%, reorder 25%,
# duplicate 2%, and again with corrupt 1%), where every byte must still
# be right, nothing complete twice, and the retransmission and ICRC
# counters must show the recovery.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity

# integrity [CLIENT_ARGS...]: sroce1 serves, sroce0 drives.
integrity() {
	sroce_pair nsB nsA 18525 \
		"$BIN" -s -d sroce1 -g "$SROCE_GID_B" -w 60 -- \
		"$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -w 60 "$@" ||
		return 1
	tail -n 3 "$SROCE_PAIR_DIR/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/server"
}

netem() {
	tc -n nsA qdisc replace dev vethA root netem "$@" &&
	tc -n nsB qdisc replace dev vethB root netem "$@"
}

zc_param=/sys/module/sroce/parameters/zero_copy_tx

tap_plan 11
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"
tap_check "all ops, 0 B..8 MiB, path MTU 1024" integrity
# sroce0 sends SEND/WRITE data, sroce1 READ responses: both lend pages.
tap_check "payloads went out zero-copy (both directions)" \
	sroce_counters_nonzero sroce0 tx_zero_copy_packets
tap_check "... READ responses too" \
	sroce_counters_nonzero sroce1 tx_zero_copy_packets
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500, copying"
echo 0 >"$zc_param"
tap_check "zero_copy_tx=0: all ops, every byte right" integrity --quick
echo 1 >"$zc_param"
tap_check "... and nothing was lent" bash -c \
	'for d in sroce0 sroce1; do
		v=$(cat /sys/class/infiniband/$d/ports/1/hw_counters/tx_zero_copy_packets)
		echo "$d tx_zero_copy_packets $v"; [ "$v" = 0 ] || exit 1
	done'
sroce_reset
sroce_two_devices 9000 || tap_bail "set-up at MTU 9000"
tap_check "all ops, 0 B..8 MiB, path MTU 4096" integrity -m 4096

sroce_reset
sroce_two_devices 1500 || tap_bail "set-up for netem"
netem delay 1ms loss 5% reorder 25% duplicate 2%
tap_check "netem loss 5% reorder 25% duplicate 2%: every byte right" \
	integrity --quick
tap_check "retransmissions counted" sroce_counters_nonzero sroce0 \
	retransmitted_packets seq_nak_received
tap_check "duplicates counted by the responder" sroce_counters_nonzero sroce1 \
	duplicate_requests seq_nak_sent
netem delay 1ms loss 5% reorder 25% duplicate 2% corrupt 1%
tap_check "... and corrupt 1%: every byte right" integrity --quick
tap_check "corrupt packets dropped on their ICRC" bash -c \
	'echo "sroce0 $(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rx_drop_icrc)";
	 echo "sroce1 $(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/rx_drop_icrc)";
	 (( $(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rx_drop_icrc) +
	    $(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/rx_drop_icrc) > 0 ))'
tap_done
