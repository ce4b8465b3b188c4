// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: 24-bit PSN arithmetic across the wrap (kernel/sroce_pkt.h): the
 * signed distance, addition, the responder's expected/duplicate/ahead
 * classification and the completer's response window.
 */

#include <kunit/test.h>

#include "../../kernel/sroce_pkt.h"

#define PSN_MAX		SROCE_PSN_MASK		/* 0xffffff */
#define PSN_HALF	0x800000

static const u32 sroce_kunit_bases[] = {
	0, 1, 2, 0x7ffffe, 0x7fffff, 0x800000, 0x800001, 0xfffffd, 0xfffffe,
	PSN_MAX,
};

static void sroce_psn_diff_basic(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, 0), 0);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(1, 0), 1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, 1), -1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(100, 40), 60);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(40, 100), -60);
}

/* Across the wrap: 0 is one after 0xffffff. */
static void sroce_psn_diff_wrap(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, PSN_MAX), 1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(PSN_MAX, 0), -1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(5, 0xfffffb), 10);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0xfffffb, 5), -10);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x7fffff, PSN_MAX), -PSN_HALF);
	/* Half the space away: the furthest ahead, the furthest behind. */
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x7fffff, 0), 0x7fffff);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(PSN_HALF, 0), -PSN_HALF);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, PSN_HALF), -PSN_HALF);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(PSN_HALF + 1, 1), -PSN_HALF);
}

/* Bits above the 24 do not count. */
static void sroce_psn_diff_high_bits(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x1000005, 5), 0);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0xff000000, PSN_MAX), 1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(3, 0xab000001), 2);
}

static void sroce_psn_add_wrap(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0, 1), 1U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(PSN_MAX, 1), 0U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0xfffffe, 3), 1U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0, PSN_MAX), PSN_MAX);
	/* Adding PSN_MAX is going back one (used for "the PSN before"). */
	KUNIT_EXPECT_EQ(test, sroce_psn_add(5, PSN_MAX), 4U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0, SROCE_PSN_MASK), PSN_MAX);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(7, 1U << 24), 7U);
}

/* diff(add(b, d), b) == d for every base and |d| < 2^23. */
static void sroce_psn_add_diff_inverse(struct kunit *test)
{
	static const s32 deltas[] = { 0, 1, -1, 2, -2, 17, -17, 4096, -4096,
				      0x7ffffe, -0x7ffffe, 0x7fffff,
				      -PSN_HALF };
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sroce_kunit_bases); i++) {
		for (j = 0; j < ARRAY_SIZE(deltas); j++) {
			u32 b = sroce_kunit_bases[i];
			u32 p = sroce_psn_add(b, (u32)deltas[j]);

			KUNIT_EXPECT_LE(test, p, PSN_MAX);
			KUNIT_EXPECT_EQ_MSG(test, sroce_psn_diff(p, b), deltas[j],
					    "base 0x%06x delta %d", b,
					    deltas[j]);
		}
	}
}

/* The responder: at, before or beyond the PSN it expects. */
static void sroce_psn_classify_wrap(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sroce_kunit_bases); i++) {
		u32 e = sroce_kunit_bases[i];

		KUNIT_EXPECT_EQ(test, sroce_psn_classify(e, e),
				SROCE_PSN_EXPECTED);
		KUNIT_EXPECT_EQ(test, sroce_psn_classify(sroce_psn_add(e, 1), e),
				SROCE_PSN_AHEAD);
		KUNIT_EXPECT_EQ(test,
				sroce_psn_classify(sroce_psn_add(e, PSN_MAX), e),
				SROCE_PSN_DUPLICATE);
		KUNIT_EXPECT_EQ(test,
				sroce_psn_classify(sroce_psn_add(e, 0x7fffff),
						   e),
				SROCE_PSN_AHEAD);
		KUNIT_EXPECT_EQ(test,
				sroce_psn_classify(sroce_psn_add(e, PSN_HALF),
						   e),
				SROCE_PSN_DUPLICATE);
	}
	/* Expecting 0: 0xffffff is the one before it. */
	KUNIT_EXPECT_EQ(test, sroce_psn_classify(PSN_MAX, 0),
			SROCE_PSN_DUPLICATE);
	KUNIT_EXPECT_EQ(test, sroce_psn_classify(0, PSN_MAX), SROCE_PSN_AHEAD);
}

/*
 * The completer takes responses for una - 1 (a repeated ACK) up to
 * max_psn - 1, and nothing else, wherever the wrap falls.
 */
static void sroce_psn_resp_window(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sroce_kunit_bases); i++) {
		u32 una = sroce_kunit_bases[i];
		u32 max = sroce_psn_add(una, 3);
		s32 d;

		for (d = -4; d <= 5; d++) {
			u32 psn = sroce_psn_add(una, (u32)d);

			KUNIT_EXPECT_EQ_MSG(test,
					    sroce_psn_in_resp_window(psn, una,
								     max),
					    d >= -1 && d < 3,
					    "una 0x%06x psn 0x%06x", una, psn);
		}
		/* Nothing outstanding: only the repeated ACK of una - 1. */
		KUNIT_EXPECT_TRUE(test,
				  sroce_psn_in_resp_window(sroce_psn_add(una,
									 PSN_MAX),
							   una, una));
		KUNIT_EXPECT_FALSE(test, sroce_psn_in_resp_window(una, una, una));
	}
}

/* A PSN near the wrap survives the header codec (24 bits, AckReq apart). */
static void sroce_psn_on_the_wire(struct kunit *test)
{
	struct sroce_pkt pkt = {
		.opcode = SROCE_OP_SEND_ONLY, .pkey = 0xffff, .ackreq = true,
	};
	u8 buf[SROCE_BTH_BYTES + SROCE_ICRC_BYTES];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sroce_kunit_bases); i++) {
		pkt.psn = sroce_psn_add(sroce_kunit_bases[i], 1);
		sroce_hdr_build(buf, &pkt);
		KUNIT_ASSERT_EQ(test, sroce_hdr_parse(buf, sizeof(buf), &pkt), 0);
		KUNIT_EXPECT_EQ(test, pkt.psn,
				sroce_psn_add(sroce_kunit_bases[i], 1));
		KUNIT_EXPECT_TRUE(test, pkt.ackreq);
	}
}

static struct kunit_case sroce_psn_cases[] = {
	KUNIT_CASE(sroce_psn_diff_basic),
	KUNIT_CASE(sroce_psn_diff_wrap),
	KUNIT_CASE(sroce_psn_diff_high_bits),
	KUNIT_CASE(sroce_psn_add_wrap),
	KUNIT_CASE(sroce_psn_add_diff_inverse),
	KUNIT_CASE(sroce_psn_classify_wrap),
	KUNIT_CASE(sroce_psn_resp_window),
	KUNIT_CASE(sroce_psn_on_the_wire),
	{}
};

static struct kunit_suite sroce_psn_suite = {
	.name = "sroce_psn",
	.test_cases = sroce_psn_cases,
};

kunit_test_suite(sroce_psn_suite);
