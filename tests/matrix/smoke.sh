#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The support matrix's smoke suite (tools/matrix/check): one guest, one
# kernel, one rdma-core release. Run in the guest, through tests/vm/run-all
# or on its own:
#
#   tools/vm/run --kernel trixie --env SROCE_USERROOT=$SROCE_CACHE/roots/trixie \
#       -- tests/vm/run-all tests/matrix/smoke.sh
#
# With SROCE_USERROOT (tests/vm/sroce.sh) every RDMA program runs from that
# root, with the provider built for its rdma-core release; without it, the
# host's userspace (rdma-core 44) and build/provider.
#
#  - device life cycle: rdma link add, ibv_devices, ibv_devinfo (port
#    active, Ethernet link layer), rdma link delete, module unload;
#  - RC: ibv_rc_pingpong 4 KiB and 1 MiB with the data checked (-c), every
#    RC perftest (send, write, read, atomic; bandwidth and latency; -n 200);
#  - UD: ibv_ud_pingpong -c; rdma_cm: rping -V (every ping's data checked)
#    and ucmatose;
#  - sroce_integrity (build/tests, built against rdma-core 44's public API:
#    the same binary on every release), sroce to sroce;
#  - interop with this kernel's rdma_rxe (sroce_rxe_pair: rxe in init_net
#    on 6.x, in a namespace on 7.x): ibv_rc_pingpong, sroce_integrity and
#    the four RC bandwidth tests, each side serving; nothing corrupt
#    reached sroce.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity
iters=(-n 200)

# The userspace in use, for the log.
userspace() {
	if [ -n "$SROCE_USERROOT" ]; then
		echo "userspace: $SROCE_USERROOT, rdma-core $(sroce_root_rdma_core "$SROCE_USERROOT")"
	else
		echo "userspace: this system's, rdma-core $(pkg-config --modversion libibverbs 2>/dev/null || echo '?')"
	fi
	echo "kernel: $(uname -r)"
}

# Device life cycle on nsA's vethA.
devices_list() { # DEV: ibv_devices lists DEV
	local out
	out=$(sroce_user ibv_devices) || return 1
	echo "$out"
	contains "$out" "^[[:space:]]+$1[[:space:]]"
}

devinfo_ok() { # DEV
	local out
	out=$(sroce_user ibv_devinfo -d "$1") || { echo "$out"; return 1; }
	echo "$out"
	contains "$out" "hca_id:[[:space:]]+$1\$" &&
	contains "$out" "state:[[:space:]]+PORT_ACTIVE" &&
	contains "$out" "link_layer:[[:space:]]+Ethernet"
}

device_gone() { # DEV: neither sysfs nor ibv_devices has it
	local out
	[ ! -e "/sys/class/infiniband/$1" ] || return 1
	out=$(sroce_user ibv_devices) || return 1
	echo "$out"
	! contains "$out" "^[[:space:]]+$1[[:space:]]"
}

# sides A|B as tests/vm/40-ud-uc-srq.sh: A = sroce0 (nsA) serves.
sides() {
	if [ "$1" = A ]; then
		S_NS=nsA S_DEV=sroce0 S_GID=$SROCE_GID_A S_IP=10.77.0.1
		C_NS=nsB C_DEV=sroce1 C_GID=$SROCE_GID_B
	else
		S_NS=nsB S_DEV=sroce1 S_GID=$SROCE_GID_B S_IP=10.77.0.2
		C_NS=nsA C_DEV=sroce0 C_GID=$SROCE_GID_A
	fi
}

# pingpong PROGRAM SIZE [ARGS...]: sroce1 serves; data checked (-c), the
# byte and iteration counts printed by both sides.
pingpong() {
	local prog=$1 size=$2 n=40 out
	shift 2
	[ "$size" -lt 1048576 ] || n=10
	sides B
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$prog" -d "$S_DEV" -g "$S_GID" -s "$size" -n "$n" -c "$@" -- \
		"$prog" -d "$C_DEV" -g "$C_GID" -s "$size" -n "$n" -c "$@" "$S_IP" ||
		return 1
	for out in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		grep -Eq "^$((2 * n * size)) bytes in .* seconds" "$out" || { cat "$out"; return 1; }
		grep -Eq "^$n iters in" "$out" || { cat "$out"; return 1; }
	done
}

# perf_row: the client's result row has a non-zero figure.
perf_row() {
	local row
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$row"
	[ -n "$row" ] && awk '{ for (i = 3; i <= NF; i++) if ($i > 0) exit 0; exit 1 }' <<<"$row"
}

perf() { # TEST: sroce1 serves, sroce0 is the client
	local t=$1
	sides B
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$t" -d "$S_DEV" -x "$S_GID" "${iters[@]}" -- \
		"$t" -d "$C_DEV" -x "$C_GID" "${iters[@]}" "$S_IP" &&
	perf_row
}

integrity_done() {
	tail -n 1 "$SROCE_PAIR_DIR/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client"
}

integrity() {
	sides B
	sroce_pair "$S_NS" "$C_NS" 18525 \
		"$BIN" -s -d "$S_DEV" -g "$S_GID" -w 60 -- \
		"$BIN" -c "$S_IP" -d "$C_DEV" -g "$C_GID" -w 60 --quick &&
	integrity_done
}

rping_run() { # COUNT
	sroce_cm_pair nsB nsA 7174 \
		stdbuf -oL rping -s -a 10.77.0.2 -p 7174 -C "$1" -v -V -- \
		stdbuf -oL rping -c -I 10.77.0.1 -a 10.77.0.2 -p 7174 -C "$1" -v -V || return 1
	! grep -q "mismatch" "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server" &&
	sroce_rping_check "$SROCE_PAIR_DIR/client" "$1" "ping data: " &&
	sroce_rping_check "$SROCE_PAIR_DIR/server" "$1" "server ping data: "
}

ucmatose_run() {
	local f
	sroce_cm_pair nsB nsA 7471 \
		ucmatose -b 10.77.0.2 -c 4 -C 10 -- \
		ucmatose -s 10.77.0.2 -b 10.77.0.1 -c 4 -C 10 || return 1
	for f in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		tail -n 3 "$f"
		grep -q "^return status 0" "$f" || return 1
		grep -q "data transfers complete" "$f" || return 1
	done
}

# Interop with rdma_rxe: rxe|sroce serves.
rxe_pingpong() { # SIDE SIZE
	local n=40 size=$2
	sroce_rxe_sides "$1"
	[ "$size" -lt 1048576 ] || n=10
	sroce_pair "$S_NS" "$C_NS" 18515 \
		ibv_rc_pingpong -d "$S_DEV" -g "$S_GID" -s "$size" -n "$n" -c -- \
		ibv_rc_pingpong -d "$C_DEV" -g "$C_GID" -s "$size" -n "$n" -c "$S_IP" &&
	grep -Eq "^$((2 * n * size)) bytes in" "$SROCE_PAIR_DIR/client"
}

rxe_integrity() { # SIDE
	sroce_rxe_sides "$1"
	sroce_pair "$S_NS" "$C_NS" 18525 \
		"$BIN" -s -d "$S_DEV" -g "$S_GID" -w 60 -- \
		"$BIN" -c "$S_IP" -d "$C_DEV" -g "$C_GID" -w 60 --quick &&
	integrity_done
}

rxe_perf() { # SIDE TEST
	sroce_rxe_sides "$1"
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$2" -d "$S_DEV" -x "$S_GID" "${iters[@]}" -- \
		"$2" -d "$C_DEV" -x "$C_GID" "${iters[@]}" "$S_IP" &&
	perf_row
}

# tap_check, and the seconds the point took (the matrix's timings).
check() {
	local t=$SECONDS rc
	tap_check "$@"
	rc=$?
	tap_diag "$((SECONDS - t)) s"
	return $rc
}

tap_plan 35
tap_diag "$(userspace)"

# Device life cycle.
check "module loads (provider installed)" sroce_load
if [ -n "$SROCE_USERROOT" ]; then
	tap_diag "provider: $(cat "$SROCE_USERROOT/etc/libibverbs.d/sroce.driver")," \
		"$(cd "$SROCE_USERROOT" && ls -d usr/lib/*/libibverbs/libsroce-*)"
fi
vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500 || tap_bail "set-up: nsA/nsB"
check "rdma link add sroce0 type sroce netdev vethA" \
	ip netns exec nsA rdma link add sroce0 type sroce netdev vethA
check "ibv_devices lists sroce0" sroce_wait 10 devices_list sroce0
check "ibv_devinfo -d sroce0: port active, Ethernet" devinfo_ok sroce0
check "rdma link delete sroce0" rdma link delete sroce0
check "sroce0 gone (sysfs, ibv_devices)" device_gone sroce0
check "module unloads" modprobe -r sroce
sroce_reset

sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"
check "ibv_devinfo -d sroce1: port active, Ethernet" devinfo_ok sroce1
check "ibv_rc_pingpong -c 4096 B" pingpong ibv_rc_pingpong 4096
check "ibv_rc_pingpong -c 1 MiB" pingpong ibv_rc_pingpong 1048576
for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw \
	 ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
	check "$t ${iters[*]}" perf "$t"
done
check "ibv_ud_pingpong -c 1024 B" pingpong ibv_ud_pingpong 1024
check "rping -C 100 -v -V: every ping's data checked" rping_run 100
check "ucmatose -c 4 -C 10" ucmatose_run
check "sroce_integrity (rdma-core 44 build), all ops, --quick" integrity
check "nothing malformed, corrupt or unrouted" \
	sroce_nothing_malformed

# Interop with this kernel's rdma_rxe.
sroce_reset
sroce_rxe_pair || tap_bail "set-up: rxe0 in ${SROCE_RXE_NS/#-/init_net}, sroce1 in nsB"
tap_diag "rdma_rxe: rxe0 in ${SROCE_RXE_NS/#-/init_net}"
check "ibv_devinfo -d rxe0 (rxe provider of this rdma-core)" devinfo_ok rxe0
for server in rxe sroce; do
	check "interop, $server serves: ibv_rc_pingpong -c 4096 B" rxe_pingpong "$server" 4096
	check "interop, $server serves: sroce_integrity, all ops" rxe_integrity "$server"
done
for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
	check "interop, rxe serves: $t ${iters[*]}" rxe_perf rxe "$t"
done
check "interop, sroce serves: ib_write_bw ${iters[*]}" rxe_perf sroce ib_write_bw
check "interop, sroce serves: ib_read_bw ${iters[*]}" rxe_perf sroce ib_read_bw
check "interop: nothing corrupt or malformed reached sroce1" sroce_clean_from_rxe sroce1
tap_done
