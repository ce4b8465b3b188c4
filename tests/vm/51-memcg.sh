#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The kernel memory a process's verbs allocate is charged to its memory
# cgroup: rings, the requester's private WQE copies and meta, responder
# state (up to tens of MiB per QP). tests/tools/sroce_qpalloc creates big
# QPs (4096 WRs, 32 SGEs: about 12 MiB of rings and copies each, as the
# ring geometry the kernel reports says) in a cgroup of its own:
#  - with room to spare, the cgroup's memory.current grows by at least
#    what the QPs' rings and copies take (before, by almost nothing: a
#    process could allocate far past its limit);
#  - under a limit of a few QPs' worth, creating many stops there: a
#    create fails with ENOMEM, or the cgroup's OOM killer ends the process
#    (memory.events says which); never are they all created.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
CG=/sys/fs/cgroup/sroce-memcg
D=/tmp/sroce-memcg
cleanup() {
	[ -d "$CG" ] && rmdir "$CG" 2>/dev/null
	sroce_reset
}
sroce_reset
trap cleanup EXIT

QPS=8 LIMITED=24 LIMIT=$((48 << 20))

# qpalloc N OUT: sroce_qpalloc in the cgroup; holds its QPs until $D/go
# exists, meanwhile the caller reads the cgroup. Prints memory.current
# with the QPs held to $D/current.
qpalloc() {
	rm -f "$D/go" "$D/current"
	(
		echo $BASHPID >"$CG/cgroup.procs"
		exec "$SROCE_BIN/sroce_qpalloc" -d sroce0 -n "$1" < <(
			while [ ! -e "$D/go" ]; do sleep 0.2; done)
	) >"$2" 2>&1 &
	local pid=$! i
	for ((i = 0; i < 600; i++)); do
		grep -qE '^(created|failed|set-up)' "$2" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$CG/memory.current" >"$D/current"
	touch "$D/go"
	wait "$pid"
}

tap_plan 5
mkdir -p "$D"
sroce_single_device || tap_bail "set-up: sroce0 on vethA"
tap_check "cgroup v2 with the memory controller" sroce_memcg "$CG" || tap_bail "no memory cgroup"

echo max >"$CG/memory.max"
base=$(cat "$CG/memory.current")
qpalloc "$QPS" "$D/room"
held=$(cat "$D/current")
want=$(awk '/^qp [0-9]+ kernel_bytes/ {s += $4} END {print s + 0}' "$D/room")
tap_diag "$(cat "$D/room" | tail -n 3)" \
	"memory.current $base -> $held with $QPS QPs; their rings and copies: $want bytes"
tap_check "$QPS big QPs created with room to spare" grep -q "^created $QPS\$" "$D/room"
tap_check "memory.current grew by at least their rings and copies ($((want >> 20)) MiB)" \
	test $((held - base)) -ge "$want" -a "$want" -gt $((QPS << 20))

echo "$LIMIT" >"$CG/memory.max"
events0=$(awk '$1 == "max" {print $2}' "$CG/memory.events")
qpalloc "$LIMITED" "$D/limited"
events1=$(awk '$1 == "max" {print $2}' "$CG/memory.events")
tap_diag "limit $((LIMIT >> 20)) MiB: $(grep -E '^(created|failed)' "$D/limited" || echo 'ended')" \
	"after $(grep -c '^qp ' "$D/limited") QPs; memory.events: $(tr '\n' ' ' <"$CG/memory.events")"
tap_check "under a $((LIMIT >> 20)) MiB limit, $LIMITED QPs are not all created" \
	bash -c "! grep -q '^created' '$D/limited' &&
		 { grep -q 'errno 12 ' '$D/limited' || [ \$(awk '\$1 == \"oom_kill\" {print \$2}' '$CG/memory.events') -gt 0 ]; }"
tap_check "the limit was hit (memory.events max $events0 -> $events1)" \
	test "${events1:-0}" -gt "${events0:-0}"
tap_done
