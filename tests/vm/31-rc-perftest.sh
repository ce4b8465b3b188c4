#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# perftest over RC between sroce0 (nsA, client) and sroce1 (nsB, server):
# send, write, read and atomic bandwidth and latency, each with perftest's
# default (the ibv_wr_* API) and with --use_old_post_send, at MTU 1500.
# Each must finish and report a
# result row with its iteration count and a non-zero figure. Everything
# again at MTU 9000 (path MTU 4096) with the default API. Streaming
# ib_write_bw must need almost no doorbell system calls (printed) and have
# its bursts received on the other CPU, and a ping-pong's posts must run
# in their doorbell's call, not in a worker, its packets received where
# they arrive.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# 1000 iterations (perftest's defaults: 5000 for bandwidth, 1000 for
# latency): enough for a figure; 200 on the debug kernel, where even that
# would take an hour.
iters=(-n 1000)
if sroce_debug_kernel; then
	tap_diag "debug kernel: 200 iterations per test"
	iters=(-n 200)
fi

# perf TEST ARGS...: run TEST both ends; check the client's result row.
perf() {
	local t=$1 row
	shift
	[[ " $* " == *" -n "* ]] || set -- "${iters[@]}" "$@"
	sroce_pair nsB nsA 18515 \
		"$t" -d sroce1 -x "$SROCE_GID_B" "$@" -- \
		"$t" -d sroce0 -x "$SROCE_GID_A" "$@" 10.77.0.2 || return 1
	# bytes, iterations, then figures, one of which must be > 0: the
	# bandwidths (MB/s, two decimals) of 8-byte atomics on the debug
	# kernel round to 0.00, where only the message rate shows.
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t $*: $row"
	# No result row: what the client printed instead.
	[ -n "$row" ] || tail -n 12 "$SROCE_PAIR_DIR/client"
	[ -n "$row" ] && awk '{ for (i = 3; i <= NF; i++) if ($i > 0) exit 0; exit 1 }' <<<"$row"
}

bw_tests="ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw"
lat_tests="ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat"
tap_plan 49

sroce_two_devices 1500 || tap_bail "set-up: sroce0/sroce1"
for t in $bw_tests $lat_tests; do
	tap_check "$t (ibv_wr_* API)" perf "$t"
	tap_check "$t --use_old_post_send" perf "$t" --use_old_post_send
done

# Doorbells per message of a streaming writer: ib_write_bw keeps its TX
# depth of writes posted, so the requester should find the next one queued
# and need no doorbell. MAX: the bound (DEBUG_MAX on the debug kernel).
# Packets both devices took on a CPU beside the one that received them.
steered() {
	echo $(($(sroce_counter sroce0 rx_steered_packets) + \
		$(sroce_counter sroce1 rx_steered_packets)))
}

streaming_doorbells() { # N SIZE MAX DEBUG_MAX
	local n=$1 size=$2 max=$3 debug_max=$4 db0 db1 st0 st1 ratio sd0

	sroce_debug_kernel && max=$debug_max
	db0=$(sroce_counter sroce0 doorbells)
	st0=$(sroce_counter sroce0 stream_doorbells)
	sd0=$(steered)
	tap_check "ib_write_bw -n $n -s $size streams" \
		perf ib_write_bw -n "$n" -s "$size"
	db1=$(sroce_counter sroce0 doorbells)
	st1=$(sroce_counter sroce0 stream_doorbells)
	# A stream's bursts are received on the other CPU (rx_steer).
	tap_check "streaming $size B: bursts received beside the sending CPU ($(($(steered) - sd0)) packets)" \
		test "$(($(steered) - sd0))" -gt 0
	ratio=$(awk -v d=$((db1 - db0)) -v n="$n" \
		'BEGIN { printf "%.4f", d / n }')
	tap_diag "ib_write_bw -s $size: $((db1 - db0)) doorbell system calls for $n writes, $((st1 - st0)) of them handed to a worker"
	tap_check "streaming $size B: at most $max doorbells per message ($ratio)" \
		awk -v r="$ratio" -v m="$max" 'BEGIN { exit !(r <= m) }'
}

# A stream of small writes rings a doorbell only when the requester has
# gone idle for 20 us before the next post: how often that happens is a
# matter of timing (a quiet host gives 0.002-0.005 per message, make
# bench; the test VM beside other work has given 0.09 and 0.27), so here
# the check is that it is a stream at all: fewer than half the messages
# rang (a requester idle after each message would ring for each). The
# debug kernel posts too slowly even for that: within one doorbell per
# message. A 1 MiB write goes to a worker after its first packets
# whatever the kernel's speed (run in the doorbell's call, it was a
# stop-and-wait: one doorbell per message).
nsmall=20000 nlarge=200
sroce_debug_kernel && nsmall=2000 nlarge=40
streaming_doorbells "$nsmall" 4096 0.5 1
streaming_doorbells "$nlarge" 1048576 0.05 0.05

# A ping-pong is no stream, however short its round trip: each post
# answers the peer's message and runs in the doorbell's call. Its reply
# often arrived while that call still ran, so by the clock alone 35-75 %
# of 8 B ib_send_lat's posts went to a worker (and took twice as long);
# now only a post that heard nothing from the peer since the last one
# may. Allowed: 1 %. And each post rings: the call's 16-packet budget is
# counted from the requester's last idle. It used to be carried from
# call to call, so a 4 KiB ping-pong (4 packets a message) handed 14-16 %
# of its posts to a worker after 4 messages, and those rang no doorbell
# (typical 127-180 us against 77-89 us now). Allowed: 1 % not rung.
#
# Nor is a ping-pong's message of a few packets received on another CPU:
# a hand-off would add a wake-up to each round trip (4 KiB ib_send_lat
# 48 -> 106 us typical when every burst was steered; a closed loop of 4
# KiB READs, whose responses come back to the requester's worker, 53 ->
# 75 us before bursts under 8 packets stayed).
pingpong_doorbells() { # TEST SIZE
	local n=2000 st0 st1 db0 db1 sd0 sd
	st0=$(sroce_counter sroce0 stream_doorbells)
	db0=$(sroce_counter sroce0 doorbells)
	sd0=$(steered)
	tap_check "$1 -n $n -s $2 ping-pong" perf "$1" -n "$n" -s "$2"
	st1=$(sroce_counter sroce0 stream_doorbells)
	db1=$(sroce_counter sroce0 doorbells)
	sd=$(($(steered) - sd0))
	tap_diag "$1 -s $2: $((db1 - db0)) doorbells for $n posts, $((st1 - st0)) handed to a worker"
	tap_check "$1 -s $2: doorbells ran the ping-pong in the call (rang $((db1 - db0)), to a worker $((st1 - st0)))" \
		test "$((db1 - db0))" -ge $((n - n / 100)) -a "$((st1 - st0))" -le $((n / 100))
	tap_check "$1 -s $2: every packet taken on the CPU it arrived on (steered $sd)" \
		test "$sd" -eq 0
}
pingpong_doorbells ib_send_lat 8
pingpong_doorbells ib_write_lat 8
pingpong_doorbells ib_send_lat 4096
pingpong_doorbells ib_write_lat 4096
sd0=$(steered)
tap_check "ib_read_lat -n 2000 -s 4096 ping-pong" perf ib_read_lat -n 2000 -s 4096
sd=$(($(steered) - sd0))
tap_check "ib_read_lat -s 4096: READ responses taken on the CPU they arrived on (steered $sd)" \
	test "$sd" -eq 0

# 16 QPs streaming at once: a QP's next pass may wait behind the other
# QPs' for longer than the retransmission timeout (67 ms here). Nothing
# is lost on veth, so that must not time out. Before the fix a run took
# 14-20 timeouts and 224-320 duplicates; an ACK that the guest's
# softirq itself delays past the timeout (seen once in CI: 1 timeout, 0
# duplicates) is a real timeout and is allowed twice, with at most one
# pass (64 packets) resent. The debug kernel (KASAN, lockdep) runs the
# data path about eight times slower: there the QPs get eight times the
# timeout (-u 17: 537 ms), or ACKs that are only late fire the timer
# (22 and 38 timeouts, 0 duplicates, in two runs at 14).
nq16=200 q16_timeout=()
sroce_debug_kernel && nq16=20 q16_timeout=(-u 17)
rto0=$(sroce_counter sroce0 retransmit_timeouts)
dup0=$(sroce_counter sroce1 duplicate_requests)
tap_check "ib_write_bw -q 16 -n $nq16 -s 65536 ${q16_timeout[*]}" \
	perf ib_write_bw -q 16 -n "$nq16" -s 65536 "${q16_timeout[@]}"
rto=$(($(sroce_counter sroce0 retransmit_timeouts) - rto0))
dup=$(($(sroce_counter sroce1 duplicate_requests) - dup0))
tap_check "-q 16: at most 2 retransmission timeouts ($rto), 64 duplicates ($dup)" \
	test "$rto" -le 2 -a "$dup" -le 64

# The device's window (module parameter dev_window, 512): the 16 QPs of
# one device together keep at most that many PSNs unacknowledged, each at
# least 16 of its own. Without it, on 6.1 (its receive softirq in
# ksoftirqd beside the busy-polling perftests) the run above took 11, 14,
# 12 and 22 timeouts in 4 of 6 runs; with it 0 in 6. At 16 every QP keeps
# to its 16: the packet that fills the window asks for the ACK that lets
# the QP go on, so the QPs wait (counted) and do not time out. Without
# that ACK request 3152 of 3200 waits ended in a timeout; a late ACK (the
# receiving softirq starved, as above) took 2 once on 6.1: 16 allowed.
dwin=/sys/module/sroce/parameters/dev_window
dwin0=$(cat "$dwin")
echo 16 >"$dwin"
wait0=$(sroce_counter sroce0 dev_window_waits)
rto0=$(sroce_counter sroce0 retransmit_timeouts)
tap_check "dev_window 16: ib_write_bw -q 16 -n $((nq16 / 4)) -s 65536 ${q16_timeout[*]}" \
	perf ib_write_bw -q 16 -n $((nq16 / 4)) -s 65536 "${q16_timeout[@]}"
waits=$(($(sroce_counter sroce0 dev_window_waits) - wait0))
rto=$(($(sroce_counter sroce0 retransmit_timeouts) - rto0))
tap_check "dev_window 16: the device held the QPs ($waits waits), at most 16 timeouts ($rto)" \
	test "$waits" -gt 0 -a "$rto" -le 16

echo "$dwin0" >"$dwin"

# The device's count (sysfs tx_inflight) while 4 QPs stream, and once the
# client is killed mid-stream (its QPs destroyed with PSNs in flight):
# none may stay counted, or the window would shrink for good. A 2 ms
# delay on the way keeps PSNs unacknowledged at the end of a pass (on
# bare veth the ACKs come back inside the send: the count is 0 there).
killed_midstream() {
	local count=/sys/class/infiniband/sroce0/tx_inflight spid cpid v i
	local peak=0 last=0 ok
	tc -n nsA qdisc replace dev vethA root netem delay 2ms || return 1
	ip netns exec nsB timeout 60 ib_write_bw -d sroce1 -x "$SROCE_GID_B" \
		-q 4 -s 65536 -D 30 >/tmp/31-kill-server.out 2>&1 </dev/null &
	spid=$!
	vm_wait_listen -n nsB 18515 30
	ip netns exec nsA ib_write_bw -d sroce0 -x "$SROCE_GID_A" \
		-q 4 -s 65536 -D 30 10.77.0.2 >/tmp/31-kill-client.out 2>&1 </dev/null &
	cpid=$!
	for i in $(seq 40); do
		sleep 0.1
		v=$(cat "$count")
		((v > peak)) && peak=$v
		last=$v
	done
	kill -9 "$cpid"
	wait "$cpid"
	kill "$spid"
	wait "$spid"
	tc -n nsA qdisc del dev vethA root
	v=$(cat "$count")
	echo "sroce0 tx_inflight: peak $peak, $last just before the kill, $v after; sroce1 $(cat /sys/class/infiniband/sroce1/tx_inflight)" |
		tee /tmp/31-kill.txt
	[ "$peak" -gt 0 ] && [ "$v" = 0 ] &&
		[ "$(cat /sys/class/infiniband/sroce1/tx_inflight)" = 0 ]
	ok=$?
	[ "$ok" = 0 ] || tail -n 8 /tmp/31-kill-client.out /tmp/31-kill-server.out
	return "$ok"
}
tap_check "tx_inflight counts 4 streaming QPs' PSNs, none once they are killed mid-stream" \
	killed_midstream
tap_diag "$(cat /tmp/31-kill.txt 2>/dev/null)"

sroce_reset
sroce_two_devices 9000 || tap_bail "set-up at MTU 9000"
for t in $bw_tests $lat_tests; do
	tap_check "MTU 9000: $t" perf "$t"
done
tap_done
