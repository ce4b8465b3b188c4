#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Hostile packets while real traffic runs: sroce_integrity between sroce0
# (nsA, 10.77.0.1) and sroce1 (nsB, 10.77.0.2), and meanwhile
# tests/tools/sroce_pktfuzz in nsA sends crafted RoCEv2 datagrams with a
# correct ICRC to sroce1 (random and mutated headers, every opcode, bad
# lengths, pads, P_Keys, dead QPNs, far-out PSNs at the live QPs, in-window
# requests and responses at its own victim QPs on sroce1, floods of ACKs,
# NAKs and duplicate READs). Then: the live run verified every byte, the
# counters of sroce1 account for the garbage (exactly, for the classes
# whose fate is certain), and a fresh connection works. The VM runner
# fails the script on any BUG/WARNING/oops in the kernel log.
#
# PKTFUZZ_COUNT packets over IPv4 (default 400000: about 20 s at 20,000
# packets/s under TCG), then PKTFUZZ_COUNT6 over IPv6 (fd77::1 -> fd77::2,
# default 80000); the script takes about 70 s. Each run draws a new seed,
# so CI's runs add up to far more. A longer run:
#   tools/check --vm-only --env PKTFUZZ_COUNT=3000000 \
#	--env PKTFUZZ_LIVE_MAX=600 --env RUN_ALL_TIMEOUT=900 46-pktfuzz.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

COUNT=${PKTFUZZ_COUNT:-400000}
COUNT6=${PKTFUZZ_COUNT6:-80000}	# then over IPv6
# The live run goes on (round after round, new data each) until the fuzzer
# is done, at most LIVE_MAX seconds.
LIVE_MAX=${PKTFUZZ_LIVE_MAX:-240}
if sroce_debug_kernel; then	# KASAN: about 1,000 packets/s
	COUNT=${PKTFUZZ_COUNT:-150000}
	COUNT6=${PKTFUZZ_COUNT6:-30000}
	LIVE_MAX=${PKTFUZZ_LIVE_MAX:-1200}
fi
# PKTFUZZ_ZERO_COPY=0|1: sroce's zero_copy_tx for the run (default: as is).
zc_param=/sys/module/sroce/parameters/zero_copy_tx
SEED=${PKTFUZZ_SEED:-$RANDOM$RANDOM}
BIN=$SROCE_BIN/sroce_integrity
FUZZ=$SROCE_BIN/sroce_pktfuzz
D=/tmp/sroce-pktfuzz
# What a packet sroce1 did not take can end up as.
DROPS="rx_drop_malformed rx_drop_icrc rx_drop_no_qp rx_drop_qp_state
stale_responses duplicate_requests rx_drop_out_of_sequence"

# snapshot DEV: its hw counters, "name value" lines.
snapshot() {
	local f
	for f in /sys/class/infiniband/"$1"/ports/1/hw_counters/*; do
		echo "${f##*/} $(cat "$f")"
	done
}

# Packets the kernel's input backlogs dropped (/proc/net/softnet_stat).
backlog_drops() {
	local _ d n=0
	while read -r _ d _; do n=$((n + 16#$d)); done </proc/net/softnet_stat
	echo "$n"
}

# counter_delta NAME [DEV]: its growth during the fuzz (default sroce1).
counter_delta() {
	local a b dev=${2:-sroce1}
	a=$(awk -v n="$1" '$1 == n {print $2}' "$D/before.$dev")
	b=$(awk -v n="$1" '$1 == n {print $2}' "$D/after.$dev")
	echo $((${b:-0} - ${a:-0}))
}

# expected NAME: what the fuzzer runs say counter NAME must grow by.
expected() {
	awk -v n="$1" '$1 == "expect" && $2 == n {s += $3} END {print s + 0}' \
		"$D/fuzz4" "$D/fuzz6"
}

# fuzz OUT DST SRC VICTIM_GID COUNT: one sroce_pktfuzz run from nsA.
fuzz() {
	# shellcheck disable=SC2086
	ip netns exec nsA "$FUZZ" -t "$2" -s "$3" -n "$5" --seed "$SEED" --mtu 1024 \
		$live --victim sroce1 --victim-gid "$4" --while-pid "$cli" -o "$D/$1"
}

# The RC QPs of the live run on sroce1, as --live QPN:RQ_PSN:SQ_PSN.
live_qps() {
	rdma resource show qp -dd 2>/dev/null | awk '
	/link sroce1\// && / type RC / && / state RTS / && /comm sroce_integrit/ {
		for (i = 1; i < NF; i++) {
			if ($i == "lqpn") q = $(i + 1)
			if ($i == "rq-psn") r = $(i + 1)
			if ($i == "sq-psn") s = $(i + 1)
		}
		printf "--live %s:%s:%s ", q, r, s
	}'
}

tap_plan 11
sroce_two_devices 1500 || tap_bail "set-up at MTU 1500"
GID_B6=$(sroce_wait_gid sroce1 fd77:0000:0000:0000:0000:0000:0000:0002) ||
	tap_bail "sroce1's IPv6 GID"
[ -z "${PKTFUZZ_ZERO_COPY:-}" ] || echo "$PKTFUZZ_ZERO_COPY" >"$zc_param"
mkdir -p "$D"
rm -f "$D"/*

# The live run, in the background: sroce1 serves, sroce0 drives.
ip netns exec nsB timeout $((LIVE_MAX + 300)) "$BIN" -s -d sroce1 -g "$SROCE_GID_B" -w 120 \
	>"$D/server" 2>&1 </dev/null &
srv=$!
vm_wait_listen -n nsB 18525 30 || tap_bail "integrity server"
ip netns exec nsA timeout $((LIVE_MAX + 300)) "$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" \
	-w 120 -m 1024 --quick --seconds "$LIVE_MAX" --stop-file "$D/stop" \
	>"$D/client" 2>&1 </dev/null &
cli=$!
live=""
for ((i = 0; i < 100; i++)); do
	live=$(live_qps)
	[ -n "$live" ] && break
	sleep 0.2
done
tap_check "the live run's RC QP on sroce1 is up: $live" test -n "$live"

snapshot sroce0 >"$D/before.sroce0"
snapshot sroce1 >"$D/before.sroce1"
softnet_before=$(backlog_drops)
t0=$SECONDS
tap_check "sroce_pktfuzz over IPv4: $COUNT packets, seed $SEED" \
	fuzz fuzz4 10.77.0.2 10.77.0.1 "$SROCE_GID_B" "$COUNT"
tap_check "... over IPv6: $COUNT6 packets" \
	fuzz fuzz6 fd77::2 fd77::1 "$GID_B6" "$COUNT6"
t1=$SECONDS
touch "$D/stop"
sleep 1	# let the victims' last answers and timers settle
snapshot sroce0 >"$D/after.sroce0"
snapshot sroce1 >"$D/after.sroce1"
softnet_after=$(backlog_drops)
tap_diag "$(cat "$D/fuzz4" "$D/fuzz6" | grep -v '^expect ')"

wait "$cli"
crc=$?
wait "$srv"
src=$?
tap_diag "fuzz $((t1 - t0)) s; the live run ended $((SECONDS - t0)) s after the fuzz began"
sent=$(awk '/^pktfuzz: [0-9]+ packets/ {s += $2} END {print s + 0}' "$D/fuzz4" "$D/fuzz6")
tap_check "all $((COUNT + COUNT6)) packets sent while the live run went on" \
	bash -c "[ '$sent' = '$((COUNT + COUNT6))' ] && ! grep -q 'has ended' '$D/fuzz4' '$D/fuzz6'"
tail -n 4 "$D/client" | sed 's/^/# client: /'
# The fuzzer keeps 2^22 PSNs away from where the live QP started: the
# live run must not have moved that far (4 GiB at MTU 1024).
live_bytes=$(awk '/^integrity: / {print $4}' "$D/client")
tap_check "the live run verified every byte ($(grep -c '^# client: round' "$D/client") rounds after the first)" \
	bash -c "[ $crc = 0 ] && [ $src = 0 ] && (( ${live_bytes:-0} / 1024 < 1 << 22 )) &&
		 grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors\$' '$D/client' &&
		 grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors\$' '$D/server' ||
		 { tail -n 20 '$D/client'; tail -n 20 '$D/server'; exit 1; }"

# Per-reason table (sroce1), then the checks.
{
	printf '%-26s %12s\n' counter delta
	for c in $(awk '{print $1}' "$D/after.sroce1"); do
		d=$(counter_delta "$c")
		[ "$d" = 0 ] || printf '%-26s %12d\n' "$c" "$d"
	done
	echo "backlog drops (softnet_stat) $((softnet_after - softnet_before))"
} >"$D/table"
tap_diag "sroce1 hw counters, growth during the fuzz:" "$(cat "$D/table")"

# Beyond them, only stale zero-copy copies of the live run may fail their
# ICRC: a packet still queued (an original overtaken by its resend, or a
# resend) when its WQE completed carries pages the application has since
# rewritten; it is a duplicate, and dropping it is right. Without zero copy
# (PKTFUZZ_ZERO_COPY=0) the figure is exact.
icrc=$(counter_delta rx_drop_icrc)
bad=$(expected rx_drop_icrc)
resent=$(counter_delta retransmitted_packets sroce0)
[ "$(cat "$zc_param")" = Y ] || resent=0
tap_check "every bad-ICRC packet dropped on its ICRC (+$icrc, $bad sent; stale copies allowed: $resent)" \
	bash -c "(( $icrc >= $bad && $icrc - $bad <= $resent ))"
tap_check "malformed ones counted as malformed (at least)" \
	bash -c "echo 'rx_drop_malformed +$(counter_delta rx_drop_malformed), malformed sent $(expected rx_drop_malformed)';
		 (( $(counter_delta rx_drop_malformed) >= $(expected rx_drop_malformed) ))"
tap_check "dead QPNs counted as no QP (at least)" \
	bash -c "echo 'rx_drop_no_qp +$(counter_delta rx_drop_no_qp), dead_qp sent $(expected rx_drop_no_qp)';
		 (( $(counter_delta rx_drop_no_qp) >= $(expected rx_drop_no_qp) ))"
total=0
for c in $DROPS; do total=$((total + $(counter_delta "$c"))); done
# The rest execute (at the victims) or earn an ACK or NAK; the live run's
# own duplicates count too, so this is a floor, not an exact figure.
tap_check "drops account for the garbage: $total of $sent sent (>= 90%)" \
	bash -c "(( $sent > 0 && $total * 10 >= $sent * 9 ))"

tap_check "afterwards a fresh connection works (integrity --quick, read and write)" \
	sroce_pair nsB nsA 18526 \
	"$BIN" -s -d sroce1 -g "$SROCE_GID_B" -p 18526 -w 60 -- \
	"$BIN" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -p 18526 -w 60 --quick \
	--ops write,read,send --max-size 64k
tap_check "... and the victims' objects are gone" \
	bash -c "[ \"\$(rdma resource show qp | grep -c 'sroce1/.*comm sroce_pktfuzz')\" = 0 ]"
tap_done
