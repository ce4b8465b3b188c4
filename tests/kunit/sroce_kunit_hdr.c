// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: the opcode table and the header codec (kernel/sroce_opcode.c,
 * kernel/sroce_pkt.h). Built into sroce.ko when CONFIG_KUNIT is set.
 */

#include <kunit/test.h>
#include <linux/unaligned.h>

#include "../../kernel/sroce_compat.h"
#include "../../kernel/sroce_pkt.h"

#define QPT_UD_MASK	(BIT(IB_QPT_UD) | BIT(IB_QPT_GSI))
#define PLACE_MASK	(SROCE_M_FIRST | SROCE_M_MIDDLE | SROCE_M_LAST | \
			 SROCE_M_ONLY)
#define BUF_BYTES	(SROCE_MAX_HDR_BYTES + 64)

/* Every opcode the table knows, as a parameter. */
static SROCE_KUNIT_GEN(sroce_kunit_op_gen)
{
	const struct sroce_opcode_info *info = prev;

	info = info ? info + 1 : sroce_opcode_table;
	for (; info < sroce_opcode_table + ARRAY_SIZE(sroce_opcode_table);
	     info++) {
		if (info->mask) {
			snprintf(desc, KUNIT_PARAM_DESC_SIZE, "opcode 0x%02x",
				 (unsigned int)(info - sroce_opcode_table));
			return info;
		}
	}
	return NULL;
}

static u8 sroce_kunit_opcode(const struct sroce_opcode_info *info)
{
	return info - sroce_opcode_table;
}

static unsigned int sroce_kunit_hdr_len(u32 m)
{
	return SROCE_BTH_BYTES +
	       (m & SROCE_M_RETH ? SROCE_RETH_BYTES : 0) +
	       (m & SROCE_M_AETH ? SROCE_AETH_BYTES : 0) +
	       (m & SROCE_M_ATMETH ? SROCE_ATMETH_BYTES : 0) +
	       (m & SROCE_M_ATMACK ? SROCE_ATMACK_BYTES : 0) +
	       (m & SROCE_M_IMMDT ? SROCE_IMMDT_BYTES : 0) +
	       (m & SROCE_M_IETH ? SROCE_IETH_BYTES : 0) +
	       (m & SROCE_M_DETH ? SROCE_DETH_BYTES : 0) +
	       (m & SROCE_M_FETH ? SROCE_FETH_BYTES : 0) +
	       (m & SROCE_M_XRCETH ? SROCE_XRCETH_BYTES : 0) +
	       (m & SROCE_M_CNP ? SROCE_CNP_BYTES : 0);
}

/*
 * 63 opcodes: 25 RC (FLUSH and ATOMIC WRITE among them), 12 UC, 2 UD,
 * 23 XRC (RC's from SEND FIRST to SEND ONLY with invalidate) and RoCE
 * v2's CNP.
 */
static void sroce_hdr_table_count(struct kunit *test)
{
	unsigned int rc = 0, uc = 0, ud = 0, xrc = 0, other = 0, op;

	for (op = 0; op < 256; op++) {
		if (!sroce_opcode_table[op].mask)
			continue;
		switch (op & SROCE_TRANSPORT_MASK) {
		case SROCE_TRANSPORT_RC:
			rc++;
			break;
		case SROCE_TRANSPORT_UC:
			uc++;
			break;
		case SROCE_TRANSPORT_UD:
			ud++;
			break;
		case SROCE_TRANSPORT_XRC:
			xrc++;
			break;
		default:
			other++;
		}
	}
	KUNIT_EXPECT_EQ(test, rc, 25U);
	KUNIT_EXPECT_EQ(test, uc, 12U);
	KUNIT_EXPECT_EQ(test, ud, 2U);
	KUNIT_EXPECT_EQ(test, xrc, 23U);
	KUNIT_EXPECT_EQ(test, other, 1U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[SROCE_OP_CNP].mask,
			(u32)SROCE_M_CNP);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[SROCE_TRANSPORT_XRC |
						 0x15].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[SROCE_TRANSPORT_XRC |
						 SROCE_OP_FLUSH].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[0x15].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[0x18].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[0x1b].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[0x1e].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[SROCE_TRANSPORT_UC |
						 SROCE_OP_FLUSH].mask, 0U);
	KUNIT_EXPECT_EQ(test, sroce_opcode_table[0xff].mask, 0U);
}

/* What one table entry says must agree with itself and with IBTA. */
static void sroce_hdr_table_entry(struct kunit *test)
{
	const struct sroce_opcode_info *info = test->param_value;
	u8 op = sroce_kunit_opcode(info);
	u32 m = info->mask;
	u8 transport = op & SROCE_TRANSPORT_MASK;

	KUNIT_EXPECT_EQ(test, info->hdr_len, sroce_kunit_hdr_len(m));
	KUNIT_EXPECT_LE(test, info->hdr_len, SROCE_MAX_HDR_BYTES);
	/* A CNP: BTH and 16 reserved bytes, to a QP of any type. */
	if (op == SROCE_OP_CNP) {
		KUNIT_EXPECT_EQ(test, info->hdr_len,
				SROCE_BTH_BYTES + SROCE_CNP_BYTES);
		KUNIT_EXPECT_EQ(test, m, (u32)SROCE_M_CNP);
		KUNIT_EXPECT_EQ(test, info->valid_qpt,
				(u16)(BIT(IB_QPT_RC) | BIT(IB_QPT_UC) |
				      BIT(IB_QPT_UD) | BIT(IB_QPT_XRC_INI) |
				      BIT(IB_QPT_XRC_TGT)));
		return;
	}
	/* Exactly one direction, one place in its message. */
	KUNIT_EXPECT_EQ(test, hweight32(m & (SROCE_M_REQ | SROCE_M_RESP)), 1U);
	KUNIT_EXPECT_EQ(test, hweight32(m & PLACE_MASK), 1U);
	KUNIT_EXPECT_FALSE(test, (m & SROCE_M_IMMDT) && (m & SROCE_M_IETH));
	KUNIT_EXPECT_FALSE(test, (m & SROCE_M_RETH) && (m & SROCE_M_ATMETH));
	if (transport == SROCE_TRANSPORT_RC)
		KUNIT_EXPECT_EQ(test, info->valid_qpt, (u16)BIT(IB_QPT_RC));
	else if (transport == SROCE_TRANSPORT_UC)
		KUNIT_EXPECT_EQ(test, info->valid_qpt, (u16)BIT(IB_QPT_UC));
	else if (transport == SROCE_TRANSPORT_UD)
		KUNIT_EXPECT_EQ(test, info->valid_qpt, (u16)QPT_UD_MASK);
	/* XRC: requests go to a target, answers to an initiator. */
	else
		KUNIT_EXPECT_EQ(test, info->valid_qpt,
				(u16)BIT(m & SROCE_M_REQ ? IB_QPT_XRC_TGT :
					 IB_QPT_XRC_INI));
	/* XRCETH exactly on XRC requests, and XRC is RC's meaning. */
	KUNIT_EXPECT_EQ(test, !!(m & SROCE_M_XRCETH),
			transport == SROCE_TRANSPORT_XRC && (m & SROCE_M_REQ));
	if (transport == SROCE_TRANSPORT_XRC)
		KUNIT_EXPECT_EQ(test, m & ~SROCE_M_XRCETH,
				sroce_opcode_table[op & SROCE_OP_MASK].mask);
	/* DETH exactly on UD; RETH on the first WRITE packet and READ. */
	KUNIT_EXPECT_EQ(test, !!(m & SROCE_M_DETH),
			transport == SROCE_TRANSPORT_UD);
	if ((m & SROCE_M_WRITE) && (m & SROCE_M_REQ))
		KUNIT_EXPECT_EQ(test, !!(m & SROCE_M_RETH),
				!!(m & SROCE_M_START));
	if (m & SROCE_M_ATOMIC)
		KUNIT_EXPECT_TRUE(test, m & (SROCE_M_ATMETH | SROCE_M_ATMACK));
	/* FETH on FLUSH only, with a RETH; ATOMIC WRITE has a RETH. */
	KUNIT_EXPECT_EQ(test, !!(m & SROCE_M_FETH), !!(m & SROCE_M_FLUSH));
	if (m & (SROCE_M_FLUSH | SROCE_M_ATOMIC_WRITE))
		KUNIT_EXPECT_TRUE(test, (m & SROCE_M_RETH) &&
				  (m & SROCE_M_ONLY) && (m & SROCE_M_REQ));
	/*
	 * Payload: SEND, WRITE, ATOMIC WRITE and READ responses; never ACKs,
	 * READ requests or FLUSH.
	 */
	KUNIT_EXPECT_EQ(test, !!(m & SROCE_M_PAYLOAD),
			!!(m & (SROCE_M_SEND | SROCE_M_WRITE |
				SROCE_M_ATOMIC_WRITE)) ||
			((m & SROCE_M_READ) && (m & SROCE_M_RESP)));
}

/* Field values with bits set outside every field's width. */
static void sroce_kunit_fill(struct sroce_pkt *pkt, u8 op, u32 paylen,
			     u32 seed)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = op;
	pkt->pad = sroce_pad(paylen);
	pkt->se = seed & 1;
	pkt->ackreq = seed & 2;
	pkt->pkey = 0xffff - seed;
	pkt->dqpn = 0xa5123456 + seed;		/* 24 bits go out */
	pkt->psn = 0xfffffe + seed;		/* near the wrap */
	pkt->va = 0x0123456789abcdefULL ^ seed;
	pkt->rkey = 0xdeadbeef ^ seed;
	pkt->dmalen = 0x80000001 + seed;
	pkt->swap_add = 0xfedcba9876543210ULL + seed;
	pkt->compare = 0x1122334455667788ULL - seed;
	pkt->syndrome = 0x60 | (seed & 0x1f);
	pkt->msn = 0x77abcdef + seed;		/* 24 bits go out */
	pkt->orig = 0x8899aabbccddeeffULL + seed;
	pkt->imm = cpu_to_be32(0xcafef00d + seed);
	pkt->inv_rkey = 0x13572468 + seed;
	pkt->qkey = 0x80010000 + seed;
	pkt->sqpn = 0xff000001 + seed;		/* 24 bits go out */
	pkt->flush_type = (seed * 5) & 0xf;
	pkt->flush_level = seed & 3;
	pkt->xrc_srqn = 0xee000123 + seed;	/* 24 bits go out */
}

/* Build, parse: every field the opcode carries comes back. */
static void sroce_hdr_round_trip(struct kunit *test)
{
	const struct sroce_opcode_info *info = test->param_value;
	u8 op = sroce_kunit_opcode(info);
	u32 m = info->mask;
	static const u32 lens[] = { 0, 1, 2, 3, 4, 13, 31 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		u32 paylen = (m & SROCE_M_PAYLOAD) ? lens[i] : 0;
		u8 buf[BUF_BYTES];
		struct sroce_pkt in, out;
		unsigned int len;

		sroce_kunit_fill(&in, op, paylen, i);
		len = info->hdr_len + paylen + in.pad + SROCE_ICRC_BYTES;
		memset(buf, 0x5a, sizeof(buf));
		sroce_hdr_build(buf, &in);
		memset(&out, 0xcc, sizeof(out));
		KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, len, &out), 0);

		KUNIT_EXPECT_PTR_EQ(test, out.info, info);
		KUNIT_EXPECT_EQ(test, out.mask, m);
		KUNIT_EXPECT_EQ(test, out.opcode, op);
		KUNIT_EXPECT_EQ(test, out.pad, in.pad);
		KUNIT_EXPECT_EQ(test, out.se, in.se);
		KUNIT_EXPECT_EQ(test, out.ackreq, in.ackreq);
		KUNIT_EXPECT_FALSE(test, out.becn);
		KUNIT_EXPECT_EQ(test, out.pkey, in.pkey);
		KUNIT_EXPECT_EQ(test, out.dqpn, in.dqpn & SROCE_BTH_QPN_MASK);
		KUNIT_EXPECT_EQ(test, out.psn, in.psn & SROCE_PSN_MASK);
		KUNIT_EXPECT_EQ(test, out.payload_off, (u32)info->hdr_len);
		KUNIT_EXPECT_EQ(test, out.paylen, paylen);
		/* BTH byte 1: MigReq always, transport version 0. */
		KUNIT_EXPECT_TRUE(test, buf[1] & SROCE_BTH_MIG);
		KUNIT_EXPECT_EQ(test, buf[1] & SROCE_BTH_TVER_MASK, 0);
		/* Nothing written past the headers. */
		KUNIT_EXPECT_EQ(test, buf[info->hdr_len], 0x5a);

		if (m & SROCE_M_DETH) {
			KUNIT_EXPECT_EQ(test, out.qkey, in.qkey);
			KUNIT_EXPECT_EQ(test, out.sqpn,
					in.sqpn & SROCE_BTH_QPN_MASK);
		}
		if (m & (SROCE_M_RETH | SROCE_M_ATMETH)) {
			KUNIT_EXPECT_EQ(test, out.va, in.va);
			KUNIT_EXPECT_EQ(test, out.rkey, in.rkey);
		}
		if (m & SROCE_M_RETH)
			KUNIT_EXPECT_EQ(test, out.dmalen, in.dmalen);
		if (m & SROCE_M_ATMETH) {
			KUNIT_EXPECT_EQ(test, out.swap_add, in.swap_add);
			KUNIT_EXPECT_EQ(test, out.compare, in.compare);
		}
		if (m & SROCE_M_AETH) {
			KUNIT_EXPECT_EQ(test, out.syndrome, in.syndrome);
			KUNIT_EXPECT_EQ(test, out.msn, in.msn & SROCE_MSN_MASK);
		}
		if (m & SROCE_M_ATMACK)
			KUNIT_EXPECT_EQ(test, out.orig, in.orig);
		if (m & SROCE_M_IMMDT)
			KUNIT_EXPECT_EQ(test, out.imm, in.imm);
		if (m & SROCE_M_IETH)
			KUNIT_EXPECT_EQ(test, out.inv_rkey, in.inv_rkey);
		if (m & SROCE_M_FETH) {
			KUNIT_EXPECT_EQ(test, out.flush_type, in.flush_type);
			KUNIT_EXPECT_EQ(test, out.flush_level, in.flush_level);
		}
		if (m & SROCE_M_XRCETH)
			KUNIT_EXPECT_EQ(test, out.xrc_srqn,
					in.xrc_srqn & SROCE_XRCETH_SRQN_MASK);
	}
}

/* Too short for the opcode's headers plus ICRC, by one byte: rejected. */
static void sroce_hdr_short(struct kunit *test)
{
	const struct sroce_opcode_info *info = test->param_value;
	u8 op = sroce_kunit_opcode(info);
	u8 buf[BUF_BYTES];
	struct sroce_pkt pkt;
	unsigned int len;

	sroce_kunit_fill(&pkt, op, 0, 0);
	sroce_hdr_build(buf, &pkt);
	for (len = 0; len < info->hdr_len + SROCE_ICRC_BYTES; len++)
		KUNIT_EXPECT_EQ_MSG(test, sroce_hdr_parse(buf, len, &pkt),
				    -EINVAL, "len %u", len);
	KUNIT_EXPECT_EQ(test, sroce_hdr_parse(buf, len, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.paylen, 0U);
}

/*
 * A pad count larger than what follows the headers is rejected; bytes
 * after the headers are rejected where the opcode has no payload.
 */
static void sroce_hdr_bad_pad_and_payload(struct kunit *test)
{
	const struct sroce_opcode_info *info = test->param_value;
	u8 op = sroce_kunit_opcode(info);
	unsigned int icrc_at = info->hdr_len;
	u8 buf[BUF_BYTES];
	struct sroce_pkt pkt;
	u8 pad;

	sroce_kunit_fill(&pkt, op, 0, 0);
	for (pad = 1; pad <= 3; pad++) {
		pkt.pad = pad;
		sroce_hdr_build(buf, &pkt);
		/* Room for pad - 1 bytes only. */
		KUNIT_EXPECT_EQ(test, sroce_hdr_parse(buf, icrc_at + pad - 1 +
						      SROCE_ICRC_BYTES, &pkt),
				-EINVAL);
		/* Exactly the pad: no payload, accepted for every opcode. */
		KUNIT_EXPECT_EQ(test, sroce_hdr_parse(buf, icrc_at + pad +
						      SROCE_ICRC_BYTES, &pkt),
				0);
		KUNIT_EXPECT_EQ(test, pkt.paylen, 0U);
		KUNIT_EXPECT_EQ(test, pkt.pad, pad);
	}
	pkt.pad = 0;
	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_EQ(test, sroce_hdr_parse(buf, icrc_at + 4 +
					      SROCE_ICRC_BYTES, &pkt),
			(info->mask & SROCE_M_PAYLOAD) ? 0 : -EINVAL);
}

/* Opcodes the table does not know, and a transport version other than 0. */
static void sroce_hdr_reject_unknown(struct kunit *test)
{
	u8 buf[BUF_BYTES] = {};
	struct sroce_pkt pkt;
	unsigned int op, bad = 0;
	u8 tver;

	for (op = 0; op < 256; op++) {
		if (sroce_opcode_table[op].mask)
			continue;
		buf[0] = op;
		KUNIT_EXPECT_EQ_MSG(test, sroce_hdr_parse(buf, sizeof(buf), &pkt),
				    -EINVAL, "opcode 0x%02x", op);
		bad++;
	}
	/* RC 25 (FLUSH, ATOMIC WRITE included), UC 12, UD 2, XRC 23, CNP 1 */
	KUNIT_EXPECT_EQ(test, bad, 256U - 63U);

	sroce_kunit_fill(&pkt, SROCE_OP_SEND_ONLY, 0, 0);
	sroce_hdr_build(buf, &pkt);
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, 16, &pkt), 0);
	for (tver = 1; tver <= SROCE_BTH_TVER_MASK; tver++) {
		buf[1] = (buf[1] & ~SROCE_BTH_TVER_MASK) | tver;
		KUNIT_EXPECT_EQ(test, sroce_hdr_parse(buf, 16, &pkt), -EINVAL);
	}
}

/* The bytes on the wire, by hand (IBTA 9.2-9.4): big-endian, in order. */
static void sroce_hdr_wire_bytes(struct kunit *test)
{
	static const u8 write_only_imm[] = {
		/* BTH: opcode, SE|M|pad 2|tver 0, pkey, rsvd|dqpn, A|psn */
		0x0b, 0xe0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56,
		0x80, 0xab, 0xcd, 0xef,
		/* RETH: va, rkey, dmalen */
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x02,
		/* ImmDt */
		0xca, 0xfe, 0xf0, 0x0d,
	};
	static const u8 ud_send_only[] = {
		0x64, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00,
		/* DETH: qkey, rsvd|sqpn */
		0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11,
	};
	static const u8 atomic_ack[] = {
		0x12, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x07,
		0x00, 0xff, 0xff, 0xff,
		/* AETH: syndrome, msn */
		0x1f, 0x00, 0x00, 0x09,
		/* AtomicAckETH */
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
	};
	static const u8 xrc_write_only[] = {
		/* BTH: XRC WRITE ONLY, M|pad 0, pkey, rsvd|dqpn, A|psn */
		0xaa, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x21,
		0x80, 0x00, 0x00, 0x03,
		/* XRCETH: rsvd|srqn, before the RETH (IBTA annex A14) */
		0x00, 0x04, 0x05, 0x06,
		/* RETH */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00,
		0x00, 0x00, 0x00, 0x77, 0x00, 0x00, 0x00, 0x08,
	};
	static const u8 flush[] = {
		0x1c, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x05,
		0x80, 0x00, 0x00, 0x10,
		/* FETH: selectivity 1 (bits 5:4), placement 1 (bits 3:0) */
		0x00, 0x00, 0x00, 0x11,
		/* RETH */
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
		0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x20, 0x00,
	};
	struct sroce_pkt pkt = {
		.opcode = SROCE_OP_WRITE_ONLY_IMM, .se = true, .ackreq = true,
		.pad = 2, .pkey = 0xffff, .dqpn = 0x123456, .psn = 0xabcdef,
		.va = 0x0123456789abcdefULL, .rkey = 0xdeadbeef, .dmalen = 2,
		.imm = cpu_to_be32(0xcafef00d),
	};
	u8 buf[BUF_BYTES];

	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_MEMEQ(test, buf, write_only_imm, sizeof(write_only_imm));

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = SROCE_TRANSPORT_UD | SROCE_OP_SEND_ONLY;
	pkt.pkey = 0xffff;
	pkt.dqpn = 1;
	pkt.qkey = SROCE_GSI_QKEY;
	pkt.sqpn = 0x11;
	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_MEMEQ(test, buf, ud_send_only, sizeof(ud_send_only));

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = SROCE_OP_ATOMIC_ACK;
	pkt.pkey = 0xffff;
	pkt.dqpn = 7;
	pkt.psn = SROCE_PSN_MASK;
	pkt.syndrome = SROCE_AETH_CREDIT_INVALID;
	pkt.msn = 9;
	pkt.orig = 0x8899aabbccddeeffULL;
	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_MEMEQ(test, buf, atomic_ack, sizeof(atomic_ack));

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = SROCE_OP_FLUSH;
	pkt.pkey = 0xffff;
	pkt.dqpn = 5;
	pkt.psn = 0x10;
	pkt.ackreq = true;
	pkt.flush_type = 1;
	pkt.flush_level = 1;
	pkt.va = 0x7f0000001000ULL;
	pkt.rkey = 0x1234;
	pkt.dmalen = 0x2000;
	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_MEMEQ(test, buf, flush, sizeof(flush));
	/* FETH bits outside the two fields are ignored on receive. */
	buf[12] = 0xff;
	buf[13] = 0xff;
	buf[14] = 0xff;
	buf[15] = 0xc2;
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, sizeof(flush) +
					      SROCE_ICRC_BYTES, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.flush_type, 2);
	KUNIT_EXPECT_EQ(test, pkt.flush_level, 0);
	KUNIT_EXPECT_EQ(test, pkt.rkey, 0x1234U);

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = SROCE_TRANSPORT_XRC | SROCE_OP_WRITE_ONLY;
	pkt.pkey = 0xffff;
	pkt.dqpn = 0x21;
	pkt.psn = 3;
	pkt.ackreq = true;
	pkt.xrc_srqn = 0x040506;
	pkt.va = 0x4000;
	pkt.rkey = 0x77;
	pkt.dmalen = 8;
	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_MEMEQ(test, buf, xrc_write_only, sizeof(xrc_write_only));
	/* The XRCETH's reserved byte is ignored on receive. */
	buf[12] = 0xff;
	memset(buf + sizeof(xrc_write_only), 0, 8 + SROCE_ICRC_BYTES);
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, sizeof(xrc_write_only) + 8 +
					      SROCE_ICRC_BYTES, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.xrc_srqn, 0x040506U);
	KUNIT_EXPECT_EQ(test, pkt.rkey, 0x77U);
	KUNIT_EXPECT_EQ(test, pkt.paylen, 8U);
}

/* FECN/BECN and the reserved bits: BECN read, the rest ignored. */
static void sroce_hdr_becn(struct kunit *test)
{
	u8 buf[BUF_BYTES];
	struct sroce_pkt pkt;

	sroce_kunit_fill(&pkt, SROCE_OP_ACK, 0, 0);
	sroce_hdr_build(buf, &pkt);
	buf[4] = 0xff;		/* FECN, BECN, reserved */
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, 20, &pkt), 0);
	KUNIT_EXPECT_TRUE(test, pkt.becn);
	KUNIT_EXPECT_EQ(test, pkt.dqpn, 0x123456U);
	buf[4] = 0x80;		/* FECN only */
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, 20, &pkt), 0);
	KUNIT_EXPECT_FALSE(test, pkt.becn);
	/* The reserved bits of BTH word 3. */
	buf[8] |= 0x7f;
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, 20, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.psn, 0xfffffeU);
}

static void sroce_hdr_pad(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_pad(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_pad(1), 3U);
	KUNIT_EXPECT_EQ(test, sroce_pad(2), 2U);
	KUNIT_EXPECT_EQ(test, sroce_pad(3), 1U);
	KUNIT_EXPECT_EQ(test, sroce_pad(4), 0U);
	KUNIT_EXPECT_EQ(test, sroce_pad(4097), 3U);
	KUNIT_EXPECT_EQ(test, sroce_pad(U32_MAX), 1U);
}

static struct kunit_case sroce_hdr_cases[] = {
	KUNIT_CASE(sroce_hdr_table_count),
	KUNIT_CASE_PARAM(sroce_hdr_table_entry, sroce_kunit_op_gen),
	KUNIT_CASE_PARAM(sroce_hdr_round_trip, sroce_kunit_op_gen),
	KUNIT_CASE_PARAM(sroce_hdr_short, sroce_kunit_op_gen),
	KUNIT_CASE_PARAM(sroce_hdr_bad_pad_and_payload, sroce_kunit_op_gen),
	KUNIT_CASE(sroce_hdr_reject_unknown),
	KUNIT_CASE(sroce_hdr_wire_bytes),
	KUNIT_CASE(sroce_hdr_becn),
	KUNIT_CASE(sroce_hdr_pad),
	{}
};

static struct kunit_suite sroce_hdr_suite = {
	.name = "sroce_hdr",
	.test_cases = sroce_hdr_cases,
};

kunit_test_suite(sroce_hdr_suite);
