#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe over Fabrics (RDMA) between two guests (tools/vm/run2). Guest A is
# the target: nvmet-rdma on 10.77.0.1:4420 exporting a 256 MiB file on
# tmpfs through configfs. Guest B is the host: nvme-rdma connects (through
# nvme-cli when it is installed, else by writing the connect string to
# /dev/nvme-fabrics), writes 128 MiB of pseudo-random data with O_DIRECT,
# reads it back, compares checksums and disconnects. Guest A then checks
# that its backing file holds the same data. Each side reports its own
# TAP points; dd's throughput is printed as diag lines.
#
# The RDMA device of each side: VM2_RDMA_A / VM2_RDMA_B = sroce (default)
# or rxe (rdma_rxe), e.g. for interop:
#
#   tools/vm/run2 --env VM2_RDMA_A=rxe \
#	--a tests/vm2/nvme-rdma.sh --b tests/vm2/nvme-rdma.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2}
NQN=nqn.2026-11.org.sroce:nvme-rdma-test
TRSVCID=4420
READY_PORT=7300		# A: the target listens
DONE_PORT=7301		# B: the host has disconnected
NS_MB=256
DATA_MB=128
CFG=/sys/kernel/config/nvmet

# Deterministic pseudo-random data, the same in both guests: AES-CTR of
# zeros under a fixed key.
gen_data() {
	head -c "${DATA_MB}M" /dev/zero |
		openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
			-iv 0 2>/dev/null
}

if [ "$role" = a ]; then KIND=${VM2_RDMA_A:-sroce}; else KIND=${VM2_RDMA_B:-sroce}; fi
if [ "$KIND" = rxe ]; then DEV=rxe0; else DEV=sroce0; fi

# The RDMA device $DEV on $VM_IFNAME, with its RoCE v2 IPv4 GID.
add_rdma_dev() {
	if [ "$KIND" = rxe ]; then
		modprobe rdma_rxe && rdma link add "$DEV" type rxe netdev "$VM_IFNAME"
	else
		sroce_load && rdma link add "$DEV" type sroce netdev "$VM_IFNAME"
	fi || return 1
	sroce_wait_gid "$DEV" "$(sroce_ipv4_gid "$VM_LOCAL_IP")" >/dev/null
}

mount_configfs() {
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
}

# Target ---------------------------------------------------------------

target_setup() {
	local sub=$CFG/subsystems/$NQN port=$CFG/ports/1
	mkdir -p /run/nvmet && mount -t tmpfs -o size=$((NS_MB + 16))m none /run/nvmet &&
	truncate -s "${NS_MB}M" /run/nvmet/ns1.img &&
	mkdir "$sub" &&
	echo 1 >"$sub/attr_allow_any_host" &&
	mkdir "$sub/namespaces/1" &&
	echo /run/nvmet/ns1.img >"$sub/namespaces/1/device_path" &&
	echo 1 >"$sub/namespaces/1/enable" &&
	mkdir "$port" &&
	echo rdma >"$port/addr_trtype" &&
	echo ipv4 >"$port/addr_adrfam" &&
	echo "$VM_LOCAL_IP" >"$port/addr_traddr" &&
	echo "$TRSVCID" >"$port/addr_trsvcid" &&
	ln -s "$sub" "$port/subsystems/$NQN"
}

# nvmet-rdma listens through rdma_cm: its "enabling port" line is the sign.
target_listening() {
	dmesg | grep -q "nvmet_rdma: enabling port 1 ($VM_LOCAL_IP:$TRSVCID)"
}

target_teardown() {
	local sub=$CFG/subsystems/$NQN port=$CFG/ports/1
	rm -f "$port/subsystems/$NQN" &&
	rmdir "$port" &&
	echo 0 >"$sub/namespaces/1/enable" &&
	rmdir "$sub/namespaces/1" &&
	rmdir "$sub" &&
	modprobe -r nvmet_rdma nvmet
}

run_target() {
	local want got
	tap_plan 7
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "modprobe nvmet nvmet-rdma" modprobe -a nvmet nvmet-rdma
	mount_configfs
	tap_check "subsystem, ${NS_MB} MiB file namespace and rdma port in configfs" target_setup
	tap_check "nvmet-rdma listens on $VM_LOCAL_IP:$TRSVCID" sroce_wait 10 target_listening
	vm_announce "$READY_PORT"
	# The host connects, writes, reads and disconnects.
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 600
	want=$(gen_data | sha256sum | cut -d' ' -f1)
	got=$(head -c "${DATA_MB}M" /run/nvmet/ns1.img | sha256sum | cut -d' ' -f1)
	tap_eq "backing file holds the host's ${DATA_MB} MiB" "$got" "$want"
	tap_check "the target created an I/O controller for $NQN" \
		sh -c "dmesg | grep -q 'nvmet: creating nvm controller .* for subsystem $NQN'"
	tap_check "configfs torn down, nvmet modules unloaded" target_teardown
	tap_done
}

# Host -----------------------------------------------------------------

# connect: the controller's name (nvmeN) on stdout.
host_connect() {
	local out opts
	opts="transport=rdma,traddr=$VM_PEER_IP,trsvcid=$TRSVCID,nqn=$NQN"
	if command -v nvme >/dev/null; then
		timeout 120 nvme connect -t rdma -a "$VM_PEER_IP" -s "$TRSVCID" \
			-n "$NQN" >&2 || return 1
		out=$(basename "$(dirname "$(grep -lx "$NQN" /sys/class/nvme/nvme*/subsysnqn | head -n 1)")")
		echo "$out"
	else
		exec 3<>/dev/nvme-fabrics || return 1
		echo "$opts" >&3 || { exec 3>&-; return 1; }
		read -r out <&3
		exec 3>&-
		# "instance=N,cntlid=M"
		out=${out#instance=}
		echo "nvme${out%%,*}"
	fi
}

host_discover() {
	timeout 120 nvme discover -t rdma -a "$VM_PEER_IP" -s "$TRSVCID" \
		>/tmp/nvme-discover.out 2>&1 &&
		grep -q "subnqn: *$NQN" /tmp/nvme-discover.out &&
		grep -q "trtype: *rdma" /tmp/nvme-discover.out ||
		{ cat /tmp/nvme-discover.out; return 1; }
}

# dd_mbs LOG: the MB/s of dd's summary line.
dd_mbs() {
	sed -nE 's/.*copied, ([0-9.]+) s, ([0-9.]+ [kMG]?B\/s).*/\2 (\1 s)/p' "$1" | tail -n 1
}

# VM2_FIO=1: the issue's fio figures as diag lines (not test points):
# 1 MiB sequential write and read, 4 KiB random read, libaio, O_DIRECT,
# on the half of the namespace the checksummed data does not use.
fio_figures() {
	local job rw bs
	command -v fio >/dev/null || { tap_diag "fio: not installed"; return; }
	for job in write:1M read:1M randread:4k; do
		rw=${job%:*} bs=${job#*:}
		fio --name="$rw-$bs" --filename="$1" --rw="$rw" --bs="$bs" \
			--direct=1 --ioengine=libaio --iodepth=16 --offset=128M --size=128M \
			--runtime=20 --time_based --group_reporting \
			--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1
		# terse v3: read bw (KiB/s) 7, read IOPS 8; write bw 48, IOPS 49
		awk -F';' -v rw="$rw" -v bs="$bs" -v dev="$DEV" '{
			if (rw == "write") { bw = $48; iops = $49 } else { bw = $7; iops = $8 }
			printf "fio %s %s (%s): %.1f MB/s, %d IOPS\n", rw, bs, dev, bw * 1024 / 1e6, iops
		}' /tmp/fio.out | sed 's/^/# /'
	done
}

run_host() {
	local ctrl blk size sum_src sum_dev
	tap_plan 10
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "modprobe nvme-rdma" modprobe nvme-rdma
	gen_data >/tmp/nvme-data
	sum_src=$(sha256sum </tmp/nvme-data | cut -d' ' -f1)
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "the target never got ready"
	if command -v nvme >/dev/null; then
		tap_check "nvme discover lists $NQN over rdma" host_discover
	else
		tap_skip "nvme discover" "nvme-cli is not installed"
	fi
	ctrl=$(host_connect)
	tap_check "connect over rdma: controller ${ctrl:-none}" test -n "$ctrl" -a -e "/sys/class/nvme/$ctrl"
	# The namespace's block device (the multipath head, nvmeXnY): the
	# only NVMe disk in this guest.
	blk=
	for _ in $(seq 100); do
		blk=$(find /sys/block -name 'nvme*n1' ! -name 'nvme*c*' | head -n 1)
		[ -n "$blk" ] && [ -b "/dev/${blk##*/}" ] && break
		blk=
		sleep 0.1
	done
	blk=${blk:+/dev/${blk##*/}}
	tap_eq "transport of $ctrl" "$(cat "/sys/class/nvme/$ctrl/transport" 2>/dev/null)" rdma
	size=$(blockdev --getsize64 "${blk:-/dev/null}" 2>/dev/null)
	tap_eq "namespace ${blk:-missing} is ${NS_MB} MiB" "${size:-0}" $((NS_MB << 20))

	dd if=/tmp/nvme-data of="${blk:-/dev/null}" bs=1M oflag=direct conv=fsync \
		>/tmp/nvme-dd-write.log 2>&1
	tap_check "write ${DATA_MB} MiB with O_DIRECT" grep -q "^$((DATA_MB << 20)) bytes" /tmp/nvme-dd-write.log
	tap_diag "nvme-rdma ($DEV -> ${VM2_RDMA_A:-sroce}) dd write 1 MiB O_DIRECT: $(dd_mbs /tmp/nvme-dd-write.log)"
	dd if="${blk:-/dev/null}" of=/tmp/nvme-back bs=1M count="$DATA_MB" iflag=direct \
		>/tmp/nvme-dd-read.log 2>&1
	tap_diag "nvme-rdma ($DEV <- ${VM2_RDMA_A:-sroce}) dd read 1 MiB O_DIRECT: $(dd_mbs /tmp/nvme-dd-read.log)"
	sum_dev=$(sha256sum </tmp/nvme-back | cut -d' ' -f1)
	tap_eq "read back with O_DIRECT: sha256 matches" "$sum_dev" "$sum_src"
	rm -f /tmp/nvme-back

	[ "${VM2_FIO:-0}" = 1 ] && fio_figures "$blk"
	tap_check "delete_controller" sh -c "echo 1 > /sys/class/nvme/$ctrl/delete_controller"
	tap_check "$ctrl gone" sroce_wait 20 test ! -e "/sys/class/nvme/$ctrl"
	vm_announce "$DONE_PORT"
	# Let the target see the announcement before this guest goes away.
	sleep 5
	tap_done
}

# Sourced (tests/vm2/nvme-reboot.sh): the functions only.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
if [ "$role" = a ]; then
	run_target
else
	run_host
fi
