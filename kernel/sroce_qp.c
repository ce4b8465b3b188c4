// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: queue pairs — creation with their shared rings and transport
 * state, the IBTA state machine (modify/query), kernel posting, the user
 * doorbell, flushing, and the lookup the receive path uses.
 *
 * Rings: the SQ and RQ are struct sroce_queue rings (see sroce_queue.h).
 * A slot is retired (cons advanced) only when its completion is posted,
 * so the ring depth bounds the work outstanding. The requester copies and
 * checks WQEs into qp->sq_copy (sroce_req.c).
 *
 * Lifetime: the receive path finds a QP's handle by number under RCU and
 * holds a reference (sroce_qp_get) while it works; destroy, and a create
 * that fails once the number is published, unpublish the number, wait for
 * the references, and free the handle only after a grace period (a lookup
 * may have loaded it just before: struct sroce_qp_handle).
 *
 * Locking:
 *  - qp->state_lock (spinlock, bh) guards qp->state and the attributes
 *    modify_qp changes; the data path reads state under it.
 *  - qp->sq_lock (spinlock, irqsave) serialises the SQ consumer side:
 *    the completer, retiring and flushing. qp->rq_lock the same for the
 *    RQ. qp->resp_lock the responder (sroce_resp.c).
 *  - qp->post_lock serialises kernel posters (the SQ/RQ producer side of
 *    kernel QPs); userspace is the producer of user QPs.
 *  Order: state_lock; resp_lock, then rq_lock; sq_lock; then a CQ's lock.
 */

#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

#define SROCE_FIRST_QPN		16
#define SROCE_SEND_SGE_MAX	min(SROCE_MAX_SGE, 255)

static const char *const sroce_qp_state_name[] = {
	[IB_QPS_RESET] = "RESET", [IB_QPS_INIT] = "INIT", [IB_QPS_RTR] = "RTR",
	[IB_QPS_RTS] = "RTS", [IB_QPS_SQD] = "SQD", [IB_QPS_SQE] = "SQE",
	[IB_QPS_ERR] = "ERR",
};

struct ib_qp *sroce_qp_lookup_ib(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp_handle *h;
	struct ib_qp *ibqp = NULL;

	rcu_read_lock();
	h = xa_load(&sdev->qp_xa, qpn);
	if (h)
		ibqp = &h->qp->ibqp;
	rcu_read_unlock();
	return ibqp;
}

/**
 * sroce_qp_get - find QP @qpn and take a reference on it
 * @sdev: the device
 * @qpn: the QP number from a packet
 *
 * Return: the QP (release with sroce_qp_put()), or NULL.
 */
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp_handle *h;
	struct sroce_qp *qp = NULL;

	rcu_read_lock();
	h = xa_load(&sdev->qp_xa, qpn);
	if (h && refcount_inc_not_zero(&h->ref))
		qp = h->qp;
	rcu_read_unlock();
	return qp;
}

/* A reference on a QP known to be alive (under RCU, see sroce_mcast.c). */
bool sroce_qp_tryget(struct sroce_qp *qp)
{
	return refcount_inc_not_zero(&qp->handle->ref);
}

void sroce_qp_put(struct sroce_qp *qp)
{
	struct sroce_qp_handle *h = qp->handle;

	/* After the decrement @qp may be gone: only the handle is touched. */
	if (refcount_dec_and_test(&h->ref))
		complete(&h->released);
}

/*
 * Take the QP's number off the lookup table and wait until no packet
 * holds the QP; the handle goes after a grace period. May sleep.
 */
static void sroce_qp_unpublish(struct sroce_dev *sdev, struct sroce_qp *qp)
{
	struct sroce_qp_handle *h = qp->handle;

	xa_erase(&sdev->qp_xa, qp->qpn);
	sroce_qp_put(qp);
	wait_for_completion(&h->released);
}

static void sroce_qp_free_handle(struct sroce_qp *qp)
{
	kfree_rcu(qp->handle, rcu);
	qp->handle = NULL;
}

/* Ring geometry for the capabilities asked; reports what it grants. */
static u32 sroce_sq_stride(struct ib_qp_cap *cap)
{
	u32 payload = max(cap->max_send_sge * (u32)sizeof(struct sroce_sge),
			  cap->max_inline_data);

	return roundup_pow_of_two(SROCE_SEND_WQE_HDR + max(payload, 16U));
}

static u32 sroce_rq_stride(struct ib_qp_cap *cap)
{
	u32 bytes = SROCE_RECV_WQE_HDR +
		    max(cap->max_recv_sge, 1U) * sizeof(struct sroce_sge);

	return roundup_pow_of_two(max(bytes, 64U));
}

static int sroce_qp_check_init(struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_XRC_INI:
		/* Sends only: its receives are the target's SRQs'. */
		if (!init->send_cq || init->srq)
			return -EINVAL;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		goto check_send;
	case IB_QPT_XRC_TGT:
		/*
		 * ib_core makes it with no CQs, PD or queues (its requests
		 * are the initiator's, its receives an SRQ's), and for user
		 * callers with no udata: nothing of the caps applies.
		 */
		if (!init->xrcd)
			return -EINVAL;
		memset(cap, 0, sizeof(*cap));
		return init->create_flags ? -EOPNOTSUPP : 0;
	case IB_QPT_GSI:
		/* QP1 belongs to ib_core's MAD layer; userspace cannot have it. */
		if (init->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
check_send:
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_recv_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_SEND_SGE_MAX ||
	    cap->max_recv_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

static void sroce_qp_grant_caps(struct sroce_qp *qp, struct ib_qp_cap *cap)
{
	u32 sq_room = (1U << qp->sq.stride_shift) - SROCE_SEND_WQE_HDR;
	u32 rq_room = !sroce_qp_has_rq(qp) ? 0 :
		      (1U << qp->rq.stride_shift) - SROCE_RECV_WQE_HDR;

	qp->max_send_sge = min_t(u32, sq_room / sizeof(struct sroce_sge),
				 SROCE_SEND_SGE_MAX);
	qp->max_inline = min_t(u32, sq_room, SROCE_MAX_INLINE);
	qp->max_recv_sge = min_t(u32, rq_room / sizeof(struct sroce_sge),
				 SROCE_MAX_SGE);

	cap->max_send_wr = qp->sq.entries;
	cap->max_recv_wr = sroce_qp_has_rq(qp) ? qp->rq.entries : 0;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_recv_sge = qp->max_recv_sge;
	cap->max_inline_data = qp->max_inline;
}

/* The requester's WQE copies and the responder's state. */
static int sroce_qp_alloc_transport(struct sroce_qp *qp, gfp_t gfp)
{
	u32 max_sge = 0;
	int err;

	/* Zeroed: nothing of the kernel's could reach a packet from it. */
	qp->sq_copy = __vmalloc(array_size(qp->sq.entries,
					   1U << qp->sq.stride_shift),
				gfp | __GFP_ZERO);
	qp->sq_meta = kvcalloc(qp->sq.entries, sizeof(*qp->sq_meta), gfp);
	if (!qp->sq_copy || !qp->sq_meta) {
		err = -ENOMEM;
		goto err;
	}
	/* An XRC target's WQEs come from any SRQ of its domain. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		max_sge = SROCE_MAX_SGE;
	else if (qp->srq)
		max_sge = qp->srq->max_sge;
	err = sroce_resp_init(qp, max_sge ? max_sge :
				  max_t(u32, qp->rq.stride_shift ?
					((1U << qp->rq.stride_shift) -
					 SROCE_RECV_WQE_HDR) /
					sizeof(struct sroce_sge) : 1, 1), gfp);
	if (err)
		goto err;
	err = dst_cache_init(&qp->dst_cache, gfp);
	if (err) {
		sroce_resp_free(qp);
		goto err;
	}
	sroce_req_init(qp);
	return 0;
err:
	vfree(qp->sq_copy);
	kvfree(qp->sq_meta);
	return err;
}

static void sroce_qp_free_transport(struct sroce_qp *qp)
{
	dst_cache_destroy(&qp->dst_cache);
	sroce_resp_free(qp);
	vfree(qp->sq_copy);
	kvfree(qp->sq_meta);
}

static struct ib_ucontext *sroce_qp_ucontext(struct ib_udata *udata)
{
	return &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					  ibuc)->ibuc;
}

int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_create_qp_resp resp = {};
	/* What a user's verb allocates is charged to the user's memcg. */
	gfp_t gfp = udata ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
	u32 sq_entries, rq_entries;
	int err;

	err = sroce_qp_check_init(init);
	if (err)
		return err;
	if (udata && init->qp_type == IB_QPT_GSI)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	spin_lock_init(&qp->post_lock);
	spin_lock_init(&qp->resp_lock);
	sroce_task_init(&qp->req_task, sroce_req_pass);
	sroce_task_init(&qp->resp_task, sroce_resp_tx_pass);
	timer_setup(&qp->retrans_timer, sroce_comp_retrans_timer, 0);
	hrtimer_setup(&qp->rnr_timer, sroce_comp_rnr_timer, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS_SOFT);
	sroce_cc_qp_init(qp);
	qp->state = IB_QPS_RESET;
	qp->mtu = 256;
	qp->scq = init->send_cq ? to_scq(init->send_cq) : NULL;
	qp->rcq = init->recv_cq ? to_scq(init->recv_cq) : NULL;
	qp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	/* ib_core sets ibqp->xrcd only once create_qp has returned. */
	qp->xrcd = init->qp_type == IB_QPT_XRC_TGT ? init->xrcd : NULL;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->is_user = !!udata;

	qp->handle = kzalloc(sizeof(*qp->handle), gfp);
	if (!qp->handle)
		return -ENOMEM;
	qp->handle->qp = qp;
	refcount_set(&qp->handle->ref, 1);
	init_completion(&qp->handle->released);

	sq_entries = roundup_pow_of_two(max(init->cap.max_send_wr, 1U));
	rq_entries = roundup_pow_of_two(max(init->cap.max_recv_wr, 1U));
	err = sroce_queue_init(&qp->sq, sq_entries,
			       sroce_sq_stride(&init->cap), gfp);
	if (err)
		goto err_handle;
	/*
	 * With an SRQ, or XRC, the QP has no receive ring of its own. An XRC
	 * target never sends a request: its one-slot SQ only gives the
	 * shared send-side code something to look at.
	 */
	if (sroce_qp_has_rq(qp)) {
		err = sroce_queue_init(&qp->rq, rq_entries,
				       sroce_rq_stride(&init->cap), gfp);
		if (err)
			goto err_sq;
	}
	err = sroce_qp_alloc_transport(qp, gfp);
	if (err)
		goto err_rq;

	if (init->qp_type == IB_QPT_GSI) {
		qp->qpn = 1;
		err = xa_insert(&sdev->qp_xa, qp->qpn, qp->handle, gfp);
	} else {
		err = xa_alloc_cyclic(&sdev->qp_xa, &qp->qpn, qp->handle,
				      XA_LIMIT(SROCE_FIRST_QPN,
					       SROCE_FIRST_QPN + SROCE_MAX_QP - 1),
				      &sdev->qp_next, gfp);
	}
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_transport;
	}
	ibqp->qp_num = qp->qpn;
	qp->serial = atomic64_inc_return(&sdev->qp_serial);
	sroce_qp_grant_caps(qp, &init->cap);

	if (udata) {
		struct ib_ucontext *uctx = sroce_qp_ucontext(udata);

		err = sroce_queue_map_user(&qp->sq, uctx, &resp.sq);
		if (err)
			goto err_xa;
		if (sroce_qp_has_rq(qp)) {
			err = sroce_queue_map_user(&qp->rq, uctx, &resp.rq);
			if (err)
				goto err_xa;
		}
		resp.qpn = qp->qpn;
		resp.max_inline_data = qp->max_inline;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	/* The requester starts idle: every post must kick it. */
	sroce_queue_set_flags(&qp->sq, SROCE_RING_F_NEED_KICK);
	trace_sroce_qp_create(qp, IB_QPS_RESET);
	return 0;

err_xa:
	/* A packet may have found the QP since its number was published. */
	sroce_qp_unpublish(sdev, qp);
	sroce_qp_free_transport(qp);
	sroce_queue_free(&qp->rq);
	sroce_queue_free(&qp->sq);
	sroce_qp_free_handle(qp);
	return err;
err_transport:
	sroce_qp_free_transport(qp);
err_rq:
	sroce_queue_free(&qp->rq);
err_sq:
	sroce_queue_free(&qp->sq);
err_handle:
	kfree(qp->handle);
	qp->handle = NULL;
	return err;
}

/* Completion opcode for a send WQE opcode (also used for flushes). */
u8 sroce_wc_opcode(u8 wr_opcode)
{
	switch (wr_opcode) {
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case SROCE_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case SROCE_WR_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
	case SROCE_WR_FLUSH:
		return IB_WC_FLUSH;
	case SROCE_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case SROCE_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case SROCE_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

/*
 * Retire the oldest SQ WQE with @status: post its completion (always for
 * an error, else when signalled) and free its slot. Called with sq_lock.
 * wr_id, opcode and flags come from the slot: they only go back to the
 * one who wrote them.
 */
void sroce_qp_retire_send(struct sroce_qp *qp, u8 status)
{
	const struct sroce_send_wqe *slot = sroce_queue_consumer_elem(&qp->sq);
	const struct sroce_send_meta *m =
		&qp->sq_meta[qp->sq.cons & sroce_queue_mask(&qp->sq)];
	struct sroce_cqe cqe = {
		.wr_id = READ_ONCE(slot->wr_id),
		.status = status,
		.opcode = sroce_wc_opcode(READ_ONCE(slot->opcode)),
		.qp_num = qp->qpn,
		.port_num = 1,
	};
	bool signaled = qp->sig_all ||
			(READ_ONCE(slot->flags) & SROCE_WQE_F_SIGNALED);

	if (status == IB_WC_SUCCESS)
		cqe.byte_len = m->length;
	/*
	 * Free the slot before the completion can be polled: an application
	 * that posts again as soon as it sees the completion must find room.
	 */
	sroce_queue_consumer_advance(&qp->sq, 1);
	if (status != IB_WC_SUCCESS || signaled)
		sroce_cq_post(qp->scq, &cqe, false);
}

static void sroce_qp_retire_recv(struct sroce_qp *qp, u8 status)
{
	const struct sroce_recv_wqe *slot = sroce_queue_consumer_elem(&qp->rq);
	struct sroce_cqe cqe = {
		.wr_id = READ_ONCE(slot->wr_id),
		.status = status,
		.opcode = IB_WC_RECV,
		.qp_num = qp->qpn,
		.port_num = 1,
	};

	/* The slot is free before its completion is seen (see retire_send). */
	sroce_queue_consumer_advance(&qp->rq, 1);
	sroce_cq_post(qp->rcq, &cqe, false);
}

/*
 * Complete every outstanding WQE of both queues with WR_FLUSH_ERR, oldest
 * first, exactly once: a slot is retired as its completion is posted. A
 * corrupt producer index flushes what was published before it, no more.
 */
static void sroce_qp_flush(struct sroce_qp *qp)
{
	unsigned long flags;
	int n;

	/* In the error state (set before): nothing of it is in flight. */
	sroce_req_uncount(qp);
	/*
	 * Publish ERROR before reading prod (the provider publishes prod
	 * before reading flags): a WQE posted concurrently is either seen
	 * here or its poster sees ERROR and rings the doorbell.
	 */
	spin_lock_irqsave(&qp->sq_lock, flags);
	sroce_queue_set_flags(&qp->sq, SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK);
	smp_mb();	/* flags store before the prod load */
	n = sroce_queue_refresh_prod(&qp->sq);
	if (n < 0)
		n = sroce_queue_count(&qp->sq);
	while (n-- > 0)
		sroce_qp_retire_send(qp, IB_WC_WR_FLUSH_ERR);
	/* The completer and requester stop here; RESET starts them over. */
	qp->sq_flushed = true;
	timer_delete(&qp->retrans_timer);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (!sroce_qp_has_rq(qp))
		return;		/* SRQ WQEs belong to the SRQ, not the QP */
	spin_lock_irqsave(&qp->rq_lock, flags);
	sroce_queue_set_flags(&qp->rq, SROCE_RING_F_ERROR);
	smp_mb();	/* flags store before the prod load */
	n = sroce_queue_refresh_prod(&qp->rq);
	if (n < 0)
		n = sroce_queue_count(&qp->rq);
	while (n-- > 0)
		sroce_qp_retire_recv(qp, IB_WC_WR_FLUSH_ERR);
	qp->rq_flushed = true;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/**
 * sroce_qp_error - move @qp to the error state and flush it
 * @qp: the queue pair
 * @fatal: also raise IB_EVENT_QP_FATAL (the QP failed, not the user)
 */
void sroce_qp_error(struct sroce_qp *qp, bool fatal)
{
	enum ib_qp_state was;

	spin_lock_bh(&qp->state_lock);
	was = qp->state;
	qp->state = IB_QPS_ERR;
	spin_unlock_bh(&qp->state_lock);
	if (was != IB_QPS_ERR)
		trace_sroce_qp_state(qp, was, IB_QPS_ERR);
	sroce_qp_flush(qp);
	if (fatal)
		sroce_qp_event(qp, IB_EVENT_QP_FATAL);
}

/* Empty both rings without completions (the move to RESET). */
static void sroce_qp_reset_rings(struct sroce_qp *qp)
{
	unsigned long flags;

	/* Passes that start now see RESET; wait out those running. */
	timer_delete_sync(&qp->retrans_timer);
	hrtimer_cancel(&qp->rnr_timer);
	sroce_task_sync(&qp->req_task);
	sroce_task_sync(&qp->resp_task);
	sroce_req_uncount(qp);
	/* After the passes: one may have armed the pacer's timer. */
	sroce_cc_qp_stop(qp);
	sroce_resp_reset(qp);

	spin_lock_irqsave(&qp->sq_lock, flags);
	sroce_queue_resync(&qp->sq);
	sroce_req_init(qp);
	qp->sq_flushed = false;
	sroce_queue_clear_flags(&qp->sq, SROCE_RING_F_ERROR);
	sroce_queue_set_flags(&qp->sq, SROCE_RING_F_NEED_KICK);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (!sroce_qp_has_rq(qp))
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	sroce_queue_resync(&qp->rq);
	qp->rq_flushed = false;
	sroce_queue_clear_flags(&qp->rq, SROCE_RING_F_ERROR);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/* Range checks of the attributes ib_modify_qp_is_ok() lets through. */
static int sroce_qp_check_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SROCE_MAX_PKEYS)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
		return -EINVAL;
	/*
	 * ib_cm gives every QP of a device that can flush both FLUSH access
	 * bits: take PERSISTENT too. No MR can have it, so a persistent
	 * FLUSH still finds no access.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_FLUSH_GLOBAL |
				       IB_ACCESS_FLUSH_PERSISTENT |
				       IB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	return 0;
}

static void sroce_qp_apply_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
				int mask, const struct sroce_av *av)
{
	struct sroce_qp_attr *a = &qp->attr;

	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		a->access = attr->qp_access_flags;
	if (mask & IB_QP_AV)
		a->av = *av;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & 0xffffff;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qpn = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
}

/*
 * What the data path derives from the attributes: the path MTU in bytes
 * (never above the port's), the flow's UDP source port, the route cache.
 * An RC or UC QP's MTU is set with its path at INIT -> RTR and then stays
 * (the requester counts the packets and offsets of the WQEs in flight in
 * it), whatever the port's does later. Called with state_lock.
 */
static void sroce_qp_apply_path(struct sroce_qp *qp, int mask)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_mtu port_mtu = READ_ONCE(sdev->active_mtu);

	if (!sroce_qp_connected(qp)) {
		qp->mtu = ib_mtu_enum_to_int(port_mtu);
		return;
	}
	if (mask & IB_QP_PATH_MTU)
		qp->mtu = ib_mtu_enum_to_int(min_t(enum ib_mtu,
						   qp->attr.path_mtu, port_mtu));
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN)) {
		qp->src_port = rdma_get_udp_sport(qp->attr.av.flow_label,
						  qp->qpn, qp->attr.dest_qpn);
		dst_cache_reset(&qp->dst_cache);
	}
}

int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	enum ib_qp_state cur, next, was;
	struct sroce_av av;
	int err;

	if (udata && udata->inlen)
		return -EINVAL;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	spin_lock_bh(&qp->state_lock);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (cur != qp->state && !(cur == IB_QPS_SQE && qp->state == IB_QPS_RTS)) {
		spin_unlock_bh(&qp->state_lock);
		return -EINVAL;
	}
	spin_unlock_bh(&qp->state_lock);

	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		return -EINVAL;
	err = sroce_qp_check_attr(qp, attr, mask);
	if (err)
		return err;
	if (mask & IB_QP_AV) {
		err = sroce_av_from_attr(&av, &attr->ah_attr);
		if (err)
			return err;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		err = sroce_resp_set_rd_atomic(qp, attr->max_dest_rd_atomic);
		if (err)
			return err;
	}

	spin_lock_bh(&qp->state_lock);
	sroce_qp_apply_attr(qp, attr, mask, &av);
	sroce_qp_apply_path(qp, mask);
	/* What it leaves: the data path may have moved it since @cur. */
	was = qp->state;
	qp->state = next;
	spin_unlock_bh(&qp->state_lock);

	if (was != next)
		trace_sroce_qp_state(qp, was, next);
	pr_debug("%s: qp %u %s -> %s\n", dev_name(&ibqp->device->dev),
		 qp->qpn, sroce_qp_state_name[cur], sroce_qp_state_name[next]);

	if (next == IB_QPS_RESET && cur != IB_QPS_RESET)
		sroce_qp_reset_rings(qp);
	else if (next == IB_QPS_ERR)
		sroce_qp_flush(qp);
	else if (next == IB_QPS_RTR && cur == IB_QPS_INIT) {
		sroce_resp_reset(qp);
		sroce_cc_qp_start(qp);
	} else if (next == IB_QPS_RTS && cur == IB_QPS_RTR)
		sroce_req_start(qp);
	if (next == IB_QPS_RTS)
		sroce_task_run(&qp->req_task);
	else if (next == IB_QPS_SQD && cur != IB_QPS_SQD &&
		 qp->attr.en_sqd_async_notify)
		/* Nothing is in flight before the transport takes WQEs. */
		sroce_qp_event(qp, IB_EVENT_SQ_DRAINED);
	return 0;
}

int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_qp_attr *a = &qp->attr;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	spin_lock_bh(&qp->state_lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = a->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qpn;
	attr->qp_access_flags = a->access;
	attr->pkey_index = a->pkey_index;
	attr->en_sqd_async_notify = a->en_sqd_async_notify;
	attr->sq_draining = 0;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	if (sroce_qp_connected(qp)) {
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_grh(&attr->ah_attr, &a->av.dgid, a->av.flow_label,
				a->av.sgid_index, a->av.hop_limit,
				a->av.traffic_class);
		rdma_ah_set_sl(&attr->ah_attr, a->av.sl);
		rdma_ah_set_port_num(&attr->ah_attr, 1);
		ether_addr_copy(attr->ah_attr.roce.dmac, a->av.dmac);
	}
	spin_unlock_bh(&qp->state_lock);

	attr->cap.max_send_wr = qp->sq.entries;
	attr->cap.max_recv_wr = sroce_qp_has_rq(qp) ? qp->rq.entries : 0;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	attr->cap.max_inline_data = qp->max_inline;

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

/* Resource details ("rdma resource show qp -dd") ------------------- */

/* A QP's transport state, as far as a snapshot can take it. */
struct sroce_qp_res {
	/* requester and completer, under sq_lock */
	u32 psn, sent_psn, una, max_psn, inflight, queued, rd_atomic;
	u32 credits;
	u64 rnr_wait_ns;
	u8 retry_left, rnr_left;
	bool unlimited;
	const char *req;
	/* responder, under resp_lock */
	u32 epsn, msn, answers, rd_answers, odp_held;
	struct sroce_cc_res cc;
	bool nak_sent;
	const char *resp;
};

/* What the requester does, or waits for; under sq_lock. */
static const char *sroce_qp_req_state(const struct sroce_qp *qp, u64 now)
{
	if (qp->sq_flushed || qp->comp.error)
		return "error";
	if (qp->req.stopped)
		return "stopped";
	if (qp->comp.rnr_until > now)
		return "rnr_wait";
	if (READ_ONCE(qp->req.odp_wait))
		return "odp_wait";
	if (qp->comp.probe == SROCE_PROBE_WANTED)
		return "probing";
	if (qp->comp.rewind)
		return "rewind";
	if (qp->sq.cons != qp->comp.sent)
		return "await_ack";
	return READ_ONCE(qp->req.streaming) ? "streaming" : "idle";
}

/*
 * The requester's own fields (psn, fetched, ssn, ...) belong to its task
 * and are read here unlocked, as the hints they are for a reader.
 */
static void sroce_qp_res_req(struct sroce_qp *qp, struct sroce_qp_res *r)
{
	const struct sroce_comp *comp = &qp->comp;
	u64 now = ktime_get_ns();
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	r->psn = READ_ONCE(qp->req.psn);
	r->sent_psn = READ_ONCE(qp->req.sent_psn);
	r->una = comp->una;
	r->max_psn = comp->max_psn;
	r->inflight = comp->sent - qp->sq.cons;
	r->queued = READ_ONCE(qp->req.fetched) - comp->sent;
	r->rd_atomic = comp->rd_atomic;
	r->retry_left = comp->retry_left;
	r->rnr_left = comp->rnr_left;
	r->unlimited = comp->credits_unlimited;
	r->credits = max(sroce_psn_diff(comp->lsn, READ_ONCE(qp->req.ssn)), 0);
	r->rnr_wait_ns = comp->rnr_until > now ? comp->rnr_until - now : 0;
	r->req = sroce_qp_req_state(qp, now);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

static const char *const sroce_qp_resp_msg[] = {
	[SROCE_RESP_IDLE] = "idle", [SROCE_RESP_SEND] = "send",
	[SROCE_RESP_WRITE] = "write", [SROCE_RESP_DROP] = "drop",
	[SROCE_RESP_FAILED] = "failed",
};

static void sroce_qp_res_resp(struct sroce_qp *qp, struct sroce_qp_res *r)
{
	struct sroce_resp *resp = &qp->resp;
	u32 i;

	spin_lock_bh(&qp->resp_lock);
	r->epsn = resp->psn;
	r->msn = resp->msn;
	r->nak_sent = resp->nak_sent;
	r->answers = resp->tx_tail - resp->tx_head;
	r->rd_answers = 0;
	/* NULL once destroy_qp freed it (sroce_resp_free()). */
	for (i = resp->tx_head; resp->txq && i != resp->tx_tail; i++)
		if (resp->txq[i % resp->txq_size].type != SROCE_RTX_ACK)
			r->rd_answers++;
	r->odp_held = resp->odp_npending;
	r->resp = sroce_qp_resp_msg[resp->msg];
	spin_unlock_bh(&qp->resp_lock);
}

static int sroce_qp_res_put(struct sk_buff *msg, const struct sroce_qp *qp,
			    const struct sroce_qp_res *r)
{
	const struct sroce_res_field f[] = {
		SROCE_RES_S("req_state", r->req),
		SROCE_RES("sq_psn", U32, r->psn),
		SROCE_RES("sent_psn", U32, r->sent_psn),
		SROCE_RES("una", U32, r->una),
		SROCE_RES("max_psn", U32, r->max_psn),
		SROCE_RES("wqes_inflight", U32, r->inflight),
		SROCE_RES("wqes_queued", U32, r->queued),
		SROCE_RES("rd_atomic", U32, r->rd_atomic),
		SROCE_RES("retry_left", U32, r->retry_left),
		SROCE_RES("rnr_retry_left", U32, r->rnr_left),
		SROCE_RES("rnr_wait_us", U64, div_u64(r->rnr_wait_ns, 1000)),
		SROCE_RES("credits", U32, r->unlimited ? U32_MAX : r->credits),
		SROCE_RES_S("resp_state", r->resp),
		SROCE_RES("resp_epsn", U32, r->epsn),
		SROCE_RES("resp_msn", U32, r->msn),
		SROCE_RES("resp_nak_sent", U32, r->nak_sent),
		SROCE_RES("resp_answers", U32, r->answers),
		SROCE_RES("resp_rd_atomic", U32, r->rd_answers),
		SROCE_RES("resp_odp_held", U32, r->odp_held),
		SROCE_RES("mtu", U32, qp->mtu),
		SROCE_RES("udp_sport", U32, qp->src_port),
		SROCE_RES("cc_rate_kbps", U32, r->cc.rate),
		SROCE_RES("cc_target_kbps", U32, r->cc.target),
		SROCE_RES("cc_alpha", U32, r->cc.alpha),
		SROCE_RES("cc_window", U32, r->cc.window),
	};

	return sroce_res_put(msg, f, ARRAY_SIZE(f));
}

/*
 * ib_device_ops.fill_res_qp_entry: the transport beside ib_core's
 * attributes (ib_core's sq-psn and rq-psn are the ones modify_qp set;
 * sq_psn and resp_epsn here are where the QP is now).
 */
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_qp_res r;

	sroce_qp_res_req(qp, &r);
	sroce_qp_res_resp(qp, &r);
	sroce_cc_res(qp, &r.cc);
	return sroce_qp_res_put(msg, qp, &r);
}

/*
 * UD and UC: what was posted before the destroy still goes out. A sender
 * may post unsignaled sends and destroy the QP at once (mckey does); a
 * NIC has them on the wire by then, and so do we. Bounded to a second, and
 * only while the QP can still send.
 */
static void sroce_qp_drain_unreliable(struct sroce_qp *qp)
{
	unsigned long until = jiffies + HZ;

	if (qp->ibqp.qp_type != IB_QPT_UD && qp->ibqp.qp_type != IB_QPT_UC)
		return;
	while (sroce_qp_state(qp) == IB_QPS_RTS && !sroce_req_drained(qp) &&
	       time_before(jiffies, until)) {
		sroce_task_run(&qp->req_task);
		sroce_task_sync(&qp->req_task);
	}
}

/**
 * sroce_qp_drain_ud_senders - send what UD QPs of @pd have posted
 * @sdev: the device
 * @pd: the PD of an address handle about to go
 *
 * A UD WQE names its AH by number, and the requester looks the AV up when
 * it sends. An application may post sends and destroy the AH at once
 * (mckey: unsignaled sends, then ibv_destroy_ah): a NIC has copied the AV
 * into the WQE and sends them all, so before the AH goes, every UD QP of
 * its PD sends what it holds. May sleep; a scan of the QPs, at AH
 * destruction only.
 */
void sroce_qp_drain_ud_senders(struct sroce_dev *sdev, struct ib_pd *pd)
{
	unsigned long index = 0;
	struct sroce_qp_handle *h;
	struct sroce_qp *qp;

	for (;; index++) {
		rcu_read_lock();
		h = xa_find(&sdev->qp_xa, &index, ULONG_MAX, XA_PRESENT);
		qp = h ? h->qp : NULL;
		if (qp && (qp->ibqp.pd != pd || qp->ibqp.qp_type != IB_QPT_UD ||
			   !refcount_inc_not_zero(&h->ref)))
			qp = ERR_PTR(-EAGAIN);
		rcu_read_unlock();
		if (!qp)
			return;
		if (IS_ERR(qp))
			continue;
		sroce_qp_drain_unreliable(qp);
		sroce_qp_put(qp);
	}
}

int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	enum ib_qp_state was;

	sroce_qp_drain_unreliable(qp);
	spin_lock_bh(&qp->state_lock);
	was = qp->state;
	qp->state = IB_QPS_ERR;
	spin_unlock_bh(&qp->state_lock);
	trace_sroce_qp_destroy(qp, was);

	sroce_mcast_qp_destroy(qp);
	/* No engine runs again, no packet holds it, then no timer either. */
	sroce_task_stop(&qp->req_task);
	sroce_task_stop(&qp->resp_task);
	sroce_req_uncount(qp);
	sroce_qp_unpublish(sdev, qp);
	timer_delete_sync(&qp->retrans_timer);
	hrtimer_cancel(&qp->rnr_timer);
	sroce_cc_qp_stop(qp);

	sroce_qp_free_transport(qp);
	sroce_queue_free(&qp->sq);
	sroce_queue_free(&qp->rq);
	sroce_qp_free_handle(qp);
	return 0;
}

/* The doorbell and kernel posting ----------------------------------- */

/*
 * The doorbell: run the requester, which checks the WQEs userspace
 * published and sends them (sroce_req.c). A lone post runs it here, in
 * the system call: the shortest path for a ping-pong. A post that comes
 * right after the requester went idle is a stream, and there the pass
 * goes to a worker: on veth a pass sends, receives the peer's answer and
 * completes inside the call, so the application would post one message
 * per round trip; handed off, it posts on while the worker sends (64 B
 * ib_send_bw: 0.011 -> 0.019 Mpps, medians of five).
 *
 * Unless the peer sent a request since the last doorbell: then this post
 * answers it (a ping-pong), and runs here. A fast ping-pong's reply often
 * arrives while the doorbell's call is still running (on veth the peer
 * polls, posts and sends meanwhile), so the post that answers it comes
 * well within SROCE_REQ_BURST_NS of the idle; handed to a worker, it
 * waited for a wake-up and two context switches on the CPU where the peer
 * polls. 8 B ib_send_lat under TCG: 35-75 % of the posts went that way,
 * typical 67-73 us; with this check none, 28-31 us (ib_write_lat 65 ->
 * 30-33 us). Streams see no requests from their peer, only ACKs.
 */
static bool sroce_qp_doorbell_streams(struct sroce_qp *qp)
{
	u32 heard = READ_ONCE(qp->resp.requests);
	u64 idle = READ_ONCE(qp->req.idle_ns);
	bool answers = heard != READ_ONCE(qp->req.doorbell_heard);

	WRITE_ONCE(qp->req.doorbell_heard, heard);
	if (answers)
		return false;
	return idle && ktime_get_ns() - idle < SROCE_REQ_BURST_NS;
}

static void sroce_qp_doorbell(struct sroce_qp *qp)
{
	sroce_qp_count(qp, SROCE_CNT_DOORBELLS, 1);
	if (sroce_qp_doorbell_streams(qp)) {
		sroce_qp_count(qp, SROCE_CNT_STREAM_DOORBELLS, 1);
		WRITE_ONCE(qp->req.streaming, true);
		sroce_task_schedule_linger(&qp->req_task);
		return;
	}
	sroce_task_run(&qp->req_task);
}

enum ib_qp_state sroce_qp_state(struct sroce_qp *qp)
{
	enum ib_qp_state state;
	unsigned long flags;

	/* irqsave: kernel ULPs post (and so ask) with IRQs off. */
	spin_lock_irqsave(&qp->state_lock, flags);
	state = qp->state;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	return state;
}

/* Encode a kernel ULP's send WR into the SQ ring (the uapi layout). */
static int sroce_post_one_send(struct sroce_qp *qp, const struct ib_send_wr *wr)
{
	struct sroce_send_wqe *wqe;
	struct sroce_sge *sge;
	int i;

	if (wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	if (sroce_queue_post_room(&qp->sq) <= 0)
		return -ENOMEM;

	wqe = sroce_queue_post_elem(&qp->sq);
	memset(wqe, 0, SROCE_SEND_WQE_HDR);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->num_sge = wr->num_sge;
	if (wr->send_flags & IB_SEND_SIGNALED)
		wqe->flags |= SROCE_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= SROCE_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= SROCE_WQE_F_FENCE;
	if (wr->opcode == IB_WR_SEND_WITH_INV || wr->opcode == IB_WR_LOCAL_INV)
		wqe->ex.invalidate_rkey = wr->ex.invalidate_rkey;
	else
		wqe->ex.imm_data = wr->ex.imm_data;

	/*
	 * As a number: IB_WR_ATOMIC_WRITE (6.2) is an ib_rdma_wr whose 8
	 * bytes come from sg_list. No ib_verbs structure carries a FLUSH's
	 * type and level, so a kernel ULP cannot ask for one.
	 */
	switch ((u32)wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case SROCE_WR_ATOMIC_WRITE:
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->wr.atomic.swap = atomic_wr(wr)->swap;
		wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		if (qp->ibqp.qp_type == IB_QPT_UD ||
		    qp->ibqp.qp_type == IB_QPT_GSI) {
			wqe->wr.ud.ah_num = to_sah(ud_wr(wr)->ah)->ah_num;
			wqe->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
			wqe->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
		}
		break;
	case IB_WR_REG_MR: {
		struct sroce_reg_mr_wr reg = {
			.key = reg_wr(wr)->key,
			.access = reg_wr(wr)->access,
		};

		static_assert(sizeof(reg) <= sizeof(wqe->wr.raw));
		memcpy(wqe->wr.raw, &reg, sizeof(reg));
		break;
	}
	default:
		return -EINVAL;
	}

	sge = (struct sroce_sge *)((u8 *)wqe + SROCE_SEND_WQE_HDR);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	sroce_queue_post_publish(&qp->sq, 1);
	return 0;
}

/*
 * ib_post_send: kernel ULPs write WQEs into the same ring userspace uses
 * and take the same validation path. A user QP's post_send is its
 * doorbell (uverbs calls it with no WRs): userspace owns the producer
 * side of its rings, and the kernel never writes into them.
 */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	enum ib_qp_state state = sroce_qp_state(qp);
	unsigned long flags;
	int err = 0;

	if (qp->is_user && wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/*
	 * An XRC target sends no requests; a kernel XRC initiator could not
	 * name the remote SRQ (no ib_send_wr member carries it).
	 */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT ||
	    (!qp->is_user && qp->ibqp.qp_type == IB_QPT_XRC_INI)) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	if (!qp->is_user) {
		if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
		    state == IB_QPS_RTR) {
			*bad_wr = wr;
			return -EINVAL;
		}
		spin_lock_irqsave(&qp->post_lock, flags);
		for (; wr; wr = wr->next) {
			err = sroce_post_one_send(qp, wr);
			if (err) {
				*bad_wr = wr;
				break;
			}
		}
		spin_unlock_irqrestore(&qp->post_lock, flags);
	}

	if (state == IB_QPS_ERR) {
		sroce_qp_flush(qp);
	} else if (state == IB_QPS_RTS || state == IB_QPS_SQD ||
		   state == IB_QPS_SQE) {
		/*
		 * ib_post_send() may be called with IRQs off (the MAD layer
		 * posts under a spin_lock_irqsave): the requester takes BH
		 * locks, so it runs from the workqueue then.
		 */
		if (irqs_disabled())
			sroce_task_schedule(&qp->req_task);
		else
			sroce_qp_doorbell(qp);
	}
	return err;
}

int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	int err = 0;

	/* A user QP's receive doorbell carries no WRs (see post_send). */
	if (!sroce_qp_has_rq(qp) || (qp->is_user && wr)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (!qp->is_user) {
		if (sroce_qp_state(qp) == IB_QPS_RESET) {
			*bad_wr = wr;
			return -EINVAL;
		}
		spin_lock_irqsave(&qp->post_lock, flags);
		for (; wr; wr = wr->next) {
			err = sroce_queue_post_recv(&qp->rq, qp->max_recv_sge, wr);
			if (err) {
				*bad_wr = wr;
				break;
			}
		}
		spin_unlock_irqrestore(&qp->post_lock, flags);
	}
	if (sroce_qp_state(qp) == IB_QPS_ERR)
		sroce_qp_flush(qp);
	return err;
}
