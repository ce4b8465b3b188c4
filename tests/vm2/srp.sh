#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# SCSI RDMA Protocol (SRP) between two guests (tools/vm/run2). Guest A is
# the target: LIO's ib_srpt configured with targetcli, a 256 MiB fileio
# LUN (a file on tmpfs), and srpt's rdma_cm listener on port 5555 (a RoCE
# port has no IB CM: ib_srpt listens through rdma_cm only). Guest B is the
# initiator: ib_srp logs in through rdma_cm (add_target with
# dest=10.77.0.1:5555), writes 128 MiB of pseudo-random data to the disk
# with O_DIRECT, reads it back, compares checksums and removes the target
# port. Guest A then checks that its backing file holds the same data.
#
# Identities: ib_srpt accepts a login only for the target port id
# (id_ext, ioc_guid) = (its device's node GUID, the same), and maps the
# initiator through an ACL named after the initiator port id, 8 bytes of
# initiator_ext (0) and the interface id of the initiator's GID 0. The
# guests tell each other those (A its node GUID, B its GID 0) over TCP.
#
# The RDMA device of each side: VM2_RDMA_A / VM2_RDMA_B = sroce (default)
# or rxe (rdma_rxe):
#
#   tools/vm/run2 --a tests/vm2/srp.sh --b tests/vm2/srp.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2}
CM_PORT=5555		# srpt's rdma_cm listener
INFO_A_PORT=7600	# A: serves its node GUID
INFO_B_PORT=7601	# B: serves its GID 0
READY_PORT=7602		# A: the target listens
LOGIN_PORT=7603		# B: logged in
SEEN_PORT=7604		# A: has seen the channel
DONE_PORT=7605		# B: the target port is removed
LUN_MB=256
DATA_MB=128
BACKING=/run/srp/lun0.img
SRPT=/sys/kernel/config/target/srpt

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

# GID 0 of $DEV as 32 hex digits.
gid0_hex() {
	tr -d ':\n' <"/sys/class/infiniband/$DEV/ports/1/gids/0"
}

# serve PORT TEXT: answer every TCP connection on PORT with TEXT.
serve() {
	echo "$2" >"/tmp/srp-serve-$1"
	busybox nc -ll -p "$1" -e /bin/cat "/tmp/srp-serve-$1" </dev/null >/dev/null 2>&1 &
	vm_wait_listen "$1" 10
}

# fetch HOST PORT TIMEOUT: what the peer serves on PORT.
fetch() {
	local out end=$((SECONDS + $3))
	while [ "$SECONDS" -lt "$end" ]; do
		out=$(timeout 5 busybox nc "$1" "$2" </dev/null 2>/dev/null)
		[ -n "$out" ] && { echo "$out"; return 0; }
		sleep 0.5
	done
	return 1
}

# Target ---------------------------------------------------------------

start_dbus() {
	[ -S /run/dbus/system_bus_socket ] && return 0
	mkdir -p /run/dbus && dbus-daemon --system --fork
}

target_modules() {
	modprobe -a target_core_mod target_core_file ib_srpt && mount_configfs && start_dbus
}

# target_setup ACL: ib_srpt names its target port after GID 0 of $DEV
# (targetcli: ib.<32 hex digits>); one targetcli run, commands on stdin.
target_setup() {
	local wwn
	wwn=ib.$(gid0_hex)
	mkdir -p /run/srp && mount -t tmpfs -o size=$((LUN_MB + 16))m none /run/srp &&
	truncate -s "${LUN_MB}M" "$BACKING" || return 1
	targetcli >/tmp/targetcli.out 2>&1 <<-EOF
	set global auto_save_on_exit=false
	/backstores/fileio create name=lun0 file_or_dev=$BACKING size=${LUN_MB}M write_back=false
	/srpt create $wwn
	/srpt/$wwn/luns create /backstores/fileio/lun0
	/srpt/$wwn/acls create $1
	ls /srpt
	exit
	EOF
	cat /tmp/targetcli.out
	grep -q "Created Node ACL for $1" /tmp/targetcli.out &&
		grep -q "Created mapped LUN 0" /tmp/targetcli.out &&
		echo "$CM_PORT" >"$SRPT/discovery_auth/rdma_cm_port" &&
		[ "$(cat "$SRPT/discovery_auth/rdma_cm_port")" = "$CM_PORT" ]
}

# An SRP channel is an RC QP on $DEV in RTS.
target_channel_up() {
	rdma res show qp link "$DEV/1" type RC | grep -q "state RTS"
}

target_channel_gone() {
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
	modprobe -r ib_srpt || return 1
	users=$(lsmod | awk '$1 == "target_core_mod" {print $4}')
	# shellcheck disable=SC2086 # a list of module names
	{ [ -z "$users" ] || modprobe -r ${users//,/ }; } &&
		sroce_wait 10 modprobe -r target_core_mod ||
		{ lsmod | grep -E '^(target|iscsi|ib_)'; return 1; }
}

run_target() {
	local want got peer_gid acl
	tap_plan 8
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "modprobe target_core_mod target_core_file ib_srpt" target_modules
	serve "$INFO_A_PORT" "$(cat "/sys/class/infiniband/$DEV/node_guid")"
	peer_gid=$(fetch "$VM_PEER" "$INFO_B_PORT" 600) || tap_bail "the initiator never said its GID"
	# initiator port id: initiator_ext (0) and the GID's interface id
	acl=ib.0000000000000000${peer_gid:16:16}
	tap_check "targetcli: ${LUN_MB} MiB fileio LUN, srpt target ib.$(gid0_hex), ACL $acl, rdma_cm port $CM_PORT" \
		target_setup "$acl"
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$LOGIN_PORT" 600
	tap_check "the initiator's channel: an RC QP on $DEV" \
		sroce_wait 20 target_channel_up
	tap_check "ib_srpt logged the login in" \
		sh -c "dmesg | grep -q 'Received SRP_LOGIN_REQ with i_port_id'"
	vm_announce "$SEEN_PORT"
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 600
	tap_check "the channel is gone after the initiator removed the port" \
		sroce_wait 20 target_channel_gone
	want=$(gen_data | sha256sum | cut -d' ' -f1)
	got=$(head -c "${DATA_MB}M" "$BACKING" | sha256sum | cut -d' ' -f1)
	tap_eq "backing file holds the initiator's ${DATA_MB} MiB" "$got" "$want"
	tap_check "targetcli clearconfig, target modules unloaded" target_teardown
	tap_done
}

# Initiator ------------------------------------------------------------

# add_target GUID: log in through rdma_cm to the target whose port id is
# (GUID, GUID).
initiator_login() {
	local g=$1 add=/sys/class/infiniband_srp/srp-$DEV-1/add_target
	echo "id_ext=$g,ioc_guid=$g,dest=$VM_PEER_IP:$CM_PORT" >"$add"
}

# The remote port and the SCSI host ib_srp made for it.
srp_port() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

# The disk behind ib_srp's SCSI host: /dev/sdX.
srp_disk() {
	local h b
	for h in /sys/class/scsi_host/host*; do
		grep -qx ib_srp "$h/proc_name" 2>/dev/null || continue
		for b in "$h"/device/target*/*:*:*:*/block/*; do
			[ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
		done
	done
	return 1
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
			printf "fio srp %s %s (%s): %.1f MB/s, %d IOPS\n", rw, bs, dev, bw * 1024 / 1e6, iops
		}' /tmp/fio.out | sed 's/^/# /'
	done
}

run_initiator() {
	local guid blk size sum_src sum_dev port
	tap_plan 10
	tap_check "$DEV on $VM_IFNAME with a RoCE v2 GID" add_rdma_dev
	tap_check "ib_srp: srp-$DEV-1" sh -c "modprobe -a ib_srp sd_mod &&
		test -e /sys/class/infiniband_srp/srp-$DEV-1/add_target"
	serve "$INFO_B_PORT" "$(gid0_hex)"
	gen_data >/tmp/srp-data
	sum_src=$(sha256sum </tmp/srp-data | cut -d' ' -f1)
	guid=$(fetch "$VM_PEER" "$INFO_A_PORT" 600) || tap_bail "the target never said its GUID"
	guid=${guid//:/}
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "the target never got ready"
	tap_check "add_target id_ext=ioc_guid=$guid dest=$VM_PEER_IP:$CM_PORT (rdma_cm)" \
		initiator_login "$guid"
	port=$(srp_port)
	tap_check "remote port ${port##*/} is running" \
		sh -c "test -n '$port' && grep -qx running '$port/state'"
	vm_announce "$LOGIN_PORT"
	blk=
	for _ in $(seq 200); do
		blk=$(srp_disk) && [ -b "$blk" ] && break
		blk=
		sleep 0.1
	done
	size=$(blockdev --getsize64 "${blk:-/dev/null}" 2>/dev/null)
	tap_eq "ib_srp's disk ${blk:-missing} is ${LUN_MB} MiB" "${size:-0}" $((LUN_MB << 20))

	dd if=/tmp/srp-data of="${blk:-/dev/null}" bs=1M oflag=direct conv=fsync \
		>/tmp/srp-dd-write.log 2>&1
	tap_check "write ${DATA_MB} MiB with O_DIRECT" grep -q "^$((DATA_MB << 20)) bytes" /tmp/srp-dd-write.log
	tap_diag "srp ($DEV -> ${VM2_RDMA_A:-sroce}) dd write 1 MiB O_DIRECT: $(dd_mbs /tmp/srp-dd-write.log)"
	dd if="${blk:-/dev/null}" of=/tmp/srp-back bs=1M count="$DATA_MB" iflag=direct \
		>/tmp/srp-dd-read.log 2>&1
	tap_diag "srp ($DEV <- ${VM2_RDMA_A:-sroce}) dd read 1 MiB O_DIRECT: $(dd_mbs /tmp/srp-dd-read.log)"
	sum_dev=$(sha256sum </tmp/srp-back | cut -d' ' -f1)
	tap_eq "read back with O_DIRECT: sha256 matches" "$sum_dev" "$sum_src"
	rm -f /tmp/srp-back

	[ "${VM2_FIO:-0}" = 1 ] && [ -n "$blk" ] && fio_figures "$blk"
	vm_wait_tcp "$VM_PEER" "$SEEN_PORT" 120
	tap_check "delete the remote port" sh -c "echo 1 > '$port/delete'"
	tap_check "port and disk gone" sroce_wait 20 sh -c "! ls -d /sys/class/srp_remote_ports/port-* && ! test -b '$blk'"
	tap_check "ib_srp unloads" modprobe -r ib_srp
	vm_announce "$DONE_PORT"
	sleep 5
	tap_done
}

if [ "$role" = a ]; then
	run_target
else
	run_initiator
fi
