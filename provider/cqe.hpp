// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// cqe.hpp - reading struct sroce_cqe (uapi/sroce-abi.h) into verbs terms.
//
// One reader per ibv_wc field, each a single load and at most a
// comparison, so the ibv_cq_ex read_* callbacks can call them on the
// current CQE directly; decode_cqe() builds a struct ibv_wc from them for
// ibv_poll_cq.  The CQE sits in the ring the kernel writes: every value
// is used as data only (nothing is indexed with it), and a status this
// provider does not know becomes IBV_WC_GENERAL_ERR, never success.
#ifndef SROCE_CQE_HPP
#define SROCE_CQE_HPP

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <sroce-abi.h>

namespace sroce {

static_assert(sizeof(struct sroce_cqe) == SROCE_CQE_SIZE);
static_assert(offsetof(struct sroce_cqe, status) == 8);
static_assert(offsetof(struct sroce_cqe, ex) == 24);
static_assert(offsetof(struct sroce_cqe, pkey_index) == 32);
static_assert(offsetof(struct sroce_cqe, timestamp) == 40);

// The uapi carries ibv_wc_flags values in a u16 and ibv_wc_opcode values
// in a u8: both must fit.
static_assert(IBV_WC_TM_DATA_VALID <= UINT16_MAX);
static_assert(IBV_WC_DRIVER3 <= UINT8_MAX);

// The last ibv_wc_status rdma-core 44 defines.
inline constexpr unsigned kLastWcStatus = IBV_WC_TM_RNDV_INCOMPLETE;

static inline uint64_t cqe_wr_id(const struct sroce_cqe *c)
{
	return c->wr_id;
}

static inline enum ibv_wc_status cqe_status(const struct sroce_cqe *c)
{
	const unsigned status = c->status;
	return status <= kLastWcStatus ? static_cast<enum ibv_wc_status>(status)
				       : IBV_WC_GENERAL_ERR;
}

// Passed through: every u8 is inside enum ibv_wc_opcode's value range
// (it has enumerators up to 137), and applications switch on it anyway.
static inline enum ibv_wc_opcode cqe_opcode(const struct sroce_cqe *c)
{
	return static_cast<enum ibv_wc_opcode>(c->opcode);
}

static inline uint32_t cqe_vendor_err(const struct sroce_cqe *c)
{
	return c->vendor_err;
}

static inline uint32_t cqe_byte_len(const struct sroce_cqe *c)
{
	return c->byte_len;
}

// Both halves of the union, raw (imm_data stays in network byte order).
// Meaningful only when wc_flags has IBV_WC_WITH_IMM or IBV_WC_WITH_INV.
static inline __be32 cqe_imm_data(const struct sroce_cqe *c)
{
	return c->ex.imm_data;
}

static inline uint32_t cqe_invalidated_rkey(const struct sroce_cqe *c)
{
	return c->ex.invalidated_rkey;
}

static inline uint32_t cqe_qp_num(const struct sroce_cqe *c)
{
	return c->qp_num;
}

static inline uint32_t cqe_src_qp(const struct sroce_cqe *c)
{
	return c->src_qp;
}

// ibv_wc_flags values, as the uapi says.  Not the kernel's ib_wc_flags:
// there IB_WC_WITH_INVALIDATE is 1 << 2 (IBV_WC_IP_CSUM_OK here) and
// IB_WC_IP_CSUM_OK is 1 << 3 (IBV_WC_WITH_INV here); the kernel must
// translate when it writes a CQE.
static inline unsigned int cqe_wc_flags(const struct sroce_cqe *c)
{
	return c->wc_flags;
}

static inline uint16_t cqe_pkey_index(const struct sroce_cqe *c)
{
	return c->pkey_index;
}

static inline uint16_t cqe_slid(const struct sroce_cqe *c)
{
	return c->slid;
}

// The SL of a RoCE receive that came with a GRH carries the packet type,
// as hardware RoCE NICs report it (mlx5's CQE: bit 3 "UDP/IP
// encapsulated", bits 2:0 the L3 header: 0 GRH, 1 IPv6, 2 IPv4).  UCX
// 1.13-1.18's ud_verbs reads it to find the destination address in the
// 40-byte GRH area and drops, silently, a packet whose address it cannot
// find there: with SL 0 every RoCE v2 IPv4 packet.  RoCE has no SL on the
// wire, so nothing else is lost.
inline constexpr uint8_t kSlPacketTypeUdp = 0x8;
inline constexpr uint8_t kSlPacketTypeIpv6 = 0x1;
inline constexpr uint8_t kSlPacketTypeIpv4 = 0x2;

static inline uint8_t cqe_sl(const struct sroce_cqe *c)
{
	if (c->wc_flags & SROCE_WC_F_GRH) {
		switch (c->network_hdr_type) {
		case SROCE_NETWORK_IPV4:
			return kSlPacketTypeUdp | kSlPacketTypeIpv4;
		case SROCE_NETWORK_IPV6:
			return kSlPacketTypeUdp | kSlPacketTypeIpv6;
		}
	}
	return c->sl;
}

static inline uint8_t cqe_dlid_path_bits(const struct sroce_cqe *c)
{
	return c->dlid_path_bits;
}

static inline uint64_t cqe_timestamp(const struct sroce_cqe *c)
{
	return c->timestamp;
}

// ibv_poll_cq's view of one CQE.  Every ibv_wc field is written; the
// imm_data/invalidated_rkey union only when wc_flags says it holds one
// (0 otherwise), so no stale ring bytes leak into the WC.
static inline void decode_cqe(const struct sroce_cqe *c, struct ibv_wc *wc)
{
	const unsigned int wc_flags = cqe_wc_flags(c);

	wc->wr_id = cqe_wr_id(c);
	wc->status = cqe_status(c);
	wc->opcode = cqe_opcode(c);
	wc->vendor_err = cqe_vendor_err(c);
	wc->byte_len = cqe_byte_len(c);
	wc->imm_data = (wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV))
			       ? cqe_imm_data(c)
			       : 0;
	wc->qp_num = cqe_qp_num(c);
	wc->src_qp = cqe_src_qp(c);
	wc->wc_flags = wc_flags;
	wc->pkey_index = cqe_pkey_index(c);
	wc->slid = cqe_slid(c);
	wc->sl = cqe_sl(c);
	wc->dlid_path_bits = cqe_dlid_path_bits(c);
}

} // namespace sroce

#endif // SROCE_CQE_HPP
