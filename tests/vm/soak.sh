#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The soak (issue 8, load): SOAK_MINUTES (default 30) of mixed traffic
# between sroce0 (nsA) and sroce1 (nsB) over a link that loses 1 % of its
# packets both ways, four workers at once:
#   integrity  one sroce_integrity pair for the whole time: SEND, SEND with
#              immediate, WRITE, WRITE with immediate, READ, 0 B..8 MiB,
#              every byte and completion checked, new data every round;
#   incast     sroce_scale runs back to back: 64 RC QPs into one SRQ, 64
#              messages each way per QP (16 x 32 on the debug kernel),
#              every message checked;
#   cm         sroce_cm_cycles runs back to back: rdma_cm connect, send,
#              disconnect, 20 cycles a run (objects made and destroyed);
#   perftest   ib_write_bw, ib_read_bw and ib_atomic_bw runs in turn.
# Every minute it samples the kernel's unreclaimable slab, sroce's objects
# ("rdma resource") and its counters.
#
# Passes when every run of every worker passed, every device is back to
# the MAD layer's own objects, and memory is flat: the mean unreclaimable
# slab of the last third of the samples under load within SOAK_SLAB_KB
# (default 4096 KiB) of the middle third's, and (Debian's kernel) the
# quiesced measure (caches dropped) after the traffic within as much of
# the one before it. On a kernel with kmemleak on (tools/vm/run
# --debug-kernel --kmemleak: what "make soak" runs when the debug kernel
# is built) a scan after the traffic must find no leak. Not one of
# tests/vm/run-all's numbered scripts: "make soak" runs it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

MINUTES=${SOAK_MINUTES:-30}
# The debug kernel (KASAN, kmemleak) moves a tenth as much: smaller runs,
# so each finishes well inside its time limit.
INCAST_QPS=64 INCAST_MSGS=64 PERF_ITERS=2000
if sroce_debug_kernel; then
	INCAST_QPS=16 INCAST_MSGS=32 PERF_ITERS=300
fi
SLAB_KB=${SOAK_SLAB_KB:-4096}
DIR=/tmp/soak
rm -rf "$DIR"
mkdir -p "$DIR"

sunreclaim_kb() { awk '$1 == "SUnreclaim:" {print $2}' /proc/meminfo; }

quiesced_slab_kb() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 5
	sunreclaim_kb
}

# A worker: runs "$@" (a function) until the deadline; counts runs and
# failures in $DIR/NAME.runs / .fails, keeps each failed run's output.
worker() {
	local name=$1 runs=0 fails=0
	shift
	while [ "$(date +%s)" -lt "$END" ]; do
		runs=$((runs + 1))
		if ! "$@" >"$DIR/$name.out" 2>&1; then
			fails=$((fails + 1))
			cp "$DIR/$name.out" "$DIR/$name.fail.$runs"
		fi
		echo "$runs" >"$DIR/$name.runs"
		echo "$fails" >"$DIR/$name.fails"
	done
}

incast_run() {
	# Ports: integrity 18630, incast 18640, perftest 18650, rdma_cm 7490.
	local p=18640
	SROCE_PAIR_DIR=$DIR/incast-pair SROCE_PAIR_TMO=600 sroce_pair nsB nsA "$p" \
		"$SROCE_BIN/sroce_scale" -s -d sroce1 -g "$SROCE_GID_B" -p "$p" --srq -w 120 -- \
		"$SROCE_BIN/sroce_scale" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -p "$p" \
		-n $INCAST_QPS -k $INCAST_MSGS --size 1024 -w 120 &&
	grep -Eq "^scale: $INCAST_QPS QPs, [0-9]+ messages, 0 errors\$" "$DIR/incast-pair/server" &&
	grep -Eq "^scale: $INCAST_QPS QPs, [0-9]+ messages, 0 errors\$" "$DIR/incast-pair/client"
}

cm_run() {
	SROCE_PAIR_DIR=$DIR/cm-pair SROCE_PAIR_TMO=600 sroce_cm_pair nsB nsA 7490 \
		"$SROCE_BIN/sroce_cm_cycles" -s -b 10.77.0.2 -p 7490 -n 20 -- \
		"$SROCE_BIN/sroce_cm_cycles" -c 10.77.0.2 -p 7490 -n 20 &&
	grep -qx "cm_cycles: 20 cycles, 20 messages checked" "$DIR/cm-pair/client"
}

PERF_I=0
perf_run() {
	local t=(ib_write_bw ib_read_bw ib_atomic_bw)
	local bin=${t[PERF_I % 3]}
	PERF_I=$((PERF_I + 1))
	SROCE_PAIR_DIR=$DIR/perf-pair SROCE_PAIR_TMO=600 sroce_pair nsB nsA 18650 \
		"$bin" -d sroce1 -x "$SROCE_GID_B" -p 18650 -n $PERF_ITERS -- \
		"$bin" -d sroce0 -x "$SROCE_GID_A" -p 18650 -n $PERF_ITERS 10.77.0.2
}

sample() {
	local t=$(($(date +%s) - START))
	echo "$t $(sunreclaim_kb) $(sroce_resources sroce0 | tr ' ' _) $(sroce_resources sroce1 | tr ' ' _)" \
		>>"$DIR/samples"
}

# Mean of column 2 over samples [from, to) (1-based lines).
samples_mean() {
	awk -v a="$1" -v b="$2" 'NR >= a && NR < b {s += $2; n++} END {print n ? int(s / n) : 0}' \
		"$DIR/samples"
}

# KASAN (the debug kernel) parks freed objects in a quarantine of up to
# 1/32 of RAM before the slab gets them back, and nothing empties it on
# demand: there only the trend under load counts (the quarantine is full
# after the first minutes), and kmemleak is the leak check.
slab_flat() {
	local n mid last rc=0
	n=$(wc -l <"$DIR/samples")
	mid=$(samples_mean $((n / 3 + 1)) $((2 * n / 3 + 1)))
	last=$(samples_mean $((2 * n / 3 + 1)) $((n + 1)))
	echo "under load: middle third ${mid} KiB, last third ${last} KiB (${n} samples)"
	[ $((last - mid)) -le "$SLAB_KB" ] || rc=1
	echo "quiesced: ${SLAB_BASE} KiB before the traffic, ${SLAB_END} KiB after it"
	if sroce_debug_kernel; then
		echo "(debug kernel: KASAN's quarantine keeps freed objects; not compared)"
	else
		[ $((SLAB_END - SLAB_BASE)) -le "$SLAB_KB" ] || rc=1
	fi
	return $rc
}

worker_passed() {
	local runs fails
	runs=$(cat "$DIR/$1.runs" 2>/dev/null || echo 0)
	fails=$(cat "$DIR/$1.fails" 2>/dev/null || echo 0)
	echo "$1: $runs runs, $fails failed"
	for f in "$DIR/$1".fail.*; do
		[ -e "$f" ] || continue
		echo "--- $f"; tail -n 20 "$f"
	done
	[ "$runs" -gt 0 ] && [ "$fails" = 0 ]
}

integrity_passed() {
	tail -n 3 "$DIR/integrity-pair/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$DIR/integrity-pair/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$DIR/integrity-pair/server"
}

tap_plan 9
sroce_two_devices 1500 || tap_bail "set-up"
tc -n nsA qdisc replace dev vethA root netem loss 1% &&
tc -n nsB qdisc replace dev vethB root netem loss 1% || tap_bail "netem"
kmemleak_on=0
if sroce_kmemleak_on; then
	kmemleak_on=1
	# Forget what boot and earlier scripts left: only the soak counts.
	sroce_kmemleak_clear
fi
tap_diag "soak: $MINUTES minutes, netem loss 1% both ways, kmemleak $([ $kmemleak_on = 1 ] && echo on || echo off), kernel $(uname -r)"

SLAB_BASE=$(quiesced_slab_kb)
START=$(date +%s)
END=$((START + MINUTES * 60))
SROCE_PAIR_DIR=$DIR/integrity-pair SROCE_PAIR_TMO=$((MINUTES * 60 + 600)) sroce_pair nsB nsA 18630 \
	"$SROCE_BIN/sroce_integrity" -s -d sroce1 -g "$SROCE_GID_B" -p 18630 -w 120 -- \
	"$SROCE_BIN/sroce_integrity" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -p 18630 -w 120 \
	--seconds $((MINUTES * 60)) >"$DIR/integrity.out" 2>&1 &
IPID=$!
worker incast incast_run &
WPIDS=($!)
worker cm cm_run &
WPIDS+=($!)
worker perf perf_run &
WPIDS+=($!)

while [ "$(date +%s)" -lt "$END" ]; do
	sample
	sleep 60
done
wait "${WPIDS[@]}"
wait "$IPID"
IRC=$?
sample
tc -n nsA qdisc del dev vethA root
tc -n nsB qdisc del dev vethB root
sleep 5
SLAB_END=$(quiesced_slab_kb)
tap_diag "samples (seconds, SUnreclaim KiB, objects): $(tr '\n' ';' <"$DIR/samples")"

tap_check "integrity for $MINUTES minutes: every byte and completion right" \
	bash -c "[ $IRC = 0 ]; r=\$?; cat '$DIR/integrity.out'; exit \$r"
tap_check "... and both sides report 0 errors" integrity_passed
tap_check "incast ($INCAST_QPS QPs into one SRQ): every run passed" worker_passed incast
tap_check "rdma_cm cycles: every run passed" worker_passed cm
tap_check "perftest write/read/atomic: every run passed" worker_passed perf
tap_check "both devices back to the MAD layer's own objects" sroce_only_mad_objects sroce0 sroce1
tap_check "retransmissions counted (the loss was real)" \
	sroce_counters_nonzero sroce0 retransmitted_packets
tap_diag "$(slab_flat)"
tap_check "unreclaimable slab flat (within ${SLAB_KB} KiB)" slab_flat
if [ $kmemleak_on = 1 ]; then
	tap_check "kmemleak: no leak after the soak" sroce_kmemleak_none
else
	tap_skip "kmemleak: not on in this kernel (make soak with the debug kernel built)"
fi
tap_done
