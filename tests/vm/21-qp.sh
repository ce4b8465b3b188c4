#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Queue pairs through the provider and the kernel: capability limits and
# errnos, every legal state transition and illegal ones (EINVAL),
# ibv_query_qp returning what was set, 100 sends + 100 receives flushed in
# posting order on the move to ERR, a send posted in ERR flushed at once,
# posting by state (ibv_post_send and ibv_wr_* EINVAL in RESET, INIT, RTR
# with the SQ's prod unmoved, ibv_post_recv EINVAL in RESET only; in RTS
# the sends complete, in ERR everything is flushed; no refused WR ever
# completes), and 1000 create/INIT/destroy cycles over RC, UC and UD.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/../../tools/vm/netlib.sh"
source "$here/sroce.sh"
sroce_reset
trap sroce_reset EXIT

tap_plan 4
sroce_single_device || tap_bail "set-up: sroce0 on vethA"

tap_check "sroce_qp -n 1000 (caps, state machine, query, flush, posting by state)" \
	"$SROCE_BIN/sroce_qp" -d sroce0 -g "$SROCE_GID" -n 1000
tap_eq "rdma resource counts back to the MAD layer's own" "$(sroce_resources sroce0)" \
	"$SROCE_MAD_OBJECTS"
tap_check "doorbells counted" \
	bash -c '(( $(sroce_counter sroce0 doorbells) > 0 ))'
tap_check "rmmod with every object gone" rmmod sroce
tap_done
