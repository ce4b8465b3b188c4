// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce.hpp - provider-internal types of the sroce rdma-core provider.
//
// Everything here has hidden visibility (-fvisibility=hidden); the shared
// object exports nothing and registers itself from a constructor.
#ifndef SROCE_PROVIDER_HPP
#define SROCE_PROVIDER_HPP

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <type_traits>

#include "abi/private_abi.h"
#include "ring.hpp"
#include "wqe.hpp"
#include <sroce-abi.h>

namespace sroce {

// The only uverbs/sroce ABI revision this provider speaks.
inline constexpr uint32_t kAbiVersion = SROCE_UVERBS_ABI_VERSION;

// container_of for the C structs libibverbs hands back.
template <class Outer, class Inner>
static inline Outer *container_of(Inner *p, size_t member_offset)
{
	return reinterpret_cast<Outer *>(reinterpret_cast<char *>(p) -
					 member_offset);
}

// One per ibv_device libibverbs found and we claimed.
struct device {
	struct verbs_device ibv_dev;	// must be first
	uint32_t abi_version;		// uverbs abi_version from sysfs
};
static_assert(offsetof(device, ibv_dev) == 0);

// One per ibv_open_device().
struct context {
	struct verbs_context ibv_ctx;
	uint32_t abi_version;		// sroce_alloc_ucontext_resp.abi_version
	uint32_t flags;			// SROCE_CTX_F_*
	uint32_t max_inline_data;
};

struct pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
};

// An address handle: UD send WQEs name it by the kernel's number.
struct ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;		// sroce_create_ah_resp.ah_num
};

// A completion queue: the kernel produces struct sroce_cqe into a ring we
// map; ibv_poll_cq and the ibv_cq_ex iterator consume it without a
// system call.
//
// lock (a spinlock: the critical sections are a few loads and stores)
// guards the consumer side - ring, cur, map/map_len - because libibverbs
// lets several threads poll one CQ.  It is held from a successful
// start_poll to end_poll, and across resize_cq's command, because the
// kernel copies the unpolled CQEs from our consumer index into the new
// ring: no one may consume from the old ring meanwhile.
struct cq {
	struct verbs_cq vcq;		// ibv_cq / ibv_cq_ex; must be first
	pthread_spinlock_t lock;
	consumer_ring ring;		// detached when there is no mapping
	// cq_ex: the CQE start_poll/next_poll made current, else kNoCqe.
	const struct sroce_cqe *cur;
	// cq_ex: the thread between a successful start_poll and its
	// end_poll, else 0.  Written under lock, read without it (relaxed)
	// by next_poll/end_poll: a call from a thread without a batch of its
	// own - end_poll after a failed start_poll, which ibv_create_cq_ex(3)
	// forbids and rxe turns into a double unlock and an index overrun -
	// then finds someone else's id (or 0) and does nothing.
	pthread_t poller;
	void *map;			// our mmap() of the ring, or nullptr
	size_t map_len;
	uint32_t cqn;			// sroce_create_cq_resp.cqn
};
static_assert(offsetof(cq, vcq) == 0);

// What cq::cur points at when no CQE is current: reads give zeros.
extern const struct sroce_cqe kNoCqe;

// A memory region: libibverbs' verbs_mr is all the state there is.
struct mr {
	struct verbs_mr vmr;		// must be first
};
static_assert(offsetof(mr, vmr) == 0);

// The ibv_wr_* batch of a QP created with send_ops_flags (qp_ex.cpp):
// what ibv_wr_start began and ibv_wr_complete publishes.  Only touched
// under the QP's sq_lock, which the batch holds from wr_start on.
struct wr_batch {
	send_wqe_builder wqe;		// the WR being built: SQ slot n - 1
	uint32_t room;			// free SQ slots (re-read when reached)
	uint32_t n;			// WQEs begun since wr_start
	int err;			// first error of the batch, 0 if none
	bool open;			// wqe is begun and not yet finished
	bool need_ud;			// open WR on a UD QP lacks wr_set_ud_addr
	bool need_xrc;			// open WR on an XRC_SEND QP that goes to
					// the wire lacks wr_set_xrc_srqn
	bool inline_sges;		// wr_flags had IBV_SEND_INLINE: the SGE
					// setters copy the bytes inline
};

// A queue pair: the SQ and (without an SRQ) the RQ are rings we produce
// into and the kernel consumes (uapi/sroce-abi.h).  An XRC initiator
// (XRC_SEND) has an SQ and no RQ; an XRC target (XRC_RECV, created or
// opened by number) has neither: ib_core makes it without driver data,
// its requests come from the initiator and its receives from the SRQs of
// its domain.  has_sq / has_rq say which rings exist.  sq_lock guards the
// SQ producer side (sq, its shadow prod, wr), rq_lock the RQ's; both
// are spinlocks held while WQEs are written and never across a system
// call - ibv_post_send holds sq_lock for one call, the ibv_wr_* API from
// ibv_wr_start to ibv_wr_complete / ibv_wr_abort.
//
// state is the ibv_qp_state our last successful modify_qp with
// IBV_QP_STATE set (RESET from creation): the posts read it once per
// call, without a lock, to refuse WRs the state forbids (post_send_ok,
// post_recv_ok).  Stored with release after the command returned, loaded
// with acquire: a post that sees the new state also sees the ring flags
// the kernel set in that command (RESET clears ERROR), never older ones.
struct qp {
	struct verbs_qp vqp;		// ibv_qp / ibv_qp_ex; must be first
	std::atomic<int> state;		// enum ibv_qp_state
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	producer_ring sq;
	producer_ring rq;		// detached with an SRQ
	send_queue_caps scaps;		// granted: what encode_send_wqe allows
	recv_queue_caps rcaps;
	void *sq_map;
	size_t sq_map_len;
	void *rq_map;
	size_t rq_map_len;
	uint32_t qpn;			// sroce_create_qp_resp.qpn (or ib_core's)
	bool has_sq;			// sq is mapped (not an XRC target)
	bool has_rq;			// rq is mapped (no SRQ, not XRC)
	// ibv_qp_ex: the opcodes send_ops_flags enabled (wr_bit() of each
	// ibv_wr_opcode: IBV_QP_EX_WITH_<op> == wr_bit(IBV_WR_<op>)), 0 for
	// a QP that is not an ibv_qp_ex, and the batch in progress.
	uint32_t send_ops;
	wr_batch wr;
};
static_assert(offsetof(qp, vqp) == 0);

// A shared receive queue: one ring of struct sroce_recv_wqe.  Basic and
// XRC SRQs are the same ring; an XRC SRQ also has its domain, its CQ and
// the number initiators name it by (vsrq.srq_type, xrcd, cq, srq_num, as
// ibv_cmd_create_srq_ex set them).
struct srq {
	struct verbs_srq vsrq;		// vsrq.srq first: must be first
	pthread_spinlock_t lock;
	producer_ring ring;
	recv_queue_caps caps;
	void *map;
	size_t map_len;
	uint32_t srqn;			// sroce_create_srq_resp.srqn
};
static_assert(offsetof(srq, vsrq) == 0 && offsetof(struct verbs_srq, srq) == 0);

static inline context *to_sctx(struct ibv_context *ibctx)
{
	struct verbs_context *vctx = container_of<struct verbs_context>(
		ibctx, offsetof(struct verbs_context, context));
	return container_of<context>(vctx, offsetof(context, ibv_ctx));
}

static inline pd *to_spd(struct ibv_pd *ibpd)
{
	return container_of<pd>(ibpd, offsetof(pd, ibv_pd));
}

static inline ah *to_sah(struct ibv_ah *ibah)
{
	return container_of<ah>(ibah, offsetof(ah, ibv_ah));
}

static inline qp *to_sqp(struct ibv_qp *ibqp)
{
	return reinterpret_cast<qp *>(ibqp);	// vqp.qp at offset 0
}

static inline qp *to_sqp(struct ibv_qp_ex *ibqp)
{
	return reinterpret_cast<qp *>(ibqp);	// vqp.qp_ex at offset 0
}

static inline srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return reinterpret_cast<srq *>(ibsrq);	// vsrq.srq at offset 0
}

static inline struct verbs_xrcd *to_vxrcd(struct ibv_xrcd *ibxrcd)
{
	return container_of<struct verbs_xrcd>(ibxrcd,
					       offsetof(struct verbs_xrcd, xrcd));
}

static inline cq *to_scq(struct ibv_cq *ibcq)
{
	return reinterpret_cast<cq *>(ibcq);	// vcq.cq at offset 0
}

static inline cq *to_scq(struct ibv_cq_ex *ibcq)
{
	return reinterpret_cast<cq *>(ibcq);	// vcq.cq_ex at offset 0
}

static inline mr *to_smr(struct verbs_mr *vmr)
{
	return reinterpret_cast<mr *>(vmr);
}

static inline device *to_sdev(struct ibv_device *ibdev)
{
	return container_of<device>(verbs_get_device(ibdev),
				    offsetof(device, ibv_dev));
}

// A response buffer: the kernel's core response struct followed directly
// by our driver response (rdma-core's DECLARE_DRV_CMD "_resp" half).  The
// core struct ends in a flexible array, so it is kept as raw bytes of the
// same size and alignment; libibverbs fills it through core().
template <class KCore, class Drv>
struct drv_resp {
	alignas(KCore) unsigned char core_bytes[sizeof(KCore)];
	Drv drv;

	KCore *core() { return reinterpret_cast<KCore *>(core_bytes); }
};

// Shared sanity rules of DECLARE_DRV_CMD: no padding between the core and
// driver parts, none after, 4-byte granularity (uverbs counts in words).
template <class KCore, class Drv>
constexpr bool drv_resp_layout_ok()
{
	using R = drv_resp<KCore, Drv>;
	return std::is_standard_layout_v<R> && std::is_trivial_v<R> &&
	       offsetof(R, drv) == sizeof(KCore) &&
	       sizeof(R) == sizeof(KCore) + sizeof(Drv) && sizeof(R) % 4 == 0;
}

using get_context_resp =
	drv_resp<struct ib_uverbs_get_context_resp, struct sroce_alloc_ucontext_resp>;
using alloc_pd_resp =
	drv_resp<struct ib_uverbs_alloc_pd_resp, struct sroce_alloc_pd_resp>;
static_assert(drv_resp_layout_ok<struct ib_uverbs_get_context_resp,
				 struct sroce_alloc_ucontext_resp>());
static_assert(drv_resp_layout_ok<struct ib_uverbs_alloc_pd_resp,
				 struct sroce_alloc_pd_resp>());

// CQ responses.  create_cq_ex's core response is the extended one (16
// bytes) even when libibverbs ends up sending the legacy command: it then
// places the legacy response right before our part.
using create_cq_resp =
	drv_resp<struct ib_uverbs_create_cq_resp, struct sroce_create_cq_resp>;
using create_cq_ex_resp =
	drv_resp<struct ib_uverbs_ex_create_cq_resp, struct sroce_create_cq_resp>;
using resize_cq_resp =
	drv_resp<struct ib_uverbs_resize_cq_resp, struct sroce_resize_cq_resp>;
static_assert(drv_resp_layout_ok<struct ib_uverbs_create_cq_resp,
				 struct sroce_create_cq_resp>());
static_assert(drv_resp_layout_ok<struct ib_uverbs_ex_create_cq_resp,
				 struct sroce_create_cq_resp>());
static_assert(sizeof(create_cq_ex_resp) % 8 == 0);	// _ex counts 8-byte words
static_assert(drv_resp_layout_ok<struct ib_uverbs_resize_cq_resp,
				 struct sroce_resize_cq_resp>());

// QP, SRQ and AH responses (for the objects still to come).
using create_qp_resp =
	drv_resp<struct ib_uverbs_create_qp_resp, struct sroce_create_qp_resp>;
using create_qp_ex_resp =
	drv_resp<struct ib_uverbs_ex_create_qp_resp, struct sroce_create_qp_resp>;
using create_srq_resp =
	drv_resp<struct ib_uverbs_create_srq_resp, struct sroce_create_srq_resp>;
using create_ah_resp =
	drv_resp<struct ib_uverbs_create_ah_resp, struct sroce_create_ah_resp>;
static_assert(drv_resp_layout_ok<struct ib_uverbs_create_qp_resp,
				 struct sroce_create_qp_resp>());
static_assert(drv_resp_layout_ok<struct ib_uverbs_ex_create_qp_resp,
				 struct sroce_create_qp_resp>());
static_assert(sizeof(create_qp_ex_resp) % 8 == 0);	// _ex counts 8-byte words
static_assert(drv_resp_layout_ok<struct ib_uverbs_create_srq_resp,
				 struct sroce_create_srq_resp>());
static_assert(drv_resp_layout_ok<struct ib_uverbs_create_ah_resp,
				 struct sroce_create_ah_resp>());

// ---- device matching (sroce_provider.cpp) --------------------------------

enum class match_result {
	claimed,	// sroce device with a supported ABI
	no_attr,	// no SROCE_SYSFS_ABI_ATTR: not ours (rxe, mlx5, ...)
	foreign_driver,	// kernel reports a driver_id: another provider's device
	bad_value,	// attribute present but not a decimal number
	unsupported,	// sroce device, ABI outside [min_abi, max_abi]
};

// Decide whether the device at ibdev_path (a /sys/class/infiniband/<dev>
// directory) is an sroce device this provider can drive.  *abi_out gets
// the value read from the attribute (0 if none).
match_result match_sysfs(const char *ibdev_path, uint32_t driver_id,
			 uint32_t min_abi, uint32_t max_abi, uint32_t *abi_out);

// Parse "libibverbs.so.1.<minor>.<NN>.<x>" (any directory) into NN, the
// rdma-core release; -1 if the name does not have that form.
int rdma_core_release_from_path(const char *path);

// ---- verbs (verbs.cpp) ----------------------------------------------------

int query_device_ex(struct ibv_context *ibctx,
		    const struct ibv_query_device_ex_input *input,
		    struct ibv_device_attr_ex *attr, size_t attr_size);
int query_port(struct ibv_context *ibctx, uint8_t port_num,
	       struct ibv_port_attr *port_attr);
struct ibv_pd *alloc_pd(struct ibv_context *ibctx);
int dealloc_pd(struct ibv_pd *ibpd);

struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
		      uint64_t hca_va, int access);
struct ibv_mr *reg_dmabuf_mr(struct ibv_pd *ibpd, uint64_t offset, size_t length,
			     uint64_t iova, int fd, int access);
int rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibpd, void *addr,
	     size_t length, int access);
int dereg_mr(struct verbs_mr *vmr);
int advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
	      struct ibv_sge *sg_list, uint32_t num_sge);
struct ibv_mw *alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);
int dealloc_mw(struct ibv_mw *ibmw);
int bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw,
	    struct ibv_mw_bind *mw_bind);

// ---- completion queues (cq.cpp) --------------------------------------------

// The ibv_cq_init_attr_ex.wc_flags this provider's CQEs can answer.
inline constexpr uint64_t kSupportedWcFlags = IBV_WC_STANDARD_FLAGS;

struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr);
int destroy_cq(struct ibv_cq *ibcq);
int poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int resize_cq(struct ibv_cq *ibcq, int cqe);

// ---- queue pairs, SRQs, AHs (qp.cpp) -----------------------------------------

struct ibv_qp *create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr);
struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *open_qp(struct ibv_context *ibctx, struct ibv_qp_open_attr *attr);
int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask);
int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr);
int destroy_qp(struct ibv_qp *ibqp);
int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad_wr);
int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad_wr);

// Whether a QP takes send WRs now (the IBTA's QP states, as rxe): from
// RTS on - RTS, SQD, SQE - and in ERR, where the kernel flushes them;
// RESET, INIT and RTR refuse them with EINVAL.  Receive WRs: in every
// state but RESET.
// The kernel may have moved the QP to ERR on its own since our last
// modify_qp, which only the ring's ERROR flag tells; that is read only
// when the recorded state refuses, so a QP in RTS pays one atomic load.
static inline bool state_refuses_sends(int state)
{
	return state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	       state == IBV_QPS_RTR;
}

static inline bool post_send_ok(const qp &q)
{
	return !state_refuses_sends(q.state.load(std::memory_order_acquire)) ||
	       (q.sq.flags() & SROCE_RING_F_ERROR);
}

static inline bool post_recv_ok(const qp &q)
{
	return q.state.load(std::memory_order_acquire) != IBV_QPS_RESET ||
	       (q.rq.flags() & SROCE_RING_F_ERROR);
}

// After WQEs were published on the SQ (sq_lock held): does the kernel
// want the doorbell (NEED_KICK, or the queue is in ERROR and must flush
// them)?  Then send_doorbell(), outside the lock.
bool sq_wants_doorbell(const producer_ring &sq);
int send_doorbell(struct ibv_qp *ibqp);

// ---- the ibv_wr_* API (qp_ex.cpp) ------------------------------------------------

// The send_ops_flags a QP type accepts (IBV_QP_EX_WITH_*); others are
// EOPNOTSUPP at creation.
uint64_t supported_send_ops(enum ibv_qp_type qp_type, uint32_t ctx_flags);
// Make a created QP an ibv_qp_ex: install every wr_* callback, enable
// the opcodes of send_ops_flags (already checked against
// supported_send_ops), set VERBS_QP_EX.
void init_qp_ex(qp *q, uint64_t send_ops_flags);

struct ibv_srq *create_srq(struct ibv_pd *ibpd,
			   struct ibv_srq_init_attr *attr);
struct ibv_srq *create_srq_ex(struct ibv_context *ibctx,
			      struct ibv_srq_init_attr_ex *attr);
int get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
int modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask);
int query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int destroy_srq(struct ibv_srq *ibsrq);
int post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);

struct ibv_ah *create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int destroy_ah(struct ibv_ah *ibah);

// XRC domains (qp.cpp): ib_core's own objects, no driver data.
struct ibv_xrcd *open_xrcd(struct ibv_context *ibctx,
			   struct ibv_xrcd_init_attr *attr);
int close_xrcd(struct ibv_xrcd *ibxrcd);

} // namespace sroce

#endif // SROCE_PROVIDER_HPP
