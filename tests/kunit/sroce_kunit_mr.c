// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: memory-region bounds and access checks (kernel/sroce_mr.c) on
 * fake struct sroce_mr: sroce_mr_covers, sroce_mr_allows (what
 * sroce_mr_get_checked applies after the key lookup), the access flags a
 * registration may ask for (sroce_mr_check_access), sroce_mr_copy
 * through a user MR's page array, and the pages sroce_mr_lend gives an
 * skb.
 */

#include <kunit/test.h>

#include "../../kernel/sroce.h"

#define L_WRITE		IB_ACCESS_LOCAL_WRITE
#define R_WRITE		IB_ACCESS_REMOTE_WRITE
#define R_READ		IB_ACCESS_REMOTE_READ
#define R_ATOMIC	IB_ACCESS_REMOTE_ATOMIC

static struct sroce_mr *sroce_kunit_mr(struct kunit *test,
				       enum sroce_mr_type type, u64 iova,
				       u64 length, int access,
				       struct ib_pd *pd)
{
	struct sroce_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mr);
	mr->type = type;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->ibmr.pd = pd;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	return mr;
}

/* [iova, iova + length): first and last byte in, one either side out. */
static void sroce_mr_covers_bounds(struct kunit *test)
{
	struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_USER, 0x10000,
					     0x3000, L_WRITE, NULL);

	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x10000, 0x3000));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x10000, 1));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x12fff, 1));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x11000, 0x2000));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x0ffff, 1));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x0ffff, 2));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x13000, 1));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x12fff, 2));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x10000, 0x3001));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0, 0x20000));
	/* Zero bytes: anywhere from the first byte to one past the last. */
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x10000, 0));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x13000, 0));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x13001, 0));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0xffff, 0));
}

/* addr + len wrapping past 2^64 is never covered, not even by a DMA MR. */
static void sroce_mr_covers_overflow(struct kunit *test)
{
	struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_USER,
					     0xffffffffffff0000ULL, 0xffff,
					     L_WRITE, NULL);
	struct sroce_mr *dma = sroce_kunit_mr(test, SROCE_MR_DMA, 0, U64_MAX,
					      L_WRITE, NULL);

	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0xffffffffffff0000ULL,
						0xffff));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0xffffffffffff0000ULL,
						 0x10000));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0xfffffffffffffff0ULL,
						 0x20));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0xffffffffffff0001ULL,
						 U64_MAX));
	/* len near 2^64 from a small address: wraps to a "small" end. */
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0xffffffffffff0010ULL,
						 0xfffffffffffffff8ULL));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(dma, 0, 0));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(dma, 0xffff888000000000ULL,
						4096));
	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(dma, 0, U64_MAX));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(dma, 1, U64_MAX));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(dma, U64_MAX, 2));
}

/* A FAST (FRWR) MR is bounded by the iova/length it was mapped with. */
static void sroce_mr_covers_fast(struct kunit *test)
{
	struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_FAST, 0x7000,
					     0x2000, 0, NULL);

	KUNIT_EXPECT_TRUE(test, sroce_mr_covers(mr, 0x7000, 0x2000));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x6fff, 0x10));
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x8ff0, 0x11));
	/* Not mapped yet: length 0 covers nothing but empty ranges. */
	mr->length = 0;
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, 0x7000, 1));
}

/*
 * Every access the MR grants, no access it does not; the PD must match.
 * 0 (a local read: gather for a send) is always granted.
 */
static void sroce_mr_allows_access(struct kunit *test)
{
	static const int wants[] = { 0, L_WRITE, R_WRITE, R_READ, R_ATOMIC,
				     L_WRITE | R_WRITE, R_READ | R_WRITE };
	static const int grants[] = {
		0, L_WRITE, L_WRITE | R_WRITE, R_READ, L_WRITE | R_ATOMIC,
		L_WRITE | R_WRITE | R_READ | R_ATOMIC,
	};
	struct ib_pd *pd = kunit_kzalloc(test, sizeof(*pd) * 2, GFP_KERNEL);
	unsigned int g, w;

	KUNIT_ASSERT_NOT_NULL(test, pd);
	for (g = 0; g < ARRAY_SIZE(grants); g++) {
		struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_USER,
						     0x1000, 0x1000,
						     grants[g], &pd[0]);

		for (w = 0; w < ARRAY_SIZE(wants); w++) {
			bool ok = (grants[g] & wants[w]) == wants[w];

			KUNIT_EXPECT_EQ_MSG(test,
					    sroce_mr_allows(mr, &pd[0], 0x1000,
							    16, wants[w]),
					    ok, "grants 0x%x wants 0x%x",
					    grants[g], wants[w]);
			/* Another PD: never. */
			KUNIT_EXPECT_FALSE(test,
					   sroce_mr_allows(mr, &pd[1], 0x1000,
							   16, wants[w]));
			/* Out of bounds: never, whatever the rights. */
			KUNIT_EXPECT_FALSE(test,
					   sroce_mr_allows(mr, &pd[0], 0x1ff8,
							   16, wants[w]));
		}
	}
}

/* A registration's access flags (ib_check_mr_access and ours). */
static void sroce_mr_check_access_flags(struct kunit *test)
{
	struct ib_device *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, dev);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, 0), 0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE), 0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, R_READ), 0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE | R_WRITE |
						    R_READ | R_ATOMIC), 0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE |
						    IB_ACCESS_RELAXED_ORDERING),
			0);
	/* Remote write or atomic needs local write. */
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, R_WRITE), -EINVAL);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, R_ATOMIC), -EINVAL);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, R_READ | R_WRITE),
			-EINVAL);
	/*
	 * Unknown bits; on-demand paging and flush, which ib_core allows
	 * only on a device that claims them.
	 */
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, BIT(30)), -EINVAL);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, IB_ACCESS_ON_DEMAND),
			-EOPNOTSUPP);
	if (IB_ACCESS_FLUSH_GLOBAL)	/* 0 before 6.2 (sroce_compat.h) */
		KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE |
							    IB_ACCESS_FLUSH_GLOBAL),
				-EOPNOTSUPP);
	/*
	 * Claimed, as sroce's query_device does: on-demand paging and global
	 * flush are allowed; ODP over huge pages (one page table entry per
	 * base page) and persistent flush (no MR is persistent memory) are
	 * still not, whatever the device claims.
	 */
	dev->attrs.kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	dev->attrs.device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, IB_ACCESS_ON_DEMAND),
			0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE | R_WRITE |
						    IB_ACCESS_ON_DEMAND), 0);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, IB_ACCESS_ON_DEMAND |
						    IB_ACCESS_HUGETLB),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE |
						    IB_ACCESS_FLUSH_GLOBAL),
			0);
	if (IB_ACCESS_FLUSH_GLOBAL) {
		dev->attrs.device_cap_flags |= IB_DEVICE_FLUSH_PERSISTENT;
		KUNIT_EXPECT_EQ(test, sroce_mr_check_access(dev, L_WRITE |
							    IB_ACCESS_FLUSH_PERSISTENT),
				-EOPNOTSUPP);
	}
}

static void sroce_kunit_free_page(void *page)
{
	__free_page(page);
}

/*
 * A user MR over two pages, its byte 0 at @offset in the first: copies
 * in and out land at the right place across the page boundary.
 */
static void sroce_mr_copy_pages(struct kunit *test)
{
	const unsigned int offset = 100;
	const u64 iova = 0x40000000 + offset;
	const u64 length = 2 * PAGE_SIZE - offset;
	struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_USER, iova, length,
					     L_WRITE, NULL);
	struct page **pages = kunit_kcalloc(test, 2, sizeof(*pages),
					    GFP_KERNEL);
	u8 *src = kunit_kzalloc(test, 300, GFP_KERNEL);
	u8 *dst = kunit_kzalloc(test, 300, GFP_KERNEL);
	u64 at = iova + PAGE_SIZE - offset - 150;	/* 150 before page 2 */
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, pages);
	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	for (i = 0; i < 2; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		KUNIT_ASSERT_EQ(test,
				kunit_add_action_or_reset(test,
							  sroce_kunit_free_page,
							  pages[i]), 0);
	}
	mr->pages = pages;
	mr->npages = 2;
	mr->offset = offset;
	for (i = 0; i < 300; i++)
		src[i] = i * 7 + 1;

	KUNIT_ASSERT_TRUE(test, sroce_mr_covers(mr, at, 300));
	KUNIT_ASSERT_EQ(test, sroce_mr_copy(mr, at, src, 300, true), 0);
	KUNIT_EXPECT_MEMEQ(test, (u8 *)page_address(pages[0]) +
			   PAGE_SIZE - 150, src, 150);
	KUNIT_EXPECT_MEMEQ(test, page_address(pages[1]), src + 150, 150);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(pages[0]))[PAGE_SIZE - 151],
			0);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(pages[1]))[150], 0);
	KUNIT_ASSERT_EQ(test, sroce_mr_copy(mr, at, dst, 300, false), 0);
	KUNIT_EXPECT_MEMEQ(test, dst, src, 300);

	/* The MR's first byte is byte @offset of its first page. */
	KUNIT_ASSERT_EQ(test, sroce_mr_copy(mr, iova, src, 1, true), 0);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(pages[0]))[offset], src[0]);
	/* And its last byte the last of the second page. */
	KUNIT_ASSERT_TRUE(test, sroce_mr_covers(mr, iova + length - 1, 1));
	KUNIT_ASSERT_EQ(test, sroce_mr_copy(mr, iova + length - 1, src + 5, 1,
					    true), 0);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(pages[1]))[PAGE_SIZE - 1],
			src[5]);
	KUNIT_EXPECT_FALSE(test, sroce_mr_covers(mr, iova + length - 1, 2));
}

/*
 * Zero-copy transmit lends the MR's pages to the skb: the skb must say
 * its fragments are shared with their owner (SKBFL_SHARED_FRAG), or a
 * layer that writes into fragments in place (ESP input, which checks the
 * flag before decrypting in place) or needs them stable would use the
 * application's memory as its own.
 */
static void sroce_mr_lend_shared(struct kunit *test)
{
	const unsigned int offset = 64;
	const u64 iova = 0x50000000 + offset;
	struct sroce_mr *mr = sroce_kunit_mr(test, SROCE_MR_USER, iova,
					     2 * PAGE_SIZE - offset, 0, NULL);
	struct page **pages = kunit_kcalloc(test, 2, sizeof(*pages),
					    GFP_KERNEL);
	struct sk_buff *skb;
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, pages);
	for (i = 0; i < 2; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		KUNIT_ASSERT_EQ(test,
				kunit_add_action_or_reset(test,
							  sroce_kunit_free_page,
							  pages[i]), 0);
	}
	mr->pages = pages;
	mr->npages = 2;
	mr->offset = offset;

	skb = alloc_skb(128, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_put(skb, 40);
	KUNIT_EXPECT_FALSE(test, skb_has_shared_frag(skb));
	/* 1000 bytes across the page boundary: two fragments. */
	KUNIT_ASSERT_EQ(test, sroce_mr_lend(mr, iova + PAGE_SIZE - offset - 500,
					    skb, 1000), 0);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 2);
	KUNIT_EXPECT_EQ(test, skb->data_len, 1000U);
	KUNIT_EXPECT_PTR_EQ(test, skb_frag_page(&skb_shinfo(skb)->frags[0]),
			    pages[0]);
	KUNIT_EXPECT_TRUE(test, skb_has_shared_frag(skb));
	kfree_skb(skb);
}

static struct kunit_case sroce_mr_cases[] = {
	KUNIT_CASE(sroce_mr_covers_bounds),
	KUNIT_CASE(sroce_mr_covers_overflow),
	KUNIT_CASE(sroce_mr_covers_fast),
	KUNIT_CASE(sroce_mr_allows_access),
	KUNIT_CASE(sroce_mr_check_access_flags),
	KUNIT_CASE(sroce_mr_copy_pages),
	KUNIT_CASE(sroce_mr_lend_shared),
	{}
};

static struct kunit_suite sroce_mr_suite = {
	.name = "sroce_mr",
	.test_cases = sroce_mr_cases,
};

kunit_test_suite(sroce_mr_suite);
