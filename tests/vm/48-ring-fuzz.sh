#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A process rewrites its own mmap'd rings while traffic runs on them:
# tests/tools/sroce_ringfuzz opens sroce0 (nsA) and sroce1 (nsB), and round
# after round puts a victim QP on sroce0 (RC, RC on an SRQ, UC, UD; fresh
# rings each round) with a partner on sroce1, runs traffic both ways and
# meanwhile, from a second thread, writes random and adversarial values into
# the victim's SQ/RQ/SRQ producer and consumer indices, its CQ's consumer
# index and its WQEs (torn stores, rewinds of WQEs in flight, slots the
# kernel already fetched, every opcode and flag, huge lengths). A bystander
# RC pair on the same devices runs verified traffic the whole time. The tool
# checks that no queue completes more than was published into it, that no
# kernel consumer index runs ahead of the published producer index, that
# every byte the partners receive came from the process (a per-run
# alphabet), that every CQE is well-formed, that only victims get async
# events (and QP_FATAL at least once) and that the bystander finishes clean.
# Then: bad_ring_index and bad_wqe rose, the resource counts are back to the
# MAD layer's, rmmod. The VM runner fails the script on any BUG/WARNING/oops
# in the kernel log.
#
# RINGFUZZ_SECONDS of fuzzing (default 60; 120 on the debug kernel), seed
# RINGFUZZ_SEED (default random; printed). A long run on the debug kernel:
#   tools/check --vm-only --debug-kernel --env RINGFUZZ_SECONDS=600 \
#	--env RUN_ALL_TIMEOUT=900 48-ring-fuzz.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

SECONDS_FUZZ=${RINGFUZZ_SECONDS:-60}
sroce_debug_kernel && SECONDS_FUZZ=${RINGFUZZ_SECONDS:-120}
SEED=${RINGFUZZ_SEED:-$RANDOM$RANDOM}
D=/tmp/sroce-ringfuzz
mkdir -p "$D"
rm -f "$D"/*

tap_plan 6
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

bad_ring0=$(sroce_counter sroce0 bad_ring_index)
bad_wqe0=$(sroce_counter sroce0 bad_wqe)

# The tool's own points and per-round lines are kept in $D/out; its
# summary goes to the TAP stream either way.
ringfuzz() {
	local rc=0
	timeout $((SECONDS_FUZZ * 3 + 180)) "$SROCE_BIN/sroce_ringfuzz" -d sroce0 -g "$SROCE_GID_A" \
		-D sroce1 -G "$SROCE_GID_B" --seconds "$SECONDS_FUZZ" --seed "$SEED" \
		>"$D/out" 2>&1 </dev/null || rc=$?
	# Failures first, then every round (what each did) and the end.
	grep -E '^(not ok|#   FAIL)' "$D/out" | head -n 60
	[ "$rc" = 0 ] || grep -vE '^(not ok|#   FAIL)' "$D/out"
	return $rc
}
tap_check "sroce_ringfuzz: ${SECONDS_FUZZ} s, seed $SEED" ringfuzz
tap_diag "$(grep -E '^# ringfuzz:|^(ok|not ok) ' "$D/out")"

bad_ring=$(($(sroce_counter sroce0 bad_ring_index) - bad_ring0))
bad_wqe=$(($(sroce_counter sroce0 bad_wqe) - bad_wqe0))
tap_check "bad_ring_index rose (+$bad_ring)" test "$bad_ring" -ge 1
tap_check "bad_wqe rose (+$bad_wqe)" test "$bad_wqe" -ge 1
tap_eq "sroce0: rdma resource counts back to the MAD layer's own" \
	"$(sroce_resources sroce0)" "$SROCE_MAD_OBJECTS"
tap_eq "sroce1: rdma resource counts back to the MAD layer's own" \
	"$(sroce_resources sroce1)" "${SROCE_MAD_OBJECTS/sroce0/sroce1}"
tap_check "rmmod with every object gone" rmmod sroce
tap_done
