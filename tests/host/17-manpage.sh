#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce(7) (Documentation/sroce.7, what libsroce1 installs): man renders
# it without a warning, and it names every module parameter (module_param
# in kernel/*.c) and every hw counter (the table in kernel/sroce_dev.c), so
# a parameter or counter added to the module without its line in the page
# fails here, not first in tests/matrix/deb.sh. TAP.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
page=Documentation/sroce.7

echo "1..2"
out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
if [[ $? -eq 0 && -z $out ]]; then
	echo "ok 1 - man --warnings -l $page: no warning"
else
	echo "not ok 1 - man --warnings -l $page: no warning"
	sed 's/^/# /' <<<"${out:-man failed}"
fi

params=$(sed -n 's/^module_param\(_named\)\?(\([a-z_0-9]*\),.*/\2/p; s/^module_param_cb(\([a-z_0-9]*\),.*/\1/p' kernel/*.c)
counters=$(sed -n 's/.*\[SROCE_CNT_[A-Z_]*\] = { .name = "\([a-z_0-9]*\)" }.*/\1/p' kernel/sroce_dev.c)
missing=()
for p in $params $counters; do
	grep -q "^\.B[R]* $p\b\|^\.BR .*\b$p\b" "$page" || missing+=("$p")
done
np=$(wc -w <<<"$params") nc=$(wc -w <<<"$counters")
if ((np < 5 || nc < 30)); then
	echo "not ok 2 - $page names every module parameter and hw counter (read only $np parameters and $nc counters from kernel/)"
elif ((${#missing[@]})); then
	echo "not ok 2 - $page names every module parameter and hw counter"
	echo "# not in sroce(7): ${missing[*]}"
else
	echo "ok 2 - $page names every module parameter ($np) and hw counter ($nc) of kernel/"
fi
