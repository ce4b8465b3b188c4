// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): ib_device_ops.reg_user_mr_dmabuf
 * ends with the uverbs attribute bundle (6.10), not the udata.
 */
#include <rdma/ib_verbs.h>

static struct ib_mr *probe_reg_dmabuf(struct ib_pd *pd, u64 offset, u64 length,
				      u64 iova, int fd, int access,
				      struct uverbs_attr_bundle *attrs)
{
	return NULL;
}

const struct ib_device_ops probe_ops = { .reg_user_mr_dmabuf = probe_reg_dmabuf };
