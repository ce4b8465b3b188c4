// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// qp_ex.cpp - the extended send API (ibv_wr_post(3)) on an ibv_qp_ex:
// ibv_wr_start / ibv_wr_complete / ibv_wr_abort around WR builders
// (ibv_wr_send, ibv_wr_rdma_write, ...) and setters (ibv_wr_set_sge,
// ibv_wr_set_inline_data, ibv_wr_set_ud_addr, ...).
//
// The WQEs are the ones ibv_post_send writes, in the same SQ ring, by
// the same send_wqe_builder (wqe.hpp):
//
//   ibv_wr_start      takes sq_lock (ibv_post_send's), notes the free
//                     slots; a QP whose state takes no sends (RESET,
//                     INIT, RTR: post_send_ok) fails the batch at once
//   builder           finishes the previous WR, then starts a WQE in the
//                     next free slot: wr_id and wr_flags from the
//                     ibv_qp_ex, the opcode's own fields
//   setter            adds to the WR the last builder started
//   ibv_wr_complete   finishes the last WR; if nothing failed, publishes
//                     every WQE with one release store of prod, reads the
//                     ring flags as ibv_post_send does, unlocks, and
//                     rings the doorbell only on NEED_KICK or ERROR
//   ibv_wr_abort      unlocks: prod never moved, so the kernel never sees
//                     the slots written since ibv_wr_start
//
// The builders and setters return nothing, so the first error of a batch
// is kept and returned by ibv_wr_complete, which then publishes nothing
// (everything after the error is skipped):
//   EINVAL      (from ibv_wr_start) the QP is in RESET, INIT or RTR, as
//               ibv_post_send; an empty batch too, as rxe's doorbell
//   ENOMEM      more WRs than free SQ slots (as ibv_post_send, and mlx5's
//               wr_complete)
//   EINVAL      an invalid WR: an opcode not in the QP's send_ops_flags
//               (so also one its type cannot carry), a wr_flags bit we do
//               not implement (IP_CSUM) or INLINE on READ/atomics/local
//               operations, too many SGEs, too much inline data, a
//               misaligned atomic or one without an 8-byte buffer, a
//               setter without a builder before it, wr_set_ud_addr on a
//               connected QP or without an AH, a UD WR without
//               wr_set_ud_addr, wr_set_xrc_srqn on a QP other than
//               XRC_SEND or with a number over 24 bits, an XRC_SEND WR
//               that goes to the wire (not LOCAL_INV or BIND_MW) without
//               wr_set_xrc_srqn, BIND_MW without a window
//               (ibv_post_send's EINVAL for the same WRs, see wqe.hpp)
//   EINVAL      ibv_wr_atomic_write to a misaligned address, ibv_wr_flush
//               with a length over 2^31 or an unknown type or level
//   EOPNOTSUPP  builders of operations this device has no send_ops_flags
//               bit for (TSO; ATOMIC_WRITE and FLUSH where the kernel
//               lacks them); installed so that a call fails instead of
//               jumping to NULL
// (rxe's ENOSPC for a full queue or too many SGEs is not used: ENOMEM and
// EINVAL keep ibv_wr_complete's answers the same as ibv_post_send's.)
//
// wr_flags: IBV_SEND_SIGNALED, SOLICITED and FENCE become the WQE's
// flags; IBV_SEND_INLINE means what it means for ibv_post_send - the
// buffers given to ibv_wr_set_sge / ibv_wr_set_sge_list are copied into
// the WQE (addresses used as pointers, lkeys ignored).  The inline
// setters copy whatever wr_flags says.
//
// Setters may come in any order after their builder; a second data
// setter replaces the first one's data.  Nothing here allocates or makes
// a system call other than the doorbell.
#include <errno.h>
#include <stdint.h>

#include "ring.hpp"
#include "sroce.hpp"
#include "wqe.hpp"

namespace sroce {

// send_ops_flags and our opcode bit sets use the same bit for an opcode.
constexpr bool same_bit(uint64_t qp_ex_flag, unsigned wr_opcode)
{
	return qp_ex_flag == wr_bit(wr_opcode);
}
static_assert(same_bit(IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE));
static_assert(same_bit(IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM));
static_assert(same_bit(IBV_QP_EX_WITH_SEND, IBV_WR_SEND));
static_assert(same_bit(IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM));
static_assert(same_bit(IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ));
static_assert(same_bit(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP));
static_assert(same_bit(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD));
static_assert(same_bit(IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV));
static_assert(same_bit(IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW));
static_assert(same_bit(IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV));

// IBTA 1.5's opcodes have send_ops_flags bits of their own.
static uint64_t ext_ops_to_qp_ex(uint32_t ext)
{
	uint64_t flags = 0;

	if (ext & kAtomicWriteOpcode)
		flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
#if SROCE_RDMA_CORE >= 45
	if (ext & kFlushOpcode)
		flags |= IBV_QP_EX_WITH_FLUSH;
#endif
	return flags;
}

static uint32_t qp_ex_to_ext_ops(uint64_t flags)
{
	uint32_t ops = 0;

	if (flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ops |= kAtomicWriteOpcode;
#if SROCE_RDMA_CORE >= 45
	if (flags & IBV_QP_EX_WITH_FLUSH)
		ops |= kFlushOpcode;
#endif
	return ops;
}

// RC: every opcode of ibv_post_send, and ATOMIC WRITE and FLUSH where the
// kernel has them (ctx_flags); XRC_SEND: RC's, without those two; UC: no
// READ, atomics or SEND with Invalidate; UD: SEND and SEND with immediate
// (wqe.hpp's tables).
uint64_t supported_send_ops(enum ibv_qp_type qp_type, uint32_t ctx_flags)
{
	return send_opcodes_for(qp_type) |
	       ext_ops_to_qp_ex(ext_send_opcodes(qp_type, ctx_flags));
}

// ---- batch state ------------------------------------------------------------------------

// Keep the first error; the WR being built is dropped.
static void wr_fail(qp *q, int err)
{
	if (!q->wr.err)
		q->wr.err = err;
	q->wr.open = false;
}

// Finish the WR the last builder started, if it is still open.
static void close_wr(qp *q)
{
	wr_batch &b = q->wr;

	if (!b.open)
		return;
	if (b.need_ud || b.need_xrc) {
		wr_fail(q, EINVAL);
		return;
	}
	b.open = false;
	int ret = b.wqe.finish();
	if (ret)
		wr_fail(q, ret);
}

// Start a WQE for a builder in the next free slot.  nullptr when the
// batch has failed (now or before): the builder then does nothing.
static send_wqe_builder *begin_wr(struct ibv_qp_ex *ibqp, unsigned opcode)
{
	qp *q = to_sqp(ibqp);
	wr_batch &b = q->wr;
	uint16_t wqe_flags = 0;

	close_wr(q);
	if (b.err)
		return nullptr;
	if (!(q->send_ops & wr_bit(opcode)) ||
	    send_flags_to_wqe(ibqp->wr_flags, opcode, &wqe_flags)) {
		wr_fail(q, EINVAL);
		return nullptr;
	}
	if (b.n >= b.room) {
		// The kernel may have completed WQEs since wr_start.
		b.room = q->sq.free_slots();
		if (b.n >= b.room) {
			wr_fail(q, ENOMEM);
			return nullptr;
		}
	}
	b.wqe.start(q->sq.slot(b.n), ibqp->wr_id, opcode, wqe_flags);
	b.n++;
	b.open = true;
	b.need_ud = q->scaps.qp_type == IBV_QPT_UD;
	// ibv_wr_post(3): the QP setter is mandatory for every operation
	// but the local ones (LOCAL_INV, BIND_MW), which have no target.
	b.need_xrc = q->scaps.qp_type == IBV_QPT_XRC_SEND &&
		     !(kLocalOpcodes & wr_bit(opcode));
	b.inline_sges = wqe_flags & SROCE_WQE_F_INLINE;
	return &b.wqe;
}

// A setter's WR: the open one, else EINVAL (no builder before it) unless
// the batch has already failed.
static send_wqe_builder *current_wr(qp *q)
{
	if (q->wr.open)
		return &q->wr.wqe;
	wr_fail(q, EINVAL);
	return nullptr;
}

static void check(qp *q, int ret)
{
	if (ret)
		wr_fail(q, ret);
}

// ---- start / complete / abort ---------------------------------------------------------

static void wr_start(struct ibv_qp_ex *ibqp)
{
	qp *q = to_sqp(ibqp);

	pthread_spin_lock(&q->sq_lock);
	q->wr.room = q->sq.free_slots();
	q->wr.n = 0;
	// The state is read once per batch: a failed one skips every
	// builder and setter, and ibv_wr_complete returns EINVAL.
	q->wr.err = post_send_ok(*q) ? 0 : EINVAL;
	q->wr.open = false;
	q->wr.need_ud = false;
	q->wr.need_xrc = false;
	q->wr.inline_sges = false;
}

static int wr_complete(struct ibv_qp_ex *ibqp)
{
	qp *q = to_sqp(ibqp);
	wr_batch &b = q->wr;
	bool kick = false;

	close_wr(q);
	int ret = b.err;
	if (!ret && b.n) {
		q->sq.publish(b.n);
		kick = sq_wants_doorbell(q->sq);
	}
	b.n = 0;
	pthread_spin_unlock(&q->sq_lock);

	// As ibv_post_send: a failed doorbell is reported, the WQEs stay
	// posted (the kernel picks them up at its next kick).
	if (kick)
		ret = send_doorbell(&q->vqp.qp);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *ibqp)
{
	qp *q = to_sqp(ibqp);

	q->wr.n = 0;
	q->wr.open = false;
	pthread_spin_unlock(&q->sq_lock);
}

// ---- builders -------------------------------------------------------------------------

// No send_ops_flags bit of ours (or of this kernel's) enables these.
static void wr_unsupported(qp *q)
{
	close_wr(q);
	wr_fail(q, EOPNOTSUPP);
}


static void wr_send(struct ibv_qp_ex *ibqp)
{
	begin_wr(ibqp, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_SEND_WITH_IMM))
		w->set_imm_data(imm_data);
}

static void wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_SEND_WITH_INV))
		w->set_invalidate_rkey(invalidate_rkey);
}

static void wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			  uint64_t remote_addr)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_RDMA_WRITE))
		w->set_rdma(remote_addr, rkey);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM)) {
		w->set_rdma(remote_addr, rkey);
		w->set_imm_data(imm_data);
	}
}

static void wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			 uint64_t remote_addr)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_RDMA_READ))
		w->set_rdma(remote_addr, rkey);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP))
		check(to_sqp(ibqp), w->set_atomic(remote_addr, rkey, compare, swap));
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD))
		check(to_sqp(ibqp), w->set_atomic(remote_addr, rkey, add, 0));
}

// The 8 bytes go inline: the caller may reuse them when this returns.
static void wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			    uint64_t remote_addr, const void *atomic_wr)
{
	qp *q = to_sqp(ibqp);

	if (!(q->scaps.ext_opcodes & kAtomicWriteOpcode)) {
		wr_unsupported(q);
		return;
	}
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_ATOMIC_WRITE)) {
		check(q, w->set_atomic_write(remote_addr, rkey));
		if (!atomic_wr)
			wr_fail(q, EINVAL);
		else
			check(q, w->add_inline(q->scaps, atomic_wr, 8));
	}
}

#if SROCE_RDMA_CORE >= 45
static void wr_flush(struct ibv_qp_ex *ibqp, uint32_t rkey,
		     uint64_t remote_addr, size_t len, uint8_t type,
		     uint8_t level)
{
	qp *q = to_sqp(ibqp);

	if (!(q->scaps.ext_opcodes & kFlushOpcode)) {
		wr_unsupported(q);
		return;
	}
	if (send_wqe_builder *w = begin_wr(ibqp, SROCE_WR_FLUSH))
		check(q, w->set_flush(remote_addr, rkey, len, type, level));
}
#endif

static void wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_LOCAL_INV))
		w->set_invalidate_rkey(invalidate_rkey);
}

// Encoded in the uapi's bind_mw layout; validating and executing it
// windows yet (max_mw 0): validating and executing it is the kernel's.
static void wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *bind_info)
{
	if (send_wqe_builder *w = begin_wr(ibqp, IBV_WR_BIND_MW))
		check(to_sqp(ibqp), w->set_bind_mw(mw, rkey, bind_info));
}


static void wr_send_tso(struct ibv_qp_ex *ibqp, void *, uint16_t, uint16_t)
{
	wr_unsupported(to_sqp(ibqp));
}

// ---- setters ----------------------------------------------------------------------------

static void set_sges(qp *q, const struct ibv_sge *list, size_t n)
{
	send_wqe_builder *w = current_wr(q);
	if (!w)
		return;
	if (n && !list) {
		wr_fail(q, EINVAL);
		return;
	}
	check(q, q->wr.inline_sges ? w->set_inline_sge_list(q->scaps, list, n)
				   : w->set_sge_list(q->scaps, list, n));
}

static void wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	const struct ibv_sge sge = {addr, length, lkey};

	set_sges(to_sqp(ibqp), &sge, 1);
}

static void wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	set_sges(to_sqp(ibqp), sg_list, num_sge);
}

static void set_inline(qp *q, const struct ibv_data_buf *list, size_t n)
{
	send_wqe_builder *w = current_wr(q);
	if (!w)
		return;
	if (n && !list) {
		wr_fail(q, EINVAL);
		return;
	}
	check(q, w->set_inline_list(q->scaps, list, n));
}

static void wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
			       size_t length)
{
	const struct ibv_data_buf buf = {addr, length};

	set_inline(to_sqp(ibqp), &buf, 1);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *ibqp, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	set_inline(to_sqp(ibqp), buf_list, num_buf);
}

static void wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ibah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	qp *q = to_sqp(ibqp);
	send_wqe_builder *w = current_wr(q);

	if (!w)
		return;
	if (q->scaps.qp_type != IBV_QPT_UD || !ibah) {
		wr_fail(q, EINVAL);
		return;
	}
	w->set_ud(to_sah(ibah)->ah_num, remote_qpn, remote_qkey);
	q->wr.need_ud = false;
}

// The remote SRQ of the open WR.  Like wr_set_ud_addr on a connected QP,
// this setter on a QP of another type is an invalid WR (EINVAL), and so
// is a number the XRCETH cannot carry.
static void wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	qp *q = to_sqp(ibqp);
	send_wqe_builder *w = current_wr(q);

	if (!w)
		return;
	if (q->scaps.qp_type != IBV_QPT_XRC_SEND || remote_srqn > kXrcSrqnMax) {
		wr_fail(q, EINVAL);
		return;
	}
	w->set_xrc_srqn(remote_srqn);
	q->wr.need_xrc = false;
}

// ---- creation -----------------------------------------------------------------------------

void init_qp_ex(qp *q, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &q->vqp.qp_ex;

	q->send_ops = (static_cast<uint32_t>(send_ops_flags) &
		       send_opcodes_for(q->scaps.qp_type)) |
		      (qp_ex_to_ext_ops(send_ops_flags) & q->scaps.ext_opcodes);
	q->wr = wr_batch();
	x->comp_mask = 0;
	x->wr_id = 0;
	x->wr_flags = 0;
	// Every builder, enabled or not: one that send_ops_flags did not
	// enable fails the batch with EINVAL instead of being a NULL call.
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
#if SROCE_RDMA_CORE >= 45
	x->wr_flush = wr_flush;
#endif
	// ibv_qp_to_qp_ex() answers only for QPs marked so.
	q->vqp.comp_mask |= VERBS_QP_EX;
}

} // namespace sroce
