#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Wire compatibility with rdma_rxe, the kernel's own RoCE v2 device, in
# one guest: rxe0 on vethA in init_net (the only place rxe 6.12 works),
# sroce1 on vethB in nsB. Each side serves in turn. What
# tests/vm2/rc-interop.sh runs between two kernels in every make check
# (ibv_rc_pingpong at 1 B, 4 KiB and 1 MiB, sroce_integrity, every RC
# perftest with both posting APIs, at MTU 1500) is not repeated here;
# this script runs what only it has: sroce_integrity with sroce's MRs on
# demand, IBTA 1.5's ATOMIC WRITE and (with rdma-core 65) FLUSH each way
# (sroce_rc_errors -o awrite),
# jumbo frames (MTU 9000, path MTU 4096: pingpong, integrity, the
# bandwidth tests), and the ICRC engine the module did not choose.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
source "$here/capture.sh"
sroce_reset
trap 'capture_kill; sroce_reset' EXIT
CAP=/tmp/sroce-interop
mkdir -p "$CAP"

BIN=$SROCE_BIN/sroce_integrity

# pingpong rxe|sroce SIZE [ARGS...]
pingpong() {
	local n=40 size=$2
	sroce_rxe_sides "$1"
	shift 2
	[ "$size" -lt 1048576 ] || n=10
	sroce_pair "$S_NS" "$C_NS" 18515 \
		ibv_rc_pingpong -d "$S_DEV" -g "$S_GID" -s "$size" -n "$n" -c "$@" -- \
		ibv_rc_pingpong -d "$C_DEV" -g "$C_GID" -s "$size" -n "$n" -c "$@" "$S_IP" &&
	grep -Eq "^$((2 * n * size)) bytes in" "$SROCE_PAIR_DIR/client"
}

# integrity rxe|sroce [ARGS...]: sroce_integrity, ARGS on both sides.
integrity() {
	integrity_with "$1" "" "" "${@:2}"
}

# integrity_with rxe|sroce S_ARG C_ARG [ARGS...]: S_ARG (one word, or
# "") for the server only, C_ARG for the client only.
integrity_with() {
	local s_x=() c_x=()
	sroce_rxe_sides "$1"
	[ -n "$2" ] && s_x=("$2")
	[ -n "$3" ] && c_x=("$3")
	shift 3
	sroce_pair "$S_NS" "$C_NS" 18525 \
		"$BIN" -s -d "$S_DEV" -g "$S_GID" -w 60 "${s_x[@]}" "$@" -- \
		"$BIN" -c "$S_IP" -d "$C_DEV" -g "$C_GID" -w 60 --quick "${c_x[@]}" "$@" &&
	tail -n 1 "$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client"
}

# integrity_odp rxe|sroce ODP_SIDE: sroce_integrity with the MRs of the
# ODP_SIDE's process (rxe or sroce) on demand, the other side's pinned.
# rdma_rxe's own ODP (6.15 on) is not run here yet: on 7.2 the data rxe
# sent from and received into its ODP MRs came out wrong; whether rxe does
# that on its own (rxe to rxe) is still to be checked.
integrity_odp() {
	local s="" c=""
	sroce_rxe_sides "$1"
	[ "${S_DEV%%[0-9]*}" = "$2" ] && s=--odp
	[ "${C_DEV%%[0-9]*}" = "$2" ] && c=--odp
	integrity_with "$1" "$s" "$c"
}

# 1000 iterations (perftest's bandwidth default is 5000); 200 on the debug
# kernel (KASAN, lockdep: several times slower).
iters=(-n 1000)
sroce_debug_kernel && iters=(-n 200)

perf() {
	local t=$2 row
	sroce_rxe_sides "$1"
	shift 2
	set -- "${iters[@]}" "$@"
	sroce_pair "$S_NS" "$C_NS" 18515 \
		"$t" -d "$S_DEV" -x "$S_GID" "$@" -- \
		"$t" -d "$C_DEV" -x "$C_GID" "$@" "$S_IP" || return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t: $row"
	# No result row: what the client printed instead.
	[ -n "$row" ] || tail -n 12 "$SROCE_PAIR_DIR/client"
	# Any figure > 0: 8-byte atomics on the debug kernel show 0.00 MB/s.
	[ -n "$row" ] && awk '{ for (i = 3; i <= NF; i++) if ($i > 0) exit 0; exit 1 }' <<<"$row"
}

# rdma_rxe has ATOMIC WRITE and FLUSH (IBTA 1.5) from 6.2 on, as ib_core
# does. Before, there is nothing to interoperate with: rxe0 must say so
# (device_cap_flags_ex without bits 38 and 40) and sroce1 must offer
# ATOMIC WRITE (sroce's own; 34-rc-errors.sh runs it between two sroce
# devices there).
rxe_ibta15() { sroce_kernel_at_least 6 2; }
rxe_without_ibta15() {
	local rxe sroce
	rxe=$(ibv_devinfo -v -d rxe0 | sed -n 's/^[[:space:]]*device_cap_flags_ex:[[:space:]]*//p')
	sroce=$(ip netns exec nsB ibv_devinfo -v -d sroce1 | sed -n 's/^[[:space:]]*device_cap_flags_ex:[[:space:]]*//p')
	echo "device_cap_flags_ex: rxe0 $rxe, sroce1 $sroce"
	[ -n "$rxe" ] && [ -n "$sroce" ] &&
		(((rxe & (1 << 38 | 1 << 40)) == 0 && (sroce & 1 << 40) != 0))
}

# awrite rxe|sroce: the other side writes atomically to the server's MRs
# (one process holds both devices, which every namespace sees).
awrite() {
	rxe_ibta15 || { rxe_without_ibta15; return; }
	sroce_rxe_sides "$1"
	timeout 120 "$SROCE_BIN/sroce_rc_errors" -a "$C_DEV" -A "$C_GID" \
		-b "$S_DEV" -B "$S_GID" -o awrite
}

# awrite_next rxe|sroce: the same with rdma-core 65 (FLUSH needs 45 or
# later): sid's libibverbs and librxe, the provider and sroce_rc_errors
# built for it (make userspace-next, which make check runs), through that
# root's loader, as 34-rc-errors.sh's flush_next; FLUSH of a range after a
# WRITE and of the whole MR, FLUSH without FLUSH_GLOBAL, no persistent MR.
# rdma_rxe seals a FLUSH with an ICRC of its own (its headers counted
# twice, sroce_net.c): captured on vethB, rxe's FLUSHes are all sealed so,
# sroce takes them (rx_flush_rxe_icrc, no ICRC drop) and, as requester,
# seals its own so once one went unanswered (tx_flush_rxe_icrc).
awrite_next() {
	local next=$SROCE_REPO/build/provider-next root lib out=/tmp/awrite-next.out
	local rx0 tx0 drop0 rx tx drop forms
	rxe_ibta15 || { rxe_without_ibta15; return; }
	sroce_rxe_sides "$1"
	rx0=$(sroce_counter sroce1 rx_flush_rxe_icrc)
	tx0=$(sroce_counter sroce1 tx_flush_rxe_icrc)
	drop0=$(sroce_counter sroce1 rx_drop_icrc)
	root=$(cat "$next/root" 2>/dev/null)
	lib=$root/usr/lib/x86_64-linux-gnu
	if [ ! -x "$next/tests/sroce_rc_errors" ] || [ ! -x "$lib/ld-linux-x86-64.so.2" ] ||
	   ! ls "$lib"/libibverbs/librxe-rdmav*.so >/dev/null 2>&1; then
		echo "no build/provider-next with sid's librxe (make userspace-next)"
		return 1
	fi
	capture_start nsB vethB "$CAP/flush.pcap" "udp port 4791" || return 1
	RDMAV_DRIVERS=$next/libsroce:$lib/libibverbs/librxe timeout 120 \
		"$lib/ld-linux-x86-64.so.2" --library-path "$lib" \
		"$next/tests/sroce_rc_errors" -a "$C_DEV" -A "$C_GID" \
		-b "$S_DEV" -B "$S_GID" -o awrite >"$out" 2>&1
	local rc=$?
	capture_stop "$CAP/flush.pcap" || rc=1
	grep -v "couldn't load driver" "$out"
	rx=$(($(sroce_counter sroce1 rx_flush_rxe_icrc) - rx0))
	tx=$(($(sroce_counter sroce1 tx_flush_rxe_icrc) - tx0))
	drop=$(($(sroce_counter sroce1 rx_drop_icrc) - drop0))
	echo "sroce1: rx_flush_rxe_icrc +$rx, tx_flush_rxe_icrc +$tx, rx_drop_icrc +$drop"
	# The FLUSH points ran (not compiled out), and nothing failed.
	[ "$rc" = 0 ] && grep -q "^ok .*FLUSH (global, whole MR" "$out" &&
	[ "$drop" = 0 ] || return 1
	echo "rxe0's (10.77.0.1):"
	forms=$(python3 "$here/roce-icrc.py" --flush-forms "$CAP/flush.pcap" 10.77.0.1)
	echo "$forms"
	if [ "$1" = sroce ]; then
		[ "$rx" -gt 0 ] && [ "$tx" = 0 ] &&
		contains "$forms" "^([1-9][0-9]*) FLUSH frames: 0 sealed as IBTA says, \1 as rdma_rxe does, 0 neither$" ||
		return 1
	else
		# rxe0 as responder sends no FLUSH; sroce1 sends them.
		contains "$forms" "^0 FLUSH frames" || return 1
		echo "sroce1's (10.77.0.2):"
		python3 "$here/roce-icrc.py" --flush-forms "$CAP/flush.pcap" 10.77.0.2 |
			tee "$CAP/forms"
		[ "$rx" = 0 ] && [ "$tx" -gt 0 ] &&
		grep -Eq "^[1-9][0-9]* FLUSH frames: [0-9]+ sealed as IBTA says, $tx as rdma_rxe does, 0 neither$" "$CAP/forms"
	fi
}

tap_plan 20
sroce_rxe_pair || tap_bail "set-up: rxe0 in init_net, sroce1 in nsB"
aw="ATOMIC WRITE (caps, data, 32 in flight, access error)"
fl="rdma-core 65: FLUSH (range after a WRITE, whole MR, without access, no persistent MR) and ATOMIC WRITE"
if ! rxe_ibta15; then
	aw="rdma_rxe before 6.2 has no ATOMIC WRITE: rxe0 offers none, sroce1 does"
	fl="rdma_rxe before 6.2 has no FLUSH: rxe0 offers none"
fi
for server in rxe sroce; do
	tap_check "$server serves: sroce_integrity, sroce's MRs on demand (--odp)" \
		integrity_odp "$server" sroce
	TAP_VERBOSE=1 tap_check "$server serves: $aw" awrite "$server"
	TAP_VERBOSE=1 tap_check "$server serves: $fl" awrite_next "$server"
done

# Jumbo frames: path MTU 4096 both ways.
sroce_reset
sroce_rxe_pair 9000 || tap_bail "set-up at MTU 9000"
for server in rxe sroce; do
	tap_check "MTU 9000, $server serves: ibv_rc_pingpong 1 MiB, path MTU 4096" \
		pingpong "$server" 1048576 -m 4096
	tap_check "MTU 9000, $server serves: sroce_integrity, path MTU 4096" \
		integrity "$server" -m 4096
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		tap_check "MTU 9000, $server serves: $t" perf "$server" "$t"
	done
done

# The ICRC engine the module did not choose at load (kernel/sroce_icrc.c:
# crc32_le or the crypto API's "crc32", whichever was faster): rxe checks
# every ICRC sroce computes with it, and sroce every one of rxe's.
sroce_reset
chosen=$(sroce_load && cat /sys/module/sroce/parameters/icrc_engine)
other=shash
[ "$chosen" = shash ] && other=lib
modprobe -r sroce
SROCE_MODPARAMS="icrc_engine=$other" sroce_rxe_pair ||
	tap_bail "set-up with icrc_engine=$other"
tap_check "icrc_engine=$other (load chose ${chosen:-?}): in use" \
	grep -qx "$other" /sys/module/sroce/parameters/icrc_engine
for server in rxe sroce; do
	tap_check "icrc_engine=$other, $server serves: sroce_integrity, all ops" \
		integrity "$server"
done
# (rxe drops a packet with a bad ICRC: its side of the data would not
# have arrived.)
tap_check "icrc_engine=$other: sroce1 dropped nothing as corrupt" \
	sroce_clean_from_rxe sroce1
tap_done
