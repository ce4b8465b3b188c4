#!/bin/sh
# check-libibverbs.sh LIB [PKGCONFIG_VERSION]
#
# Decides which rdma-core release LIB (a libibverbs.so.1) is and prints
# "RELEASE PABI" (e.g. "44 34") on stdout: the provider is then built for
# that release (-DSROCE_RDMA_CORE=RELEASE) and named libsroce-rdmavPABI.so.
# Fails (exit 1, one clear line on stderr, nothing on stdout) unless
#   - the release can be read from the library's real file name
#     (libibverbs.so.1.<minor>.<release>.<patch>), else from
#     PKGCONFIG_VERSION (1.<minor>.<release>.<patch>) when given,
#   - it is in the supported range (SROCE_RDMA_CORE_MIN..MAX of
#     abi/ranges.h), and
#   - LIB exports verbs_register_driver_<PABI> under IBVERBS_PRIVATE_<PABI>,
#     PABI being what abi/ranges.h says that release's private ABI is.
# The release, not only the private ABI name, decides: rdma-core kept the
# name IBVERBS_PRIVATE_34 from v34 to v56 (and IBVERBS_PRIVATE_59 from
# v59 to v63) while changing the private structs underneath it.
set -u
lib=${1:-}
pcver=${2:-}
OBJDUMP=${OBJDUMP:-objdump}
CC=${CC:-cc}
here=$(cd "$(dirname "$0")" && pwd)
ranges=$here/abi/ranges.h
me="sroce provider"
min=$(sed -n 's/^#define SROCE_RDMA_CORE_MIN \([0-9]*\)$/\1/p' "$ranges")
max=$(sed -n 's/^#define SROCE_RDMA_CORE_MAX \([0-9]*\)$/\1/p' "$ranges")
supported="the sroce provider builds against rdma-core $min-$max"

if [ -z "$lib" ] || [ ! -e "$lib" ]; then
	echo "$me: libibverbs not found (LIBIBVERBS='$lib'); install libibverbs-dev (rdma-core $min-$max), or pass LIBIBVERBS=/path/to/libibverbs.so.1 or LIBIBVERBS_ROOT=/path/to/unpacked/root" >&2
	exit 1
fi
if ! dump=$("$OBJDUMP" -T "$lib" 2>&1); then
	echo "$me: cannot read the dynamic symbols of $lib: $dump" >&2
	exit 1
fi
pabis=$(printf '%s\n' "$dump" | grep -o 'IBVERBS_PRIVATE_[0-9A-Za-z_]*' | sort -u | tr '\n' ' ')
pabis=${pabis% }
if [ -z "$pabis" ]; then
	have="no private ABI (no IBVERBS_PRIVATE_* symbol version)"
else
	have="private ABI $(printf '%s' "$pabis" | sed 's/ /, /g')"
fi

real=$(readlink -f "$lib" 2>/dev/null || printf '%s' "$lib")
rel=$(basename "$real" | sed -n 's/^libibverbs\.so\.1\.[0-9]\{1,\}\.\([0-9]\{1,\}\)\..*$/\1/p')
src="$real"
if [ -z "$rel" ] && [ -n "$pcver" ]; then
	rel=$(printf '%s' "$pcver" | sed -n 's/^1\.[0-9]\{1,\}\.\([0-9]\{1,\}\)\..*$/\1/p')
	src="pkg-config libibverbs $pcver"
fi
if [ -z "$rel" ]; then
	echo "$me: installed libibverbs provides $have, but its rdma-core release cannot be told (no libibverbs.so.1.<minor>.<release>.<patch> file name, no pkg-config version) [$lib]; $supported and needs to know which one" >&2
	exit 1
fi
rel=$((rel + 0))
if [ "$rel" -lt "$min" ] || [ "$rel" -gt "$max" ]; then
	echo "$me: installed libibverbs is rdma-core $rel ($src), which is not supported: $supported" >&2
	exit 1
fi

want_pabi=$(printf 'SROCE_IBVERBS_PABI\n' |
	"$CC" -E -P -DSROCE_RDMA_CORE="$rel" -include "$ranges" - 2>/dev/null |
	sed -n 's/^[[:space:]]*\([0-9]\{1,\}\)[[:space:]]*$/\1/p')
if [ -z "$want_pabi" ]; then
	echo "$me: cannot read the private ABI of rdma-core $rel from $ranges with $CC" >&2
	exit 1
fi
if ! printf '%s\n' "$dump" | grep -q "IBVERBS_PRIVATE_$want_pabi[[:space:]]\{1,\}verbs_register_driver_$want_pabi\$"; then
	echo "$me: installed libibverbs provides $have, but rdma-core $rel ($src) exports its providers' ABI as IBVERBS_PRIVATE_$want_pabi (verbs_register_driver_$want_pabi); not a genuine rdma-core $rel libibverbs? [$lib]" >&2
	exit 1
fi
echo "$rel $want_pabi"
exit 0
