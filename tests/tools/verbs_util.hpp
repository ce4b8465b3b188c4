// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Small libibverbs helpers shared by the test tools.
#pragma once

#include <stdint.h>
#include <stdio.h>
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

// A path MTU in bytes as the verbs' enum (4096 for anything larger).
inline ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

// Port 1's hw counter @name of device @dev, or -1 when there is none.
// Inside "ip netns exec" /sys is the namespace's own, where ib_core shows
// a compat copy of the device without hw_counters: init's view (through
// PID 1's root) has them.
inline long long read_hw_counter(const char *dev, const char *name)
{
	for (const char *root : {"", "/proc/1/root"}) {
		char path[256];
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/1/hw_counters/%s",
			 root, dev, name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		long long v = -1;
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
		return v;
	}
	return -1;
}
