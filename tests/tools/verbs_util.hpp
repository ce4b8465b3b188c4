// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Small libibverbs helpers shared by the test tools.
#pragma once

#include <string.h>

#include <infiniband/verbs.h>

// Open the RDMA device called @name, or return nullptr.
inline ibv_context *open_device_by_name(const char *name)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_context *ctx = nullptr;

	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}
