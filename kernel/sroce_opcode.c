// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the opcode table (which headers each opcode carries, what it
 * means, which QP types may use it) and the header codec.
 *
 * Header order after the BTH (IBTA 9.2): DETH, XRCETH, FETH, RETH,
 * AtomicETH, AETH, AtomicAckETH, ImmDt, IETH. No opcode carries both ImmDt and IETH,
 * nor RETH and AtomicETH. FLUSH (BTH, FETH, RETH) and ATOMIC WRITE (BTH,
 * RETH, 8 payload bytes) are IBTA 1.5's; both are answered with a READ
 * response of no payload.
 *
 * XRC (IBTA annex A14) has the RC operations from SEND to SEND ONLY with
 * invalidate under transport 0xa0: its requests carry an XRCETH (the
 * target's SRQ), its responses are RC's. The receive path takes an XRC
 * packet as the RC one once the QP's type has been checked.
 *
 * No locking: the table is constant, the codec works on caller buffers.
 */

#include <linux/unaligned.h>

#include "sroce_pkt.h"

#define QPT_RC		BIT(IB_QPT_RC)
#define QPT_UC		BIT(IB_QPT_UC)
#define QPT_UD		(BIT(IB_QPT_UD) | BIT(IB_QPT_GSI))
#define QPT_XRC_INI	BIT(IB_QPT_XRC_INI)
#define QPT_XRC_TGT	BIT(IB_QPT_XRC_TGT)

#define HDR_LEN(m)	(SROCE_BTH_BYTES +				\
			 (((m) & SROCE_M_RETH) ? SROCE_RETH_BYTES : 0) +	\
			 (((m) & SROCE_M_AETH) ? SROCE_AETH_BYTES : 0) +	\
			 (((m) & SROCE_M_ATMETH) ? SROCE_ATMETH_BYTES : 0) + \
			 (((m) & SROCE_M_ATMACK) ? SROCE_ATMACK_BYTES : 0) + \
			 (((m) & SROCE_M_IMMDT) ? SROCE_IMMDT_BYTES : 0) +	\
			 (((m) & SROCE_M_IETH) ? SROCE_IETH_BYTES : 0) +	\
			 (((m) & SROCE_M_DETH) ? SROCE_DETH_BYTES : 0) +	\
			 (((m) & SROCE_M_XRCETH) ? SROCE_XRCETH_BYTES : 0) + \
			 (((m) & SROCE_M_FETH) ? SROCE_FETH_BYTES : 0) +	\
			 (((m) & SROCE_M_CNP) ? SROCE_CNP_BYTES : 0))

#define OP(code, m, qpt) \
	[code] = { .mask = (m), .hdr_len = HDR_LEN(m), .valid_qpt = (qpt) }

#define SEND_REQ	(SROCE_M_REQ | SROCE_M_SEND | SROCE_M_PAYLOAD)
#define WRITE_REQ	(SROCE_M_REQ | SROCE_M_WRITE | SROCE_M_PAYLOAD)
#define READ_RESP	(SROCE_M_RESP | SROCE_M_READ | SROCE_M_PAYLOAD)

/* XRC: requests to a target QP (with an XRCETH), answers to an initiator */
#define XRC_REQ(code, m) \
	OP(SROCE_TRANSPORT_XRC | (code), (m) | SROCE_M_XRCETH, QPT_XRC_TGT)
#define XRC_RESP(code, m) OP(SROCE_TRANSPORT_XRC | (code), (m), QPT_XRC_INI)

const struct sroce_opcode_info sroce_opcode_table[256] = {
	/* RC */
	OP(SROCE_OP_SEND_FIRST, SEND_REQ | SROCE_M_FIRST, QPT_RC),
	OP(SROCE_OP_SEND_MIDDLE, SEND_REQ | SROCE_M_MIDDLE, QPT_RC),
	OP(SROCE_OP_SEND_LAST, SEND_REQ | SROCE_M_LAST, QPT_RC),
	OP(SROCE_OP_SEND_LAST_IMM,
	   SEND_REQ | SROCE_M_LAST | SROCE_M_IMMDT, QPT_RC),
	OP(SROCE_OP_SEND_ONLY, SEND_REQ | SROCE_M_ONLY, QPT_RC),
	OP(SROCE_OP_SEND_ONLY_IMM,
	   SEND_REQ | SROCE_M_ONLY | SROCE_M_IMMDT, QPT_RC),
	OP(SROCE_OP_WRITE_FIRST,
	   WRITE_REQ | SROCE_M_FIRST | SROCE_M_RETH, QPT_RC),
	OP(SROCE_OP_WRITE_MIDDLE, WRITE_REQ | SROCE_M_MIDDLE, QPT_RC),
	OP(SROCE_OP_WRITE_LAST, WRITE_REQ | SROCE_M_LAST, QPT_RC),
	OP(SROCE_OP_WRITE_LAST_IMM,
	   WRITE_REQ | SROCE_M_LAST | SROCE_M_IMMDT, QPT_RC),
	OP(SROCE_OP_WRITE_ONLY,
	   WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH, QPT_RC),
	OP(SROCE_OP_WRITE_ONLY_IMM,
	   WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH | SROCE_M_IMMDT, QPT_RC),
	OP(SROCE_OP_READ_REQ,
	   SROCE_M_REQ | SROCE_M_READ | SROCE_M_ONLY | SROCE_M_RETH, QPT_RC),
	OP(SROCE_OP_READ_RESP_FIRST,
	   READ_RESP | SROCE_M_FIRST | SROCE_M_AETH, QPT_RC),
	OP(SROCE_OP_READ_RESP_MIDDLE, READ_RESP | SROCE_M_MIDDLE, QPT_RC),
	OP(SROCE_OP_READ_RESP_LAST,
	   READ_RESP | SROCE_M_LAST | SROCE_M_AETH, QPT_RC),
	OP(SROCE_OP_READ_RESP_ONLY,
	   READ_RESP | SROCE_M_ONLY | SROCE_M_AETH, QPT_RC),
	OP(SROCE_OP_ACK,
	   SROCE_M_RESP | SROCE_M_ACK | SROCE_M_ONLY | SROCE_M_AETH, QPT_RC),
	OP(SROCE_OP_ATOMIC_ACK,
	   SROCE_M_RESP | SROCE_M_ACK | SROCE_M_ATOMIC | SROCE_M_ONLY |
	   SROCE_M_AETH | SROCE_M_ATMACK, QPT_RC),
	OP(SROCE_OP_CMP_SWAP,
	   SROCE_M_REQ | SROCE_M_ATOMIC | SROCE_M_ONLY | SROCE_M_ATMETH,
	   QPT_RC),
	OP(SROCE_OP_FETCH_ADD,
	   SROCE_M_REQ | SROCE_M_ATOMIC | SROCE_M_ONLY | SROCE_M_ATMETH,
	   QPT_RC),
	OP(SROCE_OP_SEND_LAST_INV,
	   SEND_REQ | SROCE_M_LAST | SROCE_M_IETH, QPT_RC),
	OP(SROCE_OP_SEND_ONLY_INV,
	   SEND_REQ | SROCE_M_ONLY | SROCE_M_IETH, QPT_RC),
	OP(SROCE_OP_FLUSH,
	   SROCE_M_REQ | SROCE_M_FLUSH | SROCE_M_ONLY | SROCE_M_FETH |
	   SROCE_M_RETH, QPT_RC),
	OP(SROCE_OP_ATOMIC_WRITE,
	   SROCE_M_REQ | SROCE_M_ATOMIC_WRITE | SROCE_M_ONLY | SROCE_M_RETH |
	   SROCE_M_PAYLOAD, QPT_RC),

	/* UC: the send and write opcodes of RC */
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_FIRST,
	   SEND_REQ | SROCE_M_FIRST, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_MIDDLE,
	   SEND_REQ | SROCE_M_MIDDLE, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_LAST,
	   SEND_REQ | SROCE_M_LAST, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_LAST_IMM,
	   SEND_REQ | SROCE_M_LAST | SROCE_M_IMMDT, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_ONLY,
	   SEND_REQ | SROCE_M_ONLY, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_SEND_ONLY_IMM,
	   SEND_REQ | SROCE_M_ONLY | SROCE_M_IMMDT, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_FIRST,
	   WRITE_REQ | SROCE_M_FIRST | SROCE_M_RETH, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_MIDDLE,
	   WRITE_REQ | SROCE_M_MIDDLE, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_LAST,
	   WRITE_REQ | SROCE_M_LAST, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_LAST_IMM,
	   WRITE_REQ | SROCE_M_LAST | SROCE_M_IMMDT, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_ONLY,
	   WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH, QPT_UC),
	OP(SROCE_TRANSPORT_UC | SROCE_OP_WRITE_ONLY_IMM,
	   WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH | SROCE_M_IMMDT, QPT_UC),

	OP(SROCE_TRANSPORT_UD | SROCE_OP_SEND_ONLY,
	   SEND_REQ | SROCE_M_ONLY | SROCE_M_DETH, QPT_UD),
	OP(SROCE_TRANSPORT_UD | SROCE_OP_SEND_ONLY_IMM,
	   SEND_REQ | SROCE_M_ONLY | SROCE_M_DETH | SROCE_M_IMMDT, QPT_UD),

	/* XRC: RC's operations up to SEND ONLY with invalidate */
	XRC_REQ(SROCE_OP_SEND_FIRST, SEND_REQ | SROCE_M_FIRST),
	XRC_REQ(SROCE_OP_SEND_MIDDLE, SEND_REQ | SROCE_M_MIDDLE),
	XRC_REQ(SROCE_OP_SEND_LAST, SEND_REQ | SROCE_M_LAST),
	XRC_REQ(SROCE_OP_SEND_LAST_IMM, SEND_REQ | SROCE_M_LAST | SROCE_M_IMMDT),
	XRC_REQ(SROCE_OP_SEND_ONLY, SEND_REQ | SROCE_M_ONLY),
	XRC_REQ(SROCE_OP_SEND_ONLY_IMM, SEND_REQ | SROCE_M_ONLY | SROCE_M_IMMDT),
	XRC_REQ(SROCE_OP_WRITE_FIRST, WRITE_REQ | SROCE_M_FIRST | SROCE_M_RETH),
	XRC_REQ(SROCE_OP_WRITE_MIDDLE, WRITE_REQ | SROCE_M_MIDDLE),
	XRC_REQ(SROCE_OP_WRITE_LAST, WRITE_REQ | SROCE_M_LAST),
	XRC_REQ(SROCE_OP_WRITE_LAST_IMM,
		WRITE_REQ | SROCE_M_LAST | SROCE_M_IMMDT),
	XRC_REQ(SROCE_OP_WRITE_ONLY, WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH),
	XRC_REQ(SROCE_OP_WRITE_ONLY_IMM,
		WRITE_REQ | SROCE_M_ONLY | SROCE_M_RETH | SROCE_M_IMMDT),
	XRC_REQ(SROCE_OP_READ_REQ,
		SROCE_M_REQ | SROCE_M_READ | SROCE_M_ONLY | SROCE_M_RETH),
	XRC_RESP(SROCE_OP_READ_RESP_FIRST,
		 READ_RESP | SROCE_M_FIRST | SROCE_M_AETH),
	XRC_RESP(SROCE_OP_READ_RESP_MIDDLE, READ_RESP | SROCE_M_MIDDLE),
	XRC_RESP(SROCE_OP_READ_RESP_LAST,
		 READ_RESP | SROCE_M_LAST | SROCE_M_AETH),
	XRC_RESP(SROCE_OP_READ_RESP_ONLY,
		 READ_RESP | SROCE_M_ONLY | SROCE_M_AETH),
	XRC_RESP(SROCE_OP_ACK,
		 SROCE_M_RESP | SROCE_M_ACK | SROCE_M_ONLY | SROCE_M_AETH),
	XRC_RESP(SROCE_OP_ATOMIC_ACK,
		 SROCE_M_RESP | SROCE_M_ACK | SROCE_M_ATOMIC | SROCE_M_ONLY |
		 SROCE_M_AETH | SROCE_M_ATMACK),
	XRC_REQ(SROCE_OP_CMP_SWAP,
		SROCE_M_REQ | SROCE_M_ATOMIC | SROCE_M_ONLY | SROCE_M_ATMETH),
	XRC_REQ(SROCE_OP_FETCH_ADD,
		SROCE_M_REQ | SROCE_M_ATOMIC | SROCE_M_ONLY | SROCE_M_ATMETH),
	XRC_REQ(SROCE_OP_SEND_LAST_INV, SEND_REQ | SROCE_M_LAST | SROCE_M_IETH),
	XRC_REQ(SROCE_OP_SEND_ONLY_INV, SEND_REQ | SROCE_M_ONLY | SROCE_M_IETH),

	/*
	 * RoCE v2's CNP (annex A17.9.3): to the QP whose packets came marked
	 * CE, of whichever type (those that do not react count it ignored).
	 */
	OP(SROCE_OP_CNP, SROCE_M_CNP, QPT_RC | QPT_UC | BIT(IB_QPT_UD) |
	   QPT_XRC_INI | QPT_XRC_TGT),
};

/* Pad bytes that bring a payload to a multiple of four. */
u32 sroce_pad(u32 paylen)
{
	return (4 - (paylen & 3)) & 3;
}

/**
 * sroce_hdr_build - write the BTH and extension headers of @pkt
 * @buf: sroce_opcode_table[pkt->opcode].hdr_len bytes
 * @pkt: opcode, flags and the fields its headers carry
 */
void sroce_hdr_build(u8 *buf, const struct sroce_pkt *pkt)
{
	u32 mask = sroce_opcode_table[pkt->opcode].mask;
	u8 flags = SROCE_BTH_MIG | (pkt->pad << SROCE_BTH_PAD_SHIFT);
	u8 *p = buf + SROCE_BTH_BYTES;

	if (pkt->se)
		flags |= SROCE_BTH_SE;
	buf[0] = pkt->opcode;
	buf[1] = flags;
	put_unaligned_be16(pkt->pkey, buf + 2);
	put_unaligned_be32((pkt->dqpn & SROCE_BTH_QPN_MASK) |
			   (pkt->becn ? SROCE_BTH_BECN : 0), buf + 4);
	put_unaligned_be32((pkt->psn & SROCE_PSN_MASK) |
			   (pkt->ackreq ? SROCE_BTH_ACKREQ : 0), buf + 8);

	if (mask & SROCE_M_DETH) {
		put_unaligned_be32(pkt->qkey, p);
		put_unaligned_be32(pkt->sqpn & SROCE_BTH_QPN_MASK, p + 4);
		p += SROCE_DETH_BYTES;
	}
	if (mask & SROCE_M_XRCETH) {
		put_unaligned_be32(pkt->xrc_srqn & SROCE_XRCETH_SRQN_MASK, p);
		p += SROCE_XRCETH_BYTES;
	}
	if (mask & SROCE_M_FETH) {
		put_unaligned_be32((pkt->flush_type & SROCE_FETH_PLT_MASK) |
				   ((pkt->flush_level << SROCE_FETH_SEL_SHIFT) &
				    SROCE_FETH_SEL_MASK), p);
		p += SROCE_FETH_BYTES;
	}
	if (mask & SROCE_M_RETH) {
		put_unaligned_be64(pkt->va, p);
		put_unaligned_be32(pkt->rkey, p + 8);
		put_unaligned_be32(pkt->dmalen, p + 12);
		p += SROCE_RETH_BYTES;
	}
	if (mask & SROCE_M_ATMETH) {
		put_unaligned_be64(pkt->va, p);
		put_unaligned_be32(pkt->rkey, p + 8);
		put_unaligned_be64(pkt->swap_add, p + 12);
		put_unaligned_be64(pkt->compare, p + 20);
		p += SROCE_ATMETH_BYTES;
	}
	if (mask & SROCE_M_AETH) {
		put_unaligned_be32(((u32)pkt->syndrome << 24) |
				   (pkt->msn & SROCE_MSN_MASK), p);
		p += SROCE_AETH_BYTES;
	}
	if (mask & SROCE_M_ATMACK) {
		put_unaligned_be64(pkt->orig, p);
		p += SROCE_ATMACK_BYTES;
	}
	if (mask & SROCE_M_IMMDT) {
		memcpy(p, &pkt->imm, SROCE_IMMDT_BYTES);
		p += SROCE_IMMDT_BYTES;
	}
	if (mask & SROCE_M_IETH)
		put_unaligned_be32(pkt->inv_rkey, p);
}

/**
 * sroce_hdr_parse - read the transport headers of a received packet
 * @buf: the bytes from the BTH on
 * @len: bytes from the BTH to the end of the ICRC
 * @pkt: filled in; payload_off is relative to the BTH
 *
 * Checks what the headers alone can tell: a known opcode, the transport
 * version, room for the headers, pad and ICRC, and a payload only where
 * the opcode has one.
 *
 * Return: 0, or -EINVAL for a malformed packet.
 */
int sroce_hdr_parse(const u8 *buf, unsigned int len, struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info;
	const u8 *p = buf + SROCE_BTH_BYTES;
	u32 w;

	if (len < SROCE_BTH_BYTES + SROCE_ICRC_BYTES)
		return -EINVAL;
	info = &sroce_opcode_table[buf[0]];
	if (!info->mask)
		return -EINVAL;
	if (buf[1] & SROCE_BTH_TVER_MASK)
		return -EINVAL;
	if (len < info->hdr_len + SROCE_ICRC_BYTES)
		return -EINVAL;

	pkt->info = info;
	pkt->mask = info->mask;
	pkt->opcode = buf[0];
	pkt->se = buf[1] & SROCE_BTH_SE;
	pkt->pad = (buf[1] & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT;
	pkt->pkey = get_unaligned_be16(buf + 2);
	w = get_unaligned_be32(buf + 4);
	pkt->dqpn = w & SROCE_BTH_QPN_MASK;
	pkt->becn = w & SROCE_BTH_BECN;
	w = get_unaligned_be32(buf + 8);
	pkt->psn = w & SROCE_PSN_MASK;
	pkt->ackreq = w & SROCE_BTH_ACKREQ;

	if (info->mask & SROCE_M_DETH) {
		pkt->qkey = get_unaligned_be32(p);
		pkt->sqpn = get_unaligned_be32(p + 4) & SROCE_BTH_QPN_MASK;
		p += SROCE_DETH_BYTES;
	}
	if (info->mask & SROCE_M_XRCETH) {
		/* The top byte is reserved: ignored on receive. */
		pkt->xrc_srqn = get_unaligned_be32(p) & SROCE_XRCETH_SRQN_MASK;
		p += SROCE_XRCETH_BYTES;
	}
	if (info->mask & SROCE_M_FETH) {
		/* Reserved bits are ignored on receive. */
		w = get_unaligned_be32(p);
		pkt->flush_type = w & SROCE_FETH_PLT_MASK;
		pkt->flush_level = (w & SROCE_FETH_SEL_MASK) >>
				   SROCE_FETH_SEL_SHIFT;
		p += SROCE_FETH_BYTES;
	}
	if (info->mask & SROCE_M_RETH) {
		pkt->va = get_unaligned_be64(p);
		pkt->rkey = get_unaligned_be32(p + 8);
		pkt->dmalen = get_unaligned_be32(p + 12);
		p += SROCE_RETH_BYTES;
	}
	if (info->mask & SROCE_M_ATMETH) {
		pkt->va = get_unaligned_be64(p);
		pkt->rkey = get_unaligned_be32(p + 8);
		pkt->swap_add = get_unaligned_be64(p + 12);
		pkt->compare = get_unaligned_be64(p + 20);
		p += SROCE_ATMETH_BYTES;
	}
	if (info->mask & SROCE_M_AETH) {
		w = get_unaligned_be32(p);
		pkt->syndrome = w >> 24;
		pkt->msn = w & SROCE_MSN_MASK;
		p += SROCE_AETH_BYTES;
	}
	if (info->mask & SROCE_M_ATMACK) {
		pkt->orig = get_unaligned_be64(p);
		p += SROCE_ATMACK_BYTES;
	}
	if (info->mask & SROCE_M_IMMDT) {
		memcpy(&pkt->imm, p, SROCE_IMMDT_BYTES);
		p += SROCE_IMMDT_BYTES;
	}
	if (info->mask & SROCE_M_IETH)
		pkt->inv_rkey = get_unaligned_be32(p);

	pkt->payload_off = info->hdr_len;
	if (len - info->hdr_len - SROCE_ICRC_BYTES < pkt->pad)
		return -EINVAL;
	pkt->paylen = len - info->hdr_len - SROCE_ICRC_BYTES - pkt->pad;
	if (pkt->paylen && !(info->mask & SROCE_M_PAYLOAD))
		return -EINVAL;
	return 0;
}
