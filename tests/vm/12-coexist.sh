#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce devices in two namespaces at once, beside rdma_rxe with an rxe
# device in init_net: each namespace gets its own UDP 4791 socket, so
# nothing conflicts. Also: port 4791 taken in a namespace gives a clear
# error instead of a half-made device.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 12

vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500
# The rxe end lives in init_net (the only place rxe 6.12 works).
ip link add rxeA type veth peer name rxeB
ip addr add 10.88.0.1/24 dev rxeA
ip link set rxeA up
ip link set rxeB up

tap_check "modprobe rdma_rxe (binds 4791 in init_net)" modprobe rdma_rxe
tap_check "rdma link add rxe0 on rxeA (init_net)" rdma link add rxe0 type rxe netdev rxeA
tap_check "modprobe sroce beside rdma_rxe" sroce_load
tap_check "sroce0 in nsA" ip netns exec nsA rdma link add sroce0 type sroce netdev vethA
tap_check "sroce1 in nsB" ip netns exec nsB rdma link add sroce1 type sroce netdev vethB
tap_check "rxe0, sroce0 and sroce1 all ACTIVE" bash -c '
	o=$(rdma link show)
	grep -q "link rxe0/1 state ACTIVE" <<<"$o" &&
	grep -q "link sroce0/1 state ACTIVE" <<<"$o" &&
	grep -q "link sroce1/1 state ACTIVE" <<<"$o"'
tap_check "ibv_devices: rxe0 (rxe provider) and sroce0/1 (ours)" bash -c '
	o=$(ibv_devices); grep -q rxe0 <<<"$o" && grep -q sroce0 <<<"$o" && grep -q sroce1 <<<"$o"'
tap_check "our provider does not claim rxe0 (its node GUID is rxe's)" \
	"$SROCE_BIN/sroce_devcheck" --not-ours -d rxe0

# In init_net rxe owns 4791: an sroce device there must fail cleanly.
err=$(rdma link add sroce9 type sroce netdev rxeB 2>&1)
rc=$?
tap_check "sroce on an init_net netdev with rxe loaded fails" test $rc -ne 0
tap_check "  ... naming the port conflict" \
	bash -c "dmesg | grep -q 'sroce: UDP port 4791 is already bound'"
tap_check "  ... leaving no device behind" test ! -e /sys/class/infiniband/sroce9

sroce_unload
rdma link delete rxe0
modprobe -r rdma_rxe
tap_check "rxe and sroce unloaded, no device left" \
	bash -c '[[ -z $(ls /sys/class/infiniband 2>/dev/null) ]]'
ip link del rxeA
tap_done
