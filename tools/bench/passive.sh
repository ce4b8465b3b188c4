#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The passive end's CPU (issue 24): what a transfer costs the machine that
# only receives it. One guest per end (tools/vm/run2, one vCPU each, the
# guests joined by QEMU's Ethernet link), so each end's CPU is its own
# guest's and nothing of one end's work is counted to the other, as it
# would be in the bench's one guest (on veth the receive runs in the
# sender's softirq). Guest A drives, guest B is passive:
#
#   ib_write_bw 64 KiB  A writes into B's memory; B's server only waits
#   ib_read_bw 64 KiB   A reads B's memory; B's server only waits
#   iperf3              A sends, B's iperf3 server receives (TCP, one stream)
#
# For each, ROUNDS times: both guests read /proc/stat WIN0 and WIN1
# seconds into a DUR-second run; A prints the run's bandwidth and its busy
# share, B its busy share, one line each:
#
#   passive: test=ib_write_bw round=1 side=a busy=0.8731 mibs=25.40
#   passive: test=ib_write_bw round=1 side=b busy=0.4120
#
# tools/bench/report.py turns them into CPU s/GB per end (busy share x one
# vCPU over bytes per second). Run through tools/bench/bench --passive.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../vm/netlib.sh"
source "$here/../../tests/vm/sroce.sh"

role=${VM_ROLE:?run me through tools/vm/run2 (tools/bench/bench --passive)}
ROUNDS=${BENCH_PASSIVE_ROUNDS:-3}
DUR=${BENCH_PASSIVE_DUR:-12}
WIN0=4 WIN1=10
TESTS=(ib_write_bw ib_read_bw iperf3)

sroce_load && rdma link add sroce0 type sroce netdev "$VM_IFNAME" || exit 1
GID=$(sroce_wait_gid sroce0 "$(sroce_ipv4_gid "$VM_LOCAL_IP")") || exit 1
echo "passive: side=$role kernel=$(uname -r) mtu=$(cat "/sys/class/net/$VM_IFNAME/mtu")"

# busy, total ticks of the cpu line
procstat() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }

# window: sleep to WIN0, read, sleep to WIN1, read; print the busy share.
window() {
	local start=$1 b0 t0 b1 t1
	sleep "$(awk -v s="$start" -v n="$EPOCHREALTIME" -v w=$WIN0 'BEGIN{d = s + w - n; print (d > 0 ? d : 0)}')"
	read -r b0 t0 < <(procstat)
	sleep $((WIN1 - WIN0))
	read -r b1 t1 < <(procstat)
	awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) 'BEGIN{printf "%.4f", (t > 0 ? b / t : 0)}'
}

server() {
	case $1 in
	iperf3) echo iperf3 -s -1 -p 5201 ;;
	*) echo "$1" -d sroce0 -x "$GID" -F -s 65536 -D "$DUR" -p 18515 ;;
	esac
}

client() {
	case $1 in
	iperf3) echo iperf3 -c "$VM_PEER_IP" -p 5201 -t "$DUR" -J ;;
	*) echo "$1" -d sroce0 -x "$GID" -F -s 65536 -D "$DUR" -p 18515 "$VM_PEER_IP" ;;
	esac
}

port() { [ "$1" = iperf3 ] && echo 5201 || echo 18515; }

mibs_of() {
	if [ "$1" = iperf3 ]; then
		python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]["sum_received"]
print("%.2f" % (e["bytes"] / e["seconds"] / 1048576))' <"$2" 2>/dev/null
	else
		awk '$1 == 65536 && NF >= 4 {v=$4} END{if (v != "") print v}' "$2"
	fi
}

i=0 fails=0
for r in $(seq "$ROUNDS"); do
	for t in "${TESTS[@]}"; do
		i=$((i + 1))
		if [ "$role" = b ]; then
			# shellcheck disable=SC2046 # the command line's words
			timeout $((DUR + 90)) $(server "$t") >/tmp/passive-server.out 2>&1 </dev/null &
			pid=$!
			if ! vm_wait_listen "$(port "$t")" 60 || ! vm_announce $((7300 + i)); then
				fails=$((fails + 1))
				continue
			fi
			start=$EPOCHREALTIME
			busy=$(window "$start")
			wait "$pid" || { fails=$((fails + 1)); tail -5 /tmp/passive-server.out; }
			kill "$VM_ANNOUNCE_PID" 2>/dev/null
			echo "passive: test=$t round=$r side=b busy=$busy"
		else
			vm_wait_tcp "$VM_PEER_IP" $((7300 + i)) 120 || { fails=$((fails + 1)); continue; }
			start=$EPOCHREALTIME
			# shellcheck disable=SC2046
			timeout $((DUR + 60)) $(client "$t") >/tmp/passive-client.out 2>&1 </dev/null &
			pid=$!
			busy=$(window "$start")
			if wait "$pid" && mibs=$(mibs_of "$t" /tmp/passive-client.out) && [ -n "$mibs" ]; then
				echo "passive: test=$t round=$r side=a busy=$busy mibs=$mibs"
			else
				fails=$((fails + 1))
				tail -5 /tmp/passive-client.out
			fi
		fi
	done
done
echo "passive: side=$role failed=$fails"
exit $((fails > 0))
