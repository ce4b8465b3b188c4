#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# An RC responder holds requests that arrive past a missing one, for up to
# reorder_us, instead of NAKing the gap at once (sroce_resp.c): a path
# that reorders but loses nothing should cost no go-back-N resends. RC
# traffic from sroce0 (nsA) to sroce1 (nsB), every byte checked by
# sroce_integrity, through netem on vethA that reorders (half the packets
# go at once, the others 100 us later; 2 ms on the debug kernel):
#  - with reorder_us=0 (NAK at once, as before) the reordering earns
#    sequence NAKs and resends: the scenario reorders;
#  - with the default (500 us) sroce1 holds requests, sends fewer of
#    those NAKs and sroce0 resends at most half as much;
# a UC stream through the same netem (a gap there loses the message under
# way, nothing is resent): with reorder_us=0 messages break, with the
# default at most a quarter as many, requests held;
# and through netem that loses 3 % and does not reorder, the gaps are
# losses: held requests wait out reorder_us, the gap is NAKed
# (rx_reorder_timeouts) or NAKed at once when the hold is full, the data
# still arrives intact; a sparse stream (one 16 KiB WRITE at a time, its
# packets sent one by one) through the same loss leaves fewer requests
# behind a gap than the hold takes and nothing after them, so there the
# gaps are NAKed when reorder_us runs out. Each phase but the sparse one
# runs integrity and a stream of 200 64 KiB WRITEs (the counts).
# Afterwards both devices go with nothing held left behind.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity
PARAM=/sys/module/sroce/parameters/reorder_us
BURST=/sys/module/sroce/parameters/tx_burst

integrity() {
	sroce_pair nsB nsA 18525 \
		"$BIN" -s -d sroce1 -g "$SROCE_GID_B" -w 60 -- \
		"$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -w 60 --quick ||
		return 1
	tail -n 1 "$SROCE_PAIR_DIR/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/server"
}

# counts: sroce1's seq_nak_sent, rx_reorder_held, rx_reorder_timeouts,
# sroce0's retransmitted_packets.
counts() {
	echo "$(sroce_counter sroce1 seq_nak_sent) $(sroce_counter sroce1 rx_reorder_held)" \
	     "$(sroce_counter sroce1 rx_reorder_timeouts) $(sroce_counter sroce0 retransmitted_packets)"
}

# stream: 200 64 KiB WRITEs from sroce0 to sroce1 (12,800 packets: how
# much integrity's random mix sends from sroce0 varies).
stream() {
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F -s 65536 -n 200 -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F -s 65536 -n 200 10.77.0.2
}

# run US: with reorder_us=US, integrity (every byte checked) and then a
# stream through the netem in place; sets NAKS HELD TMO RESENT to the
# counter deltas over both.
run() {
	local c0 c1
	echo "$1" >"$PARAM" || return 1
	read -ra c0 <<<"$(counts)"
	integrity || return 1
	stream || return 1
	read -ra c1 <<<"$(counts)"
	NAKS=$((c1[0] - c0[0])) HELD=$((c1[1] - c0[1]))
	TMO=$((c1[2] - c0[2])) RESENT=$((c1[3] - c0[3]))
	echo "reorder_us $1: $NAKS sequence NAKs, $HELD held, $TMO timeouts, $RESENT resent"
}

# sparse US: with reorder_us=US and tx_burst=1, 200 16 KiB WRITEs from
# sroce0 to sroce1, one in flight (-t 1): a packet lost inside a message
# leaves at most 15 requests behind its gap, then nothing until the
# message is answered, so only reorder_us's end NAKs the gap (a fast
# stream often fills the hold's 64 first: then the NAK goes at once, and
# netem drops a burst whole). Sets NAKS HELD TMO RESENT as run does.
sparse() {
	local c0 c1 burst rc
	echo "$1" >"$PARAM" || return 1
	burst=$(cat "$BURST") && echo 1 >"$BURST" || return 1
	read -ra c0 <<<"$(counts)"
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F -s 16384 -n 200 -t 1 -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F -s 16384 -n 200 -t 1 10.77.0.2
	rc=$?
	echo "$burst" >"$BURST"
	[ "$rc" = 0 ] || return 1
	read -ra c1 <<<"$(counts)"
	NAKS=$((c1[0] - c0[0])) HELD=$((c1[1] - c0[1]))
	TMO=$((c1[2] - c0[2])) RESENT=$((c1[3] - c0[3]))
	echo "sparse, reorder_us $1: $NAKS sequence NAKs, $HELD held, $TMO timeouts, $RESENT resent"
}

# uc_stream US: 200 64 KiB UC WRITEs from sroce0 to sroce1 with
# reorder_us=US; sets UC_DROP (sroce1's rx_drop_out_of_sequence: the
# packets of broken messages) and UC_HELD to the deltas.
uc_stream() {
	local d0 h0
	echo "$1" >"$PARAM" || return 1
	d0=$(sroce_counter sroce1 rx_drop_out_of_sequence)
	h0=$(sroce_counter sroce1 rx_reorder_held)
	sroce_pair nsB nsA 18515 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -F -c UC -s 65536 -n 200 -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -F -c UC -s 65536 -n 200 10.77.0.2 ||
		return 1
	UC_DROP=$(($(sroce_counter sroce1 rx_drop_out_of_sequence) - d0))
	UC_HELD=$(($(sroce_counter sroce1 rx_reorder_held) - h0))
	echo "reorder_us $1, UC: $UC_DROP dropped out of sequence, $UC_HELD held"
}

tap_plan 16
sroce_two_devices 1500 || tap_bail "set-up: sroce0 in nsA, sroce1 in nsB"
tap_eq "reorder_us defaults to 500" "$(cat "$PARAM")" 500
default=$(cat "$PARAM")
# Under KASAN (the debug kernel) sroce sends about a packet a
# millisecond, so netem's 100 us overtakes nothing (in one run 2 NAKs and
# 7 resends without the hold): there the delayed half waits 2 ms, and the
# hold is 10 ms.
delay=100us hold=$default
sroce_debug_kernel && delay=2ms hold=10000
tc -n nsA qdisc replace dev vethA root netem delay "$delay" reorder 50% ||
	tap_bail "netem reorder on vethA"

tap_check "reorder_us=0: every byte right through netem reorder 50%, and a stream" run 0
tap_diag "reorder_us=0: $NAKS sequence NAKs, $HELD held, $RESENT resent"
naks0=$NAKS resent0=$RESENT
tap_check "... the path reorders: >= 20 sequence NAKs, >= 200 resent, none held" \
	test "$naks0" -ge 20 -a "$resent0" -ge 200 -a "$HELD" = 0

tap_check "reorder_us=$hold: every byte right through the same netem" run "$hold"
tap_diag "reorder_us=$hold: $NAKS sequence NAKs, $HELD held, $TMO timeouts, $RESENT resent"
# The NAKs that remain are gaps held past reorder_us or a full hold: in
# a TCG guest netem's 100 us can stretch to milliseconds when the guest's
# timers run late, and a stream fills the 64 requests held meanwhile (one
# CI run: 14 NAKs against 25, with 116 resends against 417). What the
# hold saves is the resends, the next point; each of those NAKs still
# costs a window's go-back-N, so that bound is half, not a third.
tap_check "... requests held (>= 10), fewer sequence NAKs than $naks0" \
	test "$HELD" -ge 10 -a "$NAKS" -lt "$naks0"
tap_check "... resends <= 1/2 of $resent0" test $((RESENT * 2)) -le "$resent0"

TAP_VERBOSE=1 tap_check "UC, reorder_us=0: a stream through the same netem" uc_stream 0
uc_drop0=$UC_DROP
tap_check "... the reordering broke UC messages (>= 20 packets dropped out of sequence, none held)" \
	test "$uc_drop0" -ge 20 -a "$UC_HELD" = 0
TAP_VERBOSE=1 tap_check "UC, reorder_us=$hold: the same stream" uc_stream "$hold"
tap_check "... requests held (>= 10), at most 1/4 of $uc_drop0 dropped" \
	test "$UC_HELD" -ge 10 -a $((UC_DROP * 4)) -le "$uc_drop0"

tc -n nsA qdisc replace dev vethA root netem delay 100us loss 3% ||
	tap_bail "netem loss on vethA"
tap_check "netem loss 3%, no reordering: every byte right" run "$default"
tap_diag "loss: $NAKS sequence NAKs, $HELD held, $TMO timeouts, $RESENT resent"
# A gap is NAKed when reorder_us runs out, or at once when the hold is
# full (64 requests): a fast stream often fills it first (on 6.1 once
# every time: 9 NAKs, 0 timeouts), so here only that the gaps are NAKed.
tap_check "... gaps held are NAKed (NAKs >= 5 and >= timeouts)" \
	test "$NAKS" -ge 5 -a "$NAKS" -ge "$TMO"
tap_check "netem loss 3%, a sparse stream: done" sparse "$default"
tap_diag "sparse: $NAKS sequence NAKs, $HELD held, $TMO timeouts, $RESENT resent"
tap_check "... gaps NAKed when reorder_us runs out (timeouts >= 1, NAKs >= timeouts)" \
	test "$TMO" -ge 1 -a "$NAKS" -ge "$TMO"
tap_check "both devices hold only the MAD layer's objects" \
	sroce_only_mad_objects sroce0 sroce1
tap_check "rmmod with every object gone" rmmod sroce
tap_done
