#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC data integrity between sroce0 (nsA) and sroce1 (nsB) with
# tests/tools/sroce_integrity: SEND, SEND with immediate, WRITE, WRITE
# with immediate and READ from 0 B to 8 MiB, odd sizes and offsets,
# multi-SGE, every byte and every completion checked; at path MTU 1024
# and 4096, over IPv4 and IPv6, with packets sent in GSO bursts (and
# without: tx_burst=1), received on a CPU beside the softirq's (and in
# it: rx_steer=0); then over a lossy link (netem loss 5%, reorder 25%,
# duplicate 2%, and again with corrupt 1%), where every byte must still
# be right, nothing complete twice, and the retransmission and ICRC
# counters must show the recovery; and resends must be counted exactly
# (5 MiB of writes with 2 % of packets lost, one packet per skb); and
# over a slow path (30 ms each way, timeouts spurious) a timeout resends
# one request, not the window.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity

# integrity [CLIENT_ARGS...]: sroce1 serves, sroce0 drives (GID indexes
# GID_A and GID_B, by default the IPv4 ones).
integrity() {
	sroce_pair nsB nsA 18525 \
		"$BIN" -s -d sroce1 -g "${GID_B:-$SROCE_GID_B}" -w 60 -- \
		"$BIN" -c 10.77.0.2 -d sroce0 -g "${GID_A:-$SROCE_GID_A}" -w 60 "$@" ||
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

# Every packet one device sent, the other received (a clean link: a
# packet the stack could not take counts as tx_errors, not tx_packets).
all_arrived() {
	local a b
	for a in sroce0 sroce1; do
		b=sroce1
		[ $a = sroce1 ] && b=sroce0
		echo "$a tx_packets $(sroce_counter $a tx_packets), $b rx_packets $(sroce_counter $b rx_packets)"
		[ "$(sroce_counter $a tx_packets)" = "$(sroce_counter $b rx_packets)" ] || return 1
	done
}

# none_counted COUNTER: both devices count 0.
none_counted() {
	local d v
	for d in sroce0 sroce1; do
		v=$(sroce_counter $d "$1")
		echo "$d $1 $v"
		[ "$v" = 0 ] || return 1
	done
}

zc_param=/sys/module/sroce/parameters/zero_copy_tx
steer_param=/sys/module/sroce/parameters/rx_steer
burst_param=/sys/module/sroce/parameters/tx_burst

tap_plan 31
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"
tap_check "all ops, 0 B..8 MiB, path MTU 1024" integrity
# sroce0 sends SEND/WRITE data, sroce1 READ responses: both lend pages.
tap_check "payloads went out zero-copy (both directions)" \
	sroce_counters_nonzero sroce0 tx_zero_copy_packets
tap_check "... READ responses too" \
	sroce_counters_nonzero sroce1 tx_zero_copy_packets
# Requests one way, READ responses the other: both send bursts.
tap_check "packets went out in GSO bursts (both directions)" \
	sroce_counters_nonzero sroce0 tx_bursts
tap_check "... READ responses too" sroce_counters_nonzero sroce1 tx_bursts
tap_check "... and every packet sent arrived" all_arrived
# Bursts reach the receiving device whole and are taken on the other CPU.
tap_check "bursts were received on a CPU beside (both directions)" \
	sroce_counters_nonzero sroce1 rx_steered_packets
tap_check "... READ responses too" \
	sroce_counters_nonzero sroce0 rx_steered_packets
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500, received in the softirq"
echo 0 >"$steer_param"
tap_check "rx_steer=0: all ops, every byte right" integrity --quick
echo 1 >"$steer_param"
tap_check "... and nothing was steered" none_counted rx_steered_packets
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500, one packet at a time"
echo 1 >"$burst_param"
tap_check "tx_burst=1: all ops, every byte right" integrity --quick
echo 32 >"$burst_param"
tap_check "... and no packet went out in a burst" none_counted tx_bursts
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500, copying"
echo 0 >"$zc_param"
tap_check "zero_copy_tx=0: all ops, every byte right" integrity --quick
echo 1 >"$zc_param"
tap_check "... and nothing was lent" none_counted tx_zero_copy_packets
sroce_reset
sroce_two_devices 9000 || tap_bail "set-up at MTU 9000"
tap_check "all ops, 0 B..8 MiB, path MTU 4096" integrity -m 4096

sroce_reset
sroce_two_devices 1500 || tap_bail "set-up for IPv6"
GID_A=$(sroce_wait_gid sroce0 fd77:0000:0000:0000:0000:0000:0000:0001) &&
GID_B=$(sroce_wait_gid sroce1 fd77:0000:0000:0000:0000:0000:0000:0002) ||
	tap_bail "the IPv6 GIDs"
# ib_core resolves the peer's MAC for modify QP to RTR with one second to
# spare, as long as IPv6 neighbour discovery waits before it solicits
# again. Right after the link came up (the IPv4 side channel already
# works) a first solicitation can still go unanswered: on 6.1 the QP's
# modify failed once with ETIMEDOUT. A ping over IPv6 first (what a user
# would see working before starting anything).
vm_wait_ping -n nsA fd77::2 10 || tap_bail "IPv6 ping fd77::1 -> fd77::2"
tap_check "over IPv6 (GIDs $GID_A, $GID_B): all ops, every byte right" \
	integrity --quick
tap_check "... in GSO bursts" sroce_counters_nonzero sroce0 tx_bursts
tap_check "... and every packet sent arrived" all_arrived
# UCX puts ~0 in the path's flow label (ib_iface.c, path index 0): the
# device keeps the 20 bits IBTA defines, so the IPv6 version stays 6.
tap_check "over IPv6 with flow label 0xffffffff (as UCX sets it): every byte right" \
	integrity --quick --ops send,write,read --flow-label 0xffffffff
unset GID_A GID_B

sroce_reset
sroce_two_devices 1500 || tap_bail "set-up for netem"
netem delay 1ms loss 5% reorder 25% duplicate 2%
tap_check "netem loss 5% reorder 25% duplicate 2%: every byte right" \
	integrity --quick
tap_check "retransmissions counted" sroce_counters_nonzero sroce0 \
	retransmitted_packets seq_nak_received
tap_check "duplicates counted by the responder" sroce_counters_nonzero sroce1 \
	duplicate_requests seq_nak_sent
# netem flips a bit in an skb's linear part only, and decides once per
# skb: a zero-copy packet's payload is in page fragments, and a GSO burst
# is one skb. So this phase copies and sends a packet per skb, and the
# flipped bits land in payloads, which only the ICRC covers.
echo 0 >"$zc_param"
echo 1 >"$burst_param"
netem delay 1ms loss 5% reorder 25% duplicate 2% corrupt 1%
tap_check "... and corrupt 1%: every byte right" integrity --quick
echo 1 >"$zc_param"
echo 32 >"$burst_param"
tap_check "corrupt packets dropped on their ICRC" bash -c \
	'echo "sroce0 $(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rx_drop_icrc)";
	 echo "sroce1 $(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/rx_drop_icrc)";
	 (( $(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rx_drop_icrc) +
	    $(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/rx_drop_icrc) > 0 ))'

# retransmitted_packets counts each packet sent again, and only those:
# every packet sroce0 puts out is a first send or a resend, so on a lossy
# link resends = packets sent - the first sends a clean run needs. A
# rewind once marked the whole of the last message published as resent,
# packets not yet sent included (a 1 MiB write is 1,024 of them).
# netem drops whole skbs and a GSO burst is one, so 2 % of some 160
# bursts can be none at all (one CI run saw 0 of 5,120 packets lost):
# with a packet per skb, 2 % of 5,120 is about 100 losses.
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up for counting resends"
echo 1 >"$burst_param"
write_5mib() {
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F -n 5 -s 1048576 -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F -n 5 -s 1048576 10.77.0.2 &&
	grep -E '^ *1048576 +5 ' "$SROCE_PAIR_DIR/client"
}
sent_a() {
	echo $(($(sroce_counter sroce0 tx_packets) + $(sroce_counter sroce0 tx_errors)))
}
tx0=$(sent_a) re0=$(sroce_counter sroce0 retransmitted_packets)
tap_check "ib_write_bw 5 x 1 MiB on a clean link" write_5mib
first=$(($(sent_a) - tx0))
re=$(($(sroce_counter sroce0 retransmitted_packets) - re0))
tap_check "... $first packets, none counted as resent ($re)" \
	test "$first" -gt 0 -a "$re" -eq 0
tc -n nsA qdisc replace dev vethA root netem loss 2%
tx0=$(sent_a) re0=$(sroce_counter sroce0 retransmitted_packets)
tap_check "ib_write_bw 5 x 1 MiB, 2 % of sroce0's packets lost" write_5mib
sent=$(($(sent_a) - tx0))
re=$(($(sroce_counter sroce0 retransmitted_packets) - re0))
tap_check "... resends counted exactly: $re = $sent sent - $first first sends" \
	test "$re" -gt 0 -a "$re" -eq $((sent - first))

# A slow peer, not a deaf one: 30 ms each way and a QP timeout of 16.8 ms
# (--timeout 12), so every timeout is spurious. After one, the requester
# resends a single request and waits for its answer; an answer beyond
# it shows the rest arrived, and it goes on from where it was. Resending
# the whole window at each timeout made about 64 % of the packets
# duplicates here (and on the debug kernel drowned rdma_rxe in them,
# until RETRY_EXC_ERR); a probe makes about 6 %.
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up for a slow peer"
netem delay 30ms
tap_check "netem delay 30 ms, QP timeout 16.8 ms: every byte right" \
	integrity --quick --timeout 12
slow_write() {
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F -u 12 -n 100 -s 65536 -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F -u 12 -n 100 -s 65536 10.77.0.2 &&
	grep -E '^ *65536 +100 ' "$SROCE_PAIR_DIR/client"
}
tx0=$(sent_a) re0=$(sroce_counter sroce0 retransmitted_packets)
to0=$(sroce_counter sroce0 retransmit_timeouts)
tap_check "ib_write_bw 100 x 64 KiB over the slow path" slow_write
sent=$(($(sent_a) - tx0))
re=$(($(sroce_counter sroce0 retransmitted_packets) - re0))
to=$(($(sroce_counter sroce0 retransmit_timeouts) - to0))
tap_check "... $to timeouts, resends under a quarter of the packets ($re of $sent)" \
	test "$to" -gt 0 -a $((4 * re)) -lt "$sent"
tap_done
