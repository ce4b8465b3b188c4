// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): CQ resize is the user-only
 * ib_device_ops.resize_user_cq with an unsigned CQE count (7.1), not
 * resize_cq.
 */
#include <rdma/ib_verbs.h>

static int probe_resize_cq(struct ib_cq *cq, unsigned int cqe,
			   struct ib_udata *udata)
{
	return 0;
}

const struct ib_device_ops probe_ops = { .resize_user_cq = probe_resize_cq };
