// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// qp.cpp - queue pairs (create/modify/query/destroy, ibv_post_send,
// ibv_post_recv; XRC initiators and targets, ibv_open_qp), shared receive
// queues (basic and XRC), address handles and XRC domains.
//
// The SQ, RQ and SRQ are rings we produce into (ring.hpp producer_ring)
// and the kernel consumes; a slot comes back only when its WQE completed
// or was flushed.  The post paths allocate nothing: under the queue's
// spinlock they encode WQEs into the free slots (wqe.hpp) and publish
// them with one release store per call.  The system call that follows,
// outside the lock, is the doorbell: a uverbs POST_SEND (POST_RECV) with
// no work request, made only when the kernel asks for it (NEED_KICK) or
// the queue is in error (ERROR: the kernel must flush what we added).
// The ibv_wr_* API (qp_ex.cpp) fills the same SQ under the same lock and
// ends its batches with the same publish and doorbell.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "ring.hpp"
#include "sroce.hpp"
#include "wqe.hpp"

namespace sroce {

static_assert(std::is_standard_layout_v<qp>,
	      "struct qp is reached from ibv_qp by a cast");
static_assert(std::is_standard_layout_v<srq>,
	      "struct srq is reached from ibv_srq by a cast");

// ---- ring mappings -----------------------------------------------------------------

// Map a ring the kernel described, after checking everything mmap() and
// the ring will use: geometry, at least min_entries slots, slots of at
// least min_stride bytes, a page-aligned offset.  0 or an errno (EPROTO
// for a description we cannot use); on failure nothing stays mapped.
static int map_ring(struct ibv_context *ibctx, const struct sroce_ring_info &info,
		    uint64_t min_entries, uint32_t min_stride, producer_ring *ring,
		    void **map_out, size_t *len_out)
{
	const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

	*ring = producer_ring();
	*map_out = nullptr;
	*len_out = 0;
	if (!ring_geometry_ok(info.entries, info.stride, info.mmap_length,
			      min_stride) ||
	    info.entries < min_entries || info.mmap_length > SIZE_MAX ||
	    info.mmap_offset % page != 0 || info.mmap_offset > INT64_MAX)
		return EPROTO;

	void *map = mmap(nullptr, static_cast<size_t>(info.mmap_length),
			 PROT_READ | PROT_WRITE, MAP_SHARED, ibctx->cmd_fd,
			 static_cast<off_t>(info.mmap_offset));
	if (map == MAP_FAILED)
		return errno ? errno : ENOMEM;
	if (!ring->attach(map, info.mmap_length, info.entries, info.stride)) {
		munmap(map, static_cast<size_t>(info.mmap_length));
		return EPROTO;
	}
	*map_out = map;
	*len_out = static_cast<size_t>(info.mmap_length);
	return 0;
}

static void unmap_ring(producer_ring *ring, void **map, size_t *len)
{
	if (*map)
		munmap(*map, *len);
	*ring = producer_ring();
	*map = nullptr;
	*len = 0;
}

// ---- doorbells --------------------------------------------------------------------

// rdma-core's rxe post_send_db(): a POST_SEND without work requests.
int send_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_post_send cmd = {};
	struct ib_uverbs_post_send_resp resp = {};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.qp_handle = ibqp->handle;
	cmd.wr_count = 0;
	cmd.sge_count = 0;
	cmd.wqe_size = sizeof(struct ibv_send_wr);	// >= ib_uverbs_send_wr
	if (write(ibqp->context->cmd_fd, &cmd, sizeof(cmd)) != sizeof(cmd))
		return errno ? errno : EIO;
	return 0;
}

static int recv_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_post_recv cmd = {};
	struct ib_uverbs_post_recv_resp resp = {};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_RECV;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.qp_handle = ibqp->handle;
	cmd.wr_count = 0;
	cmd.sge_count = 0;
	cmd.wqe_size = sizeof(struct ibv_recv_wr);	// >= ib_uverbs_recv_wr
	if (write(ibqp->context->cmd_fd, &cmd, sizeof(cmd)) != sizeof(cmd))
		return errno ? errno : EIO;
	return 0;
}

// After a publish: is the queue in error?  The fence orders our prod
// store before the flags load, as needs_kick() does.
static bool ring_in_error(const producer_ring &r)
{
	std::atomic_thread_fence(std::memory_order_seq_cst);
	return r.flags() & SROCE_RING_F_ERROR;
}

bool sq_wants_doorbell(const producer_ring &sq)
{
	return sq.needs_kick() || ring_in_error(sq);
}

// ---- queue pairs --------------------------------------------------------------------

static qp *alloc_qp()
{
	void *mem = calloc(1, sizeof(qp));
	if (!mem)
		return nullptr;
	qp *q = new (mem) qp();
	q->state.store(IBV_QPS_RESET, std::memory_order_relaxed);	// not shared yet
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq_lock, PTHREAD_PROCESS_PRIVATE);
	return q;
}

static void free_qp(qp *q)
{
	pthread_spin_destroy(&q->sq_lock);
	pthread_spin_destroy(&q->rq_lock);
	q->~qp();
	free(q);
}

// The ibv_qp_init_attr_ex parts we support.
static constexpr uint32_t kQpInitCompMask = IBV_QP_INIT_ATTR_PD |
					    IBV_QP_INIT_ATTR_CREATE_FLAGS |
					    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
// An XRC target is made in a domain (a PD, if given, is not used).
static constexpr uint32_t kXrcRecvCompMask = IBV_QP_INIT_ATTR_XRCD |
					     IBV_QP_INIT_ATTR_PD |
					     IBV_QP_INIT_ATTR_CREATE_FLAGS;

static bool ctx_has_xrc(uint32_t ctx_flags)
{
	return ctx_flags & SROCE_CTX_F_XRC;
}

// XRC_RECV: the domain is all it needs; it has no queue to post to, so
// no send_ops_flags either.
static int check_xrc_recv_init(const struct ibv_qp_init_attr_ex *attr)
{
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)
		return EINVAL;
	if (attr->comp_mask & ~kXrcRecvCompMask)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	return 0;
}

// Like rxe and mlx5 in rdma-core 44, everything we cannot do is
// EOPNOTSUPP: other comp_mask bits, create flags, QP types (the XRC ones
// without SROCE_CTX_F_XRC), and send_ops_flags with an unknown bit or an
// opcode the QP type does not carry (supported_send_ops()).
static int check_qp_init(const struct ibv_qp_init_attr_ex *attr,
			 uint32_t ctx_flags)
{
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return ctx_has_xrc(ctx_flags) ? check_xrc_recv_init(attr) : EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (attr->comp_mask & ~kQpInitCompMask)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_XRC_SEND:
		if (!ctx_has_xrc(ctx_flags))
			return EOPNOTSUPP;
		break;
	default:
		return EOPNOTSUPP;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~supported_send_ops(attr->qp_type, ctx_flags)))
		return EOPNOTSUPP;
	if (!attr->send_cq)
		return EINVAL;
	// An XRC initiator receives nothing: its messages land in the
	// target's SRQs (no recv_cq needed, no SRQ allowed).
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		return attr->srq ? EINVAL : 0;
	if (!attr->recv_cq)
		return EINVAL;
	return 0;
}

// Map the rings of a created QP and take its granted caps (attr->cap as
// ibv_cmd_create_qp_ex2 wrote it back from the kernel's response).
static int setup_qp(qp *q, struct ibv_context *ibctx,
		    const struct ibv_qp_init_attr_ex *attr,
		    const struct ibv_qp_cap &asked,
		    const struct sroce_create_qp_resp &drv)
{
	const struct ibv_qp_cap &cap = attr->cap;

	q->has_rq = !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND;
	q->qpn = drv.qpn;
	// The kernel's answer must cover the request and fit its own rings.
	if (cap.max_send_wr < asked.max_send_wr ||
	    cap.max_send_sge < asked.max_send_sge ||
	    cap.max_inline_data < asked.max_inline_data ||
	    drv.max_inline_data != cap.max_inline_data ||
	    (q->has_rq && (cap.max_recv_wr < asked.max_recv_wr ||
			   cap.max_recv_sge < asked.max_recv_sge)))
		return EPROTO;

	int ret = map_ring(ibctx, drv.sq, cap.max_send_wr, kRingMinStride,
			   &q->sq, &q->sq_map, &q->sq_map_len);
	if (ret)
		return ret;
	q->has_sq = true;
	q->scaps = send_queue_caps{attr->qp_type, cap.max_send_sge,
				   cap.max_inline_data, drv.sq.stride,
				   ext_send_opcodes(attr->qp_type,
						    to_sctx(ibctx)->flags)};
	if (!send_caps_ok(q->scaps))
		return EPROTO;

	if (!q->has_rq) {
		// No RQ of our own: the kernel must describe none.
		if (drv.rq.entries || drv.rq.mmap_length)
			return EPROTO;
		return 0;
	}
	ret = map_ring(ibctx, drv.rq, cap.max_recv_wr, kRingMinStride, &q->rq,
		       &q->rq_map, &q->rq_map_len);
	if (ret)
		return ret;
	q->rcaps = recv_queue_caps{cap.max_recv_sge, drv.rq.stride};
	if (!recv_caps_ok(q->rcaps))
		return EPROTO;
	return 0;
}

// An XRC target: ib_core creates it without udata (no driver response
// comes back), and it has no rings - only a handle for modify, query and
// destroy, and the number initiators connect to.
static struct ibv_qp *create_xrc_recv_qp(qp *q, struct ibv_context *ibctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_create_qp_ex cmd = {};
	struct ib_uverbs_ex_create_qp_resp resp = {};

	int ret = sroce_cmd_create_qp_ex2(ibctx, &q->vqp, attr, &cmd, sizeof(cmd),
					  &resp, sizeof(resp));
	if (ret) {
		free_qp(q);
		errno = ret;
		return nullptr;
	}
	q->qpn = q->vqp.qp.qp_num;
	return &q->vqp.qp;
}

struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr)
{
	int ret = check_qp_init(attr, to_sctx(ibctx)->flags);
	if (ret) {
		errno = ret;
		return nullptr;
	}
	qp *q = alloc_qp();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return create_xrc_recv_qp(q, ibctx, attr);

	const struct ibv_qp_cap asked = attr->cap;
	struct ibv_create_qp_ex cmd = {};
	create_qp_ex_resp resp = {};
	ret = sroce_cmd_create_qp_ex2(ibctx, &q->vqp, attr, &cmd, sizeof(cmd),
				    resp.core(), sizeof(resp));
	if (ret) {
		free_qp(q);
		errno = ret;
		return nullptr;
	}

	ret = setup_qp(q, ibctx, attr, asked, resp.drv);
	if (ret) {
		__verbs_log(verbs_get_ctx(ibctx), VERBS_LOG_ERR,
			    "sroce: %s: cannot use the rings of QP %u: %s\n",
			    ibctx->device->name, resp.drv.qpn, strerror(ret));
		unmap_ring(&q->sq, &q->sq_map, &q->sq_map_len);
		unmap_ring(&q->rq, &q->rq_map, &q->rq_map_len);
		ibv_cmd_destroy_qp(&q->vqp.qp);
		free_qp(q);
		attr->cap = asked;
		errno = ret;
		return nullptr;
	}
	// After the command: libibverbs has reset vqp.comp_mask in it.
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		init_qp_ex(q, attr->send_ops_flags);
	return &q->vqp.qp;
}

struct ibv_qp *create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {};

	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = ibpd;

	struct ibv_qp *ibqp = create_qp_ex(ibpd->context, &ex);
	if (ibqp)
		attr->cap = ex.cap;	// ibv_create_qp(3): the granted caps
	return ibqp;
}

// Another process's XRC target, by number in a domain both opened (the
// op is only installed with SROCE_CTX_F_XRC): like one created here, a
// handle without rings.  ib_core refuses other QP types.
struct ibv_qp *open_qp(struct ibv_context *ibctx, struct ibv_qp_open_attr *attr)
{
	qp *q = alloc_qp();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_open_qp cmd = {};
	struct ib_uverbs_create_qp_resp resp = {};
	int ret = ibv_cmd_open_qp(ibctx, &q->vqp, static_cast<int>(sizeof(q->vqp)),
				  attr, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free_qp(q);
		errno = ret;
		return nullptr;
	}
	q->qpn = attr->qp_num;
	return &q->vqp.qp;
}

// The state the posts go by changes only once the kernel has made the
// move (a failed command leaves the QP where it was).
int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	int ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE))
		to_sqp(ibqp)->state.store(attr->qp_state, std::memory_order_release);
	return ret;
}

int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int destroy_qp(struct ibv_qp *ibqp)
{
	qp *q = to_sqp(ibqp);

	int ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	unmap_ring(&q->sq, &q->sq_map, &q->sq_map_len);
	unmap_ring(&q->rq, &q->rq_map, &q->rq_map_len);
	free_qp(q);
	return 0;
}

// ibv_post_send: every WR that fits is encoded, then all of them are
// published at once.  A QP without an SQ (an XRC target) or in a state
// that takes no sends (RESET, INIT, RTR) refuses the whole list: EINVAL
// at the first WR, nothing written.
// Otherwise a WR that does not encode (EINVAL) or finds the SQ full
// (ENOMEM) stops the list there, *bad_wr names it, and the WRs before it
// are still posted.  A failed doorbell returns its errno with every WR
// posted (*bad_wr untouched, as rxe does).
int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad_wr)
{
	qp *q = to_sqp(ibqp);
	int ret = 0;
	bool kick = false;

	if (!q->has_sq || !post_send_ok(*q)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&q->sq_lock);
	const uint32_t room = q->sq.free_slots();
	uint32_t n = 0;
	for (; wr; wr = wr->next) {
		if (n == room) {
			ret = ENOMEM;
			break;
		}
		ret = encode_send_wqe(q->sq.slot(n), q->scaps, wr);
		if (ret)
			break;
		n++;
	}
	if (ret)
		*bad_wr = wr;
	if (n) {
		q->sq.publish(n);
		kick = sq_wants_doorbell(q->sq);
	}
	pthread_spin_unlock(&q->sq_lock);

	if (kick) {
		int db = send_doorbell(ibqp);
		if (!ret)
			ret = db;
	}
	return ret;
}

// Write receive WQEs into a producer ring (RQ or SRQ); the caller holds
// the queue's lock.  Returns the number written; *err and *bad_wr say
// where it stopped.
static uint32_t fill_recv(producer_ring &ring, const recv_queue_caps &caps,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr,
			  int *err)
{
	const uint32_t room = ring.free_slots();
	uint32_t n = 0;

	*err = 0;
	for (; wr; wr = wr->next) {
		if (n == room) {
			*err = ENOMEM;
			break;
		}
		*err = encode_recv_wqe(ring.slot(n), caps, wr);
		if (*err)
			break;
		n++;
	}
	if (*err)
		*bad_wr = wr;
	return n;
}

int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad_wr)
{
	qp *q = to_sqp(ibqp);
	int ret;
	bool kick = false;

	// No RQ of its own (an SRQ, or XRC), or RESET: the whole list is
	// refused.
	if (!q->has_rq || !post_recv_ok(*q)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&q->rq_lock);
	uint32_t n = fill_recv(q->rq, q->rcaps, wr, bad_wr, &ret);
	if (n) {
		q->rq.publish(n);
		// The responder reads the RQ by itself; only a QP in error
		// needs telling, so the kernel flushes what we added.
		kick = ring_in_error(q->rq);
	}
	pthread_spin_unlock(&q->rq_lock);

	if (kick) {
		int db = recv_doorbell(ibqp);
		if (!ret)
			ret = db;
	}
	return ret;
}

// ---- shared receive queues ----------------------------------------------------------

static void free_srq(srq *s)
{
	pthread_spin_destroy(&s->lock);
	s->~srq();
	free(s);
}

static srq *alloc_srq()
{
	void *mem = calloc(1, sizeof(srq));
	if (!mem)
		return nullptr;
	srq *s = new (mem) srq();
	pthread_spin_init(&s->lock, PTHREAD_PROCESS_PRIVATE);
	return s;
}

// Map the ring of an SRQ the kernel created: the granted max_wr/max_sge
// (what the command wrote back into *granted) must cover the request.
// On failure the SRQ is destroyed again and freed, *granted restored.
static struct ibv_srq *setup_srq(srq *s, struct ibv_context *ibctx,
				 const struct ibv_srq_attr &asked,
				 struct ibv_srq_attr *granted,
				 const struct sroce_create_srq_resp &drv)
{
	s->srqn = drv.srqn;
	int ret = EPROTO;
	if (granted->max_wr >= asked.max_wr && granted->max_sge >= asked.max_sge)
		ret = map_ring(ibctx, drv.rq, granted->max_wr, kRingMinStride,
			       &s->ring, &s->map, &s->map_len);
	if (!ret) {
		s->caps = recv_queue_caps{granted->max_sge, drv.rq.stride};
		if (!recv_caps_ok(s->caps))
			ret = EPROTO;
	}
	if (ret) {
		__verbs_log(verbs_get_ctx(ibctx), VERBS_LOG_ERR,
			    "sroce: %s: cannot use the ring of SRQ %u: %s\n",
			    ibctx->device->name, drv.srqn, strerror(ret));
		unmap_ring(&s->ring, &s->map, &s->map_len);
		ibv_cmd_destroy_srq(&s->vsrq.srq);
		free_srq(s);
		*granted = asked;
		errno = ret;
		return nullptr;
	}
	return &s->vsrq.srq;
}

struct ibv_srq *create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	srq *s = alloc_srq();
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}

	const struct ibv_srq_attr asked = attr->attr;
	struct ibv_create_srq cmd = {};
	create_srq_resp resp = {};
	int ret = ibv_cmd_create_srq(ibpd, &s->vsrq.srq, attr, &cmd, sizeof(cmd),
				     resp.core(), sizeof(resp));
	if (ret) {
		free_srq(s);
		errno = ret;
		return nullptr;
	}
	return setup_srq(s, ibpd->context, asked, &attr->attr, resp.drv);
}

// The ibv_srq_init_attr_ex parts we support: a PD always; an XRC SRQ's
// domain and CQ.  Tag matching is EOPNOTSUPP.
static constexpr uint32_t kSrqInitCompMask = IBV_SRQ_INIT_ATTR_PD |
					     IBV_SRQ_INIT_ATTR_TYPE |
					     IBV_SRQ_INIT_ATTR_XRCD |
					     IBV_SRQ_INIT_ATTR_CQ;

// ibv_create_srq_ex() comes here for what ibv_create_srq cannot say: an
// XRC SRQ (with SROCE_CTX_F_XRC), or a basic one with more comp_mask
// bits.  Both are the same ring as create_srq's.
struct ibv_srq *create_srq_ex(struct ibv_context *ibctx,
			      struct ibv_srq_init_attr_ex *attr)
{
	// ibv_cmd_create_srq_ex's write() path picks the command by
	// srq_type whether or not IBV_SRQ_INIT_ATTR_TYPE says it is set:
	// pass a copy that says BASIC when the caller named no type.
	struct ibv_srq_init_attr_ex a = *attr;
	if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
		a.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
		a.srq_type = IBV_SRQT_BASIC;
	}
	int ret = 0;
	if (a.comp_mask & ~kSrqInitCompMask)
		ret = EOPNOTSUPP;
	else if (a.srq_type == IBV_SRQT_XRC)
		ret = (to_sctx(ibctx)->flags & SROCE_CTX_F_XRC) ? 0 : EOPNOTSUPP;
	else if (a.srq_type != IBV_SRQT_BASIC)
		ret = EOPNOTSUPP;
	if (ret) {
		errno = ret;
		return nullptr;
	}
	srq *s = alloc_srq();
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}

	const struct ibv_srq_attr asked = attr->attr;
	struct ibv_create_xsrq cmd = {};
	create_srq_resp resp = {};
	ret = ibv_cmd_create_srq_ex(ibctx, &s->vsrq, &a, &cmd, sizeof(cmd),
				    resp.core(), sizeof(resp));
	if (ret) {
		free_srq(s);
		errno = ret;
		return nullptr;
	}
	attr->attr = a.attr;	// the granted max_wr and max_sge
	// No libibverbs code runs after this op (after create_srq it does),
	// and ibv_cmd_create_srq_ex sets pd only from rdma-core 58 on.
	s->vsrq.srq.srq_context = attr->srq_context;
	s->vsrq.srq.pd = attr->pd;
	return setup_srq(s, ibctx, asked, &attr->attr, resp.drv);
}

// ibv_get_srq_num(3): the number initiators name an XRC SRQ by, as
// ib_core answered the create.  A basic SRQ has none to give (EINVAL).
int get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	const srq *s = to_ssrq(ibsrq);

	if (s->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = s->vsrq.srq_num;
	return 0;
}

int modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	// No resizing: the ring we mapped is the SRQ's for good.
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int destroy_srq(struct ibv_srq *ibsrq)
{
	srq *s = to_ssrq(ibsrq);

	int ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	unmap_ring(&s->ring, &s->map, &s->map_len);
	free_srq(s);
	return 0;
}

// No doorbell: the responders of the SRQ's QPs read the ring.
int post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	srq *s = to_ssrq(ibsrq);
	int ret;

	pthread_spin_lock(&s->lock);
	uint32_t n = fill_recv(s->ring, s->caps, wr, bad_wr, &ret);
	if (n)
		s->ring.publish(n);
	pthread_spin_unlock(&s->lock);
	return ret;
}

// ---- address handles ----------------------------------------------------------------

struct ibv_ah *create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	ah *a = static_cast<ah *>(calloc(1, sizeof(ah)));
	if (!a) {
		errno = ENOMEM;
		return nullptr;
	}
	create_ah_resp resp = {};
	int ret = ibv_cmd_create_ah(ibpd, &a->ibv_ah, attr, resp.core(),
				    sizeof(resp));
	if (ret) {
		free(a);
		errno = ret;
		return nullptr;
	}
	a->ah_num = resp.drv.ah_num;
	return &a->ibv_ah;
}

int destroy_ah(struct ibv_ah *ibah)
{
	int ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_sah(ibah));
	return 0;
}

// ---- XRC domains --------------------------------------------------------------------
//
// Only installed with SROCE_CTX_F_XRC.  A domain is ib_core's object: the
// kernel keeps no driver state we need, so libibverbs' verbs_xrcd (its
// handle) is all there is.

struct ibv_xrcd *open_xrcd(struct ibv_context *ibctx,
			   struct ibv_xrcd_init_attr *attr)
{
	auto *x = static_cast<struct verbs_xrcd *>(calloc(1, sizeof(struct verbs_xrcd)));
	if (!x) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_open_xrcd cmd = {};
	struct ib_uverbs_open_xrcd_resp resp = {};
	int ret = ibv_cmd_open_xrcd(ibctx, x, static_cast<int>(sizeof(*x)), attr, &cmd,
				    sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(x);
		errno = ret;
		return nullptr;
	}
	return &x->xrcd;
}

int close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *x = to_vxrcd(ibxrcd);

	int ret = ibv_cmd_close_xrcd(x);
	if (ret)
		return ret;
	free(x);
	return 0;
}

} // namespace sroce
