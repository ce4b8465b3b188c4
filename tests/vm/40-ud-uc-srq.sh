#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UD, UC and SRQ between two hosts: sroce0 (nsA) and sroce1 (nsB).
# ibv_ud_pingpong, ibv_uc_pingpong and ibv_srq_pingpong (16 QPs on one
# SRQ), all with -g and the received buffers checked (-c), each device
# as the server in turn; then perftest over UD (ib_send_bw, ib_send_lat)
# and UC (ib_send_bw, ib_write_bw), UD multicast through the verbs
# (sroce_mcast), and the receive drop counters.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# sides A|B: A = sroce0 in nsA serves, B = sroce1 in nsB serves.
sides() {
	if [ "$1" = A ]; then
		S_NS=nsA S_DEV=sroce0 S_GID=$SROCE_GID_A S_IP=10.77.0.1
		C_NS=nsB C_DEV=sroce1 C_GID=$SROCE_GID_B
	else
		S_NS=nsB S_DEV=sroce1 S_GID=$SROCE_GID_B S_IP=10.77.0.2
		C_NS=nsA C_DEV=sroce0 C_GID=$SROCE_GID_A
	fi
}

# pingpong SIDE PROGRAM SIZE [ARGS...]: the data checked by the program
# (-c), and the byte and iteration counts it prints.
pingpong() {
	local side=$1 prog=$2 size=$3 n=40 out
	shift 3
	sides "$side"
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$prog" -d "$S_DEV" -g "$S_GID" -s "$size" -n "$n" -c "$@" -- \
		"$prog" -d "$C_DEV" -g "$C_GID" -s "$size" -n "$n" -c "$@" "$S_IP" ||
		return 1
	for out in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		cat "$out"
		grep -q "GID ::ffff:10.77.0" "$out" || return 1
		grep -Eq "^$((2 * n * size)) bytes in .* seconds" "$out" || return 1
		grep -Eq "^$n iters in" "$out" || return 1
	done
}

# The two devices' total of counter $1.
both() {
	echo $(($(sroce_counter sroce0 "$1") + $(sroce_counter sroce1 "$1")))
}

# srq SIDE: ibv_srq_pingpong -q 16 (16 QPs, one SRQ). It exchanges
# n iterations on each QP in turn and prints the totals.
# It counts completions over all its QPs, not per QP: a side posts a send
# on each QP whose exchange is over while its total is short, so it can
# send up to 15 messages (one per other QP) more than the peer waits for.
# The peer has destroyed its QPs by the time they land: dropped as
# rx_drop_no_qp, and again for each retry of the requester before its own
# process exits. So a run may leave up to 2 x 15 such drops beyond its
# resends; the last point excuses what the runs left (SRQ_NOQP, SRQ_RESENT).
SRQ_NOQP=0 SRQ_RESENT=0
nothing_malformed_but_srq() {
	SROCE_NOQP_EXCUSED=$SRQ_NOQP SROCE_RESENT_EXCUSED=$SRQ_RESENT \
		sroce_nothing_malformed
}
srq() {
	local n=32 size=1024 out nq rs
	sides "$1"
	nq=$(both rx_drop_no_qp) rs=$(both retransmitted_packets)
	sroce_pair "$S_NS" "$C_NS" 18515 \
		ibv_srq_pingpong -d "$S_DEV" -g "$S_GID" -q 16 -s $size -n $n -c -- \
		ibv_srq_pingpong -d "$C_DEV" -g "$C_GID" -q 16 -s $size -n $n -c "$S_IP" ||
		return 1
	for out in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		# The totals, and one address line per QP on each side.
		grep -Eq "^$((2 * n * size)) bytes in .* seconds" "$out" &&
			grep -Eq "^$n iters in" "$out" &&
			[ "$(grep -c 'local address:' "$out")" = 16 ] ||
			{ cat "$out"; return 1; }
	done
	# The peer's late sends may still be retried: wait for the counts to settle.
	sleep 1
	nq=$(($(both rx_drop_no_qp) - nq)) rs=$(($(both retransmitted_packets) - rs))
	echo "during the run: rx_drop_no_qp +$nq, retransmitted_packets +$rs"
	SRQ_NOQP=$((SRQ_NOQP + nq)) SRQ_RESENT=$((SRQ_RESENT + rs))
	[ "$nq" -le $((2 * 15 + rs)) ]
}

# perf SIDE TOOL ARGS...: perftest over the RoCE v2 GIDs; the client's
# result row must show its iteration count and a positive rate.
perf() {
	local t=$2 n=200 row
	sides "$1"
	shift 2
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$t" -d "$S_DEV" -x "$S_GID" -n $n "$@" -- \
		"$t" -d "$C_DEV" -x "$C_GID" -n $n "$@" "$S_IP" || return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t $*: $row"
	[ -n "$row" ] && awk -v n=$n '{ exit !($2 == n && $3 > 0) }' <<<"$row"
}

tap_plan 14
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"
for side in B A; do
	tap_check "sroce$([ $side = A ] && echo 0 || echo 1) serves: ibv_ud_pingpong -g -c, 1024 B" \
		pingpong "$side" ibv_ud_pingpong 1024
	tap_check "sroce$([ $side = A ] && echo 0 || echo 1) serves: ibv_uc_pingpong -g -c, 4096 B" \
		pingpong "$side" ibv_uc_pingpong 4096
	TAP_VERBOSE=1 tap_check "sroce$([ $side = A ] && echo 0 || echo 1) serves: ibv_srq_pingpong -q 16 -g -c" \
		srq "$side"
done
tap_check "ib_send_bw -c UD" perf B ib_send_bw -c UD
tap_check "ib_send_bw -c UD, the other way" perf A ib_send_bw -c UD
tap_check "ib_send_lat -c UD" perf B ib_send_lat -c UD
tap_check "ib_send_bw -c UC" perf B ib_send_bw -c UC
tap_check "ib_write_bw -c UC" perf B ib_write_bw -c UC
tap_check "ib_send_lat -c UC" perf A ib_send_lat -c UC
TAP_VERBOSE=1 tap_check "UD multicast through the verbs: delivery, detach, errnos, limits (sroce_mcast)" \
	ip netns exec nsB timeout 120 "$SROCE_BIN/sroce_mcast" -a sroce0 -A "$SROCE_GID_A" \
	-b sroce1 -B "$SROCE_GID_B"
# UD/UC receives are not retried: on a clean link nothing is malformed
# (bad Q_Key, too long), corrupt or addressed to a missing QP.
tap_check "nothing malformed, corrupt or unrouted on a clean link (ibv_srq_pingpong's late sends aside: $SRQ_NOQP)" \
	nothing_malformed_but_srq
tap_done
