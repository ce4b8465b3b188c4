#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iSCSI Extensions for RDMA (iSER) between two guests (tools/vm/run2).
# Guest A is the target: LIO configured with targetcli, a 256 MiB fileio
# LUN (a file on tmpfs) behind an iSCSI portal on 10.77.0.1:3260 with
# iSER enabled (ib_isert). Guest B is the initiator: open-iscsi
# discovers the target over TCP, logs in through the "iser" interface
# (ib_iser), writes 128 MiB of pseudo-random data to the disk with
# O_DIRECT, reads it back, compares checksums and logs out. Guest A then
# checks that its backing file holds the same data. Each side reports its
# own TAP points; dd's throughput is printed as diag lines (VM2_FIO=1
# adds fio's).
#
# The RDMA device of each side: VM2_RDMA_A / VM2_RDMA_B = sroce (default)
# or rxe (rdma_rxe), e.g. for interop:
#
#   tools/vm/run2 --env VM2_RDMA_A=rxe \
#	--a tests/vm2/iser.sh --b tests/vm2/iser.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2}
IQN=iqn.2026-11.org.sroce:iser-test
INITIATOR=iqn.2026-11.org.sroce:vm-b
PORT=3260
READY_PORT=7500		# A: the target listens
LOGIN_PORT=7501		# B: logged in
SEEN_PORT=7502		# A: has seen the session
DONE_PORT=7503		# B: the initiator has logged out
LUN_MB=256
DATA_MB=128
BACKING=/run/iser/lun0.img

gen_data() {
	head -c "${DATA_MB}M" /dev/zero |
		openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
			-iv 0 2>/dev/null
}

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

mount_configfs() {
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
}

dd_mbs() {
	sed -nE 's/.*copied, ([0-9.]+) s, ([0-9.]+ [kMG]?B\/s).*/\2 (\1 s)/p' "$1" | tail -n 1
}

# Target ---------------------------------------------------------------

# targetcli talks to rtslib, which wants the system D-Bus; the guest has
# no init that starts one.
start_dbus() {
	[ -S /run/dbus/system_bus_socket ] && return 0
	mkdir -p /run/dbus && dbus-daemon --system --fork
}

# The whole configuration in one targetcli run (each run costs seconds
# of Python start-up under TCG): commands on stdin, one per line.
target_setup() {
	mkdir -p /run/iser && mount -t tmpfs -o size=$((LUN_MB + 16))m none /run/iser &&
	truncate -s "${LUN_MB}M" "$BACKING" &&
	modprobe -a target_core_mod iscsi_target_mod target_core_file ib_isert &&
	mount_configfs && start_dbus || return 1
	targetcli >/tmp/targetcli.out 2>&1 <<-EOF
	set global auto_save_on_exit=false
	set global auto_add_default_portal=false
	/backstores/fileio create name=lun0 file_or_dev=$BACKING size=${LUN_MB}M write_back=false
	/iscsi create $IQN
	/iscsi/$IQN/tpg1/luns create /backstores/fileio/lun0
	/iscsi/$IQN/tpg1/acls create $INITIATOR
	/iscsi/$IQN/tpg1 set attribute authentication=0
	/iscsi/$IQN/tpg1/portals create $VM_LOCAL_IP $PORT
	/iscsi/$IQN/tpg1/portals/$VM_LOCAL_IP:$PORT enable_iser true
	ls /iscsi
	exit
	EOF
	cat /tmp/targetcli.out
	grep -q "iSER enable now: True" /tmp/targetcli.out
}

# The portal's iser attribute reads 1 once ib_isert listens on it.
target_iser_on() {
	[ "$(cat "/sys/kernel/config/target/iscsi/$IQN/tpgt_1/np/$VM_LOCAL_IP:$PORT/iser")" = 1 ]
}

# The initiator's ACL reports its session (LIO calls an iSER connection's
# transport "SCTP" there: not a test), and the connection is an RC QP on
# $DEV in RTS (ib_isert's; rdma_cm created it, and names itself its owner).
target_session_up() {
	grep -q "TARG_SESS_STATE_LOGGED_IN" \
		"/sys/kernel/config/target/iscsi/$IQN/tpgt_1/acls/$INITIATOR/info" &&
		rdma res show qp link "$DEV/1" type RC | grep -q "state RTS"
}

target_session_gone() {
	grep -q "No active iSCSI Session" \
		"/sys/kernel/config/target/iscsi/$IQN/tpgt_1/acls/$INITIATOR/info" &&
		! rdma res show qp link "$DEV/1" type RC | grep -q .
}

# rtslib loads every backstore and fabric module it knows (a fabric's
# configfs group pins its module): remove the fabric groups, then unload
# whatever uses target_core_mod, then target_core_mod.
target_teardown() {
	local d users
	targetcli clearconfig confirm=True >/tmp/targetcli-clear.out 2>&1 ||
		{ cat /tmp/targetcli-clear.out; return 1; }
	for d in /sys/kernel/config/target/*/; do
		[ "$(basename "$d")" = core ] || rmdir "$d" || return 1
	done
	modprobe -r ib_isert || return 1
	users=$(lsmod | awk '$1 == "target_core_mod" {print $4}')
	# shellcheck disable=SC2086 # a list of module names
	{ [ -z "$users" ] || modprobe -r ${users//,/ }; } &&
		sroce_wait 10 modprobe -r target_core_mod ||
		{ lsmod | grep -E '^(target|iscsi|ib_)'; return 1; }
}

run_target() {
	local want got
	tap_plan 7
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "targetcli: ${LUN_MB} MiB fileio LUN, iSCSI target, portal $VM_LOCAL_IP:$PORT" \
		target_setup
	tap_check "the portal has iSER enabled (ib_isert listens)" target_iser_on
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$LOGIN_PORT" 600
	tap_check "$INITIATOR logged in, over an RC QP on $DEV" \
		sroce_wait 20 target_session_up ||
		{ cat "/sys/kernel/config/target/iscsi/$IQN/tpgt_1/acls/$INITIATOR/info"
		  rdma res show qp link "$DEV/1"; } | sed 's/^/# /'
	vm_announce "$SEEN_PORT"
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 600
	tap_check "the session and its QP are gone after the logout" \
		sroce_wait 20 target_session_gone
	want=$(gen_data | sha256sum | cut -d' ' -f1)
	got=$(head -c "${DATA_MB}M" "$BACKING" | sha256sum | cut -d' ' -f1)
	tap_eq "backing file holds the initiator's ${DATA_MB} MiB" "$got" "$want"
	tap_check "targetcli clearconfig, target modules unloaded" target_teardown
	tap_done
}

# Initiator ------------------------------------------------------------

initiator_setup() {
	modprobe -a ib_iser sd_mod || return 1
	mkdir -p /etc/iscsi /run/lock/iscsi &&
	echo "InitiatorName=$INITIATOR" >/etc/iscsi/initiatorname.iscsi &&
	iscsid || return 1
	# The "iser" interface record (iscsiadm creates the default ones).
	iscsiadm -m iface -I iser -o show >/dev/null 2>&1 ||
		iscsiadm -m iface -I iser -o new >/dev/null || return 1
	iscsiadm -m iface -I iser -o update -n iface.transport_name -v iser >/dev/null
}

initiator_discover() {
	timeout 60 iscsiadm -m discovery -t sendtargets -p "$VM_PEER_IP:$PORT" -I iser \
		>/tmp/iscsi-discover.out 2>&1
	cat /tmp/iscsi-discover.out
	grep -q "$VM_PEER_IP:$PORT,1 $IQN" /tmp/iscsi-discover.out
}

initiator_login() {
	timeout 120 iscsiadm -m node -T "$IQN" -p "$VM_PEER_IP:$PORT" -I iser --login
}

# The session's transport as iscsiadm reports it, and the SCSI host under
# it (ib_iser's host template is "iscsi_iser").
session_is_iser() {
	iscsiadm -m session -P 1 >/tmp/iscsi-session.out 2>&1 &&
	grep -q "Iface Transport: iser" /tmp/iscsi-session.out &&
		grep -qx iscsi_iser /sys/class/iscsi_session/session*/device/../scsi_host/host*/proc_name
}

# The disk of the session: /dev/sdX.
session_disk() {
	local b
	for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
		[ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

initiator_logout() {
	timeout 60 iscsiadm -m node -T "$IQN" -p "$VM_PEER_IP:$PORT" -I iser --logout
}

no_session() {
	! iscsiadm -m session >/dev/null 2>&1 && ! ls /sys/class/iscsi_session/session* >/dev/null 2>&1
}

fio_figures() {
	local job rw bs
	command -v fio >/dev/null || { tap_diag "fio: not installed"; return; }
	for job in write:1M read:1M randread:4k; do
		rw=${job%:*} bs=${job#*:}
		fio --name="$rw-$bs" --filename="$1" --rw="$rw" --bs="$bs" \
			--direct=1 --ioengine=libaio --iodepth=16 --offset=128M --size=128M \
			--runtime=20 --time_based --group_reporting \
			--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1
		awk -F';' -v rw="$rw" -v bs="$bs" -v dev="$DEV" '{
			if (rw == "write") { bw = $48; iops = $49 } else { bw = $7; iops = $8 }
			printf "fio iser %s %s (%s): %.1f MB/s, %d IOPS\n", rw, bs, dev, bw * 1024 / 1e6, iops
		}' /tmp/fio.out | sed 's/^/# /'
	done
}

run_initiator() {
	local blk size sum_src sum_dev
	tap_plan 11
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "ib_iser, iscsid and the iser interface" initiator_setup
	gen_data >/tmp/iser-data
	sum_src=$(sha256sum </tmp/iser-data | cut -d' ' -f1)
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "the target never got ready"
	tap_check "sendtargets discovery lists $IQN" initiator_discover
	tap_check "login through the iser interface" initiator_login
	tap_check "the session's transport is iser" session_is_iser
	vm_announce "$LOGIN_PORT"
	blk=
	for _ in $(seq 100); do
		blk=$(session_disk) && [ -b "$blk" ] && break
		blk=
		sleep 0.1
	done
	size=$(blockdev --getsize64 "${blk:-/dev/null}" 2>/dev/null)
	tap_eq "disk ${blk:-missing} is ${LUN_MB} MiB" "${size:-0}" $((LUN_MB << 20))

	dd if=/tmp/iser-data of="${blk:-/dev/null}" bs=1M oflag=direct conv=fsync \
		>/tmp/iser-dd-write.log 2>&1
	tap_check "write ${DATA_MB} MiB with O_DIRECT" grep -q "^$((DATA_MB << 20)) bytes" /tmp/iser-dd-write.log
	tap_diag "iser ($DEV -> ${VM2_RDMA_A:-sroce}) dd write 1 MiB O_DIRECT: $(dd_mbs /tmp/iser-dd-write.log)"
	dd if="${blk:-/dev/null}" of=/tmp/iser-back bs=1M count="$DATA_MB" iflag=direct \
		>/tmp/iser-dd-read.log 2>&1
	tap_diag "iser ($DEV <- ${VM2_RDMA_A:-sroce}) dd read 1 MiB O_DIRECT: $(dd_mbs /tmp/iser-dd-read.log)"
	sum_dev=$(sha256sum </tmp/iser-back | cut -d' ' -f1)
	tap_eq "read back with O_DIRECT: sha256 matches" "$sum_dev" "$sum_src"
	rm -f /tmp/iser-back

	[ "${VM2_FIO:-0}" = 1 ] && [ -n "$blk" ] && fio_figures "$blk"
	# The target looks at the session before it goes.
	vm_wait_tcp "$VM_PEER" "$SEEN_PORT" 120
	tap_check "logout" initiator_logout
	tap_check "no session left" sroce_wait 20 no_session
	tap_check "ib_iser unloads" sh -c "iscsiadm -k 0 >/dev/null 2>&1; modprobe -r ib_iser"
	vm_announce "$DONE_PORT"
	sleep 5
	tap_done
}

if [ "$role" = a ]; then
	run_target
else
	run_initiator
fi
