# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# Packet captures for the VM tests (sourced): tcpdump in a namespace,
# stopped only once it has written everything its filter took, and what
# tshark decodes from the file. One capture at a time; a script's EXIT
# trap calls capture_kill.

CAPTURE_PID=

# capture_start NS DEV FILE FILTER: tcpdump of FILTER on DEV (in NS) into
# FILE, once it listens (its messages go to FILE.log).
capture_start() {
	local i
	: >"$3.log"
	ip netns exec "$1" tcpdump -i "$2" -n -U -B 16384 -w "$3" "$4" \
		2>"$3.log" &
	CAPTURE_PID=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "listening on" "$3.log" && return 0
		sleep 0.1
	done
	cat "$3.log"
	return 1
}

# capture_stop FILE: stop tcpdump once it has written all it was given
# (under TCG it drains its socket well after the traffic: stopped at
# once, it leaves packets the filter took unwritten); nothing dropped,
# everything the filter took written. "All" is a file that has not grown
# for 2 s: libpcap's ring hands a partly filled block over only after
# its 1 s timeout, so a file still for 0.5 s could leave a block behind
# (55's rping capture once ended with 7 of 125 packets written).
# Immediate mode instead drops packets: tcpdump woken per packet does not
# keep up under TCG.
capture_stop() {
	local i still=0 size=-1 now got took
	for ((i = 0; i < 120 && still < 4; i++)); do
		now=$(stat -c %s "$1")
		if [ "$now" = "$size" ]; then still=$((still + 1)); else still=0; fi
		size=$now
		sleep 0.5
	done
	kill -INT "$CAPTURE_PID"
	wait "$CAPTURE_PID"
	CAPTURE_PID=
	cat "$1.log"
	got=$(sed -n 's/^\([0-9]*\) packets\{0,1\} captured$/\1/p' "$1.log")
	took=$(sed -n 's/^\([0-9]*\) packets\{0,1\} received by filter$/\1/p' "$1.log")
	grep -Eq "^0 packets dropped by kernel" "$1.log" &&
	[ -n "$got" ] && [ "$got" = "$took" ]
}

capture_kill() {
	[ -z "$CAPTURE_PID" ] || kill "$CAPTURE_PID" 2>/dev/null
	CAPTURE_PID=
}

# capture_opcodes FILE: the BTH opcodes tshark decodes in FILE, one per line.
capture_opcodes() {
	tshark -r "$1" -T fields -e infiniband.bth.opcode 2>/dev/null | sort -un
}

# has_opcodes LIST WANT...: every WANT is a line of LIST.
has_opcodes() {
	local list=$1 o rc=0
	shift
	echo "opcodes seen: $(tr '\n' ' ' <<<"$list")"
	for o in "$@"; do
		grep -qx "$o" <<<"$list" || { echo "opcode $o missing"; rc=1; }
	done
	return $rc
}
