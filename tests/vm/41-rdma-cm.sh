#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma_cm over sroce (CM MADs on QP1, address and route resolution
# through the netdev) between sroce1 (nsB, 10.77.0.2) and sroce0 (nsA):
# rping with every ping's data checked (-V, and the printed data
# recomputed here), ucmatose with 10 connections, udaddy, mckey
# (multicast), rdma_server/rdma_client, rstream and riostream (rsockets)
# with data verification. 44-rdma-cm-cycles.sh has perftest -R and 200
# connection cycles in a row.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

SRV=10.77.0.2
CLI=10.77.0.1
PINGS=${PINGS:-1000}

# rping COUNT PORT: client and server print every ping's data (-v),
# both check it (-V); the lines are recomputed here.
rping_run() {
	# Line-buffered: a message on stderr must not land inside a line.
	sroce_cm_pair nsB nsA "$2" \
		stdbuf -oL rping -s -a $SRV -p "$2" -C "$1" -v -V -- \
		stdbuf -oL rping -c -a $SRV -p "$2" -C "$1" -v -V || return 1
	grep -v "ping data: " "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"

	! grep -q "mismatch" "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server" &&
	sroce_rping_check "$SROCE_PAIR_DIR/client" "$1" "ping data: " &&
	sroce_rping_check "$SROCE_PAIR_DIR/server" "$1" "server ping data: "
}

# Both sides of a librdmacm example end with "return status 0".
status_ok() {
	local f
	for f in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		tail -n 3 "$f"
		grep -q "^return status 0" "$f" || return 1
		grep -q "data transfers complete" "$f" || return 1
	done
}

ucmatose_run() {
	sroce_cm_pair nsB nsA 7471 \
		ucmatose -b $SRV -c 10 -C 10 -- \
		ucmatose -s $SRV -b $CLI -c 10 -C 10 &&
	status_ok &&
	[ "$(grep -c '^cmatose: starting client' "$SROCE_PAIR_DIR/client")" = 1 ]
}

udaddy_run() {
	sroce_cm_pair nsB nsA 7174 \
		udaddy -b $SRV -c 4 -C 10 -- \
		udaddy -s $SRV -b $CLI -c 4 -C 10 &&
	status_ok
}

# mckey: the receiver (nsB) joins 239.1.2.3; the sender (nsA) joins once
# the receiver has and sends 10 messages. mckey's sender posts unsignaled
# sends and destroys its QP right away: sroce sends what a UD QP holds
# before it destroys it, so the receiver waits for all 10.
mckey_run() {
	mcast_diag >"$SROCE_PAIR_DIR/before"
	ip netns exec nsB nstat -n >/dev/null 2>&1
	SROCE_PAIR_TMO=40 SROCE_CM_READY="joined dgid" sroce_cm_pair nsB nsA - \
		stdbuf -oL mckey -m 239.1.2.3 -b $SRV -C 10 -- \
		mckey -m 239.1.2.3 -b $CLI -s -C 10 &&
	status_ok &&
	grep -q "joined dgid: ::ffff:239.1.2.3" "$SROCE_PAIR_DIR/server" || {
		echo "before:"; cat "$SROCE_PAIR_DIR/before"
		echo "after:"; mcast_diag
		ip netns exec nsB nstat 2>/dev/null | grep -i "mcast\|udp\|discard\|drop"
		return 1
	}
}

mcast_diag() {
	local d
	for d in sroce0 sroce1; do
		echo "$d: $(cd /sys/class/infiniband/$d/ports/1/hw_counters &&
			grep . rx_* tx_packets | tr '\n' ' ')"
	done
}

rdma_server_run() {
	local f
	sroce_cm_pair nsB nsA 7473 \
		rdma_server -s $SRV -p 7473 -- rdma_client -s $SRV -p 7473 ||
		return 1
	for f in "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"; do
		cat "$f"
		grep -Eq "^rdma_(server|client): end 0$" "$f" || return 1
	done
}

# rsocket streams (rstream, riostream): -T v fills every buffer with a
# pattern and checks it on the other side ("data verification failed").
rs_run() {
	local prog=$1 port=$2
	shift 2
	sroce_cm_pair nsB nsA "$port" \
		"$prog" -b $SRV -p "$port" -S 65536 -C 20 -T v "$@" -- \
		"$prog" -s $SRV -p "$port" -S 65536 -C 20 -T v "$@" || return 1
	cat "$SROCE_PAIR_DIR/client"
	sroce_rstream_ok "$SROCE_PAIR_DIR/client" "$SROCE_PAIR_DIR/server"
}

tap_plan 8
T0=$SECONDS
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"
tap_check "rping -C $PINGS -v -V: every ping's data checked" rping_run "$PINGS" 7174
tap_check "ucmatose -c 10 -C 10" ucmatose_run
tap_check "udaddy -c 4 -C 10" udaddy_run
tap_check "mckey: multicast group 239.1.2.3 through rdma_cm" mckey_run
tap_check "rdma_server / rdma_client" rdma_server_run
tap_check "rstream -T v (rsockets, data verified)" rs_run rstream 7475
tap_check "riostream -T v (rsockets, RDMA writes, data verified)" rs_run riostream 7476
tap_diag "$((SECONDS - T0)) s"
tap_check "nothing corrupt or unrouted" \
	bash -c 'for d in sroce0 sroce1; do
		for c in rx_drop_icrc rx_drop_malformed tx_errors; do
			v=$(cat /sys/class/infiniband/$d/ports/1/hw_counters/$c)
			echo "$d $c $v"; [ "$v" = 0 ] || exit 1
		done
	done'
tap_done
