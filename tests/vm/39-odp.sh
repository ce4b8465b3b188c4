#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# On-demand paging (IBV_ACCESS_ON_DEMAND) between sroce0 (nsA) and sroce1
# (nsB): sroce_rc_errors -o odp (caps, no pinning, every RC operation
# between ODP MRs of untouched memory with the data checked, MADV_DONTNEED,
# remap and fork under an MR, ibv_advise_mr, ranges a fault cannot make
# usable); ibv_rc_pingpong -o and -o -P (prefetch) with the buffers
# checked (-c), ibv_srq_pingpong -o; sroce_integrity with every buffer
# ODP, and again with fork() and memory compaction every 20 ms on both
# sides while it runs (every byte checked), and with the server in a
# memory cgroup whose limit is below its buffers (swap: the kernel
# reclaims ODP pages under traffic); a UD exchange into ODP
# receive buffers (sroce_rc_errors' UD point); perftest --odp for send,
# write and read (perftest refuses atomics with ODP; sroce_rc_errors
# has them); the ODP counters.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
CG=/sys/fs/cgroup/sroce-odp
cleanup() {
	[ -d "$CG" ] && rmdir "$CG" 2>/dev/null
	[ -n "$SWAPDEV" ] && swapoff "$SWAPDEV" 2>/dev/null
	sroce_reset
}
sroce_reset
trap cleanup EXIT

iters=(-n 1000)
pp_iters=20
if sroce_debug_kernel; then
	# KASAN, and swap under it: minutes where the Debian kernel takes
	# seconds.
	iters=(-n 200)
	pp_iters=5
	export SROCE_PAIR_TMO=900
fi

# pingpong PROG SIZE ARGS...: PROG -s SIZE ARGS, sroce1 serves.
pingpong() {
	local prog=$1 size=$2 n=$pp_iters out
	shift 2
	sroce_pair nsB nsA 18515 \
		"$prog" -d sroce1 -g "$SROCE_GID_B" -s "$size" -n $n -c "$@" -- \
		"$prog" -d sroce0 -g "$SROCE_GID_A" -s "$size" -n $n -c "$@" 10.77.0.2 ||
		return 1
	out=$(cat "$SROCE_PAIR_DIR/client")
	echo "$out"
	contains "$out" " iters in "
}

# perf TEST ARGS...: perftest with --odp both ends; the client's result
# row has a figure > 0.
perf() {
	local t=$1 row
	shift
	sroce_pair nsB nsA 18515 \
		"$t" -d sroce1 -x "$SROCE_GID_B" --odp "${iters[@]}" "$@" -- \
		"$t" -d sroce0 -x "$SROCE_GID_A" --odp "${iters[@]}" "$@" 10.77.0.2 ||
		return 1
	row=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$SROCE_PAIR_DIR/client")
	echo "$t --odp $*: $row"
	[ -n "$row" ] || tail -n 12 "$SROCE_PAIR_DIR/client"
	[ -n "$row" ] && awk '{ for (i = 3; i <= NF; i++) if ($i > 0) exit 0; exit 1 }' <<<"$row"
}

# integrity ARGS...: sroce_integrity, ARGS on both sides.
integrity() {
	local bin=$SROCE_BIN/sroce_integrity
	sroce_pair nsB nsA 18525 \
		"$bin" -s -d sroce1 -g "$SROCE_GID_B" -w 60 "$@" -- \
		"$bin" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" -w 60 --quick "$@" ||
		return 1
	tail -n 4 "$SROCE_PAIR_DIR/client"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/client" &&
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/server"
}

# A cgroup whose memory.max is below the server's ODP buffers, and swap
# so that anonymous pages can be reclaimed at all: zram, or (the debug
# kernel has no zram) a loop device over a file in the guest's tmpfs,
# whose pages the loop worker's cgroup holds, not ours.
SWAPDEV=
memcg_ready() {
	sroce_memcg "$CG" && echo $((48 << 20)) >"$CG/memory.max" || return 1
	if modprobe zram num_devices=1 2>/dev/null; then
		SWAPDEV=/dev/zram0
		echo 512M >/sys/block/zram0/disksize || return 1
	else
		modprobe loop 2>/dev/null
		truncate -s 512M /tmp/sroce-swap &&
		SWAPDEV=$(losetup --find --show /tmp/sroce-swap) || return 1
	fi
	mkswap "$SWAPDEV" >/dev/null && swapon "$SWAPDEV"
}

# Both sides in the cgroup (a subshell moves itself in: "ip netns exec"
# gives its children a sysfs without the cgroup mount), each with about
# 35 MiB of ODP buffers (8 slots for transfers up to 4 MiB): the run
# completes only if their pages are reclaimed and faulted back under
# traffic, every byte checked.
#
# 48 MiB, not less: at 40 MiB the two tools' own memset() of their
# buffers, swapping to zram, made the guest report soft lockups under TCG
# (in the page allocator's clear_page, nowhere near sroce) in 2 of 3 runs
# that followed other scripts; 22 MiB and more of the buffers must still
# go to swap and come back.
#
# Transparent huge pages off meanwhile: in a cgroup of 40 MiB every 2 MiB
# fault of the tools' own memset() clears and reclaims a huge page, which
# under TCG once held a CPU for 26 s (a soft lockup report, in the
# page allocator, nowhere near sroce); what this point is about is the
# reclaim of ODP MRs' pages.
THP=/sys/kernel/mm/transparent_hugepage/enabled
integrity_memcg() {
	local bin=$SROCE_BIN/sroce_integrity args=(--odp --max-size 4m --random 4 --max-bytes 16m -w 600)
	local thp rc=0
	# A kernel without THP (the debug kernel's config) has no such file.
	if [ -e "$THP" ]; then
		thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP")
		echo never >"$THP" || return 1
	fi
	(
		echo "$BASHPID" >"$CG/cgroup.procs" || exit 1
		sroce_pair nsB nsA 18525 \
			"$bin" -s -d sroce1 -g "$SROCE_GID_B" "${args[@]}" -- \
			"$bin" -c 10.77.0.2 -d sroce0 -g "$SROCE_GID_A" "${args[@]}"
	) || rc=1
	[ ! -e "$THP" ] || echo "${thp:-always}" >"$THP"
	[ "$rc" = 0 ] || return 1
	tail -n 3 "$SROCE_PAIR_DIR/client"
	echo "cgroup: $(grep -E '^(pgsteal|pgmajfault|workingset_refault_anon) ' "$CG/memory.stat" | tr '\n' ' ')"
	grep -Eq '^integrity: [0-9]+ ops, [0-9]+ bytes verified, 0 errors$' \
		"$SROCE_PAIR_DIR/server" &&
	[ "$(awk '$1 == "pgsteal" {print $2}' "$CG/memory.stat")" -gt 0 ]
}

counter() {
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"
}

tap_plan 17
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

TAP_VERBOSE=1 tap_check "sroce_rc_errors -o odp (caps, no pinning, WRITE/READ/SEND/atomics, MADV_DONTNEED, remap, fork, advise_mr, failed faults)" \
	timeout 600 "$SROCE_BIN/sroce_rc_errors" -a sroce0 -A "$SROCE_GID_A" \
	-b sroce1 -B "$SROCE_GID_B" -w 60 -o odp

f0=$(counter sroce1 odp_page_faults)
tap_check "ibv_rc_pingpong -o, 4 KiB, buffers checked" pingpong ibv_rc_pingpong 4096 -o
tap_check "ibv_rc_pingpong -o, 1 MiB, buffers checked" pingpong ibv_rc_pingpong 1048576 -o
tap_check "ibv_rc_pingpong -o -P (prefetch), 64 KiB, buffers checked" \
	pingpong ibv_rc_pingpong 65536 -o -P
tap_check "ibv_srq_pingpong -o -q 4, 4 KiB, buffers checked" \
	pingpong ibv_srq_pingpong 4096 -o -q 4
tap_check "sroce1 faulted ODP pages in for the pingpongs" \
	test "$(counter sroce1 odp_page_faults)" -gt "$f0"

tap_check "sroce_integrity --odp (all ops, every byte checked)" integrity --odp
i0=$(counter sroce1 odp_invalidations)
tap_check "sroce_integrity --churn: fork and compaction under both sides' ODP MRs" \
	integrity --churn
tap_check "sroce1's ODP MRs were invalidated under the churn" \
	test "$(counter sroce1 odp_invalidations)" -gt "$i0"

memcg_ready || tap_bail "set-up: memory cgroup and zram swap"
i0=$(counter sroce1 odp_invalidations)
tap_check "sroce_integrity --odp, both sides in a 48 MiB cgroup with 70 MiB of buffers: reclaimed and faulted back, every byte" \
	integrity_memcg
tap_check "sroce1's ODP MRs were invalidated by the reclaim" \
	test "$(counter sroce1 odp_invalidations)" -gt "$i0"

for t in ib_send_bw ib_write_bw ib_read_bw; do
	tap_check "$t --odp -s 65536" perf "$t" -s 65536
done
tap_check "ib_write_lat --odp -s 4096" perf ib_write_lat -s 4096
tap_check "ib_read_lat --odp -s 4096" perf ib_read_lat -s 4096

tap_check "nothing malformed, corrupt or unrouted" \
	sroce_nothing_malformed
tap_done
