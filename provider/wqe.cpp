// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// wqe.cpp - ibv_send_wr / ibv_recv_wr -> ring slots, through the same
// send_wqe_builder the extended (ibv_wr_*) API uses.

#include "wqe.hpp"

#include "sroce.hpp"

namespace sroce {

int encode_send_wqe(void *slot, const send_queue_caps &caps,
		    const struct ibv_send_wr *wr)
{
	// The caller is C: its enum may hold any value.  Read the bits, so
	// an out-of-range opcode is rejected below rather than being
	// something the C++ compiler may assume cannot happen.
	static_assert(sizeof(wr->opcode) == sizeof(unsigned));
	unsigned opcode;
	memcpy(&opcode, &wr->opcode, sizeof(opcode));
	uint16_t wqe_flags = 0;

	if (check_send_opcode(caps, opcode))
		return EINVAL;
	if (send_flags_to_wqe(wr->send_flags, opcode, &wqe_flags))
		return EINVAL;
	// Checked for every opcode, like rxe: the count is the caller's
	// claim about sg_list, whether or not this opcode reads it.
	if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > caps.max_sge ||
	    (wr->num_sge > 0 && !wr->sg_list))
		return EINVAL;

	send_wqe_builder b;
	b.start(slot, wr->wr_id, opcode, wqe_flags);
	if (caps.qp_type == IBV_QPT_XRC_SEND) {
		if (wr->qp_type.xrc.remote_srqn > kXrcSrqnMax)
			return EINVAL;
		b.set_xrc_srqn(wr->qp_type.xrc.remote_srqn);
	}

	switch (opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		b.set_imm_data(wr->imm_data);
		[[fallthrough]];
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		b.set_rdma(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
		break;
	case IBV_WR_SEND_WITH_IMM:
		b.set_imm_data(wr->imm_data);
		[[fallthrough]];
	case IBV_WR_SEND:
		if (caps.qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah)
				return EINVAL;
			b.set_ud(to_sah(wr->wr.ud.ah)->ah_num, wr->wr.ud.remote_qpn,
				 wr->wr.ud.remote_qkey);
		}
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		b.set_invalidate_rkey(wr->invalidate_rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (b.set_atomic(wr->wr.atomic.remote_addr, wr->wr.atomic.rkey,
				 wr->wr.atomic.compare_add, wr->wr.atomic.swap))
			return EINVAL;
		break;
	case IBV_WR_ATOMIC_WRITE:
		if (b.set_atomic_write(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey))
			return EINVAL;
		break;
	case IBV_WR_BIND_MW:
		if (b.set_bind_mw(wr->bind_mw.mw, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info))
			return EINVAL;
		break;
	default:	// unreachable: check_send_opcode() let only the above in
		return EINVAL;
	}

	if (!(kLocalOpcodes & wr_bit(opcode))) {
		const size_t n = static_cast<size_t>(wr->num_sge);
		int ret = (wqe_flags & SROCE_WQE_F_INLINE)
				  ? b.set_inline_sge_list(caps, wr->sg_list, n)
				  : b.set_sge_list(caps, wr->sg_list, n);
		if (ret)
			return ret;
	}
	return b.finish();
}

int write_recv_wqe(void *slot, const recv_queue_caps &caps, uint64_t wr_id,
		   const struct ibv_sge *sg_list, int num_sge)
{
	if (num_sge < 0 || static_cast<uint32_t>(num_sge) > caps.max_sge ||
	    (num_sge > 0 && !sg_list))
		return EINVAL;

	auto *wqe = static_cast<struct sroce_recv_wqe *>(slot);
	auto *sges = reinterpret_cast<struct sroce_sge *>(
		static_cast<unsigned char *>(slot) + SROCE_RECV_WQE_HDR);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr_id;
	wqe->num_sge = static_cast<uint32_t>(num_sge);
	for (int i = 0; i < num_sge; i++) {
		sges[i].addr = sg_list[i].addr;
		sges[i].length = sg_list[i].length;
		sges[i].lkey = sg_list[i].lkey;
	}
	return 0;
}

} // namespace sroce
