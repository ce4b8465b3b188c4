/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * sroce: the ABI between the kernel module and the rdma-core provider.
 *
 * This is the only header both sides include. Every structure here is
 * passed through uverbs udata or lives in memory shared through mmap, so
 * the layout is fixed: explicit widths, explicit padding, no pointers.
 *
 * Versioning: the kernel reports SROCE_UVERBS_ABI_VERSION as the device's
 * uverbs ABI version (sysfs abi_version); the provider accepts the range it
 * was built for. A change that breaks an existing layout bumps the version;
 * additions go at the end of a structure and are negotiated by its size.
 */
#ifndef SROCE_ABI_H
#define SROCE_ABI_H

#include <linux/types.h>

#define SROCE_UVERBS_ABI_VERSION	1

/*
 * Name of the read-only device attribute the kernel puts in
 * /sys/class/infiniband/<dev>/: the provider claims a device only when
 * this file exists and holds a version it supports, whatever the device
 * was named by "rdma link add".
 */
#define SROCE_SYSFS_ABI_ATTR		"sroce_abi_version"

/* Response to ibv_get_context (alloc_ucontext). */
struct sroce_alloc_ucontext_resp {
	__u32 abi_version;	/* SROCE_UVERBS_ABI_VERSION */
	__u32 flags;		/* SROCE_CTX_F_* */
	__u32 max_inline_data;	/* bytes of inline payload a send WQE holds */
	__u32 reserved;
};

/* Response to ibv_alloc_pd. */
struct sroce_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

#endif /* SROCE_ABI_H */
