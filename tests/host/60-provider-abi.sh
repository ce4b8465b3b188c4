#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The provider against three rdma-core releases: 44 (installed, bookworm),
# trixie's (56.1) and sid's (65.0), unpacked by tools/matrix/rdma-core-root
# into $SROCE_CACHE (default build/cache; fetched once).  For each release:
#   - "make -C provider lib abi-test" builds the provider against that
#     release's headers and library (the build-time layout checks pass),
#     and test_abi.cpp checks every layout, constant and prototype against
#     that release's reference (tests/unit/abi_reference);
#   - the .so is libsroce-rdmav<N>.so and imports verbs_register_driver_<N>
#     under IBVERBS_PRIVATE_<N>, N that release's private ABI;
#   - that release's own ibv_devices, on a fake sysfs and uverbs device
#     (tests/unit/fake_uverbs.cpp preloaded), lists sroce0 with the
#     provider built for it, and with each provider built for another
#     release exits normally without the device and says why on stderr
#     (the provider's own refusal for the same private ABI name, the
#     loader's "version not found" for another);
#   - (56.1 and 65) the in-process unit tests (tests/unit/inproc_*.cpp)
#     drive the provider through that release's libibverbs.
# And the build stops, naming the supported range, for a fake rdma-core 66
# and 43.  Newer libibverbs need glibc > bookworm's: their programs run
# through the root's own dynamic loader.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
export SROCE_CACHE=${SROCE_CACHE:-$repo/build/cache}
triplet=x86_64-linux-gnu
# Builds of its own (not build/provider-rdma-core-N, which the matrix's
# background builds make at the same time in CI).
work=$repo/build/provider-abi-test
rm -rf "$work"
mkdir -p "$work"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[[ -n ${2:-} ]] && printf '%s\n' "$2" | tail -n 25 | sed 's/^/# /'
}
check() { # check DESC OUTPUT CMD...: ok if CMD succeeds
	local desc=$1 out=$2
	shift 2
	if "$@"; then ok "$desc"; else not_ok "$desc" "$out"; fi
}

pmake() {
	make --no-print-directory -j"$(nproc)" --output-sync=target -C "$repo/provider" MAKEFLAGS= "$@"
}

# release -> root ("" = the installed one), expected private ABI, glibc runner
declare -A root pabi runner bdir
rels=(44 56.1 65.0)
pabi[44]=34 pabi[56.1]=34 pabi[65.0]=65
root[44]=""
for s in trixie:56.1 sid:65.0; do
	suite=${s%%:*} rel=${s#*:}
	if ! r=$("$repo/tools/matrix/rdma-core-root" "$suite" 2>"$work/root-$suite.log"); then
		echo "1..1"
		echo "not ok 1 - fetch $suite's rdma-core (tools/matrix/rdma-core-root $suite)"
		sed 's/^/# /' "$work/root-$suite.log" | tail -n 20
		exit 1
	fi
	if [[ $(basename "$r") != "$rel" ]]; then
		echo "1..1"
		echo "not ok 1 - $suite's rdma-core is $(basename "$r"), this test expects $rel: update rels in $0"
		exit 1
	fi
	root[$rel]=$r
done
for rel in "${rels[@]}"; do
	if [[ -z ${root[$rel]} ]]; then
		runner[$rel]=""
		bdir[$rel]=$work/rdma-core-44
	else
		lib=${root[$rel]}/usr/lib/$triplet
		runner[$rel]="$lib/ld-linux-x86-64.so.2 --library-path $lib"
		bdir[$rel]=$work/rdma-core-${rel%%.*}
	fi
done
echo "1..22"	# 3 x 2 builds, 3 x 3 loads, 2 in-process, 2 fake releases, 3 headers

# ---- build and check each release ------------------------------------------
for rel in "${rels[@]}"; do
	major=${rel%%.*}
	args=(BUILD_DIR="${bdir[$rel]}")
	[[ -n ${root[$rel]} ]] && args+=(LIBIBVERBS_ROOT="${root[$rel]}")
	out=$(pmake "${args[@]}" lib abi-test "${bdir[$rel]}/unit/libfake_uverbs.so" 2>&1)
	rc=$?
	want="sroce provider: building for rdma-core $major, IBVERBS_PRIVATE_${pabi[$rel]}"
	if [[ $rc -eq 0 ]] && grep -qF "$want" <<<"$out" &&
		grep -q '^sroce_unit: [1-9][0-9]* passed, 0 failed, 0 skipped$' <<<"$out"; then
		ok "rdma-core $rel: provider builds against its headers and library, layouts and prototypes match its reference ($(grep '^sroce_unit:' <<<"$out"))"
	else
		not_ok "rdma-core $rel: make lib abi-test (exit $rc; want '$want')" "$out"
	fi

	so=${bdir[$rel]}/libsroce-rdmav${pabi[$rel]}.so
	syms=$(objdump -T "$so" 2>&1)
	others=$(grep -o 'IBVERBS_PRIVATE_[0-9]*' <<<"$syms" | sort -u | grep -vx "IBVERBS_PRIVATE_${pabi[$rel]}")
	check "rdma-core $rel: $(basename "$so") imports verbs_register_driver_${pabi[$rel]}@IBVERBS_PRIVATE_${pabi[$rel]} and no other private ABI" \
		"$syms" \
		test -f "$so" -a -z "$others" -a -n "$(grep -F "(IBVERBS_PRIVATE_${pabi[$rel]}) verbs_register_driver_${pabi[$rel]}" <<<"$syms")"
done

# ---- each provider in each release's libibverbs ----------------------------
# A fake sroce device (the sysfs files libibverbs and the provider read).
sys=$work/sys
w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
w "$sys/class/infiniband_verbs/abi_version" 6
w "$sys/class/infiniband_verbs/uverbs0/ibdev" sroce0
w "$sys/class/infiniband_verbs/uverbs0/dev" 231:192
w "$sys/class/infiniband_verbs/uverbs0/abi_version" 1
w "$sys/class/infiniband/sroce0/node_type" "1: CA"
w "$sys/class/infiniband/sroce0/node_guid" 0200:0000:0000:00ab
w "$sys/class/infiniband/sroce0/sroce_abi_version" 1
w "$sys/class/infiniband/sroce0/ports/1/gids/0" fe80:0000:0000:0000:0000:00ff:fe00:0001
w "$sys/class/infiniband/sroce0/ports/1/gid_attrs/types/0" "RoCE v2"
shim=${bdir[44]}/unit/libfake_uverbs.so

for lrel in "${rels[@]}"; do
	if [[ -z ${root[$lrel]} ]]; then
		devices=/usr/bin/ibv_devices
	else
		devices=${root[$lrel]}/usr/bin/ibv_devices
	fi
	for prel in "${rels[@]}"; do
		# libibverbs appends -rdmav<its private ABI>.so to RDMAV_DRIVERS:
		# give it the provider built for prel under that name.
		d=$work/drv-$prel-in-$lrel
		mkdir -p "$d"
		ln -sf "${bdir[$prel]}/libsroce-rdmav${pabi[$prel]}.so" "$d/libsroce-rdmav${pabi[$lrel]}.so"
		# shellcheck disable=SC2086
		SYSFS_PATH=$sys LD_PRELOAD=$shim RDMAV_DRIVERS=$d/libsroce \
			FAKE_UVERBS_LOG=$work/uverbs.log timeout 60 \
			${runner[$lrel]} "$devices" >"$work/out" 2>"$work/err"
		rc=$?
		out=$(cat "$work/out")
		err=$(grep -v "couldn't load driver 'lib[a-z0-9_]*-rdmav" "$work/err")
		all="exit $rc"$'\n'"$out"$'\n'"$err"
		listed=0
		grep -q '^ *sroce0 ' <<<"$out" && listed=1
		if [[ $prel == "$lrel" ]]; then
			check "provider for $prel in libibverbs $lrel: ibv_devices lists sroce0, nothing refused" \
				"$all" test $rc -eq 0 -a $listed -eq 1 -a -z "$(grep -E 'sroce:|rdmav' <<<"$err")"
		elif [[ ${pabi[$prel]} == "${pabi[$lrel]}" ]]; then
			check "provider for $prel in libibverbs $lrel (both IBVERBS_PRIVATE_${pabi[$lrel]}): refuses to register, says why, ibv_devices exits 0 without sroce0" \
				"$all" test $rc -eq 0 -a $listed -eq 0 -a -n "$(grep -E "^sroce: libibverbs .*libibverbs\.so\.1\.[0-9]+\.${lrel%%.*}\.[0-9]+ is rdma-core ${lrel%%.*}; this provider is built for rdma-core ${prel%%.*} .*not registering$" <<<"$err")"
		else
			check "provider for $prel in libibverbs $lrel: not loaded (IBVERBS_PRIVATE_${pabi[$prel]} not found), libibverbs says so, ibv_devices exits 0 without sroce0" \
				"$all" test $rc -eq 0 -a $listed -eq 0 -a -n "$(grep -F "couldn't load driver '$d/libsroce-rdmav${pabi[$lrel]}.so'" <<<"$err" | grep -F "version \`IBVERBS_PRIVATE_${pabi[$prel]}' not found")"
		fi
	done
done

# ---- the in-process tests on 56.1's and 65's libibverbs ---------------------
for rel in 56.1 65.0; do
	out=$(pmake BUILD_DIR="${bdir[$rel]}" LIBIBVERBS_ROOT="${root[$rel]}" \
		INPROC_RUNNER="${runner[$rel]}" inproc-test 2>&1)
	rc=$?
	res=$(grep '^sroce_unit_inproc:' <<<"$out")
	if [[ $rc -eq 0 && $res =~ ^sroce_unit_inproc:\ [1-9][0-9]*\ passed,\ 0\ failed,\ 0\ skipped$ ]]; then
		ok "rdma-core $rel: in-process tests through its libibverbs ($res)"
	else
		not_ok "rdma-core $rel: make inproc-test (exit $rc)" "$(grep -E 'FAILED|Failure|error|passed' <<<"$out")"
	fi
done

# ---- outside the supported range --------------------------------------------
# A libibverbs that says rdma-core 66 (or 43), with 65's (56.1's) headers.
for fake in 66:19:66:65.0 43:14:34:56.1; do
	IFS=: read -r frel fminor fpabi hdr <<<"$fake"
	froot=$work/fake-$frel
	mkdir -p "$froot/usr/lib/$triplet"
	ln -sfn "${root[$hdr]}/usr/include" "$froot/usr/include"
	printf 'IBVERBS_PRIVATE_%s { global: verbs_register_driver_%s; local: *; };\n' \
		"$fpabi" "$fpabi" >"$froot/map"
	cc -shared -fPIC -DFAKE_REGISTER="verbs_register_driver_$fpabi" \
		-Wl,--version-script="$froot/map" -Wl,-soname,libibverbs.so.1 \
		-o "$froot/usr/lib/$triplet/libibverbs.so.1.$fminor.$frel.0" \
		"$repo/tests/unit/fake_libibverbs.c"
	ln -sf "libibverbs.so.1.$fminor.$frel.0" "$froot/usr/lib/$triplet/libibverbs.so.1"
	out=$(pmake BUILD_DIR="$froot/build" LIBIBVERBS_ROOT="$froot" lib 2>&1)
	rc=$?
	check "fake rdma-core $frel: the build stops before compiling, naming the supported range 44-65" \
		"exit $rc"$'\n'"$out" \
		test $rc -ne 0 -a ! -e "$froot/build/obj/sroce_provider.o" -a \
		-n "$(grep -F "sroce provider: installed libibverbs is rdma-core $frel (" <<<"$out" | grep -F 'which is not supported: the sroce provider builds against rdma-core 44-65')"
done

# The headers themselves refuse a release outside the range, or none.
for r in 43 66; do
	out=$(g++ -std=c++20 -fsyntax-only -I"$repo/uapi" -I"$repo/provider" \
		-DSROCE_RDMA_CORE=$r -x c++ "$repo/provider/abi/private_abi.h" 2>&1)
	rc=$?
	check "private_abi.h for rdma-core $r: #error naming the supported range" "$out" \
		test $rc -ne 0 -a -n "$(grep -F 'the provider builds against rdma-core 44-65' <<<"$out")"
done
out=$(g++ -std=c++20 -fsyntax-only -I"$repo/uapi" -I"$repo/provider" \
	-x c++ "$repo/provider/abi/private_abi.h" 2>&1)
rc=$?
check "private_abi.h without SROCE_RDMA_CORE: #error asking for provider/Makefile" "$out" \
	test $rc -ne 0 -a -n "$(grep -F 'build with provider/Makefile' <<<"$out")"

[[ $failed -eq 0 ]]
