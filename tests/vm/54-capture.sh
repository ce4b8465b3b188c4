#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Captures show every packet. A packet tap sees a transmit burst (one
# fraglist GSO packet) as one frame, and dissectors decode only its first
# packet; so while a tap listens where a packet goes out (the device, all
# devices, or a veth's peer) sroce sends each on its own and counts it
# (tx_tapped_packets). Between sroce0 (nsA) and sroce1 (nsB):
#   - tcpdump on vethA (the sender's own device) while RC SEND, WRITE,
#     READ and atomics, UC WRITE, UD SEND and XRC SEND, READ and atomics
#     run: one frame per packet each
#     way (frames from each address == that device's tx_packets), nothing
#     dropped by the capture; tshark decodes every frame as InfiniBand with
#     no malformed packet or expert error, and finds each opcode the
#     traffic used (SEND/WRITE/READ response first, middle, last, READ
#     request, ACK, atomic ACK, FETCH_ADD, UC WRITE, UD SEND only, and
#     XRC's SEND, READ, responses, ACKs and FETCH_ADD with their XRCETH);
#   - tcpdump on vethB, the peer of the sender's device, in the other
#     namespace: one frame per packet of sroce0's WRITE stream;
#   - UD multicast (sroce_mcast) under a tap on vethA: tshark decodes its
#     datagrams to destination QP 0xFFFFFF with no malformed frame;
#   - no burst while a tap listens, bursts again once it has gone.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
source "$here/capture.sh"
CAP=/tmp/sroce-capture
cleanup() {
	capture_kill
	sroce_reset
}
sroce_reset
trap cleanup EXIT
mkdir -p "$CAP"

# perf TEST ARGS...: a perftest pair, sroce1 serving; a result row, or
# the transfer done and only the client's report missing: under the tap
# perftest's clock calibration fails more often than sroce_pair's three
# tries allow ("r^2 < 0.9 ... Can't produce a report", the server exits
# 0), and what this script checks is the capture, not the figures.
perf() {
	local t=$1 out rc
	shift
	out=$(sroce_pair nsB nsA 18515 \
		"$t" -d sroce1 -x "$SROCE_GID_B" "$@" -- \
		"$t" -d sroce0 -x "$SROCE_GID_A" "$@" 10.77.0.2)
	rc=$?
	echo "$out"
	if [ "$rc" != 0 ]; then
		grep -q "Can't produce a report" "$SROCE_PAIR_DIR/client" &&
			grep "client exit" <<<"$out" | tail -n 1 |
			grep -q "client exit 1, server exit 0"
		return
	fi
	grep -qE '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client"
}

# traffic: every kind whose packets the capture must show.
traffic() {
	perf ib_send_bw -s 4096 -n 100 &&
	perf ib_write_bw -s 4096 -n 200 &&
	perf ib_read_bw -s 4096 -n 100 &&
	perf ib_atomic_bw -n 100 &&
	perf ib_write_bw -c UC -s 4096 -n 100 &&
	perf ib_send_bw -c UD -s 1024 -n 100 &&
	perf ib_send_bw -c XRC -s 4096 -n 100 &&
	perf ib_read_bw -c XRC -s 4096 -n 50 &&
	perf ib_atomic_bw -c XRC -n 50
}

# frames FILE SRC: frames of FILE from IP address SRC.
frames() {
	tshark -r "$1" -Y "ip.src == $2" 2>/dev/null | wc -l
}

# same_count WHAT CAPTURED SENT
same_count() {
	echo "$1: $2 frames captured, $3 packets sent"
	[ "$2" -eq "$3" ] && [ "$3" -gt 0 ]
}

# not_infiniband FILE: frames tshark does not decode as InfiniBand.
not_infiniband() {
	tshark -r "$1" -Y "!infiniband" 2>/dev/null | wc -l
}

# bad_frames FILE: malformed frames and expert errors tshark finds.
bad_frames() {
	tshark -r "$1" -Y '_ws.malformed || _ws.expert.severity == 8388608' 2>/dev/null |
		wc -l
}

# no_bursts_tapped BURSTS0 TAPPED0: tx_bursts unchanged, tx_tapped_packets
# grown.
no_bursts_tapped() {
	local g t
	g=$(sroce_counter sroce0 tx_bursts) t=$(sroce_counter sroce0 tx_tapped_packets)
	echo "sroce0 tx_bursts +$((g - $1)), tx_tapped_packets +$((t - $2))"
	[ "$g" = "$1" ] && [ "$t" -gt "$2" ]
}

peer_tapped() {
	local a0 a1
	a0=$(sroce_counter sroce0 tx_packets)
	capture_start nsB vethB "$CAP/b.pcap" "udp port 4791" || return 1
	perf ib_write_bw -s 4096 -n 200 || return 1
	capture_stop "$CAP/b.pcap" || return 1
	a1=$(sroce_counter sroce0 tx_packets)
	same_count sroce0 "$(frames "$CAP/b.pcap" 10.77.0.1)" $((a1 - a0))
}

# mcast_capture: sroce_mcast's traffic under a tap on vethA, its
# multicast datagrams decoded.
mcast_capture() {
	local rc n bad
	capture_start nsA vethA "$CAP/m.pcap" "udp port 4791" || return 1
	ip netns exec nsB timeout 120 "$SROCE_BIN/sroce_mcast" -a sroce0 -A "$SROCE_GID_A" \
		-b sroce1 -B "$SROCE_GID_B" >"$CAP/m.out" 2>&1
	rc=$?
	capture_stop "$CAP/m.pcap" || return 1
	[ "$rc" = 0 ] || { tail -n 20 "$CAP/m.out"; return 1; }
	n=$(tshark -r "$CAP/m.pcap" -Y 'infiniband.bth.destqp == 0xffffff' \
		2>/dev/null | wc -l)
	bad=$(bad_frames "$CAP/m.pcap")
	echo "multicast frames decoded: $n; malformed or expert errors: $bad"
	[ "$n" -gt 0 ] && [ "$bad" = 0 ] &&
	has_opcodes "$(capture_opcodes "$CAP/m.pcap")" 100
}

bursts_again() {
	local g0 g1
	g0=$(sroce_counter sroce0 tx_bursts)
	perf ib_write_bw -s 65536 -n 200 || return 1
	g1=$(sroce_counter sroce0 tx_bursts)
	echo "sroce0 tx_bursts +$((g1 - g0))"
	[ "$g1" -gt "$g0" ]
}

tap_plan 13
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

a0=$(sroce_counter sroce0 tx_packets) b0=$(sroce_counter sroce1 tx_packets)
g0=$(sroce_counter sroce0 tx_bursts) t0=$(sroce_counter sroce0 tx_tapped_packets)
tap_check "tcpdump on vethA (sroce0's device) listens" capture_start nsA vethA "$CAP/a.pcap" \
	"udp port 4791"
tap_check "RC SEND/WRITE/READ/atomics, UC WRITE, UD SEND, XRC SEND/READ/atomics under the tap" \
	traffic
tap_check "tcpdump on vethA dropped nothing, wrote all it took" capture_stop "$CAP/a.pcap"
a1=$(sroce_counter sroce0 tx_packets) b1=$(sroce_counter sroce1 tx_packets)
tap_check "vethA: one frame per packet sroce0 sent" \
	same_count sroce0 "$(frames "$CAP/a.pcap" 10.77.0.1)" $((a1 - a0))
tap_check "vethA: one frame per packet sroce1 sent" \
	same_count sroce1 "$(frames "$CAP/a.pcap" 10.77.0.2)" $((b1 - b0))
# RC: 0-2 SEND first/middle/last, 6-8 WRITE, 12 READ request, 13-15 READ
# response, 17 ACK, 18 atomic ACK, 20 FETCH_ADD; UC (0x20 +) 38-40 WRITE;
# UD (0x60 +) 100 SEND only; XRC (0xa0 +) 160-162 SEND, 172 READ request,
# 173-175 READ response, 177 ACK, 178 atomic ACK, 180 FETCH_ADD.
tap_check "tshark: every opcode the traffic used" \
	has_opcodes "$(capture_opcodes "$CAP/a.pcap")" 0 1 2 6 7 8 12 13 14 15 17 18 20 38 39 40 100 \
	160 161 162 172 173 174 175 177 178 180
tap_eq "tshark: every frame decoded as InfiniBand" "$(not_infiniband "$CAP/a.pcap")" 0
tap_eq "tshark: no malformed frame, no expert error" "$(bad_frames "$CAP/a.pcap")" 0
tap_check "sroce0 sent no burst while the tap listened, and counted its packets" \
	no_bursts_tapped "$g0" "$t0"

# The tap on the other end of the veth, in the other namespace.
tap_check "tcpdump on vethB (the peer of sroce0's device): one frame per packet of a WRITE stream" \
	peer_tapped
tap_check "UD multicast (sroce_mcast) under the tap: tshark decodes its datagrams to QP 0xFFFFFF, nothing malformed" \
	mcast_capture
tap_check "no tap: ib_write_bw sends in bursts again" bursts_again
tap_check "nothing malformed, corrupt or unrouted" sroce_nothing_malformed
tap_done
