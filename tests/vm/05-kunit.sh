#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# KUnit suites built into sroce.ko (tests/kunit) on the debug test kernel
# (CONFIG_KUNIT): loading the module runs them; their KTAP results, from
# /sys/kernel/debug/kunit/<suite>/results, become one TAP point per suite
# (not ok if any of its cases failed) and one for the whole run. Debian's
# kernel has no KUnit: the script skips.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"

[[ $(uname -r) == *-sroce-debug ]] || tap_skip_all "no KUnit in this kernel"

SUITES=(sroce_hdr sroce_icrc sroce_psn sroce_ack sroce_ring sroce_mr)
KUNIT_DIR=/sys/kernel/debug/kunit

sroce_reset
trap sroce_reset EXIT
[ -d "$KUNIT_DIR" ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null

tap_plan $((${#SUITES[@]} + 2))
tap_check "modprobe sroce (runs its KUnit suites)" sroce_load

# One suite's KTAP: ok if its closing line is "ok 1 NAME" and no case (or
# parameter of a case) at any depth says "not ok".
suite_point() {
	local s=$1 f=$KUNIT_DIR/$1/results res cases params failed
	if [ ! -r "$f" ]; then
		not_ok "KUnit suite $s" "no $f" \
			"$(dmesg | grep -E "(# Subtest: |ok [0-9]+ )$s" | tail -n 5)"
		return 1
	fi
	res=$(cat "$f")
	cases=$(grep -cE '^    (not )?ok [0-9]+ ' <<<"$res")
	params=$(grep -cE '^        (not )?ok [0-9]+ ' <<<"$res")
	failed=$(grep -E '^ *not ok [0-9]+ ' <<<"$res")
	if [ -z "$failed" ] && [ "$(tail -n 1 <<<"$res")" = "ok 1 $s" ]; then
		ok "KUnit suite $s: $cases cases ($params parameters) pass"
		return 0
	fi
	not_ok "KUnit suite $s: $cases cases, some failed" \
		"$(grep -E -B 8 '^ *not ok [0-9]+ ' <<<"$res" | grep -vE '^ *ok [0-9]+ ' | head -n 60)"
	return 1
}

bad=0
for s in "${SUITES[@]}"; do
	suite_point "$s" || bad=1
done
# Every suite sroce.ko carries is one of the above (none forgotten here).
others=
for d in "$KUNIT_DIR"/sroce_*; do
	[ -d "$d" ] || continue
	[[ " ${SUITES[*]} " == *" ${d##*/} "* ]] || others+=" ${d##*/}"
done
if [ "$bad" = 0 ] && [ -z "$others" ]; then
	ok "every KUnit case passed, no suite unaccounted for"
else
	not_ok "every KUnit case passed, no suite unaccounted for" \
		"${others:+suites not checked here: $others}"
fi
tap_done
