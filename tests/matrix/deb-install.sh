#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The packages at work on the distribution's own kernel: install them into
# a fresh root of SUITE that has its kernel (tools/matrix/root SUITE vm),
# so DKMS builds the module for that kernel, then boot that kernel
# (tools/vm/run --kernel ROOT/boot/vmlinuz-KVER --modules-dir
# ROOT/lib/modules/KVER) and, chrooted into the root, load the module,
# create a device in each of two namespaces joined by a veth pair, list
# them with the root's libibverbs and run ibv_rc_pingpong between them.
# TAP.
#
#   tests/matrix/deb-install.sh [--kernel KVER] SUITE SROCE_DKMS_DEB LIBSROCE1_DEB
#
# --kernel KVER: the root gets linux-image-KVER and its headers instead of
# SUITE's default kernel (tools/matrix/root SUITE vm-KVER), e.g.
#   tests/matrix/deb-install.sh --kernel 6.12.113+deb12-amd64 bookworm \
#       build/deb/sroce-dkms_*_all.deb build/deb/libsroce1_*_amd64.deb
# The libsroce1 must be built for SUITE's rdma-core (tests/matrix/deb.sh
# builds one in a trixie root). One VM boot, about a minute under TCG
# plus the DKMS build.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
flavour=vm
if [[ ${1:-} == --kernel ]]; then
	flavour=vm-${2:?--kernel KVER}
	shift 2
fi
suite=${1:?usage: tests/matrix/deb-install.sh [--kernel KVER] SUITE SROCE_DKMS_DEB LIBSROCE1_DEB}
dkms_deb=$(realpath "${2:?sroce-dkms .deb}")
lib_deb=$(realpath "${3:?libsroce1 .deb}")
export SROCE_CACHE=${SROCE_CACHE:-$repo/build/cache}
root=$repo/build/deb-vm/$suite
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { sed 's/^/# /'; }

in_root() {
	unshare --mount --propagation private -- sh -c '
		r=$1; shift
		mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" &&
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
	' sh "$root" "$@"
}

echo "1..3"
rm -rf --one-file-system "$root" 2>/dev/null
mkdir -p "$(dirname "$root")"
trap 'rm -rf --one-file-system "$root"' EXIT
if ! tools/matrix/root "$suite" "$flavour" "$root" >"$root.log" 2>&1; then
	nok "a fresh $suite root with its kernel"
	diag <"$root.log"
	exit 1
fi
cp "$dkms_deb" "$lib_deb" "$root/tmp/"
kver=$(ls "$root/lib/modules" | head -1)
o=$(in_root apt-get install -y --no-install-recommends "/tmp/${dkms_deb##*/}" "/tmp/${lib_deb##*/}" 2>&1)
if [[ $? -eq 0 && -n $(ls "$root/lib/modules/$kver/updates/dkms/"sroce.ko* 2>/dev/null) ]]; then
	ok "$suite: packages installed, DKMS built sroce.ko for $kver"
else
	nok "$suite: packages installed, DKMS built sroce.ko for $kver"
	tail -20 <<<"$o" | diag
	exit 1
fi

# In the guest: the root's tools, with the guest's /proc, /sys and /dev.
guest=$(cat <<'G'
set -u
R=$ROOT
mount --rbind /dev "$R/dev"; mount -t proc proc "$R/proc"; mount --rbind /sys "$R/sys"
ch() { chroot "$R" "$@"; }
. tools/vm/netlib.sh
fail=0
ch modprobe sroce || fail=1
echo "module: $(ch modinfo -F filename sroce)"
vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 || fail=1
ip netns exec nsA chroot "$R" rdma link add sroce0 type sroce netdev vethA || fail=1
ip netns exec nsB chroot "$R" rdma link add sroce1 type sroce netdev vethB || fail=1
ch ibv_devices >/tmp/devs 2>&1
cat /tmp/devs
grep -q sroce0 /tmp/devs && grep -q sroce1 /tmp/devs && ! grep -qi warning /tmp/devs || fail=1
ip netns exec nsA chroot "$R" ibv_rc_pingpong -d sroce0 -g 1 -n 100 >/tmp/srv 2>&1 &
srv=$!
sleep 1
ip netns exec nsB chroot "$R" ibv_rc_pingpong -d sroce1 -g 1 -n 100 10.77.0.1 || fail=1
wait $srv || fail=1
cat /tmp/srv
echo "guest-result fail=$fail"
G
)
o=$(tools/vm/run --kernel "$root/boot/vmlinuz-$kver" --modules-dir "$root/lib/modules/$kver" \
	--env "ROOT=$root" -c "$guest" 2>&1)
rc=$?
if [[ $o == *"module: /lib/modules/$kver/updates/dkms/sroce.ko"* ]] &&
	grep -q '^ *sroce0 ' <<<"$o" && grep -q '^ *sroce1 ' <<<"$o"; then
	ok "$suite $kver: modprobe sroce (the DKMS module), rdma link add x2, ibv_devices lists both"
else
	nok "$suite $kver: modprobe sroce, rdma link add, ibv_devices"
	tail -30 <<<"$o" | diag
fi
if [[ $rc -eq 0 && $o == *"guest-result fail=0"* ]] && grep -q 'bytes in .* seconds' <<<"$o"; then
	ok "$suite $kver: ibv_rc_pingpong between the two devices"
	grep 'bytes in .* seconds' <<<"$o" | diag
else
	nok "$suite $kver: ibv_rc_pingpong between the two devices (vm rc $rc)"
	tail -30 <<<"$o" | diag
fi
[[ $failed -eq 0 ]]
