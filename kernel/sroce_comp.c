// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the completer — what comes back to a requester (ACK, NAK, READ
 * responses, atomic ACKs), the retransmission and RNR timers, and the one
 * place send WQEs are retired (IBTA 9.7.5-9.7.6, 9.9).
 *
 * Responses are handled in the receive softirq. An ACK with PSN p says
 * every request packet up to p arrived (ACKs may be coalesced); a READ
 * response or atomic ACK also acknowledges every PSN before it. A READ,
 * an atomic, an ATOMIC WRITE or a FLUSH (the last two answered by a READ
 * response of no payload) completes only with its own response: an ACK beyond one that is
 * still waiting means its responses were lost, and the requester goes
 * back to it (go-back-N). So does a sequence NAK or a timeout; the
 * requester restarts at the oldest incomplete WQE, from the oldest
 * unacknowledged PSN. WQEs retire strictly in order, each exactly once.
 *
 * Locking: everything here runs under qp->sq_lock (irqsave): struct
 * sroce_comp, the meta of published WQEs, the SQ ring's cons and flush.
 * The requester is kicked after the lock is dropped; an error moves the
 * QP to ERR after it, too (the flush takes sq_lock).
 */

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

/* IBTA table 45: RNR NAK timer field -> microseconds. */
static const u32 sroce_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* The RNR back-off an RNR NAK's timer field asks for. */
u32 sroce_rnr_timer_usecs(u8 value)
{
	return sroce_rnr_usecs[value & SROCE_AETH_VALUE_MASK];
}

/* The AETH credit count field: code -> receive WQEs (31: invalid). */
static const u16 sroce_credit_counts[SROCE_AETH_CREDIT_INVALID] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
	512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768,
};

/* Receive WQEs an ACK's credit code stands for; U32_MAX for "invalid". */
u32 sroce_credit_count(u8 code)
{
	code &= SROCE_AETH_VALUE_MASK;
	return code < SROCE_AETH_CREDIT_INVALID ? sroce_credit_counts[code] :
						  U32_MAX;
}

/* The code for @n receive WQEs: the largest count not above @n. */
u8 sroce_credit_code(u32 n)
{
	u8 code = SROCE_AETH_CREDIT_INVALID - 1;

	while (code && sroce_credit_counts[code] > n)
		code--;
	return code;
}

/*
 * End-to-end flow control: the credit field of an ACK-type AETH counts
 * the receive WQEs the responder holds beyond the MSN it carries, so the
 * messages up to MSN + credits have one waiting (the limit, comp->lsn).
 * "Invalid" (a responder with an SRQ, or one that does not count, such as
 * rdma_rxe) lifts the limit for the life of the connection. An older ACK
 * never lowers it.
 */
static void sroce_comp_credits(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_comp *comp = &qp->comp;
	u8 code = sroce_aeth_value(pkt->syndrome);
	u32 lsn;

	if (code == SROCE_AETH_CREDIT_INVALID) {
		comp->credits_unlimited = true;
		return;
	}
	lsn = (pkt->msn + sroce_credit_count(code)) & SROCE_MSN_MASK;
	if (sroce_psn_diff(lsn, comp->lsn) > 0)
		comp->lsn = lsn;
}

static struct sroce_send_meta *sroce_comp_meta(struct sroce_qp *qp, u32 index)
{
	return &qp->sq_meta[index & sroce_queue_mask(&qp->sq)];
}

/* (Re)start the retransmission timer: 4.096 us * 2^timeout, 0 = none. */
void sroce_comp_arm_timer(struct sroce_qp *qp)
{
	u8 t = qp->attr.timeout;
	u64 usecs;

	if (!t || !sroce_qp_reliable_req(qp))
		return;
	usecs = (4096ULL << t) / 1000;
	mod_timer(&qp->retrans_timer,
		  jiffies + max_t(unsigned long, usecs_to_jiffies(usecs), 2));
}

/**
 * sroce_comp_retire - complete the WQEs at the head of the SQ that are done
 * @qp: the queue pair, sq_lock held
 *
 * Return: true when an error completion was posted: the caller moves the
 * QP to the error state once it has dropped sq_lock.
 */
bool sroce_comp_retire(struct sroce_qp *qp)
{
	struct sroce_comp *comp = &qp->comp;

	while (!qp->sq_flushed && qp->sq.cons != comp->sent) {
		struct sroce_send_meta *m = sroce_comp_meta(qp, qp->sq.cons);
		u8 status = m->status;

		if (!m->done)
			break;
		if (m->rd_atomic && comp->rd_atomic)
			comp->rd_atomic--;
		m->done = 0;
		sroce_qp_retire_send(qp, status);
		if (status != IB_WC_SUCCESS) {
			comp->error = true;
			return true;
		}
	}
	if (qp->sq.cons == comp->sent ||
	    sroce_psn_diff(comp->max_psn, comp->una) <= 0)
		timer_delete(&qp->retrans_timer);
	return false;
}

/* Ask the requester to go back to the oldest incomplete WQE, for @why. */
static void sroce_comp_rewind(struct sroce_qp *qp, enum sroce_rewind_why why)
{
	qp->comp.rewind = true;
	qp->comp.rewind_why = why;
	/* A NAK says where to go on: no probe needed. */
	qp->comp.probe = SROCE_PROBE_NONE;
}

/*
 * Progress (una moved): the retry budget is for a stall, the timer starts
 * over, and a timeout's probe (or what was sent before it) is answered.
 */
static void sroce_comp_progress(struct sroce_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	sroce_comp_arm_timer(qp);
	if (qp->comp.probe == SROCE_PROBE_WANTED)
		qp->comp.probe = SROCE_PROBE_ANSWERED;
}

/*
 * Everything before @psn arrived: mark the send and write WQEs it covers
 * done. Stops at a READ or atomic still waiting for its response; when
 * @psn lies beyond one, the response was lost and the requester must go
 * back. Returns the first WQE not done.
 */
static u32 sroce_comp_ack_before(struct sroce_qp *qp, u32 psn, bool *lost)
{
	u32 i;

	*lost = false;
	for (i = qp->sq.cons; i != qp->comp.sent; i++) {
		struct sroce_send_meta *m = sroce_comp_meta(qp, i);

		if (m->done)
			continue;
		if (m->status != IB_WC_SUCCESS)
			break;
		if (m->rd_atomic) {
			*lost = sroce_psn_diff(psn, m->last_psn) > 0;
			/* Its responses are not acknowledged by others. */
			if (sroce_psn_diff(psn, m->first_psn) > 0)
				psn = m->first_psn;
			break;
		}
		if (sroce_psn_diff(psn, m->last_psn) <= 0)
			break;
		m->done = 1;
	}
	if (sroce_psn_diff(psn, qp->comp.una) > 0) {
		qp->comp.una = psn;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		sroce_comp_progress(qp);
	}
	return i;
}

/* The WQE in flight whose PSNs include @psn, or comp.sent. */
static u32 sroce_comp_find(struct sroce_qp *qp, u32 psn)
{
	u32 i;

	for (i = qp->sq.cons; i != qp->comp.sent; i++) {
		struct sroce_send_meta *m = sroce_comp_meta(qp, i);

		if (sroce_psn_diff(psn, m->first_psn) >= 0 &&
		    sroce_psn_diff(psn, m->last_psn) <= 0)
			break;
	}
	return i;
}

/*
 * Fail a WQE with @status: the one holding @psn (a NAK), or with @head
 * the oldest incomplete one (an exhausted retry).
 */
static void sroce_comp_fail(struct sroce_qp *qp, u32 psn, bool head, u8 status)
{
	u32 i = head ? qp->sq.cons : sroce_comp_find(qp, psn);

	if (i == qp->comp.sent)
		i = qp->sq.cons;
	if (i == qp->comp.sent)
		return;
	sroce_comp_meta(qp, i)->status = status;
	sroce_comp_meta(qp, i)->done = 1;
}

/* ACK, RNR NAK or NAK (the AETH of an ACK packet). */
static void sroce_comp_ack(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_comp *comp = &qp->comp;
	u8 type = sroce_aeth_type(pkt->syndrome);
	u8 value = sroce_aeth_value(pkt->syndrome);
	bool lost;

	switch (type) {
	case SROCE_AETH_ACK:
		sroce_comp_ack_before(qp, sroce_psn_add(pkt->psn, 1), &lost);
		if (lost)
			sroce_comp_rewind(qp, SROCE_REWIND_LOST_RESPONSE);
		break;
	case SROCE_AETH_RNR_NAK:
		/* The request at psn found no receive WQE: wait, resend. */
		sroce_qp_count(qp, SROCE_CNT_RNR_NAK_RCVD, 1);
		trace_sroce_nak_rcvd(qp, type, value, pkt->psn);
		sroce_comp_ack_before(qp, pkt->psn, &lost);
		if (comp->rnr_left == 0) {
			sroce_qp_count(qp, SROCE_CNT_RETRY_EXCEEDED, 1);
			sroce_comp_fail(qp, pkt->psn, false,
					IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->attr.rnr_retry != 7)
			comp->rnr_left--;
		/*
		 * The responder is alive: the back-off is not a timeout.
		 * The requester re-arms the timer when it resends.
		 */
		timer_delete(&qp->retrans_timer);
		comp->retry_left = qp->attr.retry_cnt;
		/*
		 * An hrtimer: the RNR timers that matter (0.01 to 1 ms) are
		 * far below a jiffy, and a jiffy's wait per RNR NAK was most of
		 * what a receiver running short of WQEs cost.
		 */
		comp->rnr_until = ktime_get_ns() +
			(u64)sroce_rnr_timer_usecs(value) * NSEC_PER_USEC;
		trace_sroce_rnr_backoff(qp, pkt->psn, value,
					sroce_rnr_timer_usecs(value));
		sroce_comp_rewind(qp, SROCE_REWIND_RNR_NAK);
		break;
	case SROCE_AETH_NAK:
		trace_sroce_nak_rcvd(qp, type, value, pkt->psn);
		sroce_comp_ack_before(qp, pkt->psn, &lost);
		if (value == SROCE_NAK_PSN_SEQ_ERR) {
			sroce_qp_count(qp, SROCE_CNT_SEQ_NAK_RCVD, 1);
			sroce_comp_rewind(qp, SROCE_REWIND_SEQ_NAK);
			break;
		}
		sroce_qp_count(qp, SROCE_CNT_ERR_NAK_RCVD, 1);
		sroce_comp_fail(qp, pkt->psn, false,
				sroce_nak_wc_status(value));
		break;
	default:
		sroce_qp_count(qp, SROCE_CNT_RESP_DROP, 1);
		break;
	}
}

/* sroce_comp_scatter(): an ODP page of the destination is on its way. */
#define SROCE_COMP_ODP_WAIT	0xff

/*
 * Place @len bytes of a response into the SGEs of @wqe from byte @off.
 * Return: IB_WC_SUCCESS, IB_WC_LOC_PROT_ERR or SROCE_COMP_ODP_WAIT (the
 * requester faulted the pages in before it asked, an invalidation took
 * one since: the response is dropped and asked for again).
 */
static u8 sroce_comp_scatter(struct sroce_qp *qp,
			     const struct sroce_send_wqe *wqe, u32 off,
			     const struct sk_buff *skb, u32 skb_off,
			     const void *buf, u32 len)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	const struct sroce_sge *sge = (const void *)((const u8 *)wqe +
						     SROCE_SEND_WQE_HDR);
	u32 i, nsge = min_t(u32, wqe->num_sge, qp->max_send_sge);

	for (i = 0; i < nsge && len; i++) {
		struct sroce_mr *mr;
		u32 n;
		int err;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		mr = sroce_mr_get_checked(sdev, qp->ibqp.pd, sge[i].lkey,
					  sge[i].addr + off, n,
					  IB_ACCESS_LOCAL_WRITE);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		if (skb)
			err = sroce_mr_copy_skb(mr, sge[i].addr + off, skb,
						skb_off, n);
		else
			err = sroce_mr_copy(mr, sge[i].addr + off, (void *)buf,
					    n, true);
		if (err == -EAGAIN)
			err = sroce_odp_refault(mr, sge[i].addr + off,
						sge[i].length - off, true, NULL,
						SROCE_ODP_KICK_REQ);
		sroce_mr_put(mr);
		if (err == -EAGAIN || err == -ENOMEM)
			return SROCE_COMP_ODP_WAIT;
		if (err)
			return IB_WC_LOC_PROT_ERR;
		skb_off += n;
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? IB_WC_LOC_LEN_ERR : IB_WC_SUCCESS;
}

static const struct sroce_send_wqe *sroce_comp_wqe(struct sroce_qp *qp,
						   u32 index)
{
	return (const struct sroce_send_wqe *)(qp->sq_copy +
		((size_t)(index & sroce_queue_mask(&qp->sq)) <<
		 qp->sq.stride_shift));
}

/* Does the response's opcode fit its place in the READ? */
static bool sroce_comp_read_fits(struct sroce_qp *qp,
				 const struct sroce_send_meta *m,
				 const struct sroce_pkt *pkt)
{
	bool last = pkt->psn == m->last_psn;

	return sroce_read_resp_fits(pkt->opcode, pkt->paylen,
				    pkt->psn == m->first_psn, last,
				    last ? m->length - m->resp_off : qp->mtu);
}

/* A READ response or atomic ACK for the oldest incomplete WQE. */
static void sroce_comp_data(struct sroce_qp *qp, struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	const struct sroce_send_wqe *wqe;
	struct sroce_send_meta *m;
	bool lost;
	u32 i, expect;
	u8 status;

	i = sroce_comp_ack_before(qp, pkt->psn, &lost);
	if (i == qp->comp.sent || !sroce_comp_meta(qp, i)->rd_atomic)
		goto stale;
	m = sroce_comp_meta(qp, i);
	wqe = sroce_comp_wqe(qp, i);

	if (pkt->mask & SROCE_M_ATOMIC) {
		u64 orig = pkt->orig;

		if ((wqe->opcode != SROCE_WR_ATOMIC_CMP_AND_SWP &&
		     wqe->opcode != SROCE_WR_ATOMIC_FETCH_AND_ADD) ||
		    pkt->psn != m->first_psn)
			goto stale;
		status = sroce_comp_scatter(qp, wqe, 0, NULL, 0, &orig,
					    sizeof(orig));
		/*
		 * Asked again at once (the requester waits for the page
		 * first); the responder replays its answer.
		 */
		if (status == SROCE_COMP_ODP_WAIT) {
			sroce_comp_rewind(qp, SROCE_REWIND_ODP);
			goto stale;
		}
		goto complete;
	}

	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE ||
	    wqe->opcode == SROCE_WR_FLUSH) {
		/* IBTA 1.5: one READ response, no payload, at its PSN. */
		if (pkt->opcode != SROCE_OP_READ_RESP_ONLY || pkt->paylen ||
		    pkt->psn != m->first_psn)
			goto stale;
		status = IB_WC_SUCCESS;
		goto complete;
	}
	if (wqe->opcode != SROCE_WR_RDMA_READ)
		goto stale;
	expect = sroce_psn_add(m->first_psn, m->resp_off / qp->mtu);
	if (pkt->psn != expect) {
		/* A response went missing: ask again, once. */
		if (sroce_psn_diff(pkt->psn, expect) > 0 && !m->await_replay) {
			m->await_replay = 1;
			sroce_comp_rewind(qp, SROCE_REWIND_READ_GAP);
		}
		goto stale;
	}
	if (!sroce_comp_read_fits(qp, m, pkt))
		goto stale;
	status = sroce_comp_scatter(qp, wqe, m->resp_off, skb,
				    pkt->payload_off, NULL, pkt->paylen);
	/*
	 * Not placed: asked again from here, once, as for a lost response;
	 * the requester waits for the page before it asks.
	 */
	if (status == SROCE_COMP_ODP_WAIT) {
		if (!m->await_replay) {
			m->await_replay = 1;
			sroce_comp_rewind(qp, SROCE_REWIND_ODP);
		}
		goto stale;
	}
	m->await_replay = 0;
	m->resp_off += pkt->paylen;
	if (status == IB_WC_SUCCESS && pkt->psn != m->last_psn) {
		/* Progress: the retry budget is for a stall, not a READ. */
		qp->comp.una = sroce_psn_add(pkt->psn, 1);
		sroce_comp_progress(qp);
		return;
	}

complete:
	m->status = status;
	m->done = 1;
	if (sroce_psn_diff(sroce_psn_add(m->last_psn, 1), qp->comp.una) > 0)
		qp->comp.una = sroce_psn_add(m->last_psn, 1);
	qp->comp.rnr_left = qp->attr.rnr_retry;
	sroce_comp_progress(qp);
	return;

stale:
	sroce_qp_count(qp, SROCE_CNT_RESP_DROP, 1);
}

/**
 * sroce_comp_rcv - take a response packet for @qp
 * @qp: the requester's QP (a reference held)
 * @skb: the packet
 * @pkt: its parsed headers; payload_off is relative to skb->data
 */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    struct sroce_pkt *pkt)
{
	struct sroce_comp *comp = &qp->comp;
	enum ib_qp_state state = sroce_qp_state(qp);
	unsigned long flags;
	bool error;

	if (state != IB_QPS_RTS && state != IB_QPS_SQD &&
	    state != IB_QPS_SQE) {
		sroce_qp_count(qp, SROCE_CNT_RX_DROP_STATE, 1);
		return;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	/* Only PSNs this requester has handed out can be answered. */
	if (qp->sq_flushed || comp->error ||
	    !sroce_psn_in_resp_window(pkt->psn, comp->una, comp->max_psn)) {
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		sroce_qp_count(qp, SROCE_CNT_RESP_DROP, 1);
		return;
	}
	if ((pkt->mask & SROCE_M_AETH) &&
	    sroce_aeth_type(pkt->syndrome) == SROCE_AETH_ACK)
		sroce_comp_credits(qp, pkt);
	if (pkt->mask & (SROCE_M_READ | SROCE_M_ATOMIC)) {
		/* A READ response's AETH can only carry an ACK. */
		if ((pkt->mask & SROCE_M_AETH) &&
		    sroce_aeth_type(pkt->syndrome) != SROCE_AETH_ACK)
			sroce_comp_ack(qp, pkt);
		else
			sroce_comp_data(qp, skb, pkt);
	} else {
		sroce_comp_ack(qp, pkt);
	}
	error = sroce_comp_retire(qp);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (error)
		sroce_qp_error(qp, false);
	else
		sroce_task_kick(&qp->req_task);
}

/* No progress for a whole timeout: go back, or give up. */
void sroce_comp_retrans_timer(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, retrans_timer);
	struct sroce_comp *comp = &qp->comp;
	unsigned long flags;
	bool error = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->sq_flushed || comp->error || qp->sq.cons == comp->sent) {
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		return;
	}
	/*
	 * No retry is used up when none has failed: the requester has not
	 * yet resent what the last timeout or NAK asked for (its CPU was
	 * busy), or everything it sent has been acknowledged and the rest
	 * of the message waits for its next pass (behind other QPs' passes
	 * on its CPU), or it waits for an ODP page of its own to be faulted
	 * in before it can resend. Wait a timeout more.
	 */
	if (comp->rewind || READ_ONCE(qp->req.odp_wait) ||
	    sroce_psn_diff(READ_ONCE(qp->req.sent_psn), comp->una) <= 0) {
		sroce_comp_arm_timer(qp);
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		sroce_task_run(&qp->req_task);
		return;
	}
	if (comp->retry_left == 0) {
		trace_sroce_retrans_timeout(qp, true);
		sroce_qp_count(qp, SROCE_CNT_RETRY_EXCEEDED, 1);
		sroce_comp_fail(qp, comp->una, true, IB_WC_RETRY_EXC_ERR);
		error = sroce_comp_retire(qp);
	} else {
		comp->retry_left--;
		trace_sroce_retrans_timeout(qp, false);
		sroce_qp_count(qp, SROCE_CNT_RETRANSMIT_TIMEOUTS, 1);
		sroce_comp_rewind(qp, SROCE_REWIND_TIMEOUT);
		comp->probe = SROCE_PROBE_WANTED;
		sroce_comp_arm_timer(qp);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (error)
		sroce_qp_error(qp, false);
	else
		sroce_task_run(&qp->req_task);
}

/* The RNR back-off is over: resend. */
enum hrtimer_restart sroce_comp_rnr_timer(struct hrtimer *t)
{
	struct sroce_qp *qp = container_of(t, struct sroce_qp, rnr_timer);

	sroce_task_run(&qp->req_task);
	return HRTIMER_NORESTART;
}
