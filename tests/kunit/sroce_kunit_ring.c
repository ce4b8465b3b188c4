// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: the shared rings (kernel/sroce_queue.[ch], uapi/sroce-abi.h):
 * geometry checks, index masking, the free-running u32 indices across
 * their wrap, and the validation of the index the other side owns.
 */

#include <kunit/test.h>
#include <linux/vmalloc.h>

#include "../../kernel/sroce.h"

struct sroce_kunit_ring {
	struct sroce_ring_hdr hdr;
	u8 data[8 * 64];
};

/* An 8-entry, 64-byte-stride ring in test memory, indices at @start. */
static struct sroce_queue *sroce_kunit_ring(struct kunit *test, u32 start)
{
	struct sroce_kunit_ring *r = kunit_kzalloc(test, sizeof(*r),
						   GFP_KERNEL);
	struct sroce_queue *q = kunit_kzalloc(test, sizeof(*q), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_ASSERT_NOT_NULL(test, q);
	q->hdr = &r->hdr;
	q->data = r->data;
	q->entries = 8;
	q->stride_shift = 6;
	q->prod = start;
	q->cons = start;
	q->post_prod = start;
	q->post_cons = start;
	r->hdr.prod = start;
	r->hdr.cons = start;
	return q;
}

/* The ABI's layout: indices and flags on their own cache lines. */
static void sroce_ring_abi_layout(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, offsetof(struct sroce_ring_hdr, prod), 0UL);
	KUNIT_EXPECT_EQ(test, offsetof(struct sroce_ring_hdr, cons), 64UL);
	KUNIT_EXPECT_EQ(test, offsetof(struct sroce_ring_hdr, flags), 128UL);
	KUNIT_EXPECT_EQ(test, sizeof(struct sroce_ring_hdr), 192UL);
	KUNIT_EXPECT_GE(test, (size_t)SROCE_RING_DATA_OFFSET,
			sizeof(struct sroce_ring_hdr));
	KUNIT_EXPECT_EQ(test, sroce_queue_bytes(1, 64), (size_t)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, sroce_queue_bytes(64, 64),
			(size_t)PAGE_ALIGN(192 + 4096));
	KUNIT_EXPECT_EQ(test, sroce_queue_bytes(0x10000, 4096),
			(size_t)PAGE_ALIGN(192 + 0x10000ULL * 4096));
}

/* Entries and stride: powers of two, stride at least 64. */
static void sroce_ring_init_geometry(struct kunit *test)
{
	static const u32 bad[][2] = {
		{ 0, 64 }, { 3, 64 }, { 12, 64 }, { 0x80000001, 64 },
		{ 8, 0 }, { 8, 32 }, { 8, 96 }, { 8, 63 },
	};
	struct sroce_queue q;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test,
				    sroce_queue_init(&q, bad[i][0], bad[i][1],
						     GFP_KERNEL),
				    -EINVAL, "entries %u stride %u",
				    bad[i][0], bad[i][1]);

	KUNIT_ASSERT_EQ(test, sroce_queue_init(&q, 16, 128, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, q.entries, 16U);
	KUNIT_EXPECT_EQ(test, q.stride_shift, 7U);
	KUNIT_EXPECT_EQ(test, q.size, sroce_queue_bytes(16, 128));
	KUNIT_EXPECT_PTR_EQ(test, (void *)q.data,
			    (void *)((u8 *)q.hdr + SROCE_RING_DATA_OFFSET));
	KUNIT_EXPECT_EQ(test, q.hdr->prod, 0U);
	KUNIT_EXPECT_EQ(test, q.hdr->cons, 0U);
	KUNIT_EXPECT_EQ(test, q.hdr->flags, 0U);
	KUNIT_EXPECT_EQ(test, sroce_queue_mask(&q), 15U);
	KUNIT_EXPECT_PTR_EQ(test, sroce_queue_elem(&q, 15),
			    (void *)(q.data + 15 * 128));
	sroce_queue_free(&q);
	KUNIT_EXPECT_NULL(test, q.hdr);
}

/* Element i lives at (i & (entries - 1)) * stride, for any u32 i. */
static void sroce_ring_elem_masking(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 0);
	u32 i;

	for (i = 0; i < 20; i++)
		KUNIT_EXPECT_PTR_EQ(test, sroce_queue_elem(q, i),
				    (void *)(q->data + (i % 8) * 64));
	KUNIT_EXPECT_PTR_EQ(test, sroce_queue_elem(q, U32_MAX),
			    (void *)(q->data + 7 * 64));
	KUNIT_EXPECT_PTR_EQ(test, sroce_queue_elem(q, 0x80000000),
			    (void *)q->data);
	KUNIT_EXPECT_PTR_EQ(test, sroce_queue_elem(q, 0xfffffff9),
			    (void *)(q->data + 1 * 64));
}

/* Count, empty, full with the indices either side of 2^32. */
static void sroce_ring_count_wrap(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 0xfffffffc);

	KUNIT_EXPECT_TRUE(test, sroce_queue_empty(q));
	KUNIT_EXPECT_EQ(test, sroce_queue_count(q), 0U);
	sroce_queue_producer_publish(q, 5);		/* prod wraps to 1 */
	KUNIT_EXPECT_EQ(test, q->prod, 1U);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 1U);
	KUNIT_EXPECT_EQ(test, sroce_queue_count(q), 5U);
	KUNIT_EXPECT_FALSE(test, sroce_queue_empty(q));
	KUNIT_EXPECT_FALSE(test, sroce_queue_full(q));
	sroce_queue_producer_publish(q, 3);
	KUNIT_EXPECT_TRUE(test, sroce_queue_full(q));
	KUNIT_EXPECT_PTR_EQ(test, sroce_queue_producer_elem(q),
			    sroce_queue_consumer_elem(q));
	sroce_queue_consumer_advance(q, 8);
	KUNIT_EXPECT_EQ(test, q->hdr->cons, 4U);
	KUNIT_EXPECT_TRUE(test, sroce_queue_empty(q));
}

/*
 * The consumer accepts a shared producer index 0..entries ahead of its
 * own consumer index, wrap or not; anything else is a corrupt queue and
 * leaves the private copy alone.
 */
static void sroce_ring_refresh_prod(struct kunit *test)
{
	static const u32 starts[] = { 0, 5, 0x7ffffffe, 0xfffffffa,
				      0xffffffff };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		struct sroce_queue *q = sroce_kunit_ring(test, starts[i]);
		u32 c = starts[i];
		u32 d;

		for (d = 0; d <= 8; d++) {
			q->hdr->prod = c + d;
			KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), (int)d);
			KUNIT_EXPECT_EQ(test, q->prod, c + d);
		}
		q->hdr->prod = c + 9;			/* more than a ring */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		KUNIT_EXPECT_EQ(test, q->prod, c + 8);
		q->hdr->prod = c - 1;			/* behind the consumer */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		q->hdr->prod = c + 0x80000000;
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		KUNIT_EXPECT_EQ(test, q->prod, c + 8);
		KUNIT_EXPECT_EQ(test, q->cons, c);
	}
}

/*
 * A producer index only moves forward: once accepted, a smaller one (even
 * one still within a ring of the consumer index) is a corrupt queue.
 * Otherwise the consumer would take slots again that it already took
 * (the requester's fetch of a send queue wrapped over WQEs in flight).
 */
static void sroce_ring_refresh_prod_backwards(struct kunit *test)
{
	static const u32 starts[] = { 0, 0xfffffffc };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		struct sroce_queue *q = sroce_kunit_ring(test, starts[i]);
		u32 c = starts[i];

		q->hdr->prod = c + 6;
		KUNIT_ASSERT_EQ(test, sroce_queue_refresh_prod(q), 6);
		sroce_queue_consumer_advance(q, 1);	/* one completed */
		q->hdr->prod = c + 3;			/* behind prod, not cons */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		q->hdr->prod = c + 1;			/* at cons */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		KUNIT_EXPECT_EQ(test, q->prod, c + 6);
		KUNIT_EXPECT_EQ(test, q->cons, c + 1);
		/* The same again, or forward by the room left: fine. */
		q->hdr->prod = c + 6;
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), 5);
		q->hdr->prod = c + 9;
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), 8);
		q->hdr->prod = c + 10;			/* past the room */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), -EINVAL);
		KUNIT_EXPECT_EQ(test, q->prod, c + 9);
	}
}

/*
 * The producer accepts a shared consumer index at most entries behind its
 * own producer index and not ahead of it.
 */
static void sroce_ring_refresh_cons(struct kunit *test)
{
	static const u32 starts[] = { 0, 3, 0xfffffffd, 0xffffffff };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		struct sroce_queue *q = sroce_kunit_ring(test, starts[i]);
		u32 p = starts[i] + 8;		/* a full ring published */
		u32 d;

		q->prod = p;
		for (d = 0; d <= 8; d++) {
			q->hdr->cons = p - 8 + d;
			KUNIT_EXPECT_EQ(test, sroce_queue_refresh_cons(q), (int)d);
			KUNIT_EXPECT_EQ(test, q->cons, p - 8 + d);
		}
		q->hdr->cons = p + 1;		/* ahead of the producer */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_cons(q), -EINVAL);
		q->hdr->cons = p - 9;		/* more than a ring behind */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_cons(q), -EINVAL);
		q->hdr->cons = p - 1;		/* behind the one accepted */
		KUNIT_EXPECT_EQ(test, sroce_queue_refresh_cons(q), -EINVAL);
		KUNIT_EXPECT_EQ(test, q->cons, p);
		KUNIT_EXPECT_EQ(test, q->prod, p);
	}
}

/*
 * A kernel ULP posting to a ring the kernel also consumes keeps its own
 * pair of indices: its producer index and the consumer index it saw, set
 * under its own lock while the consumer side moves prod and cons under
 * another. Neither side's copies change the other's.
 */
static void sroce_ring_post_copies(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 0xfffffffe);
	unsigned int i;

	for (i = 0; i < 8; i++) {
		KUNIT_ASSERT_EQ(test, sroce_queue_post_room(q), 8 - (int)i);
		KUNIT_EXPECT_PTR_EQ(test, sroce_queue_post_elem(q),
				    sroce_queue_elem(q, 0xfffffffe + i));
		sroce_queue_post_publish(q, 1);
	}
	KUNIT_EXPECT_EQ(test, sroce_queue_post_room(q), 0);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 6U);
	/* The consumer's copies have not moved; it picks the posts up. */
	KUNIT_EXPECT_EQ(test, q->prod, 0xfffffffeU);
	KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), 8);
	sroce_queue_consumer_advance(q, 3);
	KUNIT_EXPECT_EQ(test, q->post_cons, 0xfffffffeU);
	KUNIT_EXPECT_EQ(test, sroce_queue_post_room(q), 3);
	KUNIT_EXPECT_EQ(test, q->post_cons, 1U);
	/* The consumer index the poster saw never moves back. */
	q->hdr->cons = 0;
	KUNIT_EXPECT_EQ(test, sroce_queue_post_room(q), -EINVAL);
	KUNIT_EXPECT_EQ(test, q->cons, 1U);
}

/* A reset: every index at the producer's, whatever it is, the ring empty. */
static void sroce_ring_resync(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 40);

	q->hdr->prod = 0x12345678;		/* anything userspace left */
	sroce_queue_resync(q);
	KUNIT_EXPECT_EQ(test, q->prod, 0x12345678U);
	KUNIT_EXPECT_EQ(test, q->cons, 0x12345678U);
	KUNIT_EXPECT_EQ(test, q->post_prod, 0x12345678U);
	KUNIT_EXPECT_EQ(test, q->post_cons, 0x12345678U);
	KUNIT_EXPECT_EQ(test, q->hdr->cons, 0x12345678U);
	KUNIT_EXPECT_TRUE(test, sroce_queue_empty(q));
	q->hdr->prod = 0x12345678 + 2;
	KUNIT_EXPECT_EQ(test, sroce_queue_refresh_prod(q), 2);
}

/* A kernel ULP's receive WR: SGE limit, a full ring, the WQE written. */
static void sroce_ring_post_recv(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 0xfffffffe);
	struct ib_sge sges[4] = {
		{ .addr = 0x1000, .length = 10, .lkey = 0x101 },
		{ .addr = 0x2000, .length = 20, .lkey = 0x202 },
		{ .addr = 0x3000, .length = 30, .lkey = 0x303 },
		{ .addr = 0x4000, .length = 40, .lkey = 0x404 },
	};
	struct ib_recv_wr wr = { .wr_id = 0xabc, .sg_list = sges, .num_sge = 3 };
	const struct sroce_recv_wqe *wqe;
	const struct sroce_sge *sge;
	unsigned int i;

	wr.num_sge = 4;
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), -EINVAL);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 0xfffffffeU);
	wr.num_sge = 3;
	KUNIT_ASSERT_EQ(test, sroce_queue_post_recv(q, 3, &wr), 0);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 0xffffffffU);
	wqe = sroce_queue_elem(q, 0xfffffffe);
	sge = (const void *)((const u8 *)wqe + SROCE_RECV_WQE_HDR);
	KUNIT_EXPECT_EQ(test, wqe->wr_id, 0xabcULL);
	KUNIT_EXPECT_EQ(test, wqe->num_sge, 3U);
	KUNIT_EXPECT_EQ(test, wqe->reserved, 0U);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, sge[i].addr, sges[i].addr);
		KUNIT_EXPECT_EQ(test, sge[i].length, sges[i].length);
		KUNIT_EXPECT_EQ(test, sge[i].lkey, sges[i].lkey);
	}
	for (i = 1; i < 8; i++)
		KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), 0);
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), -ENOMEM);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 6U);
	/* The consumer frees two: two more fit. */
	q->hdr->cons = 0;
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), 0);
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), 0);
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), -ENOMEM);
	/* A corrupt consumer index: refused, nothing written. */
	q->hdr->cons = 100;
	KUNIT_EXPECT_EQ(test, sroce_queue_post_recv(q, 3, &wr), -ENOMEM);
	KUNIT_EXPECT_EQ(test, q->hdr->prod, 8U);
}

static void sroce_ring_flags(struct kunit *test)
{
	struct sroce_queue *q = sroce_kunit_ring(test, 0);

	sroce_queue_set_flags(q, SROCE_RING_F_NEED_KICK);
	KUNIT_EXPECT_EQ(test, q->hdr->flags, SROCE_RING_F_NEED_KICK);
	sroce_queue_set_flags(q, SROCE_RING_F_ERROR);
	KUNIT_EXPECT_EQ(test, q->hdr->flags,
			SROCE_RING_F_NEED_KICK | SROCE_RING_F_ERROR);
	sroce_queue_clear_flags(q, SROCE_RING_F_NEED_KICK);
	KUNIT_EXPECT_EQ(test, q->hdr->flags, SROCE_RING_F_ERROR);
	sroce_queue_clear_flags(q, SROCE_RING_F_NEED_KICK);
	KUNIT_EXPECT_EQ(test, q->hdr->flags, SROCE_RING_F_ERROR);
}

static struct kunit_case sroce_ring_cases[] = {
	KUNIT_CASE(sroce_ring_abi_layout),
	KUNIT_CASE(sroce_ring_init_geometry),
	KUNIT_CASE(sroce_ring_elem_masking),
	KUNIT_CASE(sroce_ring_count_wrap),
	KUNIT_CASE(sroce_ring_refresh_prod),
	KUNIT_CASE(sroce_ring_refresh_prod_backwards),
	KUNIT_CASE(sroce_ring_refresh_cons),
	KUNIT_CASE(sroce_ring_post_copies),
	KUNIT_CASE(sroce_ring_resync),
	KUNIT_CASE(sroce_ring_post_recv),
	KUNIT_CASE(sroce_ring_flags),
	{}
};

static struct kunit_suite sroce_ring_suite = {
	.name = "sroce_ring",
	.test_cases = sroce_ring_cases,
};

kunit_test_suite(sroce_ring_suite);
