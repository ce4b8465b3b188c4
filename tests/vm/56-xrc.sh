#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# XRC (extended reliable connections, IBTA A14) between sroce0 (nsA,
# vethA) and sroce1 (nsB, vethB):
#   - ibv_devinfo -v lists XRC among both devices' device_cap_flags;
#   - sroce_xrc, one process on both devices and a helper process: XRC
#     domains (on a file, shared between the processes, and fd -1), XRC
#     SRQs with their own PDs and CQs, SENDs 1 B to 64 KiB, with
#     immediate, RDMA WRITE (and with immediate), READ and atomics naming
#     one SRQ or the other, through ibv_post_send and the ibv_wr_* API,
#     every byte and completion checked; NAK Invalid Request for an SRQ of
#     another domain, a number that is no SRQ and a basic SRQ's
#     (REM_INV_REQ_ERR, nothing delivered, error_nak_sent +1), a key of
#     the other SRQ's PD (REM_ACCESS_ERR); posting on the wrong half
#     (EINVAL); ibv_close_xrcd's EBUSY and the domain outliving one of its
#     two processes; ibv_open_qp of a target QP by number;
#   - sroce_integrity --xrc: its RC transfers (SEND, SEND with immediate,
#     WRITE, WRITE with immediate, READ; edge and random sizes, multi-SGE,
#     8 in flight) through an XRC domain, SRQ and QP pair a side, every
#     byte and completion checked;
#   - ibv_xsrq_pingpong, one server and three clients (the clients share
#     one XRC domain on sroce0 through /tmp/xrc_domain), each side serving;
#   - perftest -c XRC: ib_send_bw (ibv_wr_* and --use_old_post_send),
#     ib_write_bw, ib_read_bw, ib_atomic_bw, ib_send_lat and ib_send_bw
#     -q 4: the result row (iterations, a non-zero figure), both ends in
#     XRC mode with an SRQ number, sroce1 receiving a packet per message;
#   - no error NAK from the applications, nothing malformed, and both
#     devices back to the MAD layer's own objects.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
XRC_DIR=/tmp/sroce-xrc
# The files ibv_xsrq_pingpong and perftest open their XRC domains on.
XRC_FILES="/tmp/xrc_domain /tmp/xrc_domain_server /tmp/xrc_domain_client"
cleanup() {
	sroce_reset
	# shellcheck disable=SC2086 # a list on purpose
	rm -f $XRC_FILES
}
sroce_reset
trap cleanup EXIT
mkdir -p "$XRC_DIR"

# devinfo_xrc DEV: "XRC" among the flag names ibv_devinfo -v prints under
# device_cap_flags, whose value has IBV_DEVICE_XRC (bit 20) set.
devinfo_xrc() {
	local out flags
	out=$(ibv_devinfo -v -d "$1") || return 1
	flags=$(awk '$1 == "device_cap_flags:" { print $2 }' <<<"$out")
	echo "$1 device_cap_flags $flags:"
	awk '$1 == "device_cap_flags:" { f = 1; next } f && $1 ~ /:$/ { exit } f' <<<"$out"
	awk '$1 == "device_cap_flags:" { f = 1; next } f && $1 ~ /:$/ { exit }
	     f && $1 == "XRC" { found = 1 } END { exit !found }' <<<"$out" &&
	[ -n "$flags" ] && [ $((flags & (1 << 20))) -ne 0 ]
}

devinfo_both() {
	devinfo_xrc sroce0 && devinfo_xrc sroce1
}

# xsrq SERVER_SIDE: ibv_xsrq_pingpong, one server and three clients at once
# (-c 3 on the server: it connects an XRC pair to each client and sends
# each 10 rounds through its SRQ). Every process prints "success"; the
# server learnt three distinct client SRQ numbers (the clients share one
# domain on their device), each client one non-zero server SRQ number.
xsrq() {
	local sns sdev sgid sip cns cdev cgid n=3 i spid pids=() rc=0 out srqns
	if [ "$1" = B ]; then
		sns=nsB sdev=sroce1 sgid=$SROCE_GID_B sip=10.77.0.2
		cns=nsA cdev=sroce0 cgid=$SROCE_GID_A
	else
		sns=nsA sdev=sroce0 sgid=$SROCE_GID_A sip=10.77.0.1
		cns=nsB cdev=sroce1 cgid=$SROCE_GID_B
	fi
	# shellcheck disable=SC2086
	rm -f $XRC_FILES "$XRC_DIR"/xsrq.*
	ip netns exec "$sns" timeout 120 ibv_xsrq_pingpong -d "$sdev" -g "$sgid" -m 1024 \
		-s 4096 -n 10 -c "$n" >"$XRC_DIR/xsrq.server" 2>&1 </dev/null &
	spid=$!
	vm_wait_listen -n "$sns" 18515 30 || { kill "$spid"; wait "$spid"; return 1; }
	for ((i = 1; i <= n; i++)); do
		ip netns exec "$cns" timeout 120 ibv_xsrq_pingpong -d "$cdev" -g "$cgid" \
			-m 1024 -s 4096 -n 10 "$sip" >"$XRC_DIR/xsrq.client$i" 2>&1 </dev/null &
		pids+=($!)
	done
	for ((i = 1; i <= n; i++)); do
		wait "${pids[i - 1]}" || { echo "client $i: exit $?"; rc=1; }
	done
	wait "$spid" || { echo "server: exit $?"; rc=1; }
	for out in "$XRC_DIR"/xsrq.server "$XRC_DIR"/xsrq.client*; do
		echo "--- ${out##*/}:"
		cat "$out"
		[ "$(tail -n 1 "$out")" = success ] || { echo "no success line"; rc=1; }
	done
	# "  remote: LID 0000, QPN RECV %06x SEND %06x, PSN %06x, SRQN %06x, GID ..."
	srqns=$(sed -n 's/^ *remote: .*SRQN \([0-9a-f]*\),.*/\1/p' "$XRC_DIR/xsrq.server")
	[ "$(sort -u <<<"$srqns" | grep -cv '^0*$')" = "$n" ] ||
		{ echo "server: remote SRQNs '$srqns', want $n distinct non-zero"; rc=1; }
	[ "$(grep -c '^ *local: ' "$XRC_DIR/xsrq.server")" = "$n" ] ||
		{ echo "server: not $n local addresses"; rc=1; }
	for ((i = 1; i <= n; i++)); do
		grep -Eq '^ *remote: .*SRQN 0*[1-9a-f][0-9a-f]*,' "$XRC_DIR/xsrq.client$i" ||
			{ echo "client $i: no non-zero remote SRQN"; rc=1; }
	done
	return "$rc"
}

# perf TEST ARGS...: a perftest pair with -c XRC, sroce1 (nsB) serving.
# The client's result row: the iteration count and a non-zero figure (the
# bandwidths of 8-byte atomics may round to 0.00, the message rate not);
# both ends say "Connection type : XRC" and print an SRQ number; sroce1
# received at least one packet per message. perftest checks no data.
perf() {
	local t=$1 n=200 qps=1 row rx0 rx1 out
	shift
	[ "${1:-}" = -q ] && qps=$2
	rx0=$(sroce_counter sroce1 rx_packets)
	sroce_pair nsB nsA 18515 \
		"$t" -d sroce1 -x "$SROCE_GID_B" -c XRC -n "$n" "$@" -- \
		"$t" -d sroce0 -x "$SROCE_GID_A" -c XRC -n "$n" "$@" 10.77.0.2 || return 1
	rx1=$(sroce_counter sroce1 rx_packets)
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t -c XRC $*: $row"
	echo "sroce1 rx_packets +$((rx1 - rx0)) for $n messages"
	[ -n "$row" ] || { tail -n 12 "$SROCE_PAIR_DIR/client"; return 1; }
	for out in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		grep -Eq 'Connection type : XRC' "$out" || { echo "${out##*/}: not XRC"; return 1; }
		grep -Eq 'SRQn 0x[0-9a-f]+' "$out" || { echo "${out##*/}: no SRQ number"; return 1; }
	done
	# perftest's row counts the iterations of all -q QPs together.
	awk -v n=$((n * qps)) '{ if ($2 != n) exit 1; for (i = 3; i <= NF; i++) if ($i > 0) exit 0; exit 1 }' \
		<<<"$row" && [ $((rx1 - rx0)) -ge $((n * qps)) ]
}

# integrity_xrc: tests/tools/sroce_integrity --xrc (an XRC domain, SRQ,
# XRC_RECV and XRC_SEND QP a side), sroce1 serving: SEND, SEND with
# immediate, WRITE, WRITE with immediate and READ of edge and random
# sizes, every byte and completion checked.
integrity_xrc() {
	local bin=$SROCE_BIN/sroce_integrity
	sroce_pair nsB nsA 18525 \
		"$bin" -s --xrc -d sroce1 -g "$SROCE_GID_B" -w 60 -- \
		"$bin" -c 10.77.0.2 --xrc -d sroce0 -g "$SROCE_GID_A" -w 60 --quick ||
		return 1
	tail -n 3 "$SROCE_PAIR_DIR/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/server"
}

# error_naks DEV: error_nak_sent + error_nak_received of DEV.
# naks_since A0 B0: those of sroce0 and sroce1 are still A0 and B0.
error_naks() {
	echo $(($(sroce_counter "$1" error_nak_sent) + $(sroce_counter "$1" error_nak_received)))
}
naks_since() {
	local a b
	a=$(error_naks sroce0) b=$(error_naks sroce1)
	echo "error NAKs sent + received: sroce0 $1 -> $a, sroce1 $2 -> $b"
	[ "$a" = "$1" ] && [ "$b" = "$2" ]
}

# The module goes (no XRC domain or target QP holds a device).
unload() {
	sroce_unload
	! grep -q '^sroce ' /proc/modules
}

# Both devices hold only the MAD layer's objects once the last process
# has gone (its objects go with its file; give it a moment).
mad_objects() {
	sroce_wait 10 sroce_only_mad_objects sroce0 sroce1
	sroce_only_mad_objects sroce0 sroce1
}

tap_plan 17
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

tap_check "ibv_devinfo -v -d sroce0 and -d sroce1: XRC in device_cap_flags" \
	devinfo_both
TAP_VERBOSE=1 tap_check "sroce_xrc: XRC domains and SRQs, SEND/WRITE/READ/atomics through both APIs, NAKs, ibv_close_xrcd, a domain shared by two processes" \
	ip netns exec nsB timeout 300 "$SROCE_BIN/sroce_xrc" -a sroce0 -A "$SROCE_GID_A" \
	-b sroce1 -B "$SROCE_GID_B"

naks_a=$(error_naks sroce0) naks_b=$(error_naks sroce1)
tap_check "sroce_integrity --xrc: all ops, edge and random sizes, every byte" integrity_xrc
tap_check "ibv_xsrq_pingpong: sroce1 serves three clients on sroce0 (-c 3)" xsrq B
tap_check "ibv_xsrq_pingpong: sroce0 serves three clients on sroce1 (-c 3)" xsrq A
tap_check "ib_send_bw -c XRC" perf ib_send_bw
tap_check "ib_send_bw -c XRC --use_old_post_send" perf ib_send_bw --use_old_post_send
tap_check "ib_write_bw -c XRC" perf ib_write_bw
tap_check "ib_read_bw -c XRC" perf ib_read_bw
tap_check "ib_atomic_bw -c XRC" perf ib_atomic_bw
tap_check "ib_send_lat -c XRC" perf ib_send_lat
tap_check "ib_send_bw -c XRC -q 4 (four XRC pairs, one SRQ a side)" perf ib_send_bw -q 4
tap_check "ib_write_bw -c XRC -q 4" perf ib_write_bw -q 4
tap_check "sroce_integrity, ibv_xsrq_pingpong and perftest: no error NAK sent or received" \
	naks_since "$naks_a" "$naks_b"
tap_check "nothing malformed, corrupt or unrouted" sroce_nothing_malformed
tap_check "sroce0 and sroce1: back to the MAD layer's own objects" mad_objects
tap_check "the devices deleted and sroce unloaded" unload
tap_done
