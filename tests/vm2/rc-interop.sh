#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC interop across two kernels (tools/vm/run2): guest A runs rdma_rxe
# (rxe0), guest B runs sroce (sroce0), each on its eth1, joined by a
# virtual Ethernet link. Both guests run this script with the same list of
# tests; for each, one side serves and the other drives, and each side
# reports its own half as a TAP point: ibv_rc_pingpong at 1 B, 4 KiB and
# 1 MiB (data checked), sroce_integrity (every byte) and perftest's RC
# send/write/read/atomic bandwidth and latency tests with the ibv_wr_*
# API, the bandwidth tests also with --use_old_post_send (ibv_post_send;
# the latency tests post the same work requests); each side serves in
# turn.
#
#   tools/vm/run2 --a 'tests/vm2/rc-interop.sh' --b 'tests/vm2/rc-interop.sh'
#
# With VM2_V1=1 both guests run sroce loaded with roce_v1=1 and talk RoCE
# v1 (their v1 GIDs of the IPv4 address): a shorter list, with XRC
# (ibv_xsrq_pingpong, perftest -c XRC; rdma_rxe has none) as sroce meets
# sroce here, each side serving in turn, and afterwards each side's sroce0
# counted no dropped frame.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

BIN=$SROCE_BIN/sroce_integrity
role=${VM_ROLE:?run me through tools/vm/run2}

V1=${VM2_V1:-0}
GID_TYPE="RoCE v2"
if [ "$role" = a ] && [ "$V1" != 1 ]; then
	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$VM_IFNAME"
	DEV=rxe0
else
	[ "$V1" = 1 ] && export SROCE_MODPARAMS="roce_v1=1" GID_TYPE="IB/RoCE v1"
	sroce_load && rdma link add sroce0 type sroce netdev "$VM_IFNAME"
	DEV=sroce0
fi
GID=$(sroce_wait_gid "$DEV" "$(sroce_ipv4_gid "$VM_LOCAL_IP")") &&
GID=$(sroce_gid_index "$DEV" "$(sroce_ipv4_gid "$VM_LOCAL_IP")" "$GID_TYPE")

# Each test: "SERVING_ROLE NAME" ; the command lines follow from NAME.
# "old:TEST" is TEST with --use_old_post_send (ibv_post_send rather than
# the ibv_wr_* API).
tests=()
if [ "$V1" = 1 ]; then
	list=(pingpong-4096 pingpong-1048576 integrity ib_write_bw ib_read_bw
	      ib_send_bw ib_atomic_bw ib_read_lat xsrq xrc:ib_send_bw
	      xrc:ib_read_bw)
else
	list=(pingpong-1 pingpong-4096 pingpong-1048576 integrity
	      ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw
	      ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat
	      old:ib_write_bw old:ib_read_bw old:ib_send_bw old:ib_atomic_bw)
fi
for t in "${list[@]}"; do
	tests+=("a $t" "b $t")
done

# cmd NAME server|client: the command line for this side.
cmd() {
	local name=$1 side=$2 peer=()
	[ "$side" = client ] && peer=("$VM_PEER_IP")
	case $name in
	pingpong-*)
		echo ibv_rc_pingpong -d "$DEV" -g "$GID" -s "${name#pingpong-}" \
			-n 20 -c "${peer[@]}" ;;
	xsrq)
		echo ibv_xsrq_pingpong -d "$DEV" -g "$GID" -m 1024 -n 20 "${peer[@]}" ;;
	xrc:*)
		echo "${name#xrc:}" -d "$DEV" -x "$GID" -c XRC -n 300 "${peer[@]}" ;;
	integrity)
		if [ "$side" = server ]; then
			echo "$BIN" -s -d "$DEV" -g "$GID" -w 60
		else
			echo "$BIN" -c "$VM_PEER_IP" -d "$DEV" -g "$GID" -w 60 --quick
		fi ;;
	old:*)
		echo "${name#old:}" -d "$DEV" -x "$GID" -n 300 --use_old_post_send \
			"${peer[@]}" ;;
	*)
		# Few iterations: rxe in a 1-vCPU guest moves ~10 MB/s.
		echo "$name" -d "$DEV" -x "$GID" -n 300 "${peer[@]}" ;;
	esac
}

port_of() { case $1 in integrity) echo 18525 ;; *) echo 18515 ;; esac; }

# The client's output must show the work was done, not just an exit 0.
client_ok() {
	local name=$1 out=$2
	case $name in
	pingpong-*) grep -Eq "^$((40 * ${name#pingpong-})) bytes in" "$out" ;;
	integrity) grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' "$out" ;;
	xsrq) grep -qx success "$out" ;;
	*) grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$out" ;;
	esac
}

serve() {
	local name=$1 i=$2 pid rc
	# shellcheck disable=SC2046 # word splitting of the command line
	timeout 180 $(cmd "$name" server) >/tmp/vm2-server.out 2>&1 </dev/null &
	pid=$!
	vm_wait_listen "$(port_of "$name")" 60 && vm_announce $((7100 + i))
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || tail -n 25 /tmp/vm2-server.out
	return "$rc"
}

drive() {
	local name=$1 i=$2 rc
	vm_wait_tcp "$VM_PEER" $((7100 + i)) 180 || return 1
	# shellcheck disable=SC2046
	timeout 180 $(cmd "$name" client) >/tmp/vm2-client.out 2>&1 </dev/null
	rc=$?
	if [ "$rc" = 0 ]; then tail -n 2 /tmp/vm2-client.out; else tail -n 25 /tmp/vm2-client.out; fi
	[ "$rc" = 0 ] && client_ok "$name" /tmp/vm2-client.out
}

# v1_clean: sroce0 received, and nothing malformed, corrupt or unrouted.
v1_clean() {
	local r
	r=$(sroce_counter sroce0 rx_packets)
	echo "sroce0 rx_packets $r"
	[ "$r" -gt 0 ] && sroce_nothing_malformed sroce0
}

# VM2_TESTS="name ..." keeps only those (for chasing one).
if [ -n "${VM2_TESTS:-}" ]; then
	keep=()
	for t in "${tests[@]}"; do
		[[ " $VM2_TESTS " == *" ${t#* } "* ]] && keep+=("$t")
	done
	tests=("${keep[@]}")
fi

tap_plan $((${#tests[@]} + V1))
[ -n "$GID" ] || tap_bail "$DEV on $VM_IFNAME has no $GID_TYPE GID for $VM_LOCAL_IP"
tap_diag "$DEV: $GID_TYPE GID index $GID"
for i in "${!tests[@]}"; do
	read -r server name <<<"${tests[$i]}"
	if [ "$server" = "$role" ]; then
		tap_check "$DEV serves $name" serve "$name" "$i"
	else
		tap_check "$DEV drives $name" drive "$name" "$i"
	fi
done
[ "$V1" = 1 ] && tap_check "RoCE v1: sroce0 received frames, dropped none" v1_clean
tap_done
