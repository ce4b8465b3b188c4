#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# libFuzzer over the receive-side packet parser (kernel/sroce_opcode.c in
# userspace, tests/fuzz): PARSE_FUZZ_SECONDS (default 30) of coverage-guided
# inputs under ASan and UBSan; a crash, a sanitizer report or a broken
# invariant fails it.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
secs=${PARSE_FUZZ_SECONDS:-30}
bin=$repo/build/fuzz/sroce_parse_fuzz
log=$repo/build/fuzz/parse-fuzz.log

echo "1..2"
# tools/deps installs clang: its absence is a failure, not a skip.
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
	echo "not ok 1 - build the libFuzzer target: no ${FUZZ_CC:-clang} (tools/deps installs it)"
	echo "not ok 2 - fuzz the parser # not built"
	exit 1
fi
if ! out=$(make -s -C "$repo" fuzz-parse 2>&1); then
	echo "not ok 1 - build the libFuzzer target (make fuzz-parse)"
	printf '%s\n' "$out" | sed 's/^/# /' | tail -20
	echo "not ok 2 - fuzz the parser # not built"
	exit 1
fi
echo "ok 1 - build the libFuzzer target (make fuzz-parse)"
mkdir -p "$repo/build/fuzz/artifacts"
if "$bin" -max_total_time="$secs" -seed="${PARSE_FUZZ_SEED:-0}" -print_final_stats=1 \
	-artifact_prefix="$repo/build/fuzz/artifacts/" >"$log" 2>&1; then
	runs=$(sed -nE 's/^Done ([0-9]+) runs.*/\1/p' "$log")
	echo "ok 2 - fuzz the parser: ${runs:-?} inputs in ${secs} s, no report"
else
	echo "not ok 2 - fuzz the parser: see $log"
	grep -E 'ERROR|runtime error|abort|CHECK|sroce_parse_fuzz.c:' "$log" | head -10 | sed 's/^/# /'
	exit 1
fi
