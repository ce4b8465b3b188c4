#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe-oF/RDMA across a power cut of the target (tools/vm/run2, sroce on
# both sides). The target runs in guest B, the guest run2 can power-cycle
# (it is the one that connects the link); guest A is the host.
#
#  - B exports a namespace as tests/vm2/nvme-rdma.sh does. A connects with
#    reconnect_delay 1 s and ctrl_loss_tmo 120 s, writes 16 MiB with
#    O_DIRECT and reads it back.
#  - B asks for a power cut (/run/vm/power-cycle): QEMU is killed, no
#    shutdown, no RDMA disconnect; B boots again and exports the same
#    subsystem on a new tmpfs.
#  - A's controller must leave "live" (error recovery) and come back to
#    "live" by itself, per NVMe's own reconnect rules; then 16 MiB more
#    are written and read back, and A disconnects cleanly.
# Both kernels' logs (B's two boots) must be free of warnings: run2 checks.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm2/nvme-rdma.sh
source "$here/nvme-rdma.sh"

CUT_PORT=7302		# A: cut B's power now
DATA_MB=16

# Target (guest B) ------------------------------------------------------

target_boot() {
	local boot=$1
	tap_check "boot $boot: $DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "boot $boot: modprobe nvmet nvmet-rdma" modprobe -a nvmet nvmet-rdma
	mount_configfs
	tap_check "boot $boot: subsystem, namespace and rdma port" target_setup
	tap_check "boot $boot: nvmet-rdma listens on $VM_LOCAL_IP:$TRSVCID" \
		sroce_wait 10 target_listening
}

run_target_boot1() {
	tap_plan 4
	target_boot 1
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$CUT_PORT" 600
	# The totals of this boot (tap_done exits: a subshell), then no
	# shutdown: the host-side runner kills this QEMU and boots it again.
	(tap_done) || exit 1
	echo "# asking for a power cut"
	: >/run/vm/power-cycle
	sleep 600
	exit 1
}

run_target_boot2() {
	tap_plan 5
	target_boot 2
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 600
	tap_check "the host came back: a new I/O controller for $NQN" \
		sh -c "dmesg | grep -q 'nvmet: creating nvm controller .* for subsystem $NQN'"
	target_teardown
	tap_done
}

# Host (guest A) --------------------------------------------------------

ctrl_state() {
	cat "/sys/class/nvme/$CTRL/state" 2>/dev/null
}

state_is() {
	[ "$(ctrl_state)" = "$1" ]
}

state_is_not() {
	[ "$(ctrl_state)" != "$1" ]
}

# io LABEL SEED: write DATA_MB of data keyed by SEED at SEED MiB, read it
# back, compare.
io() {
	local off=$2
	head -c "${DATA_MB}M" /dev/urandom >/tmp/io-src
	dd if=/tmp/io-src of="$BLK" bs=1M seek="$off" oflag=direct conv=fsync \
		>/tmp/io.log 2>&1 || { cat /tmp/io.log; return 1; }
	dd if="$BLK" of=/tmp/io-back bs=1M skip="$off" count="$DATA_MB" iflag=direct \
		>/tmp/io.log 2>&1 || { cat /tmp/io.log; return 1; }
	cmp /tmp/io-src /tmp/io-back
}

run_host_cut() {
	local t0
	tap_plan 9
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "modprobe nvme-rdma" modprobe nvme-rdma
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "the target never got ready"
	timeout 120 nvme connect -t rdma -a "$VM_PEER_IP" -s "$TRSVCID" -n "$NQN" \
		--reconnect-delay=1 --ctrl-loss-tmo=120 >&2
	CTRL=$(basename "$(dirname "$(grep -lx "$NQN" /sys/class/nvme/nvme*/subsysnqn | head -n 1)")")
	BLK=
	for _ in $(seq 100); do
		BLK=$(find /sys/block -name 'nvme*n1' ! -name 'nvme*c*' | head -n 1)
		[ -n "$BLK" ] && [ -b "/dev/${BLK##*/}" ] && break
		BLK=
		sleep 0.1
	done
	BLK=/dev/${BLK##*/}
	tap_check "connected ($CTRL, $BLK), reconnect_delay 1 s, ctrl_loss_tmo 120 s" \
		state_is live
	tap_check "before the cut: write and read back ${DATA_MB} MiB (O_DIRECT)" io before 0
	vm_announce "$CUT_PORT"
	tap_check "the target's power cut: the controller leaves live" \
		sroce_wait 90 state_is_not live
	tap_diag "state after the cut: $(ctrl_state)"
	t0=$SECONDS
	tap_check "it reconnects by itself once the target is back (live again)" \
		sroce_wait 240 state_is live
	tap_diag "live again after $((SECONDS - t0)) s"
	tap_check "after the reconnect: write and read back ${DATA_MB} MiB" io after 32
	tap_check "delete_controller" sh -c "echo 1 > /sys/class/nvme/$CTRL/delete_controller"
	tap_check "$CTRL gone" sroce_wait 20 test ! -e "/sys/class/nvme/$CTRL"
	vm_announce "$DONE_PORT"
	sleep 5
	tap_done
}

if [ "$role" = b ]; then
	if [ -e /run/vm/power-cycled ]; then run_target_boot2; else run_target_boot1; fi
else
	run_host_cut
fi
