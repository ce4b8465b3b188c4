#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UD, UC and SRQ against rdma_rxe, as 33-rc-interop.sh does for RC: rxe0
# on vethA in init_net (10.77.0.1), sroce1 on vethB in nsB (10.77.0.2).
# Each side serves in turn: ibv_ud_pingpong, ibv_uc_pingpong and
# ibv_srq_pingpong with -g and the data checked, then perftest UD
# (ib_send_bw, ib_send_lat) and UC (ib_send_bw, ib_write_bw). 45-interop-cm.sh does
# rdma_cm against rxe.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# pingpong SIDE PROGRAM SIZE [ARGS...]
pingpong() {
	local side=$1 prog=$2 size=$3 n=30 f
	shift 3
	sroce_rxe_sides "$side"
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$prog" -d "$S_DEV" -g "$S_GID" -s "$size" -n $n -c "$@" -- \
		"$prog" -d "$C_DEV" -g "$C_GID" -s "$size" -n $n -c "$@" "$S_IP" ||
		return 1
	for f in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		tail -n 2 "$f"
		grep -Eq "^$((2 * n * size)) bytes in .* seconds" "$f" || return 1
		grep -Eq "^$n iters in" "$f" || return 1
	done
}

# perf SIDE TEST ARGS...: perftest with rxe on one end, 200 iterations
# (as 40 does); the client's row must show them all and a non-zero figure.
perf() {
	local t=$2 n=200 row
	sroce_rxe_sides "$1"
	shift 2
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$t" -d "$S_DEV" -x "$S_GID" -n $n "$@" -- \
		"$t" -d "$C_DEV" -x "$C_GID" -n $n "$@" "$S_IP" || return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t $*: $row"
	[ -n "$row" ] && awk -v n=$n '{ exit !($2 == n && $3 > 0) }' <<<"$row"
}

tap_plan 16
sroce_rxe_pair || tap_bail "set-up: rxe0 in init_net, sroce1 in nsB"
for server in rxe sroce; do
	tap_check "$server serves: ibv_ud_pingpong -g -c" pingpong "$server" ibv_ud_pingpong 1024
	tap_check "$server serves: ibv_uc_pingpong -g -c" pingpong "$server" ibv_uc_pingpong 4096
	tap_check "$server serves: ibv_srq_pingpong -q 16 -g -c" pingpong "$server" ibv_srq_pingpong 1024 -q 16
	tap_check "$server serves: ib_send_bw -c UD" perf "$server" ib_send_bw -c UD
	tap_check "$server serves: ib_send_lat -c UD" perf "$server" ib_send_lat -c UD
	tap_check "$server serves: ib_send_bw -c UC" perf "$server" ib_send_bw -c UC
	tap_check "$server serves: ib_write_bw -c UC" perf "$server" ib_write_bw -c UC
done
tap_eq "sroce1: back to the MAD layer's own objects" \
	"$(sroce_resources sroce1)" "${SROCE_MAD_OBJECTS/sroce0/sroce1}"
tap_check "sroce1: nothing corrupt or malformed from rxe" sroce_clean_from_rxe sroce1
tap_done
