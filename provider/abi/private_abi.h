/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * private_abi.h - our own declarations of the libibverbs *provider* ABI
 * (symbol version IBVERBS_PRIVATE_<N>) of every rdma-core release from 44
 * to 65, one declaration per struct and entry point, with what a range of
 * releases adds or changes under "#if SROCE_RDMA_CORE >= <first release>".
 * SROCE_RDMA_CORE and the private ABI number come from ranges.h.
 *
 * Debian ships libibverbs but not its provider headers
 * (infiniband/driver.h, kern-abi.h, cmd_*.h), so this file re-declares the
 * part we use.  It was written by reading rdma-core v44.0 .. v64.0 and the
 * 65.0 release:
 *   libibverbs/driver.h      verbs_match_ent, verbs_sysfs_dev,
 *                            verbs_device_ops, verbs_device,
 *                            verbs_context_ops, the verbs objects
 *                            (verbs_cq, verbs_mr, verbs_qp, verbs_srq,
 *                            verbs_xrcd), verbs_init_cq and the ibv_cmd_*()
 *                            prototypes for contexts, PDs, XRC domains,
 *                            MRs, MWs, CQs, SRQs, QPs, AHs and multicast
 *   libibverbs/kern-abi.h    write() command structs (struct ibv_get_context,
 *                            ibv_create_cq, ibv_reg_mr, ibv_create_qp_ex,
 *                            ibv_open_xrcd, ibv_open_qp, ibv_post_send
 *                            ...), struct ex_hdr
 *   libibverbs/cmd*.c        what each helper sends and fills in (noted at
 *                            the prototypes)
 *   libibverbs/libibverbs.map.in   which symbols carry IBVERBS_PRIVATE_<N>
 *   ccan/list.h              struct list_node
 *
 * Checked three ways:
 *   - at build time, against the installed headers: layouts.h holds, for
 *     every release, the size of each private struct and of the public
 *     structs they embed (ibv_context, ibv_qp_ex, ibv_cq_ex, ...) and the
 *     offset of each member, as the compiler lays them out from that
 *     release's own headers; the static_asserts at the end of this file
 *     fail the build on any difference (wrong declaration, or public
 *     headers of another release than the library's);
 *   - field by field, with every constant and every prototype (gcc
 *     -aux-info), against tests/unit/abi_reference/rdma-core-<N>.inc in
 *     tests/unit/test_abi.cpp ("make unit", and tests/host/60-provider-abi.sh
 *     for 44, 56.1 and 65);
 *   - at run time, sroce_provider.cpp refuses to register in a libibverbs
 *     of another release.
 *
 * IBVERBS_PRIVATE_<N> does not pin these layouts: rdma-core kept the name
 * IBVERBS_PRIVATE_34 from v34 to v56 and IBVERBS_PRIVATE_59 from v59 to
 * v63 while changing the structs underneath it (v35-v43 inserted members
 * into verbs_context_ops and verbs_sysfs_dev, v45 grew ibv_qp_ex and with
 * it verbs_qp, v54 gave ibv_cmd_reg_dmabuf_mr() a driver parameter, v62
 * inserted two ops).  So the build selects by release, not by private ABI
 * name.
 *
 * Public types (struct ibv_*, struct verbs_context, ...) come from the
 * installed <infiniband/verbs.h>; kernel uverbs structs come from the
 * installed <rdma/ib_user_verbs.h> (linux-libc-dev).
 */
#ifndef SROCE_PRIVATE_ABI_H
#define SROCE_PRIVATE_ABI_H

#include "abi/ranges.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>
#ifdef __cplusplus
#include <type_traits>
#else
#include <assert.h>
#include <stdbool.h>
#endif
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ccan/list.h: the list link libibverbs threads its objects on. */
struct list_node {
	struct list_node *next, *prev;
};

/* driver.h: verbs_log() levels (for __verbs_log). */
enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

/* driver.h: kinds of match-table entries. */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* driver.h: verbs_sysfs_dev.flags */
enum {
	VSYSFS_READ_MODALIAS = 1 << 0,
	VSYSFS_READ_NODE_GUID = 1 << 1,
};

/* An rdma device detected in sysfs (or netlink), owned by libibverbs. */
struct verbs_sysfs_dev {
	struct list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];	/* "uverbs0" */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];	/* "sroce0" */
	char ibdev_path[IBV_SYSFS_PATH_MAX];	/* "/sys/class/infiniband/sroce0" */
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;			/* enum rdma_driver_id */
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;			/* the device's uverbs abi_version */
	struct timespec time_created;
};

struct verbs_device;
struct verbs_context;
/* Only passed as NULL by this provider (driver.h / cmd_ioctl.h). */
struct ibv_command_buffer;
#if SROCE_RDMA_CORE >= 59
struct verbs_create_cq_prov_attr;
#endif
#if SROCE_RDMA_CORE >= 64
struct ibv_buf;
#endif

/*
 * driver.h: the provider's view of the verbs objects.  libibverbs hands
 * these to the ops (dereg_mr and rereg_mr take a verbs_mr) and the
 * ibv_cmd_* helpers fill them, so a provider object embeds the matching
 * verbs_* struct and finds itself from it with container_of.
 */
enum verbs_xrcd_mask {
	VERBS_XRCD_HANDLE = 1 << 0,
	VERBS_XRCD_RESERVED = 1 << 1,
};

/* ibv_cmd_create_cq_ex() cmd_flags */
enum create_cq_cmd_flags {
	CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX = 1 << 0,
};

struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;			/* VERBS_XRCD_* */
	uint32_t handle;
};

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

/* verbs_mr.mr_type: ibv_rereg_mr() refuses anything but IBV_MR_TYPE_MR. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;		/* set by ibv_cmd_reg_mr() */
	int access;				/* set by ibv_cmd_reg_mr() */
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;		/* qp_ex.qp_base is qp */
	};
	uint32_t comp_mask;			/* VERBS_QP_* */
	struct verbs_xrcd *xrcd;
};

/*
 * ibv_create_cq() returns the ibv_cq, ibv_create_cq_ex() the ibv_cq_ex;
 * both start at offset 0 (ibv_cq_ex_to_cq() is a cast).
 */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device; /* Must be first */
	const struct verbs_device_ops *ops;
	/*
	 * C11 atomic_int in libibverbs (same size and alignment as int on
	 * every Linux ABI).  Owned by libibverbs: the provider never touches it.
	 */
	int refcount;
	struct list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/*
 * Every op a provider can implement, in libibverbs' (alphabetical) order:
 * later releases insert theirs in the middle.  A NULL entry makes
 * libibverbs install its own stub (EOPNOTSUPP/ENOSYS).
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if SROCE_RDMA_CORE >= 64
	void *(*alloc_buf)(struct ibv_pd *pd, size_t size,
			   struct ibv_buf **buf);
#endif
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
#if SROCE_RDMA_CORE >= 59
	struct ibv_dmah *(*alloc_dmah)(struct ibv_context *context,
				       struct ibv_dmah_init_attr *attr);
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
#if SROCE_RDMA_CORE >= 65
	struct ibv_comp_cntr *(*create_comp_cntr)(
		struct ibv_context *context,
		struct ibv_comp_cntr_init_attr *attr);
#endif
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
#if SROCE_RDMA_CORE >= 59
	int (*dealloc_dmah)(struct ibv_dmah *dmah);
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
#if SROCE_RDMA_CORE >= 65
	int (*destroy_comp_cntr)(struct ibv_comp_cntr *comp_cntr);
#endif
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
#if SROCE_RDMA_CORE >= 62
	int (*dm_export_dmabuf_fd)(struct ibv_dm *dm);
#endif
#if SROCE_RDMA_CORE >= 64
	void (*free_buf)(struct ibv_buf *buf);
#endif
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
#if SROCE_RDMA_CORE >= 65
	int (*inc_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t amount);
	int (*inc_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t amount);
#endif
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
#if SROCE_RDMA_CORE >= 65
	int (*qp_attach_comp_cntr)(struct ibv_qp *qp,
				   struct ibv_comp_cntr *comp_cntr,
				   struct ibv_qp_attach_comp_cntr_attr *attr);
	int (*query_comp_cntr_caps)(struct ibv_context *context,
				    struct ibv_comp_cntr_caps *caps,
				    size_t caps_size);
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if SROCE_RDMA_CORE >= 62
	int (*query_port_speed)(struct ibv_context *context, uint32_t port_num,
				uint64_t *speed);
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
#if SROCE_RDMA_CORE >= 65
	int (*read_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t *value);
#endif
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
#if SROCE_RDMA_CORE >= 65
	int (*read_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				  uint64_t *value);
#endif
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if SROCE_RDMA_CORE >= 59
	struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *pd,
				    struct ibv_mr_init_attr *mr_init_attr);
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if SROCE_RDMA_CORE >= 65
	int (*set_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t value);
#endif
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
#if SROCE_RDMA_CORE >= 65
	int (*set_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t value);
#endif
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/*
 * kern-abi.h: the write() command buffers.  Each is the uverbs command
 * header followed by the kernel's core request struct (from
 * <rdma/ib_user_verbs.h>); the provider appends its own request after it
 * and passes the total size.  rdma-core embeds the kernel struct itself in
 * an anonymous union; that struct ends in a flexible array, which C++ does
 * not allow inside another struct, so the core fields are spelled out here
 * (the static_asserts below tie them to the kernel header).
 */
struct ibv_get_context {		/* IB_USER_VERBS_CMD_GET_CONTEXT */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};

struct ibv_query_port {			/* IB_USER_VERBS_CMD_QUERY_PORT */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u8 port_num;
	__u8 reserved[7];
};

struct ibv_alloc_pd {			/* IB_USER_VERBS_CMD_ALLOC_PD */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};

/*
 * OPEN_XRCD: an XRC domain, new (fd -1) or the one shared through an
 * inode (fd, oflags O_CREAT / O_EXCL).  CLOSE_XRCD is built by
 * ibv_cmd_close_xrcd() itself.
 */
struct ibv_open_xrcd {			/* IB_USER_VERBS_CMD_OPEN_XRCD */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 fd;
	__u32 oflags;
};

/*
 * The commands of the verbs objects (CQ, MR, MW, QP, SRQ).  Only the ones
 * a provider passes to an ibv_cmd_* helper (or writes itself) are here;
 * the helpers build the others (destroy_*, req_notify_cq, create_ah,
 * attach/detach_mcast, dereg_mr, dealloc_mw) internally.  The helper
 * fills every core field; the provider zeroes the buffer and, where it
 * has driver data, appends it and passes the larger size.
 */
struct ibv_alloc_mw {			/* IB_USER_VERBS_CMD_ALLOC_MW */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 pd_handle;
	__u8 mw_type;
	__u8 reserved[3];
};

struct ibv_create_cq {			/* IB_USER_VERBS_CMD_CREATE_CQ */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 cqe;
	__u32 comp_vector;
	__s32 comp_channel;
	__u32 reserved;
};

struct ibv_resize_cq {			/* IB_USER_VERBS_CMD_RESIZE_CQ */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 cq_handle;
	__u32 cqe;
};

struct ibv_reg_mr {			/* IB_USER_VERBS_CMD_REG_MR */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 start;
	__aligned_u64 length;
	__aligned_u64 hca_va;
	__u32 pd_handle;
	__u32 access_flags;
};

struct ibv_rereg_mr {			/* IB_USER_VERBS_CMD_REREG_MR */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 mr_handle;
	__u32 flags;
	__aligned_u64 start;
	__aligned_u64 length;
	__aligned_u64 hca_va;
	__u32 pd_handle;
	__u32 access_flags;
};

struct ibv_create_qp {			/* IB_USER_VERBS_CMD_CREATE_QP */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 send_cq_handle;
	__u32 recv_cq_handle;
	__u32 srq_handle;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u8 sq_sig_all;
	__u8 qp_type;
	__u8 is_srq;
	__u8 reserved;
};

/*
 * OPEN_QP: another handle on an existing XRC target QP, found by its
 * number in an XRC domain (pd_handle is the XRCD's handle); the response
 * is CREATE_QP's.
 */
struct ibv_open_qp {			/* IB_USER_VERBS_CMD_OPEN_QP */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 qpn;
	__u8 qp_type;
	__u8 reserved[7];
};

struct ibv_query_qp {			/* IB_USER_VERBS_CMD_QUERY_QP */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 attr_mask;
};

/*
 * MODIFY_QP and MODIFY_SRQ have no 64-bit member before the kernel
 * struct's __aligned_u64 driver_data[], which still makes rdma-core's
 * struct 8-byte aligned: so is ours.
 */
struct __attribute__((aligned(8))) ibv_modify_qp {	/* IB_USER_VERBS_CMD_MODIFY_QP */
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_qp_dest dest;
	struct ib_uverbs_qp_dest alt_dest;
	__u32 qp_handle;
	__u32 attr_mask;
	__u32 qkey;
	__u32 rq_psn;
	__u32 sq_psn;
	__u32 dest_qp_num;
	__u32 qp_access_flags;
	__u16 pkey_index;
	__u16 alt_pkey_index;
	__u8 qp_state;
	__u8 cur_qp_state;
	__u8 path_mtu;
	__u8 path_mig_state;
	__u8 en_sqd_async_notify;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 min_rnr_timer;
	__u8 port_num;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 alt_port_num;
	__u8 alt_timeout;
	__u8 reserved[2];
};

struct ibv_create_srq {			/* IB_USER_VERBS_CMD_CREATE_SRQ */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
};

struct ibv_create_xsrq {		/* IB_USER_VERBS_CMD_CREATE_XSRQ */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 srq_type;
	__u32 pd_handle;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 max_num_tags;
	__u32 xrcd_handle;
	__u32 cq_handle;
};

struct __attribute__((aligned(8))) ibv_modify_srq {	/* IB_USER_VERBS_CMD_MODIFY_SRQ */
	struct ib_uverbs_cmd_hdr hdr;
	__u32 srq_handle;
	__u32 attr_mask;
	__u32 max_wr;
	__u32 srq_limit;
};

struct ibv_query_srq {			/* IB_USER_VERBS_CMD_QUERY_SRQ */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 srq_handle;
	__u32 reserved;
};

/*
 * POST_SEND / POST_RECV / POST_SRQ_RECV: the kernel-side posting path
 * (ibv_cmd_post_*).  With wr_count 0 the command carries no work request
 * at all - rdma-core's rxe provider writes such a POST_SEND straight to
 * context->cmd_fd as its send doorbell:
 *
 *   struct ibv_post_send cmd = {};
 *   struct ib_uverbs_post_send_resp resp;
 *   cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
 *   cmd.hdr.in_words = sizeof(cmd) / 4;
 *   cmd.hdr.out_words = sizeof(resp) / 4;
 *   cmd.response = (uintptr_t)&resp;
 *   cmd.qp_handle = qp->handle;
 *   cmd.wqe_size = sizeof(struct ibv_send_wr);  // kernel: >= ib_uverbs_send_wr
 *   write(qp->context->cmd_fd, &cmd, sizeof(cmd));
 *
 * (the kernel's post_send must then accept a NULL wr list for user QPs).
 */
struct ibv_post_send {			/* IB_USER_VERBS_CMD_POST_SEND */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 wr_count;
	__u32 sge_count;
	__u32 wqe_size;
	/* then wr_count struct ib_uverbs_send_wr, then sge_count ibv_sge */
};

struct ibv_post_recv {			/* IB_USER_VERBS_CMD_POST_RECV */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 wr_count;
	__u32 sge_count;
	__u32 wqe_size;
	/* then wr_count struct ib_uverbs_recv_wr, then sge_count ibv_sge */
};

struct ibv_post_srq_recv {		/* IB_USER_VERBS_CMD_POST_SRQ_RECV */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 srq_handle;
	__u32 wr_count;
	__u32 sge_count;
	__u32 wqe_size;
};

/*
 * Extended commands: the two-part header, then the kernel struct (which
 * has no flexible array); driver data follows in 8-byte words.
 */
struct ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

struct ibv_create_cq_ex {		/* IB_USER_VERBS_EX_CMD_CREATE_CQ */
	struct ex_hdr hdr;
	__aligned_u64 user_handle;
	__u32 cqe;
	__u32 comp_vector;
	__s32 comp_channel;
	__u32 comp_mask;
	__u32 flags;			/* IB_UVERBS_CQ_FLAGS_* */
	__u32 reserved;
};

struct ibv_create_qp_ex {		/* IB_USER_VERBS_EX_CMD_CREATE_QP */
	struct ex_hdr hdr;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 send_cq_handle;
	__u32 recv_cq_handle;
	__u32 srq_handle;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u8 sq_sig_all;
	__u8 qp_type;
	__u8 is_srq;
	__u8 reserved;
	__u32 comp_mask;
	__u32 create_flags;
	__u32 rwq_ind_tbl_handle;
	__u32 source_qpn;
};

struct ibv_modify_qp_ex {		/* IB_USER_VERBS_EX_CMD_MODIFY_QP */
	struct ex_hdr hdr;
	struct ib_uverbs_modify_qp base;	/* ends in a zero-length array */
	__u32 rate_limit;
	__u32 reserved;
};

/*
 * Functions libibverbs exports to providers.  All of them are bound to
 * IBVERBS_PRIVATE_<N> at link time, so the provider fails to load (instead
 * of misbehaving) against a libibverbs without that version node.
 * verbs_register_driver_<N> (ranges.h names it).
 */
void SROCE_REGISTER_DRIVER(const struct verbs_device_ops *ops);

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

/*
 * Allocates alloc_size zeroed bytes, initialises the verbs_context found
 * (uintptr_t)context_offset bytes into them, takes ownership of cmd_fd
 * (closed on failure).  Use the verbs_init_and_alloc_context() helper.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/*
 * The ibv_cmd_* helpers return 0 or a positive errno value.  cmd/resp
 * point at buffers that start with the core struct and continue with the
 * provider's udata; cmd_size/resp_size are the full sizes.
 */
/* 57: fd_arr (NULL: no fds to pass to the kernel). */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
#if SROCE_RDMA_CORE >= 57
			struct ibv_fd_arr *fd_arr,
#endif
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/* ---- XRC domains ---- */
/*
 * open_xrcd: EOPNOTSUPP for attr->comp_mask bits from
 * IBV_XRCD_INIT_ATTR_RESERVED on, EINVAL without both FD and OFLAGS;
 * write() OPEN_XRCD {fd, oflags}.  On success xrcd->xrcd.context and,
 * when vxrcd_size covers the member, handle (comp_mask VERBS_XRCD_HANDLE).
 * Unchanged from 44 to 65.
 */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size,
		      struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
/* The XRCD_DESTROY ioctl, else write() CLOSE_XRCD {xrcd->handle}. */
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);

/*
 * Called by libibverbs itself right after the provider's create_cq /
 * create_cq_ex returns (context, channel refcount, cq_context, event
 * counters, mutex/cond): a provider must not call it again.
 */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

/* ---- MR, MW ---- */
/*
 * reg_mr: fills cmd (start, length, hca_va, pd_handle, access_flags) and,
 * on success, vmr->ibv_mr.handle/lkey/rkey/context, vmr->mr_type =
 * IBV_MR_TYPE_MR and vmr->access; ibv_reg_mr() then sets pd, addr, length.
 */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access,
		   struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
		   size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
/*
 * rereg_mr: pd_handle is sent only with IBV_REREG_MR_CHANGE_PD; on success
 * lkey/rkey come from the response (and context from pd with CHANGE_PD);
 * ibv_rereg_mr() then updates pd, addr and length.
 */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
/* advise_mr: the ADVISE_MR ioctl with the SGEs as they are. */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
/*
 * reg_dmabuf_mr: the REG_DMABUF_MR ioctl only (no write() command, no
 * cmd/resp buffers); on success vmr->ibv_mr.handle/lkey/rkey/context/pd,
 * addr = offset, length and vmr->mr_type = IBV_MR_TYPE_DMABUF_MR, not
 * vmr->access; ibv_reg_dmabuf_mr() then sets context, pd, addr, length
 * again.  54: driver (NULL: no driver attributes), under the same
 * IBVERBS_PRIVATE_34; see sroce_cmd_reg_dmabuf_mr().
 */
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr
#if SROCE_RDMA_CORE >= 54
			  , struct ibv_command_buffer *driver
#endif
			  );
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

/* ---- CQ ---- */
/*
 * create_cq / create_cq_ex try the ioctl() CQ_CREATE method first and
 * fall back to write() CREATE_CQ (or EX_CREATE_CQ when flags need it);
 * either way the driver response is at resp + sizeof(*resp) and the
 * handle and the kernel's cqe land in the ibv_cq.  create_cq_ex refuses
 * comp_mask bits other than IBV_CQ_INIT_ATTR_MASK_FLAGS/_PD (EOPNOTSUPP)
 * and turns the timestamp wc_flags and IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN
 * into IB_UVERBS_CQ_FLAGS_* for the kernel.
 */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel,
		      int comp_vector, struct ibv_cq *cq,
		      struct ibv_create_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_create_cq_resp *resp, size_t resp_size);
/* 59: prov_attr (NULL: the kernel allocates the CQ buffer). */
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
#if SROCE_RDMA_CORE >= 59
			 struct verbs_create_cq_prov_attr *prov_attr,
#endif
			 struct verbs_cq *cq,
			 struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size,
			 uint32_t cmd_flags);
/* The kernel-side poll (POLL_CQ); mallocs its buffer: not for the ring. */
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
/*
 * write() REQ_NOTIFY_CQ {cq_handle, solicited_only = !!solicited_only}, no
 * response, no driver data, no ioctl() path in rdma-core 44.
 */
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* write() RESIZE_CQ; on success sets cq->cqe from the response. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
/* Waits until every reported completion/async event has been acked. */
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

/* ---- SRQ ---- */
int ibv_cmd_create_srq(struct ibv_pd *pd,
		       struct ibv_srq *srq, struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
/*
 * create_srq_ex: EOPNOTSUPP for comp_mask bits from
 * IBV_SRQ_INIT_ATTR_RESERVED on, EINVAL without IBV_SRQ_INIT_ATTR_PD (or,
 * for IBV_SRQT_XRC, without XRCD and CQ).  The SRQ_CREATE ioctl, else
 * write() CREATE_SRQ for IBV_SRQT_BASIC (attr_ex->srq_type read as it is)
 * and CREATE_XSRQ otherwise; the driver response follows the core one
 * either way.  Sets srq->srq's context, handle (pd only from 58 on) and,
 * for an XRC SRQ, srq_type, srq_num (the response's srqn), xrcd and cq;
 * attr_ex->attr gets the granted max_wr and max_sge.  pd and srq_context
 * are the provider's to set (nothing in libibverbs runs after the op).
 */
int ibv_cmd_create_srq_ex(struct ibv_context *context,
			  struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq,
		       struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask,
		       struct ibv_modify_srq *cmd, size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq,
		      struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/* ---- QP ---- */
int ibv_cmd_create_qp(struct ibv_pd *pd,
		      struct ibv_qp *qp, struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context,
			 struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
/* 64: driver (NULL: no driver ioctl attributes). */
int ibv_cmd_create_qp_ex2(struct ibv_context *context,
			  struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr,
			  struct ibv_create_qp_ex *cmd,
			  size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size
#if SROCE_RDMA_CORE >= 64
			  , struct ibv_command_buffer *driver
#endif
			  );
/*
 * open_qp: EOPNOTSUPP for comp_mask bits from IBV_QP_OPEN_ATTR_RESERVED
 * on, EINVAL without XRCD, NUM and TYPE; write() OPEN_QP {user_handle = qp,
 * pd_handle = the XRCD's handle, qpn, qp_type}.  On success the ibv_qp's
 * handle, context, qp_context, qp_num, qp_type, state IBV_QPS_UNKNOWN,
 * mutex/cond (pd, CQs, srq NULL) and, when vqp_sz covers the member,
 * xrcd (comp_mask VERBS_QP_XRCD).  Unchanged from 44 to 65.
 */
int ibv_cmd_open_qp(struct ibv_context *context,
		    struct verbs_qp *qp, int vqp_sz,
		    struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_modify_qp_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
/* Post through the kernel (alloca()s the command): the slow path. */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/* ---- AH ---- */
/* Builds its own CREATE_AH command (no driver request data). */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The write() command structs must be header + kernel core struct, exactly. */
#define SROCE_ABI_ASSERT_CMD(cmd, kstruct, first)                         \
	static_assert(sizeof(struct cmd) ==                                  \
			      sizeof(struct ib_uverbs_cmd_hdr) +             \
				      sizeof(struct kstruct),                \
		      #cmd " size");                                         \
	static_assert(offsetof(struct cmd, first) ==                         \
			      sizeof(struct ib_uverbs_cmd_hdr) +             \
				      offsetof(struct kstruct, first),       \
		      #cmd " layout")
SROCE_ABI_ASSERT_CMD(ibv_get_context, ib_uverbs_get_context, response);
SROCE_ABI_ASSERT_CMD(ibv_query_port, ib_uverbs_query_port, response);
SROCE_ABI_ASSERT_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd, response);
SROCE_ABI_ASSERT_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd, response);
SROCE_ABI_ASSERT_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw, response);
SROCE_ABI_ASSERT_CMD(ibv_create_cq, ib_uverbs_create_cq, response);
SROCE_ABI_ASSERT_CMD(ibv_resize_cq, ib_uverbs_resize_cq, response);
SROCE_ABI_ASSERT_CMD(ibv_reg_mr, ib_uverbs_reg_mr, response);
SROCE_ABI_ASSERT_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr, response);
SROCE_ABI_ASSERT_CMD(ibv_create_qp, ib_uverbs_create_qp, response);
SROCE_ABI_ASSERT_CMD(ibv_open_qp, ib_uverbs_open_qp, response);
SROCE_ABI_ASSERT_CMD(ibv_query_qp, ib_uverbs_query_qp, response);
SROCE_ABI_ASSERT_CMD(ibv_modify_qp, ib_uverbs_modify_qp, dest);
SROCE_ABI_ASSERT_CMD(ibv_create_srq, ib_uverbs_create_srq, response);
SROCE_ABI_ASSERT_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq, response);
SROCE_ABI_ASSERT_CMD(ibv_modify_srq, ib_uverbs_modify_srq, srq_handle);
SROCE_ABI_ASSERT_CMD(ibv_query_srq, ib_uverbs_query_srq, response);
SROCE_ABI_ASSERT_CMD(ibv_post_send, ib_uverbs_post_send, response);
SROCE_ABI_ASSERT_CMD(ibv_post_recv, ib_uverbs_post_recv, response);
SROCE_ABI_ASSERT_CMD(ibv_post_srq_recv, ib_uverbs_post_srq_recv, response);
static_assert(offsetof(struct ibv_open_xrcd, oflags) ==
		      sizeof(struct ib_uverbs_cmd_hdr) +
			      offsetof(struct ib_uverbs_open_xrcd, oflags),
	      "ibv_open_xrcd layout");
static_assert(offsetof(struct ibv_open_qp, qp_type) ==
		      sizeof(struct ib_uverbs_cmd_hdr) +
			      offsetof(struct ib_uverbs_open_qp, qp_type),
	      "ibv_open_qp layout");
static_assert(offsetof(struct ibv_query_port, port_num) ==
		      sizeof(struct ib_uverbs_cmd_hdr) +
			      offsetof(struct ib_uverbs_query_port, port_num),
	      "ibv_query_port layout");
#undef SROCE_ABI_ASSERT_CMD

/* Extended commands: struct ex_hdr + the kernel struct, 8-byte multiples. */
#define SROCE_ABI_ASSERT_CMD_EX(cmd, kstruct, first)                      \
	static_assert(sizeof(struct cmd) ==                                  \
			      sizeof(struct ex_hdr) + sizeof(struct kstruct), \
		      #cmd " size");                                         \
	static_assert(sizeof(struct cmd) % 8 == 0, #cmd " alignment");       \
	static_assert(offsetof(struct cmd, first) ==                         \
			      sizeof(struct ex_hdr) +                        \
				      offsetof(struct kstruct, first),       \
		      #cmd " layout")
static_assert(sizeof(struct ex_hdr) == 24, "ex_hdr");
SROCE_ABI_ASSERT_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq, user_handle);
SROCE_ABI_ASSERT_CMD_EX(ibv_create_qp_ex, ib_uverbs_ex_create_qp, user_handle);
SROCE_ABI_ASSERT_CMD_EX(ibv_modify_qp_ex, ib_uverbs_ex_modify_qp, base);
static_assert(offsetof(struct ibv_create_cq_ex, reserved) ==
		      sizeof(struct ex_hdr) +
			      offsetof(struct ib_uverbs_ex_create_cq, reserved),
	      "ibv_create_cq_ex layout");
static_assert(offsetof(struct ibv_create_qp_ex, source_qpn) ==
		      sizeof(struct ex_hdr) +
			      offsetof(struct ib_uverbs_ex_create_qp, source_qpn),
	      "ibv_create_qp_ex layout");
static_assert(offsetof(struct ibv_modify_qp_ex, rate_limit) ==
		      sizeof(struct ex_hdr) +
			      offsetof(struct ib_uverbs_ex_modify_qp, rate_limit),
	      "ibv_modify_qp_ex layout");
#undef SROCE_ABI_ASSERT_CMD_EX

static_assert(offsetof(struct verbs_device, device) == 0,
	      "ibv_device must be first in verbs_device");
static_assert(offsetof(struct verbs_mr, ibv_mr) == 0, "verbs_mr");
static_assert(offsetof(struct verbs_cq, cq) == 0 &&
		      offsetof(struct verbs_cq, cq_ex) == 0,
	      "verbs_cq: ibv_cq_ex_to_cq() is a cast");
static_assert(offsetof(struct verbs_qp, qp) == 0 &&
		      offsetof(struct ibv_qp_ex, qp_base) == 0,
	      "verbs_qp");

/*
 * Every private struct above, and the public structs they embed, laid out
 * exactly as the compiler lays them out from the selected release's own
 * headers (layouts.h, generated from rdma-core's sources at each tag).  A
 * failure here means either a wrong declaration above or public headers
 * (<infiniband/verbs.h>) of another release than the libibverbs the
 * Makefile found: build with LIBIBVERBS_ROOT pointing at one release's
 * headers and library.
 */
#ifdef __cplusplus
#define SROCE_ABI_ALIGNOF(t) alignof(t)
#else
#define SROCE_ABI_ALIGNOF(t) _Alignof(t)
#endif
#define SROCE_LAYOUT_SIZE(t, sz, al)                                         \
	static_assert(sizeof(struct t) == (sz) &&                            \
			      SROCE_ABI_ALIGNOF(struct t) == (al),           \
		      "struct " #t ": size/alignment differs from rdma-core " \
		      SROCE_ABI_STR(SROCE_RDMA_CORE) "'s");
#define SROCE_LAYOUT_FIELD(t, f, off, sz)                                    \
	static_assert(offsetof(struct t, f) == (off) &&                      \
			      sizeof(((struct t *)0)->f) == (sz),            \
		      "struct " #t " member " #f                             \
		      ": offset/size differs from rdma-core "                \
		      SROCE_ABI_STR(SROCE_RDMA_CORE) "'s");
#include "abi/layouts.h"
#undef SROCE_LAYOUT_SIZE
#undef SROCE_LAYOUT_FIELD

#ifdef __cplusplus
/*
 * The helpers whose parameter lists changed, called with the rdma-core 44
 * parameters; what later releases added is passed as NULL (no fds, no
 * provider-allocated CQ buffer, no driver ioctl attributes), as rxe does.
 */
static inline int sroce_cmd_get_context(struct verbs_context *context,
					struct ibv_get_context *cmd,
					size_t cmd_size,
					struct ib_uverbs_get_context_resp *resp,
					size_t resp_size)
{
#if SROCE_RDMA_CORE >= 57
	return ibv_cmd_get_context(context, cmd, cmd_size, nullptr, resp,
				   resp_size);
#else
	return ibv_cmd_get_context(context, cmd, cmd_size, resp, resp_size);
#endif
}

static inline int sroce_cmd_create_cq_ex(struct ibv_context *context,
					 const struct ibv_cq_init_attr_ex *cq_attr,
					 struct verbs_cq *cq,
					 struct ibv_create_cq_ex *cmd,
					 size_t cmd_size,
					 struct ib_uverbs_ex_create_cq_resp *resp,
					 size_t resp_size, uint32_t cmd_flags)
{
#if SROCE_RDMA_CORE >= 59
	return ibv_cmd_create_cq_ex(context, cq_attr, nullptr, cq, cmd,
				    cmd_size, resp, resp_size, cmd_flags);
#else
	return ibv_cmd_create_cq_ex(context, cq_attr, cq, cmd, cmd_size, resp,
				    resp_size, cmd_flags);
#endif
}

static inline int sroce_cmd_create_qp_ex2(struct ibv_context *context,
					  struct verbs_qp *qp,
					  struct ibv_qp_init_attr_ex *qp_attr,
					  struct ibv_create_qp_ex *cmd,
					  size_t cmd_size,
					  struct ib_uverbs_ex_create_qp_resp *resp,
					  size_t resp_size)
{
#if SROCE_RDMA_CORE >= 64
	return ibv_cmd_create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp,
				     resp_size, nullptr);
#else
	return ibv_cmd_create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp,
				     resp_size);
#endif
}

static inline int sroce_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					  size_t length, uint64_t iova, int fd,
					  int access, struct verbs_mr *vmr)
{
#if SROCE_RDMA_CORE >= 54
	return ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr,
				     nullptr);
#else
	return ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr);
#endif
}

/* driver.h verbs_get_mr(): ibv_mr is the first member of verbs_mr. */
static inline struct verbs_mr *verbs_get_mr(struct ibv_mr *mr)
{
	return reinterpret_cast<struct verbs_mr *>(mr);
}

/* driver.h verbs_get_device(): ibv_device is the first member. */
static inline struct verbs_device *verbs_get_device(const struct ibv_device *dev)
{
	return reinterpret_cast<struct verbs_device *>(
		const_cast<struct ibv_device *>(dev));
}

/*
 * driver.h verbs_init_and_alloc_context(), same call shape as rdma-core's:
 *   ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx, drv_id);
 * allocates *ctx zeroed (calloc inside libibverbs) and initialises the
 * verbs_context member ibv_ctx.  It is released with verbs_uninit_context()
 * then free(), so the wrapper type must be trivial.
 */
template <class T>
static inline T *sroce_abi_init_and_alloc_context(struct ibv_device *device,
						    int cmd_fd, size_t offset,
						    uint32_t driver_id)
{
	static_assert(std::is_trivial_v<T> && std::is_standard_layout_v<T>,
		      "context wrapper is calloc()ed and free()d by C code");
	return static_cast<T *>(_verbs_init_and_alloc_context(
		device, cmd_fd, sizeof(T),
		reinterpret_cast<struct verbs_context *>(offset), driver_id));
}
#define verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr, ctx_memb,   \
				     driver_id)                              \
	({                                                                   \
		using sroce_ctx_t_ = std::remove_pointer_t<decltype(drv_ctx_ptr)>; \
		static_assert(std::is_same_v<decltype(sroce_ctx_t_::ctx_memb), \
					     struct verbs_context>,          \
			      #ctx_memb " must be a struct verbs_context");  \
		sroce_abi_init_and_alloc_context<sroce_ctx_t_>(            \
			ibdev, cmd_fd, offsetof(sroce_ctx_t_, ctx_memb),     \
			driver_id);                                          \
	})
#endif

#endif /* SROCE_PRIVATE_ABI_H */
