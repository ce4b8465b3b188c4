#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RoCE v1 (ethertype 0x8915: Ethernet, GRH, BTH; no IP, no UDP) beside v2,
# with the module loaded as roce_v1=1, between sroce0 (nsA, vethA) and
# sroce1 (nsB, vethB):
#   - the GID table holds both types (index 0 v1 fe80::, 1 v2 fe80::, a
#     v1/v2 pair for the IPv4 address);
#   - over the v1 GIDs: rc/uc/ud pingpong with buffers checked, every RC
#     perftest, sroce_integrity (RC, every byte); tcpdump of ethertype
#     0x8915 and UDP 4791 meanwhile sees one v1 frame per packet sent, no
#     UDP at all, and tshark decodes them with no malformed frame and
#     every opcode the traffic used;
#   - UD multicast over v1 (sroce_mcast: delivery to two QPs, detach,
#     errnos, limits);
#   - a v1 QP and a v2 QP of one device run at once;
#   - loopback: a v1 connection between two QPs of sroce0;
#   - rdma_cm with default_roce_mode "IB/RoCE v1": rping, data checked,
#     its frames (CM MADs too) v1;
#   - hostile v1 frames (bad ICRC, wrong next header, truncated, another
#     host's MAC) are dropped and counted, and the device goes on working.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
source "$here/capture.sh"
CAP=/tmp/sroce-v1
CM_DIRS=()
cleanup() {
	local d
	capture_kill
	for d in "${CM_DIRS[@]}"; do rmdir "$d" 2>/dev/null; done
	sroce_reset
}
sroce_reset
trap cleanup EXIT
mkdir -p "$CAP"
export SROCE_MODPARAMS="roce_v1=1"

V1="IB/RoCE v1"
# What the captures take: RoCE v1 frames and RoCE v2 datagrams.
V1_OR_V2="ether proto 0x8915 or udp port 4791"

# gid_types DEV: "index type gid" of each non-zero GID of DEV.
gid_types() {
	local f i gid t
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		read -r gid <"$f" 2>/dev/null || continue
		[[ $gid == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
		i=${f##*/}
		read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null
		echo "$i $t $gid"
	done | sort -n
}

# gid_table DEV IPV4: index 0 v1 and 1 v2 of one fe80:: GID, and the
# IPv4 address as a v1 and a v2 GID.
gid_table() {
	local t
	t=$(gid_types "$1")
	echo "$t"
	grep -Eq "^0 $V1 fe80:" <<<"$t" && grep -Eq "^1 RoCE v2 fe80:" <<<"$t" &&
	[ "$(awk '$1 == 0 {print $NF}' <<<"$t")" = "$(awk '$1 == 1 {print $NF}' <<<"$t")" ] &&
	sroce_gid_index "$1" "$(sroce_ipv4_gid "$2")" "$V1" >/dev/null &&
	sroce_gid_index "$1" "$(sroce_ipv4_gid "$2")" >/dev/null
}

# pp PROG ARGS...: an ibverbs pingpong pair over the v1 GIDs, buffers
# checked (--chk), sroce1 serving.
pp() {
	local p=$1
	shift
	sroce_pair nsB nsA 18515 \
		"$p" -d sroce1 -g "$V1_B" --chk "$@" -- \
		"$p" -d sroce0 -g "$V1_A" --chk "$@" 10.77.0.2 || return 1
	grep -E "iters in" "$SROCE_PAIR_DIR/client"
}

# perf TEST ARGS...: a perftest pair over the v1 GIDs; a result row.
perf() {
	local t=$1
	shift
	sroce_pair nsB nsA 18515 \
		"$t" -d sroce1 -x "$V1_B" "$@" -- \
		"$t" -d sroce0 -x "$V1_A" "$@" 10.77.0.2 || return 1
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client"
}

# integrity: every byte of RC SEND/WRITE/READ over v1.
integrity() {
	SROCE_PAIR_TMO=300 sroce_pair nsB nsA 18525 \
		"$SROCE_BIN/sroce_integrity" -s -d sroce1 -g "$V1_B" -- \
		"$SROCE_BIN/sroce_integrity" -c 10.77.0.2 -d sroce0 -g "$V1_A" \
		--quick || return 1
	tail -n 3 "$SROCE_PAIR_DIR/client"
}

v1_traffic() {
	pp ibv_rc_pingpong -s 3000 -m 1024 -n 50 &&
	pp ibv_uc_pingpong -s 1000 -n 50 &&
	pp ibv_ud_pingpong -s 512 -n 50 &&
	perf ib_send_bw -s 4096 -n 100 &&
	perf ib_write_bw -s 4096 -n 100 &&
	perf ib_read_bw -s 4096 -n 100 &&
	perf ib_atomic_bw -n 100 &&
	perf ib_write_lat -s 64 -n 100 &&
	perf ib_send_bw -c XRC -s 4096 -n 100 &&
	perf ib_read_bw -c XRC -s 4096 -n 50 &&
	integrity
}

# counted WHAT CAPTURED SENT: the capture has one frame per packet sent.
counted() {
	echo "$1: $2 captured, $3 sent"
	[ "$2" -eq "$3" ] && [ "$3" -gt 0 ]
}

# frames FILE FILTER [TSHARK OPTION...]: frames of FILE that FILTER takes.
frames() {
	tshark -r "$1" -Y "$2" "${@:3}" 2>/dev/null | wc -l
}

# per_packet: v1.pcap has a frame for each packet sroce0 (to vethB's MAC)
# and sroce1 (from it) counted as sent (a0 a1 b0 b1).
per_packet() {
	local mac_b f=$CAP/v1.pcap
	mac_b=$(ip netns exec nsB cat /sys/class/net/vethB/address)
	counted sroce0 "$(frames "$f" "eth.type == 0x8915 && eth.dst == $mac_b")" $((a1 - a0)) &&
	counted sroce1 "$(frames "$f" "eth.type == 0x8915 && eth.src == $mac_b")" $((b1 - b0))
}

# mixed: a v2 WRITE stream and a v1 RC pingpong on the same devices at
# once, each with its own pair directory.
# (On the debug kernel, about 1 MB/s under KASAN, 2000 messages outlast
# the pair's 120 s: the server timed out, the client's QP then ran out of
# retries. 400 there, still longer than the pingpong's 13 s.)
mixed() {
	local pid rc=0 n=2000
	sroce_debug_kernel && n=400
	SROCE_PAIR_DIR=$CAP/v2pair sroce_pair nsB nsA 18600 \
		ib_write_bw -d sroce1 -x "$SROCE_GID_B" -p 18600 -s 65536 -n "$n" -- \
		ib_write_bw -d sroce0 -x "$SROCE_GID_A" -p 18600 -s 65536 -n "$n" 10.77.0.2 \
		>"$CAP/v2pair.out" 2>&1 &
	pid=$!
	sleep 1
	SROCE_PAIR_DIR=$CAP/v1pair sroce_pair nsB nsA 18601 \
		ibv_rc_pingpong -d sroce1 -g "$V1_B" -p 18601 --chk -n 200 -- \
		ibv_rc_pingpong -d sroce0 -g "$V1_A" -p 18601 --chk -n 200 10.77.0.2 || rc=1
	wait "$pid" || { cat "$CAP/v2pair.out"; rc=1; }
	grep -E "iters in" "$CAP/v1pair/client"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$CAP/v2pair/client" || rc=1
	return $rc
}

# loopback: a v1 RC pingpong between two QPs of sroce0 (nsA); the frames
# never reach vethA (its tx counter stays), sroce0 counts them both ways.
loopback() {
	local tx0 tx1 v1
	v1=$(sroce_gid_index sroce0 "$(sroce_ipv4_gid 10.77.0.1)" "$V1") || return 1
	tx0=$(ip netns exec nsA cat /sys/class/net/vethA/statistics/tx_packets)
	sroce_pair nsA nsA 18602 \
		ibv_rc_pingpong -d sroce0 -g "$v1" -p 18602 --chk -n 200 -- \
		ibv_rc_pingpong -d sroce0 -g "$v1" -p 18602 --chk -n 200 127.0.0.1 || return 1
	tx1=$(ip netns exec nsA cat /sys/class/net/vethA/statistics/tx_packets)
	grep -E "iters in" "$SROCE_PAIR_DIR/client"
	echo "vethA tx_packets +$((tx1 - tx0))"
	# A few ARP/ND frames may go; 200 round trips would be 400 and more.
	[ $((tx1 - tx0)) -lt 20 ]
}

# mcast_v1: sroce_mcast over the v1 GIDs under a tap on vethA; its
# multicast datagrams are v1 frames tshark decodes.
mcast_v1() {
	local rc n bad
	capture_start nsA vethA "$CAP/m.pcap" "$V1_OR_V2" || return 1
	ip netns exec nsB timeout 120 "$SROCE_BIN/sroce_mcast" -a sroce0 -A "$V1_A" \
		-b sroce1 -B "$V1_B"
	rc=$?
	capture_stop "$CAP/m.pcap" || return 1
	[ "$rc" = 0 ] || return 1
	n=$(frames "$CAP/m.pcap" 'eth.type == 0x8915 && infiniband.bth.destqp == 0xffffff')
	bad=$(frames "$CAP/m.pcap" '_ws.malformed || _ws.expert.severity == 8388608')
	echo "v1 multicast frames: $n, UDP: $(frames "$CAP/m.pcap" udp), malformed or expert errors: $bad"
	[ "$n" -gt 0 ] && [ "$(frames "$CAP/m.pcap" udp)" = 0 ] && [ "$bad" = 0 ]
}

# cm_v1: rdma_cm's default RoCE type of both devices set to v1 in
# configfs, then rping, data checked, with its frames captured: v1 only.
cm_v1() {
	local d
	modprobe rdma_ucm && modprobe configfs || return 1
	# configfs is a module on Debian's kernels: the guest's early mount
	# could not find it.
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config || return 1
	for d in sroce0 sroce1; do
		mkdir -p "/sys/kernel/config/rdma_cm/$d" || return 1
		CM_DIRS+=("/sys/kernel/config/rdma_cm/$d")
		echo "$V1" >"/sys/kernel/config/rdma_cm/$d/ports/1/default_roce_mode" || return 1
		echo "$d: $(cat "/sys/kernel/config/rdma_cm/$d/ports/1/default_roce_mode")"
	done
	capture_start nsA vethA "$CAP/cm.pcap" "$V1_OR_V2" || return 1
	sroce_cm_pair nsB nsA 7174 \
		stdbuf -oL rping -s -a 10.77.0.2 -p 7174 -C 10 -v -V -- \
		stdbuf -oL rping -c -a 10.77.0.2 -p 7174 -C 10 -v -V || return 1
	capture_stop "$CAP/cm.pcap" || return 1
	sroce_rping_check "$SROCE_PAIR_DIR/client" 10 "ping data: " &&
	sroce_rping_check "$SROCE_PAIR_DIR/server" 10 "server ping data: " || return 1
	echo "v1 frames: $(frames "$CAP/cm.pcap" 'eth.type == 0x8915'), UDP 4791: $(frames "$CAP/cm.pcap" udp)"
	[ "$(frames "$CAP/cm.pcap" 'eth.type == 0x8915')" -gt 20 ] &&
	[ "$(frames "$CAP/cm.pcap" udp)" = 0 ] &&
	# QP1's CM MADs (to the GSI QP, BTH opcode 0x64 UD SEND only) too.
	[ "$(frames "$CAP/cm.pcap" 'infiniband.bth.destqp == 1')" -gt 0 ]
}

# hostile: v1 frames nobody should send, from nsB's vethB to vethA's
# MAC: each is dropped and counted, and v1 works afterwards.
hostile() {
	local mac_a mac_b out icrc0 mal0 icrc1 mal1
	mac_a=$(ip netns exec nsA cat /sys/class/net/vethA/address)
	mac_b=$(ip netns exec nsB cat /sys/class/net/vethB/address)
	icrc0=$(sroce_counter sroce0 rx_drop_icrc) mal0=$(sroce_counter sroce0 rx_drop_malformed)
	out=$(ip netns exec nsB python3 - "$mac_a" "$mac_b" <<'EOF'
import socket, struct, sys, zlib
dst = bytes.fromhex(sys.argv[1].replace(":", ""))
src = bytes.fromhex(sys.argv[2].replace(":", ""))
sgid = bytes(10) + b"\xff\xff" + bytes([10, 77, 0, 2])
dgid = bytes(10) + b"\xff\xff" + bytes([10, 77, 0, 1])
payload = b"hostile frame..."
bth = struct.pack(">BBHII", 0x04, 0, 0xffff, 0x11, 0x80000000 | 5)
def frame(nexthdr=0x1b, bad_icrc=False, cut=None, to=dst):
    plen = len(bth) + len(payload) + 4
    grh = struct.pack(">IHBB", 6 << 28, plen, nexthdr, 64) + sgid + dgid
    m = bytearray(grh); m[0:4] = b"\x6f\xff\xff\xff"; m[7] = 0xff
    mb = bytearray(bth); mb[4] = 0xff
    icrc = zlib.crc32(b"\xff" * 8 + bytes(m) + bytes(mb) + payload)
    if bad_icrc:
        icrc ^= 1
    body = grh + bth + payload + struct.pack("<I", icrc)
    if cut is not None:
        body = body[:cut]
    return to + src + b"\x89\x15" + body
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("vethB", 0))
for _ in range(3):
    s.send(frame(bad_icrc=True))
for _ in range(2):
    s.send(frame(nexthdr=0x11))
s.send(frame(cut=30))
# To another host's MAC: not sroce0's to take, not counted.
s.send(frame(bad_icrc=True, to=bytes.fromhex("020000000099")))
print("sent 7 frames")
EOF
) || { echo "$out"; return 1; }
	echo "$out"
	sleep 1
	icrc1=$(sroce_counter sroce0 rx_drop_icrc) mal1=$(sroce_counter sroce0 rx_drop_malformed)
	echo "sroce0 rx_drop_icrc +$((icrc1 - icrc0)), rx_drop_malformed +$((mal1 - mal0))"
	[ $((icrc1 - icrc0)) = 3 ] && [ $((mal1 - mal0)) = 3 ] &&
	pp ibv_rc_pingpong -n 20
}

tap_plan 16
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB (roce_v1=1)"
V1_A=$(sroce_gid_index sroce0 "$(sroce_ipv4_gid 10.77.0.1)" "$V1")
V1_B=$(sroce_gid_index sroce1 "$(sroce_ipv4_gid 10.77.0.2)" "$V1")
tap_diag "v1 GIDs: sroce0 $V1_A, sroce1 $V1_B; v2: $SROCE_GID_A, $SROCE_GID_B"

tap_check "sroce0: GID 0 v1 and 1 v2 of fe80::, the IPv4 address as v1 and v2" \
	gid_table sroce0 10.77.0.1
tap_check "sroce1: the same" gid_table sroce1 10.77.0.2

a0=$(sroce_counter sroce0 tx_packets) b0=$(sroce_counter sroce1 tx_packets)
tap_check "tcpdump on vethA listens (ether proto 0x8915 or udp port 4791)" \
	capture_start nsA vethA "$CAP/v1.pcap" "$V1_OR_V2"
tap_check "over v1: rc/uc/ud pingpong --chk, ib_send/write/read/atomic_bw, ib_write_lat, XRC send/read, sroce_integrity" \
	v1_traffic
tap_check "tcpdump dropped nothing, wrote all it took" capture_stop "$CAP/v1.pcap"
a1=$(sroce_counter sroce0 tx_packets) b1=$(sroce_counter sroce1 tx_packets)
tap_eq "no UDP datagram at all" "$(frames "$CAP/v1.pcap" udp)" 0
tap_check "one v1 frame per packet each device sent" per_packet
# RC 0-2 SEND, 4 SEND only, 6-8/10 WRITE, 12-16 READ, 17 ACK, 18 atomic
# ACK, 20 FETCH_ADD; UC 36 SEND only; UD 100 SEND only; XRC 160-162
# SEND, 172-175 READ, 177 ACK.
tap_check "tshark: every opcode the traffic used" \
	has_opcodes "$(capture_opcodes "$CAP/v1.pcap")" 0 1 2 4 6 7 8 10 12 13 14 15 16 17 18 20 36 100 \
	160 161 162 172 173 174 175 177
# Without the RPC-over-RDMA heuristic: it takes some of sroce_integrity's
# SEND payloads (application data) for RPC-over-RDMA headers, and finds
# those malformed.
tap_eq "tshark: no malformed frame, no expert error" \
	"$(frames "$CAP/v1.pcap" '_ws.malformed || _ws.expert.severity == 8388608' \
		--disable-heuristic rpcordma)" 0
TAP_VERBOSE=1 tap_check "UD multicast over v1, captured: delivery, detach, errnos, limits (sroce_mcast with the v1 GIDs); tshark decodes its v1 datagrams to QP 0xFFFFFF, no UDP, nothing malformed" \
	mcast_v1
tap_check "a v2 WRITE stream and a v1 RC pingpong on the same devices at once" mixed
tap_check "loopback: v1 RC pingpong between two QPs of sroce0, off the wire" loopback
tap_check "rdma_cm with default_roce_mode IB/RoCE v1: rping -C 10, data checked, v1 frames only" cm_v1
tap_check "nothing malformed, corrupt or unrouted so far" sroce_nothing_malformed
tap_check "hostile v1 frames: 3 bad ICRC, 3 malformed counted, one to another MAC ignored; v1 works on" hostile
tap_check "rmmod with v1 devices" sroce_unload
tap_done
