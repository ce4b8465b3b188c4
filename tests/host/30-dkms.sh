#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# dkms.conf lets DKMS build the module: add a copy of the tree under a
# private DKMS tree (--dkmstree/--sourcetree, so nothing system-wide
# changes) and build it for the installed kernel headers.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kver=${KVER:-6.12.113+deb12-amd64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..3"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$repo/dkms.conf")
src=$tmp/src/sroce-$ver
mkdir -p "$src" "$tmp/tree"
# Only what the module build needs, as "git archive" would ship it.
cp -r "$repo/Makefile" "$repo/Kbuild" "$repo/dkms.conf" "$repo/kernel" "$repo/uapi" "$src/"
find "$src" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete

args=(--dkmstree "$tmp/tree" --sourcetree "$tmp/src" -k "$kver")
out=$(dkms add "${args[@]}" -m sroce -v "$ver" 2>&1 && dkms build "${args[@]}" -m sroce -v "$ver" 2>&1)
rc=$?
if [[ $rc -eq 0 ]]; then
	echo "ok 1 - dkms add + build sroce/$ver for $kver"
else
	echo "not ok 1 - dkms add + build sroce/$ver for $kver"
	sed 's/^/# /' <<<"$out" | tail -30
fi
ko=$(find "$tmp/tree/sroce/$ver/$kver" -name 'sroce.ko*' 2>/dev/null | head -1)
if [[ -n $ko ]] && modinfo "$ko" 2>/dev/null | grep -q "^vermagic: *$kver "; then
	echo "ok 2 - the built module is for $kver ($(basename "$ko"))"
else
	echo "not ok 2 - the built module is for $kver"
	find "$tmp/tree" -maxdepth 6 | sed 's/^/# /' | tail -20
	exit 1
fi

# The same sources (no tests/) on a kernel with CONFIG_KUNIT, as some
# distributions build theirs: the KUnit suites stay out, the build works.
# (CONFIG_KUNIT=y on kbuild's command line stands in for such a kernel.)
kdir=/lib/modules/$kver/build
cp -r "$src" "$tmp/kunit"
if out=$(env -u MAKEFLAGS -u MFLAGS make -j"$(nproc)" -C "$kdir" M="$tmp/kunit" CONFIG_KUNIT=y modules 2>&1) &&
	[[ -f $tmp/kunit/kernel/sroce.ko ]]; then
	echo "ok 3 - the packaged sources build on a kernel with CONFIG_KUNIT"
else
	echo "not ok 3 - the packaged sources build on a kernel with CONFIG_KUNIT"
	sed 's/^/# /' <<<"$out" | tail -10
	rc=1
fi
[[ $rc -eq 0 ]]
