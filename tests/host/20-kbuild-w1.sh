#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The module builds from scratch with W=1 and not one warning from our
# files (a copy of the tree is built, so the caller's objects are untouched).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
KDIR=${KDIR:-/lib/modules/${KVER:-6.12.113+deb12-amd64}/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cp -r "$repo/Kbuild" "$repo/kernel" "$repo/uapi" "$tmp/"
find "$tmp" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete
echo "1..2"
log=$(env -u MAKEFLAGS -u MFLAGS make -j"$(nproc)" -C "$KDIR" M="$tmp" W=1 modules 2>&1)
rc=$?
if [[ $rc -eq 0 && -f $tmp/kernel/sroce.ko ]]; then
	echo "ok 1 - kernel/sroce.ko builds against $KDIR"
else
	echo "not ok 1 - kernel/sroce.ko builds against $KDIR"
	sed 's/^/# /' <<<"$log" | tail -40
	exit 1
fi
warnings=$(grep -E 'warning:' <<<"$log")
if [[ -z $warnings ]]; then
	echo "ok 2 - no W=1 warnings"
else
	echo "not ok 2 - no W=1 warnings"
	sed 's/^/# /' <<<"$warnings"
	exit 1
fi
