#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# An RC peer killed mid-transfer (tools/vm/run2, sroce on both sides).
# Guest B serves tests/tools/sroce_integrity; guest A drives it (SEND,
# WRITE, WRITE_WITH_IMM and READ, every byte checked) in a loop; a few
# seconds in, B asks for a power cut (/run/vm/power-cycle: QEMU killed, no
# shutdown, nothing sent on the wire).
#
# On A the rule of issue 8 must hold: the data either arrived intact or the
# QP reports an error, never wrong data. So A's client must stop by itself
# within a bound, with its QP's error (RETRY_EXC_ERR: the requester gave up
# after retry_cnt x timeout, counted by the retransmit timer), or, when the
# cut fell between two ops, on its TCP side channel (reset or no progress),
# and with no mismatch reported; nothing but QP1 is left on
# sroce0. B boots again, serves again, and a new run passes byte for byte.
# Both kernels' logs (B's two boots) must be free of warnings: run2 checks.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/../vm/sroce.sh"

BIN=$SROCE_BIN/sroce_integrity
role=${VM_ROLE:?run me through tools/vm/run2}
READY_PORT=7401		# B: serving
CUT_PORT=7402		# A: traffic is flowing, cut B's power now
DONE_PORT=7403		# A: finished
PORT=18531

add_dev() {
	sroce_load && rdma link add sroce0 type sroce netdev "$VM_IFNAME" &&
	GID=$(sroce_wait_gid sroce0 "$(sroce_ipv4_gid "$VM_LOCAL_IP")")
}

serve() {
	"$BIN" -s -d sroce0 -g "$GID" -p "$PORT" -w 60 >/tmp/serve.log 2>&1 &
	vm_wait_listen "$PORT" 30
}

# The victim (guest B) ------------------------------------------------------

run_b_boot1() {
	tap_plan 2
	tap_check "boot 1: sroce0 on $VM_IFNAME with a RoCE v2 GID" add_dev
	tap_check "boot 1: sroce_integrity serves on TCP $PORT" serve
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$CUT_PORT" 600
	(tap_done) || exit 1
	echo "# asking for a power cut in the middle of the transfer"
	: >/run/vm/power-cycle
	sleep 600
	exit 1
}

run_b_boot2() {
	tap_plan 3
	tap_check "boot 2: sroce0 on $VM_IFNAME with a RoCE v2 GID" add_dev
	tap_check "boot 2: sroce_integrity serves on TCP $PORT" serve
	vm_announce "$READY_PORT"
	vm_wait_tcp "$VM_PEER" "$DONE_PORT" 600
	tap_check "boot 2: the server verified the new run with 0 errors" \
		grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' /tmp/serve.log
	tap_done
}

# The survivor (guest A) ----------------------------------------------------

CLIENT_LOG=/tmp/client.log

client_running() {
	kill -0 "$CPID" 2>/dev/null
}

client_gone() {
	! client_running
}

# Some of the run was verified before the cut: its first op passed.
some_verified() {
	grep -q '^ok ' "$CLIENT_LOG"
}

# The client stopped on the QP's error, on the side channel's reset, or
# on its no-progress limit (-w: waiting on the side channel for a peer
# that is not back within 30 s, so no TCP reset comes), and reported one
# error (that stop) and no wrong byte or completion.
stopped_cleanly() {
	local last
	grep -a 'FATAL' "$CLIENT_LOG"
	last=$(grep -a '^integrity: ' "$CLIENT_LOG" | tail -n 1)
	echo "$last"
	grep -aEq 'FATAL: .*(transport retry counter exceeded|no completion for|closed the connection|recv from the peer|no message from the peer)' \
		"$CLIENT_LOG" &&
	[[ $last =~ ^integrity:\ [0-9]+\ ops,\ [0-9]+\ bytes\ verified,\ 1\ errors$ ]]
}

only_qp1_left() {
	local r
	r=$(sroce_resources sroce0)
	echo "$r"
	[[ $r == *" qp 1 "* && $r == *" cm_id 0 "* && $r == *" mr 0 "* ]]
}

timeouts_before=0

# When the client stopped on a completion error, the requester's timer
# fired first (retry_cnt x timeout). It may instead have been between two
# ops, waiting on the TCP side channel for the dead peer (then the TCP
# reset or its -w limit stopped it and no RDMA work was outstanding).
timer_if_qp_error() {
	local now
	now=$(sroce_counter sroce0 retransmit_timeouts)
	echo "retransmit_timeouts $timeouts_before -> $now"
	if grep -aq 'FATAL: .*transport retry counter exceeded' "$CLIENT_LOG"; then
		[ "$now" -gt "$timeouts_before" ]
	else
		echo "(the client stopped on the side channel: no RDMA work was outstanding)"
	fi
}

run_a() {
	local t0 rc
	tap_plan 9
	tap_check "sroce0 on $VM_IFNAME with a RoCE v2 GID" add_dev
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "B never served"
	timeouts_before=$(sroce_counter sroce0 retransmit_timeouts)
	"$BIN" -c "$VM_PEER_IP" -d sroce0 -g "$GID" -p "$PORT" -w 30 --seconds 600 \
		>"$CLIENT_LOG" 2>&1 &
	CPID=$!
	tap_check "traffic flows: the first op verified" sroce_wait 120 some_verified
	tap_check "... and the client still runs" client_running
	t0=$SECONDS
	vm_announce "$CUT_PORT"
	# timeout 14 (67 ms) x 8 tries is under a second of retrying; -w 30
	# bounds a client that was waiting on the dead peer's TCP instead.
	tap_check "B's power cut: the client stops by itself within 90 s" \
		sroce_wait 90 client_gone
	wait "$CPID"
	rc=$?
	tap_diag "client exit $rc after $((SECONDS - t0)) s"
	tap_check "... with a failure exit" test "$rc" -ne 0
	tap_check "... on the QP's error or no progress, with no wrong byte" stopped_cleanly
	tap_diag "$(grep -a -m1 'FATAL' "$CLIENT_LOG")"
	tap_check "a QP that gave up did so after its retransmit timer fired" timer_if_qp_error
	tap_check "nothing but QP1 left on sroce0" only_qp1_left
	vm_wait_tcp "$VM_PEER" "$READY_PORT" 600 || tap_bail "B never came back"
	tap_check "B booted again: a new run passes byte for byte" bash -c \
		"'$BIN' -c '$VM_PEER_IP' -d sroce0 -g '$GID' -p $PORT -w 60 --quick >/tmp/again.log 2>&1;
		 rc=\$?; tail -n 2 /tmp/again.log; [ \$rc = 0 ] &&
		 grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' /tmp/again.log"
	vm_announce "$DONE_PORT"
	sleep 5
	tap_done
}

if [ "$role" = b ]; then
	if [ -e /run/vm/power-cycled ]; then run_b_boot2; else run_b_boot1; fi
else
	run_a
fi
