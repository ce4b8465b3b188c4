// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: ACK/NAK decisions — the AETH syndrome (kernel/sroce_pkt.h), the
 * completion status a NAK gives (sroce_nak_wc_status), the NAK a failed
 * scatter earns (sroce_scatter_nak_code), the RNR timer table
 * (sroce_comp.c: sroce_rnr_timer_usecs), packet lengths against the path
 * MTU (sroce_paylen_ok), where a READ response fits
 * (sroce_read_resp_fits), and whether a request continues the message
 * under way (sroce_resp.c: sroce_resp_msg_in_order).
 */

#include <kunit/test.h>

#include "../../kernel/sroce.h"
#include "../../kernel/sroce_pkt.h"

static u32 sroce_kunit_mask(u8 opcode)
{
	return sroce_opcode_table[opcode].mask;
}

static void sroce_ack_syndrome_codec(struct kunit *test)
{
	static const u8 types[] = { SROCE_AETH_ACK, SROCE_AETH_RNR_NAK,
				    SROCE_AETH_NAK };
	unsigned int t;
	u8 v;

	for (t = 0; t < ARRAY_SIZE(types); t++) {
		for (v = 0; v <= SROCE_AETH_VALUE_MASK; v++) {
			u8 s = sroce_aeth_syndrome(types[t], v);

			KUNIT_EXPECT_EQ(test, sroce_aeth_type(s), types[t]);
			KUNIT_EXPECT_EQ(test, sroce_aeth_value(s), v);
		}
	}
	/* IBTA table 44: the encodings on the wire. */
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_ACK,
						  SROCE_AETH_CREDIT_INVALID),
			0x1f);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_RNR_NAK, 12),
			0x2c);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_NAK,
						  SROCE_NAK_PSN_SEQ_ERR), 0x60);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_NAK,
						  SROCE_NAK_INVALID_REQ), 0x61);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_NAK,
						  SROCE_NAK_REM_ACCESS), 0x62);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_NAK,
						  SROCE_NAK_REM_OP_ERR), 0x63);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syndrome(SROCE_AETH_NAK,
						  SROCE_NAK_INVALID_RD_REQ),
			0x64);
	/* A value too wide cannot change the type. */
	KUNIT_EXPECT_EQ(test, sroce_aeth_type(sroce_aeth_syndrome(SROCE_AETH_ACK,
								  0xff)),
			SROCE_AETH_ACK);
	/* The reserved type 0x40 (and 0x80+) is none of the three. */
	KUNIT_EXPECT_NE(test, sroce_aeth_type(0x40), SROCE_AETH_ACK);
	KUNIT_EXPECT_NE(test, sroce_aeth_type(0x40), SROCE_AETH_RNR_NAK);
	KUNIT_EXPECT_NE(test, sroce_aeth_type(0x40), SROCE_AETH_NAK);
}

/* A NAK's AETH through the codec, as the responder sends it. */
static void sroce_ack_nak_on_the_wire(struct kunit *test)
{
	struct sroce_pkt pkt = {
		.opcode = SROCE_OP_ACK, .pkey = 0xffff, .dqpn = 0x11,
		.psn = 0xfffffe, .msn = 0x1000002,
		.syndrome = sroce_aeth_syndrome(SROCE_AETH_NAK,
						SROCE_NAK_REM_ACCESS),
	};
	u8 buf[SROCE_BTH_BYTES + SROCE_AETH_BYTES + SROCE_ICRC_BYTES];

	sroce_hdr_build(buf, &pkt);
	KUNIT_EXPECT_EQ(test, buf[SROCE_BTH_BYTES], 0x62);
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, sizeof(buf), &pkt), 0);
	KUNIT_EXPECT_EQ(test, sroce_aeth_type(pkt.syndrome), SROCE_AETH_NAK);
	KUNIT_EXPECT_EQ(test, sroce_aeth_value(pkt.syndrome),
			SROCE_NAK_REM_ACCESS);
	KUNIT_EXPECT_EQ(test, pkt.msn, 2U);
	KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(sroce_aeth_value(pkt.syndrome)),
			IB_WC_REM_ACCESS_ERR);
}

/* IBTA 9.7.5.2.x: what each NAK code completes the request with. */
static void sroce_ack_nak_status(struct kunit *test)
{
	unsigned int code;

	KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(SROCE_NAK_INVALID_REQ),
			IB_WC_REM_INV_REQ_ERR);
	KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(SROCE_NAK_REM_ACCESS),
			IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(SROCE_NAK_REM_OP_ERR),
			IB_WC_REM_OP_ERR);
	KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(SROCE_NAK_INVALID_RD_REQ),
			IB_WC_REM_OP_ERR);
	/* Reserved codes: a remote operational error, never success. */
	for (code = 5; code <= SROCE_AETH_VALUE_MASK; code++)
		KUNIT_EXPECT_EQ(test, sroce_nak_wc_status(code),
				IB_WC_REM_OP_ERR);
	for (code = 0; code <= SROCE_AETH_VALUE_MASK; code++)
		KUNIT_EXPECT_NE(test, sroce_nak_wc_status(code), IB_WC_SUCCESS);
}

/* A SEND that does not fit its receive WQE is the requester's fault. */
static void sroce_ack_scatter_nak(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_scatter_nak_code(IB_WC_LOC_LEN_ERR),
			SROCE_NAK_INVALID_REQ);
	KUNIT_EXPECT_EQ(test, sroce_scatter_nak_code(IB_WC_LOC_PROT_ERR),
			SROCE_NAK_REM_OP_ERR);
	/* And what the requester then completes with. */
	KUNIT_EXPECT_EQ(test,
			sroce_nak_wc_status(sroce_scatter_nak_code(IB_WC_LOC_LEN_ERR)),
			IB_WC_REM_INV_REQ_ERR);
	KUNIT_EXPECT_EQ(test,
			sroce_nak_wc_status(sroce_scatter_nak_code(IB_WC_LOC_PROT_ERR)),
			IB_WC_REM_OP_ERR);
}

/* IBTA table 45: the RNR NAK timer field. */
static void sroce_ack_rnr_timer(struct kunit *test)
{
	u8 v;

	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(0), 655360U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(1), 10U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(12), 640U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(14), 1280U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(31), 491520U);
	for (v = 2; v <= 31; v++)
		KUNIT_EXPECT_GT(test, sroce_rnr_timer_usecs(v),
				sroce_rnr_timer_usecs(v - 1));
	/* Only the 5-bit field counts. */
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usecs(0x2c), 640U);
}

/* The AETH credit count field: code <-> receive WQEs. */
static void sroce_ack_credit_codes(struct kunit *test)
{
	u32 n;
	u8 c;

	KUNIT_EXPECT_EQ(test, sroce_credit_count(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_credit_count(5), 6U);
	KUNIT_EXPECT_EQ(test, sroce_credit_count(18), 512U);
	KUNIT_EXPECT_EQ(test, sroce_credit_count(30), 32768U);
	KUNIT_EXPECT_EQ(test, sroce_credit_count(31), U32_MAX);
	for (c = 1; c < 31; c++)
		KUNIT_EXPECT_GT(test, sroce_credit_count(c),
				sroce_credit_count(c - 1));
	/* Encoding rounds down: never promise a WQE that is not there. */
	for (n = 0; n < 70000; n += 1 + n / 7) {
		c = sroce_credit_code(n);
		KUNIT_EXPECT_LT(test, c, 31);
		KUNIT_EXPECT_LE(test, sroce_credit_count(c), n);
		if (c < 30)
			KUNIT_EXPECT_GT(test, sroce_credit_count(c + 1), n);
	}
	KUNIT_EXPECT_EQ(test, sroce_credit_code(5), 4);
	KUNIT_EXPECT_EQ(test, sroce_credit_code(6), 5);
	KUNIT_EXPECT_EQ(test, sroce_credit_code(100000), 30);
}

/* FIRST and MIDDLE carry exactly the path MTU; LAST and ONLY at most. */
static void sroce_ack_paylen(struct kunit *test)
{
	static const u32 mtus[] = { 256, 1024, 4096 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mtus); i++) {
		u32 mtu = mtus[i];
		u32 first = sroce_kunit_mask(SROCE_OP_SEND_FIRST);
		u32 middle = sroce_kunit_mask(SROCE_OP_WRITE_MIDDLE);
		u32 last = sroce_kunit_mask(SROCE_OP_SEND_LAST_IMM);
		u32 only = sroce_kunit_mask(SROCE_OP_WRITE_ONLY);

		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(first, mtu, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(first, mtu - 1, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(first, mtu + 1, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(first, 0, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(middle, mtu, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(middle, mtu - 4, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(last, 0, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(last, 1, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(last, mtu, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(last, mtu + 1, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(only, 0, mtu));
		KUNIT_EXPECT_TRUE(test, sroce_paylen_ok(only, mtu, mtu));
		KUNIT_EXPECT_FALSE(test, sroce_paylen_ok(only, U32_MAX, mtu));
	}
}

/* A READ response must be the opcode and size its PSN calls for. */
static void sroce_ack_read_resp_fits(struct kunit *test)
{
	const u32 mtu = 1024;

	/* One packet: ONLY with the whole length. */
	KUNIT_EXPECT_TRUE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_ONLY,
						     100, true, true, 100));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_ONLY,
						      99, true, true, 100));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_FIRST,
						      100, true, true, 100));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_LAST,
						      100, true, true, 100));
	KUNIT_EXPECT_TRUE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_ONLY,
						     0, true, true, 0));
	/* Several: FIRST, MIDDLE (an MTU each), LAST with the rest. */
	KUNIT_EXPECT_TRUE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_FIRST,
						     mtu, true, false, mtu));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_ONLY,
						      mtu, true, false, mtu));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_FIRST,
						      mtu - 1, true, false,
						      mtu));
	KUNIT_EXPECT_TRUE(test,
			  sroce_read_resp_fits(SROCE_OP_READ_RESP_MIDDLE, mtu,
					       false, false, mtu));
	KUNIT_EXPECT_FALSE(test,
			   sroce_read_resp_fits(SROCE_OP_READ_RESP_FIRST, mtu,
						false, false, mtu));
	KUNIT_EXPECT_FALSE(test,
			   sroce_read_resp_fits(SROCE_OP_READ_RESP_LAST, mtu,
						false, false, mtu));
	KUNIT_EXPECT_TRUE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_LAST,
						     7, false, true, 7));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_READ_RESP_LAST,
						      8, false, true, 7));
	KUNIT_EXPECT_FALSE(test,
			   sroce_read_resp_fits(SROCE_OP_READ_RESP_MIDDLE, 7,
						false, true, 7));
	/* Not a READ response at all. */
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_ACK, 0, true,
						      true, 0));
	KUNIT_EXPECT_FALSE(test, sroce_read_resp_fits(SROCE_OP_ATOMIC_ACK, 0,
						      true, true, 0));
}

/*
 * The responder's message state: between messages only FIRST and ONLY
 * may come; inside a SEND (WRITE) only a SEND (WRITE) MIDDLE or LAST;
 * after a request failed, nothing.
 */
static void sroce_ack_msg_in_order(struct kunit *test)
{
	static const enum sroce_resp_msg states[] = {
		SROCE_RESP_IDLE, SROCE_RESP_SEND, SROCE_RESP_WRITE,
		SROCE_RESP_DROP, SROCE_RESP_FAILED,
	};
	unsigned int s, op;

	for (s = 0; s < ARRAY_SIZE(states); s++) {
		for (op = 0; op < 256; op++) {
			u32 m = sroce_kunit_mask(op);
			bool want;

			if (!m || !(m & SROCE_M_REQ))
				continue;
			switch (states[s]) {
			case SROCE_RESP_SEND:
				want = (m & SROCE_M_SEND) &&
				       (m & (SROCE_M_MIDDLE | SROCE_M_LAST));
				break;
			case SROCE_RESP_WRITE:
				want = (m & SROCE_M_WRITE) &&
				       (m & (SROCE_M_MIDDLE | SROCE_M_LAST));
				break;
			case SROCE_RESP_FAILED:
				/* A failed request: nothing is taken after it. */
				want = false;
				break;
			default:
				want = m & (SROCE_M_FIRST | SROCE_M_ONLY);
				break;
			}
			KUNIT_EXPECT_EQ_MSG(test,
					    sroce_resp_msg_in_order(states[s], m),
					    want, "state %d opcode 0x%02x",
					    states[s], op);
		}
	}
	/* The cases that matter, spelt out. */
	KUNIT_EXPECT_TRUE(test, sroce_resp_msg_in_order(SROCE_RESP_IDLE,
				sroce_kunit_mask(SROCE_OP_READ_REQ)));
	KUNIT_EXPECT_TRUE(test, sroce_resp_msg_in_order(SROCE_RESP_IDLE,
				sroce_kunit_mask(SROCE_OP_CMP_SWAP)));
	KUNIT_EXPECT_FALSE(test, sroce_resp_msg_in_order(SROCE_RESP_IDLE,
				 sroce_kunit_mask(SROCE_OP_SEND_MIDDLE)));
	KUNIT_EXPECT_FALSE(test, sroce_resp_msg_in_order(SROCE_RESP_SEND,
				 sroce_kunit_mask(SROCE_OP_SEND_ONLY)));
	KUNIT_EXPECT_FALSE(test, sroce_resp_msg_in_order(SROCE_RESP_SEND,
				 sroce_kunit_mask(SROCE_OP_WRITE_LAST)));
	KUNIT_EXPECT_TRUE(test, sroce_resp_msg_in_order(SROCE_RESP_WRITE,
				sroce_kunit_mask(SROCE_OP_WRITE_LAST_IMM)));
	KUNIT_EXPECT_FALSE(test, sroce_resp_msg_in_order(SROCE_RESP_WRITE,
				 sroce_kunit_mask(SROCE_OP_READ_REQ)));
	KUNIT_EXPECT_TRUE(test, sroce_resp_msg_in_order(SROCE_RESP_SEND,
				sroce_kunit_mask(SROCE_TRANSPORT_UC |
						 SROCE_OP_SEND_LAST_IMM)));
}

static struct kunit_case sroce_ack_cases[] = {
	KUNIT_CASE(sroce_ack_syndrome_codec),
	KUNIT_CASE(sroce_ack_nak_on_the_wire),
	KUNIT_CASE(sroce_ack_nak_status),
	KUNIT_CASE(sroce_ack_scatter_nak),
	KUNIT_CASE(sroce_ack_rnr_timer),
	KUNIT_CASE(sroce_ack_credit_codes),
	KUNIT_CASE(sroce_ack_paylen),
	KUNIT_CASE(sroce_ack_read_resp_fits),
	KUNIT_CASE(sroce_ack_msg_in_order),
	{}
};

static struct kunit_suite sroce_ack_suite = {
	.name = "sroce_ack",
	.test_cases = sroce_ack_cases,
};

kunit_test_suite(sroce_ack_suite);
