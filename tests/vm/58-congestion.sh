#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RoCE v2 congestion control (ECN, CNP, DCQCN) between sroce0 (nsA,
# vethA) and sroce1 (nsB, vethB):
#   - the parameters in /sys/class/infiniband/DEV/ports/1/cc/: their
#     defaults, and values out of range refused with nothing changed;
#   - data packets leave ECT(0) by default, ECT(1) or not-ECT as set, and
#     not-ECT with congestion control off (tshark reads the ECN field);
#   - a bottleneck on vethA: an HTB class of 100 Mbit/s (3 on the debug
#     kernel) for RoCE traffic
#     (UDP 4791; perftest's own TCP bypasses it) with a RED leaf that
#     marks ECN-capable packets CE. One 64 KiB ib_write_bw stream through
#     it with congestion control on: sroce1 counts CE-marked packets and
#     sends CNPs, sroce0 handles every one of them (as many as were sent)
#     and its pacer holds the QP; with it off on both sides RED must drop
#     (nothing is ECN-capable) — at least 10 packets and at least 10 times
#     what it dropped with it on — and sroce0 resends more;
#   - a capture of the congested traffic on vethB: CE-marked data, CNPs
#     (opcode 0x81, BECN set, P_Key 0xffff, to sroce0's QP) decoded by
#     tshark with nothing malformed, and every frame's ICRC valid by an
#     independent computation (tests/vm/roce-icrc.py);
#   - while the stream is congested, sroce0's QP shows its rate in its
#     resource details (rdma resource show qp -dd: cc_rate_kbps,
#     cc_target_kbps, cc_alpha), and the tracepoints sroce_cnp_sent,
#     sroce_cnp_rcvd and sroce_cc_rate name the stream's QPs;
#   - with the reaction point off on sroce0, CNPs still arrive and are
#     counted ignored; the pacer stays out;
#   - nothing malformed, corrupt or dropped for its ICRC;
#   - UD (ib_send_bw -c UD) through the bottleneck: sroce1's UD QP answers
#     the marked datagrams' sender with CNPs, sroce0's UD QP handles them
#     and is paced;
#   - READs whose responses cross the bottleneck (sroce0 serves): the
#     reader's CNPs reach sroce0's QP, whose pacer holds the responses;
#   - with rdma_rxe (rxe0 on vethA, sroce1 on vethB; rdma_cm): rxe0's
#     stream sent ECT(0) (-T 2) through the bottleneck gets CNPs from
#     sroce1, which rxe drops as unknown, and completes; sroce1's stream
#     to rxe0 through a bottleneck on vethB is marked, rxe0 sends no CNP,
#     and sroce1's rate stays unlimited (nothing handled, nothing paced).
# Figures (goodput, fairness, drops per packet) are the bench's
# ("congestion" table): nothing here is a timing assertion.
# run-all-timeout: 900
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
source "$here/capture.sh"
CAP=/tmp/sroce-cc
cleanup() {
	capture_kill
	sroce_reset
}
sroce_reset
trap cleanup EXIT
mkdir -p "$CAP"

tap_plan 26
sroce_two_devices 1500 || tap_bail "cannot set up sroce0/sroce1"

CC=/sys/class/infiniband/sroce0/ports/1/cc
CC1=/sys/class/infiniband/sroce1/ports/1/cc

# set_cc NAME=VALUE...: on both devices.
set_cc() {
	local kv
	for kv in "$@"; do
		echo "${kv#*=}" >"$CC/${kv%%=*}" &&
		echo "${kv#*=}" >"$CC1/${kv%%=*}" || return 1
	done
}

defaults() {
	local kv want=(enable=1 np_enable=1 rp_enable=1 ecn=2
		np_min_time_between_cnps=4 np_cnp_dscp=48 np_cnp_prio=6
		rp_max_rate=0 rp_min_rate=1 rp_ai_rate=5 rp_hai_rate=50
		rp_time_reset=300 rp_byte_reset=32767 rp_threshold=1
		rp_rate_reduce_monitor_period=4 rp_initial_alpha_value=1023
		rp_dce_tcp_g=1019 rp_dce_tcp_rtt=55 rp_clamp_tgt_rate=0
		rp_min_dec_fac=50 rp_rate_to_set_on_first_cnp=0 rp_window_us=1000) rc=0
	[ "$(find "$CC" -maxdepth 1 -type f | wc -l)" = "${#want[@]}" ] ||
		{ echo "files: $(ls "$CC")"; rc=1; }
	for kv in "${want[@]}"; do
		v=$(cat "$CC/${kv%%=*}") || return 1
		[ "$v" = "${kv#*=}" ] || { echo "${kv%%=*} = $v, expected ${kv#*=}"; rc=1; }
	done
	return $rc
}
tap_check "cc parameters: all 22 there, with their defaults" defaults

# refused FILE VALUE: the write fails and the value stays.
refused() {
	local before
	before=$(cat "$CC/$1")
	if echo "$2" >"$CC/$1" 2>/dev/null; then
		echo "$1 took '$2'"
		return 1
	fi
	[ "$(cat "$CC/$1")" = "$before" ]
}
bounds() {
	refused ecn 4 && refused np_cnp_dscp 64 && refused np_cnp_prio 8 &&
	refused rp_min_dec_fac 101 && refused rp_dce_tcp_g 1024 &&
	refused enable 2 && refused rp_ai_rate abc && refused rp_time_reset -1 &&
	echo 7 >"$CC/rp_ai_rate" && [ "$(cat "$CC/rp_ai_rate")" = 7 ] &&
	echo 5 >"$CC/rp_ai_rate"
}
tap_check "out-of-range and malformed values refused, nothing changed; a good one taken" bounds

# DCQCN's times are a fast link's: a few microseconds between CNPs, rates
# raised every 300 us. Under KASAN a packet through the bottleneck takes
# about 50 times as long as through 100 Mbit/s here, the marks come 100 ms
# apart, and a QP cut by one CNP was raised back before it sent again (in
# one run 49 CNPs handled, the pacer never held). There its times are 50
# times as long; the QPs' ACK timeout is 2.1 s (-u 19), a window queued at
# 3 Mbit/s taking 375 ms.
PERF_QP=()
if sroce_debug_kernel; then
	set_cc rp_time_reset=15000 rp_dce_tcp_rtt=2750 \
		rp_rate_reduce_monitor_period=200 np_min_time_between_cnps=200 ||
		tap_diag "could not scale DCQCN's times"
	PERF_QP=(-u 19)
fi

# perf ARGS...: ib_write_bw, sroce1 serving, a result row.
perf() {
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F "${PERF_QP[@]}" "$@" -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F "${PERF_QP[@]}" "$@" 10.77.0.2 || return 1
	grep -qE '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client"
}

# ecn_seen WANT: a short transfer captured on vethB; every RoCE frame
# from sroce0 carries ECN field WANT (0 not-ECT, 1 ECT(1), 2 ECT(0)).
ecn_seen() {
	local f=$CAP/ecn.pcap vals
	capture_start nsB vethB "$f" "udp dst port 4791 and src host 10.77.0.1" || return 1
	perf -s 4096 -n 50 || return 1
	capture_stop "$f" || return 1
	vals=$(tshark -r "$f" -T fields -e ip.dsfield.ecn 2>/dev/null | sort | uniq -c)
	echo "ECN fields: $vals"
	[ -n "$vals" ] && [ "$(awk '{ print $2 }' <<<"$vals")" = "$1" ]
}
ecn_ect1() { echo 1 >"$CC/ecn" && ecn_seen 1; }
ecn_off() { echo 0 >"$CC/enable" && ecn_seen 0; }
tap_check "ECN: data packets ECT(0) by default" ecn_seen 2
tap_check "ECN: ECT(1) when ecn=1" ecn_ect1
echo 2 >"$CC/ecn"
tap_check "ECN: not-ECT with congestion control off" ecn_off
echo 1 >"$CC/enable"

# The bottleneck: RoCE (UDP 4791) out of DEV through 100 Mbit/s with RED
# marking CE (dropping what is not ECN-capable); the rest unshaped. RED
# marks from 2.4 ms of queue (30,000 bytes), all from 7.2 ms, and drops
# past 32 ms (400,000 bytes, three windows of 128 packets). Under KASAN
# sroce moves 0.7-1.1 MB/s (6-9 Mbit/s) and rdma_rxe 0.5 MB/s: at 100
# Mbit/s nothing would queue. There the bottleneck is 3 Mbit/s (rdma_rxe's
# 2) with RED's thresholds in packets as few as RED allows (min 3, max 9,
# burst 5: 9-26 ms of queue at 3 Mbit/s); the hard limit stays above a
# window (at 40,000 bytes one run lost 5,750 packets to it, counted
# tx_errors, and rdma_rxe's stream failed).
if sroce_debug_kernel; then
	SHAPE_DEFAULT=3mbit RXE_SHAPE=2mbit
	RED_SHAPE=(limit 400000 min 3300 max 9900 avpkt 1100 burst 5)
else
	SHAPE_DEFAULT=100mbit RXE_SHAPE=40mbit
	RED_SHAPE=(limit 400000 min 30000 max 90000 avpkt 1100 burst 55)
fi
# shape_on DEV NSEXEC...: on DEV, tc run through NSEXEC; SHAPE_MATCH
# (an array of u32 matches) narrows what takes the bottleneck,
# SHAPE_RATE (SHAPE_DEFAULT if unset) is its rate.
shape_on() {
	local dev=$1 t rate=${SHAPE_RATE:-$SHAPE_DEFAULT}
	shift
	t=("$@" tc)
	"${t[@]}" qdisc del dev "$dev" root 2>/dev/null
	"${t[@]}" qdisc add dev "$dev" root handle 1: htb default 20 r2q 100 &&
	"${t[@]}" class add dev "$dev" parent 1: classid 1:10 htb rate "$rate" ceil "$rate" &&
	"${t[@]}" class add dev "$dev" parent 1: classid 1:20 htb rate 10gbit &&
	"${t[@]}" qdisc add dev "$dev" parent 1:10 handle 10: red \
		"${RED_SHAPE[@]}" probability 0.1 bandwidth "$rate" ecn &&
	"${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		"${SHAPE_MATCH[@]}" flowid 1:10
}
SHAPE_MATCH=()
shape() { shape_on vethA ip netns exec nsA; }
# red STAT: RED's count (marked, early, pdrop) since shape().
red() {
	ip netns exec nsA tc -s qdisc show dev vethA |
		sed -n "s/.* $1 \([0-9]*\).*/\1/p" | head -n 1
}
c0() { sroce_counter sroce0 "$1"; }
c1() { sroce_counter sroce1 "$1"; }

# congested: 8 s of 64 KiB writes through the bottleneck; RED_* and the
# deltas of the counters named are left in D_<name>.
congested() {
	local c b0 b1
	declare -gA B0 B1
	# A bottleneck that could not be set up fails the points that follow
	# (nothing counted, the stream "failed"), not the script.
	PERF_RC=1 RED_MARKED=0 RED_DROPS=0
	for c in np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled \
		rp_cnp_ignored rp_paced_waits retransmitted_packets rx_drop_icrc \
		rx_drop_no_qp; do
		B0[$c]=$(c0 $c)
		B1[$c]=$(c1 $c)
		declare -g "D0_$c=0" "D1_$c=0"
	done
	shape || { echo "the bottleneck (HTB and RED on vethA) could not be set up"; return 1; }
	perf -s 65536 -D 8 >"$CAP/perf.out" 2>&1
	PERF_RC=$?
	cp "$SROCE_PAIR_DIR/client" "$CAP/client.out"
	for c in "${!B0[@]}"; do
		declare -g "D0_$c=$(($(c0 "$c") - B0[$c]))"
		declare -g "D1_$c=$(($(c1 "$c") - B1[$c]))"
	done
	RED_MARKED=$(red marked)
	RED_DROPS=$(( $(red early) + $(red pdrop) ))
	grep -A1 '#bytes' "$SROCE_PAIR_DIR/client" | tail -n 1
	echo "RED marked $RED_MARKED dropped $RED_DROPS; sroce1 CE $D1_np_ecn_marked_roce_packets CNPs sent $D1_np_cnp_sent; sroce0 CNPs handled $D0_rp_cnp_handled ignored $D0_rp_cnp_ignored paced $D0_rp_paced_waits resent $D0_retransmitted_packets; no-QP drops sroce0 $D0_rx_drop_no_qp sroce1 $D1_rx_drop_no_qp"
}

TRACEFS=/sys/kernel/tracing
INST=$TRACEFS/instances/sroce58
mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS"
mkdir -p "$INST" && echo 4096 >"$INST/buffer_size_kb" &&
	for e in sroce_cnp_sent sroce_cnp_rcvd sroce_cc_rate; do
		echo 1 >"$INST/events/sroce/$e/enable"
	done || tap_diag "trace instance $INST"
# Resource details of sroce0's QPs, once a second until the stream is
# over (when it starts depends on the guest's pace; at most 300).
rm -f "$CAP/on.done"
(for i in $(seq 100 399); do
	sleep 1
	[ -e "$CAP/on.done" ] && break
	rdma -j -dd resource show qp link sroce0/1 >"$CAP/res.$i.json" 2>&1
done) &
RES_PID=$!
capture_start nsB vethB "$CAP/cong.pcap" \
	"udp port 4791 and (ip[1] & 3 == 3 or udp[8] == 0x81)" ||
	tap_diag "capture did not start"
congested >"$CAP/on.txt" 2>&1
ON_RC=$PERF_RC
touch "$CAP/on.done"
capture_stop "$CAP/cong.pcap" >"$CAP/cap.txt" 2>&1
CAP_RC=$?
ON_DROPS=$RED_DROPS ON_RESENT=$D0_retransmitted_packets
# The QP of sroce0 the congested stream ran on (perftest's client).
QPN=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\).*/\1/p' "$CAP/client.out" | head -n 1)
cat "$CAP/on.txt"
tap_check "CC on: 64 KiB ib_write_bw through the $SHAPE_DEFAULT bottleneck completes" \
	test "$ON_RC" = 0
tap_check "CC on: RED marks CE, sroce1 counts the marks and answers with CNPs" \
	test "$RED_MARKED" -gt 0 -a "$D1_np_ecn_marked_roce_packets" -gt 0 \
	-a "$D1_np_cnp_sent" -gt 0 -a "$D1_np_cnp_sent" -le "$D1_np_ecn_marked_roce_packets"
# (A CNP that comes after the stream's QP is gone is counted no-QP.)
tap_check "CC on: sroce0 handles every CNP sroce1 sent (but those for a QP already gone), ignores none" \
	test "$D0_rp_cnp_ignored" = 0 -a "$D0_rp_cnp_handled" -le "$D1_np_cnp_sent" \
	-a $((D0_rp_cnp_handled + D0_rx_drop_no_qp)) -ge "$D1_np_cnp_sent"
tap_check "CC on: sroce0's pacer held the QP" test "$D0_rp_paced_waits" -gt 0

set_cc enable=0
congested >"$CAP/off.txt" 2>&1
OFF_RC=$PERF_RC
cat "$CAP/off.txt"
tap_check "CC off: the stream completes; nothing marked, no CNP" \
	test "$OFF_RC" = 0 -a "$RED_MARKED" = 0 -a "$D1_np_cnp_sent" = 0 \
	-a "$D0_rp_cnp_handled" = 0
tap_check "CC off: RED drops >= 10 packets, >= 10x what it dropped with CC on ($ON_DROPS)" \
	test "$RED_DROPS" -ge 10 -a "$RED_DROPS" -ge $((10 * ON_DROPS))
tap_check "CC off: sroce0 resends more than with CC on ($ON_RESENT)" \
	test "$D0_retransmitted_packets" -gt "$ON_RESENT"
set_cc enable=1

wait "$RES_PID"
for e in sroce_cnp_sent sroce_cnp_rcvd sroce_cc_rate; do
	echo 0 >"$INST/events/sroce/$e/enable"
done
cat "$INST/trace" >"$CAP/trace.txt"
rmdir "$INST"
QPD=$((QPN))
res_rate() {
	python3 -c 'import glob, json, sys
seen = []
for name in sorted(glob.glob(sys.argv[1] + "/res.*.json")):
    try:
        qs = [q for q in json.load(open(name)) if q.get("lqpn") == int(sys.argv[2])]
    except ValueError:
        continue
    if qs:
        seen.append([qs[0].get("drv_" + k) for k in ("cc_rate_kbps", "cc_target_kbps", "cc_alpha", "cc_window", "mtu")])
print("QP", sys.argv[2], "rate, target, alpha, window, mtu, a second apart:", seen)
# The window: what the rate sends in rp_window_us (1 ms), in packets of
# the MTU and 62 bytes of headers (Ethernet, IPv6, UDP), at least 4 (and below the 128 of an
# unlimited QP at these rates).
def window_ok(f):
    return f[3] == max(4, f[0] * 1000 // 8 // 1000 // (f[4] + 62))
sys.exit(not any(None not in f and f[0] > 0 and f[1] >= f[0] and f[2] <= 1024 and window_ok(f) for f in seen))' \
		"$CAP" "$QPD"
}
tap_check "resource details: the congested QP $QPN shows its rate (cc_rate_kbps > 0, target >= rate, alpha) and its window" res_rate
traced() {
	local s r c
	s=$(grep -c "sroce_cnp_sent: sroce1 qpn [0-9]* CNP to qpn $QPD\$" "$CAP/trace.txt")
	r=$(grep -c "sroce_cnp_rcvd: sroce0 qpn $QPD CNP" "$CAP/trace.txt")
	c=$(grep -c "sroce_cc_rate: sroce0 qpn $QPD rate [0-9]* kb/s" "$CAP/trace.txt")
	echo "events: cnp_sent $s cnp_rcvd $r cc_rate $c"
	[ "$s" -gt 0 ] && [ "$r" -gt 0 ] && [ "$c" -gt 0 ]
}
tap_check "tracepoints: CNPs sent to QP $QPN, received by it, its rate changes" traced
tap_check "capture of the congested stream: everything the filter took written" \
	test "$CAP_RC" = 0
ce_data() {
	local n
	n=$(tshark -r "$CAP/cong.pcap" -Y 'ip.dsfield.ecn == 3 && infiniband.bth.opcode < 0x20' 2>/dev/null | wc -l)
	echo "CE-marked RC frames: $n"
	[ "$n" -gt 0 ]
}
tap_check "capture: tshark decodes CE-marked RC data" ce_data
tap_check "capture: CNPs to sroce0's QP $QPN: BECN, P_Key 0xffff, PSN 0, 16 zero bytes, ICRC valid (independent computation)" \
	python3 "$here/roce-icrc.py" "$CAP/cong.pcap" 0x81 "${QPN:-0}"
tap_eq "capture: nothing malformed, no expert error" \
	"$(tshark -r "$CAP/cong.pcap" -Y '_ws.malformed || _ws.expert.severity == 8388608' 2>/dev/null | wc -l)" 0
tap_check "capture: every CE-marked WRITE MIDDLE frame's ICRC is valid (marking keeps it)" \
	python3 "$here/roce-icrc.py" "$CAP/cong.pcap" 0x07

echo 0 >"$CC/rp_enable"
congested >"$CAP/rpoff.txt" 2>&1
cat "$CAP/rpoff.txt"
tap_check "reaction point off on sroce0: its CNPs counted ignored, none handled, no pacing" \
	test "$PERF_RC" = 0 -a "$D1_np_cnp_sent" -gt 0 \
	-a "$D0_rp_cnp_ignored" -le "$D1_np_cnp_sent" \
	-a $((D0_rp_cnp_ignored + D0_rx_drop_no_qp)) -ge "$D1_np_cnp_sent" \
	-a "$D0_rp_cnp_handled" = 0 -a "$D0_rp_paced_waits" = 0
echo 1 >"$CC/rp_enable"
ip netns exec nsA tc qdisc del dev vethA root 2>/dev/null

# recovers: a stream whose QP the bottleneck's CNPs limited goes on after
# the bottleneck gives way to a 20 ms delay (a long path, no congestion);
# its QP must be unlimited again (no rate in its resource details): a QP
# once cut must not stay paced, its increase timer running, for the rest
# of its life. Its window (what its rate sends in a millisecond) over a
# 20 ms round trip keeps it below half its target, which increases then
# hold: it is the quiet time that frees it (512 increase periods). (Freed
# of the bottleneck with no delay, the QP uses its target and hyper
# increase frees it.) The details of sroce0's RC QPs every half second;
# the bottleneck goes three samples after the first that shows a rate
# (how soon the stream starts depends on the guest's pace).
rc_rates() {
	jq -r '[.[] | select(.type == "RC" and .drv_cc_rate_kbps != null) |
		"\(.lqpn):\(.drv_cc_rate_kbps)"] | join(" ")' "$1" 2>/dev/null
}
recovers() {
	local i=0 rc pid cut=- dur=14 line
	# On the debug kernel a sample takes about 4 s, the stream shows its
	# first rate after some 15 s, and DCQCN's times are 50x: a QP whose
	# target outruns what it sends (KASAN's 1 MB/s) is unlimited after
	# 512 increase periods of 15 ms without a cut, 7.7 s. 40 s left one
	# sample after the cut (the stream ended at 6.9 Mb/s).
	sroce_debug_kernel && dur=60
	shape || return 1
	rm -f "$CAP"/rec.*.txt
	perf -s 65536 -D "$dur" >"$CAP/recover.txt" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && ((i < 400)); do
		sleep 0.5
		line=$(rdma -j -dd resource show qp link sroce0/1 2>/dev/null |
		       rc_rates /dev/stdin)
		echo "$line" >"$CAP/rec.$i.txt"
		if [ "$cut" = - ] && [[ " $line" =~ :[1-9] ]]; then
			cut=$((i + 3))
		fi
		if [ "$i" = "$cut" ]; then
			ip netns exec nsA tc qdisc replace dev vethA root \
				netem delay 20ms limit 10000
		fi
		i=$((i + 1))
	done
	wait "$pid"
	rc=$?
	echo "stream exit $rc; $i samples, the bottleneck gone after sample $cut"
	[ "$cut" != - ] || return 1
	python3 -c 'import sys
n, cut = int(sys.argv[2]), int(sys.argv[3])
rates = {}
for i in range(n):
    try:
        words = open("%s/rec.%d.txt" % (sys.argv[1], i)).read().split()
    except OSError:
        continue
    for w in words:
        q, r = w.split(":")
        rates.setdefault(q, []).append((i, int(r)))
print("RC QPs of sroce0, (sample, cc_rate_kbps):", rates)
sys.exit(not any(any(r > 0 and i <= cut for i, r in s) and
                 any(r == 0 and i > cut and any(r0 > 0 and i0 < i for i0, r0 in s)
                     for i, r in s)
                 for s in rates.values()))' "$CAP" "$i" "$cut" || return 1
	[ "$rc" = 0 ]
}
tap_check "a QP limited by the bottleneck's CNPs is unlimited again once the bottleneck is gone (a 20 ms path)" \
	recovers
ip netns exec nsA tc qdisc del dev vethA root 2>/dev/null

tap_check "nothing malformed, corrupt or unrouted" sroce_nothing_malformed

# ud_congested: 6 s of 1 KiB UD sends through the bottleneck. sroce1's UD
# QP answers the marked datagrams' sender (their source address, DETH's
# source QP) with CNPs; sroce0 handles them on its UD QP, whose pacer
# then holds it. (A UD QP has no window: until the first CNPs its
# datagrams overflow RED's limit, counted in sroce0's tx_errors — so this
# comes after the "nothing malformed" point.)
ud_congested() {
	local c
	declare -A b0 b1
	shape || return 1
	for c in np_cnp_sent np_ecn_marked_roce_packets; do b1[$c]=$(c1 $c); done
	for c in rp_cnp_handled rp_cnp_ignored rp_paced_waits rx_drop_no_qp \
		tx_errors; do
		b0[$c]=$(c0 $c)
	done
	sroce_pair nsB nsA 18516 \
		ib_send_bw -d sroce1 -x "$SROCE_GID_B" -F -c UD -s 1024 -D 6 -p 18516 -- \
		ib_send_bw -d sroce0 -x "$SROCE_GID_A" -F -c UD -s 1024 -D 6 -p 18516 10.77.0.2 ||
		return 1
	for c in "${!b1[@]}"; do b1[$c]=$(($(c1 $c) - b1[$c])); done
	for c in "${!b0[@]}"; do b0[$c]=$(($(c0 $c) - b0[$c])); done
	echo "UD: RED marked $(red marked); sroce1 CE ${b1[np_ecn_marked_roce_packets]} CNPs sent ${b1[np_cnp_sent]}; sroce0 CNPs handled ${b0[rp_cnp_handled]} ignored ${b0[rp_cnp_ignored]} no QP ${b0[rx_drop_no_qp]} paced ${b0[rp_paced_waits]}, dropped at the qdisc ${b0[tx_errors]}"
	[ "${b1[np_cnp_sent]}" -gt 0 ] && [ "${b0[rp_cnp_ignored]}" = 0 ] &&
		[ "${b0[rp_cnp_handled]}" -gt 0 ] &&
		[ "${b0[rp_cnp_handled]}" -le "${b1[np_cnp_sent]}" ] &&
		[ $((b0[rp_cnp_handled] + b0[rx_drop_no_qp])) -ge "${b1[np_cnp_sent]}" ] &&
		[ "${b0[rp_paced_waits]}" -gt 0 ]
}
tap_check "UD through the bottleneck: sroce1's UD QP sends CNPs to the datagrams' sender, sroce0's UD QP handles every one and is paced" \
	ud_congested
ip netns exec nsA tc qdisc del dev vethA root 2>/dev/null

# read_paced: 6 s of 64 KiB READs whose data crosses the bottleneck:
# sroce0 serves (its READ responses leave by vethA), sroce1 reads and
# gets them CE-marked; its CNPs go to sroce0's QP, whose pacer then holds
# the READ responses (sroce0's requester sends nothing there). The
# reader's QP takes PERF_QP's timeout: on the debug kernel 128 READs of
# 64 KiB queued at 3 Mbit/s outlast the default 67 ms seven times over
# (retry exceeded, status 12, after 4 READs).
read_paced() {
	local c
	declare -A b0 b1
	shape || return 1
	for c in np_cnp_sent np_ecn_marked_roce_packets; do b1[$c]=$(c1 $c); done
	for c in rp_cnp_handled rp_cnp_ignored rp_paced_waits; do b0[$c]=$(c0 $c); done
	sroce_pair nsA nsB 18517 \
		ib_read_bw -d sroce0 -x "$SROCE_GID_A" -F "${PERF_QP[@]}" -s 65536 -D 6 -p 18517 -- \
		ib_read_bw -d sroce1 -x "$SROCE_GID_B" -F "${PERF_QP[@]}" -s 65536 -D 6 -p 18517 10.77.0.1 ||
		return 1
	for c in "${!b1[@]}"; do b1[$c]=$(($(c1 $c) - b1[$c])); done
	for c in "${!b0[@]}"; do b0[$c]=$(($(c0 $c) - b0[$c])); done
	echo "READ: RED marked $(red marked) dropped $(( $(red early) + $(red pdrop) )); sroce1 CE ${b1[np_ecn_marked_roce_packets]} CNPs sent ${b1[np_cnp_sent]}; sroce0 CNPs handled ${b0[rp_cnp_handled]} ignored ${b0[rp_cnp_ignored]} paced ${b0[rp_paced_waits]}"
	[ "${b1[np_cnp_sent]}" -gt 0 ] && [ "${b0[rp_cnp_handled]}" -gt 0 ] &&
		[ "${b0[rp_cnp_ignored]}" = 0 ] && [ "${b0[rp_paced_waits]}" -gt 0 ]
}
tap_check "READ responses through the bottleneck: the reader's CNPs reach the responder's QP, whose pacer holds its READ responses" \
	read_paced
ip netns exec nsA tc qdisc del dev vethA root 2>/dev/null


# With rdma_rxe ----------------------------------------------------------
sroce_reset
sroce_rxe_pair || tap_bail "set-up: rxe0 on vethA, sroce1 in nsB"
RXE_NS=(); [ "$SROCE_RXE_NS" = - ] || RXE_NS=(ip netns exec "$SROCE_RXE_NS")
# marked_on NSEXEC DEV: RED's CE marks on DEV.
marked_on() {
	local dev=$1
	shift
	"$@" tc -s qdisc show dev "$dev" | sed -n 's/.* marked \([0-9]*\).*/\1/p' | head -n 1
}
# With rdma_cm, only the ECT(0) data takes the bottleneck: the CM's MADs
# (QP1, not ECN-capable) would be RED's to drop, and a lost DREQ leaves
# perftest waiting out its timeout (seen once, server exit 124).
# rdma_rxe's stream is not much faster than 100 Mbit/s: in one run on
# 6.12 it moved 10.7 MiB/s through that class, queued too little for RED
# to mark anything and the point failed. Its bottleneck is 40 Mbit/s
# (RXE_SHAPE). 3000 messages of 16 KiB; on the debug kernel 300 (at 2
# Mbit/s the 3000 would take more than three minutes).
RXE_ITERS=(-n 3000)
sroce_debug_kernel && RXE_ITERS=(-n 300)
from_rxe() {
	local cnp0 m SHAPE_MATCH=(match ip tos 0x02 0x03) SHAPE_RATE=$RXE_SHAPE
	shape_on vethA "${RXE_NS[@]}" || return 1
	cnp0=$(c1 np_cnp_sent)
	sroce_cm_pair nsB "$SROCE_RXE_NS" 18515 \
		ib_write_bw -d sroce1 -R -F -s 16384 "${RXE_ITERS[@]}" -- \
		ib_write_bw -d rxe0 -R -T 2 -F -s 16384 "${RXE_ITERS[@]}" 10.77.0.2 ||
		{ sroce_nothing_malformed sroce1; "${RXE_NS[@]}" tc -s qdisc show dev vethA; return 1; }
	grep -A1 '#bytes' "$SROCE_PAIR_DIR/client" | tail -n 1
	m=$(marked_on vethA "${RXE_NS[@]}")
	echo "RED marked $m; sroce1 sent $(($(c1 np_cnp_sent) - cnp0)) CNPs to rxe0"
	"${RXE_NS[@]}" tc qdisc del dev vethA root
	[ "$m" -gt 0 ] && [ "$(c1 np_cnp_sent)" -gt "$cnp0" ]
}
tap_check "rxe0 -> sroce1, ECT(0) through the bottleneck: sroce1 sends CNPs, rxe0's stream completes" from_rxe
to_rxe() {
	local h0 p0 m SHAPE_MATCH=(match ip tos 0x02 0x03) SHAPE_RATE
	sroce_debug_kernel && SHAPE_RATE=$RXE_SHAPE
	shape_on vethB ip netns exec nsB || return 1
	h0=$(c1 rp_cnp_handled) p0=$(c1 rp_paced_waits)
	sroce_cm_pair "$SROCE_RXE_NS" nsB 18515 \
		ib_write_bw -d rxe0 -R -F -s 16384 "${RXE_ITERS[@]}" -- \
		ib_write_bw -d sroce1 -R -F -s 16384 "${RXE_ITERS[@]}" 10.77.0.1 || return 1
	grep -A1 '#bytes' "$SROCE_PAIR_DIR/client" | tail -n 1
	m=$(marked_on vethB ip netns exec nsB)
	echo "RED marked $m; sroce1 handled $(($(c1 rp_cnp_handled) - h0)) CNPs, paced $(($(c1 rp_paced_waits) - p0))"
	ip netns exec nsB tc qdisc del dev vethB root
	[ "$m" -gt 0 ] && [ "$(c1 rp_cnp_handled)" = "$h0" ] &&
	[ "$(c1 rp_paced_waits)" = "$p0" ] && sroce_clean_from_rxe sroce1
}
tap_check "sroce1 -> rxe0, marked: no CNP comes back, sroce1's rate untouched" to_rxe
tap_done
