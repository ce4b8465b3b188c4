/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: tracepoints (TRACE_SYSTEM sroce, /sys/kernel/tracing/events/sroce).
 *
 * What someone debugging a connection wants to see happen to a QP that
 * the counters only add up: its state changes, the requester going back
 * (retransmission timeouts, rewinds and why), the NAKs its responder sends
 * and its completer receives, RNR back-offs with the wait chosen, error
 * completions, and ODP faults. Every event names the device and the QP (or
 * CQ, or MR key); Documentation/debugging.rst has recipes for each.
 *
 * Disabled, an event is a static branch at its call site and its
 * arguments are not evaluated. CREATE_TRACE_POINTS is defined in
 * sroce_main.c only (Kbuild adds this directory to its include path).
 *
 * Locking: none of its own. Each event is emitted where its values are
 * consistent, under the lock that guards them at the call site.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

#if !defined(SROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SROCE_TRACE_H

#include <linux/tracepoint.h>

#include "sroce.h"
#include "sroce_pkt.h"

/*
 * The device's name, copied: a fixed array rather than __string(), whose
 * assignment macro changed its arguments between the kernels sroce builds
 * for.
 */
#define SROCE_TP_DEV		__array(char, dev, IB_DEVICE_NAME_MAX)
#define SROCE_TP_DEV_SET(ibdev)	strscpy(__entry->dev, dev_name(&(ibdev)->dev), \
					IB_DEVICE_NAME_MAX)

/*
 * Enum values the events print by name: defined for trace-cmd and perf,
 * which read the format files, then the tables.
 */
TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);
#define sroce_show_qp_state(x) \
	__print_symbolic(x, \
			 { IB_QPS_RESET, "RESET" }, \
			 { IB_QPS_INIT, "INIT" }, \
			 { IB_QPS_RTR, "RTR" }, \
			 { IB_QPS_RTS, "RTS" }, \
			 { IB_QPS_SQD, "SQD" }, \
			 { IB_QPS_SQE, "SQE" }, \
			 { IB_QPS_ERR, "ERR" })

TRACE_DEFINE_ENUM(IB_QPT_SMI);
TRACE_DEFINE_ENUM(IB_QPT_GSI);
TRACE_DEFINE_ENUM(IB_QPT_RC);
TRACE_DEFINE_ENUM(IB_QPT_UC);
TRACE_DEFINE_ENUM(IB_QPT_UD);
TRACE_DEFINE_ENUM(IB_QPT_XRC_INI);
TRACE_DEFINE_ENUM(IB_QPT_XRC_TGT);
#define sroce_show_qp_type(x) \
	__print_symbolic(x, \
			 { IB_QPT_SMI, "SMI" }, \
			 { IB_QPT_GSI, "GSI" }, \
			 { IB_QPT_RC, "RC" }, \
			 { IB_QPT_UC, "UC" }, \
			 { IB_QPT_UD, "UD" }, \
			 { IB_QPT_XRC_INI, "XRC_INI" }, \
			 { IB_QPT_XRC_TGT, "XRC_TGT" })

TRACE_DEFINE_ENUM(IB_WC_SUCCESS);
TRACE_DEFINE_ENUM(IB_WC_LOC_LEN_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_QP_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_EEC_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_PROT_ERR);
TRACE_DEFINE_ENUM(IB_WC_WR_FLUSH_ERR);
TRACE_DEFINE_ENUM(IB_WC_MW_BIND_ERR);
TRACE_DEFINE_ENUM(IB_WC_BAD_RESP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_INV_REQ_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(IB_WC_RNR_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_RDD_VIOL_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_INV_RD_REQ_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ABORT_ERR);
TRACE_DEFINE_ENUM(IB_WC_INV_EECN_ERR);
TRACE_DEFINE_ENUM(IB_WC_INV_EEC_STATE_ERR);
TRACE_DEFINE_ENUM(IB_WC_FATAL_ERR);
TRACE_DEFINE_ENUM(IB_WC_RESP_TIMEOUT_ERR);
TRACE_DEFINE_ENUM(IB_WC_GENERAL_ERR);
#define sroce_show_wc_status(x) \
	__print_symbolic(x, \
			 { IB_WC_SUCCESS, "SUCCESS" }, \
			 { IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR" }, \
			 { IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" }, \
			 { IB_WC_LOC_EEC_OP_ERR, "LOC_EEC_OP_ERR" }, \
			 { IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR" }, \
			 { IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" }, \
			 { IB_WC_MW_BIND_ERR, "MW_BIND_ERR" }, \
			 { IB_WC_BAD_RESP_ERR, "BAD_RESP_ERR" }, \
			 { IB_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR" }, \
			 { IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" }, \
			 { IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" }, \
			 { IB_WC_REM_OP_ERR, "REM_OP_ERR" }, \
			 { IB_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR" }, \
			 { IB_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR" }, \
			 { IB_WC_LOC_RDD_VIOL_ERR, "LOC_RDD_VIOL_ERR" }, \
			 { IB_WC_REM_INV_RD_REQ_ERR, "REM_INV_RD_REQ_ERR" }, \
			 { IB_WC_REM_ABORT_ERR, "REM_ABORT_ERR" }, \
			 { IB_WC_INV_EECN_ERR, "INV_EECN_ERR" }, \
			 { IB_WC_INV_EEC_STATE_ERR, "INV_EEC_STATE_ERR" }, \
			 { IB_WC_FATAL_ERR, "FATAL_ERR" }, \
			 { IB_WC_RESP_TIMEOUT_ERR, "RESP_TIMEOUT_ERR" }, \
			 { IB_WC_GENERAL_ERR, "GENERAL_ERR" })

/* Completion opcodes; FLUSH and ATOMIC_WRITE came in 6.2 (sroce_compat.h). */
TRACE_DEFINE_ENUM(IB_WC_SEND);
TRACE_DEFINE_ENUM(IB_WC_RDMA_WRITE);
TRACE_DEFINE_ENUM(IB_WC_RDMA_READ);
TRACE_DEFINE_ENUM(IB_WC_COMP_SWAP);
TRACE_DEFINE_ENUM(IB_WC_FETCH_ADD);
TRACE_DEFINE_ENUM(IB_WC_BIND_MW);
TRACE_DEFINE_ENUM(IB_WC_LOCAL_INV);
TRACE_DEFINE_ENUM(IB_WC_FLUSH);
TRACE_DEFINE_ENUM(IB_WC_ATOMIC_WRITE);
TRACE_DEFINE_ENUM(IB_WC_REG_MR);
TRACE_DEFINE_ENUM(IB_WC_RECV);
TRACE_DEFINE_ENUM(IB_WC_RECV_RDMA_WITH_IMM);
#define sroce_show_wc_opcode(x) \
	__print_symbolic(x, \
			 { IB_WC_SEND, "SEND" }, \
			 { IB_WC_RDMA_WRITE, "RDMA_WRITE" }, \
			 { IB_WC_RDMA_READ, "RDMA_READ" }, \
			 { IB_WC_COMP_SWAP, "COMP_SWAP" }, \
			 { IB_WC_FETCH_ADD, "FETCH_ADD" }, \
			 { IB_WC_BIND_MW, "BIND_MW" }, \
			 { IB_WC_LOCAL_INV, "LOCAL_INV" }, \
			 { IB_WC_FLUSH, "FLUSH" }, \
			 { IB_WC_ATOMIC_WRITE, "ATOMIC_WRITE" }, \
			 { IB_WC_REG_MR, "REG_MR" }, \
			 { IB_WC_RECV, "RECV" }, \
			 { IB_WC_RECV_RDMA_WITH_IMM, "RECV_RDMA_WITH_IMM" })

TRACE_DEFINE_ENUM(SROCE_NAK_PSN_SEQ_ERR);
TRACE_DEFINE_ENUM(SROCE_NAK_INVALID_REQ);
TRACE_DEFINE_ENUM(SROCE_NAK_REM_ACCESS);
TRACE_DEFINE_ENUM(SROCE_NAK_REM_OP_ERR);
TRACE_DEFINE_ENUM(SROCE_NAK_INVALID_RD_REQ);
#define sroce_show_nak(x) \
	__print_symbolic(x, \
			 { SROCE_NAK_PSN_SEQ_ERR, "PSN_SEQ_ERR" }, \
			 { SROCE_NAK_INVALID_REQ, "INVALID_REQ" }, \
			 { SROCE_NAK_REM_ACCESS, "REM_ACCESS" }, \
			 { SROCE_NAK_REM_OP_ERR, "REM_OP_ERR" }, \
			 { SROCE_NAK_INVALID_RD_REQ, "INVALID_RD_REQ" })

TRACE_DEFINE_ENUM(SROCE_REWIND_TIMEOUT);
TRACE_DEFINE_ENUM(SROCE_REWIND_SEQ_NAK);
TRACE_DEFINE_ENUM(SROCE_REWIND_RNR_NAK);
TRACE_DEFINE_ENUM(SROCE_REWIND_LOST_RESPONSE);
TRACE_DEFINE_ENUM(SROCE_REWIND_READ_GAP);
TRACE_DEFINE_ENUM(SROCE_REWIND_ODP);
TRACE_DEFINE_ENUM(SROCE_REWIND_PROBE_PAST);
TRACE_DEFINE_ENUM(SROCE_REWIND_RESUME);
#define sroce_show_rewind(x) \
	__print_symbolic(x, \
			 { SROCE_REWIND_TIMEOUT, "TIMEOUT" }, \
			 { SROCE_REWIND_SEQ_NAK, "SEQ_NAK" }, \
			 { SROCE_REWIND_RNR_NAK, "RNR_NAK" }, \
			 { SROCE_REWIND_LOST_RESPONSE, "LOST_RESPONSE" }, \
			 { SROCE_REWIND_READ_GAP, "READ_GAP" }, \
			 { SROCE_REWIND_ODP, "ODP" }, \
			 { SROCE_REWIND_PROBE_PAST, "PROBE_PAST" }, \
			 { SROCE_REWIND_RESUME, "RESUME" })

/* QPs: state ----------------------------------------------------------- */

/*
 * A state change: modify_qp (with state_lock's value of the state it
 * left, which the data path may have changed since the caller's), or the
 * data path moving the QP to ERR.
 */
TRACE_EVENT(sroce_qp_state,
	TP_PROTO(const struct sroce_qp *qp, enum ib_qp_state from,
		 enum ib_qp_state to),
	TP_ARGS(qp, from, to),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, type)
		__field(u32, from)
		__field(u32, to)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->type = qp->ibqp.qp_type;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("%s qpn %u %s %s -> %s", __entry->dev, __entry->qpn,
		  sroce_show_qp_type(__entry->type),
		  sroce_show_qp_state(__entry->from),
		  sroce_show_qp_state(__entry->to))
);

DECLARE_EVENT_CLASS(sroce_qp_life,
	TP_PROTO(const struct sroce_qp *qp, enum ib_qp_state state),
	TP_ARGS(qp, state),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, type)
		__field(u32, state)
		__field(u32, sq_entries)
		__field(u8, user)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->type = qp->ibqp.qp_type;
		__entry->state = state;
		__entry->sq_entries = qp->sq.entries;
		__entry->user = qp->is_user;
	),
	TP_printk("%s qpn %u %s %s sq %u %s", __entry->dev, __entry->qpn,
		  sroce_show_qp_type(__entry->type),
		  sroce_show_qp_state(__entry->state), __entry->sq_entries,
		  __entry->user ? "user" : "kernel")
);

/* A QP exists (its number published), in RESET. */
DEFINE_EVENT(sroce_qp_life, sroce_qp_create,
	TP_PROTO(const struct sroce_qp *qp, enum ib_qp_state state),
	TP_ARGS(qp, state));

/* A QP goes, in the state it was left in. */
DEFINE_EVENT(sroce_qp_life, sroce_qp_destroy,
	TP_PROTO(const struct sroce_qp *qp, enum ib_qp_state state),
	TP_ARGS(qp, state));

/* Requester and completer ---------------------------------------------- */

/*
 * The retransmission timer found no progress for a whole timeout (and
 * sent packets unanswered): a retry is used up and the requester goes
 * back, or none was left (@exceeded) and the oldest WQE fails. Under
 * sq_lock.
 */
TRACE_EVENT(sroce_retrans_timeout,
	TP_PROTO(const struct sroce_qp *qp, bool exceeded),
	TP_ARGS(qp, exceeded),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, una)
		__field(u32, sent_psn)
		__field(u8, retry_left)
		__field(u8, exceeded)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->una = qp->comp.una;
		__entry->sent_psn = READ_ONCE(qp->req.sent_psn);
		__entry->retry_left = qp->comp.retry_left;
		__entry->exceeded = exceeded;
	),
	TP_printk("%s qpn %u una %u sent %u retry_left %u%s", __entry->dev,
		  __entry->qpn, __entry->una, __entry->sent_psn,
		  __entry->retry_left,
		  __entry->exceeded ? " exceeded" : "")
);

/*
 * The requester moves from PSN @from to @to (go-back-N) for the reason
 * the completer gave; RESUME goes forward again, back to where a timeout
 * found it, when the probe's answer showed the timeout was spurious.
 * Under sq_lock, in the requester's pass.
 */
TRACE_EVENT(sroce_req_rewind,
	TP_PROTO(const struct sroce_qp *qp, u32 from, u32 to, u8 why),
	TP_ARGS(qp, from, to, why),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, from)
		__field(u32, to)
		__field(u32, una)
		__field(u8, why)
		__field(u8, retry_left)
		__field(u8, rnr_left)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->from = from;
		__entry->to = to;
		__entry->una = qp->comp.una;
		__entry->why = why;
		__entry->retry_left = qp->comp.retry_left;
		__entry->rnr_left = qp->comp.rnr_left;
	),
	TP_printk("%s qpn %u psn %u -> %u una %u %s retry_left %u rnr_left %u",
		  __entry->dev, __entry->qpn, __entry->from, __entry->to,
		  __entry->una, sroce_show_rewind(__entry->why),
		  __entry->retry_left, __entry->rnr_left)
);

/*
 * A NAK (sequence or error) or RNR NAK reached the completer, for request
 * PSN @psn; @type is SROCE_AETH_NAK or SROCE_AETH_RNR_NAK, @value the
 * code or the RNR timer field. Under sq_lock.
 */
TRACE_EVENT(sroce_nak_rcvd,
	TP_PROTO(const struct sroce_qp *qp, u8 type, u8 value, u32 psn),
	TP_ARGS(qp, type, value, psn),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, una)
		__field(u8, rnr)
		__field(u8, value)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->psn = psn;
		__entry->una = qp->comp.una;
		__entry->rnr = type == SROCE_AETH_RNR_NAK;
		__entry->value = value;
	),
	TP_printk("%s qpn %u psn %u una %u %s %u (%s)", __entry->dev,
		  __entry->qpn, __entry->psn, __entry->una,
		  __entry->rnr ? "RNR_NAK" : "NAK", __entry->value,
		  __entry->rnr ? "timer" : sroce_show_nak(__entry->value))
);

/*
 * An RNR NAK was taken: the requester waits @usecs before it resends
 * from @psn, with @rnr_left RNR retries left (7 on an rnr_retry of 7:
 * for ever). Under sq_lock.
 */
TRACE_EVENT(sroce_rnr_backoff,
	TP_PROTO(const struct sroce_qp *qp, u32 psn, u8 timer, u32 usecs),
	TP_ARGS(qp, psn, timer, usecs),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, usecs)
		__field(u8, timer)
		__field(u8, rnr_left)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->psn = psn;
		__entry->usecs = usecs;
		__entry->timer = timer;
		__entry->rnr_left = qp->comp.rnr_left;
	),
	TP_printk("%s qpn %u psn %u wait %u us (timer %u) rnr_left %u",
		  __entry->dev, __entry->qpn, __entry->psn, __entry->usecs,
		  __entry->timer, __entry->rnr_left)
);

/* Responder ------------------------------------------------------------- */

/*
 * The responder queued a NAK for the request at PSN @psn: a sequence NAK
 * (it expected epsn, which the NAK carries; the request came later) or an
 * error NAK (carrying @psn), after which the QP goes to ERR. Under
 * resp_lock.
 */
TRACE_EVENT(sroce_nak_sent,
	TP_PROTO(const struct sroce_qp *qp, u8 code, u32 psn),
	TP_ARGS(qp, code, psn),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, epsn)
		__field(u8, code)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->psn = psn;
		__entry->epsn = qp->resp.psn;
		__entry->code = code;
	),
	TP_printk("%s qpn %u psn %u epsn %u NAK %s", __entry->dev,
		  __entry->qpn, __entry->psn, __entry->epsn,
		  sroce_show_nak(__entry->code))
);

/*
 * The responder queued an RNR NAK for request PSN @psn: no receive WQE
 * was posted, or (@odp) a page of the target was being faulted in.
 * @timer is the QP's min_rnr_timer field, @usecs what it stands for.
 * Under resp_lock.
 */
TRACE_EVENT(sroce_rnr_nak_sent,
	TP_PROTO(const struct sroce_qp *qp, u32 psn, u8 timer, u32 usecs,
		 bool odp),
	TP_ARGS(qp, psn, timer, usecs, odp),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, usecs)
		__field(u8, timer)
		__field(u8, odp)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->psn = psn;
		__entry->usecs = usecs;
		__entry->timer = timer;
		__entry->odp = odp;
	),
	TP_printk("%s qpn %u psn %u RNR_NAK timer %u (%u us) %s",
		  __entry->dev, __entry->qpn, __entry->psn, __entry->timer,
		  __entry->usecs, __entry->odp ? "odp fault" : "no receive WQE")
);

/* Completions ----------------------------------------------------------- */

/*
 * A completion with an error status enters CQ @cq (flushes included:
 * WR_FLUSH_ERR), whatever produced it; sroce_cq_post() is the one way in.
 * Recorded before the CQ takes it: a CQ that overflowed drops it (its
 * resource details count those). The condition is evaluated only while
 * the event is enabled.
 */
TRACE_EVENT_CONDITION(sroce_cqe_error,
	TP_PROTO(const struct sroce_cq *cq, const struct sroce_cqe *cqe),
	TP_ARGS(cq, cqe),
	TP_CONDITION(cqe->status != IB_WC_SUCCESS),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u64, wr_id)
		__field(u32, cqn)
		__field(u32, qpn)
		__field(u32, status)
		__field(u32, opcode)
		__field(u32, vendor_err)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(cq->ibcq.device);
		__entry->wr_id = cqe->wr_id;
		__entry->cqn = cq->cqn;
		__entry->qpn = cqe->qp_num;
		__entry->status = cqe->status;
		__entry->opcode = cqe->opcode;
		__entry->vendor_err = cqe->vendor_err;
	),
	TP_printk("%s cqn %u qpn %u wr_id 0x%llx %s %s vendor_err %u",
		  __entry->dev, __entry->cqn, __entry->qpn,
		  (unsigned long long)__entry->wr_id,
		  sroce_show_wc_status(__entry->status),
		  sroce_show_wc_opcode(__entry->opcode), __entry->vendor_err)
);

/* ODP ------------------------------------------------------------------- */

/*
 * A fault of [@iova, @iova + @len) of ODP (or dma-buf) MR @mr is over:
 * asked for by the data path (from the ODP workqueue) or by advise_mr;
 * @fault false only records what is present. @ret 0, or -EFAULT (not
 * mapped), -EPERM (read-only for a write), another errno. Process
 * context.
 */
TRACE_EVENT(sroce_odp_fault,
	TP_PROTO(const struct sroce_mr *mr, u64 iova, u64 len, bool write,
		 bool fault, int ret, u64 ns),
	TP_ARGS(mr, iova, len, write, fault, ret, ns),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u64, iova)
		__field(u64, len)
		__field(u64, ns)
		__field(u32, key)
		__field(int, ret)
		__field(u8, write)
		__field(u8, fault)
		__field(u8, implicit)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(mr->ibmr.device);
		__entry->iova = iova;
		__entry->len = len;
		__entry->ns = ns;
		__entry->key = mr->key;
		__entry->ret = ret;
		__entry->write = write;
		__entry->fault = fault;
		__entry->implicit = mr->odp && mr->odp->implicit;
	),
	TP_printk("%s key 0x%x%s iova 0x%llx len %llu %s%s ret %d %llu ns",
		  __entry->dev, __entry->key,
		  __entry->implicit ? " implicit" : "",
		  (unsigned long long)__entry->iova,
		  (unsigned long long)__entry->len,
		  __entry->write ? "write" : "read",
		  __entry->fault ? "" : " no-fault", __entry->ret,
		  (unsigned long long)__entry->ns)
);

/*
 * Congestion control (sroce_cc.c). The notification point sent a CNP for
 * a CE-marked packet to @qp, to its peer QP @dqpn.
 */
TRACE_EVENT(sroce_cnp_sent,
	TP_PROTO(const struct sroce_qp *qp, u32 dqpn),
	TP_ARGS(qp, dqpn),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, dqpn)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->dqpn = dqpn;
	),
	TP_printk("%s qpn %u CNP to qpn %u", __entry->dev, __entry->qpn,
		  __entry->dqpn)
);

/*
 * A CNP for @qp arrived and its reaction point handled it; @cut: it cut
 * the rate (else it only counted for alpha: within the monitor period).
 */
TRACE_EVENT(sroce_cnp_rcvd,
	TP_PROTO(const struct sroce_qp *qp, bool cut),
	TP_ARGS(qp, cut),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u8, cut)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->cut = cut;
	),
	TP_printk("%s qpn %u CNP%s", __entry->dev, __entry->qpn,
		  __entry->cut ? " rate cut" : "")
);

/*
 * @qp's DCQCN rates changed: current @rc and target @rt in kb/s, @alpha in
 * 1/1024; !@limited: back at the maximum, the pacer out of the path. Under
 * qp->cc.lock.
 */
TRACE_EVENT(sroce_cc_rate,
	TP_PROTO(const struct sroce_qp *qp, u32 rc, u32 rt, u32 alpha,
		 bool limited),
	TP_ARGS(qp, rc, rt, alpha, limited),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, qpn)
		__field(u32, rc)
		__field(u32, rt)
		__field(u32, alpha)
		__field(u8, limited)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(qp->ibqp.device);
		__entry->qpn = qp->qpn;
		__entry->rc = rc;
		__entry->rt = rt;
		__entry->alpha = alpha;
		__entry->limited = limited;
	),
	TP_printk("%s qpn %u rate %u kb/s target %u kb/s alpha %u/1024%s",
		  __entry->dev, __entry->qpn, __entry->rc, __entry->rt,
		  __entry->alpha, __entry->limited ? "" : " unlimited")
);

/* Receive --------------------------------------------------------------- */

TRACE_DEFINE_ENUM(SROCE_CNT_RX_DROP_NO_QP);
TRACE_DEFINE_ENUM(SROCE_CNT_RX_DROP_MALFORMED);
TRACE_DEFINE_ENUM(SROCE_CNT_RX_DROP_ICRC);
#define sroce_show_rx_drop(x) \
	__print_symbolic(x, \
			 { SROCE_CNT_RX_DROP_NO_QP, "no QP" }, \
			 { SROCE_CNT_RX_DROP_MALFORMED, "malformed" }, \
			 { SROCE_CNT_RX_DROP_ICRC, "bad ICRC" })

/*
 * The receive path dropped a packet whose transport headers it had parsed,
 * before any QP took it: @why is the counter it went to (rx_drop_no_qp:
 * no such QP, or a multicast group with no QP attached; rx_drop_malformed:
 * P_Key, a transport the QP does not run; rx_drop_icrc). Names what the
 * counters cannot: the opcode, destination QP and PSN. Softirq.
 */
TRACE_EVENT(sroce_rx_drop,
	TP_PROTO(const struct sroce_dev *sdev, const struct sroce_pkt *pkt,
		 enum sroce_counter why),
	TP_ARGS(sdev, pkt, why),
	TP_STRUCT__entry(
		SROCE_TP_DEV
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(u8, why)
	),
	TP_fast_assign(
		SROCE_TP_DEV_SET(&sdev->ibdev);
		__entry->dqpn = pkt->dqpn;
		__entry->psn = pkt->psn;
		__entry->opcode = pkt->opcode;
		__entry->why = why;
	),
	TP_printk("%s opcode 0x%02x dqpn %u psn %u dropped: %s",
		  __entry->dev, __entry->opcode, __entry->dqpn, __entry->psn,
		  sroce_show_rx_drop(__entry->why))
);

#endif /* SROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE sroce_trace
#include <trace/define_trace.h>
