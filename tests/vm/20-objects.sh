#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Verbs objects through the provider and the kernel: PDs, CQs (sizes,
# resize, notify, completion channels), MRs (access rules, zero length,
# bad addresses, key rotation, rereg), SRQs and AHs, each in a 1000x loop, with
# the errnos the spec gives; afterwards "rdma resource" counts are back to
# zero and the kernel log is clean.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 4
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_eq "only the MAD layer's objects before" "$(sroce_resources sroce0)" "$SROCE_MAD_OBJECTS"
gid=$(sroce_gid_index sroce0 "$(sroce_ipv4_gid 10.77.0.1)")
tap_check "sroce_objects -n 1000 (PD, CQ, MR, MW, SRQ, AH; errnos)" \
	"$SROCE_BIN/sroce_objects" -d sroce0 -g "$SROCE_GID" -n 1000
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" \
	"$SROCE_MAD_OBJECTS"
tap_check "rmmod with every object gone" rmmod sroce
tap_done
