#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The port follows its netdev: carrier (state + async events), MTU
# (active_mtu), addresses (RoCE v2 GIDs) — seen through sysfs, rdma and
# the provider (ibv_devinfo, ibv_asyncwatch, sroce_devcheck).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 26

vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500
A="ip netns exec nsA"
sroce_load
$A rdma link add sroce0 type sroce netdev vethA

# --- through libibverbs and our provider --------------------------------
tap_check "ibv_devices lists sroce0" bash -c 'ibv_devices | grep -q sroce0'
info=$(ibv_devinfo -v -d sroce0 2>&1)
tap_check "ibv_devinfo -v -d sroce0 works" test $? -eq 0
tap_check "  transport InfiniBand" contains "$info" 'transport:\s+InfiniBand'
tap_check "  link_layer Ethernet" contains "$info" 'link_layer:\s+Ethernet'
tap_check "  state PORT_ACTIVE" contains "$info" 'state:\s+PORT_ACTIVE'
tap_check "  active_mtu 1024 at netdev MTU 1500" \
	contains "$info" 'active_mtu:\s+1024 \(3\)'
tap_check "  max_mtu 4096" contains "$info" 'max_mtu:\s+4096 \(5\)'
tap_check "  max_qp reported" contains "$info" 'max_qp:\s+16384'
tap_expect_fail "  no provider warning" contains "$info" '[Ww]arning|couldn.t'

# --- GIDs ------------------------------------------------------------------
v4gid=$(sroce_ipv4_gid 10.77.0.1)
v6gid=$(python3 -c 'import ipaddress; print(ipaddress.ip_address("fd77::1").exploded)')
tap_check "RoCE v2 GID for 10.77.0.1 ($v4gid)" sroce_wait 10 sroce_gid_index sroce0 "$v4gid"
tap_check "RoCE v2 GID for fd77::1" sroce_wait 10 sroce_gid_index sroce0 "$v6gid"
$A ip addr add 10.99.0.1/24 dev vethA
tap_check "a new address gets a GID" sroce_wait 10 sroce_gid_index sroce0 "$(sroce_ipv4_gid 10.99.0.1)"
$A ip addr del 10.99.0.1/24 dev vethA
tap_check "a removed address loses its GID" \
	sroce_wait 10 bash -c "! sroce_gid_index sroce0 $(sroce_ipv4_gid 10.99.0.1)"

tap_check "sroce_devcheck (provider: context, query, GIDs, 1000 PDs)" \
	"$SROCE_BIN/sroce_devcheck" -d sroce0 --mtu 1500 -4 10.77.0.1 -6 fd77::1 --expect-state active

# --- carrier -----------------------------------------------------------------
events=$(mktemp)
# Line-buffered: its first line ("sroce0: async event FD N") says the
# device is open, and only then will it see the carrier events.
stdbuf -oL ibv_asyncwatch -d sroce0 >"$events" 2>&1 &
watch=$!
sroce_wait 30 grep -q 'async event FD' "$events" ||
	tap_diag "ibv_asyncwatch did not report its open device in 30 s"
before=$(sroce_counter sroce0 port_events)
$A ip link set vethA down
tap_check "carrier down: PORT_DOWN (sysfs)" sroce_wait 10 bash -c '[[ $(sroce_port_state sroce0) == DOWN ]]'
tap_check "  ibv_devinfo shows PORT_DOWN" bash -c 'ibv_devinfo -d sroce0 | grep -Eq "state:\s+PORT_DOWN"'
tap_check "  rdma link shows DOWN" bash -c 'rdma link show sroce0/1 | grep -q "state DOWN"'
tap_check "  IBV_EVENT_PORT_ERR delivered" sroce_wait 10 grep -q 'IBV_EVENT_PORT_ERR' "$events"
$A ip link set vethA up
tap_check "carrier up: PORT_ACTIVE again" sroce_wait 10 bash -c '[[ $(sroce_port_state sroce0) == ACTIVE ]]'
tap_check "  IBV_EVENT_PORT_ACTIVE delivered" sroce_wait 10 grep -q 'IBV_EVENT_PORT_ACTIVE' "$events"
after=$(sroce_counter sroce0 port_events)
tap_eq "  port_events counter rose by 2" "$((after - before))" 2
kill "$watch" 2>/dev/null
wait "$watch" 2>/dev/null
rm -f "$events"

# --- MTU ---------------------------------------------------------------------
$A ip link set vethA mtu 9000
tap_check "MTU 9000: active_mtu 4096" \
	sroce_wait 5 bash -c 'ibv_devinfo -d sroce0 | grep -Eq "active_mtu:\s+4096 \(5\)"'
tap_check "sroce_devcheck at MTU 9000" \
	"$SROCE_BIN/sroce_devcheck" -d sroce0 --mtu 9000 -4 10.77.0.1 --expect-state active
$A ip link set vethA mtu 1500
tap_check "MTU back to 1500: active_mtu 1024" \
	sroce_wait 5 bash -c 'ibv_devinfo -d sroce0 | grep -Eq "active_mtu:\s+1024 \(3\)"'

# --- counters -----------------------------------------------------------------
rx0=$(sroce_counter sroce0 rx_packets)
ip netns exec nsB bash -c 'for i in 1 2 3; do echo garbage >/dev/udp/10.77.0.1/4791; done'
tap_check "datagrams to 4791 counted in rx_packets" \
	sroce_wait 5 bash -c "(( \$(sroce_counter sroce0 rx_packets) - $rx0 == 3 ))"
# "garbage\n" is 8 bytes: too short for a BTH and an ICRC.
tap_check "rdma statistic counts them as malformed" \
	bash -c 'rdma statistic show link sroce0/1 | grep -Eq "rx_drop_malformed 3( |$)"'

sroce_unload
tap_done
