// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the responder — executes the requests that arrive for a QP and
 * answers them (IBTA 9.7.5 responder side, 9.8, 9.9.3).
 *
 * Requests are handled in the receive softirq, in PSN order: a request
 * at the expected PSN executes (SEND into a receive WQE, WRITE into an
 * MR; READ, atomics, ATOMIC WRITE and FLUSH recorded as resources), one
 * beyond it earns a single sequence NAK, one before it is a duplicate:
 * SEND and WRITE are acknowledged again, the others are answered again
 * from their resource (an atomic is never executed twice).
 *
 * Reordering: paths reorder (a veth's receive runs on the CPU that sent,
 * so two bursts of one QP sent from two CPUs race; ECMP), and a sequence
 * NAK costs a go-back-N resend of all that followed the gap. So an RC
 * responder holds a request beyond the expected PSN, for up to
 * reorder_us (at most SROCE_RESP_HELD_MAX requests, within as many PSNs
 * of the expected one), instead of NAKing it: when the missing request
 * arrives, the held ones that follow it execute in order; when the time
 * runs out first, the gap is a loss: one sequence NAK, and the held
 * requests are dropped (the resend brings them again). A UC responder,
 * for which a gap loses the message under way (nothing is resent), holds
 * the same way; when the time runs out the gap is a loss, and the held
 * requests go on from there. A UC request just behind the expected PSN
 * came too late (its gap was given up on): dropped, not taken for a new
 * start. Every access is checked
 * against the MR's key, PD, access rights and bounds before a byte moves;
 * a failed check is answered with a NAK and moves the QP to error. From
 * the request that failed on, the responder takes nothing more
 * (SROCE_RESP_FAILED, set under resp_lock): a resend of it, handled on
 * another CPU before the QP reaches ERR, must not find the message state
 * it failed in (a SEND under way into a WQE already completed).
 *
 * What goes back (ACKs, NAKs, READ responses, atomic ACKs) is queued in
 * qp->resp.txq and sent, in that order, by qp->resp_task: an ACK never
 * overtakes the READ responses before it, and a large READ is sent in
 * budgeted passes. An ACK queued behind another unsent ACK replaces it
 * (coalescing).
 *
 * An XRC target is an RC responder whose receive WQEs and PD are those of
 * the SRQ each request names: found by number and held for the packet
 * (resp.xrc_srq), it must belong to the QP's XRC domain, and every packet
 * of a message must name the one its first packet named.
 *
 * Locking: qp->resp_lock guards struct sroce_resp (softirq, and bh off
 * elsewhere; the held requests' timer takes it too). Under it: qp->rq_lock (the receive ring), then a CQ's lock.
 * The transmit task drops resp_lock around each packet it sends.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/slab.h>

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

#define SROCE_RESP_TX_BUDGET	64

/*
 * End-to-end credits: every ACK-type AETH of a QP with its own receive
 * queue counts the receive WQEs posted beyond its MSN (an SRQ's, shared,
 * cannot be promised to one peer: "invalid"). Off: always "invalid", as
 * rdma_rxe sends.
 */
static bool sroce_credits = true;
module_param_named(credits, sroce_credits, bool, 0644);
MODULE_PARM_DESC(credits,
		 "Advertise receive WQEs in ACKs (end-to-end flow control; default: on)");

static unsigned int sroce_reorder_us = 500;
module_param_named(reorder_us, sroce_reorder_us, uint, 0644);
MODULE_PARM_DESC(reorder_us,
		 "How long an RC or UC responder holds requests that arrived past a missing one before it takes the gap for a loss (microseconds; 0: at once; default 500)");

/* What handling a request leaves to do once resp_lock is dropped. */
#define SROCE_RESP_KICK		BIT(0)	/* run the transmit task */
#define SROCE_RESP_ERROR	BIT(1)	/* move the QP to ERR */
#define SROCE_RESP_FATAL	BIT(2)	/* ... with IB_EVENT_QP_FATAL */
#define SROCE_RESP_ODP_WAIT	BIT(3)	/* UD: the datagram waits for a page */

/* UD datagrams a QP holds while a page of its receive WQE faults in. */
#define SROCE_RESP_ODP_MAX	64
/* RC requests a QP holds past a gap, and how far past it they may be. */
#define SROCE_RESP_HELD_MAX	64

/* A packet held for later: an ODP page, or a gap before it. */
struct sroce_resp_held_pkt {
	struct list_head list;
	struct sk_buff *skb;		/* a reference of its own */
	struct sroce_pkt pkt;
};

static void sroce_resp_odp_free(struct list_head *list)
{
	struct sroce_resp_held_pkt *e, *next;

	list_for_each_entry_safe(e, next, list, list) {
		kfree_skb(e->skb);
		kfree(e);
	}
}

/* Drop the datagrams a QP holds (reset, destroy); under resp_lock. */
static void sroce_resp_odp_purge(struct sroce_qp *qp, struct list_head *to)
{
	list_splice_init(&qp->resp.odp_pending, to);
	qp->resp.odp_npending = 0;
}

/* Drop the requests held past a gap onto @to; under resp_lock. */
static void sroce_resp_held_purge(struct sroce_qp *qp, struct list_head *to)
{
	if (qp->resp.nheld)
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_SEQ, qp->resp.nheld);
	list_splice_tail_init(&qp->resp.held, to);
	qp->resp.nheld = 0;
}

static enum hrtimer_restart sroce_resp_held_timer(struct hrtimer *t);

/* Resources and transmit queue -------------------------------------- */

static u32 sroce_resp_txq_size(u32 nres)
{
	return 2 * nres + 8;
}

/* A user's QP's state is charged to the user's memory cgroup. */
static gfp_t sroce_resp_gfp(const struct sroce_qp *qp)
{
	return qp->is_user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
}

/**
 * sroce_resp_init - allocate what a responder needs
 * @qp: the queue pair
 * @max_sge: SGEs of the largest receive WQE it may take
 * @gfp: GFP_KERNEL_ACCOUNT for a user's QP
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_resp_init(struct sroce_qp *qp, u32 max_sge, gfp_t gfp)
{
	struct sroce_resp *resp = &qp->resp;

	hrtimer_setup(&resp->held_timer, sroce_resp_held_timer,
		      CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	INIT_LIST_HEAD(&resp->odp_pending);
	INIT_LIST_HEAD(&resp->held);
	resp->sge = kcalloc(max(max_sge, 1U), sizeof(*resp->sge), gfp);
	resp->nres = 1;
	resp->res = kcalloc(resp->nres, sizeof(*resp->res), gfp);
	resp->txq_size = sroce_resp_txq_size(resp->nres);
	resp->txq = kcalloc(resp->txq_size, sizeof(*resp->txq), gfp);
	if (!resp->sge || !resp->res || !resp->txq) {
		sroce_resp_free(qp);
		return -ENOMEM;
	}
	return 0;
}

void sroce_resp_free(struct sroce_qp *qp)
{
	struct sroce_resp_tx *txq;

	/* The QP is unpublished: no fault's work, no packet holds it. */
	hrtimer_cancel(&qp->resp.held_timer);
	sroce_resp_odp_free(&qp->resp.odp_pending);
	INIT_LIST_HEAD(&qp->resp.odp_pending);
	qp->resp.odp_npending = 0;
	sroce_resp_odp_free(&qp->resp.held);
	INIT_LIST_HEAD(&qp->resp.held);
	qp->resp.nheld = 0;
	kfree(qp->resp.sge);
	kfree(qp->resp.res);
	qp->resp.sge = NULL;
	qp->resp.res = NULL;
	/*
	 * Under the lock: resource details may still read the queue (ib_core
	 * before 6.12 lets them run until destroy_qp has returned).
	 */
	spin_lock_bh(&qp->resp_lock);
	txq = qp->resp.txq;
	qp->resp.txq = NULL;
	spin_unlock_bh(&qp->resp_lock);
	kfree(txq);
}

/**
 * sroce_resp_set_rd_atomic - size the resource table (max_dest_rd_atomic)
 * @qp: the queue pair, before it reaches RTR
 * @n: resources
 *
 * Return: 0 or -ENOMEM (the old table stays).
 */
int sroce_resp_set_rd_atomic(struct sroce_qp *qp, u32 n)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_res *res, *old_res;
	struct sroce_resp_tx *txq, *old_txq;

	n = max(n, 1U);
	if (n == resp->nres)
		return 0;
	res = kcalloc(n, sizeof(*res), sroce_resp_gfp(qp));
	txq = kcalloc(sroce_resp_txq_size(n), sizeof(*txq), sroce_resp_gfp(qp));
	if (!res || !txq) {
		kfree(res);
		kfree(txq);
		return -ENOMEM;
	}
	spin_lock_bh(&qp->resp_lock);
	old_res = resp->res;
	old_txq = resp->txq;
	resp->res = res;
	resp->nres = n;
	resp->res_next = 0;
	resp->txq = txq;
	resp->txq_size = sroce_resp_txq_size(n);
	resp->tx_head = 0;
	resp->tx_tail = 0;
	spin_unlock_bh(&qp->resp_lock);
	kfree(old_res);
	kfree(old_txq);
	return 0;
}

/* The responder at RESET: nothing expected, nothing queued. */
void sroce_resp_reset(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	LIST_HEAD(held);

	hrtimer_cancel(&resp->held_timer);
	spin_lock_bh(&qp->resp_lock);
	sroce_resp_odp_purge(qp, &held);
	sroce_resp_held_purge(qp, &held);
	resp->psn = qp->attr.rq_psn;
	resp->msn = 0;
	resp->msg = SROCE_RESP_IDLE;
	resp->nak_sent = false;
	resp->have_rwqe = false;
	resp->res_next = 0;
	resp->tx_head = 0;
	resp->tx_tail = 0;
	memset(resp->res, 0, resp->nres * sizeof(*resp->res));
	spin_unlock_bh(&qp->resp_lock);
	sroce_resp_odp_free(&held);
}

static struct sroce_resp_tx *sroce_resp_tx_push(struct sroce_qp *qp, u8 type)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_tx *tx;

	if (resp->tx_tail - resp->tx_head >= resp->txq_size)
		return NULL;
	tx = &resp->txq[resp->tx_tail++ % resp->txq_size];
	memset(tx, 0, sizeof(*tx));
	tx->type = type;
	return tx;
}

/* Queue an ACK or NAK; an unsent ACK at the tail is replaced. */
static void sroce_resp_queue_ack(struct sroce_qp *qp, u8 syndrome, u32 psn)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_tx *tx = NULL;

	if (!sroce_qp_reliable_resp(qp))
		return;
	if (syndrome == SROCE_AETH_CREDIT_INVALID &&
	    resp->tx_tail != resp->tx_head) {
		/* Queued items are unsent: the sender pops what it builds. */
		tx = &resp->txq[(resp->tx_tail - 1) % resp->txq_size];
		if (tx->type != SROCE_RTX_ACK ||
		    tx->syndrome != SROCE_AETH_CREDIT_INVALID)
			tx = NULL;
	}
	if (!tx)
		tx = sroce_resp_tx_push(qp, SROCE_RTX_ACK);
	if (!tx)
		return;		/* the requester's timer recovers */
	tx->syndrome = syndrome;
	tx->psn = psn;
	tx->msn = resp->msn;
}

/*
 * NAK request @pkt: a sequence NAK names the PSN expected (the one
 * missing), an error NAK the request's own.
 */
static void sroce_resp_nak(struct sroce_qp *qp, enum sroce_nak_code code,
			   const struct sroce_pkt *pkt)
{
	bool seq = code == SROCE_NAK_PSN_SEQ_ERR;

	trace_sroce_nak_sent(qp, code, pkt->psn);
	sroce_qp_count(qp, seq ? SROCE_CNT_SEQ_NAK_SENT :
			   SROCE_CNT_ERR_NAK_SENT, 1);
	sroce_resp_queue_ack(qp, sroce_aeth_syndrome(SROCE_AETH_NAK, code),
			     seq ? qp->resp.psn : pkt->psn);
}

/* Queue an RNR NAK for @pkt: nothing to receive it into yet (@odp: a page). */
static void sroce_resp_rnr_nak(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			       bool odp)
{
	u8 timer = qp->attr.min_rnr_timer;

	trace_sroce_rnr_nak_sent(qp, pkt->psn, timer,
				 sroce_rnr_timer_usecs(timer), odp);
	sroce_qp_count(qp, SROCE_CNT_RNR_NAK_SENT, 1);
	sroce_resp_queue_ack(qp, sroce_aeth_syndrome(SROCE_AETH_RNR_NAK, timer),
			     pkt->psn);
}

/* Receive WQEs -------------------------------------------------------- */

/*
 * Load the oldest receive WQE into resp (the RQ slot stays until the
 * completion; an SRQ's is freed at once). Return 1, 0 if there is none,
 * or -EINVAL for a corrupt queue.
 */
static int sroce_resp_take_rwqe(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_srq *srq = resp->xrc_srq ? resp->xrc_srq : qp->srq;
	const struct sroce_recv_wqe *wqe;
	unsigned long flags;
	int n;

	if (resp->have_rwqe)
		return 1;
	if (srq) {
		n = sroce_srq_take(srq, &resp->wr_id, resp->sge,
				   &resp->num_sge);
		if (n > 0)
			resp->have_rwqe = true;
		return n;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	n = qp->rq_flushed ? 0 : sroce_queue_refresh_prod(&qp->rq);
	if (n > 0) {
		wqe = sroce_queue_consumer_elem(&qp->rq);
		resp->wr_id = READ_ONCE(wqe->wr_id);
		resp->num_sge = READ_ONCE(wqe->num_sge);
		if (resp->num_sge > qp->max_recv_sge) {
			n = -EINVAL;
		} else {
			memcpy(resp->sge, (const u8 *)wqe + SROCE_RECV_WQE_HDR,
			       resp->num_sge * sizeof(*resp->sge));
			resp->have_rwqe = true;
			n = 1;
		}
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return n;
}

/*
 * A SEND or WRITE with immediate found no receive WQE. RC answers RNR
 * NAK and the requester sends it again; UC has no answers: the message
 * is dropped whole, as rdma_rxe and hardware drop it (IBTA class D).
 */
static u32 sroce_resp_no_rwqe(struct sroce_qp *qp,
			      const struct sroce_pkt *pkt)
{
	if (!sroce_qp_reliable_resp(qp)) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_STATE, 1);
		qp->resp.msg = SROCE_RESP_DROP;
		return 0;
	}
	sroce_resp_rnr_nak(qp, pkt, false);
	return SROCE_RESP_KICK;
}

/* The credit code for the AETH of an ACK, READ response or atomic ACK. */
static u8 sroce_resp_credit(struct sroce_qp *qp)
{
	unsigned long flags;
	int n;

	if (!sroce_qp_has_rq(qp) || !READ_ONCE(sroce_credits))
		return SROCE_AETH_CREDIT_INVALID;
	spin_lock_irqsave(&qp->rq_lock, flags);
	/* A corrupt ring promises nothing; taking a WQE will fail the QP. */
	n = qp->rq_flushed ? 0 : sroce_queue_refresh_prod(&qp->rq);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return sroce_credit_code(n < 0 ? 0 : n);
}

/* Post the receive completion of the loaded WQE and free its slot. */
static void sroce_resp_complete(struct sroce_qp *qp, struct sroce_cqe *cqe,
				bool solicited)
{
	struct sroce_resp *resp = &qp->resp;
	unsigned long flags;

	/* Each receive WQE completes once, and frees its slot once. */
	if (!resp->have_rwqe)
		return;
	resp->have_rwqe = false;
	cqe->wr_id = resp->wr_id;
	cqe->qp_num = qp->qpn;
	cqe->port_num = 1;
	/* An XRC SRQ's receives complete on its own CQ. */
	if (resp->xrc_srq) {
		sroce_cq_post(resp->xrc_srq->cq, cqe, solicited);
		return;
	}
	if (qp->srq) {
		sroce_cq_post(qp->rcq, cqe, solicited);
		return;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	/* A flush already completed it. The slot is free before the CQE. */
	if (!qp->rq_flushed) {
		sroce_queue_consumer_advance(&qp->rq, 1);
		sroce_cq_post(qp->rcq, cqe, solicited);
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/* Complete the loaded WQE with an error (a local length or key error). */
static void sroce_resp_complete_error(struct sroce_qp *qp, u8 status)
{
	struct sroce_cqe cqe = {
		.status = status,
		.opcode = IB_WC_RECV,
	};

	if (qp->resp.have_rwqe)
		sroce_resp_complete(qp, &cqe, false);
}

/*
 * sroce_resp_scatter(): an ODP page of the receive buffer is on its way,
 * or (UD) could not even be asked for.
 */
#define SROCE_SCATTER_ODP_WAIT	0xff
#define SROCE_SCATTER_ODP_DROP	0xfe

/*
 * ODP (sroce_odp.c): a packet that needs a page not present yet is not
 * taken. RC answers it with an RNR NAK, as RoCE hardware does, and the
 * requester resends it once the RNR timer runs out; a UD datagram waits
 * in the QP (sroce_resp_odp_defer()) and runs again once the fault is
 * done; UC has no answer and no order to keep: dropped, and counted.
 */
static u32 sroce_resp_odp_wait(struct sroce_qp *qp,
			       const struct sroce_pkt *pkt)
{
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI)
		return SROCE_RESP_ODP_WAIT;
	if (!sroce_qp_reliable_resp(qp)) {
		sroce_qp_count(qp, SROCE_CNT_ODP_RX_DROPS, 1);
		return 0;
	}
	sroce_qp_count(qp, SROCE_CNT_ODP_RNR_NAK_SENT, 1);
	sroce_resp_rnr_nak(qp, pkt, true);
	return SROCE_RESP_KICK;
}

/*
 * Copy @len bytes of @skb from @off into the loaded WQE's SGEs at
 * resp->offset. Return IB_WC_SUCCESS, LOC_LEN_ERR, LOC_PROT_ERR or
 * SROCE_SCATTER_ODP_WAIT (the rest of the SGE is being faulted in).
 */
static u8 sroce_resp_scatter(struct sroce_qp *qp, const struct sk_buff *skb,
			     u32 off, const void *buf, u32 len)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_resp *resp = &qp->resp;
	bool ud = qp->ibqp.qp_type == IB_QPT_UD ||
		  qp->ibqp.qp_type == IB_QPT_GSI;
	u32 pos = resp->offset;
	u32 i;

	for (i = 0; i < resp->num_sge && len; i++) {
		const struct sroce_sge *sge = &resp->sge[i];
		struct sroce_mr *mr;
		u32 n;
		int err;

		if (pos >= sge->length) {
			pos -= sge->length;
			continue;
		}
		n = min(len, sge->length - pos);
		mr = sroce_mr_get_checked(sdev, sroce_resp_pd(qp), sge->lkey,
					  sge->addr + pos, n,
					  IB_ACCESS_LOCAL_WRITE);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		if (skb)
			err = sroce_mr_copy_skb(mr, sge->addr + pos, skb, off, n);
		else
			err = sroce_mr_copy(mr, sge->addr + pos, (void *)buf, n,
					    true);
		/* UD: the datagram waits, and runs again after the fault. */
		if (err == -EAGAIN)
			err = sroce_odp_refault(mr, sge->addr + pos,
						sge->length - pos, true,
						ud ? qp : NULL,
						SROCE_ODP_KICK_RESP);
		sroce_mr_put(mr);
		if (err == -EAGAIN || (err == -ENOMEM && !ud))
			return SROCE_SCATTER_ODP_WAIT;
		if (err == -ENOMEM)
			return SROCE_SCATTER_ODP_DROP;
		if (err)
			return IB_WC_LOC_PROT_ERR;
		off += n;
		buf += n;
		len -= n;
		pos = 0;
	}
	return len ? IB_WC_LOC_LEN_ERR : IB_WC_SUCCESS;
}

/* Requests ------------------------------------------------------------ */

/* A SEND packet at the expected PSN. */
static u32 sroce_resp_send(struct sroce_qp *qp, struct sk_buff *skb,
			   const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_cqe cqe = {};
	int n;
	u8 status;

	if (pkt->mask & SROCE_M_START) {
		n = sroce_resp_take_rwqe(qp);
		if (n < 0) {
			sroce_qp_count(qp, SROCE_CNT_BAD_RING, 1);
			return SROCE_RESP_ERROR | SROCE_RESP_FATAL;
		}
		if (!n)
			return sroce_resp_no_rwqe(qp, pkt);
		resp->offset = 0;
	}
	status = sroce_resp_scatter(qp, skb, pkt->payload_off, NULL,
				    pkt->paylen);
	if (status == SROCE_SCATTER_ODP_WAIT)
		return sroce_resp_odp_wait(qp, pkt);
	if (status != IB_WC_SUCCESS) {
		sroce_resp_complete_error(qp, status);
		sroce_resp_nak(qp, sroce_scatter_nak_code(status), pkt);
		return SROCE_RESP_KICK | SROCE_RESP_ERROR;
	}
	resp->offset += pkt->paylen;
	resp->msg = (pkt->mask & SROCE_M_END) ? SROCE_RESP_IDLE :
						SROCE_RESP_SEND;
	if (!(pkt->mask & SROCE_M_END))
		return 0;

	cqe.opcode = IB_WC_RECV;
	cqe.byte_len = resp->offset;
	cqe.src_qp = qp->attr.dest_qpn;
	if (pkt->mask & SROCE_M_IMMDT) {
		cqe.wc_flags |= SROCE_WC_F_WITH_IMM;
		cqe.ex.imm_data = pkt->imm;
	}
	if (pkt->mask & SROCE_M_IETH) {
		/* Remote invalidation: a FAST MR or type 2 window. */
		if (sroce_key_invalidate(qp, pkt->inv_rkey, true)) {
			sroce_resp_complete_error(qp, IB_WC_LOC_PROT_ERR);
			sroce_resp_nak(qp, SROCE_NAK_REM_OP_ERR, pkt);
			return SROCE_RESP_KICK | SROCE_RESP_ERROR;
		}
		cqe.wc_flags |= SROCE_WC_F_WITH_INV;
		cqe.ex.invalidated_rkey = pkt->inv_rkey;
	}
	sroce_resp_complete(qp, &cqe, pkt->se);
	return 0;
}

/* A WRITE packet at the expected PSN. */
static u32 sroce_resp_write(struct sroce_qp *qp, struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_mr *mr;
	struct sroce_cqe cqe = {};
	int err, n;

	if (pkt->mask & SROCE_M_START) {
		resp->va = pkt->va;
		resp->rkey = pkt->rkey;
		resp->resid = pkt->dmalen;
		resp->write_len = pkt->dmalen;
		/* The whole range is checked before the first byte lands. */
		if (!(qp->attr.access & IB_ACCESS_REMOTE_WRITE))
			goto access_error;
		if (pkt->dmalen) {
			mr = sroce_mr_get_remote(qp, pkt->rkey, pkt->va,
						 pkt->dmalen,
						 IB_ACCESS_REMOTE_WRITE);
			if (!mr)
				goto access_error;
			sroce_mr_put(mr);
		}
	}
	if (pkt->paylen > resp->resid ||
	    ((pkt->mask & SROCE_M_END) && pkt->paylen != resp->resid)) {
		sroce_resp_nak(qp, SROCE_NAK_INVALID_REQ, pkt);
		return SROCE_RESP_KICK | SROCE_RESP_ERROR;
	}
	/* WRITE with immediate consumes a receive WQE: have one first. */
	if (pkt->mask & SROCE_M_IMMDT) {
		n = sroce_resp_take_rwqe(qp);
		if (n < 0)
			return SROCE_RESP_ERROR | SROCE_RESP_FATAL;
		if (!n)
			return sroce_resp_no_rwqe(qp, pkt);
	}
	if (pkt->paylen) {
		mr = sroce_mr_get_remote(qp, resp->rkey, resp->va,
					 pkt->paylen, IB_ACCESS_REMOTE_WRITE);
		if (!mr)
			goto access_error;
		err = sroce_mr_copy_skb(mr, resp->va, skb, pkt->payload_off,
					pkt->paylen);
		/* ODP: the rest of the message's range at once. */
		if (err == -EAGAIN)
			err = sroce_odp_refault(mr, resp->va, resp->resid, true,
						NULL, SROCE_ODP_KICK_REQ);
		sroce_mr_put(mr);
		if (err == -EAGAIN || err == -ENOMEM)
			return sroce_resp_odp_wait(qp, pkt);
		if (err)
			goto access_error;
	}
	resp->va += pkt->paylen;
	resp->resid -= pkt->paylen;
	resp->msg = (pkt->mask & SROCE_M_END) ? SROCE_RESP_IDLE :
						SROCE_RESP_WRITE;
	if (!(pkt->mask & SROCE_M_END) || !(pkt->mask & SROCE_M_IMMDT))
		return 0;

	cqe.opcode = IB_WC_RECV_RDMA_WITH_IMM;
	cqe.byte_len = resp->write_len;
	cqe.src_qp = qp->attr.dest_qpn;
	cqe.wc_flags = SROCE_WC_F_WITH_IMM;
	cqe.ex.imm_data = pkt->imm;
	sroce_resp_complete(qp, &cqe, pkt->se);
	return 0;

access_error:
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		resp->msg = SROCE_RESP_DROP;
		return 0;
	}
	sroce_resp_nak(qp, SROCE_NAK_REM_ACCESS, pkt);
	return SROCE_RESP_KICK | SROCE_RESP_ERROR;
}

/* The next resource slot, unless a queued answer still uses it. */
/* Is the next resource still being answered (max_dest_rd_atomic)? */
static bool sroce_resp_res_busy(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	u32 idx = resp->res_next % resp->nres;
	u32 i;

	for (i = resp->tx_head; i != resp->tx_tail; i++) {
		struct sroce_resp_tx *tx = &resp->txq[i % resp->txq_size];

		if (tx->type != SROCE_RTX_ACK && tx->res == idx)
			return true;
	}
	return false;
}

static struct sroce_resp_res *sroce_resp_new_res(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	u32 idx = resp->res_next % resp->nres;

	if (sroce_resp_res_busy(qp))
		return NULL;
	resp->res_next++;
	memset(&resp->res[idx], 0, sizeof(resp->res[idx]));
	return &resp->res[idx];
}

static u32 sroce_resp_npkts(struct sroce_qp *qp, u32 len)
{
	return len ? DIV_ROUND_UP(len, qp->mtu) : 1;
}

/* Queue the responses of @res from PSN @psn. */
static bool sroce_resp_queue_res(struct sroce_qp *qp,
				 struct sroce_resp_res *res, u32 psn)
{
	struct sroce_resp_tx *tx;

	tx = sroce_resp_tx_push(qp, res->type);
	if (!tx)
		return false;
	tx->res = res - qp->resp.res;
	tx->psn = psn;
	tx->msn = qp->resp.msn;
	tx->off = sroce_psn_diff(psn, res->first_psn) * qp->mtu;
	return true;
}

/*
 * The request @pkt, executed, becomes resource @res of @type taking
 * @npsn PSNs: the message is done, its answer queued.
 */
static void sroce_resp_answer_res(struct sroce_qp *qp,
				  struct sroce_resp_res *res, u8 type,
				  const struct sroce_pkt *pkt, u32 npsn)
{
	res->type = type;
	res->opcode = pkt->opcode;
	res->xrc_srqn = (pkt->mask & SROCE_M_XRCETH) ? pkt->xrc_srqn : 0;
	res->first_psn = pkt->psn;
	res->last_psn = sroce_psn_add(pkt->psn, npsn - 1);
	qp->resp.psn = sroce_psn_add(res->last_psn, 1);
	qp->resp.msn = (qp->resp.msn + 1) & SROCE_MSN_MASK;
	sroce_resp_queue_res(qp, res, res->first_psn);
}

/* An RDMA READ request or an atomic at the expected PSN. */
static u32 sroce_resp_rd_atomic(struct sroce_qp *qp,
				const struct sroce_pkt *pkt)
{
	bool atomic = pkt->mask & SROCE_M_ATOMIC;
	int access = atomic ? IB_ACCESS_REMOTE_ATOMIC : IB_ACCESS_REMOTE_READ;
	u32 len = atomic ? sizeof(u64) : pkt->dmalen;
	struct sroce_resp_res *res;
	struct sroce_mr *mr = NULL;
	u64 orig = 0;
	int err;

	if (atomic && (pkt->va & 7)) {
		sroce_resp_nak(qp, SROCE_NAK_INVALID_REQ, pkt);
		return SROCE_RESP_KICK | SROCE_RESP_ERROR;
	}
	if (!(qp->attr.access & access))
		goto access_error;
	if (len) {
		mr = sroce_mr_get_remote(qp, pkt->rkey, pkt->va, len, access);
		if (!mr)
			goto access_error;
	}
	if (sroce_resp_res_busy(qp)) {
		/* More outstanding than max_dest_rd_atomic allows. */
		if (mr)
			sroce_mr_put(mr);
		sroce_resp_nak(qp, SROCE_NAK_INVALID_REQ, pkt);
		return SROCE_RESP_KICK | SROCE_RESP_ERROR;
	}
	/* ODP: a READ is answered from pages that are there. */
	err = mr ? sroce_odp_ensure(mr, pkt->va, len, atomic, NULL,
				    SROCE_ODP_KICK_REQ) : 0;
	if (!err && atomic) {
		err = sroce_mr_atomic(mr, pkt->va,
				      pkt->opcode == SROCE_OP_CMP_SWAP,
				      pkt->compare, pkt->swap_add, &orig);
		/* Not executed: asked again, once the page is there. */
		if (err == -EAGAIN)
			err = sroce_odp_refault(mr, pkt->va, len, true, NULL,
						SROCE_ODP_KICK_REQ);
	}
	if (mr)
		sroce_mr_put(mr);
	if (err == -EAGAIN || err == -ENOMEM)
		return sroce_resp_odp_wait(qp, pkt);
	if (err)
		goto access_error;
	res = sroce_resp_new_res(qp);

	res->va = pkt->va;
	res->rkey = pkt->rkey;
	res->length = len;
	res->orig = orig;
	sroce_resp_answer_res(qp, res, atomic ? SROCE_RTX_ATOMIC : SROCE_RTX_READ,
			      pkt, atomic ? 1 : sroce_resp_npkts(qp, len));
	return SROCE_RESP_KICK;

access_error:
	sroce_resp_nak(qp, SROCE_NAK_REM_ACCESS, pkt);
	return SROCE_RESP_KICK | SROCE_RESP_ERROR;
}

/*
 * ATOMIC WRITE (IBTA 1.5): eight bytes to a naturally aligned word of an
 * MR with remote write, in one store. Return 0, the NAK code, or
 * -EAGAIN: an ODP page is on its way (nothing stored).
 */
static int sroce_resp_do_atomic_write(struct sroce_qp *qp, struct sk_buff *skb,
				      const struct sroce_pkt *pkt)
{
	struct sroce_mr *mr;
	u64 value;
	int err;

	if (pkt->dmalen != sizeof(value) || pkt->paylen != sizeof(value) ||
	    pkt->pad || (pkt->va & 7))
		return SROCE_NAK_INVALID_REQ;
	if (!(qp->attr.access & IB_ACCESS_REMOTE_WRITE))
		return SROCE_NAK_REM_ACCESS;
	mr = sroce_mr_get_remote(qp, pkt->rkey, pkt->va, sizeof(value),
				 IB_ACCESS_REMOTE_WRITE);
	if (!mr)
		return SROCE_NAK_REM_ACCESS;
	if (skb_copy_bits(skb, pkt->payload_off, &value, sizeof(value)))
		err = -EFAULT;
	else
		err = sroce_mr_atomic_write(mr, pkt->va, value);
	if (err == -EAGAIN)
		err = sroce_odp_refault(mr, pkt->va, sizeof(value), true, NULL,
					SROCE_ODP_KICK_REQ);
	sroce_mr_put(mr);
	if (err == -EAGAIN || err == -ENOMEM)
		return -EAGAIN;
	if (err)
		return err == -EINVAL ? SROCE_NAK_INVALID_REQ :
					SROCE_NAK_REM_ACCESS;
	return 0;
}

/*
 * FLUSH (IBTA 1.5) of a range, or of the whole MR the rkey names: each
 * placement type asked for needs the QP's and the MR's flush access.
 * sroce places by CPU stores into memory all CPUs share, so global
 * visibility is a write barrier; no MR is persistent memory (none can be
 * registered FLUSH_PERSISTENT), so a persistent FLUSH finds no access.
 * Return 0 or the NAK code.
 */
static int sroce_resp_do_flush(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	int access = IB_ACCESS_FLUSH_GLOBAL;
	struct sroce_mr *mr;

	if (pkt->flush_level > SROCE_FLUSH_MR)
		return SROCE_NAK_INVALID_REQ;
	if (!(pkt->flush_type & SROCE_FLUSH_GLOBAL))
		access = 0;
	if ((pkt->flush_type & ~SROCE_FLUSH_GLOBAL) ||
	    (access && !(qp->attr.access & access)))
		return SROCE_NAK_REM_ACCESS;
	if (pkt->flush_level == SROCE_FLUSH_MR)
		mr = sroce_mr_get_remote_whole(qp, pkt->rkey, access);
	else
		mr = sroce_mr_get_remote(qp, pkt->rkey, pkt->va, pkt->dmalen,
					 access);
	if (!mr)
		return SROCE_NAK_REM_ACCESS;
	sroce_mr_put(mr);
	/* Everything placed before it, visible before its answer. */
	wmb();
	return 0;
}

/*
 * An ATOMIC WRITE or FLUSH at the expected PSN: executed once, answered
 * (and answered again for a duplicate) from a resource.
 */
static u32 sroce_resp_flush_write(struct sroce_qp *qp, struct sk_buff *skb,
				  const struct sroce_pkt *pkt)
{
	struct sroce_resp_res *res;
	int nak;

	/* How the peer seals a FLUSH is how it takes ours (sroce_net.c). */
	if ((pkt->mask & SROCE_M_FLUSH) &&
	    READ_ONCE(qp->flush_rxe_icrc) != pkt->rxe_flush_icrc)
		WRITE_ONCE(qp->flush_rxe_icrc, pkt->rxe_flush_icrc);
	if (sroce_resp_res_busy(qp)) {
		/* More outstanding than max_dest_rd_atomic allows. */
		nak = SROCE_NAK_INVALID_REQ;
		goto nak;
	}
	if (pkt->mask & SROCE_M_ATOMIC_WRITE)
		nak = sroce_resp_do_atomic_write(qp, skb, pkt);
	else
		nak = sroce_resp_do_flush(qp, pkt);
	if (nak == -EAGAIN)
		return sroce_resp_odp_wait(qp, pkt);
	if (nak)
		goto nak;
	res = sroce_resp_new_res(qp);
	/* A READ response of no payload (length 0). */
	sroce_resp_answer_res(qp, res, SROCE_RTX_READ, pkt, 1);
	return SROCE_RESP_KICK;

nak:
	sroce_resp_nak(qp, nak, pkt);
	return SROCE_RESP_KICK | SROCE_RESP_ERROR;
}

/*
 * The requester asks again from @psn (go-back-N): it has every answer
 * before @psn, and will ask again for every request after it. Answers
 * queued from @psn on would only reach it as garbage ahead of the ones
 * it waits for, so they go (the queue is in PSN order).
 */
static void sroce_resp_tx_truncate(struct sroce_qp *qp, u32 psn)
{
	struct sroce_resp *resp = &qp->resp;
	u32 i;

	for (i = resp->tx_head; i != resp->tx_tail; i++) {
		struct sroce_resp_tx *tx = &resp->txq[i % resp->txq_size];

		if (sroce_psn_diff(tx->psn, psn) >= 0) {
			resp->tx_tail = i;
			return;
		}
	}
}

/* A request before the expected PSN: answer it again, do it not again. */
static u32 sroce_resp_duplicate(struct sroce_qp *qp,
				const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	u32 i;

	sroce_qp_count(qp, SROCE_CNT_DUP_REQUESTS, 1);
	if (!(pkt->mask & SROCE_M_RD_ATOMIC)) {
		/*
		 * Re-acknowledge where the requester asked for an ACK: one
		 * per resent message, not one per resent packet.
		 */
		if (!pkt->ackreq)
			return 0;
		sroce_resp_queue_ack(qp, SROCE_AETH_CREDIT_INVALID,
				     sroce_psn_add(resp->psn, SROCE_PSN_MASK));
		return SROCE_RESP_KICK;
	}
	for (i = 0; i < resp->nres; i++) {
		struct sroce_resp_res *res = &resp->res[i];

		if (!res->type || sroce_psn_diff(pkt->psn, res->first_psn) < 0 ||
		    sroce_psn_diff(pkt->psn, res->last_psn) > 0)
			continue;
		/* The same request: READ from any of its PSNs, others one. */
		if (res->opcode != pkt->opcode ||
		    (!(pkt->mask & SROCE_M_READ) && pkt->psn != res->first_psn))
			continue;
		/*
		 * Replayed, not re-executed: an atomic keeps its result, an
		 * ATOMIC WRITE is not stored again over what followed it.
		 */
		sroce_resp_tx_truncate(qp, pkt->psn);
		sroce_resp_queue_res(qp, res, pkt->psn);
		return SROCE_RESP_KICK;
	}
	return 0;	/* too old to answer: the requester has moved on */
}

/**
 * sroce_resp_msg_in_order - does a packet continue (or properly start)
 *	the message under way?
 * @msg: the responder's message state
 * @mask: the packet's opcode mask (enum sroce_op_mask)
 */
bool sroce_resp_msg_in_order(enum sroce_resp_msg msg, u32 mask)
{
	switch (msg) {
	case SROCE_RESP_SEND:
		return (mask & SROCE_M_SEND) &&
		       (mask & (SROCE_M_MIDDLE | SROCE_M_LAST));
	case SROCE_RESP_WRITE:
		return (mask & SROCE_M_WRITE) &&
		       (mask & (SROCE_M_MIDDLE | SROCE_M_LAST));
	case SROCE_RESP_FAILED:
		return false;
	default:
		return mask & SROCE_M_START;
	}
}

/*
 * XRC target: does the request name an SRQ of the QP's domain (IBTA annex
 * A14), and, within a message or for the receive WQE already loaded,
 * the SRQ it started with?
 */
static bool sroce_resp_xrc_ok(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;

	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT)
		return true;
	if (!resp->xrc_srq || resp->xrc_srq->xrcd != qp->xrcd)
		return false;
	if (resp->msg == SROCE_RESP_SEND || resp->msg == SROCE_RESP_WRITE ||
	    resp->have_rwqe)
		return pkt->xrc_srqn == resp->xrc_srqn;
	resp->xrc_srqn = pkt->xrc_srqn;
	return true;
}

/* An RC, UC or XRC request at the expected PSN. */
static u32 sroce_resp_execute(struct sroce_qp *qp, struct sk_buff *skb,
			      const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	u32 ret;

	if (!sroce_resp_xrc_ok(qp, pkt) ||
	    !sroce_resp_msg_in_order(resp->msg, pkt->mask) ||
	    ((pkt->mask & SROCE_M_PAYLOAD) &&
	     !sroce_paylen_ok(pkt->mask, pkt->paylen, qp->mtu)) ||
	    ((pkt->mask & SROCE_M_RETH) && pkt->dmalen > SROCE_MAX_MSG_BYTES)) {
		if (qp->ibqp.qp_type == IB_QPT_UC) {
			resp->msg = SROCE_RESP_DROP;
			return 0;
		}
		sroce_resp_nak(qp, SROCE_NAK_INVALID_REQ, pkt);
		return SROCE_RESP_KICK | SROCE_RESP_ERROR;
	}
	if (pkt->mask & (SROCE_M_READ | SROCE_M_ATOMIC))
		return sroce_resp_rd_atomic(qp, pkt);
	if (pkt->mask & (SROCE_M_FLUSH | SROCE_M_ATOMIC_WRITE))
		return sroce_resp_flush_write(qp, skb, pkt);

	if (pkt->mask & SROCE_M_SEND)
		ret = sroce_resp_send(qp, skb, pkt);
	else
		ret = sroce_resp_write(qp, skb, pkt);
	if (ret & SROCE_RESP_ERROR)
		return ret;
	/* An RNR NAK leaves the PSN where it was. */
	if (ret & SROCE_RESP_KICK)
		return ret;
	resp->psn = sroce_psn_add(pkt->psn, 1);
	if (pkt->mask & SROCE_M_END)
		resp->msn = (resp->msn + 1) & SROCE_MSN_MASK;
	if (pkt->ackreq) {
		sroce_qp_count(qp, SROCE_CNT_ACKS_SENT, 1);
		sroce_resp_queue_ack(qp, SROCE_AETH_CREDIT_INVALID, pkt->psn);
		ret |= SROCE_RESP_KICK;
	}
	return ret;
}

/*
 * UC: no ACKs; a gap loses the message under way, not the next one. Take
 * @pkt as the next request, whatever its PSN.
 */
static u32 sroce_resp_uc_take(struct sroce_qp *qp, struct sk_buff *skb,
			      const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;

	if (pkt->psn != resp->psn) {
		resp->msg = SROCE_RESP_IDLE;
		resp->psn = pkt->psn;
	}
	if (resp->msg == SROCE_RESP_DROP) {
		if (!(pkt->mask & SROCE_M_START)) {
			sroce_qp_count(qp, SROCE_CNT_RX_DROP_SEQ, 1);
			resp->psn = sroce_psn_add(pkt->psn, 1);
			return 0;
		}
		resp->msg = SROCE_RESP_IDLE;
	}
	if (!sroce_resp_msg_in_order(resp->msg, pkt->mask)) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_SEQ, 1);
		resp->msg = SROCE_RESP_DROP;
		resp->psn = sroce_psn_add(pkt->psn, 1);
		return 0;
	}
	resp->psn = sroce_psn_add(pkt->psn, 1);
	return sroce_resp_execute(qp, skb, pkt) & ~SROCE_RESP_KICK;
}

/*
 * Hold RC or UC request @pkt, beyond the expected PSN, until the gap before it
 * fills or reorder_us runs out (see top). False: NAK it as a loss now (no
 * holding, the gap already NAKed, too far ahead, too many held, no
 * memory).
 */
static bool sroce_resp_hold(struct sroce_qp *qp, struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	u32 us = READ_ONCE(sroce_reorder_us);
	struct sroce_resp_held_pkt *e, *pos;
	s32 d;

	if (!us || (qp->ibqp.qp_type != IB_QPT_RC &&
		    qp->ibqp.qp_type != IB_QPT_UC) || resp->nak_sent ||
	    sroce_psn_diff(pkt->psn, resp->psn) > SROCE_RESP_HELD_MAX)
		return false;
	/* In PSN order, from the back: arrivals mostly come in order. */
	list_for_each_entry_reverse(pos, &resp->held, list) {
		d = sroce_psn_diff(pkt->psn, pos->pkt.psn);
		if (!d) {
			/* A copy of one held: the held one answers for it. */
			sroce_qp_count(qp, SROCE_CNT_DUP_REQUESTS, 1);
			return true;
		}
		if (d > 0)
			break;
	}
	if (resp->nheld >= SROCE_RESP_HELD_MAX)
		return false;
	e = kmalloc(sizeof(*e), GFP_ATOMIC);
	if (!e)
		return false;
	e->skb = skb_get(skb);
	e->pkt = *pkt;
	/* After @pos; the list head itself when all held are beyond it. */
	list_add(&e->list, &pos->list);
	if (!resp->nheld++)
		hrtimer_start(&resp->held_timer, ns_to_ktime((u64)us * NSEC_PER_USEC),
			      HRTIMER_MODE_REL_SOFT);
	sroce_qp_count(qp, SROCE_CNT_RX_REORDER_HELD, 1);
	return true;
}

/*
 * The expected request executed (@stuck: without advancing the expected
 * PSN): take the held ones that follow it, in order, up to the next gap.
 * One that does not advance the expected PSN (an RNR or error NAK) ends
 * it: its NAK makes the requester resend from there, so what is held
 * behind it goes. Under resp_lock.
 */
static u32 sroce_resp_take_held(struct sroce_qp *qp, u32 ret, bool stuck)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_held_pkt *e;
	LIST_HEAD(done);
	u32 psn;
	s32 d;

	while (!(ret & SROCE_RESP_ERROR) && !stuck &&
	       (e = list_first_entry_or_null(&resp->held,
					     struct sroce_resp_held_pkt,
					     list))) {
		d = sroce_psn_diff(e->pkt.psn, resp->psn);
		if (d > 0)
			break;
		list_move_tail(&e->list, &done);
		resp->nheld--;
		/* Behind the expected PSN: a resend took its place. */
		if (d < 0)
			continue;
		psn = resp->psn;
		if (qp->ibqp.qp_type == IB_QPT_UC)
			ret |= sroce_resp_uc_take(qp, e->skb, &e->pkt);
		else
			ret |= sroce_resp_execute(qp, e->skb, &e->pkt);
		stuck = resp->psn == psn;
	}
	if (stuck || ret & SROCE_RESP_ERROR)
		sroce_resp_held_purge(qp, &done);
	if (!resp->nheld)
		hrtimer_try_to_cancel(&resp->held_timer);
	sroce_resp_odp_free(&done);
	return ret;
}

/*
 * The UC requests held past a gap waited reorder_us: the gap is a loss,
 * and so is the message it broke. The first held goes on from there, then
 * those in order behind it; a further gap gets reorder_us of its own.
 * From the timer, under resp_lock.
 */
static void sroce_resp_uc_gap_timeout(struct sroce_qp *qp,
				      enum ib_qp_state state)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_held_pkt *e;
	LIST_HEAD(done);
	u32 ret = 0;

	e = list_first_entry_or_null(&resp->held, struct sroce_resp_held_pkt,
				     list);
	if (!e || resp->msg == SROCE_RESP_FAILED ||
	    (state != IB_QPS_RTR && state != IB_QPS_RTS &&
	     state != IB_QPS_SQD && state != IB_QPS_SQE)) {
		sroce_resp_held_purge(qp, &done);
		spin_unlock_bh(&qp->resp_lock);
		sroce_resp_odp_free(&done);
		return;
	}
	sroce_qp_count(qp, SROCE_CNT_RX_REORDER_TIMEOUTS, 1);
	list_move_tail(&e->list, &done);
	resp->nheld--;
	ret = sroce_resp_uc_take(qp, e->skb, &e->pkt);
	if (resp->nheld)
		ret = sroce_resp_take_held(qp, ret, false);
	if (resp->nheld)
		hrtimer_start(&resp->held_timer,
			      ns_to_ktime((u64)READ_ONCE(sroce_reorder_us) *
					  NSEC_PER_USEC),
			      HRTIMER_MODE_REL_SOFT);
	if (ret & SROCE_RESP_ERROR)
		resp->msg = SROCE_RESP_FAILED;
	spin_unlock_bh(&qp->resp_lock);
	sroce_resp_odp_free(&done);
	if (ret & SROCE_RESP_ERROR)
		sroce_qp_error(qp, ret & SROCE_RESP_FATAL);
}

/* The requests held past a gap waited reorder_us: the gap is a loss. */
static enum hrtimer_restart sroce_resp_held_timer(struct hrtimer *t)
{
	struct sroce_qp *qp = container_of(t, struct sroce_qp, resp.held_timer);
	struct sroce_resp *resp = &qp->resp;
	enum ib_qp_state state = sroce_qp_state(qp);
	struct sroce_resp_held_pkt *e;
	bool kick = false;
	LIST_HEAD(done);

	spin_lock_bh(&qp->resp_lock);
	/* Armed again while this waited for the lock: a new gap's time. */
	if (hrtimer_is_queued(t)) {
		spin_unlock_bh(&qp->resp_lock);
		return HRTIMER_NORESTART;
	}
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		sroce_resp_uc_gap_timeout(qp, state);
		return HRTIMER_NORESTART;
	}
	e = list_first_entry_or_null(&resp->held, struct sroce_resp_held_pkt,
				     list);
	if (e && (state == IB_QPS_RTR || state == IB_QPS_RTS ||
		  state == IB_QPS_SQD || state == IB_QPS_SQE) &&
	    resp->msg != SROCE_RESP_FAILED && !resp->nak_sent &&
	    sroce_psn_diff(e->pkt.psn, resp->psn) > 0) {
		sroce_qp_count(qp, SROCE_CNT_RX_REORDER_TIMEOUTS, 1);
		resp->nak_sent = true;
		sroce_resp_nak(qp, SROCE_NAK_PSN_SEQ_ERR, &e->pkt);
		kick = true;
	}
	sroce_resp_held_purge(qp, &done);
	spin_unlock_bh(&qp->resp_lock);
	sroce_resp_odp_free(&done);
	if (kick)
		sroce_task_run(&qp->resp_task);
	return HRTIMER_NORESTART;
}

static u32 sroce_resp_rc(struct sroce_qp *qp, struct sk_buff *skb,
			 const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	enum sroce_psn_class c = sroce_psn_classify(pkt->psn, resp->psn);
	u32 ret;

	if (c == SROCE_PSN_DUPLICATE)
		return sroce_resp_duplicate(qp, pkt);
	if (c == SROCE_PSN_AHEAD) {
		if (sroce_resp_hold(qp, skb, pkt))
			return 0;
		/* Packets went missing: one NAK, then wait for the resend. */
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_SEQ, 1);
		if (resp->nak_sent)
			return 0;
		resp->nak_sent = true;
		sroce_resp_nak(qp, SROCE_NAK_PSN_SEQ_ERR, pkt);
		return SROCE_RESP_KICK;
	}
	resp->nak_sent = false;
	ret = sroce_resp_execute(qp, skb, pkt);
	if (!resp->nheld)
		return ret;
	return sroce_resp_take_held(qp, ret, resp->psn == pkt->psn);
}

static u32 sroce_resp_uc(struct sroce_qp *qp, struct sk_buff *skb,
			 const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	s32 d = sroce_psn_diff(pkt->psn, resp->psn);
	u32 ret;

	if (d > 0 && sroce_resp_hold(qp, skb, pkt))
		return 0;
	/* Too late: its gap was given up on (UC resends nothing). */
	if (d < 0 && d >= -SROCE_RESP_HELD_MAX && READ_ONCE(sroce_reorder_us)) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_SEQ, 1);
		return 0;
	}
	ret = sroce_resp_uc_take(qp, skb, pkt);
	if (!resp->nheld)
		return ret;
	return sroce_resp_take_held(qp, ret, false);
}

/*
 * UD: one packet, one receive WQE whose first 40 bytes take the GRH: the
 * IPv6 header (RoCE v2), 20 zero bytes and the IPv4 header (v2), or the
 * GRH itself (v1).
 */
static u32 sroce_resp_ud(struct sroce_qp *qp, struct sk_buff *skb,
			 const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	u8 grh[40] = {};
	struct sroce_cqe cqe = {};
	bool ipv4 = pkt->net_type == RDMA_NETWORK_IPV4;
	u32 qkey = qp->ibqp.qp_type == IB_QPT_GSI ? SROCE_GSI_QKEY :
						    qp->attr.qkey;
	u8 status;
	int n;

	if (pkt->qkey != qkey || pkt->paylen > qp->mtu) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_MALFORMED, 1);
		return 0;
	}
	n = sroce_resp_take_rwqe(qp);
	if (n < 0)
		return SROCE_RESP_ERROR | SROCE_RESP_FATAL;
	if (!n) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_STATE, 1);
		return 0;
	}
	if (ipv4)
		memcpy(grh + 20, ip_hdr(skb), sizeof(struct iphdr));
	else
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	resp->offset = 0;
	status = sroce_resp_scatter(qp, NULL, 0, grh, sizeof(grh));
	if (status == IB_WC_SUCCESS) {
		resp->offset = sizeof(grh);
		status = sroce_resp_scatter(qp, skb, pkt->payload_off, NULL,
					    pkt->paylen);
	}
	/* The WQE stays loaded for the datagram's next try, or the next. */
	if (status == SROCE_SCATTER_ODP_WAIT)
		return sroce_resp_odp_wait(qp, pkt);
	if (status == SROCE_SCATTER_ODP_DROP) {
		sroce_qp_count(qp, SROCE_CNT_ODP_RX_DROPS, 1);
		return 0;
	}
	if (status != IB_WC_SUCCESS) {
		sroce_resp_complete_error(qp, status);
		return SROCE_RESP_ERROR;
	}
	cqe.opcode = IB_WC_RECV;
	cqe.byte_len = sizeof(grh) + pkt->paylen;
	cqe.src_qp = pkt->sqpn;
	cqe.wc_flags = SROCE_WC_F_GRH;
	cqe.network_hdr_type = pkt->net_type;
	if (pkt->mask & SROCE_M_IMMDT) {
		cqe.wc_flags |= SROCE_WC_F_WITH_IMM;
		cqe.ex.imm_data = pkt->imm;
	}
	sroce_resp_complete(qp, &cqe, pkt->se);
	return 0;
}

/* UD and ODP ---------------------------------------------------------- */

/*
 * Hold a UD datagram that waits for an ODP page of the loaded receive
 * WQE, or behind one that does; under resp_lock. The fault that was asked
 * for runs sroce_resp_odp_redeliver(). Beyond SROCE_RESP_ODP_MAX, or
 * without memory, the datagram is dropped, as a full receive queue
 * drops one.
 */
static void sroce_resp_odp_defer(struct sroce_qp *qp, struct sk_buff *skb,
				 const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_resp_held_pkt *e = NULL;

	if (resp->odp_npending < SROCE_RESP_ODP_MAX)
		e = kmalloc(sizeof(*e), GFP_ATOMIC);
	if (!e) {
		sroce_qp_count(qp, SROCE_CNT_ODP_RX_DROPS, 1);
		return;
	}
	e->skb = skb_get(skb);
	e->pkt = *pkt;
	list_add_tail(&e->list, &resp->odp_pending);
	resp->odp_npending++;
	sroce_qp_count(qp, SROCE_CNT_ODP_RX_DEFERRED, 1);
}

/**
 * sroce_resp_odp_redeliver - take the UD datagrams @qp held for an ODP
 *	fault, in order, until one waits again
 * @qp: the QP (a reference held); process context (the fault's work)
 */
void sroce_resp_odp_redeliver(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	enum ib_qp_state state = sroce_qp_state(qp);
	struct sroce_resp_held_pkt *e;
	LIST_HEAD(done);
	u32 ret = 0;

	spin_lock_bh(&qp->resp_lock);
	if ((state != IB_QPS_RTR && state != IB_QPS_RTS &&
	     state != IB_QPS_SQD && state != IB_QPS_SQE) ||
	    resp->msg == SROCE_RESP_FAILED)
		sroce_resp_odp_purge(qp, &done);
	while ((e = list_first_entry_or_null(&resp->odp_pending,
					     struct sroce_resp_held_pkt, list))) {
		ret = sroce_resp_ud(qp, e->skb, &e->pkt);
		/* Another page of the WQE: a new fault will run this again. */
		if (ret & SROCE_RESP_ODP_WAIT)
			break;
		list_move_tail(&e->list, &done);
		resp->odp_npending--;
		if (ret & SROCE_RESP_ERROR) {
			resp->msg = SROCE_RESP_FAILED;
			sroce_resp_odp_purge(qp, &done);
			break;
		}
	}
	spin_unlock_bh(&qp->resp_lock);
	sroce_resp_odp_free(&done);
	if (ret & SROCE_RESP_ERROR)
		sroce_qp_error(qp, ret & SROCE_RESP_FATAL);
}

/**
 * sroce_resp_rcv - take a request packet for @qp
 * @qp: the responder's QP (a reference held)
 * @skb: the packet
 * @pkt: its parsed headers; payload_off is relative to skb->data
 */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    struct sroce_pkt *pkt)
{
	enum ib_qp_state state = sroce_qp_state(qp);
	u32 ret;

	if (state != IB_QPS_RTR && state != IB_QPS_RTS &&
	    state != IB_QPS_SQD && state != IB_QPS_SQE) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_STATE, 1);
		return;
	}

	spin_lock_bh(&qp->resp_lock);
	if (qp->resp.msg == SROCE_RESP_FAILED) {
		spin_unlock_bh(&qp->resp_lock);
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_STATE, 1);
		return;
	}
	/* What the doorbell reads (sroce_qp.c) to tell an answer. */
	WRITE_ONCE(qp->resp.requests, qp->resp.requests + 1);
	/* Count before payload: a WRITE's peer polls the payload, no CQE. */
	smp_wmb();
	/* Held for the packet: its WQE, its PD, its CQ (see top). */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		qp->resp.xrc_srq = sroce_srq_get_xrc(to_sdev(qp->ibqp.device),
						     pkt->xrc_srqn);
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_XRC_TGT:
		ret = sroce_resp_rc(qp, skb, pkt);
		break;
	case IB_QPT_UC:
		ret = sroce_resp_uc(qp, skb, pkt);
		break;
	default:
		/* Behind the datagrams that wait for a page, in order. */
		if (list_empty(&qp->resp.odp_pending))
			ret = sroce_resp_ud(qp, skb, pkt);
		else
			ret = SROCE_RESP_ODP_WAIT;
		if (ret & SROCE_RESP_ODP_WAIT)
			sroce_resp_odp_defer(qp, skb, pkt);
		break;
	}
	if (ret & SROCE_RESP_ERROR)
		qp->resp.msg = SROCE_RESP_FAILED;
	if (qp->resp.xrc_srq) {
		sroce_srq_put(qp->resp.xrc_srq);
		qp->resp.xrc_srq = NULL;
	}
	spin_unlock_bh(&qp->resp_lock);

	if (ret & SROCE_RESP_KICK)
		sroce_task_run(&qp->resp_task);
	if (ret & SROCE_RESP_ERROR)
		sroce_qp_error(qp, ret & SROCE_RESP_FATAL);
}

/* Transmit ------------------------------------------------------------ */

/*
 * A READ response whose payload is the MR's own pages (the requester
 * copies it out; a response lost or rebuilt for a duplicate READ is a new
 * skb). NULL: copy instead (small, or memory that cannot be lent).
 */
static struct sk_buff *sroce_resp_build_lent(struct sroce_dev *sdev,
					     const struct sroce_mr *mr, u64 va,
					     const struct sroce_pkt *pkt,
					     unsigned int hdr_len, u32 paylen)
{
	struct sk_buff *skb;

	if (!mr || paylen < SROCE_LEND_MIN_BYTES ||
	    !READ_ONCE(sroce_zero_copy_tx))
		return NULL;
	skb = sroce_skb_alloc(sdev, hdr_len);
	if (!skb)
		return NULL;
	sroce_hdr_build(skb->data, pkt);
	if (sroce_mr_lend(mr, va, skb, paylen) ||
	    sroce_skb_put_tail(skb, pkt->pad)) {
		kfree_skb(skb);
		return NULL;
	}
	return skb;
}

static struct sk_buff *sroce_resp_build_copied(struct sroce_dev *sdev,
					       const struct sroce_mr *mr,
					       u64 va, const struct sroce_pkt *pkt,
					       unsigned int hdr_len, u32 paylen)
{
	struct sk_buff *skb;

	skb = sroce_skb_alloc(sdev, hdr_len + paylen + pkt->pad +
			      SROCE_ICRC_BYTES);
	if (!skb)
		return NULL;
	sroce_hdr_build(skb->data, pkt);
	if (mr && sroce_mr_copy(mr, va, skb->data + hdr_len, paylen, false)) {
		kfree_skb(skb);
		return NULL;
	}
	memset(skb->data + hdr_len + paylen, 0, pkt->pad);
	return skb;
}

/*
 * The MR a READ response's payload comes from: an XRC target's under the
 * PD of the SRQ the READ named, held meanwhile. Called with resp_lock.
 */
static struct sroce_mr *sroce_resp_read_mr(struct sroce_qp *qp,
					   const struct sroce_resp_res *res,
					   u64 va, u32 len)
{
	struct sroce_srq *srq = NULL;
	struct sroce_mr *mr;

	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		srq = sroce_srq_get_xrc(to_sdev(qp->ibqp.device),
					res->xrc_srqn);
		if (!srq)
			return NULL;
		if (srq->xrcd != qp->xrcd) {
			sroce_srq_put(srq);
			return NULL;
		}
		qp->resp.xrc_srq = srq;
	}
	mr = sroce_mr_get_remote(qp, res->rkey, va, len, IB_ACCESS_REMOTE_READ);
	if (srq) {
		qp->resp.xrc_srq = NULL;
		sroce_srq_put(srq);
	}
	return mr;
}

/*
 * Build the next packet of the answer at the head of the queue and
 * advance it. Called with resp_lock; returns NULL when the answer cannot
 * be built (it is then dropped: the requester will ask again).
 */
static struct sk_buff *sroce_resp_build(struct sroce_qp *qp,
					struct sroce_resp_tx *tx,
					unsigned int *hdr_len, bool *done)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_resp_res *res = &qp->resp.res[tx->res % qp->resp.nres];
	struct sroce_pkt pkt = {
		.pkey = SROCE_DEFAULT_PKEY_FULL,
		.dqpn = qp->attr.dest_qpn,
		.psn = tx->psn,
		.msn = tx->msn,
		.syndrome = SROCE_AETH_CREDIT_INVALID,
	};
	struct sk_buff *skb;
	struct sroce_mr *mr = NULL;
	u32 paylen = 0;

	*done = true;
	switch (tx->type) {
	case SROCE_RTX_ACK:
		pkt.opcode = SROCE_OP_ACK;
		pkt.syndrome = tx->syndrome;
		break;
	case SROCE_RTX_ATOMIC:
		pkt.opcode = SROCE_OP_ATOMIC_ACK;
		pkt.orig = res->orig;
		break;
	default:
		if (tx->off > res->length)
			return NULL;
		paylen = min(res->length - tx->off, qp->mtu);
		*done = tx->off + paylen >= res->length;
		if (tx->psn == res->first_psn)
			pkt.opcode = *done ? SROCE_OP_READ_RESP_ONLY :
					     SROCE_OP_READ_RESP_FIRST;
		else
			pkt.opcode = *done ? SROCE_OP_READ_RESP_LAST :
					     SROCE_OP_READ_RESP_MIDDLE;
		if (paylen) {
			mr = sroce_resp_read_mr(qp, res, res->va + tx->off,
						paylen);
			if (!mr)
				return NULL;
		}
		break;
	}
	/* An XRC target answers with XRC's opcodes for RC's. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		pkt.opcode |= SROCE_TRANSPORT_XRC;

	*hdr_len = sroce_opcode_table[pkt.opcode].hdr_len;
	if ((sroce_opcode_table[pkt.opcode].mask & SROCE_M_AETH) &&
	    sroce_aeth_type(pkt.syndrome) == SROCE_AETH_ACK)
		pkt.syndrome = sroce_resp_credit(qp);
	pkt.pad = sroce_pad(paylen);
	skb = sroce_resp_build_lent(sdev, mr, res->va + tx->off, &pkt,
				    *hdr_len, paylen);
	if (skb)
		sroce_qp_count(qp, SROCE_CNT_TX_LENT, 1);
	else
		skb = sroce_resp_build_copied(sdev, mr, res->va + tx->off,
					      &pkt, *hdr_len, paylen);
	/* ODP: dropped for now; the requester asks again, the pages come. */
	if (!skb && mr)
		sroce_odp_ensure(mr, res->va + tx->off, res->length - tx->off,
				 false, NULL, SROCE_ODP_KICK_REQ);
	if (mr)
		sroce_mr_put(mr);
	if (skb && tx->type == SROCE_RTX_READ) {
		tx->off += paylen;
		tx->psn = sroce_psn_add(tx->psn, 1);
	}
	return skb;
}

/**
 * sroce_resp_tx_pass - one pass of the responder's transmit task
 * @task: the QP's resp_task
 *
 * Return: true if it stopped on its budget with answers left.
 */
bool sroce_resp_tx_pass(struct sroce_task *task)
{
	struct sroce_qp *qp = container_of(task, struct sroce_qp, resp_task);
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_resp *resp = &qp->resp;
	int budget = SROCE_RESP_TX_BUDGET;
	struct sroce_tx_burst burst = {};

	spin_lock_bh(&qp->resp_lock);
	while (resp->tx_head != resp->tx_tail && budget > 0) {
		struct sroce_resp_tx *tx = &resp->txq[resp->tx_head %
						      resp->txq_size];
		bool read = tx->type == SROCE_RTX_READ;
		u32 off = tx->off;
		unsigned int hdr_len;
		struct sk_buff *skb;
		struct sroce_av av;
		bool done;

		/* READ data is paced as requests are; pace_timer resumes. */
		if (read && !sroce_cc_may_send(qp))
			break;
		skb = sroce_resp_build(qp, tx, &hdr_len, &done);
		if (!skb || done)
			resp->tx_head++;
		if (!skb)
			continue;
		if (read)
			sroce_cc_resp_sent(qp, hdr_len, tx->off - off);
		av = qp->attr.av;
		spin_unlock_bh(&qp->resp_lock);
		sroce_net_xmit(sdev, &av, &qp->dst_cache, skb, hdr_len,
			       qp->src_port, 0, &burst);
		budget--;
		spin_lock_bh(&qp->resp_lock);
	}
	spin_unlock_bh(&qp->resp_lock);
	sroce_net_flush(&burst);
	return budget <= 0;
}
