#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# "make install" puts the module, the provider and its driver file where a
# real host keeps them; then modprobe and libibverbs find sroce with no
# help from the build tree (the guest's root is a throw-away overlay).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 8
kver=$(uname -r)
rm -rf /etc/libibverbs.d/sroce.driver /lib/modules/"$kver"/updates /run/sroce.ko.installed

# depmod -a over every module takes about a minute under TCG; the index
# files staged on the host stand in for it (see tools/stage-modules).
# The module is built (make check built it on the host): -o module keeps
# make from asking kbuild whether it is up to date, which under TCG, over
# 9p, took 226 s of CI's time.
tap_check "make install-module (DEPMOD=true)" \
	make -s -C "$SROCE_REPO" -o module install-module DEPMOD=true KVER="$kver"
tap_check "  sroce.ko(.xz) in /lib/modules/$kver/updates/" \
	bash -c "ls /lib/modules/$kver/updates/kernel/sroce.ko*"
# The host-side depmod of the same install (tools/stage-modules).
cp "$SROCE_MODSTAGE"/lib/modules/"$kver"/modules.* /lib/modules/"$kver"/
tap_check "make install-provider" make -s -C "$SROCE_REPO" install-provider
libdir=$(dirname "$(ls /usr/lib/*/libibverbs/librxe-rdmav34.so)")
tap_check "  libsroce-rdmav34.so in $libdir" test -f "$libdir/libsroce-rdmav34.so"
tap_eq "  /etc/libibverbs.d/sroce.driver" "$(cat /etc/libibverbs.d/sroce.driver)" "driver sroce"

vm_netns_pair nsA nsB 10.77.0.1 10.77.0.2 1500
tap_check "modprobe sroce (installed module)" modprobe sroce
ip netns exec nsA rdma link add sroce0 type sroce netdev vethA
tap_check "ibv_devinfo -d sroce0 through the installed provider" \
	bash -c 'ibv_devinfo -d sroce0 | grep -Eq "state:\s+PORT_ACTIVE"'
tap_check "  ... and it is the installed library that was loaded" \
	bash -c "LD_DEBUG=libs ibv_devinfo -d sroce0 2>&1 | grep -q 'calling init: $libdir/libsroce-rdmav34.so'"
tap_done
