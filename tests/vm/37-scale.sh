#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Load and scale (issue 8) with tests/tools/sroce_scale, sroce0 (nsA) to
# sroce1 (nsB):
#  - 4,096 RC QPs on each device, QP i connected to QP i: on every one a
#    WRITE and 4 SENDs one way, 4 SENDs back; every message checked (QP,
#    order, bytes), every WRITE block too; "rdma resource" counts the
#    QPs while they live and none after;
#  - incast: 64 QPs into one receiver whose QPs all take their receives
#    from one SRQ of 4,096 buffers, 256 messages of 1 KiB per QP (16,384,
#    so every SRQ buffer is reposted four times), each checked; and again
#    with an SRQ of only 128 buffers for 1,024 messages in flight and a
#    receiver that stops every 2,000 messages until it has run dry, the senders get RNR NAKs and retry, nothing lost.
# The debug kernel (KASAN) runs 1,024 QPs: the same code paths, a quarter
# of the time; and its small SRQ has 32 buffers (its senders would take
# seconds to fill 128).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_scale
NQP=4096
SRQ_SMALL=128	# buffers of the SRQ that must run dry
if sroce_debug_kernel; then
	NQP=1024
	SRQ_SMALL=32	# senders under KASAN fill 128 slowly
fi

# scale SERVER_ARGS... -- CLIENT_ARGS...; both sides must report 0 errors.
scale() {
	local srv=() want
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	SROCE_PAIR_TMO=${SCALE_TMO:-600} sroce_pair nsB nsA 18620 \
		"$BIN" -s -d sroce1 -g "$SROCE_GID_B" -w 120 "${srv[@]}" -- \
		"$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -w 120 "$@" || return 1
	grep -a '^ok\|^not ok\|^scale:' "$SROCE_PAIR_DIR/client"
	want='^scale: [0-9]+ QPs, [0-9]+ messages, 0 errors$'
	grep -Eq "$want" "$SROCE_PAIR_DIR/client" && grep -Eq "$want" "$SROCE_PAIR_DIR/server"
}

qp_count() {
	rdma resource show | awk -v d="$1:" '$2 == d {for (i = 3; i < NF; i++) if ($i == "qp") print $(i + 1)}'
}

# While the big run goes on: both devices hold NQP QPs and QP1 at some
# point (polled every second).
PEAK_FILE=/tmp/scale-peak
watch_peak() {
	local a b pa=0 pb=0
	while :; do
		a=$(qp_count sroce0) b=$(qp_count sroce1)
		[ "${a:-0}" -gt $pa ] && pa=$a
		[ "${b:-0}" -gt $pb ] && pb=$b
		echo "$pa $pb" >"$PEAK_FILE"
		sleep 1
	done
}

peak_seen() {
	local pa pb
	read -r pa pb <"$PEAK_FILE"
	echo "most QPs seen: sroce0 $pa, sroce1 $pb (want $((NQP + 1)) each)"
	[ "$pa" = $((NQP + 1)) ] && [ "$pb" = $((NQP + 1)) ]
}

tap_plan 7
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"
echo "0 0" >"$PEAK_FILE"
watch_peak &
WPID=$!
tap_check "$NQP RC QPs a side: WRITE + 4 SENDs each way on every QP, all checked" \
	scale -- -n $NQP -k 4 --size 256
kill $WPID
wait $WPID 2>/dev/null
tap_check "rdma resource counted all $NQP QPs on each device" peak_seen
tap_check "... and none after: both back to the MAD layer's own objects" sroce_only_mad_objects sroce0 sroce1
tap_check "incast: 64 QPs into one SRQ, 256 x 1 KiB each (16,384 messages)" \
	scale --srq -- -n 64 -k 256 --size 1024 --depth 1024
tap_check "... both back to the MAD layer's own objects" sroce_only_mad_objects sroce0 sroce1
rnr0=$(sroce_counter sroce0 rnr_nak_received)
tap_check "incast into an SRQ of $SRQ_SMALL buffers: 16,384 messages, all checked" \
	scale --srq --srq-depth $SRQ_SMALL --stall 2000 -- -n 64 -k 256 --size 1024 --depth 1024
tap_check "... it ran dry: the senders got RNR NAKs and retried" bash -c \
	"n=\$(cat /sys/class/infiniband/sroce0/ports/1/hw_counters/rnr_nak_received);
	 echo \"rnr_nak_received \$n (was $rnr0)\"; [ \$n -gt $rnr0 ]"
tap_done
