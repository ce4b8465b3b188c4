#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# More rdma_cm software against rdma_rxe (45-interop-cm.sh has rping,
# ucmatose, udaddy and multicast): rxe0 on vethA in init_net (10.77.0.1),
# sroce1 on vethB in nsB (10.77.0.2). Each side serves in turn:
# rdma_server/rdma_client, rstream and riostream (rsockets, data
# verified), perftest over rdma_cm (ib_send_bw -R, ib_write_bw -R). Then
# connect/send/disconnect cycles in a row with sroce_cm_cycles (every
# message checked), after which sroce1 holds only the MAD layer's objects,
# no cm_id is left on either side, and a new connection works.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# 100 each way: 44-rdma-cm-cycles.sh makes 200 between two sroce
# devices; across to rxe, 100 show the same leaks at half the CI time.
CYCLES=${CYCLES:-100}

rdma_server_run() {
	local f
	sroce_rxe_sides "$1"
	sroce_cm_pair "$S_NS" "$C_NS" 7473 \
		rdma_server -s "$S_IP" -p 7473 -- rdma_client -s "$S_IP" -p 7473 ||
		return 1
	for f in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		cat "$f"
		grep -Eq "^rdma_(server|client): end 0$" "$f" || return 1
	done
}

# rs_run SIDE PROGRAM PORT: -T v fills every buffer with a pattern and
# checks it on the other side ("data verification failed").
rs_run() {
	local prog=$2 port=$3
	sroce_rxe_sides "$1"
	sroce_cm_pair "$S_NS" "$C_NS" "$port" \
		"$prog" -b "$S_IP" -p "$port" -S 65536 -C 20 -T v -- \
		"$prog" -s "$S_IP" -p "$port" -S 65536 -C 20 -T v || return 1
	cat "$SROCE_PAIR_DIR/client"
	sroce_rstream_ok "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"
}

# perf_r SIDE TEST: perftest connected through rdma_cm, every iteration
# in the client's row.
perf_r() {
	local t=$2 n=200 row
	sroce_rxe_sides "$1"
	sroce_cm_pair "$S_NS" "$C_NS" 18515 \
		"$t" -d "$S_DEV" -R -n $n -- "$t" -d "$C_DEV" -R -n $n "$S_IP" ||
		return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t -R: $row"
	[ -n "$row" ] && awk -v n=$n '{ exit !($2 == n && $3 > 0) }' <<<"$row"
}

# cycles_run SIDE COUNT: one process a side, COUNT connect / send /
# disconnect cycles, every message checked by both.
cycles_run() {
	local want="cm_cycles: $2 cycles, $2 messages checked"
	sroce_rxe_sides "$1"
	SROCE_PAIR_TMO=300 sroce_cm_pair "$S_NS" "$C_NS" 7480 \
		"$SROCE_BIN/sroce_cm_cycles" -s -b "$S_IP" -p 7480 -n "$2" -- \
		"$SROCE_BIN/sroce_cm_cycles" -c "$S_IP" -p 7480 -n "$2" || return 1
	tail -n 1 "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"
	grep -qx "$want" "$SROCE_PAIR_DIR/client" &&
	grep -qx "$want" "$SROCE_PAIR_DIR/server"
}

# No cm_id on either side, no QP but QP1 on either device, and sroce1
# back to the MAD layer's objects.
no_leaks() {
	local out
	out=$(rdma resource show cm_id; ip netns exec nsB rdma resource show cm_id)
	echo "cm_id: $out"
	[ -z "$out" ] || return 1
	# Both devices' QPs (rdma's namespace mode is shared): only QP1s.
	out=$(rdma resource show qp)
	echo "qp: $out"
	! grep -v "lqpn 1 " <<<"$out" | grep -q . &&
	grep -q "^link sroce1/1 lqpn 1 " <<<"$out" &&
	sroce_wait 10 bash -c \
		'[ "$(sroce_resources sroce1)" = "'"${SROCE_MAD_OBJECTS/sroce0/sroce1}"'" ]'
}

rping_run() {
	sroce_rxe_sides "$1"
	sroce_cm_pair "$S_NS" "$C_NS" 7177 \
		stdbuf -oL rping -s -a "$S_IP" -p 7177 -C 10 -v -V -- \
		stdbuf -oL rping -c -a "$S_IP" -p 7177 -C 10 -v -V || return 1
	sroce_rping_check "$SROCE_PAIR_DIR/client" 10 "ping data: " &&
	sroce_rping_check "$SROCE_PAIR_DIR/server" 10 "server ping data: "
}

tap_plan 16
sroce_rxe_pair || tap_bail "set-up: rxe0 in init_net, sroce1 in nsB"
for server in rxe sroce; do
	tap_check "$server serves: rdma_server / rdma_client" rdma_server_run $server
	tap_check "$server serves: rstream -T v (rsockets, data verified)" \
		rs_run $server rstream 7475
	tap_check "$server serves: riostream -T v (rsockets, RDMA writes, data verified)" \
		rs_run $server riostream 7476
	tap_check "$server serves: ib_send_bw -R (rdma_cm)" perf_r $server ib_send_bw
	tap_check "$server serves: ib_write_bw -R (rdma_cm)" perf_r $server ib_write_bw
done
tap_check "rxe serves: $CYCLES rdma_cm connect/send/disconnect cycles in a row" \
	cycles_run rxe "$CYCLES"
tap_check "sroce serves: $CYCLES cycles in a row" cycles_run sroce "$CYCLES"
tap_check "no cm_id and no QP but QP1 left on either side" no_leaks
tap_check "one more connection works, rxe serving: rping -C 10, data checked" \
	rping_run rxe
tap_check "... and sroce serving" rping_run sroce
tap_check "sroce1: nothing corrupt or malformed from rxe" sroce_clean_from_rxe sroce1
tap_done
