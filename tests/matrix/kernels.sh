#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce.ko and the test modules (tests/kmod) build from scratch with W=1
# and not one warning against every kernel of the support matrix
# (tools/matrix/kernel: 6.1, 6.12 = this machine's, trixie, newest = sid),
# each with the compiler its headers want (tools/matrix/build; trixie's and
# sid's in tools/matrix/testroot). A kernel not yet in $SROCE_CACHE (default
# build/cache) is fetched first: the first run downloads about 350 MB of
# packages and makes two roots (several minutes); later runs only build.
# SROCE_KERNELS="6.1 newest" picks fewer.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r -a names <<<"${SROCE_KERNELS:-6.1 6.12 trixie newest}"
echo "1..$((2 * ${#names[@]}))"
n=0 failed=0
for name in "${names[@]}"; do
	t0=$SECONDS
	out=$("$repo/tools/matrix/build" --out "$tmp/$name" "$name" 2>&1)
	rc=$?
	kver=$(sed -n 's/^KVER=//p' <<<"$out")
	log=$tmp/$name/build.log
	n=$((n + 1))
	if [[ $rc -eq 0 && -f $tmp/$name/kernel/sroce.ko && -f $tmp/$name/tests/kmod/sroce_ktest.ko ]] &&
		modinfo -F vermagic "$tmp/$name/kernel/sroce.ko" | grep -q "^$kver "; then
		echo "ok $n - $name ($kver): sroce.ko, sroce_ktest.ko build ($((SECONDS - t0)) s)"
	else
		echo "not ok $n - $name (${kver:-not fetched}): sroce.ko, sroce_ktest.ko build"
		{ [[ -f $log ]] && tail -40 "$log"; tail -20 <<<"$out"; } | sed 's/^/# /'
		failed=1
	fi
	n=$((n + 1))
	warnings=$(grep -sE 'warning:' "$log")
	if [[ -f $log && -z $warnings ]]; then
		echo "ok $n - $name: no W=1 warnings"
	else
		echo "not ok $n - $name: no W=1 warnings"
		sed 's/^/# /' <<<"${warnings:-no build log}" | head -40
		failed=1
	fi
done
exit $failed
