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

/*
 * What the kernel executes beyond the first ABI (a provider enables the
 * matching ibv_qp_ex builders only when its kernel says so).
 */
#define SROCE_CTX_F_ATOMIC_WRITE	(1U << 0)	/* SROCE_WR_ATOMIC_WRITE */
#define SROCE_CTX_F_FLUSH		(1U << 1)	/* SROCE_WR_FLUSH */
#define SROCE_CTX_F_XRC			(1U << 2)	/* XRC QPs, SRQs, domains */

/* Response to ibv_alloc_pd. */
struct sroce_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

/*
 * Shared rings
 * ============
 *
 * Every queue (SQ, RQ, SRQ, CQ) is one mapping: a struct sroce_ring_hdr
 * followed, at SROCE_RING_DATA_OFFSET, by a power-of-two number of
 * fixed-size elements (the stride is a power of two, >= 64). Indices are
 * free-running u32 counters; element i lives at (i & (entries - 1)).
 *
 * The producer and consumer indices sit on separate cache lines. The side
 * that owns an index stores it with release semantics after writing the
 * elements; the other side loads it with acquire semantics.
 *
 *   SQ, RQ, SRQ: userspace produces (prod), the kernel consumes (cons).
 *   CQ:          the kernel produces, userspace consumes.
 *
 * A work queue slot stays owned by the kernel until its work request is
 * complete: the kernel advances an SQ's or RQ's cons when it posts the
 * WQE's completion (or flush), not when it reads the WQE. So at most
 * "entries" work requests are outstanding, which is what lets an
 * application size its CQs from max_send_wr/max_recv_wr. Reserved fields
 * and unknown flag bits must be zero.
 *
 * The kernel never trusts a value userspace can write: it keeps its own
 * copy of the index it owns, checks that the other index is at most
 * "entries" ahead of (or behind) it, and works on a private copy of each
 * element it reads, which it validates before use.
 */
struct sroce_ring_hdr {
	__u32 prod;
	__u32 pad_prod[15];
	__u32 cons;
	__u32 pad_cons[15];
	/*
	 * Written by the kernel only (SROCE_RING_F_*). For a send queue:
	 * NEED_KICK is set while the kernel's requester is idle — after a
	 * producer store, userspace issues a full fence, reads flags and
	 * makes the doorbell system call only if NEED_KICK is set. The kernel
	 * sets NEED_KICK, fences, and checks prod once more before it sleeps,
	 * so no posted work is left behind.
	 */
	__u32 flags;
	__u32 pad_flags[15];
};

#define SROCE_RING_DATA_OFFSET		192
#define SROCE_RING_F_NEED_KICK		(1U << 0)
#define SROCE_RING_F_ERROR		(1U << 1)	/* queue is in error */

/* Where a ring lives: pass to mmap() on the device's command fd. */
struct sroce_ring_info {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_length;	/* header + elements, page aligned */
	__u32 entries;			/* power of two */
	__u32 stride;			/* bytes per element, power of two */
};

/* A scatter/gather element of a work request. */
struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Send WQE opcodes: the values of enum ib_wr_opcode / ibv_wr_opcode. */
enum sroce_wr_opcode {
	SROCE_WR_RDMA_WRITE = 0,
	SROCE_WR_RDMA_WRITE_WITH_IMM = 1,
	SROCE_WR_SEND = 2,
	SROCE_WR_SEND_WITH_IMM = 3,
	SROCE_WR_RDMA_READ = 4,
	SROCE_WR_ATOMIC_CMP_AND_SWP = 5,
	SROCE_WR_ATOMIC_FETCH_AND_ADD = 6,
	SROCE_WR_LOCAL_INV = 7,
	SROCE_WR_BIND_MW = 8,
	SROCE_WR_SEND_WITH_INV = 9,
	SROCE_WR_FLUSH = 14,		/* SROCE_CTX_F_FLUSH */
	SROCE_WR_ATOMIC_WRITE = 15,	/* SROCE_CTX_F_ATOMIC_WRITE */
};

/*
 * ATOMIC_WRITE (RC): wr.rdma names the remote 8-byte-aligned word; the 8
 * bytes to place are the WQE's payload (inline or SGEs, exactly 8), sent
 * and stored as they are, in one 64-bit store.
 * FLUSH (RC): wr.flush; no payload, no SGEs. type is the placement
 * (SROCE_FLUSH_GLOBAL), level the selectivity (SROCE_FLUSH_RANGE or
 * SROCE_FLUSH_MR: the whole MR the rkey names, remote_addr and length
 * not used), the values of ibv_wr_flush(3).
 */
#define SROCE_FLUSH_GLOBAL	1
#define SROCE_FLUSH_PERSISTENT	2
#define SROCE_FLUSH_RANGE	0
#define SROCE_FLUSH_MR		1

/* Send WQE flags. */
#define SROCE_WQE_F_SIGNALED	(1U << 0)
#define SROCE_WQE_F_SOLICITED	(1U << 1)
#define SROCE_WQE_F_FENCE	(1U << 2)
#define SROCE_WQE_F_INLINE	(1U << 3)	/* payload follows the header */

/*
 * Send WQE: a 64-byte header, then num_sge struct sroce_sge or
 * inline_len bytes of inline data, within the queue's stride.
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u8 opcode;			/* enum sroce_wr_opcode */
	__u8 num_sge;
	__u16 flags;			/* SROCE_WQE_F_* */
	__u32 inline_len;
	union {
		__be32 imm_data;
		__u32 invalidate_rkey;
	} ex;
	__u32 xrc_srqn;			/* XRC_SEND QPs: the remote SRQ */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah_num;	/* from struct sroce_create_ah_resp */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mw_handle;
			__u32 rkey;
			__u32 mr_lkey;
			__u32 access;
		} bind_mw;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 length;
			__u32 rkey;
			__u8 type;	/* SROCE_FLUSH_GLOBAL | _PERSISTENT */
			__u8 level;	/* SROCE_FLUSH_RANGE or _MR */
			__u16 reserved;
		} flush;
		__u8 raw[40];
	} wr;
};

#define SROCE_SEND_WQE_HDR	64

/* Receive WQE: a 16-byte header, then num_sge struct sroce_sge. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

#define SROCE_RECV_WQE_HDR	16

/*
 * Completion queue entry, 64 bytes. status and opcode use the values of
 * ibv_wc_status and ibv_wc_opcode (equal to the kernel's ib_wc_status and
 * ib_wc_opcode). wc_flags uses SROCE_WC_F_*, the values of ibv_wc_flags:
 * the kernel's IB_WC_* flags differ (WITH_INVALIDATE and IP_CSUM_OK are
 * swapped), so the kernel translates for its own consumers.
 */
#define SROCE_WC_F_GRH		(1U << 0)
#define SROCE_WC_F_WITH_IMM	(1U << 1)
#define SROCE_WC_F_IP_CSUM_OK	(1U << 2)
#define SROCE_WC_F_WITH_INV	(1U << 3)

/*
 * network_hdr_type of a receive with SROCE_WC_F_GRH: the kernel's enum
 * rdma_network_type values for the headers the packet came with (the GRH
 * area holds an IPv6 header, or 20 zero bytes and an IPv4 header).
 */
#define SROCE_NETWORK_ROCE_V1	1
#define SROCE_NETWORK_IPV4	2
#define SROCE_NETWORK_IPV6	3

struct sroce_cqe {
	__aligned_u64 wr_id;
	__u8 status;
	__u8 opcode;
	__u16 wc_flags;
	__u32 byte_len;
	__u32 qp_num;
	__u32 src_qp;
	union {
		__be32 imm_data;
		__u32 invalidated_rkey;
	} ex;
	__u32 vendor_err;
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 network_hdr_type;
	__aligned_u64 timestamp;
	__u32 reserved[4];
};

#define SROCE_CQE_SIZE		64

/* ibv_create_cq / ibv_resize_cq responses. */
struct sroce_create_cq_resp {
	struct sroce_ring_info ring;
	__u32 cqn;
	__u32 reserved;
};

struct sroce_resize_cq_resp {
	struct sroce_ring_info ring;
};

/* ibv_create_qp response: the send and receive rings. */
struct sroce_create_qp_resp {
	struct sroce_ring_info sq;
	struct sroce_ring_info rq;	/* entries == 0 with an SRQ */
	__u32 qpn;
	__u32 max_inline_data;
};

/* ibv_create_srq response. */
struct sroce_create_srq_resp {
	struct sroce_ring_info rq;
	__u32 srqn;
	__u32 reserved;
};

/* ibv_create_ah response: the number a UD send WQE names the AH by. */
struct sroce_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

#endif /* SROCE_ABI_H */
