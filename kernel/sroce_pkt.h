/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: the InfiniBand transport headers carried by RoCEv2 (IBTA vol. 1
 * ch. 9 and annex A17), the opcode table, and the parsed form of a packet.
 *
 * On the wire every field is big-endian and headers are not aligned
 * (BTH starts 28 or 48 bytes into the IP packet), so headers are read and
 * written with the unaligned accessors, into and out of struct sroce_pkt,
 * the host-order form the transport works on. A received packet is parsed
 * and checked once (sroce_pkt_parse); nothing later trusts raw bytes.
 */
#ifndef SROCE_PKT_H
#define SROCE_PKT_H

#include <linux/types.h>
#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

/* Header sizes. */
#define SROCE_BTH_BYTES		12
/* RoCE v1: the GRH's next header when the BTH follows (IBTA 8.3.1) */
#define SROCE_GRH_NEXT_HDR	0x1b
#define SROCE_RETH_BYTES	16
#define SROCE_AETH_BYTES	4
#define SROCE_ATMETH_BYTES	28
#define SROCE_ATMACK_BYTES	8
#define SROCE_IMMDT_BYTES	4
#define SROCE_IETH_BYTES	4
#define SROCE_DETH_BYTES	8
#define SROCE_FETH_BYTES	4
#define SROCE_XRCETH_BYTES	4
#define SROCE_ICRC_BYTES	4
/* A CNP's reserved bytes after its BTH (annex A17.9.3) */
#define SROCE_CNP_BYTES		16
#define SROCE_MAX_HDR_BYTES	(SROCE_BTH_BYTES + SROCE_DETH_BYTES + \
				 SROCE_ATMETH_BYTES + SROCE_IMMDT_BYTES)

/* BTH byte 1: SE, MigReq, pad count, transport header version. */
#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_TVER_MASK	0x0f
/* BTH word 2: FECN, BECN, reserved, destination QP. */
#define SROCE_BTH_FECN		0x80000000U
#define SROCE_BTH_BECN		0x40000000U
#define SROCE_BTH_QPN_MASK	0x00ffffffU
/* BTH word 3: AckReq, reserved, PSN. */
#define SROCE_BTH_ACKREQ	0x80000000U
#define SROCE_PSN_MASK		0x00ffffffU

#define SROCE_DEFAULT_PKEY_FULL	0xffff
#define SROCE_GSI_QKEY		0x80010000U

/* IBTA 9.4.1: a message, and so a RETH's DMA length, is at most 2^31. */
#define SROCE_MAX_MSG_BYTES	(1U << 31)

/* FETH: placement type (bits 3:0) and selectivity level (bits 5:4). */
#define SROCE_FETH_PLT_MASK	0x0000000fU
#define SROCE_FETH_SEL_SHIFT	4
#define SROCE_FETH_SEL_MASK	0x00000030U

/* AETH syndrome (bits 7:5 the type, 4:0 the value). */
#define SROCE_AETH_TYPE_MASK	0xe0
#define SROCE_AETH_ACK		0x00
#define SROCE_AETH_RNR_NAK	0x20
#define SROCE_AETH_NAK		0x60
#define SROCE_AETH_VALUE_MASK	0x1f
#define SROCE_AETH_CREDIT_INVALID 0x1f	/* no end-to-end credits */
enum sroce_nak_code {
	SROCE_NAK_PSN_SEQ_ERR = 0,
	SROCE_NAK_INVALID_REQ = 1,
	SROCE_NAK_REM_ACCESS = 2,
	SROCE_NAK_REM_OP_ERR = 3,
	SROCE_NAK_INVALID_RD_REQ = 4,
};
#define SROCE_MSN_MASK		0x00ffffffU

/* Opcodes (transport in bits 7:5: RC 0x00, UC 0x20, UD 0x60, XRC 0xa0). */
enum sroce_opcode {
	SROCE_OP_SEND_FIRST = 0x00,
	SROCE_OP_SEND_MIDDLE = 0x01,
	SROCE_OP_SEND_LAST = 0x02,
	SROCE_OP_SEND_LAST_IMM = 0x03,
	SROCE_OP_SEND_ONLY = 0x04,
	SROCE_OP_SEND_ONLY_IMM = 0x05,
	SROCE_OP_WRITE_FIRST = 0x06,
	SROCE_OP_WRITE_MIDDLE = 0x07,
	SROCE_OP_WRITE_LAST = 0x08,
	SROCE_OP_WRITE_LAST_IMM = 0x09,
	SROCE_OP_WRITE_ONLY = 0x0a,
	SROCE_OP_WRITE_ONLY_IMM = 0x0b,
	SROCE_OP_READ_REQ = 0x0c,
	SROCE_OP_READ_RESP_FIRST = 0x0d,
	SROCE_OP_READ_RESP_MIDDLE = 0x0e,
	SROCE_OP_READ_RESP_LAST = 0x0f,
	SROCE_OP_READ_RESP_ONLY = 0x10,
	SROCE_OP_ACK = 0x11,
	SROCE_OP_ATOMIC_ACK = 0x12,
	SROCE_OP_CMP_SWAP = 0x13,
	SROCE_OP_FETCH_ADD = 0x14,
	SROCE_OP_SEND_LAST_INV = 0x16,
	SROCE_OP_SEND_ONLY_INV = 0x17,
	SROCE_OP_FLUSH = 0x1c,		/* IBTA 1.5 */
	SROCE_OP_ATOMIC_WRITE = 0x1d,	/* IBTA 1.5 */
	SROCE_OP_NUM = 0x1e,		/* operation codes within a transport */
};

#define SROCE_TRANSPORT_MASK	0xe0
#define SROCE_TRANSPORT_RC	0x00
#define SROCE_TRANSPORT_UC	0x20
#define SROCE_TRANSPORT_UD	0x60
#define SROCE_TRANSPORT_XRC	0xa0
#define SROCE_OP_MASK		0x1f
/* RoCE v2 Congestion Notification Packet (annex A17.9.3) */
#define SROCE_OP_CNP		0x81
/* XRCETH: the XRC SRQ a request is for (24 bits) */
#define SROCE_XRCETH_SRQN_MASK	0x00ffffffU

/* What an opcode carries and means (sroce_opcode_info.mask). */
enum sroce_op_mask {
	SROCE_M_RETH = BIT(0),
	SROCE_M_AETH = BIT(1),
	SROCE_M_ATMETH = BIT(2),
	SROCE_M_ATMACK = BIT(3),
	SROCE_M_IMMDT = BIT(4),
	SROCE_M_IETH = BIT(5),
	SROCE_M_DETH = BIT(6),
	SROCE_M_PAYLOAD = BIT(7),
	SROCE_M_REQ = BIT(8),		/* to the responder */
	SROCE_M_RESP = BIT(9),		/* to the completer */
	SROCE_M_FIRST = BIT(10),
	SROCE_M_MIDDLE = BIT(11),
	SROCE_M_LAST = BIT(12),
	SROCE_M_ONLY = BIT(13),
	SROCE_M_SEND = BIT(14),
	SROCE_M_WRITE = BIT(15),
	SROCE_M_READ = BIT(16),
	SROCE_M_ATOMIC = BIT(17),
	SROCE_M_ACK = BIT(18),		/* ACK/NAK, atomic ACK */
	SROCE_M_FETH = BIT(19),
	SROCE_M_FLUSH = BIT(20),
	SROCE_M_ATOMIC_WRITE = BIT(21),
	SROCE_M_XRCETH = BIT(22),	/* XRC requests */
	SROCE_M_CNP = BIT(23),		/* a CNP: 16 reserved bytes */
	/* Answered from a responder resource, one PSN, never re-executed. */
	SROCE_M_RD_ATOMIC = SROCE_M_READ | SROCE_M_ATOMIC | SROCE_M_FLUSH |
			    SROCE_M_ATOMIC_WRITE,
	SROCE_M_START = SROCE_M_FIRST | SROCE_M_ONLY,
	SROCE_M_END = SROCE_M_LAST | SROCE_M_ONLY,
};

struct sroce_opcode_info {
	u32 mask;			/* enum sroce_op_mask */
	u8 hdr_len;			/* BTH and every extension header */
	u16 valid_qpt;			/* BIT(IB_QPT_*) that may carry it */
};

extern const struct sroce_opcode_info sroce_opcode_table[256];

/* The host-order form of one packet's transport headers. */
struct sroce_pkt {
	const struct sroce_opcode_info *info;
	u32 mask;
	u8 net_type;			/* RDMA_NETWORK_IPV4, _IPV6, _ROCE_V1 */
	u8 opcode;
	u8 pad;
	bool se;
	bool ackreq;
	bool becn;
	u16 pkey;
	u32 dqpn;
	u32 psn;
	/* RETH, or the address part of the AtomicETH */
	u64 va;
	u32 rkey;
	u32 dmalen;
	/* AtomicETH */
	u64 swap_add;
	u64 compare;
	/* AETH */
	u8 syndrome;
	u32 msn;
	/* AtomicAckETH */
	u64 orig;
	/* ImmDt / IETH */
	__be32 imm;
	u32 inv_rkey;
	/* FETH */
	u8 flush_type;
	u8 flush_level;
	bool rxe_flush_icrc;		/* sealed as rdma_rxe seals a FLUSH */
	/* DETH */
	u32 qkey;
	u32 sqpn;
	/* XRCETH */
	u32 xrc_srqn;
	/* Receive side: where the payload is in the skb. */
	u32 payload_off;
	u32 paylen;
};

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline s32 sroce_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static inline u32 sroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SROCE_PSN_MASK;
}

/* The responder's view of a request's PSN against the one it expects. */
enum sroce_psn_class {
	SROCE_PSN_EXPECTED,	/* execute it */
	SROCE_PSN_DUPLICATE,	/* before: answer again, do not execute */
	SROCE_PSN_AHEAD,	/* beyond: packets went missing (NAK) */
};

static inline enum sroce_psn_class sroce_psn_classify(u32 psn, u32 expected)
{
	s32 d = sroce_psn_diff(psn, expected);

	if (d < 0)
		return SROCE_PSN_DUPLICATE;
	return d > 0 ? SROCE_PSN_AHEAD : SROCE_PSN_EXPECTED;
}

/*
 * The completer's window: a response may answer PSNs from una - 1 (a
 * repeated ACK of the last one acknowledged) up to, not including,
 * max_psn (the next PSN the requester will hand out).
 */
static inline bool sroce_psn_in_resp_window(u32 psn, u32 una, u32 max_psn)
{
	return sroce_psn_diff(psn, una) >= -1 &&
	       sroce_psn_diff(psn, max_psn) < 0;
}

/* IBTA 9.4.1: a message, and so a RETH's DMA length, is at most 2^31. */
#define SROCE_MAX_MSG_BYTES	(1U << 31)

/* FETH: placement type (bits 3:0) and selectivity level (bits 5:4). */
#define SROCE_FETH_PLT_MASK	0x0000000fU
#define SROCE_FETH_SEL_SHIFT	4
#define SROCE_FETH_SEL_MASK	0x00000030U

/* AETH syndrome: the type in bits 7:5, the value in bits 4:0. */
static inline u8 sroce_aeth_syndrome(u8 type, u8 value)
{
	return (type & SROCE_AETH_TYPE_MASK) | (value & SROCE_AETH_VALUE_MASK);
}

static inline u8 sroce_aeth_type(u8 syndrome)
{
	return syndrome & SROCE_AETH_TYPE_MASK;
}

static inline u8 sroce_aeth_value(u8 syndrome)
{
	return syndrome & SROCE_AETH_VALUE_MASK;
}

/* The requester's completion status for a NAK code it received. */
static inline enum ib_wc_status sroce_nak_wc_status(u8 code)
{
	switch (code) {
	case SROCE_NAK_INVALID_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	case SROCE_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

/* The NAK a responder sends when a SEND's scatter failed with @status. */
static inline enum sroce_nak_code sroce_scatter_nak_code(u8 status)
{
	return status == IB_WC_LOC_LEN_ERR ? SROCE_NAK_INVALID_REQ :
					     SROCE_NAK_REM_OP_ERR;
}

/* FIRST and MIDDLE packets carry exactly one path MTU, others at most. */
static inline bool sroce_paylen_ok(u32 mask, u32 paylen, u32 mtu)
{
	if (mask & (SROCE_M_FIRST | SROCE_M_MIDDLE))
		return paylen == mtu;
	return paylen <= mtu;
}

/*
 * Does a READ response fit its place in the READ: the opcode for the
 * first, a middle, the last or the only packet, and @want bytes?
 */
static inline bool sroce_read_resp_fits(u8 opcode, u32 paylen, bool first,
					bool last, u32 want)
{
	u8 expect;

	if (first && last)
		expect = SROCE_OP_READ_RESP_ONLY;
	else if (first)
		expect = SROCE_OP_READ_RESP_FIRST;
	else if (last)
		expect = SROCE_OP_READ_RESP_LAST;
	else
		expect = SROCE_OP_READ_RESP_MIDDLE;
	return opcode == expect && paylen == want;
}

/* sroce_comp.c */
u32 sroce_rnr_timer_usecs(u8 value);
u32 sroce_credit_count(u8 code);
u8 sroce_credit_code(u32 n);

/* sroce_opcode.c */
void sroce_hdr_build(u8 *buf, const struct sroce_pkt *pkt);
int sroce_hdr_parse(const u8 *buf, unsigned int len, struct sroce_pkt *pkt);
u32 sroce_pad(u32 paylen);

#endif /* SROCE_PKT_H */
