#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Faults under RC traffic between sroce0 (nsA) and sroce1 (nsB), with
# sroce_integrity checking every byte: the MTU changed both ways, netem
# delay 10 ms and loss 30 % (and ATOMIC WRITEs at 10 %, which must be
# replayed, never stored twice), then the device pulled away — "rdma link
# delete" with live user contexts, "ip link del" of the netdev, rmmod.
# The rule: data arrives intact, or the QP reports an error; never a wrong,
# stale or doubled byte. A pulled device must not wait for its users: the
# delete finishes at once, they get IBV_EVENT_DEVICE_FATAL or an error
# completion and exit, and a new device works afterwards.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

BIN=$SROCE_BIN/sroce_integrity
RUN=$SROCE_PAIR_DIR/faults
mkdir -p "$RUN"

# Lines sroce_integrity prints for data that is wrong (not for errors).
DATA_ERRORS='bytes wrong|guard bytes changed|around the .*receive changed|checksum of the written|byte_len [0-9]+, expected|imm_data 0x|WITH_IMM (missing|set)|a duplicate\?|says op|source changed'

# start_traffic [CLIENT_ARGS...]: integrity in the background, sroce1
# serving; returns once data flows.
start_traffic() {
	local rx0
	ip netns exec nsB timeout 300 "$BIN" -s -d sroce1 -g "$SROCE_GID_B" -w 20 \
		>"$RUN/server" 2>&1 </dev/null &
	SPID=$!
	vm_wait_listen -n nsB 18525 30 || return 1
	ip netns exec nsA timeout 300 "$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" \
		-w 20 "$@" >"$RUN/client" 2>&1 </dev/null &
	CPID=$!
	rx0=$(sroce_counter sroce1 rx_packets)
	sroce_wait 20 bash -c "[ \$(cat /sys/class/infiniband/sroce1/ports/1/hw_counters/rx_packets) -gt $((rx0 + 200)) ]"
}

# wait_traffic SECONDS: both sides have exited within SECONDS.
wait_traffic() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$SPID" 2>/dev/null || kill -0 "$CPID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SPID" 2>/dev/null || kill -0 "$CPID" 2>/dev/null; then
		echo "still running after $1 s"
		return 1
	fi
	wait "$CPID"; CRC=$?
	wait "$SPID"; SRC=$?
	echo "client exit $CRC, server exit $SRC"
}

# No side saw a wrong byte; prints what each side ended with.
no_bad_data() {
	local f
	for f in "$RUN/client" "$RUN/server"; do
		grep -aE 'FATAL|^integrity:' "$f" | head -n 3
		if grep -aEq "$DATA_ERRORS" "$f"; then
			grep -aE "$DATA_ERRORS" "$f" | head -n 5
			return 1
		fi
	done
}

all_intact() {
	local ok=1
	no_bad_data &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' "$RUN/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' "$RUN/server" &&
	ok=0
	# Why not: both sides' last words (and their exit statuses).
	((ok)) && echo "client exit ${CRC:-?}, server exit ${SRC:-?}" &&
		tail -n 8 "$RUN/client" | sed 's/^/client: /' &&
		tail -n 8 "$RUN/server" | sed 's/^/server: /'
	return $ok
}

# Intact, or stopped by an error completion or async event: never data.
intact_or_error() {
	no_bad_data || return 1
	grep -Eq '0 errors$' "$RUN/client" && return 0
	grep -aEq 'FATAL: .*(status|async event|peer|progress)' "$RUN/client" "$RUN/server"
}

stop_and_check() {
	wait_traffic "$1" && no_bad_data
}

netem() {
	tc -n nsA qdisc replace dev vethA root netem "$@" &&
	tc -n nsB qdisc replace dev vethB root netem "$@"
}

# netem_roce ARGS...: netem on RoCE v2 packets (UDP 4791) only, both ways.
# Loss on the TCP connection sroce_integrity sets up with would test TCP's
# SYN back-off, not sroce, and could keep traffic from starting at all.
netem_roce() {
	local ns dev
	for ns in nsA:vethA nsB:vethB; do
		dev=${ns#*:} ns=${ns%:*}
		# Band 4 (1:4) is outside the default priomap: only the filter
		# sends packets there.
		tc -n "$ns" qdisc replace dev "$dev" root handle 1: prio bands 4 &&
		tc -n "$ns" qdisc add dev "$dev" parent 1:4 handle 40: netem "$@" &&
		tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:4 ||
			return 1
	done
}

# Packets sroce0 and sroce1 sent again, together.
retransmitted() {
	echo $(($(sroce_counter sroce0 retransmitted_packets) +
		$(sroce_counter sroce1 retransmitted_packets)))
}

# more_than N CMD: CMD prints a number above N.
more_than() {
	local now
	now=$("${@:2}")
	echo "before $1, now $now"
	[ "$now" -gt "$1" ]
}

# The last lines of both sides' output, for a bail-out.
traffic_tail() {
	tap_diag "client:" "$(tail -n 5 "$RUN/client")" \
		"server:" "$(tail -n 5 "$RUN/server")"
}

netem_off() {
	tc -n nsA qdisc del dev vethA root 2>/dev/null
	tc -n nsB qdisc del dev vethB root 2>/dev/null
	true
}

pingpong() {
	sroce_pair nsB nsA 18520 \
		ibv_rc_pingpong -p 18520 -d sroce1 -g "$SROCE_GID_B" -s 4096 -n 20 -c -- \
		ibv_rc_pingpong -p 18520 -d sroce0 -g "$SROCE_GID_A" -s 4096 -n 20 -c 10.77.0.2 &&
	grep -Eq "^$((2 * 20 * 4096)) bytes in" "$SROCE_PAIR_DIR/client"
}

mtu_flap() {
	local m
	for m in 9000 1500 4000 1500; do
		ip -n nsA link set vethA mtu $m && ip -n nsB link set vethB mtu $m || return 1
		sleep 1
	done
}

# timed SECONDS CMD...: CMD finishes within SECONDS (prints how long).
timed() {
	local t0=$EPOCHREALTIME lim=$1 rc
	shift
	timeout "$lim" "$@"
	rc=$?
	echo "$* took $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s"
	return $rc
}

# ATOMIC WRITE and READ rounds with the loss on (sroce_rc_errors, one
# process, both devices): every one succeeds, duplicates replayed.
awrite_loss() {
	timeout 240 "$SROCE_BIN/sroce_rc_errors" -a sroce0 -A "$SROCE_GID_A" \
		-b sroce1 -B "$SROCE_GID_B" -w 60 -o awrite-loss
}

tap_plan 21
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"

# MTU: the QPs run at path MTU 1024, which every MTU here carries.
start_traffic -n 2 || tap_bail "integrity traffic did not start"
tap_check "MTU 1500 -> 9000 -> 1500 -> 4000 -> 1500 under traffic" mtu_flap
tap_check "... both sides finish" wait_traffic 240
TAP_VERBOSE=1 tap_check "... every byte right" all_intact

netem delay 10ms
start_traffic --quick || tap_bail "traffic with delay did not start"
tap_check "netem delay 10 ms: both sides finish" wait_traffic 240
TAP_VERBOSE=1 tap_check "... every byte right" all_intact
netem_off
netem_roce loss 30% || tap_bail "netem on UDP 4791"
retx0=$(retransmitted)
start_traffic --quick || { traffic_tail; tap_bail "traffic with loss did not start"; }
tap_check "netem loss 30% of RoCE packets: both sides finish" wait_traffic 280
TAP_VERBOSE=1 tap_check "... every byte right, or an error completion: never wrong data" intact_or_error
TAP_VERBOSE=1 tap_check "... the loss was real: the devices retransmitted" \
	more_than "$retx0" retransmitted
netem_off
# 10 %: each operation needs its request and its answer through; at 30 %
# retry_cnt 7 runs out now and then, which is the network, not sroce.
netem_roce loss 10% || tap_bail "netem on UDP 4791"
TAP_VERBOSE=1 tap_check "netem loss 10 %: ATOMIC WRITE rounds all succeed, later values in place, duplicates replayed" \
	awrite_loss
netem_off

start_traffic -n 50 || tap_bail "traffic did not start"
tap_check "rdma link delete sroce1 with live user contexts: done within 15 s" \
	timed 15 ip netns exec nsB rdma link delete sroce1
tap_check "... both sides stop within 60 s" wait_traffic 60
tap_check "... the server was told (IBV_EVENT_DEVICE_FATAL or an error)" \
	grep -aEq 'FATAL' "$RUN/server"
tap_check "... no wrong data on either side" no_bad_data
ip netns exec nsB rdma link add sroce1 type sroce netdev vethB &&
	SROCE_GID_B=$(sroce_wait_gid sroce1 "$(sroce_ipv4_gid 10.77.0.2)")
tap_check "a new sroce1 carries data (ibv_rc_pingpong -c)" pingpong

start_traffic -n 50 || tap_bail "traffic did not start"
tap_check "rmmod sroce under traffic: done within 20 s" timed 20 rmmod sroce
tap_check "... both sides stop within 60 s, no wrong data" \
	stop_and_check 60
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up again after rmmod"
tap_check "modprobe again: sroce0 <-> sroce1 carry data" pingpong

start_traffic -n 50 || tap_bail "traffic did not start"
tap_check "ip link del vethA under traffic (both devices go): done within 20 s" \
	timed 20 ip -n nsA link del vethA
tap_check "... both sides stop within 60 s, no wrong data" \
	stop_and_check 60
tap_check "... both devices are gone" \
	bash -c '! test -e /sys/class/infiniband/sroce0 && ! test -e /sys/class/infiniband/sroce1'
sroce_reset
sroce_two_devices 1500 || tap_bail "set-up again after ip link del"
tap_check "a new pair carries data" pingpong
tap_done
