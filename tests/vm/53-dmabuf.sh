#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# dma-buf MRs (ibv_reg_dmabuf_mr) between sroce0 (nsA) and sroce1 (nsB),
# with sroce_rc_errors:
#   -o dmabuf       a udmabuf (memfd pages, a static exporter), or vgem's
#                   (DRM PRIME, shmem pages) on a kernel without udmabuf:
#                   the registration's errors; a peer's WRITE, READ, SEND
#                   and atomics into it, B's WRITE from it, a WRITE after
#                   its fd is closed, every byte checked through the CPU's
#                   mapping
#   -o dmabuf-move  tests/kmod/sroce_dmabuf_exp.ko, a dynamic exporter that
#                   moves a buffer on request and poisons the pages it left:
#                   READ and WRITE after moves, 24 moves with a WRITE and a
#                   READ in flight, every byte checked on both sides, no old
#                   page written after its move; with sroce's dmabuf_pin=1
#                   the MR pins the buffer, which cannot move until dereg
# Debian's 6.1 has no udmabuf (CONFIG_UDMABUF off) but has vgem
# (CONFIG_DRM_VGEM=m): there the static exporter is vgem.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
EXP_KO=$SROCE_KBUILD/tests/kmod/sroce_dmabuf_exp.ko
cleanup() {
	rmmod sroce_dmabuf_exp 2>/dev/null
	rmmod vgem 2>/dev/null
	sroce_reset
}
sroce_reset
trap cleanup EXIT

rc_errors() {
	timeout 600 "$SROCE_BIN/sroce_rc_errors" -a sroce0 -A "$SROCE_GID_A" \
		-b sroce1 -B "$SROCE_GID_B" -w 60 -o "$1"
}

tap_plan 6
sroce_two_devices 1500 || tap_bail "set-up: sroce0 on vethA, sroce1 on vethB"

exporter=$(sroce_dmabuf_exporter)
TAP_VERBOSE=1 tap_check "sroce_rc_errors -o dmabuf ($exporter: errors, WRITE/READ/SEND/atomics, gather, fd closed)" \
	rc_errors dmabuf

tap_check "insmod sroce_dmabuf_exp.ko (the moving exporter)" insmod "$EXP_KO"
TAP_VERBOSE=1 tap_check "sroce_rc_errors -o dmabuf-move (moves under traffic, dmabuf_pin)" \
	rc_errors dmabuf-move
tap_check "rmmod sroce_dmabuf_exp: every buffer released" rmmod sroce_dmabuf_exp
tap_eq "dmabuf_pin is back to N" "$(cat /sys/module/sroce/parameters/dmabuf_pin)" N

tap_check "nothing malformed, corrupt or unrouted" \
	sroce_nothing_malformed
tap_done
