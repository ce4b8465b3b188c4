// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: completion queues.
 *
 * A CQ is a ring of struct sroce_cqe that the kernel produces and the
 * consumer (the provider through mmap, or ib_poll_cq for kernel users)
 * drains. sroce_cq_post() is the one place completions enter a CQ.
 *
 * Locking: cq->lock (spinlock, irqsave: producers run in softirq and in
 * process context) serialises producers, the kernel consumer (poll_cq),
 * arming (req_notify_cq), resize, and what resource details read (the
 * overflow state and count, whether the CQ is gone). Lock order: QP
 * locks, then cq->lock.
 */

#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "sroce_queue.h"
#include "sroce_trace.h"

static struct ib_ucontext *sroce_udata_ucontext(struct ib_udata *udata)
{
	return &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					  ibuc)->ibuc;
}

static u32 sroce_cq_entries(unsigned int cqe)
{
	return roundup_pow_of_two(max(cqe, 1U));
}

static int sroce_cq_check_size(struct sroce_dev *sdev, unsigned int cqe)
{
	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	return 0;
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg)
{
	struct ib_udata *udata = sroce_create_cq_udata(arg);
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_create_cq_resp resp = {};
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	err = sroce_cq_check_size(sdev, attr->cqe);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	spin_lock_init(&cq->lock);
	err = xa_alloc_cyclic(&sdev->cq_xa, &cq->cqn, cq,
			      XA_LIMIT(1, SROCE_MAX_CQ), &sdev->cq_next,
			      GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	err = sroce_queue_init(&cq->queue, sroce_cq_entries(attr->cqe),
			       SROCE_CQE_SIZE,
			       udata ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (err)
		goto err_xa;

	if (udata) {
		err = sroce_queue_map_user(&cq->queue,
					   sroce_udata_ucontext(udata),
					   &resp.ring);
		if (err)
			goto err_queue;
		resp.cqn = cq->cqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_queue;
		cq->is_user = true;
	}
	ibcq->cqe = cq->queue.entries;
	return 0;

err_queue:
	sroce_queue_free(&cq->queue);
err_xa:
	xa_erase(&sdev->cq_xa, cq->cqn);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;

	xa_erase(&sdev->cq_xa, cq->cqn);
	/*
	 * Resource details may still look (ib_core before 6.12 lets them run
	 * until destroy_cq has returned): not at a freed ring.
	 */
	spin_lock_irqsave(&cq->lock, flags);
	cq->gone = true;
	spin_unlock_irqrestore(&cq->lock, flags);
	sroce_queue_free(&cq->queue);
	return 0;
}

/*
 * Resize keeps every unpolled completion: the new ring must hold them
 * (EINVAL otherwise, as the spec asks), they are copied in order, and a
 * user CQ gets a new mapping (the provider remaps; the old pages stay
 * valid until it unmaps them).
 */
int sroce_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_resize_cq_resp resp = {};
	struct sroce_queue nq, oq;
	unsigned long flags;
	int err, used;
	u32 i;

	if (cq->is_user && !udata)
		return -EINVAL;
	err = sroce_cq_check_size(sdev, cqe);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	err = sroce_queue_init(&nq, sroce_cq_entries(cqe), SROCE_CQE_SIZE,
			       cq->is_user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (err)
		return err;
	if (cq->is_user) {
		err = sroce_queue_map_user(&nq, sroce_udata_ucontext(udata),
					   &resp.ring);
		if (err)
			goto err_free;
		/*
		 * Answer before swapping: a provider that never learns of
		 * the new ring must be left polling a ring that is still live.
		 */
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_free;
	}

	spin_lock_irqsave(&cq->lock, flags);
	used = sroce_queue_refresh_cons(&cq->queue);
	if (used < 0) {
		err = -EINVAL;		/* corrupt consumer index */
		goto err_unlock;
	}
	used = cq->queue.entries - used;
	if (used > cqe || used > nq.entries) {
		err = -EINVAL;
		goto err_unlock;
	}
	for (i = 0; i < used; i++)
		memcpy(sroce_queue_elem(&nq, i),
		       sroce_queue_elem(&cq->queue, cq->queue.cons + i),
		       SROCE_CQE_SIZE);
	/* Copies land before the new ring's producer index. */
	smp_store_release(&nq.hdr->prod, used);
	nq.prod = used;
	nq.hdr->flags = cq->queue.hdr->flags;
	oq = cq->queue;
	cq->queue = nq;
	spin_unlock_irqrestore(&cq->lock, flags);

	sroce_queue_free(&oq);
	ibcq->cqe = cq->queue.entries;
	return 0;

err_unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
err_free:
	sroce_queue_free(&nq);
	return err;
}

int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_NEXT_COMP ||
	    cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		int space = sroce_queue_refresh_cons(&cq->queue);

		ret = space >= 0 && space < cq->queue.entries;
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void sroce_cq_error_event(struct sroce_cq *cq)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/**
 * sroce_cq_post - add one completion to @cq
 * @cq: the completion queue
 * @cqe: the completion
 * @solicited: the completion answers a solicited event
 *
 * Return: 0, or -ENOSPC when the CQ is full (or its consumer index is
 * corrupt): the CQ is then in error and its owner raises IB_EVENT_CQ_ERR
 * once; the caller moves the QP to the error state.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited)
{
	unsigned long flags;
	bool notify = false;
	int space;

	trace_sroce_cqe_error(cq, cqe);
	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflow) {
		cq->lost++;
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	space = sroce_queue_refresh_cons(&cq->queue);
	if (space <= 0) {
		cq->overflow = true;
		cq->lost++;
		/* Under the lock: a resize swaps and frees the ring under it. */
		sroce_queue_set_flags(&cq->queue, SROCE_RING_F_ERROR);
		spin_unlock_irqrestore(&cq->lock, flags);
		sroce_cq_error_event(cq);
		return -ENOSPC;
	}
	memcpy(sroce_queue_producer_elem(&cq->queue), cqe, sizeof(*cqe));
	sroce_queue_producer_publish(&cq->queue, 1);

	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED && solicited)) {
		cq->notify = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}

/* The CQE carries ibv_wc_flags values; kernel consumers want IB_WC_*. */
static int sroce_cqe_wc_flags(u16 flags)
{
	int wc_flags = 0;

	if (flags & SROCE_WC_F_GRH)
		wc_flags |= IB_WC_GRH;
	if (flags & SROCE_WC_F_WITH_IMM)
		wc_flags |= IB_WC_WITH_IMM;
	if (flags & SROCE_WC_F_IP_CSUM_OK)
		wc_flags |= IB_WC_IP_CSUM_OK;
	if (flags & SROCE_WC_F_WITH_INV)
		wc_flags |= IB_WC_WITH_INVALIDATE;
	return wc_flags;
}

static void sroce_cqe_to_wc(struct sroce_dev *sdev, const struct sroce_cqe *cqe,
			    struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp = sroce_qp_lookup_ib(sdev, cqe->qp_num);
	if (cqe->wc_flags & SROCE_WC_F_WITH_INV)
		wc->ex.invalidate_rkey = cqe->ex.invalidated_rkey;
	else
		wc->ex.imm_data = cqe->ex.imm_data;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = sroce_cqe_wc_flags(cqe->wc_flags);
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->port_num = cqe->port_num;
	wc->network_hdr_type = cqe->network_hdr_type;
	if (cqe->network_hdr_type)
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
}

/* ib_poll_cq for kernel consumers; user CQs are polled through mmap. */
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_queue *q = &cq->queue;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && !sroce_queue_empty(q)) {
		sroce_cqe_to_wc(to_sdev(ibcq->device),
				sroce_queue_consumer_elem(q), &wc[n++]);
		sroce_queue_consumer_advance(q, 1);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

static const char *sroce_cq_armed(u8 notify)
{
	switch (notify) {
	case IB_CQ_NEXT_COMP:
		return "next";
	case IB_CQ_SOLICITED:
		return "solicited";
	default:
		return "no";
	}
}

/* What "rdma resource show cq -dd" shows of a CQ, taken under its lock. */
struct sroce_cq_res {
	u64 lost;
	u32 entries;
	int space;			/* free slots, or -EINVAL */
	u8 notify;
	bool overflow;
};

static int sroce_cq_res_put(struct sk_buff *msg, const struct sroce_cq *cq,
			    const struct sroce_cq_res *r)
{
	const struct sroce_res_field f[] = {
		SROCE_RES("cqn", U32, cq->cqn),
		SROCE_RES("entries", U32, r->entries),
		SROCE_RES("used", U32, r->space < 0 ? r->entries :
					 r->entries - r->space),
		SROCE_RES("bad_cons", U32, r->space < 0),
		SROCE_RES("overflow", U32, r->overflow),
		SROCE_RES("lost_cqes", U64, r->lost),
		SROCE_RES_S("armed", sroce_cq_armed(r->notify)),
		SROCE_RES_S("ring", cq->is_user ? "user" : "kernel"),
	};

	return sroce_res_put(msg, f, ARRAY_SIZE(f));
}

/*
 * ib_device_ops.fill_res_cq_entry. A user CQ's consumer index is the
 * application's: read (and checked) as the producer reads it, so "used"
 * is what the application has not polled yet.
 */
int sroce_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_cq_res r;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	r.entries = cq->queue.entries;
	r.space = cq->gone ? r.entries : sroce_queue_refresh_cons(&cq->queue);
	r.notify = cq->notify;
	r.overflow = cq->overflow;
	r.lost = cq->lost;
	spin_unlock_irqrestore(&cq->lock, flags);
	return sroce_cq_res_put(msg, cq, &r);
}
