#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Every kernel source file passes scripts/checkpatch.pl from Debian's
# linux-source-6.12 (extracted once into build/checkpatch/).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cp_dir=$repo/build/checkpatch
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.12.tar.xz}

if [[ ! -x $cp_dir/scripts/checkpatch.pl ]]; then
	mkdir -p "$cp_dir"
	tar -C "$cp_dir" --strip-components=1 -xf "$tarball" \
		linux-source-6.12/scripts/checkpatch.pl \
		linux-source-6.12/scripts/spelling.txt \
		linux-source-6.12/scripts/const_structs.checkpatch || {
		echo "1..1"; echo "not ok 1 - extract checkpatch.pl from $tarball"; exit 1; }
fi

files=($(ls "$repo"/kernel/*.[ch] "$repo"/kernel/compat/*/*.h "$repo"/kernel/probe/*.c "$repo"/uapi/*.h "$repo"/tests/kmod/*.c "$repo"/tests/kunit/*.c | grep -v "\.mod\.c$"))
echo "1..${#files[@]}"
# checkpatch takes about a second a file: a process per CPU, each file's
# report in its own file, reported in order.
outdir=$(mktemp -d)
trap 'rm -rf "$outdir"' EXIT
for i in "${!files[@]}"; do printf '%s\0%s\0' "$i" "${files[$i]}"; done |
	xargs -0 -n 2 -P "$(nproc)" sh -c \
		'perl "$0" --no-tree --quiet --ignore SPDX_LICENSE_TAG -f "$3" >"$1/$2" 2>&1' \
		"$cp_dir/scripts/checkpatch.pl" "$outdir"
n=0 failed=0
for f in "${files[@]}"; do
	n=$((n + 1))
	out=$(cat "$outdir/$((n - 1))")
	if [[ -z $out ]]; then
		echo "ok $n - checkpatch ${f#"$repo"/}"
	else
		echo "not ok $n - checkpatch ${f#"$repo"/}"
		sed 's/^/# /' <<<"$out"
		failed=1
	fi
done
exit $failed
