#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The RC transport's error paths: sroce_rc_errors opens sroce0 (nsA) and
# sroce1 (nsB) in one process and connects an RC QP on each to the other:
# WRITE/READ with bad rkeys, out of bounds, without access rights
# (REM_ACCESS_ERR, memory unchanged, the rest flushed, the responder in
# ERR), a vanished peer (RETRY_EXC_ERR in bounded time, retry_cnt 3 and
# 0, and netem loss 100%), RNR (RNR_RETRY_EXC_ERR; rnr_retry 7 recovers),
# atomics, ATOMIC WRITE, a SEND too large for its receive (REM_INV_REQ_ERR /
# LOC_LEN_ERR), memory windows (type 1 and 2: bind, access through them,
# bounds and rights, LOCAL_INV and SEND with invalidate, type 2B's QP
# check, bind errors, an MR kept from dereg while a window is bound to
# it, a LOCAL_WRITE-only MR under a REMOTE_WRITE window), an MR
# re-registered in place under a peer's rkey. Then the error counters (rdma statistic), the resource counts back
# to the MAD layer's, and rmmod.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

# rdma_stat DEV NAME: one counter from "rdma statistic show link DEV/1".
rdma_stat() {
	rdma statistic show link "$1/1" |
		awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n) { print $(i + 1); exit } }'
}

# stat_positive DEV NAME...: each counter > 0 (prints them).
stat_positive() {
	local dev=$1 c v rc=0
	shift
	for c in "$@"; do
		v=$(rdma_stat "$dev" "$c")
		echo "$dev $c = ${v:-missing}"
		[ "${v:-0}" -gt 0 ] || rc=1
	done
	return $rc
}

# FLUSH needs rdma-core 45 or later: sid's libibverbs and the provider
# and sroce_rc_errors built for it (make userspace-next, which make check
# runs), through that root's loader; the same ATOMIC WRITE cases again.
# A kernel before 6.2 has no FLUSH in ib_core (no MR flush access): there
# sroce offers none, and --no-flush checks that it says so and refuses it.
flush_next() {
	local next=$SROCE_REPO/build/provider-next root lib out=/tmp/flush-next.out
	local noflush=() want="^ok .*FLUSH (global, whole MR"
	if ! sroce_kernel_at_least 6 2; then
		noflush=(--no-flush)
		want="^ok .*FLUSH not offered"
	fi
	root=$(cat "$next/root" 2>/dev/null)
	lib=$root/usr/lib/x86_64-linux-gnu
	if [ ! -x "$next/tests/sroce_rc_errors" ] || [ ! -x "$lib/ld-linux-x86-64.so.2" ]; then
		echo "no build/provider-next (make userspace-next)"
		return 1
	fi
	RDMAV_DRIVERS=$next/libsroce timeout 120 "$lib/ld-linux-x86-64.so.2" \
		--library-path "$lib" "$next/tests/sroce_rc_errors" -a sroce0 \
		-A "$SROCE_GID_A" -b sroce1 -B "$SROCE_GID_B" -o awrite "${noflush[@]}" >"$out" 2>&1
	local rc=$?
	cat "$out"
	# The FLUSH points ran (not compiled out), and nothing failed.
	[ "$rc" = 0 ] && grep -q "$want" "$out"
}

tap_plan 8
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"
# The dma-buf cases (-o dmabuf, in the default groups) need an exporter.
sroce_dmabuf_exporter >/dev/null

TAP_VERBOSE=1 tap_check "sroce_rc_errors (bad rkey, bounds, access, READ, peer gone, RNR, atomics, ATOMIC WRITE, length, SRQ, memory windows, rereg)" \
	timeout 300 "$SROCE_BIN/sroce_rc_errors" -a sroce0 -A "$SROCE_GID_A" \
	-b sroce1 -B "$SROCE_GID_B"
tap_check "sroce0 (requester): error_nak_received, retry_exceeded, rnr_nak_received > 0" \
	stat_positive sroce0 error_nak_received retry_exceeded rnr_nak_received
tap_check "sroce1 (responder): error_nak_sent, rnr_nak_sent, rx_drop_no_qp > 0" \
	stat_positive sroce1 error_nak_sent rnr_nak_sent rx_drop_no_qp

# The peer is alive but the network drops everything: the requester gives
# up after retry_cnt timeouts and flushes the rest; nothing reaches sroce1.
blackhole() {
	local rc
	ip netns exec nsA tc qdisc add dev vethA root netem loss 100% || return 1
	timeout 120 "$SROCE_BIN/sroce_rc_errors" -a sroce0 -A "$SROCE_GID_A" \
		-b sroce1 -B "$SROCE_GID_B" -o blackhole
	rc=$?
	ip netns exec nsA tc qdisc del dev vethA root
	return $rc
}
TAP_VERBOSE=1 tap_check "rdma-core 65: FLUSH of a range after a WRITE and of the whole MR, FLUSH without access, no persistent MR (before 6.2: FLUSH not offered); ATOMIC WRITE" \
	flush_next
TAP_VERBOSE=1 tap_check "netem loss 100%: RETRY_EXC_ERR after retry_cnt timeouts (3 and 0), the rest flushed, nothing arrives" \
	blackhole
tap_eq "sroce0: rdma resource counts back to the MAD layer's own" \
	"$(sroce_resources sroce0)" "$SROCE_MAD_OBJECTS"
tap_eq "sroce1: rdma resource counts back to the MAD layer's own" \
	"$(sroce_resources sroce1)" "${SROCE_MAD_OBJECTS/sroce0/sroce1}"
tap_check "rmmod with every object gone" rmmod sroce
tap_done
