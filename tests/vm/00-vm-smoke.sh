#!/bin/bash
# tests/vm/00-vm-smoke.sh: proves the VM test bed works (root, expected kernel,
# writable repo and root overlay, namespaces + veth, the in-tree RDMA stack).
# Run: tools/vm/run -- tests/vm/run-all 00-vm-smoke.sh

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$REPO/tools/vm/netlib.sh"

expected_kver=${VM_EXPECT_KVER:-6.12.113+deb12-amd64}
probe=$REPO/.vm-smoke.$$
rxe_probe=rxe_smoke

cleanup() {
	rdma link delete "$rxe_probe" 2>/dev/null
	vm_netns_del smoke_a smoke_b smoke_c
	rm -f "$probe"
}
trap cleanup EXIT

debug=0
[[ $(uname -r) == *-sroce-debug ]] && debug=1
tap_plan $((13 + debug))

# The debug kernel turns lockdep off for good at the first report of any
# kind (even one from early boot): a run without it checks no locking.
if ((debug)); then
	tap_check "debug kernel: lockdep is on (debug_locks 1)" \
		grep -Eq '^ *debug_locks: +1$' /proc/lockdep_stats
fi

tap_eq "runs as root" "$(id -u)" 0
tap_eq "kernel is $expected_kver" "$(uname -r)" "$expected_kver"
tap_eq "cwd is the repo" "$(pwd -P)" "$(cd "$REPO" && pwd -P)"
tap_check "repo is writable at the same path" bash -c "echo hello >'$probe' && [ \"\$(cat '$probe')\" = hello ] && rm '$probe' && [ ! -e '$probe' ]"
tap_check "root overlay is writable (/lib/modules/\$(uname -r)/updates)" \
	bash -c 'd=/lib/modules/$(uname -r)/updates; mkdir -p "$d" && touch "$d/.vm-smoke" && rm "$d/.vm-smoke"'

tap_check "netns pair over veth" vm_netns_pair smoke_a smoke_b 10.77.0.1 10.77.0.2 1500
tap_check "IPv4 ping over veth" ip netns exec smoke_a ping -c 2 -W 2 10.77.0.2
tap_check "IPv6 ping over veth" ip netns exec smoke_a ping -6 -c 2 -W 2 fd77::2

tap_check "modprobe ib_core" modprobe ib_core
tap_check "modprobe rdma_rxe" modprobe rdma_rxe
# rxe on a veth whose peer is in a namespace (the interop topology).
if tap_check "veth init_net <-> netns" vm_veth_initns_and_ns vsmoke0 smoke_c eth0 10.77.1.1 10.77.1.2; then
	tap_check "rdma link add rxe on veth" bash -c \
		"rdma link add $rxe_probe type rxe netdev vsmoke0 && rdma link show | grep -q $rxe_probe && ibv_devices | grep -q $rxe_probe && rdma link delete $rxe_probe"
else
	tap_skip "rdma link add rxe on veth" "no veth"
fi
# ib_core may have loaded modules of its own for the device (7.x: ib_uverbs
# and ib_uverbs_support, which rdma_rxe no longer depends on): they go too.
# After scripts that used rdma_cm (a named run of the debug kernel put
# this one after 58), its holders hold one another: rdma_cm holds ib_cm,
# which sorts first. Each round takes off what nothing uses any more.
tap_check "rmmod rdma_rxe and ib_core" bash -c '
	modprobe -r rdma_rxe || exit
	for round in 1 2 3 4; do
		held=0
		for m in $(ls /sys/module/ib_core/holders 2>/dev/null); do
			[ ! -d /sys/module/$m ] || modprobe -r $m 2>/dev/null || held=1
		done
		[ $held = 1 ] || break
	done
	[ ! -d /sys/module/ib_core ] || modprobe -r ib_core || exit
	[ ! -d /sys/module/ib_core ]'

tap_done
