#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Loopback chains (security defect: unbounded kernel-stack recursion). RC
# QPs of sroce0 that talk to sroce0's own GID get their packets through
# the receive path directly, in the sender's context; tests/tools/
# sroce_lochain lines up requesters and responders so that each
# responder's ACK runs the next requester, which sends to the next
# responder, and fires the whole chain with one doorbell (the tool's
# header has the construction). A kernel that runs every link inline
# nests a few frames per link and overflows its stack at 64 links; it
# must instead complete every link, every byte in place, every WQE once.
#  - a short chain (3 links), which even a recursing kernel survives:
#    the construction itself is right;
#  - 64 links, and 256 (128 on the debug kernel);
#  - the counters over all three: the chains' ACKs and drops exactly,
#    no retransmission timeout, NAK or duplicate;
#  - the device holds only the MAD layer's objects afterwards; rmmod.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_lochain
LONG=256
sroce_debug_kernel && LONG=128	# KASAN: 516 QPs' set-up takes a while

# chain N: the tool's run of N links, its own points shown on failure.
chain() {
	timeout 150 "$BIN" -d sroce0 -g "$SROCE_GID" -n "$1"
}

tap_plan 6
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_check "a chain of 3 loopback links completes, data verified" chain 3
tap_check "a chain of 64 loopback links completes, data verified" chain 64
tap_check "a chain of $LONG loopback links completes, data verified" chain "$LONG"

# Each chain of N links: N + 1 ACKs, N + 2 requests dropped in INIT.
acks=$((3 + 1 + 64 + 1 + LONG + 1))
drops=$((3 + 2 + 64 + 2 + LONG + 2))
got=""
for c in acks_sent rx_drop_qp_state retransmit_timeouts seq_nak_sent error_nak_sent \
	duplicate_requests stale_responses tx_errors; do
	got+="$c $(sroce_counter sroce0 $c), "
done
tap_eq "counters: the chains' ACKs and drops, no timeout, NAK, duplicate or error" \
	"$got" "acks_sent $acks, rx_drop_qp_state $drops, retransmit_timeouts 0, seq_nak_sent 0, error_nak_sent 0, duplicate_requests 0, stale_responses 0, tx_errors 0, "
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" \
	"$SROCE_MAD_OBJECTS"
tap_check "rmmod afterwards" rmmod sroce
tap_done
