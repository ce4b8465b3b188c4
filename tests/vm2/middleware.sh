#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RDMA middleware between two guests (tools/vm/run2), sroce0 on each
# guest's eth1, Debian's packages unchanged: ucx_perftest UCT (rc_verbs,
# ud_verbs: latency, bandwidth, atomics; one device name on both hosts, as
# ucx_perftest's server needs), UCP with UCX_TLS=rc_verbs,ud_verbs and
# with UCX's defaults (two hosts: no shared memory between them, so UCX
# must pick sroce by itself), fi_pingpong over verbs;ofi_rxm with its data
# checked, qperf's RC tests over rdma_cm, and Open MPI over UCX with one
# rank on each guest (mpirun on B starts its daemon on A through
# tools/vm/tcp-rsh, as it would through ssh). Guest A serves, guest B
# drives; each side reports its own half of each test as a TAP point, and
# its half passes only if its own sroce0 received at least the test's
# message count (rx_packets): the traffic went through sroce.
#
#   tools/vm/run2 --a tests/vm2/middleware.sh --b tests/vm2/middleware.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2}
export UCX_WARN_UNUSED_ENV_VARS=n UCX_NET_DEVICES=sroce0:1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI tells nodes apart by name; both guests boot with the same one.
hostname "sroce-vm-$role"
sroce_load && rdma link add sroce0 type sroce netdev "$VM_IFNAME"
GID=$(sroce_wait_gid sroce0 "$(sroce_ipv4_gid "$VM_LOCAL_IP")")

# NAME MIN_A MIN_B PORT: the tests, with the packets the server (A) and
# the client (B) must receive at least (a bandwidth test's client gets
# acknowledgements only, which sroce may coalesce).
tests=(
	"uct-rc-am_lat 1000 1000 13337"
	"uct-rc-put_bw 100 1 13337"
	"uct-rc-atomics 500 500 13337"
	"uct-ud-am_lat 1000 1000 13337"
	"ucp-verbs-tag_lat 1000 1000 13337"
	"ucp-default-tag_lat 1000 1000 13337"
	"ucp-default-tag_bw 100 1 13337"
	"ucp-default-put_bw 100 1 13337"
	"ucp-verbs-stream_bw 100 1 13337"
	"ucp-verbs-get 100 100 13337"
	"fi-rdm 100 100 47592"
	"qperf-rc 1000 1000 19765"
	"mpi-2hosts 1000 1000 7422"
)

# cmd NAME server|client: this side's command line.
cmd() {
	local name=$1 side=$2 peer=() uct=(-d sroce0:1 -w 20)
	[ "$side" = client ] && peer=("$VM_PEER_IP")
	case $name in
	uct-*|ucp-*)
		if [ "$side" = server ]; then
			case $name in
			ucp-verbs-*) echo env UCX_TLS=rc_verbs,ud_verbs ucx_perftest -p 13337 ;;
			*) echo ucx_perftest -p 13337 ;;
			esac
			return
		fi
		case $name in
		uct-rc-am_lat) echo ucx_perftest "${peer[@]}" -p 13337 -x rc_verbs -t am_lat -n 1000 "${uct[@]}" ;;
		uct-rc-put_bw) echo ucx_perftest "${peer[@]}" -p 13337 -x rc_verbs -t put_bw -n 100 -s 65536 -D zcopy "${uct[@]}" ;;
		uct-rc-atomics) echo ucx_perftest "${peer[@]}" -p 13337 -x rc_verbs -t add_lat -n 500 "${uct[@]}" ;;
		uct-ud-am_lat) echo ucx_perftest "${peer[@]}" -p 13337 -x ud_verbs -t am_lat -n 1000 "${uct[@]}" ;;
		ucp-verbs-tag_lat) echo env UCX_TLS=rc_verbs,ud_verbs ucx_perftest "${peer[@]}" -p 13337 -t tag_lat -n 1000 -w 20 ;;
		ucp-default-tag_lat) echo ucx_perftest "${peer[@]}" -p 13337 -t tag_lat -n 1000 -w 20 ;;
		ucp-default-tag_bw) echo ucx_perftest "${peer[@]}" -p 13337 -t tag_bw -n 100 -s 1048576 -w 5 ;;
		ucp-default-put_bw) echo ucx_perftest "${peer[@]}" -p 13337 -t ucp_put_bw -n 100 -s 65536 -w 5 ;;
		ucp-verbs-stream_bw) echo env UCX_TLS=rc_verbs,ud_verbs ucx_perftest "${peer[@]}" -p 13337 -t stream_bw -n 100 -s 65536 -w 5 ;;
		ucp-verbs-get) echo env UCX_TLS=rc_verbs,ud_verbs ucx_perftest "${peer[@]}" -p 13337 -t ucp_get -n 100 -s 65536 -w 5 ;;
		esac ;;
	fi-rdm)
		if [ "$side" = server ]; then
			echo "fi_pingpong -d sroce0 -B 47592 -p 'verbs;ofi_rxm' -e rdm -c -I 100 -S 65536"
		else
			echo "fi_pingpong -d sroce0 -P 47592 -p 'verbs;ofi_rxm' -e rdm -c -I 100 -S 65536 ${peer[*]}"
		fi ;;
	qperf-rc)
		if [ "$side" = server ]; then
			echo qperf -lp 19765
		else
			echo qperf -lp 19765 -cm1 -t 2 "${peer[@]}" rc_lat rc_bw rc_rdma_read_bw \
				rc_rdma_write_lat rc_fetch_add_mr quit
		fi ;;
	mpi-2hosts)
		if [ "$side" = server ]; then
			echo "$SROCE_REPO/tools/vm/tcp-rsh --serve --once --allow $VM_PEER_IP"
		else
			echo mpirun -np 2 --map-by node --host "$VM_PEER_IP:1,$VM_LOCAL_IP:1" \
				--mca plm_rsh_agent "$SROCE_REPO/tools/vm/tcp-rsh" \
				--mca oob_tcp_if_include "$VM_IFNAME" \
				--mca pml ucx --mca osc ucx --mca btl "'^openib'" \
				"$SROCE_BIN/sroce_mpi" --iters 2
		fi ;;
	esac
}

# The client's output must show the work was done, not just an exit 0.
client_ok() {
	local name=$1 out=$2 n
	case $name in
	uct-*|ucp-*)
		n=$(awk '/Final:/ { print $2 }' "$out")
		[ -n "$n" ] && [ "$n" -gt 0 ] ;;
	fi-rdm) grep -Eq '^[0-9.]+[kmg]? +100 ' "$out" ;;
	qperf-rc) ! grep -aqiE 'fail|error' "$out" && grep -q 'rc_fetch_add_mr' "$out" ;;
	mpi-2hosts) grep -Eq '^mpi: 2 ranks, [0-9]+ checks, [0-9]+ bytes verified, 0 errors$' "$out" ;;
	esac
}

# received MIN BEFORE: this guest's sroce0 received at least MIN packets
# since rx_packets read BEFORE.
received() {
	local now
	now=$(sroce_counter sroce0 rx_packets)
	echo "sroce0 rx_packets +$((now - $2)) (at least $1 wanted)"
	[ $((now - $2)) -ge "$1" ]
}

serve() {
	local name=$1 min=$2 port=$3 i=$4 pid rc before
	before=$(sroce_counter sroce0 rx_packets)
	# eval: the command lines quote what the shell must not split.
	eval timeout 180 $(cmd "$name" server) >/tmp/vm2-server.out 2>&1 </dev/null &
	pid=$!
	vm_wait_listen "$port" 60 && vm_announce $((7200 + i))
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || tail -n 25 /tmp/vm2-server.out
	[ "$rc" = 0 ] && received "$min" "$before"
}

drive() {
	local name=$1 min=$2 i=$4 rc before
	vm_wait_tcp "$VM_PEER" $((7200 + i)) 180 || return 1
	before=$(sroce_counter sroce0 rx_packets)
	eval timeout 180 $(cmd "$name" client) >/tmp/vm2-client.out 2>&1 </dev/null
	rc=$?
	if [ "$rc" = 0 ]; then
		grep -aE 'Final:|^mpi: ' /tmp/vm2-client.out || tail -n 3 /tmp/vm2-client.out
	else
		tail -n 25 /tmp/vm2-client.out
	fi
	[ "$rc" = 0 ] && client_ok "$name" /tmp/vm2-client.out && received "$min" "$before"
}

tap_plan ${#tests[@]}
[ -n "$GID" ] || tap_bail "sroce0 on $VM_IFNAME has no RoCE v2 GID for $VM_LOCAL_IP"
for i in "${!tests[@]}"; do
	read -r name min_a min_b port <<<"${tests[$i]}"
	if [ "$role" = a ]; then
		TAP_VERBOSE=1 tap_check "sroce0 serves $name" serve "$name" "$min_a" "$port" "$i"
	else
		TAP_VERBOSE=1 tap_check "sroce0 drives $name" drive "$name" "$min_b" "$port" "$i"
	fi
done
tap_done
