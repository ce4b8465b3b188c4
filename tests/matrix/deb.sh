#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make deb: the two packages' contents, control fields, lintian, sroce(7);
# then each installed into a fresh Debian root (chroot) the way a user
# installs them: DKMS builds the module for the root's kernel headers, the
# root's libibverbs loads the provider, and purging leaves nothing behind.
#
#   bookworm  the packages built here (rdma-core 44), linux-headers-amd64
#             (6.1); then again with the headers of $KVER (default
#             6.12.113+deb12-amd64, the kernel the VM tests boot)
#   trixie    the libsroce1 built against rdma-core 44 must be refused;
#             "make deb" run again inside a trixie build root (its
#             libibverbs-dev, as a distribution would build it), and its
#             packages installed with linux-headers-amd64 (6.12); they are
#             kept in build/deb/trixie/ (tests/matrix/deb-install.sh trixie)
#
# Roots come from tools/matrix/root (mmdebstrap once per suite, cached as
# tarballs under $SROCE_CACHE/roots, default build/cache); every run
# extracts fresh copies under build/deb-test/. A chroot command runs in a
# private mount namespace (/dev, /proc), so its mounts end with it.
# About 10 minutes with cached roots (two DKMS module builds, one provider
# build); building the roots the first time takes longer (downloads).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export SROCE_CACHE=${SROCE_CACHE:-$repo/build/cache}
work=$repo/build/deb-test
out=$repo/build/deb

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESC CMD...: a point from a command's status
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else nok "$desc"; fi
}
diag() { sed 's/^/# /'; }

cleanup() {
	local r
	for r in "$work"/*/; do
		[[ -d $r ]] && rm -rf --one-file-system "$r"
	done
}
trap cleanup EXIT

# in_root ROOT CMD...: CMD in the chroot, with the host's /dev (unless
# OWN_DEV=1: the root's own) and /proc mounted in a mount namespace of its
# own, and a clean environment.
in_root() {
	local root=$1
	shift
	unshare --mount --propagation private -- sh -c '
		r=$1 own_dev=$2; shift 2
		if [ "$own_dev" != 1 ]; then mount --rbind /dev "$r/dev" || exit 1; fi
		mount -t proc proc "$r/proc" &&
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
	' sh "$root" "${OWN_DEV:-0}" "$@"
}

# The man page renders without a warning from man or groff.
man_clean() {
	local page=$1 msgs
	msgs=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 \
		-l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	[[ -z $msgs ]] || { diag <<<"$msgs"; return 1; }
}

# deb_files DEB: the package's paths, without "./" and directories.
deb_files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $6 }' | sort; }

# Expected contents of sroce-dkms for version $1.
dkms_expected() {
	local s=usr/src/sroce-$1
	{
		printf '%s\n' usr/share/doc/sroce-dkms/changelog.gz usr/share/doc/sroce-dkms/copyright
		printf "$s/%s\n" Makefile Kbuild dkms.conf
		git ls-files --cached --others --exclude-standard kernel/Kbuild 'kernel/*.[ch]' 'uapi/*.h' | sed "s|^|$s/|"
	} | sort
}

# Expected contents of libsroce1: names from provider/Makefile.
lib_expected() {
	local so dir
	so=$(basename "$(make -s -C provider print-SO)")
	dir=$(make -s -C provider print-PROVIDER_DIR)
	printf '%s\n' "${dir#/}/$so" etc/libibverbs.d/sroce.driver \
		usr/share/man/man7/sroce.7.gz usr/share/doc/libsroce1/changelog.gz \
		usr/share/doc/libsroce1/copyright | sort
}

same_list() { # same_list WHAT EXPECTED ACTUAL
	local d
	d=$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3"))
	[[ -z $d ]] || { echo "# $1: - expected, + in the package"; diag <<<"$d"; return 1; }
}

field() { dpkg-deb -f "$1" "$2"; }

# The rdma-core pin libsroce1 must carry for release $1.
pin_of() { echo "libibverbs1 (>= $1), libibverbs1 (<< $(($1 + 1)))"; }

# ---- the packages ------------------------------------------------------------

echo "1..24"
ver=$(tools/deb --version)
t0=$SECONDS
log=$(nice -n 10 make -s deb 2>&1)
rc=$?
dkms_deb=$out/sroce-dkms_${ver}_all.deb
lib_deb=$out/libsroce1_${ver}_amd64.deb
if [[ $rc -eq 0 && -f $dkms_deb && -f $lib_deb ]]; then
	ok "make deb: $(basename "$dkms_deb") $(basename "$lib_deb") ($((SECONDS - t0)) s)"
else
	nok "make deb (rc $rc) built sroce-dkms_${ver}_all.deb and libsroce1_${ver}_amd64.deb"
	tail -30 <<<"$log" | diag
	ls "$out" 2>&1 | diag
	exit 1
fi

check "sroce-dkms holds the module's sources, dkms.conf and its docs, nothing else" \
	same_list sroce-dkms "$(dkms_expected "$ver")" "$(deb_files "$dkms_deb")"

conf=$(dpkg-deb --fsys-tarfile "$dkms_deb" | tar -xOf - "./usr/src/sroce-$ver/dkms.conf")
if grep -qx "PACKAGE_VERSION=\"$ver\"" <<<"$conf" && grep -qx 'PACKAGE_NAME="sroce"' <<<"$conf" &&
	grep -qx 'AUTOINSTALL="yes"' <<<"$conf"; then
	ok "dkms.conf: sroce/$ver, AUTOINSTALL=yes"
else
	nok "dkms.conf: sroce/$ver, AUTOINSTALL=yes"
	diag <<<"$conf"
fi

check "libsroce1 holds the provider, sroce.driver, sroce(7) and its docs, nothing else" \
	same_list libsroce1 "$(lib_expected)" "$(deb_files "$lib_deb")"

rel=$(make -s -C provider print-RDMA_CORE_RELEASE)
dk_dep=$(field "$dkms_deb" Depends)
dk_rec=$(field "$dkms_deb" Recommends)
lib_dep=$(field "$lib_deb" Depends)
if [[ $(field "$dkms_deb" Version) == "$ver" && $(field "$lib_deb" Version) == "$ver" &&
	$dk_dep =~ (^|, )dkms( |,|$) && $dk_rec == *linux-headers-amd64* &&
	$lib_dep == *"$(pin_of "$rel")"* && $lib_dep == *libc6* &&
	$(field "$lib_deb" Architecture) == amd64 && $(field "$dkms_deb" Architecture) == all ]]; then
	ok "control: Version $ver; sroce-dkms Depends dkms, Recommends headers; libsroce1 Depends $(pin_of "$rel") and shlibs"
else
	nok "control fields"
	printf 'sroce-dkms Depends: %s\nsroce-dkms Recommends: %s\nlibsroce1 Depends: %s\n' \
		"$dk_dep" "$dk_rec" "$lib_dep" | diag
fi

lint=$(cd "$out" && lintian --fail-on none sroce_"${ver}"_amd64.changes 2>&1 | grep -v '^running with root')
if ! grep -qE '^[EW]: ' <<<"$lint"; then
	ok "lintian: no errors, no warnings"
else
	nok "lintian: no errors, no warnings"
	diag <<<"$lint"
fi

tmpman=$(mktemp -d)
dpkg-deb -x "$lib_deb" "$tmpman"
check "sroce(7) as packaged renders without warnings" man_clean "$tmpman/usr/share/man/man7/sroce.7.gz"
rm -rf "$tmpman"

# ---- installing into fresh roots ----------------------------------------------

rm -rf --one-file-system "$work" 2>/dev/null
mkdir -p "$work"

# A fresh root of SUITE-FLAVOUR at $work/NAME; fails the run if the root
# cannot be had (the archive is unreachable and nothing is cached).
fresh_root() {
	local suite=$1 flavour=$2 name=$3
	if ! tools/matrix/root "$suite" "$flavour" >"$work/$name.log" 2>&1 ||
		! tools/matrix/root "$suite" "$flavour" "$work/$name" >>"$work/$name.log" 2>&1; then
		nok "a fresh $suite $flavour root"
		diag <"$work/$name.log"
		return 1
	fi
}

# A fake sysfs with one sroce device (sroce_abi_version as the module
# writes it), its character device node in the root's own /dev, and a
# shim that makes libibverbs' netlink device query fail, so it lists the
# fake devices: the root's libibverbs, reading the root's
# /etc/libibverbs.d, must load the provider for "ibv_devices" to show it.
fake_device() {
	local root=$1 s=$1/tmp/sys
	mkdir -p "$root/dev/infiniband"
	mknod "$root/dev/infiniband/uverbs0" c 231 192 || return 1
	local uv=$s/class/infiniband_verbs/uverbs0 ib=$s/class/infiniband/sroce0
	mkdir -p "$uv" "$ib/ports/1/gids" "$ib/ports/1/gid_attrs/types"
	echo 6 >"$s/class/infiniband_verbs/abi_version"
	echo sroce0 >"$uv/ibdev"
	echo 231:192 >"$uv/dev"
	sed -n 's/^#define SROCE_UVERBS_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
		uapi/sroce-abi.h >"$uv/abi_version"
	cp "$uv/abi_version" "$ib/sroce_abi_version"
	echo "1: CA" >"$ib/node_type"
	echo 0200:0000:0000:00ab >"$ib/node_guid"
	echo fe80:0000:0000:0000:0000:00ff:fe00:0001 >"$ib/ports/1/gids/0"
	echo "RoCE v2" >"$ib/ports/1/gid_attrs/types/0"
	cat >"$root/tmp/nonl.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
#include <linux/netlink.h>
int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	return real(domain, type, protocol);
}
C
	in_root "$root" gcc -shared -fPIC -o /tmp/nonl.so /tmp/nonl.c -ldl
}

ibv_devices_sees_sroce() {
	local root=$1 o
	o=$(OWN_DEV=1 in_root "$root" env SYSFS_PATH=/tmp/sys LD_PRELOAD=/tmp/nonl.so ibv_devices 2>&1)
	if grep -q '^ *sroce0 ' <<<"$o" && ! grep -qi "couldn't load driver\|warning" <<<"$o"; then
		return 0
	fi
	diag <<<"$o"
	return 1
}

# install_and_purge SUITE ROOT DEB...: the install points (3) and the
# purge points (2) for one root.
install_and_purge() {
	local suite=$1 root=$2
	shift 2
	local debs=() d kver ko vm o left
	for d in "$@"; do
		cp "$d" "$root/tmp/" && debs+=("/tmp/$(basename "$d")")
	done
	kver=$(ls "$root/lib/modules" | head -1)
	t0=$SECONDS
	o=$(in_root "$root" apt-get install -y --no-install-recommends "${debs[@]}" 2>&1)
	if [[ $? -eq 0 ]]; then
		ok "$suite: apt-get install ${debs[*]##*/} ($((SECONDS - t0)) s)"
	else
		nok "$suite: apt-get install ${debs[*]##*/} (DKMS build for $kver)"
		tail -25 <<<"$o" | diag
		find "$root/var/lib/dkms/sroce" -name make.log -exec tail -25 {} \; 2>/dev/null | diag
	fi

	ko=$(cd "$root" && ls lib/modules/"$kver"/updates/dkms/sroce.ko* 2>/dev/null | head -1)
	vm=$([[ -n $ko ]] && in_root "$root" modinfo -F vermagic "/$ko" 2>&1)
	if [[ -n $ko && $vm == "$kver "* ]]; then
		ok "$suite: DKMS installed /$ko, vermagic $kver"
	else
		nok "$suite: DKMS installed lib/modules/$kver/updates/dkms/sroce.ko for $kver"
		echo "# vermagic: ${vm:-none}" 
		in_root "$root" dkms status 2>&1 | diag
	fi

	if [[ -n ${lib_in_root:-} ]]; then
		fake_device "$root" >/dev/null 2>&1
		check "$suite: the root's libibverbs loads the provider (ibv_devices lists sroce0)" \
			ibv_devices_sees_sroce "$root"
	else
		nok "$suite: the root's libibverbs loads the provider (no libsroce1 for $suite)"
	fi

	o=$(in_root "$root" apt-get remove -y --purge sroce-dkms libsroce1 2>&1)
	if [[ $? -eq 0 ]]; then
		ok "$suite: apt-get remove --purge sroce-dkms libsroce1"
	else
		nok "$suite: apt-get remove --purge sroce-dkms libsroce1"
		tail -15 <<<"$o" | diag
	fi
	left=$(cd "$root" && {
		find lib/modules usr/lib/modules -name 'sroce.ko*' 2>/dev/null
		ls -d var/lib/dkms/sroce usr/src/sroce-* etc/libibverbs.d/sroce.driver \
			usr/lib/*/libibverbs/libsroce-* usr/share/man/man7/sroce.7.gz \
			usr/share/doc/sroce-dkms usr/share/doc/libsroce1 2>/dev/null
		dpkg-query --admindir=var/lib/dpkg -W -f='${db:Status-Abbrev} ${Package}\n' \
			sroce-dkms libsroce1 2>/dev/null | grep -v '^un '
	})
	if [[ -z $left ]]; then
		ok "$suite: nothing left (module, /var/lib/dkms/sroce, /usr/src/sroce-*, driver file, provider, man page, dpkg status)"
	else
		nok "$suite: nothing left after the purge"
		diag <<<"$left"
	fi
}

# -- bookworm: the packages built here
bw_points=5
if fresh_root bookworm base bookworm; then
	lib_in_root=1 install_and_purge bookworm "$work/bookworm" "$dkms_deb" "$lib_deb"
else
	for ((i = 1; i < bw_points; i++)); do nok "bookworm: (no root)"; done
fi
rm -rf --one-file-system "$work/bookworm"

# -- bookworm with the kernel the VM tests boot (KVER, 6.12 from
# bookworm-security) instead of the stock 6.1
kv=${KVER:-6.12.113+deb12-amd64}
if fresh_root bookworm "base-$kv" bookworm-kv; then
	lib_in_root=1 install_and_purge "bookworm $kv" "$work/bookworm-kv" "$dkms_deb" "$lib_deb"
else
	for ((i = 1; i < 5; i++)); do nok "bookworm $kv: (no root)"; done
fi
rm -rf --one-file-system "$work/bookworm-kv"

# -- trixie: refuse the 44 provider, build one there, install
tx_lib= tx_dkms=
if fresh_root trixie build trixie-build; then
	r=$work/trixie-build
	cp "$lib_deb" "$r/tmp/"
	o=$(in_root "$r" apt-get install -s "/tmp/$(basename "$lib_deb")" 2>&1)
	if [[ $? -ne 0 ]] && grep -q "libibverbs1 (< $((rel + 1)))" <<<"$o"; then
		ok "trixie: apt refuses libsroce1 built for rdma-core $rel (its libibverbs1 is $(in_root "$r" dpkg-query -W -f='${Version}' libibverbs1))"
	else
		nok "trixie: apt refuses libsroce1 built for rdma-core $rel"
		tail -10 <<<"$o" | diag
	fi

	mkdir -p "$r/src"
	tar -C "$r/src" -xzf "$out/sroce-$ver.tar.gz"
	t0=$SECONDS
	o=$(in_root "$r" sh -c "cd /src/sroce-$ver && SROCE_VERSION='$ver' nice -n 10 make deb" 2>&1)
	rc=$?
	tx_rel=$(in_root "$r" sh -c "cd /src/sroce-$ver && make -s -C provider print-RDMA_CORE_RELEASE" 2>/dev/null)
	tx_lib=$r/src/sroce-$ver/build/deb/libsroce1_${ver}_amd64.deb
	tx_dkms=$r/src/sroce-$ver/build/deb/sroce-dkms_${ver}_all.deb
	if [[ $rc -eq 0 && -f $tx_lib && -f $tx_dkms ]] &&
		[[ $(field "$tx_lib" Depends) == *"$(pin_of "$tx_rel")"* ]]; then
		ok "trixie: make deb in a trixie root: libsroce1 Depends $(pin_of "$tx_rel") ($((SECONDS - t0)) s)"
		# Kept beside the host's packages, for
		# tests/matrix/deb-install.sh trixie.
		rm -rf "$out/trixie"
		mkdir -p "$out/trixie"
		cp "$tx_lib" "$tx_dkms" "$out/trixie/"
		tx_lib=$out/trixie/${tx_lib##*/}
		tx_dkms=$out/trixie/${tx_dkms##*/}
	else
		nok "trixie: make deb in a trixie root (rdma-core ${tx_rel:-?}) builds a libsroce1 pinned to it"
		tail -20 <<<"$o" | diag
		tx_lib= tx_dkms=
	fi
else
	nok "trixie: apt refuses libsroce1 built for rdma-core $rel (no build root)"
	nok "trixie: make deb in a trixie root (no build root)"
fi
rm -rf --one-file-system "$work/trixie-build"

if fresh_root trixie base trixie; then
	# Without a trixie libsroce1, sroce-dkms (arch all) alone still shows
	# whether the module builds for trixie's kernel.
	if [[ -n $tx_lib ]]; then
		lib_in_root=1 install_and_purge trixie "$work/trixie" "$tx_dkms" "$tx_lib"
	else
		lib_in_root= install_and_purge trixie "$work/trixie" "$dkms_deb"
	fi
else
	for ((i = 1; i < 5; i++)); do nok "trixie: (no root)"; done
fi

# The plan line counts: 8 package points, 5 + 5 bookworm, 2 + 5 trixie.
[[ $n -eq 25 ]] || echo "# ran $n points"
[[ $failed -eq 0 ]]
