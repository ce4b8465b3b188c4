// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// wqe.hpp - writing send and receive WQEs into ring slots
// (uapi/sroce-abi.h: struct sroce_send_wqe, struct sroce_recv_wqe).
//
// A slot is shared memory the kernel reads after we publish it, so the
// builders here only ever write to it: counts and lengths are kept
// privately and stored once, never read back from the slot to index with.
// The whole header is rewritten for every WQE, so reserved fields reach
// the kernel as zero.
//
// Two front ends share the slot-filling code:
//   encode_send_wqe / encode_recv_wqe  ibv_post_send / ibv_post_recv
//                                      (struct ibv_send_wr / ibv_recv_wr)
//   send_wqe_builder                   the same steps one call at a time,
//                                      for ibv_wr_start / ibv_wr_send /
//                                      ibv_wr_set_sge / ... (ibv_qp_ex)
//
// Errors are positive errno values, as ibv_post_send returns them.
#ifndef SROCE_WQE_HPP
#define SROCE_WQE_HPP

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <sroce-abi.h>

#include "ring.hpp"

namespace sroce {

// ---- the uapi layouts written here ------------------------------------------------

static_assert(sizeof(struct sroce_send_wqe) == SROCE_SEND_WQE_HDR);
static_assert(offsetof(struct sroce_send_wqe, ex) == 16);
static_assert(offsetof(struct sroce_send_wqe, xrc_srqn) == 20);
static_assert(offsetof(struct sroce_send_wqe, wr) == 24);
static_assert(sizeof(struct sroce_recv_wqe) == SROCE_RECV_WQE_HDR);
static_assert(sizeof(struct sroce_sge) == 16);
static_assert(SROCE_SEND_WQE_HDR % alignof(struct sroce_sge) == 0 &&
	      SROCE_RECV_WQE_HDR % alignof(struct sroce_sge) == 0);

// The uapi makes the WQE opcode the ibv_wr_opcode value itself.
constexpr bool same_value(unsigned a, unsigned b)
{
	return a == b;
}
static_assert(same_value(IBV_WR_RDMA_WRITE, SROCE_WR_RDMA_WRITE));
static_assert(same_value(IBV_WR_RDMA_WRITE_WITH_IMM, SROCE_WR_RDMA_WRITE_WITH_IMM));
static_assert(same_value(IBV_WR_SEND, SROCE_WR_SEND));
static_assert(same_value(IBV_WR_SEND_WITH_IMM, SROCE_WR_SEND_WITH_IMM));
static_assert(same_value(IBV_WR_RDMA_READ, SROCE_WR_RDMA_READ));
static_assert(same_value(IBV_WR_ATOMIC_CMP_AND_SWP, SROCE_WR_ATOMIC_CMP_AND_SWP));
static_assert(same_value(IBV_WR_ATOMIC_FETCH_AND_ADD, SROCE_WR_ATOMIC_FETCH_AND_ADD));
static_assert(same_value(IBV_WR_LOCAL_INV, SROCE_WR_LOCAL_INV));
static_assert(same_value(IBV_WR_BIND_MW, SROCE_WR_BIND_MW));
static_assert(same_value(IBV_WR_SEND_WITH_INV, SROCE_WR_SEND_WITH_INV));
static_assert(same_value(IBV_WR_ATOMIC_WRITE, SROCE_WR_ATOMIC_WRITE));

// rdma-core 45 brought RDMA FLUSH (IBV_WR_FLUSH, ibv_wr_flush(),
// IBV_ACCESS_FLUSH_*); 44 has ATOMIC WRITE only.
#if SROCE_RDMA_CORE >= 45
inline constexpr bool kHaveFlushApi = true;
static_assert(same_value(IBV_WR_FLUSH, SROCE_WR_FLUSH));
static_assert(IBV_FLUSH_GLOBAL == SROCE_FLUSH_GLOBAL &&
	      IBV_FLUSH_PERSISTENT == SROCE_FLUSH_PERSISTENT &&
	      IBV_FLUSH_RANGE == SROCE_FLUSH_RANGE && IBV_FLUSH_MR == SROCE_FLUSH_MR);
#else
inline constexpr bool kHaveFlushApi = false;
#endif

// ---- sizes ------------------------------------------------------------------------

inline constexpr uint32_t kSendWqeMaxSge = 255;	// sroce_send_wqe.num_sge is a u8

// What a send slot of `stride` bytes has room for after the header.
constexpr uint32_t send_wqe_max_sge(uint32_t stride)
{
	if (stride < SROCE_SEND_WQE_HDR)
		return 0;
	const uint32_t n = (stride - SROCE_SEND_WQE_HDR) / sizeof(struct sroce_sge);
	return n < kSendWqeMaxSge ? n : kSendWqeMaxSge;
}

constexpr uint32_t send_wqe_max_inline(uint32_t stride)
{
	return stride < SROCE_SEND_WQE_HDR ? 0 : stride - SROCE_SEND_WQE_HDR;
}

constexpr uint32_t recv_wqe_max_sge(uint32_t stride)
{
	if (stride < SROCE_RECV_WQE_HDR)
		return 0;
	return (stride - SROCE_RECV_WQE_HDR) / sizeof(struct sroce_sge);
}

// The smallest ring stride (a power of two >= kRingMinStride) that holds
// a send WQE with max_sge SGEs or max_inline bytes; 0 if none can.
constexpr uint32_t send_wqe_stride(uint32_t max_sge, uint32_t max_inline)
{
	if (max_sge > kSendWqeMaxSge)
		return 0;
	const uint64_t sge_bytes = uint64_t{max_sge} * sizeof(struct sroce_sge);
	const uint64_t bytes = SROCE_SEND_WQE_HDR +
			       (sge_bytes > max_inline ? sge_bytes : max_inline);
	if (bytes > kRingMaxEntries)
		return 0;
	const uint32_t stride = round_up_pow2(static_cast<uint32_t>(bytes));
	return stride < kRingMinStride ? kRingMinStride : stride;
}

constexpr uint32_t recv_wqe_stride(uint32_t max_sge)
{
	const uint64_t bytes = SROCE_RECV_WQE_HDR +
			       uint64_t{max_sge} * sizeof(struct sroce_sge);
	if (bytes > kRingMaxEntries)
		return 0;
	const uint32_t stride = round_up_pow2(static_cast<uint32_t>(bytes));
	return stride < kRingMinStride ? kRingMinStride : stride;
}

// ---- queue capabilities --------------------------------------------------------

// What one send queue accepts, fixed at QP creation from the kernel's
// create_qp response.  The encoders trust these numbers, so the QP code
// checks them with send_caps_ok() once before use.
struct send_queue_caps {
	enum ibv_qp_type qp_type;	// IBV_QPT_RC, _UC, _UD or _XRC_SEND
	uint32_t max_sge;		// ibv_qp_cap.max_send_sge
	uint32_t max_inline;		// ibv_qp_cap.max_inline_data
	uint32_t stride;		// bytes per SQ slot
	// The IBTA 1.5 opcodes the kernel executes on this QP too (wr_bit()
	// of ATOMIC_WRITE, FLUSH): ext_send_opcodes().
	uint32_t ext_opcodes = 0;
};

struct recv_queue_caps {
	uint32_t max_sge;		// max_recv_sge (QP) or max_sge (SRQ)
	uint32_t stride;		// bytes per RQ/SRQ slot
};

constexpr bool send_caps_ok(const send_queue_caps &c)
{
	return (c.qp_type == IBV_QPT_RC || c.qp_type == IBV_QPT_UC ||
		c.qp_type == IBV_QPT_UD || c.qp_type == IBV_QPT_XRC_SEND) &&
	       is_pow2(c.stride) && c.stride >= kRingMinStride &&
	       c.max_sge <= send_wqe_max_sge(c.stride) &&
	       c.max_inline <= send_wqe_max_inline(c.stride);
}

constexpr bool recv_caps_ok(const recv_queue_caps &c)
{
	return is_pow2(c.stride) && c.stride >= kRingMinStride &&
	       c.max_sge <= recv_wqe_max_sge(c.stride);
}

// ---- opcodes and flags ------------------------------------------------------------

constexpr uint32_t wr_bit(unsigned opcode)
{
	return opcode < 32 ? uint32_t{1} << opcode : 0;
}

// Which work requests each transport carries, as the RoCE wire allows
// (the BTH opcode sets of IBTA 9.2) and as rxe's rxe_wr_opcode_info has
// them: UC has no READ, atomics or SEND with Invalidate; UD only sends.
// LOCAL_INV and BIND_MW (type 2 windows) are local operations on RC/UC.
// An XRC initiator (XRC_SEND) carries RC's operations (IBTA A14: XRC's
// opcodes are RC's under another transport), each to the remote SRQ its
// WQE names.
inline constexpr uint32_t kRcOpcodes =
	wr_bit(IBV_WR_RDMA_WRITE) | wr_bit(IBV_WR_RDMA_WRITE_WITH_IMM) |
	wr_bit(IBV_WR_SEND) | wr_bit(IBV_WR_SEND_WITH_IMM) |
	wr_bit(IBV_WR_RDMA_READ) | wr_bit(IBV_WR_ATOMIC_CMP_AND_SWP) |
	wr_bit(IBV_WR_ATOMIC_FETCH_AND_ADD) | wr_bit(IBV_WR_LOCAL_INV) |
	wr_bit(IBV_WR_BIND_MW) | wr_bit(IBV_WR_SEND_WITH_INV);
inline constexpr uint32_t kUcOpcodes =
	wr_bit(IBV_WR_RDMA_WRITE) | wr_bit(IBV_WR_RDMA_WRITE_WITH_IMM) |
	wr_bit(IBV_WR_SEND) | wr_bit(IBV_WR_SEND_WITH_IMM) |
	wr_bit(IBV_WR_LOCAL_INV) | wr_bit(IBV_WR_BIND_MW);
inline constexpr uint32_t kUdOpcodes =
	wr_bit(IBV_WR_SEND) | wr_bit(IBV_WR_SEND_WITH_IMM);

// Opcodes whose payload comes from the gather list, so IBV_SEND_INLINE
// means something (ibv_post_send(3): "valid only for Send and RDMA
// Write").  READ and atomics scatter into the list instead.
inline constexpr uint32_t kInlineOpcodes =
	wr_bit(IBV_WR_RDMA_WRITE) | wr_bit(IBV_WR_RDMA_WRITE_WITH_IMM) |
	wr_bit(IBV_WR_SEND) | wr_bit(IBV_WR_SEND_WITH_IMM) |
	wr_bit(IBV_WR_SEND_WITH_INV) | wr_bit(SROCE_WR_ATOMIC_WRITE);

// Local operations: no data, no SGEs.
inline constexpr uint32_t kLocalOpcodes =
	wr_bit(IBV_WR_LOCAL_INV) | wr_bit(IBV_WR_BIND_MW);

inline constexpr uint32_t kAtomicOpcodes =
	wr_bit(IBV_WR_ATOMIC_CMP_AND_SWP) | wr_bit(IBV_WR_ATOMIC_FETCH_AND_ADD);

// IBTA 1.5, RC only, where the kernel says it has them
// (SROCE_CTX_F_*): ATOMIC WRITE places 8 bytes of payload (gathered, so
// IBV_SEND_INLINE means something), FLUSH carries nothing.
inline constexpr uint32_t kAtomicWriteOpcode = wr_bit(SROCE_WR_ATOMIC_WRITE);
inline constexpr uint32_t kFlushOpcode = wr_bit(SROCE_WR_FLUSH);
inline constexpr uint32_t kNoDataOpcodes = kLocalOpcodes | kFlushOpcode;

constexpr uint32_t ext_send_opcodes(enum ibv_qp_type qp_type, uint32_t ctx_flags)
{
	uint32_t ops = 0;

	if (qp_type != IBV_QPT_RC)
		return 0;
	if (ctx_flags & SROCE_CTX_F_ATOMIC_WRITE)
		ops |= kAtomicWriteOpcode;
	if (kHaveFlushApi && (ctx_flags & SROCE_CTX_F_FLUSH))
		ops |= kFlushOpcode;
	return ops;
}

constexpr uint32_t send_opcodes_for(enum ibv_qp_type qp_type)
{
	switch (qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
		return kRcOpcodes;
	case IBV_QPT_UC:
		return kUcOpcodes;
	case IBV_QPT_UD:
		return kUdOpcodes;
	default:
		return 0;
	}
}

// 0 or EINVAL: the opcode is unknown (TSO, DRIVER1, ATOMIC_WRITE, ...)
// or not carried by this QP type.
constexpr int check_send_opcode(enum ibv_qp_type qp_type, unsigned opcode)
{
	return (send_opcodes_for(qp_type) & wr_bit(opcode)) ? 0 : EINVAL;
}

// The same for ibv_post_send on a queue: its type's opcodes and ATOMIC
// WRITE where the kernel has it (remote address and rkey in wr.rdma, the
// 8 bytes from sg_list or inline). struct ibv_send_wr has no room for a
// FLUSH's length, type and level: ibv_wr_flush() only.
constexpr int check_send_opcode(const send_queue_caps &caps, unsigned opcode)
{
	if (!check_send_opcode(caps.qp_type, opcode))
		return 0;
	return (caps.ext_opcodes & kAtomicWriteOpcode & wr_bit(opcode)) ? 0 : EINVAL;
}

// The XRCETH carries an SRQ number in 24 bits: a larger one cannot reach
// the wire, and cutting it would send the message to another SRQ.
inline constexpr uint32_t kXrcSrqnMax = 0xffffff;

inline constexpr unsigned kSupportedSendFlags =
	IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

// ibv_send_flags -> SROCE_WQE_F_*.  EINVAL for flags we do not implement
// (IBV_SEND_IP_CSUM: no checksum offload, so silently dropping it would
// send wrong checksums) and for IBV_SEND_INLINE on an opcode that takes
// no payload from the gather list.
constexpr int send_flags_to_wqe(unsigned send_flags, unsigned opcode,
				uint16_t *wqe_flags)
{
	if (send_flags & ~kSupportedSendFlags)
		return EINVAL;
	if ((send_flags & IBV_SEND_INLINE) && !(kInlineOpcodes & wr_bit(opcode)))
		return EINVAL;
	uint16_t f = 0;
	if (send_flags & IBV_SEND_SIGNALED)
		f |= SROCE_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		f |= SROCE_WQE_F_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		f |= SROCE_WQE_F_FENCE;
	if (send_flags & IBV_SEND_INLINE)
		f |= SROCE_WQE_F_INLINE;
	*wqe_flags = f;
	return 0;
}

// ---- the send WQE builder -----------------------------------------------------------

// Fills one send slot.  Call start(), the setters the opcode needs, the
// data (SGEs or inline bytes), then finish(); publish the slot only if
// every call returned 0.  A WQE left unfinished is harmless: the kernel
// never sees a slot before prod moves past it.
class send_wqe_builder {
public:
	// Clear the header and set what every WQE has.  `opcode` has passed
	// check_send_opcode() for this QP.  SROCE_WQE_F_INLINE in wqe_flags
	// (IBV_SEND_INLINE in ibv_send_wr.send_flags or ibv_qp_ex.wr_flags)
	// says the caller will supply the data through add_inline() /
	// set_inline_sge_list(); without it the inline setters turn it on.
	void start(void *slot, uint64_t wr_id, unsigned opcode, uint16_t wqe_flags)
	{
		wqe_ = static_cast<struct sroce_send_wqe *>(slot);
		memset(wqe_, 0, sizeof(*wqe_));
		wqe_->wr_id = wr_id;
		wqe_->opcode = static_cast<uint8_t>(opcode);
		wqe_->flags = wqe_flags;
		opcode_ = opcode;
		flags_ = wqe_flags;
		num_sge_ = 0;
		inline_len_ = 0;
		data_len_ = 0;
	}

	// RDMA WRITE (WITH_IMM), RDMA READ.
	void set_rdma(uint64_t remote_addr, uint32_t rkey)
	{
		wqe_->wr.rdma.remote_addr = remote_addr;
		wqe_->wr.rdma.rkey = rkey;
	}

	// CMP_AND_SWP, FETCH_AND_ADD (swap unused).  EINVAL unless
	// remote_addr is 8-byte aligned: the responder would NAK it
	// (IBTA o9-23: atomics act on naturally aligned 64-bit words).
	int set_atomic(uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
		       uint64_t swap)
	{
		if (remote_addr & 7)
			return EINVAL;
		wqe_->wr.atomic.remote_addr = remote_addr;
		wqe_->wr.atomic.compare_add = compare_add;
		wqe_->wr.atomic.swap = swap;
		wqe_->wr.atomic.rkey = rkey;
		return 0;
	}

	// ATOMIC_WRITE: the remote word (8-byte aligned, or EINVAL as for
	// the other atomics); the 8 bytes are its data (finish() checks).
	int set_atomic_write(uint64_t remote_addr, uint32_t rkey)
	{
		if (remote_addr & 7)
			return EINVAL;
		set_rdma(remote_addr, rkey);
		return 0;
	}

	// FLUSH: EINVAL for a length over 2^31 (IBTA's largest message), an
	// unknown placement type bit or selectivity level.
	int set_flush(uint64_t remote_addr, uint32_t rkey, size_t len,
		      uint8_t type, uint8_t level)
	{
		if (len > (size_t{1} << 31) ||
		    (type & ~(SROCE_FLUSH_GLOBAL | SROCE_FLUSH_PERSISTENT)) ||
		    level > SROCE_FLUSH_MR)
			return EINVAL;
		wqe_->wr.flush.remote_addr = remote_addr;
		wqe_->wr.flush.length = len;
		wqe_->wr.flush.rkey = rkey;
		wqe_->wr.flush.type = type;
		wqe_->wr.flush.level = level;
		return 0;
	}

	// UD SENDs: the destination.
	void set_ud(uint32_t ah_num, uint32_t remote_qpn, uint32_t remote_qkey)
	{
		wqe_->wr.ud.ah_num = ah_num;
		wqe_->wr.ud.remote_qpn = remote_qpn;
		wqe_->wr.ud.remote_qkey = remote_qkey;
	}

	// BIND_MW: the window, its new rkey and what it is bound to.  The
	// kernel checks the window, MR and access; EINVAL here only when
	// there is no window (or no bind_info), or no MR while binding a
	// non-zero length (zero length unbinds: no MR needed then).
	int set_bind_mw(const struct ibv_mw *mw, uint32_t new_rkey,
			const struct ibv_mw_bind_info *bi)
	{
		if (!mw || !bi || (!bi->mr && bi->length))
			return EINVAL;
		wqe_->wr.bind_mw.addr = bi->addr;
		wqe_->wr.bind_mw.length = bi->length;
		wqe_->wr.bind_mw.mw_handle = mw->handle;
		wqe_->wr.bind_mw.rkey = new_rkey;
		wqe_->wr.bind_mw.mr_lkey = bi->mr ? bi->mr->lkey : 0;
		wqe_->wr.bind_mw.access = bi->mw_access_flags;
		return 0;
	}

	// XRC_SEND: the remote SRQ (<= kXrcSrqnMax, checked by the caller).
	void set_xrc_srqn(uint32_t srqn) { wqe_->xrc_srqn = srqn; }

	// *_WITH_IMM: network byte order, passed through untouched.
	void set_imm_data(__be32 imm_data) { wqe_->ex.imm_data = imm_data; }
	// SEND_WITH_INV, LOCAL_INV.
	void set_invalidate_rkey(uint32_t rkey) { wqe_->ex.invalidate_rkey = rkey; }

	// Append one gather (or, for READ and atomics, scatter) element.
	// EINVAL past caps.max_sge, on an inline WQE, or on a local
	// operation, which has no data.
	int add_sge(const send_queue_caps &caps, uint64_t addr, uint32_t length,
		    uint32_t lkey)
	{
		if (num_sge_ >= caps.max_sge || (flags_ & SROCE_WQE_F_INLINE) ||
		    (kNoDataOpcodes & wr_bit(opcode_)))
			return EINVAL;
		struct sroce_sge *sge = sges() + num_sge_;
		sge->addr = addr;
		sge->length = length;
		sge->lkey = lkey;
		num_sge_++;
		data_len_ += length;
		return 0;
	}

	// Replace the data with this list (ibv_wr_set_sge_list, or one
	// element for ibv_wr_set_sge).
	int set_sge_list(const send_queue_caps &caps, const struct ibv_sge *list,
			 size_t n)
	{
		if (n > caps.max_sge)
			return EINVAL;
		num_sge_ = 0;
		inline_len_ = 0;
		data_len_ = 0;
		flags_ &= ~SROCE_WQE_F_INLINE;
		for (size_t i = 0; i < n; i++) {
			int ret = add_sge(caps, list[i].addr, list[i].length,
					  list[i].lkey);
			if (ret)
				return ret;
		}
		return 0;
	}

	// Append inline payload, copied into the slot now (the buffer may
	// be reused as soon as the post returns).  EINVAL when the WQE
	// would exceed caps.max_inline (the QP's max_inline_data), when it
	// already has SGEs, or for an opcode without gathered payload.
	//
	// Why EINVAL and not ENOMEM: IBTA names no errno; rxe, siw, hns,
	// bnxt_re, erdma and ocrdma return EINVAL for a WR that asks more
	// inline than the QP was created with (an invalid WR, like too many
	// SGEs), mlx4/mlx5 ENOMEM.  ENOMEM from a post conventionally means
	// "queue full", which this is not.
	int add_inline(const send_queue_caps &caps, const void *data, size_t length)
	{
		if (num_sge_ || !(kInlineOpcodes & wr_bit(opcode_)))
			return EINVAL;
		// inline_len_ <= max_inline always holds, so no underflow.
		if (length > caps.max_inline - inline_len_)
			return EINVAL;
		flags_ |= SROCE_WQE_F_INLINE;
		if (length)
			memcpy(payload() + inline_len_, data, length);
		inline_len_ += static_cast<uint32_t>(length);
		data_len_ += length;
		return 0;
	}

	// Replace the data with inline bytes (ibv_wr_set_inline_data_list;
	// ibv_wr_set_inline_data is one element).
	int set_inline_list(const send_queue_caps &caps,
			    const struct ibv_data_buf *list, size_t n)
	{
		num_sge_ = 0;
		inline_len_ = 0;
		data_len_ = 0;
		if (n == 0)
			return add_inline(caps, nullptr, 0);
		for (size_t i = 0; i < n; i++) {
			int ret = add_inline(caps, list[i].addr, list[i].length);
			if (ret)
				return ret;
		}
		return 0;
	}

	// Replace the data with the bytes an SGE list points at, copied
	// inline (IBV_SEND_INLINE: the addresses are the caller's pointers,
	// lkeys are not used).  The list is still bounded by caps.max_sge,
	// as ibv_post_send's num_sge is, and the bytes by caps.max_inline.
	int set_inline_sge_list(const send_queue_caps &caps,
				const struct ibv_sge *list, size_t n)
	{
		if (n > caps.max_sge)
			return EINVAL;
		num_sge_ = 0;
		inline_len_ = 0;
		data_len_ = 0;
		if (n == 0)
			return add_inline(caps, nullptr, 0);
		for (size_t i = 0; i < n; i++) {
			int ret = add_inline(caps,
					     reinterpret_cast<const void *>(
						     static_cast<uintptr_t>(list[i].addr)),
					     list[i].length);
			if (ret)
				return ret;
		}
		return 0;
	}

	// Store the counts and check what needs the whole WR: an atomic
	// needs an 8-byte local buffer for the original value.
	int finish()
	{
		if ((kAtomicOpcodes & wr_bit(opcode_)) && data_len_ < 8)
			return EINVAL;
		if ((kAtomicWriteOpcode & wr_bit(opcode_)) && data_len_ != 8)
			return EINVAL;
		wqe_->num_sge = static_cast<uint8_t>(num_sge_);
		wqe_->inline_len = inline_len_;
		wqe_->flags = flags_;
		return 0;
	}

	struct sroce_send_wqe *wqe() const { return wqe_; }
	uint32_t num_sge() const { return num_sge_; }
	uint32_t inline_len() const { return inline_len_; }
	uint64_t data_len() const { return data_len_; }	// bytes gathered/scattered

private:
	unsigned char *payload() const
	{
		return reinterpret_cast<unsigned char *>(wqe_) + SROCE_SEND_WQE_HDR;
	}
	struct sroce_sge *sges() const
	{
		return reinterpret_cast<struct sroce_sge *>(payload());
	}

	struct sroce_send_wqe *wqe_ = nullptr;
	uint64_t data_len_ = 0;
	uint32_t num_sge_ = 0;
	uint32_t inline_len_ = 0;
	unsigned opcode_ = 0;
	uint16_t flags_ = 0;
};

// ---- ibv_post_send / ibv_post_recv -------------------------------------------------

// Encode one ibv_send_wr into a send slot of caps.stride bytes (caps as
// send_caps_ok() accepts).  0 or EINVAL: opcode unknown or not for this
// QP type, unsupported send flag, num_sge outside [0, caps.max_sge],
// inline payload over caps.max_inline, UD without an AH, atomic with a
// misaligned remote address or a local buffer under 8 bytes, BIND_MW
// without a window (or without an MR while binding a non-zero length),
// on XRC_SEND a qp_type.xrc.remote_srqn over 24 bits.  Every WQE of an
// XRC_SEND queue carries wr->qp_type.xrc.remote_srqn (the local
// operations too, which do not use it); on other queues xrc_srqn is 0.
// The sg_list of LOCAL_INV and BIND_MW is not used (they carry no data).
int encode_send_wqe(void *slot, const send_queue_caps &caps,
		    const struct ibv_send_wr *wr);

// Write a receive WQE (RQ or SRQ slot of caps.stride bytes).  0, or
// EINVAL when num_sge is outside [0, caps.max_sge] (or sg_list is NULL
// with num_sge > 0).
int write_recv_wqe(void *slot, const recv_queue_caps &caps, uint64_t wr_id,
		   const struct ibv_sge *sg_list, int num_sge);

static inline int encode_recv_wqe(void *slot, const recv_queue_caps &caps,
				  const struct ibv_recv_wr *wr)
{
	return write_recv_wqe(slot, caps, wr->wr_id, wr->sg_list, wr->num_sge);
}

} // namespace sroce

#endif // SROCE_WQE_HPP
