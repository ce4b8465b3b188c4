#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# How tests/kunit/rxe-capture.pcap (the rxe packets of
# tests/kunit/sroce_kunit_icrc.c) was made. Runs in the test VM on
# Debian's kernel:
#
#   make module provider stage
#   tools/vm/run -- tests/kunit/capture-rxe.sh [OUT.pcap]
#
# rxe0 on vethA in init_net (10.77.0.1), sroce1 on vethB in nsB
# (10.77.0.2), as tests/vm/33-rc-interop.sh sets them up; tcpdump on vethA
# while ibv_rc_pingpong runs with 13-byte messages (SEND_ONLY, pad 3) and
# 3000-byte ones at path MTU 1024 (SEND_FIRST/MIDDLE/LAST), rxe serving.
# Then "tcpdump -r OUT.pcap -xx" shows the bytes; the arrays in
# sroce_kunit_icrc.c are the IPv4 packets from 10.77.0.1, from the IP
# header on.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"
out=${1:-$REPO/build/rxe-capture.pcap}

sroce_reset
trap sroce_reset EXIT
vm_veth_initns_and_ns vethA nsB vethB 10.77.0.1 10.77.0.2 1500 &&
modprobe rdma_rxe &&
rdma link add rxe0 type rxe netdev vethA &&
sroce_load &&
ip netns exec nsB rdma link add sroce1 type sroce netdev vethB &&
GID_RXE=$(sroce_wait_gid rxe0 "$(sroce_ipv4_gid 10.77.0.1)") &&
GID_SROCE=$(sroce_wait_gid sroce1 "$(sroce_ipv4_gid 10.77.0.2)") ||
	{ echo "set-up failed" >&2; exit 1; }

tcpdump -i vethA -U -w "$out" udp port 4791 &
tpid=$!
sleep 2
rc=0
sroce_pair - nsB 18515 \
	ibv_rc_pingpong -d rxe0 -g "$GID_RXE" -s 13 -n 2 -c -- \
	ibv_rc_pingpong -d sroce1 -g "$GID_SROCE" -s 13 -n 2 -c 10.77.0.1 || rc=1
sroce_pair - nsB 18515 \
	ibv_rc_pingpong -d rxe0 -g "$GID_RXE" -s 3000 -m 1024 -n 1 -c -- \
	ibv_rc_pingpong -d sroce1 -g "$GID_SROCE" -s 3000 -m 1024 -n 1 -c 10.77.0.1 || rc=1
sleep 1
kill "$tpid"
wait "$tpid"
tcpdump -r "$out" -nn 2>/dev/null
exit $rc
