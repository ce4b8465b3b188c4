// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: shared receive queues.
 *
 * An SRQ is a ring of struct sroce_recv_wqe that userspace (or a kernel
 * ULP through post_srq_recv) produces and the responders of its QPs
 * consume. The kernel never produces into a user's SRQ: for a user SRQ,
 * post_srq_recv is not a way to post. srq_limit, once armed by modify_srq, fires
 * IB_EVENT_SRQ_LIMIT_REACHED a single time when consumption leaves fewer
 * WQEs than the limit (sroce_srq_consumed), and disarms.
 *
 * An XRC SRQ belongs to an XRC domain and has a CQ of its own; the
 * requests that reach it name it by number (XRCETH), so the receive path
 * finds it in srq_xa under RCU and holds a reference while it handles
 * the packet (sroce_srq_get_xrc). Destroy takes the number off the table,
 * waits for the references, then for a grace period: ib_core frees the
 * SRQ as soon as destroy_srq returns.
 *
 * Locking: srq->lock (spinlock, irqsave) serialises consumers, the limit
 * and resize-free modification; srq->post_lock the kernel producers.
 */

#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

static u32 sroce_srq_stride(u32 max_sge)
{
	u32 bytes = SROCE_RECV_WQE_HDR + max(max_sge, 1U) *
		    sizeof(struct sroce_sge);

	return roundup_pow_of_two(max(bytes, 64U));
}

/**
 * sroce_srq_get_xrc - the XRC SRQ numbered @srqn, held
 * @sdev: the device
 * @srqn: the number from a request's XRCETH
 *
 * Return: the SRQ (release with sroce_srq_put()), or NULL when there is
 * no XRC SRQ of that number. Its domain is for the caller to check.
 */
struct sroce_srq *sroce_srq_get_xrc(struct sroce_dev *sdev, u32 srqn)
{
	struct sroce_srq *srq;

	rcu_read_lock();
	srq = xa_load(&sdev->srq_xa, srqn);
	if (srq && (!srq->xrcd || !refcount_inc_not_zero(&srq->ref)))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}

/*
 * Take the number off the table, wait until no packet holds the SRQ and
 * until no lookup can still be about to try (RCU). May sleep.
 */
static void sroce_srq_unpublish(struct sroce_dev *sdev, struct sroce_srq *srq)
{
	xa_erase(&sdev->srq_xa, srq->srqn);
	sroce_srq_put(srq);
	wait_for_completion(&srq->released);
	/* Only XRC SRQs are looked up by the receive path. */
	if (srq->xrcd)
		synchronize_rcu();
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	if (init->srq_type == IB_SRQT_XRC &&
	    (!init->ext.xrc.xrcd || !init->ext.cq))
		return -EINVAL;
	if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR ||
	    attr->max_sge > SROCE_MAX_SGE || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	srq->is_user = !!udata;
	err = sroce_queue_init(&srq->rq, roundup_pow_of_two(attr->max_wr),
			       sroce_srq_stride(attr->max_sge),
			       udata ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (err)
		return err;
	srq->max_sge = min_t(u32, ((1U << srq->rq.stride_shift) -
				   SROCE_RECV_WQE_HDR) / sizeof(struct sroce_sge),
			     SROCE_MAX_SGE);
	srq->limit = attr->srq_limit;
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);
	if (init->srq_type == IB_SRQT_XRC) {
		srq->xrcd = init->ext.xrc.xrcd;
		srq->cq = to_scq(init->ext.cq);
	}

	err = xa_alloc_cyclic(&sdev->srq_xa, &srq->srqn, srq,
			      XA_LIMIT(1, SROCE_MAX_SRQ), &sdev->srq_next,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_queue;
	}
	/* The number XRC requests name it by (ibv_get_srq_num). */
	ibsrq->ext.xrc.srq_num = srq->srqn;

	if (udata) {
		struct ib_ucontext *uctx =
			&rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						   ibuc)->ibuc;

		err = sroce_queue_map_user(&srq->rq, uctx, &resp.rq);
		if (err)
			goto err_xa;
		resp.srqn = srq->srqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	attr->max_wr = srq->rq.entries;
	attr->max_sge = srq->max_sge;
	return 0;

err_xa:
	sroce_srq_unpublish(sdev, srq);
err_queue:
	sroce_queue_free(&srq->rq);
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;

	/* Resizing is not offered (no IB_DEVICE_SRQ_RESIZE). */
	if (mask & IB_SRQ_MAX_WR)
		return -EINVAL;
	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if (attr->srq_limit > srq->rq.entries)
		return -EINVAL;

	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->rq.entries;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);

	sroce_srq_unpublish(sdev, srq);
	sroce_queue_free(&srq->rq);
	return 0;
}

/*
 * A responder took WQEs; @left remain. Fire the armed limit once. Called
 * with srq->lock held; the event is raised after it is dropped.
 */
bool sroce_srq_consumed(struct sroce_srq *srq, u32 left)
{
	if (!srq->limit || left >= srq->limit)
		return false;
	srq->limit = 0;
	return true;
}

void sroce_srq_limit_event(struct sroce_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err = 0;

	/*
	 * Userspace owns the producer side of its SRQ's ring: the kernel
	 * writing WQEs there too would race with it, and would have to trust
	 * a consumer index userspace can write.
	 */
	if (srq->is_user && wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (srq->is_user)
		return 0;
	spin_lock_irqsave(&srq->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_queue_post_recv(&srq->rq, srq->max_sge, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}

/**
 * sroce_srq_take - take the oldest receive WQE of @srq for a responder
 * @srq: the shared receive queue
 * @wr_id: its wr_id
 * @sge: room for srq->max_sge SGEs
 * @num_sge: how many it has
 *
 * The WQE is copied out and its slot freed at once: an SRQ's WQEs are
 * taken by many QPs and complete in no particular order.
 *
 * Return: 1 with a WQE, 0 if the SRQ is empty, -EINVAL if its producer
 * index or the WQE is corrupt.
 */
int sroce_srq_take(struct sroce_srq *srq, u64 *wr_id, struct sroce_sge *sge,
		   u32 *num_sge)
{
	const struct sroce_recv_wqe *wqe;
	unsigned long flags;
	bool limit = false;
	int n;

	spin_lock_irqsave(&srq->lock, flags);
	n = sroce_queue_refresh_prod(&srq->rq);
	if (n <= 0) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return n;
	}
	wqe = sroce_queue_consumer_elem(&srq->rq);
	*wr_id = READ_ONCE(wqe->wr_id);
	*num_sge = READ_ONCE(wqe->num_sge);
	if (*num_sge > srq->max_sge) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return -EINVAL;
	}
	memcpy(sge, (const u8 *)wqe + SROCE_RECV_WQE_HDR,
	       *num_sge * sizeof(*sge));
	sroce_queue_consumer_advance(&srq->rq, 1);
	limit = sroce_srq_consumed(srq, n - 1);
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit)
		sroce_srq_limit_event(srq);
	return 1;
}
