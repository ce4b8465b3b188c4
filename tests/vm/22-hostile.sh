#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A hostile provider writes garbage into a QP's mmap'd send ring and rings
# the doorbell: each bad WQE completes with the right error and moves its
# QP to ERR, a producer index beyond the ring is fatal to the QP
# (IBV_EVENT_QP_FATAL), random rings are survived, a bystander QP keeps
# working, the counters account for it and the kernel log stays clean.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 5
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_check "sroce_hostile (bad WQEs, bad index, 200 random rings, bystander)" \
	"$SROCE_BIN/sroce_hostile" -d sroce0 -g "$SROCE_GID" -r 200
bad_wqe=$(sroce_counter sroce0 bad_wqe)
bad_ring=$(sroce_counter sroce0 bad_ring_index)
tap_check "bad_wqe counts the six bad WQEs at least ($bad_wqe)" test "$bad_wqe" -ge 6
tap_check "bad_ring_index counts the bad producer index ($bad_ring)" test "$bad_ring" -ge 1
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" \
	"$SROCE_MAD_OBJECTS"
tap_check "rmmod afterwards" rmmod sroce
tap_done
