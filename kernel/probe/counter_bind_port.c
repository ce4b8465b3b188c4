// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): binding a QP to an rdma_counter
 * names the port (7.x).
 */
#include <rdma/ib_verbs.h>

static int probe_bind(struct rdma_counter *counter, struct ib_qp *qp,
		      u32 port)
{
	return 0;
}

const struct ib_device_ops probe_ops = { .counter_bind_qp = probe_bind };
