#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NFS over RDMA between two guests (tools/vm/run2). Guest A runs nfsd
# with an RDMA listener on port 20049, exporting a tmpfs; guest B mounts
# it with -o rdma,port=20049 as NFS v4.2 and v3, writes files of several
# sizes, reads them back (O_DIRECT, and through a fresh mount), compares
# checksums and checks /proc/self/mountstats shows the rdma transport.
# Guest A then checks its copies of the files. dd figures are diag lines.
#
# The RDMA device of each side: VM2_RDMA_A / VM2_RDMA_B = sroce (default)
# or rxe (rdma_rxe).
#
#   tools/vm/run2 --a tests/vm2/nfs-rdma.sh --b tests/vm2/nfs-rdma.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2}
READY_PORT=7400		# A: nfsd listens
DONE_PORT=7401		# B: unmounted
EXPORT=/export
SIZES="4096 1048576 33554432"	# bytes
VERSIONS="4.2 3"

if [ "$role" = a ]; then KIND=${VM2_RDMA_A:-sroce}; else KIND=${VM2_RDMA_B:-sroce}; fi
if [ "$KIND" = rxe ]; then DEV=rxe0; else DEV=sroce0; fi

add_rdma_dev() {
	if [ "$KIND" = rxe ]; then
		modprobe rdma_rxe && rdma link add "$DEV" type rxe netdev "$VM_IFNAME"
	else
		sroce_load && rdma link add "$DEV" type sroce netdev "$VM_IFNAME"
	fi || return 1
	sroce_wait_gid "$DEV" "$(sroce_ipv4_gid "$VM_LOCAL_IP")" >/dev/null
}

# gen SIZE SEED: SIZE bytes of AES-CTR data, the same in both guests.
gen() {
	head -c "$1" /dev/zero |
		openssl enc -aes-128-ctr -nosalt -K "$(printf '%032x' "$2")" -iv 0 2>/dev/null
}

# name VERS SIZE: the file's name in the export.
name() { echo "f${1//./}-$2"; }

# Server ---------------------------------------------------------------

server_setup() {
	mkdir -p "$EXPORT" /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery &&
	mount -t tmpfs -o size=256m none "$EXPORT" &&
	modprobe -a nfsd rpcrdma &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	{ mountpoint -q /var/lib/nfs/rpc_pipefs ||
		mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs; } &&
	# No 90 s grace period before the first OPEN.
	echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
	echo 10 >/proc/fs/nfsd/nfsv4leasetime &&
	rpcbind -w &&
	echo "$EXPORT *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports &&
	exportfs -ra &&
	rpc.mountd &&
	rpc.nfsd 2 &&
	echo rdma 20049 >/proc/fs/nfsd/portlist
}

run_server() {
	local v s want got bad=0
	tap_plan 4
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "nfsd with an rdma listener on 20049" server_setup
	tap_check "portlist has rdma 20049" grep -qx 'rdma 20049' /proc/fs/nfsd/portlist
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 900
	for v in $VERSIONS; do
		for s in $SIZES; do
			want=$(gen "$s" "$s" | sha256sum | cut -d' ' -f1)
			got=$(sha256sum <"$EXPORT/$(name "$v" "$s")" 2>/dev/null | cut -d' ' -f1)
			[ "$got" = "$want" ] || { echo "$(name "$v" "$s"): $got != $want"; bad=1; }
		done
	done >/tmp/nfs-server-sums
	tap_eq "the export holds the client's files, checksums equal" "$bad" 0 ||
		tap_diag "$(cat /tmp/nfs-server-sums)"
	tap_done
}

# Client ---------------------------------------------------------------

# mount_nfs VERS
mount_nfs() {
	local opts=rdma,port=20049,vers=$1 src=$VM_PEER_IP:/
	[ "$1" = 3 ] && { opts=$opts,nolock; src=$VM_PEER_IP:$EXPORT; }
	mkdir -p /mnt/nfs && timeout 120 mount -t nfs -o "$opts" "$src" /mnt/nfs
}

dd_mbs() {
	sed -nE 's/.*copied, ([0-9.]+) s, ([0-9.]+ [kMG]?B\/s).*/\2 (\1 s)/p' "$1" | tail -n 1
}

# write_files VERS: each size from /tmp/nfs-src-SIZE, O_DIRECT.
write_files() {
	local s f
	for s in $SIZES; do
		f=/mnt/nfs/$(name "$1" "$s")
		if [ "$s" -ge 1048576 ]; then
			dd if="/tmp/nfs-src-$s" of="$f" bs=1M oflag=direct 2>"/tmp/nfs-dd-w-$s" || return 1
		else
			dd if="/tmp/nfs-src-$s" of="$f" bs="$s" oflag=direct 2>"/tmp/nfs-dd-w-$s" || return 1
		fi
	done
}

# check_files VERS: read each back with O_DIRECT and compare.
check_files() {
	local s f
	for s in $SIZES; do
		f=/mnt/nfs/$(name "$1" "$s")
		dd if="$f" of=/tmp/nfs-back bs=1M iflag=direct 2>"/tmp/nfs-dd-r-$s" || return 1
		cmp /tmp/nfs-back "/tmp/nfs-src-$s" || return 1
	done
}

# VM2_FIO=1: the issue's fio figures as diag lines (not test points):
# 1 MiB sequential write and read, 4 KiB random read on a 64 MiB file.
fio_figures() {
	local job rw bs
	command -v fio >/dev/null || { tap_diag "fio: not installed"; return; }
	for job in write:1M read:1M randread:4k; do
		rw=${job%:*} bs=${job#*:}
		fio --name="$rw-$bs" --filename=/mnt/nfs/fio.dat --rw="$rw" --bs="$bs" \
			--direct=1 --ioengine=libaio --iodepth=16 --size=64M \
			--runtime=20 --time_based --group_reporting \
			--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1
		# terse v3: read bw (KiB/s) 7, read IOPS 8; write bw 48, IOPS 49
		awk -F';' -v rw="$rw" -v bs="$bs" -v dev="$DEV" -v v="$1" '{
			if (rw == "write") { bw = $48; iops = $49 } else { bw = $7; iops = $8 }
			printf "fio vers=%s %s %s (%s): %.1f MB/s, %d IOPS\n", v, rw, bs, dev, bw * 1024 / 1e6, iops
		}' /tmp/fio.out | sed 's/^/# /'
	done
	rm -f /mnt/nfs/fio.dat
}

run_client() {
	local v s big
	tap_plan $((2 + 7 * 2))
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "modprobe rpcrdma nfs" modprobe -a rpcrdma nfs nfsv4 nfsv3
	for s in $SIZES; do gen "$s" "$s" >"/tmp/nfs-src-$s"; done
	big=${SIZES##* }
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "the server never got ready"
	for v in $VERSIONS; do
		tap_check "mount vers=$v over rdma" mount_nfs "$v"
		tap_check "vers=$v: mountstats shows xprt rdma" \
			sh -c "grep -A30 ' /mnt/nfs ' /proc/self/mountstats | grep -q 'xprt:.*rdma'"
		tap_check "vers=$v: nfsvers=$v in mountstats" \
			sh -c "grep -A30 ' /mnt/nfs ' /proc/self/mountstats | grep -q 'vers=$v'"
		tap_check "vers=$v: write $SIZES bytes with O_DIRECT" write_files "$v"
		tap_diag "nfs-rdma vers=$v ($DEV) dd write $((big >> 20)) MiB O_DIRECT: $(dd_mbs "/tmp/nfs-dd-w-$big")"
		tap_check "vers=$v: read back with O_DIRECT, contents equal" check_files "$v"
		tap_diag "nfs-rdma vers=$v ($DEV) dd read $((big >> 20)) MiB O_DIRECT: $(dd_mbs "/tmp/nfs-dd-r-$big")"
		[ "${VM2_FIO:-0}" = 1 ] && fio_figures "$v"
		tap_check "vers=$v: unmount" umount /mnt/nfs
		# A fresh mount: nothing comes from this client's page cache.
		if mount_nfs "$v"; then
			tap_check "vers=$v: remounted, sha256 of every file equal" sh -c "
				for s in $SIZES; do
					a=\$(sha256sum < /mnt/nfs/$(name "$v" X | sed 's/X$//')\$s | cut -d' ' -f1)
					b=\$(sha256sum < /tmp/nfs-src-\$s | cut -d' ' -f1)
					[ \"\$a\" = \"\$b\" ] || exit 1
				done"
			umount /mnt/nfs
		else
			not_ok "vers=$v: remounted, sha256 of every file equal" "mount failed"
		fi
	done
	vm_announce "$DONE_PORT"
	sleep 5
	tap_done
}

if [ "$role" = a ]; then
	run_server
else
	run_client
fi
