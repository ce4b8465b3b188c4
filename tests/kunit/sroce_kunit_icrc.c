// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: the ICRC (kernel/sroce_icrc.c) against packets rdma_rxe sent,
 * the same packets as nonlinear skbs, the fields it masks, an independent
 * computation for IPv6 and a RoCE v1 frame computed apart (Python).
 *
 * The rxe packets (from the IPv4 header to the ICRC) were captured with
 * tcpdump on vethA in tests/kunit/capture-rxe.sh: rxe0 (10.77.0.1, in
 * init_net) talking to sroce1 (10.77.0.2) with ibv_rc_pingpong -s 13, and
 * -s 3000 -m 1024; tests/kunit/rxe-capture.pcap is that capture.
 */

#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <linux/unaligned.h>

#include "../../kernel/sroce.h"
#include "../../kernel/sroce_pkt.h"

#define L3_UDP_V4	28	/* IPv4 header (no options) + UDP */
#define L3_UDP_V6	48

/* From tests/kunit/roce-v1-vector.py. */
static const u8 sroce_kunit_v1_send_only[] = {
	0x62, 0x81, 0x23, 0x45, 0x00, 0x20, 0x1b, 0x40, 0xfe, 0x80, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x77, 0x00, 0x01,
	0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50, 0x54, 0x00, 0xff,
	0xfe, 0x77, 0x00, 0x02, 0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
	0x80, 0x12, 0x34, 0x56, 0x52, 0x6f, 0x43, 0x45, 0x20, 0x76, 0x31, 0x20,
	0x66, 0x72, 0x61, 0x6d, 0x65, 0x00, 0x00, 0x00, 0xf3, 0x51, 0xc6, 0x21,
};

/* ACK (0x11), PSN 0x9070ee, syndrome 0x1f, MSN 1, to QP 0x10. */
static const u8 sroce_kunit_rxe_ack[] = {
	0x45, 0x00, 0x00, 0x30, 0xc1, 0xab, 0x40, 0x00, 0x40, 0x11, 0x64, 0x75,
	0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02, 0xc1, 0x10, 0x12, 0xb7,
	0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x10,
	0x00, 0x90, 0x70, 0xee, 0x1f, 0x00, 0x00, 0x01, 0xdc, 0x3d, 0xe0, 0x1d,
};

/* SEND_ONLY (0x04), AckReq, PSN 0xd77bd3, 13 bytes of payload, pad 3. */
static const u8 sroce_kunit_rxe_send_only[] = {
	0x45, 0x00, 0x00, 0x3c, 0xc1, 0xac, 0x40, 0x00, 0x40, 0x11, 0x64, 0x68,
	0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02, 0xc1, 0x10, 0x12, 0xb7,
	0x00, 0x28, 0x00, 0x00, 0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x10,
	0x80, 0xd7, 0x7b, 0xd3, 0x00, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x00, 0x00, 0x00, 0xfc, 0xa4, 0xef, 0x6b,
};

/* SEND_LAST (0x02), AckReq, PSN 0x816b25, QP 0x11, 952 bytes, no pad. */
static const u8 sroce_kunit_rxe_send_last[] = {
	0x45, 0x00, 0x03, 0xe4, 0xc3, 0xe1, 0x40, 0x00, 0x40, 0x11, 0x5e, 0x8b,
	0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02, 0xc1, 0x32, 0x12, 0xb7,
	0x03, 0xd0, 0x00, 0x00, 0x02, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
	0x80, 0x81, 0x6b, 0x25, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b,
	0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0xe4, 0x59, 0x82, 0xb1,
};

struct sroce_kunit_vec {
	const char *name;
	const u8 *bytes;
	unsigned int len;
};

static const struct sroce_kunit_vec sroce_kunit_rxe_vecs[] = {
	{ "rxe ACK", sroce_kunit_rxe_ack, sizeof(sroce_kunit_rxe_ack) },
	{ "rxe SEND_ONLY 13 B", sroce_kunit_rxe_send_only,
	  sizeof(sroce_kunit_rxe_send_only) },
	{ "rxe SEND_LAST 952 B", sroce_kunit_rxe_send_last,
	  sizeof(sroce_kunit_rxe_send_last) },
};

static void sroce_kunit_vec_desc(const struct sroce_kunit_vec *v, char *desc)
{
	strscpy(desc, v->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(sroce_kunit_rxe, sroce_kunit_rxe_vecs, sroce_kunit_vec_desc);

static void sroce_kunit_skb_free(void *skb)
{
	kfree_skb(skb);
}

/* A linear skb holding @len bytes of @bytes (from the IP header on). */
static struct sk_buff *sroce_kunit_linear(struct kunit *test, const u8 *bytes,
					  unsigned int len)
{
	struct sk_buff *skb = alloc_skb(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							sroce_kunit_skb_free,
							skb), 0);
	skb_put_data(skb, bytes, len);
	return skb;
}

/*
 * An skb with @head bytes of @bytes in its linear part, then page
 * fragments of @frags[i] bytes (each placed @pg_off into its page), and
 * the rest, if any, in a frag_list skb.
 */
static struct sk_buff *sroce_kunit_nonlinear(struct kunit *test,
					     const u8 *bytes, unsigned int len,
					     unsigned int head,
					     const unsigned int *frags,
					     unsigned int nfrags,
					     unsigned int pg_off)
{
	struct sk_buff *skb = sroce_kunit_linear(test, bytes, head);
	unsigned int pos = head, i;

	for (i = 0; i < nfrags && pos < len; i++) {
		unsigned int n = min(frags[i], len - pos);
		struct page *page = alloc_page(GFP_KERNEL);

		KUNIT_ASSERT_NOT_NULL(test, page);
		KUNIT_ASSERT_LE(test, pg_off + n, (unsigned int)PAGE_SIZE);
		memcpy(page_address(page) + pg_off, bytes + pos, n);
		skb_add_rx_frag(skb, i, page, pg_off, n, PAGE_SIZE);
		pos += n;
	}
	if (pos < len) {
		struct sk_buff *tail = alloc_skb(len - pos, GFP_KERNEL);

		KUNIT_ASSERT_NOT_NULL(test, tail);
		skb_put_data(tail, bytes + pos, len - pos);
		skb_shinfo(skb)->frag_list = tail;
		skb->len += tail->len;
		skb->data_len += tail->len;
		skb->truesize += tail->truesize;
	}
	KUNIT_ASSERT_EQ(test, skb->len, len);
	return skb;
}

/* sroce_icrc() over an IPv4 packet in @skb, as the receive path calls it. */
static u32 sroce_kunit_icrc4(struct sk_buff *skb, unsigned int len)
{
	const u8 *bth = skb->data + L3_UDP_V4;
	unsigned int hdr_len = sroce_opcode_table[bth[0]].hdr_len;

	return sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV4, bth, hdr_len,
			  L3_UDP_V4 + hdr_len,
			  len - L3_UDP_V4 - hdr_len - SROCE_ICRC_BYTES);
}

static u32 sroce_kunit_wire_icrc(const u8 *bytes, unsigned int len)
{
	return get_unaligned_le32(bytes + len - SROCE_ICRC_BYTES);
}

/* The CRC engine itself: the CRC-32 check value. */
static void sroce_icrc_crc32_check(struct kunit *test)
{
	static const char check[] = "123456789";

	KUNIT_EXPECT_EQ(test, ~crc32_le(~0U, check, 9), 0xcbf43926U);
}

/* rxe's packets: our ICRC is the one rxe put on the wire. */
static void sroce_icrc_rxe_linear(struct kunit *test)
{
	const struct sroce_kunit_vec *v = test->param_value;
	struct sk_buff *skb = sroce_kunit_linear(test, v->bytes, v->len);

	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, v->len),
			sroce_kunit_wire_icrc(v->bytes, v->len));
}

/* rxe's packets parse as what ibv_rc_pingpong sent. */
static void sroce_icrc_rxe_parse(struct kunit *test)
{
	struct sroce_pkt pkt;
	const u8 *p;

	p = sroce_kunit_rxe_send_only;
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(p + L3_UDP_V4,
					      sizeof(sroce_kunit_rxe_send_only) -
					      L3_UDP_V4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, SROCE_OP_SEND_ONLY);
	KUNIT_EXPECT_EQ(test, pkt.pad, 3);
	KUNIT_EXPECT_EQ(test, pkt.paylen, 13U);
	KUNIT_EXPECT_EQ(test, pkt.dqpn, 0x10U);
	KUNIT_EXPECT_EQ(test, pkt.psn, 0xd77bd3U);
	KUNIT_EXPECT_TRUE(test, pkt.ackreq);
	KUNIT_EXPECT_EQ(test, pkt.pkey, 0xffff);

	p = sroce_kunit_rxe_ack;
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(p + L3_UDP_V4,
					      sizeof(sroce_kunit_rxe_ack) -
					      L3_UDP_V4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, SROCE_OP_ACK);
	KUNIT_EXPECT_EQ(test, pkt.syndrome, SROCE_AETH_CREDIT_INVALID);
	KUNIT_EXPECT_EQ(test, sroce_aeth_type(pkt.syndrome), SROCE_AETH_ACK);
	KUNIT_EXPECT_EQ(test, pkt.msn, 1U);
	KUNIT_EXPECT_EQ(test, pkt.psn, 0x9070eeU);
	KUNIT_EXPECT_EQ(test, pkt.paylen, 0U);

	p = sroce_kunit_rxe_send_last;
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(p + L3_UDP_V4,
					      sizeof(sroce_kunit_rxe_send_last) -
					      L3_UDP_V4, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, SROCE_OP_SEND_LAST);
	KUNIT_EXPECT_EQ(test, pkt.paylen, 952U);
	KUNIT_EXPECT_EQ(test, pkt.pad, 0);
}

/*
 * The 13-byte SEND as nonlinear skbs: the payload split across page
 * fragments with the pad and the ICRC sharing the last one, at the end
 * and in the middle of pages, part of the payload in the linear area,
 * and the tail in a frag_list skb. Same ICRC every time.
 */
static void sroce_icrc_rxe_nonlinear_pad(struct kunit *test)
{
	static const unsigned int split_a[] = { 5, 4, 4 + 3 + 4 };
	static const unsigned int split_b[] = { 1, 1, 1, 1, 1, 15 };
	static const unsigned int split_c[] = { 12, 8 };
	static const unsigned int split_d[] = { 3 };
	const u8 *bytes = sroce_kunit_rxe_send_only;
	unsigned int len = sizeof(sroce_kunit_rxe_send_only);
	unsigned int hdrs = L3_UDP_V4 + SROCE_BTH_BYTES;
	u32 want = sroce_kunit_wire_icrc(bytes, len);
	struct sk_buff *skb;

	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_a,
				    ARRAY_SIZE(split_a), 0);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 3);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);

	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_a,
				    ARRAY_SIZE(split_a), PAGE_SIZE - 11);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);

	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_b,
				    ARRAY_SIZE(split_b), 100);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 6);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);

	/* Payload, pad and ICRC each straddle a fragment boundary. */
	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_c,
				    ARRAY_SIZE(split_c), 7);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);

	/* Two payload bytes linear, then a fragment, then a frag_list. */
	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs + 2, split_d,
				    ARRAY_SIZE(split_d), 0);
	KUNIT_EXPECT_NOT_NULL(test, skb_shinfo(skb)->frag_list);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);

	/* All of it in a frag_list. */
	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, NULL, 0, 0);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);
}

/* The 952-byte SEND_LAST split over pages, and over a page boundary. */
static void sroce_icrc_rxe_nonlinear_large(struct kunit *test)
{
	static const unsigned int split_a[] = { 100, 500, 356 };
	static const unsigned int split_b[] = { 1, 900, 50, 5 };
	const u8 *bytes = sroce_kunit_rxe_send_last;
	unsigned int len = sizeof(sroce_kunit_rxe_send_last);
	unsigned int hdrs = L3_UDP_V4 + SROCE_BTH_BYTES;
	u32 want = sroce_kunit_wire_icrc(bytes, len);
	struct sk_buff *skb;

	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_a,
				    ARRAY_SIZE(split_a), PAGE_SIZE - 600);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);
	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs, split_b,
				    ARRAY_SIZE(split_b), 64);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);
	skb = sroce_kunit_nonlinear(test, bytes, len, hdrs + 475, split_a,
				    1, 0);
	KUNIT_EXPECT_EQ(test, sroce_kunit_icrc4(skb, len), want);
}

/*
 * The fields routers may change are masked (IPv4 TOS, TTL, header
 * checksum; UDP checksum; BTH FECN/BECN/reserved); any other byte counts.
 */
static void sroce_icrc_masked_fields(struct kunit *test)
{
	static const unsigned int masked[] = { 1, 8, 10, 11, 26, 27,
					       L3_UDP_V4 + 4 };
	static const unsigned int counted[] = { 0, 2, 4, 6, 9, 12, 19, 20, 22,
						24, L3_UDP_V4, L3_UDP_V4 + 5,
						L3_UDP_V4 + 11,
						L3_UDP_V4 + 12, /* payload */
						L3_UDP_V4 + 25 + 2 /* pad */ };
	unsigned int len = sizeof(sroce_kunit_rxe_send_only);
	u32 want = sroce_kunit_wire_icrc(sroce_kunit_rxe_send_only, len);
	u8 bytes[sizeof(sroce_kunit_rxe_send_only)];
	struct sk_buff *skb;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(masked); i++) {
		memcpy(bytes, sroce_kunit_rxe_send_only, len);
		bytes[masked[i]] ^= 0xa5;
		skb = sroce_kunit_linear(test, bytes, len);
		KUNIT_EXPECT_EQ_MSG(test, sroce_kunit_icrc4(skb, len), want,
				    "byte %u", masked[i]);
	}
	for (i = 0; i < ARRAY_SIZE(counted); i++) {
		memcpy(bytes, sroce_kunit_rxe_send_only, len);
		bytes[counted[i]] ^= 0x01;
		skb = sroce_kunit_linear(test, bytes, len);
		KUNIT_EXPECT_NE_MSG(test, sroce_kunit_icrc4(skb, len), want,
				    "byte %u", counted[i]);
	}
}

/*
 * An independent ICRC (IBTA A17.3.3, written from the spec): eight 0xff
 * bytes, then the packet up to the ICRC with the variant fields set to
 * ones, CRC-32 from ~0, inverted.
 */
static u32 sroce_kunit_icrc_ref(const u8 *bytes, unsigned int len, bool ipv6)
{
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };
	unsigned int l3 = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u8 copy[128];
	u32 crc;

	if (WARN_ON(len > sizeof(copy)))
		return 0;
	memcpy(copy, bytes, len);
	if (ipv6) {
		copy[0] |= 0x0f;		/* traffic class ... */
		copy[1] = 0xff;			/* ... and flow label */
		copy[2] = 0xff;
		copy[3] = 0xff;
		copy[7] = 0xff;			/* hop limit */
	} else {
		copy[1] = 0xff;			/* TOS */
		copy[8] = 0xff;			/* TTL */
		copy[10] = 0xff;		/* header checksum */
		copy[11] = 0xff;
	}
	copy[l3 + 6] = 0xff;			/* UDP checksum */
	copy[l3 + 7] = 0xff;
	copy[l3 + 8 + 4] = 0xff;		/* BTH FECN, BECN, reserved */
	crc = crc32_le(~0U, lrh, sizeof(lrh));
	crc = crc32_le(crc, copy, len - SROCE_ICRC_BYTES);
	return ~crc;
}

static void sroce_icrc_reference_v4(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test,
			sroce_kunit_icrc_ref(sroce_kunit_rxe_send_only,
					     sizeof(sroce_kunit_rxe_send_only),
					     false),
			sroce_kunit_wire_icrc(sroce_kunit_rxe_send_only,
					      sizeof(sroce_kunit_rxe_send_only)));
	KUNIT_EXPECT_EQ(test,
			sroce_kunit_icrc_ref(sroce_kunit_rxe_ack,
					     sizeof(sroce_kunit_rxe_ack), false),
			sroce_kunit_wire_icrc(sroce_kunit_rxe_ack,
					      sizeof(sroce_kunit_rxe_ack)));
}

/*
 * IPv6: a WRITE_ONLY with 5 bytes (pad 3) built by sroce_hdr_build(),
 * checked against the reference; traffic class, flow label and hop
 * limit do not count, the addresses do. Linear and nonlinear.
 */
static void sroce_icrc_ipv6(struct kunit *test)
{
	static const unsigned int split[] = { 2, 3 + 3 + 4 };
	struct sroce_pkt pkt = {
		.opcode = SROCE_OP_WRITE_ONLY, .pad = 3, .pkey = 0xffff,
		.dqpn = 0x000abc, .psn = 0xffffff, .ackreq = true,
		.va = 0x7f0012345678ULL, .rkey = 0x1234, .dmalen = 5,
	};
	unsigned int hdr_len = sroce_opcode_table[pkt.opcode].hdr_len;
	unsigned int len = L3_UDP_V6 + hdr_len + 5 + 3 + SROCE_ICRC_BYTES;
	u8 bytes[L3_UDP_V6 + 28 + 12];
	struct ipv6hdr *ip6h = (struct ipv6hdr *)bytes;
	struct udphdr *udph = (struct udphdr *)(bytes + sizeof(*ip6h));
	struct sk_buff *skb;
	u32 want, got;

	KUNIT_ASSERT_EQ(test, len, (unsigned int)sizeof(bytes));
	memset(bytes, 0, sizeof(bytes));
	ip6h->version = 6;
	ip6h->payload_len = htons(len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = 64;
	ip6h->saddr.s6_addr[0] = 0xfd;
	ip6h->saddr.s6_addr[15] = 1;
	ip6h->daddr.s6_addr[0] = 0xfd;
	ip6h->daddr.s6_addr[15] = 2;
	udph->source = htons(49152);
	udph->dest = htons(4791);
	udph->len = htons(len - sizeof(*ip6h));
	sroce_hdr_build(bytes + L3_UDP_V6, &pkt);
	memcpy(bytes + L3_UDP_V6 + hdr_len, "hello", 5);
	want = sroce_kunit_icrc_ref(bytes, len, true);

	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV6, skb->data + L3_UDP_V6, hdr_len,
			 L3_UDP_V6 + hdr_len, 5 + 3);
	KUNIT_EXPECT_EQ(test, got, want);

	skb = sroce_kunit_nonlinear(test, bytes, len, L3_UDP_V6 + hdr_len,
				    split, ARRAY_SIZE(split), PAGE_SIZE - 12);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV6, skb->data + L3_UDP_V6, hdr_len,
			 L3_UDP_V6 + hdr_len, 5 + 3);
	KUNIT_EXPECT_EQ(test, got, want);

	ip6h->priority = 5;
	ip6h->flow_lbl[0] = 0x0a;
	ip6h->flow_lbl[2] = 0x77;
	ip6h->hop_limit = 3;
	udph->check = htons(0x1234);
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV6, skb->data + L3_UDP_V6, hdr_len,
			 L3_UDP_V6 + hdr_len, 5 + 3);
	KUNIT_EXPECT_EQ(test, got, want);

	ip6h->daddr.s6_addr[15] = 3;
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV6, skb->data + L3_UDP_V6, hdr_len,
			 L3_UDP_V6 + hdr_len, 5 + 3);
	KUNIT_EXPECT_NE(test, got, want);
}

/*
 * RoCE v1: a SEND_ONLY in a GRH (traffic class 0x28, flow label 0x12345,
 * hop limit 64), 13 bytes, pad 3, whose ICRC tests/kunit/roce-v1-vector.py
 * computed with Python's zlib from annex A16's pseudo-packet (no UDP
 * header). The masked fields (traffic class, flow label, hop limit;
 * FECN, BECN) do not count; a GID, the P_Key and the payload do. Linear
 * and nonlinear.
 */
static void sroce_icrc_roce_v1(struct kunit *test)
{
	static const unsigned int split[] = { 5, 8 };
	const unsigned int grh = sizeof(struct ipv6hdr), hdr_len = 12;
	const unsigned int len = sizeof(sroce_kunit_v1_send_only);
	const unsigned int paylen = len - grh - hdr_len - SROCE_ICRC_BYTES;
	u32 want = get_unaligned_le32(sroce_kunit_v1_send_only + len - 4);
	u8 bytes[sizeof(sroce_kunit_v1_send_only)];
	struct ipv6hdr *ip6h = (struct ipv6hdr *)bytes;
	struct sroce_pkt pkt;
	struct sk_buff *skb;
	u32 got;

	memcpy(bytes, sroce_kunit_v1_send_only, len);
	KUNIT_ASSERT_EQ(test, sroce_hdr_parse(bytes + grh, len - grh, &pkt), 0);
	KUNIT_EXPECT_EQ(test, pkt.opcode, SROCE_OP_SEND_ONLY);
	KUNIT_EXPECT_EQ(test, pkt.paylen + pkt.pad, paylen);
	KUNIT_EXPECT_EQ(test, ip6h->nexthdr, SROCE_GRH_NEXT_HDR);

	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_EQ(test, got, want);

	skb = sroce_kunit_nonlinear(test, bytes, len, grh + hdr_len, split,
				    ARRAY_SIZE(split), PAGE_SIZE - 8);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_EQ(test, got, want);

	/* What routers may change: traffic class, flow label, hop limit. */
	ip6h->priority = 0;
	ip6h->flow_lbl[0] = 0xa0;
	ip6h->flow_lbl[1] = 0;
	ip6h->flow_lbl[2] = 0x77;
	ip6h->hop_limit = 1;
	bytes[grh + 4] |= 0xc0;		/* FECN, BECN */
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_EQ(test, got, want);

	/* What they may not: a GID, the P_Key, the payload. */
	ip6h->daddr.s6_addr[15] ^= 1;
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_NE(test, got, want);
	ip6h->daddr.s6_addr[15] ^= 1;
	bytes[grh + 2] = 0x7f;
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_NE(test, got, want);
	bytes[grh + 2] = 0xff;
	bytes[grh + hdr_len] ^= 0x20;
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_NE(test, got, want);

	/* Summed as if a UDP header followed (RoCE v2, IPv6): not the same. */
	bytes[grh + hdr_len] ^= 0x20;
	skb = sroce_kunit_linear(test, bytes, len);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_ROCE_V1, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_EQ(test, got, want);
	got = sroce_icrc(skb, skb->data, RDMA_NETWORK_IPV6, skb->data + grh,
			 hdr_len, grh + hdr_len, paylen);
	KUNIT_EXPECT_NE(test, got, want);
}

/* A bitwise CRC-32 (reflected, no inversion inside): the reference. */
static u32 sroce_kunit_crc_bitwise(u32 crc, const u8 *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? 0xedb88320U : 0);
	}
	return crc;
}

/*
 * @engine against the bitwise reference: every length up to 300 bytes at
 * three alignments, and whole packets of path MTU 1024 and 4096, from
 * running CRCs that change with every sum.
 */
static void sroce_kunit_engine_check(struct kunit *test,
				     enum sroce_crc_engine engine)
{
	static const size_t big[] = { 1024, 4096 };
	u8 *buf = kunit_kmalloc(test, 4096 + 8, GFP_KERNEL);
	u32 seed = 0x4791;
	size_t off, len, i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < 4096 + 8; i++) {
		seed = seed * 1103515245U + 12345U;
		buf[i] = seed >> 16;
	}
	for (off = 0; off < 8; off += 3) {
		for (len = 0; len <= 300 + ARRAY_SIZE(big); len++) {
			size_t n = len <= 300 ? len : big[len - 301];
			u32 want = sroce_kunit_crc_bitwise(seed, buf + off, n);
			u32 got = sroce_crc32_with(engine, seed, buf + off, n);

			if (got != want) {
				KUNIT_FAIL(test, "%zu bytes at offset %zu: %08x, want %08x",
					   n, off, got, want);
				return;
			}
			seed = got ^ (u32)n;
		}
	}
	KUNIT_EXPECT_EQ(test, ~sroce_crc32_with(engine, ~0U, "123456789", 9),
			0xcbf43926U);
}

/* crc32_le(), the engine every kernel has. */
static void sroce_icrc_engine_lib(struct kunit *test)
{
	sroce_kunit_engine_check(test, SROCE_CRC_LIB);
}

/* The crypto API's "crc32" (crc32-pclmul or crc32-generic), when there. */
static void sroce_icrc_engine_shash(struct kunit *test)
{
	if (!sroce_crc_have_shash())
		kunit_skip(test, "the crypto API has no \"crc32\" here");
	sroce_kunit_engine_check(test, SROCE_CRC_SHASH);
}

static void sroce_kunit_restore_engine(void *engine)
{
	sroce_crc_set_engine((enum sroce_crc_engine)(uintptr_t)engine);
}

/*
 * rxe's packets again with the crypto API's engine in use, whichever the
 * module chose at load: the other engine gives the same ICRCs, linear,
 * over pages and frag_lists, and over IPv6.
 */
static void sroce_icrc_rxe_other_engine(struct kunit *test)
{
	enum sroce_crc_engine was = sroce_crc_engine();
	enum sroce_crc_engine other = was == SROCE_CRC_SHASH ? SROCE_CRC_LIB :
							       SROCE_CRC_SHASH;
	const u8 *bytes = sroce_kunit_rxe_send_last;
	unsigned int len = sizeof(sroce_kunit_rxe_send_last);

	if (other == SROCE_CRC_SHASH && !sroce_crc_have_shash())
		kunit_skip(test, "the crypto API has no \"crc32\" here");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							sroce_kunit_restore_engine,
							(void *)(uintptr_t)was), 0);
	KUNIT_ASSERT_EQ(test, sroce_crc_set_engine(other), 0);
	KUNIT_EXPECT_EQ(test, sroce_crc_engine(), other);

	KUNIT_EXPECT_EQ(test,
			sroce_kunit_icrc4(sroce_kunit_linear(test, bytes, len),
					  len),
			sroce_kunit_wire_icrc(bytes, len));
	sroce_icrc_rxe_nonlinear_pad(test);
	sroce_icrc_rxe_nonlinear_large(test);
	sroce_icrc_ipv6(test);
}

static int sroce_icrc_suite_init(struct kunit_suite *suite)
{
	sroce_icrc_init();	/* idempotent; module init did it already */
	return 0;
}

static struct kunit_case sroce_icrc_cases[] = {
	KUNIT_CASE(sroce_icrc_crc32_check),
	KUNIT_CASE_PARAM(sroce_icrc_rxe_linear, sroce_kunit_rxe_gen_params),
	KUNIT_CASE(sroce_icrc_rxe_parse),
	KUNIT_CASE(sroce_icrc_rxe_nonlinear_pad),
	KUNIT_CASE(sroce_icrc_rxe_nonlinear_large),
	KUNIT_CASE(sroce_icrc_masked_fields),
	KUNIT_CASE(sroce_icrc_reference_v4),
	KUNIT_CASE(sroce_icrc_ipv6),
	KUNIT_CASE(sroce_icrc_roce_v1),
	KUNIT_CASE(sroce_icrc_engine_lib),
	KUNIT_CASE(sroce_icrc_engine_shash),
	KUNIT_CASE(sroce_icrc_rxe_other_engine),
	{}
};

static struct kunit_suite sroce_icrc_suite = {
	.name = "sroce_icrc",
	.suite_init = sroce_icrc_suite_init,
	.test_cases = sroce_icrc_cases,
};

kunit_test_suite(sroce_icrc_suite);
