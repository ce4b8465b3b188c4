#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Scripted RoCE v2 wire cases: tests/tools/sroce_wire runs in nsB
# (10.77.0.2, no sroce device there) as a fake peer on UDP 4791, and opens
# sroce0 (nsA, 10.77.0.1) through libibverbs for its victim QPs, whose
# path and dest_qpn point at the peer. It checks every datagram sroce0
# sends (headers, payload bytes, ICRC) and answers with crafted packets:
#   dmalen             READ/WRITE requests with DMA lengths above 2^31 earn
#                      NAK Invalid Request and ERR; exactly 2^31 on a
#                      64 KiB MR earns NAK Remote Access Error
#   req-edges          a requester answered at the edges of its PSN window
#                      (stale, duplicate and out-of-window ACKs, RNR and
#                      sequence NAKs, bad READ responses, duplicate atomic
#                      ACKs): resends, completions and counters exact
#   tamper-rewrite     the same with the SQ slots rewritten after the send:
#                      resends carry the posted bytes
#   tamper-prod-ahead  SQ prod moved beyond the ring: a corrupt ring
#   tamper-prod-back   SQ prod moved back below what the kernel fetched
#   uc-no-rwqe         a UC SEND and WRITE with immediate that find the
#                      receive queue empty: dropped whole, no RNR NAK, counted;
#                      the next ones land
#   xrc                an XRC target QP: SENDs, WRITE, READ, FETCH_ADD through
#                      the SRQ each request names, XRC answers; a message
#                      switching SRQs, another domain's SRQ and no SRQ earn
#                      NAK Invalid Request; wrong-transport opcodes dropped
#   resp-race          with tests/kmod/sroce_race.ko holding the responder
#                      between a failed SEND packet and the move to ERR,
#                      the message's next packet from the other CPU is not
#                      taken: no receive WQE completes twice or is lost
# One point per case (the tool's own TAP points show when it fails), then
# the device holds only the MAD layer's objects. The VM runner fails the
# script on any BUG/WARNING/oops in the kernel log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap 'rmmod sroce_race 2>/dev/null; sroce_reset' EXIT

WIRE=$SROCE_BIN/sroce_wire
WAIT=3 QUIET=300 DELAY=300
if sroce_debug_kernel; then	# KASAN: everything several times slower
	WAIT=15 QUIET=1000 DELAY=600
fi

# wire CASE: one case of sroce_wire, from nsB.
wire() {
	ip netns exec nsB timeout 300 "$WIRE" -d sroce0 -g "$SROCE_GID" -l 10.77.0.2 \
		-r 10.77.0.1 -w "$WAIT" -q "$QUIET" --case "$1"
}

# resp-race: the case, with the module holding its window open.
resp_race() {
	insmod "$SROCE_KBUILD/tests/kmod/sroce_race.ko" scenario=qp_error delay_ms=$DELAY ||
		return 1
	wire resp-race
	local rc=$?
	rmmod sroce_race || rc=1
	return $rc
}

tap_plan 9
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_check "dmalen: DMA lengths above 2^31 are NAKed Invalid Request, 2^31 Remote Access" \
	wire dmalen
tap_check "req-edges: answers at the edges of the requester's PSN window" wire req-edges
tap_check "tamper-rewrite: SQ slots rewritten after the send, resends as posted" \
	wire tamper-rewrite
tap_check "tamper-prod-ahead: SQ prod beyond the ring is a corrupt ring" wire tamper-prod-ahead
tap_check "tamper-prod-back: SQ prod below what was fetched is a corrupt ring" \
	wire tamper-prod-back
tap_check "uc-no-rwqe: UC messages with no receive WQE are dropped whole, silently" \
	wire uc-no-rwqe
tap_check "xrc: requests through the SRQ they name; foreign and missing SRQs NAKed" \
	wire xrc
tap_check "resp-race: a failed SEND's next packet, on another CPU, is not taken" resp_race
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" \
	"$SROCE_MAD_OBJECTS"
tap_done
