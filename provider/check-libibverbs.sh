#!/bin/sh
# check-libibverbs.sh LIB [PKGCONFIG_VERSION]
#
# Fails (exit 1, one clear line on stderr) unless LIB is a libibverbs that
# provides the provider ABI this provider is written against:
#   - the symbol version IBVERBS_PRIVATE_34 with verbs_register_driver_34, and
#   - rdma-core 44 (libibverbs 1.14.44.x), taken from the library's real file
#     name, else from PKGCONFIG_VERSION when given.  rdma-core kept the name
#     IBVERBS_PRIVATE_34 from v34 to v56 while changing the private structs
#     (verbs_context_ops, verbs_sysfs_dev), so the name alone is not enough.
set -u
lib=${1:-}
pcver=${2:-}
want_pabi=34
want_rel=44
OBJDUMP=${OBJDUMP:-objdump}
me="sroce provider"
want_txt="this provider is written against IBVERBS_PRIVATE_$want_pabi (rdma-core $want_rel)"

if [ -z "$lib" ] || [ ! -e "$lib" ]; then
	echo "$me: libibverbs not found (LIBIBVERBS='$lib'); install libibverbs-dev (rdma-core $want_rel) or pass LIBIBVERBS=/path/to/libibverbs.so.1" >&2
	exit 1
fi
if ! dump=$("$OBJDUMP" -T "$lib" 2>&1); then
	echo "$me: cannot read the dynamic symbols of $lib: $dump" >&2
	exit 1
fi

pabis=$(printf '%s\n' "$dump" | grep -o 'IBVERBS_PRIVATE_[0-9A-Za-z_]*' | sort -u | tr '\n' ' ')
pabis=${pabis% }
if ! printf '%s\n' "$dump" | grep -q "IBVERBS_PRIVATE_$want_pabi[[:space:]]\{1,\}verbs_register_driver_$want_pabi\$"; then
	if [ -z "$pabis" ]; then
		have="no private ABI (no IBVERBS_PRIVATE_* symbol version)"
	else
		have="private ABI $(printf '%s' "$pabis" | sed 's/ /, /g')"
	fi
	echo "$me: installed libibverbs provides $have, but $want_txt [$lib]" >&2
	exit 1
fi

real=$(readlink -f "$lib" 2>/dev/null || printf '%s' "$lib")
rel=$(basename "$real" | sed -n 's/^libibverbs\.so\.1\.14\.\([0-9]\{1,\}\)\..*$/\1/p')
src="$real"
if [ -z "$rel" ] && [ -n "$pcver" ]; then
	rel=$(printf '%s' "$pcver" | sed -n 's/^1\.14\.\([0-9]\{1,\}\)\..*$/\1/p')
	src="pkg-config libibverbs $pcver"
fi
if [ -n "$rel" ] && [ "$rel" != "$want_rel" ]; then
	echo "$me: installed libibverbs provides private ABI IBVERBS_PRIVATE_$want_pabi of rdma-core $rel ($src), but $want_txt; rdma-core changed the provider structs between releases without renaming IBVERBS_PRIVATE_$want_pabi" >&2
	exit 1
fi
exit 0
