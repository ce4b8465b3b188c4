#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Observability between sroce0 (nsA, vethA) and sroce1 (nsB, vethB): the
# tracepoints (TRACE_SYSTEM sroce, read through tracefs in an instance of
# its own) and the resource details of "rdma resource show qp|cq|mr -dd".
#   - tracefs lists every sroce event, and their format files name no enum
#     (perf and trace-cmd decode them from numbers);
#   - a scripted RC connection (tests/tools/sroce_trace.py: A on sroce0
#     sends, B on sroce1 responds), step by step:
#     ready: A's details say sq_psn = una = 100 (the PSN it was given),
#       idle, 7 retries and 7 RNR retries left; B expects PSN 100;
#     traffic (10 WRITEs of 4 packets, a SEND before B's receive): A's
#       sq_psn and una 141, nothing in flight, B expects 141 and counted
#       11 messages; B's receive CQ holds the one completion left unpolled;
#       RNR NAKs for the SEND's PSN 140 (no receive WQE, timer 14 =
#       1280 us) and A's back-offs of 1280 us, a rewind 141 -> 140 each;
#       as many RNR NAK events as rnr_nak_sent counted;
#     odp (a WRITE into an untouched ODP MR of B): sroce_odp_fault for
#       that MR's key, inside its range, a write, ret 0; an RNR NAK "odp
#       fault"; the MR's details: ODP with its 2 pages present, beside the
#       pinned MR's 16 pinned pages;
#     error (a WRITE with an rkey that names nothing, wr_id 0x5eed): the
#       error completion event on sroce0 for A's QP with that wr_id,
#       REM_ACCESS_ERR, RDMA_WRITE; B's NAK REM_ACCESS sent for PSN 149 and
#       A's received; A's details say error, B's responder failed;
#     closed: each QP's life in the trace, create to destroy, every state
#       change in order; no event lost;
#   - a loss burst (netem: 100 % of RoCE packets lost until a timeout, 10 %
#     for 2 s) under sroce_integrity traffic, every byte checked: timeout
#     events on the run's QPs, exactly as many as retransmit_timeouts
#     counted, each followed by a rewind to a PSN no later than where the
#     requester was; sequence NAK events sent and received exactly as many
#     as counted, at least one, on the run's QPs;
#   - per-QP counters ("rdma statistic qp"): B's QP bound automatically
#     (auto type on), A's by hand (bind); after the traffic A's counter
#     holds its RNR NAKs received (= the events) and its doorbells and not
#     the device-only rx_packets, B's its RNR NAKs sent, and the port's
#     totals count each event once; A unbound by hand and B's counter gone
#     with its QP: the totals stay (ib_core keeps what released counters
#     held; sroce counts a bound QP's events in its counter only);
#   - receive drops: two UD SENDs from a plain UDP socket to a QP number
#     sroce1 does not have, one with the right ICRC and one with a wrong
#     one: each named by sroce_rx_drop (opcode, QP, PSN, "no QP" / "bad
#     ICRC") and counted once;
#   - events off: nothing more is recorded.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"

TRACEFS=/sys/kernel/tracing
# The checks below run in "bash -c" with these functions: INST goes along.
export INST=$TRACEFS/instances/sroce57
RUN=$SROCE_PAIR_DIR/trace
PY=/usr/bin/python3
EVENTS="sroce_cc_rate sroce_cnp_rcvd sroce_cnp_sent sroce_cqe_error sroce_nak_rcvd sroce_nak_sent sroce_odp_fault sroce_qp_create
sroce_qp_destroy sroce_qp_state sroce_req_rewind sroce_retrans_timeout sroce_rnr_backoff
sroce_rnr_nak_sent sroce_rx_drop"

cleanup() {
	exec 7>&-
	[ -d "$INST" ] && { echo 0 >"$INST/events/sroce/enable"; rmdir "$INST"; }
	sroce_reset
}
sroce_reset
trap cleanup EXIT
rm -rf "$RUN"
mkdir -p "$RUN"

# The events recorded so far, without tracefs's header.
events() {
	grep -v '^#' "$INST/trace"
}

# count EVENT PATTERN: events of EVENT whose text matches the ERE PATTERN.
count() {
	events | grep -E ": $1: " | grep -cE "$2"
}

# Resource details -------------------------------------------------------

# qp_fields DEV QPN FIELD...: the QP's fields (JSON of rdma -dd), in order.
qp_fields() {
	local dev=$1 qpn=$2
	shift 2
	rdma -j -dd resource show qp link "$dev/1" lqpn "$qpn" |
		$PY -c 'import json, sys
q = json.load(sys.stdin)[0]
print(" ".join(str(q.get(f, "missing")) for f in sys.argv[1:]))' "$@"
}

# cq_details DEV: "entries:used:overflow:lost" of each CQ of the script,
# by size.
cq_details() {
	rdma -j -dd resource show cq dev "$1" |
		$PY -c 'import json, sys
cqs = [c for c in json.load(sys.stdin) if c.get("comm") == "python3"]
print(" ".join(sorted("%s:%s:%s:%s" % (c["drv_entries"], c["drv_used"],
      c["drv_overflow"], c["drv_lost_cqes"]) for c in cqs)))'
}

# mr_details DEV: "length:type:odp:pinned:present" of each MR of the script.
mr_details() {
	rdma -j -dd resource show mr dev "$1" |
		$PY -c 'import json, sys
mrs = [m for m in json.load(sys.stdin) if m.get("comm") == "python3"]
print(" ".join(sorted("%s:%s:%s:%s:%s" % (m["mrlen"], m["drv_type"], m["drv_odp"],
      m["drv_pinned_pages"], m["drv_present_pages"]) for m in mrs)))'
}

# Per-QP counters ---------------------------------------------------------

# qp_counter DEV QPN [NAME...]: the counter ("rdma statistic qp show")
# QPN of DEV is bound to: its id, then each NAME's value ("-" for one it
# does not show); nothing if the QP is bound to none.
qp_counter() {
	local dev=$1 qpn=$2
	shift 2
	rdma -j statistic qp show link "$dev/1" |
		$PY -c 'import json, sys
def qpns(v):
    if isinstance(v, dict):
        return [q for x in v.values() for q in qpns(x)]
    if isinstance(v, list):
        return [q for x in v for q in qpns(x)]
    return [v] if isinstance(v, int) else []
qpn = int(sys.argv[1])
for c in json.load(sys.stdin):
    if qpn in [q for k, v in c.items() if "qpn" in k.lower() for q in qpns(v)]:
        print(c["cntn"], " ".join(str(c.get(n, "-")) for n in sys.argv[2:]))' "$qpn" "$@"
}

# The scripted connection ------------------------------------------------

# next_step NAME: the script has printed "step NAME ..." (its fields in
# STEP), within 60 s; it is told to go on by the caller (go).
next_step() {
	local i
	for ((i = 0; i < 300; i++)); do
		STEP=$(grep -m1 "^step $1\\b" "$RUN/py.out") && return 0
		kill -0 "$PYPID" 2>/dev/null || break
		sleep 0.2
	done
	echo "no step $1; the script said:"
	cat "$RUN/py.out"
	return 1
}

# field NAME: a key=value of the last step's line.
field() {
	sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p" <<<"$STEP"
}

go() {
	echo go >&7
}

# qp_life DEV QPN: the QP's create, state changes and destroy in the trace.
qp_life() {
	events | grep -E ": sroce_qp_(create|state|destroy): $1 qpn $2 " |
		sed -E 's/.*sroce_qp_create: .*/create/;
			s/.*sroce_qp_state: [^ ]+ qpn [0-9]+ [A-Z_]+ ([A-Z]+) -> ([A-Z]+)$/\1->\2/;
			s/.*sroce_qp_destroy: [^ ]+ qpn [0-9]+ [A-Z_]+ ([A-Z]+) .*/destroy:\1/' |
		tr '\n' ' ' | sed 's/ $//'
}

# The loss burst ---------------------------------------------------------

# netem_roce ARGS...: netem on RoCE v2 packets (UDP 4791) only, both ways
# (as in 36-faults.sh: the TCP connection sroce_integrity sets up with is
# left alone); netem_change ARGS... changes it.
netem_roce() {
	local ns dev
	for ns in nsA:vethA nsB:vethB; do
		dev=${ns#*:} ns=${ns%:*}
		tc -n "$ns" qdisc replace dev "$dev" root handle 1: prio bands 4 &&
		tc -n "$ns" qdisc add dev "$dev" parent 1:4 handle 40: netem "$@" &&
		tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:4 ||
			return 1
	done
}

netem_change() {
	tc -n nsA qdisc change dev vethA parent 1:4 handle 40: netem "$@" &&
	tc -n nsB qdisc change dev vethB parent 1:4 handle 40: netem "$@"
}

netem_off() {
	tc -n nsA qdisc del dev vethA root 2>/dev/null
	tc -n nsB qdisc del dev vethB root 2>/dev/null
	true
}

# Both devices' COUNTER, added.
counted() {
	echo $(($(sroce_counter sroce0 "$1") + $(sroce_counter sroce1 "$1")))
}

# sroce_integrity client (sroce0) and server (sroce1), a loss burst once
# data flows: everything lost until a retransmission timer has fired (3 s
# at most), then 10 % for 2 s; both sides finish with every byte verified.
# Their QPs time out after 537 ms (timeout 17), 7 times at most: each tc
# command takes a while under TCG, and the burst must not outlast them.
# On the debug kernel a tc command takes seconds (the burst lasted 11.6 s,
# 9 timeouts, and the client's QP ran out of retries): 2.1 s there
# (timeout 19), and up to 6 s to see the first timer fire.
burst_traffic() {
	local bin=$SROCE_BIN/sroce_integrity rx0 i rc=0 to t0=$SECONDS
	local qto=17 polls=30
	sroce_debug_kernel && qto=19 polls=60
	ip netns exec nsB timeout 240 "$bin" -s -d sroce1 -g "$SROCE_GID_B" -w 30 --timeout $qto \
		>"$RUN/server" 2>&1 </dev/null &
	local spid=$!
	vm_wait_listen -n nsB 18525 30 || return 1
	ip netns exec nsA timeout 240 "$bin" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" \
		-w 30 --timeout $qto -n 30 --quick >"$RUN/client" 2>&1 </dev/null &
	local cpid=$!
	rx0=$(sroce_counter sroce1 rx_packets)
	for ((i = 0; i < 200; i++)); do
		[ "$(sroce_counter sroce1 rx_packets)" -gt $((rx0 + 200)) ] && break
		sleep 0.1
	done
	to=$(counted retransmit_timeouts) t1=$EPOCHREALTIME
	netem_roce loss 100% || return 1
	for ((i = 0; i < polls; i++)); do
		sleep 0.1
		[ "$(counted retransmit_timeouts)" -gt "$to" ] && break
	done
	echo "all lost for $(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s: $(($(counted retransmit_timeouts) - to)) timeouts"
	netem_change loss 10% && sleep 2
	netem_off
	echo "burst over $((SECONDS - t0)) s into the run"
	wait "$cpid" || rc=$?
	wait "$spid" || rc=$?
	echo "traffic ended after $((SECONDS - t0)) s"
	tail -n 2 "$RUN/client" "$RUN/server"
	[ "$rc" = 0 ] &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' "$RUN/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' "$RUN/server"
}

# "DEV:QPN" of each QP created in the trace so far, one a line.
created_qps() {
	events | sed -nE 's/.*sroce_qp_create: ([^ ]+) qpn ([0-9]+) .*/\1:\2/p' | sort -u
}

# on_run_qps EVENT PATTERN: EVENT lines matching PATTERN exist, and each
# names a QP created in this run.
on_run_qps() {
	local lines qp bad=0
	lines=$(events | grep -E ": $1: " | grep -E "$2")
	[ -n "$lines" ] || { echo "no $1 matching '$2'"; return 1; }
	head -n 3 <<<"$lines"
	for qp in $(sed -nE 's/.*: [a-z_]+: ([^ ]+) qpn ([0-9]+) .*/\1:\2/p' <<<"$lines" | sort -u); do
		grep -qx "$qp" <<<"$CREATED" || { echo "$qp: not created in this run"; bad=1; }
	done
	return $bad
}

# Every TIMEOUT rewind goes back, or stays: to is not after from (24-bit).
rewinds_go_back() {
	local n=0 from to
	while read -r from to; do
		n=$((n + 1))
		(( ((from - to) & 0xffffff) < 0x800000 )) ||
			{ echo "rewind $from -> $to goes forward"; return 1; }
	done < <(events | sed -nE 's/.*sroce_req_rewind: .* psn ([0-9]+) -> ([0-9]+) .* TIMEOUT .*/\1 \2/p')
	echo "$n TIMEOUT rewinds"
	[ "$n" -gt 0 ]
}

# Two UD SEND_ONLY datagrams from a plain UDP socket in nsA (port 47091)
# to QP 0xabcde of sroce1, which no sroce QP can be (beyond 16 + 16384):
# PSN 77 sealed with the ICRC sroce1 will compute (the IPv4 header a
# DF-marked datagram of an unconnected socket gets: ID 0, DF; what the
# ICRC masks need not be known), PSN 78 with that ICRC plus one.
send_to_no_qp() {
	ip netns exec nsA $PY - <<'PYEOF'
import socket, struct, zlib
src, dst, sport = '10.77.0.1', '10.77.0.2', 47091
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, sport))
s.setsockopt(socket.IPPROTO_IP, 10, 2)          # IP_MTU_DISCOVER: DO (DF)
for psn, delta in ((77, 0), (78, 1)):
    bth = struct.pack('>BBHII', 0x64, 0, 0xffff, 0xabcde, psn)
    deth = struct.pack('>II', 0x11111111, 1)
    body = bth + deth + bytes(8)
    ulen = 8 + len(body) + 4
    pseudo = (b'\xff' * 8 +
              struct.pack('>BBHHHBBH4s4s', 0x45, 0xff, 20 + ulen, 0, 0x4000,
                          0xff, 17, 0xffff, socket.inet_aton(src),
                          socket.inet_aton(dst)) +
              struct.pack('>HHHH', sport, 4791, ulen, 0xffff) +
              body[:4] + b'\xff' + body[5:])
    icrc = (zlib.crc32(pseudo) + delta) & 0xffffffff
    s.sendto(body + struct.pack('<I', icrc), (dst, 4791))
PYEOF
}

tap_plan 29
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"
mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS" || tap_bail "no tracefs"

tap_eq "tracefs lists the sroce events" \
	"$(find "$TRACEFS/events/sroce" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' |
		LC_ALL=C sort | xargs)" "$(xargs <<<"$EVENTS")"
tap_check "their format files print numbers, no enum names (perf, trace-cmd decode them)" \
	bash -c "grep -h '^print fmt' $TRACEFS/events/sroce/*/format | wc -l | grep -qx 15 &&
		! grep -H '^print fmt' $TRACEFS/events/sroce/*/format | grep -E 'IB_[A-Z]|SROCE_'"

mkdir "$INST" && echo 8192 >"$INST/buffer_size_kb" &&
	echo 1 >"$INST/events/sroce/enable" || tap_bail "trace instance $INST"

rnr0=$(sroce_counter sroce1 rnr_nak_sent)
tap_check "per-QP counters: sroce1 binds each new QP automatically (a counter per QP type)" \
	rdma statistic qp set link sroce1/1 auto type on
mkfifo "$RUN/ctl"
$PY "$SROCE_REPO/tests/tools/sroce_trace.py" sroce0 "$SROCE_GID_A" sroce1 "$SROCE_GID_B" \
	<"$RUN/ctl" >"$RUN/py.out" 2>&1 &
PYPID=$!
exec 7>"$RUN/ctl"

next_step ready || tap_bail "the scripted connection did not start"
QA=$(field qpn_a) QB=$(field qpn_b)
tap_diag "A: sroce0 qpn $QA, B: sroce1 qpn $QB"
tap_eq "ready: A's details: requester idle, sq_psn = sent_psn = una = 100, 7 retries and 7 RNR retries left" \
	"$(qp_fields sroce0 "$QA" state drv_req_state drv_sq_psn drv_sent_psn drv_una drv_retry_left drv_rnr_retry_left drv_wqes_inflight)" \
	"RTS idle 100 100 100 7 7 0"
tap_eq "... B's: responder idle, expects PSN 100, path MTU 1024" \
	"$(qp_fields sroce1 "$QB" drv_resp_state drv_resp_epsn drv_resp_msn drv_mtu)" "idle 100 0 1024"
rdma statistic qp bind link sroce0/1 lqpn "$QA"
CA=$(qp_counter sroce0 "$QA" | cut -d' ' -f1) CB=$(qp_counter sroce1 "$QB" | cut -d' ' -f1)
tap_check "... A's QP bound by hand to a counter of its own ($CA), B's bound at INIT ($CB)" \
	test -n "$CA" -a -n "$CB"
rx0=$(sroce_counter sroce0 rnr_nak_received)
go

next_step traffic || tap_bail "the scripted traffic failed"
tap_eq "traffic (41 packets): A's sq_psn, sent_psn and una 141, nothing in flight; B expects 141, 11 messages" \
	"$(qp_fields sroce0 "$QA" drv_sq_psn drv_sent_psn drv_una drv_wqes_inflight drv_rd_atomic) $(qp_fields sroce1 "$QB" drv_resp_epsn drv_resp_msn)" \
	"141 141 141 0 0 141 11"
tap_eq "... B's CQs: the receive CQ (16) holds the completion left unpolled, the send CQ (64) none; no overflow" \
	"$(cq_details sroce1)" "16:1:0:0 64:0:0:0"
TAP_VERBOSE=1 tap_check "... RNR NAKs for the SEND (psn 140, no receive WQE, timer 14 = 1280 us) and A's back-offs of 1280 us, each a rewind 141 -> 140" \
	bash -c "$(declare -f events count); set -x;
		n=\$(count sroce_rnr_nak_sent 'sroce1 qpn $QB psn 140 RNR_NAK timer 14 \\(1280 us\\) no receive WQE') &&
		[ \$n -gt 0 ] &&
		[ \$(count sroce_rnr_backoff 'sroce0 qpn $QA psn 140 wait 1280 us \\(timer 14\\) rnr_left 7') = \$n ] &&
		[ \$(count sroce_nak_rcvd 'sroce0 qpn $QA psn 140 una 140 RNR_NAK 14 \\(timer\\)') = \$n ] &&
		[ \$(count sroce_req_rewind 'sroce0 qpn $QA psn 141 -> 140 una 140 RNR_NAK ') = \$n ]"
# qp_counters_ok: A's counter has the RNR NAKs it received (the events)
# and its doorbells, no rx_packets (a device counter); B's the RNR NAKs
# it sent; sroce0's total rose by A's count, once.
qp_counters_ok() {
	local n m a b
	n=$(count sroce_nak_rcvd "sroce0 qpn $QA .*RNR_NAK") m=$(count sroce_rnr_nak_sent "sroce1 qpn $QB ")
	a=$(qp_counter sroce0 "$QA" rnr_nak_received doorbells rx_packets)
	b=$(qp_counter sroce1 "$QB" rnr_nak_sent)
	echo "events: $n RNR NAKs received, $m sent; A's counter: $a; B's: $b"
	echo "sroce0 rnr_nak_received: $rx0 -> $(sroce_counter sroce0 rnr_nak_received)"
	[ "$n" -gt 0 ] && [ "$m" = "$n" ] &&
	read -r _ ar ad ax <<<"$a" && [ "$ar" = "$n" ] && [ "$ad" -gt 0 ] && [ "$ax" = - ] &&
	[ "$b" = "$CB $m" ] &&
	[ $(($(sroce_counter sroce0 rnr_nak_received) - rx0)) = "$n" ]
}
TAP_VERBOSE=1 tap_check "... per-QP counters: A's has its RNR NAKs received and doorbells, no device counter; B's its RNR NAKs sent; the port's total counts each once" \
	qp_counters_ok
go

next_step odp || tap_bail "the ODP WRITE failed"
rkey=$(field rkey) addr=$(field addr) len=$(field len)
TAP_VERBOSE=1 tap_check "odp: sroce_odp_fault for the MR's key $rkey inside [$addr, +$len), a write, ret 0; an RNR NAK 'odp fault' meanwhile" \
	bash -c "$(declare -f events count); set -x;
		line=\$(events | grep -E ': sroce_odp_fault: sroce1 key $rkey iova 0x[0-9a-f]+ len [0-9]+ write ret 0 ' | head -n1) &&
		iova=\$(sed -E 's/.* iova (0x[0-9a-f]+) len ([0-9]+) .*/\\1/' <<<\"\$line\") &&
		n=\$(sed -E 's/.* len ([0-9]+) .*/\\1/' <<<\"\$line\") &&
		(( iova >= $addr && iova + n <= $addr + $len )) &&
		[ \$(count sroce_rnr_nak_sent 'sroce1 qpn $QB .* odp fault') -gt 0 ]"
tap_eq "... B's MRs: the ODP one with its 2 pages present, the pinned one 16 pages pinned" \
	"$(mr_details sroce1)" "65536:user:0:16:0 8192:user:1:0:2"
tap_eq "... as many RNR NAK events as sroce1 counted (rnr_nak_sent)" \
	"$(count sroce_rnr_nak_sent "sroce1 qpn $QB ")" "$(($(sroce_counter sroce1 rnr_nak_sent) - rnr0))"
go

next_step error || tap_bail "the bad rkey's WRITE did not fail as it should"
TAP_VERBOSE=1 tap_check "error: the error completion event on sroce0 for qpn $QA: wr_id 0x5eed REM_ACCESS_ERR RDMA_WRITE" \
	grep -E ": sroce_cqe_error: sroce0 cqn [0-9]+ qpn $QA wr_id 0x5eed REM_ACCESS_ERR RDMA_WRITE " "$INST/trace"
TAP_VERBOSE=1 tap_check "... B sent NAK REM_ACCESS for psn 149, A received it" \
	bash -c "grep -E ': sroce_nak_sent: sroce1 qpn $QB psn 149 epsn 149 NAK REM_ACCESS$' $INST/trace &&
		grep -E ': sroce_nak_rcvd: sroce0 qpn $QA psn 149 una 149 NAK 2 \\(REM_ACCESS\\)$' $INST/trace"
tap_eq "... details: A in ERR, its requester in error; B's responder failed" \
	"$(qp_fields sroce0 "$QA" state drv_req_state) $(qp_fields sroce1 "$QB" state drv_resp_state)" \
	"ERR error ERR failed"
tot0=$(sroce_counter sroce0 rnr_nak_received)
rdma statistic qp unbind link sroce0/1 cntn "$CA" lqpn "$QA"
tap_eq "... A unbound by hand: its counter is gone, the port's total stays" \
	"$(qp_counter sroce0 "$QA")/$(sroce_counter sroce0 rnr_nak_received)" "/$tot0"
tot1=$(sroce_counter sroce1 rnr_nak_sent)
go

next_step closed || tap_bail "the QPs were not destroyed"
tap_eq "closed: A's life in the trace, create to destroy" "$(qp_life sroce0 "$QA")" \
	"create RESET->INIT INIT->RTR RTR->RTS RTS->ERR destroy:ERR"
tap_eq "... and B's" "$(qp_life sroce1 "$QB")" \
	"create RESET->INIT INIT->RTR RTR->RTS RTS->ERR destroy:ERR"
tap_eq "... B's automatic counter went with its QP, the port's total stays" \
	"$(rdma -j statistic qp show link sroce1/1 | $PY -c 'import json, sys; t = sys.stdin.read().strip(); print(len(json.loads(t)) if t else 0)')/$(sroce_counter sroce1 rnr_nak_sent)" \
	"0/$tot1"
wait "$PYPID"
tap_eq "the script saw every verb end as it should (exit status)" "$?" 0
exec 7>&-
tap_check "no event was lost (entries in the buffer = entries written)" \
	grep -Eq '^# entries-in-buffer/entries-written: ([0-9]+)/\1 ' "$INST/trace"

echo >"$INST/trace"
to0=$(counted retransmit_timeouts) sn0=$(counted seq_nak_sent) sr0=$(counted seq_nak_received)
TAP_VERBOSE=1 tap_check "loss burst (100 % until a timeout, 10 % for 2 s) under sroce_integrity: every byte right" \
	burst_traffic
CREATED=$(created_qps)
tap_diag "QPs created: $(tr '\n' ' ' <<<"$CREATED")"
tap_check "retransmission timeouts traced on the run's QPs, as many as counted ($(($(counted retransmit_timeouts) - to0)))" \
	bash -c "$(declare -f events count on_run_qps); CREATED='$CREATED';
		on_run_qps sroce_retrans_timeout 'retry_left [0-6]\$' &&
		[ \$(count sroce_retrans_timeout 'retry_left [0-9]+\$') = $(($(counted retransmit_timeouts) - to0)) ]"
TAP_VERBOSE=1 tap_check "... each followed by a rewind no later than where the requester was" \
	bash -c "$(declare -f events on_run_qps rewinds_go_back); CREATED='$CREATED';
		on_run_qps sroce_req_rewind ' TIMEOUT ' && rewinds_go_back"
TAP_VERBOSE=1 tap_check "sequence NAKs: sent and received on the run's QPs, as many as counted ($(($(counted seq_nak_sent) - sn0)) sent, $(($(counted seq_nak_received) - sr0)) received)" \
	bash -c "$(declare -f events count on_run_qps); CREATED='$CREATED';
		on_run_qps sroce_nak_sent 'NAK PSN_SEQ_ERR\$' &&
		[ \$(count sroce_nak_sent 'NAK PSN_SEQ_ERR\$') = $(($(counted seq_nak_sent) - sn0)) ] &&
		[ \$(count sroce_nak_rcvd 'NAK 0 \\(PSN_SEQ_ERR\\)\$') = $(($(counted seq_nak_received) - sr0)) ]"

echo >"$INST/trace"
nq0=$(sroce_counter sroce1 rx_drop_no_qp) ic0=$(sroce_counter sroce1 rx_drop_icrc)
send_to_no_qp
sleep 0.5
TAP_VERBOSE=1 tap_check "receive drops named: sroce1's sroce_rx_drop for opcode 0x64, dqpn 0xabcde, PSN 77 'no QP' and PSN 78 'bad ICRC'" \
	bash -c "$(declare -f events count);
		events | grep ': sroce_rx_drop: ';
		[ \$(count sroce_rx_drop 'sroce1 opcode 0x64 dqpn 703710 psn 77 dropped: no QP\$') = 1 ] &&
		[ \$(count sroce_rx_drop 'sroce1 opcode 0x64 dqpn 703710 psn 78 dropped: bad ICRC\$') = 1 ] &&
		[ \$(count sroce_rx_drop .) = 2 ]"
tap_eq "... counted once each (rx_drop_no_qp, rx_drop_icrc)" \
	"$(($(sroce_counter sroce1 rx_drop_no_qp) - nq0)) $(($(sroce_counter sroce1 rx_drop_icrc) - ic0))" "1 1"

echo 0 >"$INST/events/sroce/enable"
echo >"$INST/trace"
sroce_pair nsB nsA 18520 \
	ibv_rc_pingpong -p 18520 -d sroce1 -g "$SROCE_GID_B" -n 10 -- \
	ibv_rc_pingpong -p 18520 -d sroce0 -g "$SROCE_GID_A" -n 10 10.77.0.2 >/dev/null 2>&1
tap_eq "events off: a QP's whole life records nothing" "$(events | wc -l)" 0
tap_done
