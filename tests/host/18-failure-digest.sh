#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# tools/failure-digest repeats every failing point of a run's logs: a
# script's "not ok", a nested one ("# not ok"), and a two-guest run's
# ("[A] not ok", "[B] not ok"). A CI run once ended "2 failed" with only an
# earlier attempt's line shown: the two-guest run's own failing points
# carry the guest's prefix, and the digest did not see them. A first
# attempt's log kept after an emulator fault is not counted: not named.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool=$repo/tools/failure-digest
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "1..6"

printf '%s\n' "ok 1 - top" "not ok 2 - top-level point fails" >"$dir/vm.log"
printf '%s\n' "# ok 1 - a" "# not ok 2 - nested point fails" >"$dir/vm-2.log"
printf '%s\n' "[A] ok 1 - rxe0 serves" "[B] not ok 7 - sroce0 drives write-bw" \
	"[A] not ok 9 - rxe0 serves read-lat" >"$dir/vm2.log"
printf '%s\n' "[A] ok 1 - all" "[B] ok 1 - fine" "# ok 2 - fine, not okay" >"$dir/vm2-nfs.log"
printf '%s\n' "[B] not ok 4 - hit by the emulator" >"$dir/vm2-v1.emulator-fault.log"
out=$("$tool" "$dir" 2>&1)
rc=$?

check() {
	local n=$1 what=$2
	shift 2
	if "$@"; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what (exit $rc)"
		printf '# %s\n' "$out"
	fi
}
check 1 "a top-level failing point is repeated" grep -q "^not ok 2 - top-level point fails" <<<"$out"
check 2 "a nested failing point is repeated" grep -q "^# not ok 2 - nested point fails" <<<"$out"
two_guests() {
	grep -q '^-- vm2\.log$' <<<"$out" &&
		grep -q '^\[B\] not ok 7 - sroce0 drives write-bw' <<<"$out" &&
		grep -q '^\[A\] not ok 9 - rxe0 serves read-lat' <<<"$out"
}
check 3 "both guests' failing points of a two-guest run are repeated" two_guests
check 4 "a log with no failing point is not named" bash -c '! grep -q "vm2-nfs.log"' <<<"$out"
check 5 "a first attempt's log kept after an emulator fault is not named" \
	bash -c '! grep -q "emulator-fault"' <<<"$out"
out=$("$tool" "$dir/nonexistent" 2>&1)
rc=$?
check 6 "a missing log directory is a usage error" test "$rc" -eq 2 -a -n "$(grep usage: <<<"$out")"
