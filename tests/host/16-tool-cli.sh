#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The build tools' command lines answer, whatever the machine has built:
# tools/debug-kernel --krel prints the debug kernel's release, or says it
# is not built yet. (Its output directory's default once ended the script
# silently under set -e, and "make debug-kernel", hence "make
# check-debug", failed with no word.)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool=${DEBUG_KERNEL_TOOL:-$repo/tools/debug-kernel}
echo "1..2"

out=$(env -u SROCE_DEBUG_KERNEL "$tool" --krel 2>&1)
rc=$?
if { [[ $rc -eq 0 ]] && [[ $out =~ ^[0-9][^[:space:]]*-sroce-debug$ ]]; } ||
	{ [[ $rc -ne 0 ]] && [[ $out == *"not built yet"* ]]; }; then
	echo "ok 1 - tools/debug-kernel --krel: a release or 'not built yet' (exit $rc)"
else
	echo "not ok 1 - tools/debug-kernel --krel: a release or 'not built yet' (exit $rc, said '$out')"
fi

out=$(env -u SROCE_DEBUG_KERNEL "$tool" --bogus 2>&1)
rc=$?
if [[ $rc -ne 0 && $out == *usage:* ]]; then
	echo "ok 2 - tools/debug-kernel --bogus: a usage message (exit $rc)"
else
	echo "not ok 2 - tools/debug-kernel --bogus: a usage message (exit $rc, said '$out')"
fi
