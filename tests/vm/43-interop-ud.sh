#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UD, UC and SRQ against rdma_rxe, as 33-rc-interop.sh does for RC: rxe0
# on vethA in init_net (10.77.0.1), sroce1 on vethB in nsB (10.77.0.2).
# Each side serves in turn: ibv_ud_pingpong, ibv_uc_pingpong and
# ibv_srq_pingpong with -g and the data checked. 45-interop-cm.sh does
# rdma_cm against rxe.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

setup() {
	vm_veth_initns_and_ns vethA nsB vethB 10.77.0.1 10.77.0.2 1500 &&
	modprobe rdma_rxe &&
	rdma link add rxe0 type rxe netdev vethA &&
	sroce_load &&
	ip netns exec nsB rdma link add sroce1 type sroce netdev vethB &&
	GID_RXE=$(sroce_wait_gid rxe0 "$(sroce_ipv4_gid 10.77.0.1)") &&
	GID_SROCE=$(sroce_wait_gid sroce1 "$(sroce_ipv4_gid 10.77.0.2)")
}

# sides rxe|sroce: the serving side.
sides() {
	if [ "$1" = rxe ]; then
		S_NS=- S_DEV=rxe0 S_GID=$GID_RXE S_IP=10.77.0.1
		C_NS=nsB C_DEV=sroce1 C_GID=$GID_SROCE C_IP=10.77.0.2
	else
		S_NS=nsB S_DEV=sroce1 S_GID=$GID_SROCE S_IP=10.77.0.2
		C_NS=- C_DEV=rxe0 C_GID=$GID_RXE C_IP=10.77.0.1
	fi
}

# pingpong SIDE PROGRAM SIZE [ARGS...]
pingpong() {
	local side=$1 prog=$2 size=$3 n=30 f
	shift 3
	sides "$side"
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

tap_plan 8
setup || tap_bail "set-up: rxe0 in init_net, sroce1 in nsB"
for server in rxe sroce; do
	tap_check "$server serves: ibv_ud_pingpong -g -c" pingpong "$server" ibv_ud_pingpong 1024
	tap_check "$server serves: ibv_uc_pingpong -g -c" pingpong "$server" ibv_uc_pingpong 4096
	tap_check "$server serves: ibv_srq_pingpong -q 8 -g -c" pingpong "$server" ibv_srq_pingpong 1024 -q 8
done
tap_eq "sroce1: back to the MAD layer's own objects" \
	"$(sroce_resources sroce1)" "${SROCE_MAD_OBJECTS/sroce0/sroce1}"
tap_check "sroce1: nothing corrupt or malformed from rxe" \
	bash -c 'for c in rx_drop_icrc rx_drop_malformed tx_errors; do
		v=$(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/$c)
		echo "sroce1 $c $v"; [ "$v" = 0 ] || exit 1
	done'
tap_done
