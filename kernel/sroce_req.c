// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the requester — takes WQEs from the send queue, checks a private
 * copy of each, gives it PSNs and sends its packets (IBTA 9.7.1-9.7.4).
 *
 * It runs as the QP's req_task (sroce_task.h): in the doorbell's system
 * call, in the softirq of an ACK that opened the window, or from a timer
 * after a retransmission timeout or an RNR back-off. While it has work it
 * keeps the SQ's NEED_KICK flag clear, so a streaming application posts
 * with no system call; when the SQ is empty it sets NEED_KICK, fences and
 * looks at the producer index once more before it stops.
 *
 * Validation happens once, at fetch: the WQE is copied out of the shared
 * ring into qp->sq_copy and checked there. A WQE that fails completes
 * with its error status when it reaches the head of the queue (after its
 * predecessors), and the QP then goes to the error state.
 *
 * Locking: struct sroce_req belongs to the task. What the completer sees
 * (struct sroce_comp, the meta of published WQEs, the SQ's cons) changes
 * under qp->sq_lock. No lock is held while a packet is sent.
 */

#include <linux/module.h>
#include <linux/sched/stat.h>

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

#define SROCE_REQ_WINDOW	128	/* unacknowledged PSNs in flight */
#define SROCE_REQ_WINDOW_MIN	16	/* ... whatever the device's window */
#define SROCE_REQ_ACK_EVERY	32	/* packets between AckReqs */
#define SROCE_REQ_BUDGET	64	/* packets per pass */
#define SROCE_REQ_FETCH_MAX	64	/* WQEs checked per fetch */
/*
 * Streaming: a doorbell that comes within SROCE_REQ_BURST_NS of the requester going
 * idle means the application posts back to back. The requester then
 * keeps polling the SQ from a worker beside the application for up to
 * LINGER after it runs dry, with NEED_KICK clear, so the posts that follow
 * need no system call. A ping-pong application (its peer's request between
 * its posts) keeps the doorbell's direct path: see sroce_qp_doorbell().
 */
#define SROCE_REQ_LINGER_NS	(100 * NSEC_PER_USEC)
/*
 * Packets the doorbell's system call sends itself before a worker beside
 * the application takes over. Enough for the messages of a ping-pong
 * (a 4 KiB one is 4 packets at MTU 1500); a longer message would keep
 * the application in the call until its last packet is acknowledged (on
 * veth the peer's receive and its ACK run inside the send), so it could
 * post the next one only then: a stop-and-wait.
 */
#define SROCE_REQ_DIRECT_PKTS	16

enum sroce_req_step {
	SROCE_REQ_NEXT,			/* go on */
	SROCE_REQ_WAIT,			/* window, read credits or fence */
	SROCE_REQ_STOP,			/* error WQE: nothing more goes out */
	SROCE_REQ_FAILED,		/* and its error completion is posted */
};

static struct sroce_send_wqe *sroce_req_copy(struct sroce_qp *qp, u32 index)
{
	return (struct sroce_send_wqe *)(qp->sq_copy +
		((size_t)(index & sroce_queue_mask(&qp->sq)) <<
		 qp->sq.stride_shift));
}

static struct sroce_send_meta *sroce_req_meta(struct sroce_qp *qp, u32 index)
{
	return &qp->sq_meta[index & sroce_queue_mask(&qp->sq)];
}

static bool sroce_wqe_opcode_ok(enum ib_qp_type type, u8 opcode)
{
	switch (opcode) {
	case SROCE_WR_SEND:
	case SROCE_WR_SEND_WITH_IMM:
		return true;
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
	case SROCE_WR_LOCAL_INV:
	case SROCE_WR_BIND_MW:
	case SROCE_WR_REG_MR:
		return type == IB_QPT_RC || type == IB_QPT_UC ||
		       type == IB_QPT_XRC_INI;
	case SROCE_WR_RDMA_READ:
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
	case SROCE_WR_SEND_WITH_INV:
		return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
	/* IBTA 1.5 gives XRC no ATOMIC WRITE or FLUSH opcode. */
	case SROCE_WR_ATOMIC_WRITE:
	case SROCE_WR_FLUSH:
		return type == IB_QPT_RC;
	default:
		return false;
	}
}

/*
 * Requests the responder answers from a resource (max_rd_atomic of them
 * in flight), which complete only with their own response: READ, the
 * atomics, and IBTA 1.5's ATOMIC WRITE and FLUSH (a READ response of no
 * payload answers each).
 */
static bool sroce_wqe_is_rd_atomic(u8 opcode)
{
	return opcode == SROCE_WR_RDMA_READ ||
	       opcode == SROCE_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == SROCE_WR_ATOMIC_FETCH_AND_ADD ||
	       opcode == SROCE_WR_ATOMIC_WRITE || opcode == SROCE_WR_FLUSH;
}

/* Requests whose results the completer writes into the SGEs. */
static bool sroce_wqe_scatters(u8 opcode)
{
	return opcode == SROCE_WR_RDMA_READ ||
	       opcode == SROCE_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == SROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* Does the request packet carry the WQE's payload? */
static bool sroce_wqe_sends_payload(u8 opcode)
{
	return !sroce_wqe_is_rd_atomic(opcode) ||
	       opcode == SROCE_WR_ATOMIC_WRITE;
}

static bool sroce_wqe_is_local(u8 opcode)
{
	return opcode == SROCE_WR_LOCAL_INV || opcode == SROCE_WR_BIND_MW ||
	       opcode == SROCE_WR_REG_MR;
}

/* Messages that consume a receive WQE at the responder. */
static bool sroce_wqe_uses_rwqe(u8 opcode)
{
	return opcode == SROCE_WR_SEND || opcode == SROCE_WR_SEND_WITH_IMM ||
	       opcode == SROCE_WR_SEND_WITH_INV ||
	       opcode == SROCE_WR_RDMA_WRITE_WITH_IMM;
}

/*
 * End-to-end credits (sroce_comp_credits()): may the next new message,
 * SSN req->ssn + 1, start? One that consumes a receive WQE only up to one
 * beyond the limit: the one beyond probes a responder that may have
 * posted more since its last ACK (or answers RNR NAK if not), and its ACK
 * brings the new limit. So the sender waits instead of drawing RNR NAKs
 * and go-back-N resends from a receiver that is behind.
 */
static bool sroce_req_has_credit(const struct sroce_qp *qp,
				 const struct sroce_send_wqe *wqe)
{
	const struct sroce_req *req = &qp->req;

	if (!sroce_qp_reliable_req(qp) || req->credits_unlimited ||
	    !sroce_wqe_uses_rwqe(wqe->opcode))
		return true;
	return sroce_psn_diff(req->ssn, req->lsn) <= 0;
}

/*
 * Is the message at req->index such a probe, the last one started and
 * past the limit? Its first packet goes alone and asks for an ACK, and
 * the rest wait until that packet is acknowledged (for a SEND the
 * responder has then taken a WQE, whatever its next credit count says). A
 * responder with none answers RNR NAK to one packet, not to a whole
 * message already on the wire, which would all go again after each
 * back-off (and draw a sequence NAK and duplicates besides).
 */
static bool sroce_req_credit_probe(const struct sroce_qp *qp,
				   const struct sroce_send_wqe *wqe)
{
	/*
	 * Once started, the message's SSN is req->ssn: the credit check for
	 * "may one more start" fails exactly when this one is past the limit.
	 */
	return qp->req.index + 1 == qp->req.sent &&
	       !sroce_req_has_credit(qp, wqe);
}

/* A credit probe's packets after the first wait for the first's ACK. */
static bool sroce_req_probe_held(const struct sroce_qp *qp,
				 const struct sroce_send_wqe *wqe,
				 const struct sroce_send_meta *m, u32 una)
{
	return qp->req.offset && sroce_req_credit_probe(qp, wqe) &&
	       sroce_psn_diff(una, m->first_psn) <= 0;
}

static bool sroce_qp_is_ud(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/*
 * Check the private copy of a send WQE when it is fetched: what it asks
 * for, not yet its memory (see sroce_req_check_payload()).
 * Return: IB_WC_SUCCESS or the status the WQE completes with.
 */
static u8 sroce_req_check(struct sroce_qp *qp, const struct sroce_send_wqe *wqe)
{
	if (!sroce_wqe_opcode_ok(qp->ibqp.qp_type, wqe->opcode))
		return IB_WC_LOC_QP_OP_ERR;
	/* REG_MR names a kernel MR: only kernel ULPs post it. */
	if (wqe->opcode == SROCE_WR_REG_MR && (qp->is_user || wqe->num_sge))
		return IB_WC_LOC_QP_OP_ERR;
	if (wqe->flags & ~(SROCE_WQE_F_SIGNALED | SROCE_WQE_F_SOLICITED |
			   SROCE_WQE_F_FENCE | SROCE_WQE_F_INLINE))
		return IB_WC_LOC_QP_OP_ERR;
	/* The XRCETH has 24 bits for the remote SRQ. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI &&
	    wqe->xrc_srqn > SROCE_XRCETH_SRQN_MASK)
		return IB_WC_LOC_QP_OP_ERR;
	/* Every WQE: the completer's scatter walks num_sge SGEs of a READ. */
	if (wqe->num_sge > qp->max_send_sge)
		return IB_WC_LOC_LEN_ERR;
	if ((wqe->flags & SROCE_WQE_F_INLINE) &&
	    (wqe->inline_len > qp->max_inline ||
	     !sroce_wqe_sends_payload(wqe->opcode)))
		return IB_WC_LOC_LEN_ERR;
	/* A FLUSH carries nothing; its level and type are checked there. */
	if (wqe->opcode == SROCE_WR_FLUSH &&
	    (wqe->num_sge || wqe->wr.flush.length > SROCE_MAX_MSG_BYTES ||
	     wqe->wr.flush.level > SROCE_FLUSH_MR ||
	     (wqe->wr.flush.type & ~(SROCE_FLUSH_GLOBAL |
				     SROCE_FLUSH_PERSISTENT))))
		return IB_WC_LOC_LEN_ERR;
	return IB_WC_SUCCESS;
}

/*
 * Check the SGEs' keys and total the payload of a send WQE when it is the
 * next to execute, not when it is fetched: a REG_MR posted before it in
 * the same queue may be what makes its key valid (iSER sends immediate
 * data through the MR that the REG_MR just before the SEND registers).
 * Return: IB_WC_SUCCESS or the status the WQE completes with.
 */
static u8 sroce_req_check_payload(struct sroce_qp *qp,
				  const struct sroce_send_wqe *wqe, u32 *length)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	const struct sroce_sge *sge = (const void *)((const u8 *)wqe +
						     SROCE_SEND_WQE_HDR);
	u32 i, nsge = min_t(u32, wqe->num_sge, qp->max_send_sge);
	u64 total = 0;

	*length = 0;
	if (wqe->flags & SROCE_WQE_F_INLINE) {
		total = wqe->inline_len;
	} else {
		for (i = 0; i < nsge; i++) {
			struct sroce_mr *mr;

			total += sge[i].length;
			if (!sge[i].length)
				continue;
			/* READ and atomic results are written to the SGEs. */
			mr = sroce_mr_get_checked(sdev, qp->ibqp.pd, sge[i].lkey,
						  sge[i].addr, sge[i].length,
						  sroce_wqe_scatters(wqe->opcode) ?
						  IB_ACCESS_LOCAL_WRITE : 0);
			if (!mr)
				return IB_WC_LOC_PROT_ERR;
			sroce_mr_put(mr);
		}
	}
	if (total > (1ULL << 31))
		return IB_WC_LOC_LEN_ERR;

	switch (wqe->opcode) {
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		if (total != sizeof(u64) || (wqe->wr.atomic.remote_addr & 7))
			return IB_WC_LOC_LEN_ERR;
		break;
	case SROCE_WR_ATOMIC_WRITE:
		/* Eight bytes to one naturally aligned word. */
		if (total != sizeof(u64) || (wqe->wr.rdma.remote_addr & 7))
			return IB_WC_LOC_LEN_ERR;
		break;
	case SROCE_WR_SEND:
	case SROCE_WR_SEND_WITH_IMM:
		if (sroce_qp_is_ud(qp) && total > qp->mtu)
			return IB_WC_LOC_LEN_ERR;
		break;
	}
	*length = total;
	return IB_WC_SUCCESS;
}

/*
 * ODP: the pages a READ's or an atomic's result lands in are faulted in
 * before the request goes, so that its responses find them. -EAGAIN: the
 * requester runs again when they are present. A key or range the
 * payload check refuses is left to it.
 */
static int sroce_req_odp_scatter(struct sroce_qp *qp,
				 const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	const struct sroce_sge *sge = (const void *)((const u8 *)wqe +
						     SROCE_SEND_WQE_HDR);
	u32 i, nsge = min_t(u32, wqe->num_sge, qp->max_send_sge);
	int err = 0;

	if (!atomic_read(&sdev->odp_mrs) || !sroce_wqe_scatters(wqe->opcode) ||
	    (wqe->flags & SROCE_WQE_F_INLINE))
		return 0;
	for (i = 0; i < nsge && err != -EAGAIN; i++) {
		struct sroce_mr *mr;

		if (!sge[i].length)
			continue;
		mr = sroce_mr_get_checked(sdev, qp->ibqp.pd, sge[i].lkey,
					  sge[i].addr, sge[i].length,
					  IB_ACCESS_LOCAL_WRITE);
		if (!mr)
			continue;
		err = sroce_odp_ensure(mr, sge[i].addr, sge[i].length, true,
				       qp, SROCE_ODP_KICK_REQ);
		sroce_mr_put(mr);
	}
	return err;
}

/*
 * Copy and check the WQEs userspace published since the last fetch.
 * Return: the number of checked WQEs not yet sent, or -EINVAL when the
 * producer index is corrupt (the QP is then in error).
 */
static int sroce_req_fetch(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	size_t stride = 1U << qp->sq.stride_shift;
	unsigned long flags;
	int n, max = SROCE_REQ_FETCH_MAX;
	u32 prod;

	spin_lock_irqsave(&qp->sq_lock, flags);
	n = qp->sq_flushed ? 0 : sroce_queue_refresh_prod(&qp->sq);
	prod = qp->sq.prod;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (n < 0) {
		sroce_qp_count(qp, SROCE_CNT_BAD_RING, 1);
		sroce_qp_error(qp, true);
		return -EINVAL;
	}

	while (req->fetched != prod && max--) {
		struct sroce_send_wqe *wqe = sroce_req_copy(qp, req->fetched);
		struct sroce_send_meta *m = sroce_req_meta(qp, req->fetched);

		memcpy(wqe, sroce_queue_elem(&qp->sq, req->fetched), stride);
		memset(m, 0, sizeof(*m));
		m->status = sroce_req_check(qp, wqe);
		if (m->status != IB_WC_SUCCESS)
			sroce_qp_count(qp, SROCE_CNT_BAD_WQE, 1);
		m->rd_atomic = sroce_wqe_is_rd_atomic(wqe->opcode);
		req->fetched++;
	}
	return req->fetched - req->index;
}

/*
 * Gather @len payload bytes of @wqe from byte @offset: copied into @dst,
 * or, when @lend_to is set, lent to that skb as page fragments. Bytes
 * outside the WQE's own data are never read, whatever the offset.
 * -EAGAIN: an ODP page is on its way; the requester runs when it is.
 */
static int sroce_req_gather(struct sroce_qp *qp,
			    const struct sroce_send_wqe *wqe, u32 offset,
			    u8 *dst, struct sk_buff *lend_to, u32 len)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	const struct sroce_sge *sge = (const void *)((const u8 *)wqe +
						     SROCE_SEND_WQE_HDR);
	u32 i, nsge = min_t(u32, wqe->num_sge, qp->max_send_sge);

	if (wqe->flags & SROCE_WQE_F_INLINE) {
		/* inline_len <= max_inline, which the slot holds (checked). */
		if (offset > wqe->inline_len || len > wqe->inline_len - offset)
			return -EFAULT;
		memcpy(dst, (const u8 *)sge + offset, len);
		return 0;
	}
	for (i = 0; i < nsge && len; i++) {
		struct sroce_mr *mr;
		u32 n;
		int err;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		/* Looked up again: the MR may have gone since the fetch. */
		mr = sroce_mr_get_checked(sdev, qp->ibqp.pd, sge[i].lkey,
					  sge[i].addr + offset, n, 0);
		if (!mr)
			return -EFAULT;
		if (lend_to)
			err = sroce_mr_lend(mr, sge[i].addr + offset, lend_to,
					    n);
		else
			err = sroce_mr_copy(mr, sge[i].addr + offset, dst, n,
					    false);
		/* ODP: fault in the rest of the SGE, then run this pass again. */
		if (err == -EAGAIN)
			err = sroce_odp_refault(mr, sge[i].addr + offset,
						sge[i].length - offset, false,
						qp, SROCE_ODP_KICK_REQ);
		/* Not even asked for (no memory): the next pass asks again. */
		if (err == -ENOMEM)
			err = -EAGAIN;
		sroce_mr_put(mr);
		if (err)
			return err;
		dst += n;
		len -= n;
		offset = 0;
	}
	return len ? -EFAULT : 0;
}

/* The opcode within RC, UC or UD (XRC's are RC's, see below). */
static u8 sroce_req_opcode_in(const struct sroce_qp *qp, u8 wr_opcode,
			      bool first, bool last)
{
	u8 t = qp->ibqp.qp_type == IB_QPT_UC ? SROCE_TRANSPORT_UC :
	       sroce_qp_is_ud(qp) ? SROCE_TRANSPORT_UD : SROCE_TRANSPORT_RC;
	u8 op;

	switch (wr_opcode) {
	case SROCE_WR_RDMA_READ:
		return SROCE_OP_READ_REQ;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
		return SROCE_OP_CMP_SWAP;
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		return SROCE_OP_FETCH_ADD;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_OP_ATOMIC_WRITE;
	case SROCE_WR_FLUSH:
		return SROCE_OP_FLUSH;
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		if (first && last)
			op = SROCE_OP_WRITE_ONLY;
		else if (first)
			return t | SROCE_OP_WRITE_FIRST;
		else if (last)
			op = SROCE_OP_WRITE_LAST;
		else
			return t | SROCE_OP_WRITE_MIDDLE;
		/* ONLY_IMM and LAST_IMM follow ONLY and LAST */
		return t | (op + (wr_opcode == SROCE_WR_RDMA_WRITE_WITH_IMM));
	default:
		if (!last)
			return t | (first ? SROCE_OP_SEND_FIRST :
					    SROCE_OP_SEND_MIDDLE);
		if (wr_opcode == SROCE_WR_SEND_WITH_INV)
			return first ? SROCE_OP_SEND_ONLY_INV :
				       SROCE_OP_SEND_LAST_INV;
		op = first ? SROCE_OP_SEND_ONLY : SROCE_OP_SEND_LAST;
		return t | (op + (wr_opcode == SROCE_WR_SEND_WITH_IMM));
	}
}

static u8 sroce_req_opcode(const struct sroce_qp *qp, u8 wr_opcode,
			   bool first, bool last)
{
	u8 op = sroce_req_opcode_in(qp, wr_opcode, first, last);

	return qp->ibqp.qp_type == IB_QPT_XRC_INI ? SROCE_TRANSPORT_XRC | op :
						    op;
}

/* Packets a WQE takes: a READ's count is that of its responses. */
static u32 sroce_req_npkts(const struct sroce_qp *qp,
			   const struct sroce_send_wqe *wqe, u32 length)
{
	if ((sroce_wqe_is_rd_atomic(wqe->opcode) &&
	     wqe->opcode != SROCE_WR_RDMA_READ) || !length)
		return 1;
	return DIV_ROUND_UP(length, qp->mtu);
}

/* The address a WQE's packets go to: the QP's path, or the UD AH's. */
static bool sroce_req_av(struct sroce_qp *qp, const struct sroce_send_wqe *wqe,
			 struct sroce_av *av)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_av *ah_av;
	bool ok = false;

	if (!sroce_qp_is_ud(qp)) {
		*av = qp->attr.av;
		return true;
	}
	rcu_read_lock();
	ah_av = xa_load(&sdev->ah_xa, wqe->wr.ud.ah_num);
	if (ah_av && ah_av->pdn == to_spd(qp->ibqp.pd)->pdn) {
		*av = *ah_av;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}

bool sroce_zero_copy_tx = true;
module_param_named(zero_copy_tx, sroce_zero_copy_tx, bool, 0644);
MODULE_PARM_DESC(zero_copy_tx,
		 "send RC payloads of 512 bytes and more as the MR's pages, not copies (default: on)");

/*
 * Lend the payload instead of copying it: RC only, where the WQE completes
 * when the peer has acknowledged the data, so the application cannot
 * reuse the buffer while a packet of it is queued (UC and UD complete on
 * transmit). Small payloads are cheaper to copy than to lend.
 */
static bool sroce_req_lends(const struct sroce_qp *qp,
			    const struct sroce_send_wqe *wqe, u32 paylen)
{
	return READ_ONCE(sroce_zero_copy_tx) &&
	       sroce_qp_reliable_req(qp) &&
	       paylen >= SROCE_LEND_MIN_BYTES &&
	       !(wqe->flags & SROCE_WQE_F_INLINE);
}

/* A packet whose payload is lent pages; NULL: build a copied one. */
static struct sk_buff *sroce_req_build_lent(struct sroce_qp *qp,
					    const struct sroce_send_wqe *wqe,
					    const struct sroce_pkt *pkt,
					    unsigned int hdr_len, u32 offset,
					    u32 paylen, int *err)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sk_buff *skb;

	skb = sroce_skb_alloc(sdev, hdr_len);
	if (!skb) {
		*err = -ENOMEM;
		return NULL;
	}
	sroce_hdr_build(skb->data, pkt);
	*err = sroce_req_gather(qp, wqe, offset, NULL, skb, paylen);
	if (!*err)
		*err = sroce_skb_put_tail(skb, pkt->pad);
	if (*err) {
		kfree_skb(skb);
		return NULL;
	}
	return skb;
}

/* A packet with the payload copied into its linear part. */
static struct sk_buff *sroce_req_build_copied(struct sroce_qp *qp,
					      const struct sroce_send_wqe *wqe,
					      const struct sroce_pkt *pkt,
					      unsigned int hdr_len, u32 offset,
					      u32 paylen, int *err)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sk_buff *skb;

	skb = sroce_skb_alloc(sdev, hdr_len + paylen + pkt->pad +
			      SROCE_ICRC_BYTES);
	if (!skb) {
		*err = -ENOMEM;
		return NULL;
	}
	sroce_hdr_build(skb->data, pkt);
	*err = paylen ? sroce_req_gather(qp, wqe, offset,
					 skb->data + hdr_len, NULL, paylen) : 0;
	if (*err) {
		kfree_skb(skb);
		return NULL;
	}
	memset(skb->data + hdr_len + paylen, 0, pkt->pad);
	return skb;
}

/*
 * Build and send one packet of @wqe: @paylen bytes from @offset. RC and
 * UC packets join the pass's @burst; UD's may each go somewhere else.
 */
static int sroce_req_xmit(struct sroce_qp *qp, const struct sroce_send_wqe *wqe,
			  const struct sroce_av *av, struct sroce_pkt *pkt,
			  u32 offset, u32 paylen, struct sroce_tx_burst *burst)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	unsigned int hdr_len = sroce_opcode_table[pkt->opcode].hdr_len;
	bool ud = sroce_qp_is_ud(qp);
	unsigned int flags = 0;
	struct sk_buff *skb = NULL;
	u16 sport;
	int err = 0;

	pkt->pad = sroce_pad(paylen);
	if (sroce_req_lends(qp, wqe, paylen)) {
		skb = sroce_req_build_lent(qp, wqe, pkt, hdr_len, offset,
					   paylen, &err);
		if (skb)
			sroce_qp_count(qp, SROCE_CNT_TX_LENT, 1);
	}
	/* Memory that cannot be lent, or too many fragments: copy it. */
	if (!skb && (!err || err == -EOPNOTSUPP || err == -EMSGSIZE))
		skb = sroce_req_build_copied(qp, wqe, pkt, hdr_len, offset,
					     paylen, &err);
	if (!skb) {
		if (err == -ENOMEM)
			sroce_qp_count(qp, SROCE_CNT_TX_ERRORS, 1);
		return err;
	}

	sport = ud ? rdma_get_udp_sport(av->flow_label, qp->qpn, pkt->dqpn) :
		     qp->src_port;
	if (pkt->rxe_flush_icrc) {
		flags |= SROCE_XMIT_RXE_FLUSH_ICRC;
		sroce_qp_count(qp, SROCE_CNT_TX_RXE_FLUSH_ICRC, 1);
	}
	sroce_net_xmit(sdev, av, ud ? NULL : &qp->dst_cache, skb, hdr_len,
		       sport, flags, ud ? NULL : burst);
	/* A packet lost on the way is the transport's to recover. */
	return 0;
}

/*
 * Unacknowledged PSNs the requester may have: SROCE_REQ_WINDOW, or less
 * while congestion control limits the QP's rate (sroce_cc.c): a window of
 * what the rate sends in a while bounds what the QP can pile up in a
 * bottleneck's queue before CNPs slow it, as a TCP window does.
 *
 * Signed, as sroce_psn_diff() is: the requester stands behind una after a
 * rewind that late ACKs overtook, and a negative distance compared with
 * an unsigned window turns huge — the window looked full, the QP stalled
 * (caught by 32-rc-integrity and 36-faults under netem reordering).
 */
static s32 sroce_req_window(const struct sroce_qp *qp)
{
	u32 cc = sroce_cc_window(qp);

	return cc && cc < SROCE_REQ_WINDOW ? cc : SROCE_REQ_WINDOW;
}

/*
 * Is the window full? A window that shrank (a rate cut, the first CNP of
 * an unlimited QP) under packets sent without an AckReq would wait for
 * ACKs nobody asked for, until the retransmission timer: one packet past
 * it then goes, and asks (sroce_req_step()).
 */
static bool sroce_req_window_full(const struct sroce_qp *qp, u32 una)
{
	s32 inflight = sroce_psn_diff(qp->req.psn, una);

	if (inflight < sroce_req_window(qp))
		return false;
	return qp->req.noack == 0 || inflight >= SROCE_REQ_WINDOW;
}

/*
 * The device's window: its RC requesters together may have dev_window
 * PSNs unacknowledged, each QP SROCE_REQ_WINDOW_MIN at least whatever
 * the others have. A QP's own window lets 16 streaming QPs put 2048
 * packets in flight at once; a receiver that drains them in one softirq
 * thread (6.1 leaves softirqs to ksoftirqd once it runs) answered the
 * last of them after the retransmission timeout (31's ib_write_bw -q 16
 * took 14 timeouts there). A NIC's send queue bounds the same thing.
 */
static unsigned int sroce_dev_window = 512;
module_param_named(dev_window, sroce_dev_window, uint, 0644);
MODULE_PARM_DESC(dev_window,
		 "RC PSNs a device's QPs may have unacknowledged in all (16 a QP at least; 0: no bound; default: 512)");

/*
 * Would the device's window be full with @own of this QP's PSNs in
 * flight? The other QPs' share is what their passes last counted
 * (sroce_req_recount()): a pass old at most.
 */
static bool sroce_req_dev_full(const struct sroce_qp *qp, s32 own)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 max = min_t(u32, READ_ONCE(sroce_dev_window), 1U << 24);
	s32 others;

	if (!max || own < SROCE_REQ_WINDOW_MIN)
		return false;
	others = atomic_read(&sdev->tx_inflight) -
		 atomic_read(&qp->tx_counted);
	return others + own >= (s32)max;
}

/*
 * Is the device's window full? As for the QP's own window, the packet
 * that filled it asked for an ACK (ack_now in sroce_req_step()), and
 * that ACK runs this QP again; when the others filled it after a packet
 * that did not ask, one more goes, and asks.
 */
static bool sroce_req_dev_window_full(struct sroce_qp *qp, u32 una)
{
	if (!sroce_req_dev_full(qp, sroce_psn_diff(qp->req.psn, una)) ||
	    qp->req.noack)
		return false;
	sroce_qp_count(qp, SROCE_CNT_DEV_WINDOW_WAITS, 1);
	return true;
}

/* Move the device's count by what this QP has in flight now: @n. */
static void sroce_req_count_inflight(struct sroce_qp *qp, s32 n)
{
	s32 old = atomic_xchg(&qp->tx_counted, n);

	if (n != old)
		atomic_add(n - old, &to_sdev(qp->ibqp.device)->tx_inflight);
}

static bool sroce_req_counts(enum ib_qp_state state)
{
	return state == IB_QPS_RTS || state == IB_QPS_SQD;
}

/*
 * At the end of each pass: this QP's PSNs in flight, none out of RTS and
 * SQD. The error path takes the QP's share away after it has set the
 * state (sroce_req_uncount()); a pass that counted before it saw the
 * state may store its count after that: it looks at the state once more
 * (both sides' atomic_xchg are full barriers: one sees the other).
 */
static void sroce_req_recount(struct sroce_qp *qp)
{
	s32 n = 0;

	if (!sroce_qp_reliable_req(qp))
		return;
	if (sroce_req_counts(sroce_qp_state(qp)))
		n = max(sroce_psn_diff(qp->req.psn, READ_ONCE(qp->comp.una)), 0);
	sroce_req_count_inflight(qp, n);
	if (n && !sroce_req_counts(sroce_qp_state(qp)))
		sroce_req_count_inflight(qp, 0);
}

/**
 * sroce_req_uncount - take the QP's PSNs out of its device's window
 * @qp: a QP moved to the error state, or reset, or destroyed
 */
void sroce_req_uncount(struct sroce_qp *qp)
{
	sroce_req_count_inflight(qp, 0);
}

/* Packets between AckReqs: a quarter of the window keeps it open. */
static u32 sroce_req_ack_every(const struct sroce_qp *qp)
{
	return clamp_t(s32, sroce_req_window(qp) / 4, 1, SROCE_REQ_ACK_EVERY);
}

/*
 * Will the WQE after the current one go out right behind it, in this
 * pass? Then the AckReq of the current message's last packet can wait
 * for a later packet (SROCE_REQ_ACK_EVERY at most): an ACK covers every
 * PSN before it, and a stream of small messages is not answered one ACK
 * each. When the requester may stop after this packet (the SQ empty as
 * far as fetched, a local operation next, the window full, SQD), it
 * asks now: otherwise nothing would be acknowledged before the
 * retransmission timer. (The pass's last packet always asks: see
 * sroce_req_step().)
 */
static bool sroce_req_followed(struct sroce_qp *qp, u32 una)
{
	u32 next = qp->req.index + 1;
	const struct sroce_send_wqe *wqe;

	/* A hint without state_lock: a late SQD costs one timer, no more. */
	if (next == qp->req.fetched ||
	    READ_ONCE(qp->state) != IB_QPS_RTS)
		return false;
	wqe = sroce_req_copy(qp, next);
	if (sroce_wqe_is_local(wqe->opcode) || !sroce_req_has_credit(qp, wqe))
		return false;
	return sroce_psn_diff(sroce_psn_add(qp->req.psn, 1), una) <
	       sroce_req_window(qp);
}

/*
 * How this FLUSH is sealed: as IBTA says, or as rdma_rxe does (its ICRC
 * covers the headers twice; see sroce_net.c), which drops the other kind.
 * The QP's responder learns the peer's way from the peer's FLUSHes; else
 * a FLUSH that timed out goes again, as the timeout's probe, sealed the
 * other way, and the QP keeps the way that went out last. Against a peer
 * of either kind that costs one timeout at most, and a sroce peer takes
 * both.
 */
static bool sroce_req_flush_icrc(struct sroce_qp *qp)
{
	bool rxe = READ_ONCE(qp->flush_rxe_icrc);

	if (qp->req.probing && qp->req.psn == qp->req.probe_psn) {
		rxe = !rxe;
		WRITE_ONCE(qp->flush_rxe_icrc, rxe);
	}
	return rxe;
}

/*
 * Fill the header fields of the packet at @offset of @wqe; @ack_now: it
 * asks for an ACK (as every SROCE_REQ_ACK_EVERY-th packet does anyway).
 */
static void sroce_req_fill(struct sroce_qp *qp, const struct sroce_send_wqe *wqe,
			   const struct sroce_send_meta *m, struct sroce_pkt *pkt,
			   u32 offset, u32 paylen, bool ack_now)
{
	bool first = offset == 0;
	bool last = offset + paylen >= m->length;

	/* A READ is one request packet, whatever the offset. */
	if (m->rd_atomic)
		first = last = true;
	u32 mask;

	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = sroce_req_opcode(qp, wqe->opcode, first, last);
	mask = sroce_opcode_table[pkt->opcode].mask;
	pkt->pkey = SROCE_DEFAULT_PKEY_FULL;
	pkt->psn = qp->req.psn;
	pkt->dqpn = sroce_qp_is_ud(qp) ? wqe->wr.ud.remote_qpn :
					 qp->attr.dest_qpn;
	pkt->se = last && (wqe->flags & SROCE_WQE_F_SOLICITED) &&
		  (mask & (SROCE_M_SEND | SROCE_M_IMMDT));

	if (mask & SROCE_M_XRCETH)
		pkt->xrc_srqn = wqe->xrc_srqn;
	if (mask & SROCE_M_FETH) {
		/* Checked at fetch: length within 2^31, type and level known. */
		pkt->va = wqe->wr.flush.remote_addr;
		pkt->rkey = wqe->wr.flush.rkey;
		pkt->dmalen = wqe->wr.flush.length;
		pkt->flush_type = wqe->wr.flush.type;
		pkt->flush_level = wqe->wr.flush.level;
		pkt->rxe_flush_icrc = sroce_req_flush_icrc(qp);
	} else if (mask & SROCE_M_RETH) {
		/* A READ asked again starts where its responses stopped. */
		pkt->va = wqe->wr.rdma.remote_addr + offset;
		pkt->rkey = wqe->wr.rdma.rkey;
		pkt->dmalen = m->length - offset;
	}
	if (mask & SROCE_M_ATMETH) {
		pkt->va = wqe->wr.atomic.remote_addr;
		pkt->rkey = wqe->wr.atomic.rkey;
		pkt->swap_add = wqe->opcode == SROCE_WR_ATOMIC_CMP_AND_SWP ?
				wqe->wr.atomic.swap : wqe->wr.atomic.compare_add;
		pkt->compare = wqe->wr.atomic.compare_add;
	}
	if (mask & SROCE_M_IMMDT)
		pkt->imm = wqe->ex.imm_data;
	if (mask & SROCE_M_IETH)
		pkt->inv_rkey = wqe->ex.invalidate_rkey;
	if (mask & SROCE_M_DETH) {
		/* The controlled Q_Key rule: the high bit takes the QP's. */
		pkt->qkey = (wqe->wr.ud.remote_qkey & 0x80000000U) ?
			    qp->attr.qkey : wqe->wr.ud.remote_qkey;
		pkt->sqpn = qp->qpn;
	}

	/* Answered anyway; IBTA 1.5 has FLUSH and ATOMIC WRITE ask. */
	if (mask & (SROCE_M_FLUSH | SROCE_M_ATOMIC_WRITE))
		pkt->ackreq = true;
	else if (sroce_qp_reliable_req(qp) && !(mask & SROCE_M_READ) &&
		 !(mask & SROCE_M_ATOMIC)) {
		if (++qp->req.noack >= sroce_req_ack_every(qp) || ack_now) {
			pkt->ackreq = true;
			qp->req.noack = 0;
		}
	}
}

/*
 * Account a packet to the pacer. One after which it will hold the QP asks
 * for an acknowledgment: at a low rate the next packet, which would have
 * asked, may be far off, beyond the retransmission timeout.
 */
static void sroce_req_paced(struct sroce_qp *qp, struct sroce_pkt *pkt,
			    u32 paylen)
{
	u32 mask = sroce_opcode_table[pkt->opcode].mask;

	if (!sroce_cc_sent(qp, sroce_opcode_table[pkt->opcode].hdr_len, paylen))
		return;
	if (sroce_qp_reliable_req(qp) && !pkt->ackreq &&
	    !(mask & (SROCE_M_READ | SROCE_M_ATOMIC))) {
		pkt->ackreq = true;
		qp->req.noack = 0;
	}
}

/*
 * Hand a WQE to the completer: from now on its PSNs are in flight (RC)
 * and it completes in order. @done for WQEs that need no answer.
 */
static bool sroce_req_publish(struct sroce_qp *qp, struct sroce_send_meta *m,
			      bool done)
{
	bool rc = sroce_qp_reliable_req(qp);
	bool error = false;
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->req.index == qp->req.sent) {
		qp->comp.sent = ++qp->req.sent;
		if (rc && !sroce_wqe_is_local(sroce_req_copy(qp,
							     qp->req.index)->opcode) &&
		    m->status == IB_WC_SUCCESS) {
			qp->comp.max_psn = sroce_psn_add(m->last_psn, 1);
			if (m->rd_atomic)
				qp->comp.rd_atomic++;
			sroce_comp_arm_timer(qp);
		}
	}
	if (done) {
		m->done = 1;
		error = sroce_comp_retire(qp);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return error;
}

/* Mark a WQE whose packets are all out as done (UC, UD) and retire. */
static bool sroce_req_sent_all(struct sroce_qp *qp, struct sroce_send_meta *m)
{
	unsigned long flags;
	bool error;

	spin_lock_irqsave(&qp->sq_lock, flags);
	m->done = 1;
	error = sroce_comp_retire(qp);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return error;
}

/*
 * The WQE at req->index fails with @status: nothing after it goes out.
 * Its error completion comes when it reaches the head of the queue; if
 * that is now, the QP goes to error now, else the completer does it.
 */
static enum sroce_req_step sroce_req_fail(struct sroce_qp *qp,
					  struct sroce_send_meta *m, u8 status)
{
	bool posted;

	m->status = status;
	qp->req.stopped = true;
	if (qp->req.index == qp->req.sent)
		posted = sroce_req_publish(qp, m, true);
	else
		posted = sroce_req_sent_all(qp, m);
	return posted ? SROCE_REQ_FAILED : SROCE_REQ_STOP;
}

/* LOCAL_INV, REG_MR and BIND_MW: executed here, in order with the sends. */
static u8 sroce_req_local_op(struct sroce_qp *qp,
			     const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_reg_mr_wr reg;

	switch (wqe->opcode) {
	case SROCE_WR_REG_MR:
		memcpy(&reg, wqe->wr.raw, sizeof(reg));
		return sroce_mr_reg_fast(sdev, qp->ibqp.pd, &reg);
	case SROCE_WR_LOCAL_INV:
		if (sroce_key_invalidate(qp, wqe->ex.invalidate_rkey, false))
			return IB_WC_LOC_PROT_ERR;
		return IB_WC_SUCCESS;
	case SROCE_WR_BIND_MW:
		return sroce_mw_bind(qp, wqe);
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
}

/* Room in the window and the read/atomic credits for @m? */
static bool sroce_req_may_send(struct sroce_qp *qp,
			       const struct sroce_send_wqe *wqe,
			       const struct sroce_send_meta *m, bool fresh,
			       u32 una, u32 rd_atomic)
{
	if (!sroce_qp_reliable_req(qp))
		return true;
	if (qp->req.probing && qp->req.psn != qp->req.probe_psn)
		return false;
	if (sroce_req_window_full(qp, una) ||
	    sroce_req_dev_window_full(qp, una))
		return false;
	if (!fresh)
		return !sroce_req_probe_held(qp, wqe, m, una);
	if (m->rd_atomic && rd_atomic >= max_t(u32, qp->attr.max_rd_atomic, 1))
		return false;
	if ((wqe->flags & SROCE_WQE_F_FENCE) && rd_atomic)
		return false;
	return sroce_req_has_credit(qp, wqe);
}

/*
 * Everything before req->psn has been on the wire: move the high-water
 * mark the retransmission timer reads (sroce_comp_retrans_timer()).
 */
static void sroce_req_sent_upto(struct sroce_qp *qp)
{
	if (sroce_psn_diff(qp->req.psn, qp->req.sent_psn) > 0)
		WRITE_ONCE(qp->req.sent_psn, qp->req.psn);
}

/* Send what the budget allows of the WQE at req->index. */
static enum sroce_req_step sroce_req_step(struct sroce_qp *qp, int *budget,
					  u32 una, u32 *rd_atomic,
					  struct sroce_tx_burst *burst)
{
	struct sroce_req *req = &qp->req;
	struct sroce_send_wqe *wqe = sroce_req_copy(qp, req->index);
	struct sroce_send_meta *m = sroce_req_meta(qp, req->index);
	bool fresh = req->index == req->sent;
	struct sroce_pkt pkt;
	struct sroce_av av;
	int err;

	if (m->status != IB_WC_SUCCESS)
		return sroce_req_fail(qp, m, m->status);
	if (sroce_wqe_is_local(wqe->opcode)) {
		if ((wqe->flags & SROCE_WQE_F_FENCE) && *rd_atomic)
			return SROCE_REQ_WAIT;
		m->status = sroce_req_local_op(qp, wqe);
		if (m->status != IB_WC_SUCCESS)
			return sroce_req_fail(qp, m, m->status);
		if (sroce_req_publish(qp, m, true))
			return SROCE_REQ_FAILED;
		req->index++;
		return SROCE_REQ_NEXT;
	}
	if (!sroce_req_may_send(qp, wqe, m, fresh, una, *rd_atomic))
		return SROCE_REQ_WAIT;
	if (!sroce_req_av(qp, wqe, &av))
		return sroce_req_fail(qp, m, IB_WC_LOC_QP_OP_ERR);

	/* Sent again too: an invalidation may have taken a page since. */
	if ((fresh || m->rd_atomic) &&
	    sroce_req_odp_scatter(qp, wqe) == -EAGAIN) {
		sroce_qp_count(qp, SROCE_CNT_ODP_REQ_WAITS, 1);
		WRITE_ONCE(req->odp_wait, true);
		return SROCE_REQ_WAIT;
	}
	if (fresh) {
		m->status = sroce_req_check_payload(qp, wqe, &m->length);
		if (m->status != IB_WC_SUCCESS) {
			sroce_qp_count(qp, SROCE_CNT_BAD_WQE, 1);
			return sroce_req_fail(qp, m, m->status);
		}
		if (sroce_qp_reliable_req(qp))
			req->ssn = sroce_psn_add(req->ssn, 1);
		m->first_psn = req->psn;
		m->last_psn = sroce_psn_add(req->psn,
					    sroce_req_npkts(qp, wqe, m->length) - 1);
		sroce_req_publish(qp, m, false);
		/*
		 * Counted where the completer counts it (publish): the next
		 * WQE of this pass must see it, or a pass sends one READ or
		 * atomic more than max_rd_atomic allows and the responder
		 * refuses it (NAK Invalid Request).
		 */
		if (m->rd_atomic)
			(*rd_atomic)++;
	}

	while (*budget > 0) {
		u32 paylen = !sroce_wqe_sends_payload(wqe->opcode) ? 0 :
			     min(m->length - req->offset, qp->mtu);
		bool last = m->rd_atomic || req->offset + paylen >= m->length;
		bool ack_now;

		/*
		 * The pass's last packet asks too, mid-message or not: the
		 * pass that goes on may wait behind other QPs' passes for
		 * longer than the retransmission timeout.
		 */
		/* Congestion control's pacer: its timer resumes the pass. */
		if (!sroce_cc_may_send(qp))
			return SROCE_REQ_WAIT;
		ack_now = *budget <= 1 || req->probing ||
			  (!req->offset && sroce_req_credit_probe(qp, wqe)) ||
			  (last && !sroce_req_followed(qp, una)) ||
			  sroce_psn_diff(sroce_psn_add(req->psn, 1), una) >=
			  sroce_req_window(qp) ||
			  sroce_req_dev_full(qp, sroce_psn_diff(req->psn, una) + 1);
		sroce_req_fill(qp, wqe, m, &pkt, req->offset, paylen, ack_now);
		sroce_req_paced(qp, &pkt, paylen);
		if (sroce_psn_diff(req->psn, req->resend_until) < 0)
			sroce_qp_count(qp, SROCE_CNT_RETRANSMIT_PACKETS, 1);
		err = sroce_req_xmit(qp, wqe, &av, &pkt, req->offset, paylen,
				     burst);
		if (err == -EFAULT) {
			/* The local memory went away: fail in order. */
			return sroce_req_fail(qp, m, IB_WC_LOC_PROT_ERR);
		}
		if (err == -EAGAIN) {
			/* Nothing sent: this packet again after the fault. */
			sroce_qp_count(qp, SROCE_CNT_ODP_REQ_WAITS, 1);
			WRITE_ONCE(req->odp_wait, true);
			return SROCE_REQ_WAIT;
		}
		if (req->odp_wait)
			WRITE_ONCE(req->odp_wait, false);
		(*budget)--;

		if (!last) {
			req->offset += paylen;
			req->psn = sroce_psn_add(req->psn, 1);
			sroce_req_sent_upto(qp);
			if (!sroce_req_may_send(qp, wqe, m, false, una,
						*rd_atomic))
				return SROCE_REQ_WAIT;
			continue;
		}
		req->psn = sroce_psn_add(m->last_psn, 1);
		sroce_req_sent_upto(qp);
		req->offset = 0;
		req->index++;
		/* RC completes on its ACK; UC and UD once sent. */
		if (!sroce_qp_reliable_req(qp) && sroce_req_sent_all(qp, m))
			return SROCE_REQ_FAILED;
		return SROCE_REQ_NEXT;
	}
	return SROCE_REQ_WAIT;
}

/*
 * The probe after a timeout was answered. An acknowledgment beyond it
 * (una past where the requester stands, one request after the rewind)
 * covers packets sent before the timeout and not since: they had
 * arrived, the timeout was spurious (a slow peer), and the requester
 * goes back to where the rewind found it, resending nothing more.
 * Otherwise it goes on from the probe: go-back-N. Called under sq_lock.
 */
static void sroce_req_probe_answered(struct sroce_qp *qp, u32 una)
{
	struct sroce_req *req = &qp->req;

	if (sroce_psn_diff(una, req->psn) <= 0)
		return;
	if (sroce_psn_diff(req->undo_psn, una) > 0) {
		trace_sroce_req_rewind(qp, req->psn, req->undo_psn,
				       SROCE_REWIND_RESUME);
		req->index = req->undo_index;
		req->offset = req->undo_offset;
		req->psn = req->undo_psn;
	} else {
		/* Acknowledged even past that: from una (a rewind). */
		qp->comp.rewind = true;
		qp->comp.rewind_why = SROCE_REWIND_PROBE_PAST;
	}
}

/*
 * Take in what the completer decided since the last pass: a go-back-N
 * rewind to the oldest incomplete WQE, the window edge, the read/atomic
 * credits, an RNR back-off. Return false when the requester must wait.
 */
static bool sroce_req_sync(struct sroce_qp *qp, u32 *una, u32 *rd_atomic)
{
	struct sroce_comp *comp = &qp->comp;
	struct sroce_req *req = &qp->req;
	unsigned long flags;
	u64 until = 0;
	bool go = true;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (comp->probe == SROCE_PROBE_ANSWERED) {
		comp->probe = SROCE_PROBE_NONE;
		if (comp->rewind)	/* answered before the probe went out */
			comp->rewind = sroce_psn_diff(comp->una, req->psn) > 0;
		else
			sroce_req_probe_answered(qp, comp->una);
	}
	if (comp->error || qp->sq_flushed) {
		go = false;
	} else if (comp->rewind) {
		comp->rewind = false;
		/* A probe timed out: the place to go back to stays. */
		if (!req->probing) {
			req->undo_index = req->index;
			req->undo_offset = req->offset;
			req->undo_psn = req->psn;
		}
		if (qp->sq.cons != comp->sent) {
			struct sroce_send_meta *m = sroce_req_meta(qp,
								   qp->sq.cons);
			u32 psn = m->first_psn;

			/*
			 * A READ is asked again for what has not arrived;
			 * the responder replays from that PSN.
			 */
			if (m->rd_atomic)
				psn = sroce_psn_add(psn, m->resp_off / qp->mtu);
			else if (sroce_psn_diff(comp->una, m->first_psn) > 0)
				psn = comp->una;
			trace_sroce_req_rewind(qp, req->psn, psn, comp->rewind_why);
			req->index = qp->sq.cons;
			req->psn = psn;
			/* Within the message, whatever the PSNs say. */
			req->offset = min_t(u64, (u64)max(sroce_psn_diff(psn,
							m->first_psn), 0) *
					    qp->mtu, m->length);
			/*
			 * What was on the wire is resent; the rest of the
			 * last message published (max_psn) is not.
			 */
			req->resend_until = req->sent_psn;
			req->probe_psn = psn;
			sroce_comp_arm_timer(qp);
		} else {
			comp->probe = SROCE_PROBE_NONE;
		}
	}
	req->probing = comp->probe == SROCE_PROBE_WANTED;
	if (go && comp->rnr_until && ktime_get_ns() < comp->rnr_until) {
		until = comp->rnr_until;
		go = false;
	} else {
		comp->rnr_until = 0;
	}
	*una = comp->una;
	*rd_atomic = comp->rd_atomic;
	req->lsn = comp->lsn;
	req->credits_unlimited = comp->credits_unlimited;
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (until)
		hrtimer_start(&qp->rnr_timer, ns_to_ktime(until),
			      HRTIMER_MODE_ABS_SOFT);
	return go;
}

/* In the doorbell's system call (or a kernel ULP's post), not a worker. */
static bool sroce_req_in_doorbell(void)
{
	return !in_serving_softirq() && !(current->flags & PF_WQ_WORKER);
}

/* Nothing to send: ask for a kick, then make sure nothing slipped in. */
static int sroce_req_idle(struct sroce_qp *qp)
{
	int n;

	sroce_queue_set_flags(&qp->sq, SROCE_RING_F_NEED_KICK);
	/* The flag store before the prod load; the provider does the mirror. */
	smp_mb();
	n = sroce_req_fetch(qp);
	if (n)
		return n;
	qp->req.direct_left = SROCE_REQ_DIRECT_PKTS;
	/* Only the doorbell's own pass dates the idle: ACKs are no posts. */
	if (sroce_req_in_doorbell())
		WRITE_ONCE(qp->req.idle_ns, ktime_get_ns());
	return 0;
}

/*
 * The SQ ran dry while streaming: poll it a little longer instead of
 * asking for a kick. Returns the new WQEs found (> 0), 0 to go idle, or
 * -EAGAIN when this pass should end and a worker should go on polling.
 */
static int sroce_req_linger(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	int n;

	if (!READ_ONCE(req->streaming))
		return 0;
	if (!(current->flags & PF_WQ_WORKER)) {
		sroce_task_defer(&qp->req_task);
		return -EAGAIN;
	}
	if (!req->linger_ns)
		req->linger_ns = ktime_get_ns();
	while (ktime_get_ns() - req->linger_ns < SROCE_REQ_LINGER_NS) {
		/*
		 * Poll only a CPU nobody else wants: beside a busy-polling
		 * application (a receiver's poll_cq loop) the spin would take
		 * its time, and the kworker is not preempted while it spins.
		 */
		if (!single_task_running() || need_resched())
			break;
		cpu_relax();
		if (READ_ONCE(qp->sq.hdr->prod) == qp->sq.prod)
			continue;
		n = sroce_req_fetch(qp);
		if (n) {
			if (n > 0)
				sroce_qp_count(qp, SROCE_CNT_LINGER_PICKUPS, n);
			req->linger_ns = 0;
			return n;
		}
	}
	req->linger_ns = 0;
	WRITE_ONCE(req->streaming, false);
	return 0;
}

/*
 * One pass, of at most *@budget packets (what is left of it on return);
 * the packets it sends wait in @burst (flushed by the caller).
 */
static bool sroce_req_burst_pass(struct sroce_qp *qp,
				 struct sroce_tx_burst *burst, int *budget)
{
	struct sroce_req *req = &qp->req;
	enum ib_qp_state state = sroce_qp_state(qp);
	u32 una, rd_atomic;

	if (state != IB_QPS_RTS && state != IB_QPS_SQD)
		return false;
	if (!sroce_req_sync(qp, &una, &rd_atomic))
		return false;

	while (*budget > 0 && !req->stopped) {
		enum sroce_req_step step;

		if (req->index == req->fetched) {
			int n = sroce_req_fetch(qp);

			if (!n) {
				/* Nothing waits unsent while the SQ is polled. */
				sroce_net_flush(burst);
				n = sroce_req_linger(qp);
			}
			if (!n)
				n = sroce_req_idle(qp);
			if (n <= 0)
				return false;
			sroce_queue_clear_flags(&qp->sq, SROCE_RING_F_NEED_KICK);
		}
		/* SQD: finish the message under way, start no other. */
		if (state == IB_QPS_SQD && req->offset == 0 &&
		    req->index == req->sent)
			return false;
		step = sroce_req_step(qp, budget, una, &rd_atomic, burst);
		if (step == SROCE_REQ_FAILED) {
			sroce_qp_error(qp, false);
			return false;
		}
		if (step != SROCE_REQ_NEXT)
			return step == SROCE_REQ_WAIT && *budget <= 0;
	}
	return *budget <= 0;
}

/**
 * sroce_req_pass - one pass of the requester task
 * @task: the QP's req_task
 *
 * In doorbells' calls, the passes send SROCE_REQ_DIRECT_PKTS packets
 * between them from one idle of the requester to the next (those that
 * ACKs arriving meanwhile ask for included); then a worker beside the
 * application goes on. A pass that goes idle refills the count. Each pass
 * once wrote back what it had started with instead, so only a pass
 * outside the call refilled it: a 4 KiB ping-pong (4 packets a message,
 * its ACKs handled inside the call) went to a worker every fourth
 * message, 14-16 % of its posts (ib_send_lat typical 127-180 -> 77-89 us
 * at MTU 1500).
 *
 * Return: true if it stopped on its budget with work left.
 */
bool sroce_req_pass(struct sroce_task *task)
{
	struct sroce_qp *qp = container_of(task, struct sroce_qp, req_task);
	struct sroce_req *req = &qp->req;
	struct sroce_tx_burst burst = {};
	bool direct = sroce_req_in_doorbell();
	int budget = SROCE_REQ_BUDGET;
	int *left = direct ? &req->direct_left : &budget;
	bool more;

	if (!direct)
		req->direct_left = SROCE_REQ_DIRECT_PKTS;
	/* Going idle refills direct_left: through *left, the pass ends then. */
	more = *left > 0 && sroce_req_burst_pass(qp, &burst, left);
	sroce_net_flush(&burst);
	sroce_req_recount(qp);
	if (!direct || *left > 0)
		return more;
	/* Spent, with work left or not: a worker looks next. */
	WRITE_ONCE(req->streaming, true);
	sroce_task_defer(task);
	return false;
}

/* Every WQE the SQ holds has been sent (or failed). */
bool sroce_req_drained(struct sroce_qp *qp)
{
	return qp->req.index == qp->req.fetched &&
	       READ_ONCE(qp->sq.hdr->prod) == qp->sq.prod;
}

/* A QP's requester state at RESET and at creation. */
void sroce_req_init(struct sroce_qp *qp)
{
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	WRITE_ONCE(qp->flush_rxe_icrc, false);
	qp->req.direct_left = SROCE_REQ_DIRECT_PKTS;
	qp->req.fetched = qp->sq.cons;
	qp->req.index = qp->sq.cons;
	qp->req.sent = qp->sq.cons;
	qp->comp.sent = qp->sq.cons;
}

/* The move to RTS: PSNs start from sq_psn. */
void sroce_req_start(struct sroce_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	qp->req.psn = qp->attr.sq_psn;
	qp->req.resend_until = qp->attr.sq_psn;
	qp->req.sent_psn = qp->attr.sq_psn;
	qp->comp.una = qp->attr.sq_psn;
	qp->comp.max_psn = qp->attr.sq_psn;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.probe = SROCE_PROBE_NONE;
	qp->req.probing = false;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}
