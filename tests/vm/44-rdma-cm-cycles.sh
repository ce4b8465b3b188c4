#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma_cm connections made and torn down, between sroce1 (nsB,
# 10.77.0.2) and sroce0 (nsA): perftest over rdma_cm (-R), then 200
# connect / send / disconnect cycles in a row (sroce_cm_cycles: one
# process a side, every message checked) after which neither namespace
# shows a QP (but QP1) or a cm_id, and a new connection (rping, data
# checked) works.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

SRV=10.77.0.2
CYCLES=${CYCLES:-200}

# rping COUNT PORT: client and server print every ping's data (-v),
# both check it (-V); the lines are recomputed here.
rping_run() {
	# Line-buffered: a message on stderr must not land inside a line.
	sroce_cm_pair nsB nsA "$2" \
		stdbuf -oL rping -s -a $SRV -p "$2" -C "$1" -v -V -- \
		stdbuf -oL rping -c -a $SRV -p "$2" -C "$1" -v -V || return 1
	grep -v "ping data: " "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"

	! grep -q "mismatch" "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server" &&
	sroce_rping_check "$SROCE_PAIR_DIR/client" "$1" "ping data: " &&
	sroce_rping_check "$SROCE_PAIR_DIR/server" "$1" "server ping data: "
}

perf_r() {
	local t=$1 n=200 row
	sroce_cm_pair nsB nsA 18515 \
		"$t" -d sroce1 -R -n $n -- "$t" -d sroce0 -R -n $n $SRV || return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t -R: $row"
	[ -n "$row" ] && awk -v n=$n '{ exit !($2 == n && $3 > 0) }' <<<"$row"
}

cycles_run() {
	SROCE_PAIR_TMO=240 sroce_cm_pair nsB nsA 7480 \
		"$SROCE_BIN/sroce_cm_cycles" -s -b $SRV -p 7480 -n "$CYCLES" -- \
		"$SROCE_BIN/sroce_cm_cycles" -c $SRV -p 7480 -n "$CYCLES" || return 1
	grep -x "cm_cycles: $CYCLES cycles, $CYCLES messages checked" \
		"$SROCE_PAIR_DIR/client" &&
	grep -x "cm_cycles: $CYCLES cycles, $CYCLES messages checked" \
		"$SROCE_PAIR_DIR/server"
}

# No QP but QP1 and no cm_id, seen from each namespace.
no_leaks() {
	local ns out
	for ns in nsA nsB; do
		out=$(ip netns exec $ns rdma resource show qp)
		echo "$ns qp: $out"
		# Only the GSI QPs (lqpn 1) of the two devices.
		[ "$(grep -c . <<<"$out")" = 2 ] || return 1
		grep -v "lqpn 1 " <<<"$out" | grep -q . && return 1
		out=$(ip netns exec $ns rdma resource show cm_id)
		echo "$ns cm_id: $out"
		[ -z "$out" ] || return 1
	done
	sroce_wait 10 bash -c '[ "$(sroce_resources sroce0)" = "'"$SROCE_MAD_OBJECTS"'" ]' &&
	sroce_wait 10 bash -c '[ "$(sroce_resources sroce1)" = "'"${SROCE_MAD_OBJECTS/sroce0/sroce1}"'" ]'
}

tap_plan 6
T0=$SECONDS
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"
tap_check "ib_send_bw -R (rdma_cm)" perf_r ib_send_bw
tap_check "ib_write_bw -R (rdma_cm)" perf_r ib_write_bw
tap_check "$CYCLES rdma_cm connect/send/disconnect cycles in a row" cycles_run
tap_check "no QP or cm_id left over in either namespace" no_leaks
tap_check "one more connection works: rping -C 10, data checked" rping_run 10 7177
tap_diag "$((SECONDS - T0)) s"
tap_check "nothing corrupt or unrouted" \
	bash -c 'for d in sroce0 sroce1; do
		for c in rx_drop_icrc rx_drop_malformed tx_errors; do
			v=$(cat /sys/class/infiniband/$d/ports/1/hw_counters/$c)
			echo "$d $c $v"; [ "$v" = 0 ] || exit 1
		done
	done'
tap_done
