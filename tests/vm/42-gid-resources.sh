#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What connection managers and admins query: the GID table through
# ibv_query_gid_table and ibv_query_gid_ex (sroce_devcheck), the P_Key
# table, and "rdma resource show qp/cq/mr/pd/srq" listing the objects of
# processes that use sroce (RC, UD and SRQ pingpong servers holding
# theirs while they wait for a client), then nothing but the MAD layer's
# own objects once they are gone.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap 'kill $PIDS 2>/dev/null; sroce_reset' EXIT
PIDS=

# res OBJ PATTERN...: "rdma resource show OBJ" has a line for sroce1
# matching every ERE.
res() {
	local obj=$1 out
	shift
	out=$(rdma resource show "$obj" 2>&1 | grep -E "(dev|link) sroce1[/ ]")
	echo "$out"
	while [ $# -gt 0 ]; do
		out=$(grep -E -- "$1" <<<"$out")
		[ -n "$out" ] || { echo "no line matches: $1"; return 1; }
		shift
	done
}

# srq_four_qps OUTPUT: sroce1's BASIC SRQ of $SRQ_PID lists four QPs, as
# QPNs and ranges ("16,18-20": the numbers need not be contiguous).
srq_four_qps() {
	local line list part parts n=0
	line=$(grep -E "(dev|link) sroce1[/ ].*type BASIC .*pid $SRQ_PID " <<<"$1")
	echo "$line"
	list=$(sed -nE 's/.* lqpn ([0-9,-]+) .*/\1/p' <<<"$line")
	IFS=, read -ra parts <<<"$list"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			n=$((n + ${part#*-} - ${part%-*} + 1))
		else
			n=$((n + 1))
		fi
	done
	echo "lqpn $list: $n QPs"
	[ "$n" = 4 ]
}

tap_plan 12
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

tap_check "sroce_devcheck: ibv_query_gid_table, ibv_query_gid_ex, the IPv4 GID" \
	ip netns exec nsA "$SROCE_BIN/sroce_devcheck" -d sroce0 --mtu 1500 \
	-4 10.77.0.1 --expect-state active -n 10
tap_eq "P_Key table: one entry, the default P_Key" \
	"$(cat /sys/class/infiniband/sroce1/ports/1/pkeys/0)" "0xffff"

# Three servers in nsB that hold their objects until a client comes.
ip netns exec nsB ibv_rc_pingpong -d sroce1 -g "$SROCE_GID_B" -p 18601 -s 4096 \
	>/tmp/i5-rc.out 2>&1 </dev/null &
PIDS="$PIDS $!"
ip netns exec nsB ibv_ud_pingpong -d sroce1 -g "$SROCE_GID_B" -p 18602 -s 512 \
	>/tmp/i5-ud.out 2>&1 </dev/null &
PIDS="$PIDS $!"
ip netns exec nsB ibv_srq_pingpong -d sroce1 -g "$SROCE_GID_B" -p 18603 -q 4 \
	>/tmp/i5-srq.out 2>&1 </dev/null &
SRQ_PID=$!
PIDS="$PIDS $!"
for p in 18601 18602 18603; do
	vm_wait_listen -n nsB $p 60 || tap_bail "pingpong server on port $p"
done

tap_check "rdma resource show qp: the RC QP of ibv_rc_pingpong" \
	res qp "type RC" "comm ibv_rc_pingpong"
tap_check "rdma resource show qp: the UD QP of ibv_ud_pingpong" \
	res qp "type UD" "comm ibv_ud_pingpong"
tap_check "rdma resource show qp: 4 RC QPs of ibv_srq_pingpong" \
	bash -c '[ "$(rdma resource show qp | grep "sroce1/" | grep -c "type RC.*comm ibv_srq_pingpon")" = 4 ]'
tap_check "rdma resource show cq: the CQ of each" \
	bash -c 'for c in ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpon; do
		rdma resource show cq | grep -E "(dev|link) sroce1" | grep -q "comm $c" || exit 1
	done'
tap_check "rdma resource show mr: the 4096-byte MR of ibv_rc_pingpong" \
	res mr "mrlen 4096" "comm ibv_rc_pingpong"
tap_check "rdma resource show pd: the PD of each" \
	bash -c 'for c in ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpon; do
		rdma resource show pd | grep -E "(dev|link) sroce1" | grep -q "comm $c" || exit 1
	done'
if rdma resource show srq >/dev/null 2>&1; then
	# iproute2 6.1 prints the QP range again where "comm" belongs.
	tap_check "rdma resource show srq: the SRQ of ibv_srq_pingpong, its 4 QPs" \
		srq_four_qps "$(rdma resource show srq 2>&1)"
else
	tap_skip "rdma resource show srq" "this iproute2 has no srq resource"
fi
tap_check "rdma resource summary: 6 QPs, 3 PDs, 3 CQs, 1 SRQ more than idle" \
	bash -c 'sroce_resources sroce1 | grep -Eq "pd 4 cq 4 qp 7 .* srq 1"'

# A client for the RC server: it completes, its objects go.
tap_check "a client for the RC server: the exchange completes" \
	ip netns exec nsA timeout 60 ibv_rc_pingpong -d sroce0 -g "$SROCE_GID_A" \
	-p 18601 -s 4096 -n 20 10.77.0.2
kill $PIDS 2>/dev/null
for p in $PIDS; do wait "$p" 2>/dev/null; done
PIDS=
tap_eq "sroce1: back to the MAD layer's own objects" \
	"$(sroce_resources sroce1)" "${SROCE_MAD_OBJECTS/sroce0/sroce1}"
tap_done
