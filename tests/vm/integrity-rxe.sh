#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce_integrity against rdma_rxe, the kernel's own software RoCE: the
# reference the tool (and later sroce) is measured against.  One guest,
# rxe0 on vethA in init_net (rxe routes only there), server and client both
# on rxe0, which loops back to its own GID.  Not a numbered script: run-all
# and CI do not run it.
#
#   tools/vm/run -- tests/vm/integrity-rxe.sh [options] [-- CLIENT_ARGS...]
#
#   --quick        sizes up to 128 KiB, 8 random ones (default; seconds)
#   --full         sizes up to 8 MiB, 16 random ones (~20 MiB per op)
#   --mtu LIST     path MTUs (-m) to run, default "1024 4096"; the veth
#                  gets MTU 1500 up to 1024, 3000 for 2048, 9000 for 4096
#   --seed N       default: a new one per run (printed)
#   --faults       also: each --inject fault must fail both sides, a killed
#                  peer must end the other side, a stopped one time it out
#
# Prints TAP; exit 1 if any point failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/sroce.sh"

BIN=${SROCE_BIN:-$REPO/build/tests}/sroce_integrity
PORT=18525
set_args=(--quick)
mtus="1024 4096"
seed=""
faults=0
extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) set_args=(--quick); shift ;;
	--full) set_args=(); shift ;;
	--mtu) mtus=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--faults) faults=1; shift ;;
	--) shift; extra=("$@"); break ;;
	*) echo "integrity-rxe.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$seed" ] || seed=$(( (RANDOM << 15) | RANDOM ))
work=$(mktemp -d "${TMPDIR:-/tmp}/integrity.XXXXXX")

cleanup() {
	rdma link delete rxe0 2>/dev/null
	ip link del vethA 2>/dev/null
	modprobe -r rdma_rxe 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

npoints=$(( $(wc -w <<<"$mtus") + 1 ))
[ "$faults" = 0 ] || npoints=$((npoints + 10))
tap_plan "$npoints"

setup() {
	modprobe rdma_rxe &&
	ip link add vethA type veth peer name vethB &&
	ip addr add 10.77.0.1/24 dev vethA &&
	ip link set vethA up && ip link set vethB up &&
	rdma link add rxe0 type rxe netdev vethA &&
	GID=$(sroce_wait_gid rxe0 "$(sroce_ipv4_gid 10.77.0.1)")
}
tap_check "rxe0 on vethA (10.77.0.1), RoCE v2 IPv4 GID" setup || tap_bail "set-up failed"

# netdev MTU for a path MTU, and wait until the port's active MTU follows
# (1024 at 1500; a smaller path MTU needs no smaller netdev).
set_mtu() {
	local dev_mtu=1500 active=1024 i
	case $1 in 2048) dev_mtu=3000 active=2048 ;; 4096) dev_mtu=9000 active=4096 ;; esac
	ip link set vethA mtu "$dev_mtu" && ip link set vethB mtu "$dev_mtu" || return 1
	for ((i = 0; i < 50; i++)); do
		ibv_devinfo -d rxe0 | grep -q "active_mtu:.*$active " && return 0
		sleep 0.1
	done
	return 1
}

# pair NAME SERVER_ARGS -- CLIENT_ARGS: one server and one client, both
# waited for (at most 10 minutes); sets SRC, CRC and the files $work/NAME.*
pair() {
	local name=$1 sargs=() cargs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	timeout 600 "$BIN" -s -d rxe0 -g "$GID" -p "$PORT" "${sargs[@]}" >"$work/$name.server" 2>&1 &
	local spid=$!
	timeout 600 "$BIN" -c 127.0.0.1 -d rxe0 -g "$GID" -p "$PORT" "${cargs[@]}" \
		>"$work/$name.client" 2>&1
	CRC=$?
	wait "$spid"
	SRC=$?
}

show() { sed 's/^/  /' "$@"; }

# ---- every op, every size, per path MTU ----
for mtu in $mtus; do
	name=mtu$mtu
	if ! set_mtu "$mtu"; then
		not_ok "path MTU $mtu: the port's active_mtu did not follow the veth MTU"
		continue
	fi
	start=$SECONDS
	pair "$name" -w 30 -- -m "$mtu" -w 30 --seed "$seed" "${set_args[@]}" "${extra[@]}"
	secs=$((SECONDS - start))
	if [ "$CRC" = 0 ] && [ "$SRC" = 0 ] &&
		grep -Eq '^integrity: [1-9][0-9]* ops, [0-9]+ bytes verified, 0 errors$' "$work/$name.client"; then
		ok "path MTU $mtu, all ops and sizes, seed $seed ($secs s)"
		tap_diag "$(show "$work/$name.client")"
	else
		not_ok "path MTU $mtu, all ops and sizes, seed $seed (client exit $CRC, server exit $SRC)"
		tap_diag "client:" "$(show "$work/$name.client")" "server:" "$(show "$work/$name.server")"
	fi
done

if [ "$faults" = 1 ]; then
	set_mtu 1024 >/dev/null
	# fault NAME OPS ERE: --inject NAME must fail both sides, promptly,
	# with ERE in the output.
	fault() {
		local name=$1 ops=$2 ere=$3
		pair "inj-$name" -w 10 -- -w 10 --quick --seed "$seed" --random 2 --ops "$ops" \
			--inject "$name"
		local out="$work/inj-$name.client $work/inj-$name.server"
		# shellcheck disable=SC2086
		if [ "$CRC" != 0 ] && [ "$SRC" != 0 ] && [ "$CRC" != 124 ] && [ "$SRC" != 124 ] &&
			cat $out | grep -Eq "$ere"; then
			ok "--inject $name ($ops) fails both sides: /$ere/"
			# shellcheck disable=SC2086
			tap_diag "$(cat $out | grep -E "$ere|^integrity:" | awk '!seen[$0]++' | head -6 | sed 's/^/  /')"
		else
			not_ok "--inject $name ($ops): client exit $CRC, server exit $SRC, want non-zero and /$ere/"
			tap_diag "client:" "$(show "$work/inj-$name.client")" "server:" "$(show "$work/inj-$name.server")"
		fi
	}
	fault corrupt send,write,read 'bytes wrong, first at offset'
	fault guard send_imm,write_imm,read 'guard bytes changed'
	fault imm send_imm,write_imm 'imm_data 0x[0-9a-f]+, expected'
	fault skip write 'checksum of the written range'
	fault short send 'receive byte_len [0-9]+, expected'
	fault rkey write 'status remote access error'
	fault rkey read 'status remote access error'

	# kill_peer VICTIM(server|client) SIGNAL: start a long run, hit VICTIM
	# with SIGNAL once the first op is through; the other side must fail
	# with ERE within 30 s.
	kill_peer() {
		local victim=$1 sig=$2 ere=$3 w=$4 spid cpid vpid i rc=0 start
		"$BIN" -s -d rxe0 -g "$GID" -p "$PORT" -w "$w" >"$work/kill.server" 2>&1 &
		spid=$!
		"$BIN" -c 127.0.0.1 -d rxe0 -g "$GID" -p "$PORT" -w "$w" --quick -n 100 \
			--seed "$seed" >"$work/kill.client" 2>&1 &
		cpid=$!
		for ((i = 0; i < 600; i++)); do
			grep -q '^ok 1 ' "$work/kill.client" && break
			sleep 0.1
		done
		if [ "$victim" = server ]; then vpid=$spid; else vpid=$cpid; fi
		kill "-$sig" "$vpid"
		start=$SECONDS
		local other=client opid=$cpid
		[ "$victim" = client ] && other=server opid=$spid
		wait "$opid" 2>/dev/null
		rc=$?
		local secs=$((SECONDS - start))
		kill -KILL "$vpid" 2>/dev/null
		{ wait "$vpid"; } 2>/dev/null
		if [ "$rc" != 0 ] && [ "$secs" -le 30 ] && grep -Eq "$ere" "$work/kill.$other"; then
			ok "SIG$sig to the $victim mid-run: the $other exits $rc after $secs s"
			tap_diag "$(grep -E "$ere|^integrity:" "$work/kill.$other" | head -3 | sed 's/^/  /')"
		else
			not_ok "SIG$sig to the $victim mid-run: the $other exit $rc after $secs s, want non-zero and /$ere/"
			tap_diag "$(show "$work/kill.$other")"
		fi
	}
	kill_peer server KILL 'the peer closed the connection' 30
	kill_peer client KILL 'the peer closed the connection' 30
	kill_peer server STOP 'no (completion|message from the peer) for 5 s' 5
fi
tap_done
