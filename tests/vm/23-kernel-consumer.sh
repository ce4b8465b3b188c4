#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel consumers: tests/kmod/sroce_ktest.ko drives sroce through ib_core's
# kernel verbs the way ULPs do — ib_alloc_pd (local DMA lkey), ib_alloc_cq,
# ib_create_qp, ib_post_recv into the same rings userspace uses,
# ib_drain_qp (flush through wr_cqe->done), ib_alloc_mr + ib_map_mr_sg, and
# on an RC QP connected to itself a REG_MR chained before a SEND that
# gathers through the new MR's lkey (as iSER sends immediate data) — and
# fails to load if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap 'rmmod sroce_ktest 2>/dev/null; sroce_reset' EXIT

tap_plan 4
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_check "insmod sroce_ktest dev=sroce0 (all kernel-verbs checks pass)" \
	insmod "$SROCE_KTEST_KO" dev=sroce0
log=$(dmesg | grep 'sroce_ktest: ')
tap_diag "$log"
tap_check "its checks ran (a plan of at least 10)" \
	contains "$log" 'sroce_ktest: 1\.\.(1[0-9]|[2-9][0-9])$'
tap_expect_fail "no check failed" contains "$log" 'sroce_ktest: not ok'
rmmod sroce_ktest
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" "$SROCE_MAD_OBJECTS"
tap_done
