#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Device life cycle: modprobe, "rdma link add/delete", what rdma and
# ibverbs show, one device per netdev, non-Ethernet netdevs refused,
# netdev removal and rmmod with devices present.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 24

vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500
A="ip netns exec nsA"
B="ip netns exec nsB"

tap_check "modprobe sroce" sroce_load
tap_check "ib_core and ib_uverbs loaded as dependencies" \
	bash -c 'lsmod | grep -q "^ib_core " && lsmod | grep -q "^ib_uverbs "'

tap_check "rdma link add sroce0 on vethA (in nsA)" \
	$A rdma link add sroce0 type sroce netdev vethA
tap_check "rdma link add sroce1 on vethB (in nsB)" \
	$B rdma link add sroce1 type sroce netdev vethB

# rdma names a port's netdev only to callers in the netdev's namespace.
tap_check "rdma link show (nsA): sroce0 ACTIVE on vethA" \
	contains "$($A rdma link show 2>&1)" 'link sroce0/1 state ACTIVE physical_state LINK_UP netdev vethA'
tap_check "rdma link show (nsB): sroce1 ACTIVE on vethB" \
	contains "$($B rdma link show 2>&1)" 'link sroce1/1 state ACTIVE physical_state LINK_UP netdev vethB'
tap_check "rdma dev show lists sroce0 and sroce1" \
	bash -c 'o=$(rdma dev show); grep -q "sroce0:" <<<"$o" && grep -q "sroce1:" <<<"$o"'
tap_eq "sysfs sroce_abi_version" \
	"$(cat /sys/class/infiniband/sroce0/sroce_abi_version)" 1
tap_eq "sysfs netdev attribute" \
	"$(cat /sys/class/infiniband/sroce0/netdev)" vethA

tap_check "UDP 4791 bound in nsA (IPv4 and IPv6)" \
	bash -c "$A ss -Hulnp | grep -q '0.0.0.0:4791' && $A ss -Hulnp | grep -q '\[::\]:4791'"
tap_check "UDP 4791 not bound in init_net by sroce" \
	bash -c "! ss -Hulnp | grep -q ':4791'"

# One device per netdev.
err=$($A rdma link add sroceX type sroce netdev vethA 2>&1)
rc=$?
tap_check "second rdma link add on vethA fails" test $rc -ne 0
tap_check "  ... with EEXIST (File exists)" contains "$err" 'File exists'
tap_check "  ... and a clear kernel message" \
	bash -c "dmesg | grep -q 'sroce: netdev vethA already has an sroce device'"
tap_check "  ... and no sroceX device" test ! -e /sys/class/infiniband/sroceX

# A netdev without an Ethernet header.
err=$($A rdma link add sroceL type sroce netdev lo 2>&1)
rc=$?
tap_check "rdma link add on lo (no Ethernet header) fails" test $rc -ne 0
tap_check "  ... with a clear kernel message" \
	bash -c "dmesg | grep -q 'sroce: netdev lo has no Ethernet header'"

# rdma link delete.
tap_check "rdma link delete sroce1" rdma link delete sroce1
tap_check "sroce1 is gone" test ! -e /sys/class/infiniband/sroce1
tap_check "UDP 4791 released in nsB with its last device" \
	bash -c "! $B ss -Hulnp | grep -q ':4791'"

# Removing the netdev removes the device.
$A ip link del vethA
tap_check "ip link del vethA removes sroce0" \
	sroce_wait 10 test ! -e /sys/class/infiniband/sroce0

# rmmod with devices present.
vm_netns_pair nsC nsD 10.78.0.1 10.78.0.2 1500
ip netns exec nsC rdma link add sroce2 type sroce netdev vethA
ip netns exec nsD rdma link add sroce3 type sroce netdev vethB
tap_eq "two devices exist before rmmod" "$(sroce_devices | wc -l)" 2
tap_check "rmmod sroce with two devices" rmmod sroce
tap_eq "no sroce device after rmmod" "$(sroce_devices | wc -l)" 0

tap_done
