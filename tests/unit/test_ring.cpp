// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// provider/ring.hpp: geometry helpers, producer/consumer index rules,
// u32 wrap-around, garbage indices from a broken kernel, the NEED_KICK
// protocol, and a two-thread stress test of the acquire/release pairing.
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "ring.hpp"

using namespace sroce;

namespace {

constexpr uint64_t kPage = 4096;

// A page-aligned, zeroed stand-in for a ring mmap()ed from the kernel.
class ring_mapping {
public:
	ring_mapping(uint32_t entries, uint32_t stride)
		: entries_(entries), stride_(stride),
		  len_(ring_mapping_length(entries, stride, kPage))
	{
		mem_ = aligned_alloc(kPage, len_);
		if (mem_)
			memset(mem_, 0, len_);
	}
	~ring_mapping() { free(mem_); }
	ring_mapping(const ring_mapping &) = delete;
	ring_mapping &operator=(const ring_mapping &) = delete;

	void *base() const { return mem_; }
	uint64_t length() const { return len_; }
	struct sroce_ring_hdr *hdr() const
	{
		return static_cast<struct sroce_ring_hdr *>(mem_);
	}
	unsigned char *elem(uint32_t i) const
	{
		return static_cast<unsigned char *>(mem_) + SROCE_RING_DATA_OFFSET +
		       static_cast<size_t>(i & (entries_ - 1)) * stride_;
	}
	// What the kernel does at creation: both indices at `start`.
	void init_indices(uint32_t start)
	{
		hdr()->prod = start;
		hdr()->cons = start;
	}
	template <class Ring>
	bool attach(Ring &r) const
	{
		return r.attach(mem_, len_, entries_, stride_);
	}

private:
	uint32_t entries_, stride_;
	uint64_t len_;
	void *mem_ = nullptr;
};

bool inside(const void *p, const ring_mapping &m, uint32_t stride)
{
	auto *b = static_cast<const unsigned char *>(m.base());
	auto *c = static_cast<const unsigned char *>(p);
	return c >= b + SROCE_RING_DATA_OFFSET && c + stride <= b + m.length();
}

} // namespace

// ---- geometry ------------------------------------------------------------------

static_assert(round_up_pow2(0) == 1 && round_up_pow2(1) == 1);
static_assert(round_up_pow2(2) == 2 && round_up_pow2(3) == 4);
static_assert(round_up_pow2(64) == 64 && round_up_pow2(65) == 128);
static_assert(round_up_pow2(0x80000000u) == 0x80000000u);
static_assert(round_up_pow2(0x80000001u) == 0 && round_up_pow2(UINT32_MAX) == 0);
static_assert(ring_mapping_length(1, 64, 4096) == 4096);
static_assert(ring_mapping_length(60, 64, 4096) == 4096);	// 192 + 3840
static_assert(ring_mapping_length(62, 64, 4096) == 8192);	// 192 + 3968
static_assert(ring_mapping_length(64, 64, 4096) == 8192);	// 192 + 4096
static_assert(ring_mapping_length(1024, 64, 65536) == 131072);
static_assert(ring_geometry_ok(64, 64, 8192));
static_assert(!ring_geometry_ok(64, 64, 4096));			// too short

TEST(RingGeometry, RoundUpPow2)
{
	EXPECT_EQ(round_up_pow2(5), 8u);
	EXPECT_EQ(round_up_pow2(1000), 1024u);
	EXPECT_EQ(round_up_pow2(1024), 1024u);
	EXPECT_EQ(round_up_pow2(1025), 2048u);
	for (uint32_t shift = 0; shift < 32; shift++) {
		const uint32_t p = 1u << shift;
		EXPECT_EQ(round_up_pow2(p), p) << shift;
		if (p > 2) {
			EXPECT_EQ(round_up_pow2(p - 1), p) << shift;
		}
		if (shift < 31) {
			EXPECT_EQ(round_up_pow2(p + 1), p << 1) << shift;
		}
	}
}

TEST(RingGeometry, MappingLength)
{
	// 192 + 61 * 64 = 4096: exactly one page, no rounding.
	EXPECT_EQ(ring_bytes(61, 64), 4096u);
	EXPECT_EQ(ring_mapping_length(61, 64, 4096), 4096u);
	EXPECT_EQ(ring_mapping_length(62, 64, 4096), 8192u);
	EXPECT_EQ(ring_mapping_length(256, 128, 4096),
		  page_align(192 + 256 * 128, 4096));
	EXPECT_EQ(ring_mapping_length(256, 128, 4096) % 4096, 0u);
	// The largest u32 geometry does not overflow u64.
	EXPECT_EQ(ring_bytes(0x80000000u, 0x80000000u),
		  192u + (uint64_t{1} << 62));
}

TEST(RingGeometry, GeometryOk)
{
	EXPECT_TRUE(ring_geometry_ok(1, 64, 4096));
	EXPECT_TRUE(ring_geometry_ok(8, 256, ring_bytes(8, 256)));
	EXPECT_FALSE(ring_geometry_ok(8, 256, ring_bytes(8, 256) - 1));
	EXPECT_FALSE(ring_geometry_ok(0, 64, 4096));		// no entries
	EXPECT_FALSE(ring_geometry_ok(6, 64, 4096));		// not pow2
	EXPECT_FALSE(ring_geometry_ok(8, 96, 4096));		// stride not pow2
	EXPECT_FALSE(ring_geometry_ok(8, 32, 4096));		// stride < 64
	EXPECT_FALSE(ring_geometry_ok(8, 64, 4096, 128));	// under min_stride
	EXPECT_TRUE(ring_geometry_ok(8, 128, 4096, 128));
	EXPECT_FALSE(ring_geometry_ok(8, 0, 4096));
}

TEST(RingAttach, RejectsBadGeometryAndLeavesDetached)
{
	ring_mapping m(8, 64);
	ASSERT_NE(m.base(), nullptr);
	producer_ring p;
	EXPECT_FALSE(p.attached());
	EXPECT_FALSE(p.attach(nullptr, m.length(), 8, 64));
	EXPECT_FALSE(p.attach(m.base(), m.length(), 6, 64));
	EXPECT_FALSE(p.attach(m.base(), m.length(), 8, 48));
	EXPECT_FALSE(p.attach(m.base(), ring_bytes(8, 64) - 1, 8, 64));
	// Misaligned mapping address.
	EXPECT_FALSE(p.attach(static_cast<char *>(m.base()) + 4, m.length() - 4, 8, 64));
	EXPECT_FALSE(p.attached());

	ASSERT_TRUE(p.attach(m.base(), m.length(), 8, 64));
	EXPECT_TRUE(p.attached());
	EXPECT_EQ(p.entries(), 8u);
	EXPECT_EQ(p.stride(), 64u);
	// A failed re-attach detaches.
	EXPECT_FALSE(p.attach(m.base(), m.length(), 3, 64));
	EXPECT_FALSE(p.attached());
}

TEST(RingAttach, SeedsShadowFromOwnedIndex)
{
	ring_mapping m(16, 64);
	m.hdr()->prod = 0x1234;
	m.hdr()->cons = 0x1230;
	producer_ring p;
	consumer_ring c;
	ASSERT_TRUE(m.attach(p));
	ASSERT_TRUE(m.attach(c));
	EXPECT_EQ(p.index(), 0x1234u);
	EXPECT_EQ(c.index(), 0x1230u);
	EXPECT_EQ(p.free_slots(), 12u);
	EXPECT_EQ(c.available(), 4u);
}

// ---- producer ----------------------------------------------------------------------

TEST(RingProducer, FillsToFullAndSlotsAreTheElements)
{
	ring_mapping m(8, 128);
	producer_ring p;
	ASSERT_TRUE(m.attach(p));
	EXPECT_EQ(p.free_slots(), 8u);
	for (uint32_t i = 0; i < 8; i++) {
		EXPECT_EQ(p.slot(0), m.elem(i));
		EXPECT_EQ(p.slot(1), m.elem(i + 1));
		memset(p.slot(), static_cast<int>(0xa0 + i), 128);
		p.publish();
		EXPECT_EQ(m.hdr()->prod, i + 1);
		EXPECT_EQ(p.free_slots(), 7 - i);
	}
	EXPECT_EQ(p.free_slots(), 0u);
	for (uint32_t i = 0; i < 8; i++) {
		EXPECT_EQ(m.elem(i)[0], 0xa0 + i);
		EXPECT_EQ(m.elem(i)[127], 0xa0 + i);
	}
	// The kernel consumes 3: room for 3 again, and the next slot is the
	// first one it released.
	m.hdr()->cons = 3;
	EXPECT_EQ(p.free_slots(), 3u);
	EXPECT_EQ(p.slot(), m.elem(0));
	m.hdr()->cons = 8;
	EXPECT_EQ(p.free_slots(), 8u);
}

TEST(RingProducer, PublishBatch)
{
	ring_mapping m(16, 64);
	producer_ring p;
	ASSERT_TRUE(m.attach(p));
	for (uint32_t i = 0; i < 5; i++)
		*static_cast<uint32_t *>(p.slot(i)) = 100 + i;
	// Nothing is visible before publish.
	EXPECT_EQ(m.hdr()->prod, 0u);
	p.publish(5);
	EXPECT_EQ(m.hdr()->prod, 5u);
	EXPECT_EQ(p.index(), 5u);
	for (uint32_t i = 0; i < 5; i++)
		EXPECT_EQ(*reinterpret_cast<uint32_t *>(m.elem(i)), 100 + i);
	EXPECT_EQ(p.free_slots(), 11u);
	// The producer never writes cons or flags.
	EXPECT_EQ(m.hdr()->cons, 0u);
	EXPECT_EQ(m.hdr()->flags, 0u);
}

TEST(RingProducer, WrapsAcrossU32Boundary)
{
	constexpr uint32_t kEntries = 8;
	ring_mapping m(kEntries, 64);
	const uint32_t start = 0xfffffffdu;	// 3 below the wrap
	m.init_indices(start);
	producer_ring p;
	ASSERT_TRUE(m.attach(p));
	EXPECT_EQ(p.free_slots(), kEntries);

	uint32_t kernel_cons = start;
	uint32_t fulls = 0;
	for (uint32_t n = 0; n < 40; n++) {
		// The kernel consumes 3 whenever the ring is full, so the ring
		// keeps running full across the wrap.
		if (p.free_slots() == 0) {
			fulls++;
			ASSERT_EQ(p.index() - kernel_cons, kEntries) << n;
			for (int k = 0; k < 3; k++, kernel_cons++)
				ASSERT_EQ(*reinterpret_cast<uint32_t *>(m.elem(kernel_cons)),
					  kernel_cons - start);
			m.hdr()->cons = kernel_cons;
		}
		ASSERT_EQ(p.free_slots(), kEntries - (p.index() - kernel_cons)) << n;
		ASSERT_EQ(p.slot(), m.elem(start + n)) << n;
		*static_cast<uint32_t *>(p.slot()) = n;
		p.publish();
		ASSERT_EQ(m.hdr()->prod, static_cast<uint32_t>(start + n + 1));
	}
	EXPECT_GE(fulls, 10u);
	EXPECT_EQ(p.index(), start + 40);	// wrapped to 37
	EXPECT_EQ(p.index(), 37u);
}

TEST(RingProducer, FullAtWrapBoundary)
{
	ring_mapping m(4, 64);
	m.hdr()->cons = 0xfffffffeu;
	m.hdr()->prod = 2;	// 4 ahead of cons across the wrap: full
	producer_ring p;
	ASSERT_TRUE(m.attach(p));
	EXPECT_EQ(p.free_slots(), 0u);
	m.hdr()->cons = 0xffffffffu;
	EXPECT_EQ(p.free_slots(), 1u);
	m.hdr()->cons = 2;
	EXPECT_EQ(p.free_slots(), 4u);
}

TEST(RingProducer, GarbageConsIsTreatedAsFull)
{
	ring_mapping m(8, 64);
	m.init_indices(100);
	producer_ring p;
	ASSERT_TRUE(m.attach(p));
	p.publish(3);	// prod = 103

	const uint32_t prod = p.index();
	const uint32_t garbage[] = {
		prod + 5 * 8,		// far ahead of prod
		prod + 1,		// just ahead: kernel consumed unposted work
		prod - 9,		// 9 behind with 8 entries
		prod + 0x80000000u,
		prod - 0x80000000u,
		0xffffffffu,
	};
	for (uint32_t cons : garbage) {
		m.hdr()->cons = cons;
		EXPECT_EQ(p.free_slots(), 0u) << std::hex << cons;
		// Slot addresses stay inside the mapping whatever the indices.
		for (uint32_t n = 0; n < 20; n++)
			EXPECT_TRUE(inside(p.slot(n), m, 64));
	}
	// Boundary values that are legal.
	m.hdr()->cons = prod - 8;
	EXPECT_EQ(p.free_slots(), 0u);
	m.hdr()->cons = prod - 7;
	EXPECT_EQ(p.free_slots(), 1u);
	m.hdr()->cons = prod;
	EXPECT_EQ(p.free_slots(), 8u);
}

TEST(RingProducer, KickFlag)
{
	ring_mapping m(8, 64);
	producer_ring p;
	ASSERT_TRUE(m.attach(p));

	// Kernel busy: no kick.
	p.publish();
	EXPECT_FALSE(p.needs_kick());
	// Kernel went idle: the flag is seen after the next publish.
	m.hdr()->flags = SROCE_RING_F_NEED_KICK;
	p.publish();
	EXPECT_TRUE(p.needs_kick());
	EXPECT_EQ(m.hdr()->prod, 2u);
	// Kernel woke and cleared it.
	m.hdr()->flags = 0;
	p.publish();
	EXPECT_FALSE(p.needs_kick());
	// ERROR alone is not a kick; with NEED_KICK it is.
	m.hdr()->flags = SROCE_RING_F_ERROR;
	EXPECT_FALSE(p.needs_kick());
	EXPECT_EQ(p.flags(), SROCE_RING_F_ERROR);
	m.hdr()->flags = SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK;
	EXPECT_TRUE(p.needs_kick());
	// The producer never writes flags itself.
	EXPECT_EQ(m.hdr()->flags, SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK);
}

// ---- consumer ---------------------------------------------------------------------

TEST(RingConsumer, EmptyPeekConsume)
{
	ring_mapping m(4, 64);
	consumer_ring c;
	ASSERT_TRUE(m.attach(c));
	EXPECT_EQ(c.available(), 0u);
	EXPECT_EQ(c.peek(), nullptr);

	// Kernel produces two.
	*reinterpret_cast<uint64_t *>(m.elem(0)) = 0xaaaa;
	*reinterpret_cast<uint64_t *>(m.elem(1)) = 0xbbbb;
	m.hdr()->prod = 2;
	EXPECT_EQ(c.available(), 2u);
	ASSERT_EQ(c.peek(), m.elem(0));
	EXPECT_EQ(*static_cast<const uint64_t *>(c.peek()), 0xaaaau);
	EXPECT_EQ(c.elem(1), m.elem(1));
	c.consume();
	EXPECT_EQ(m.hdr()->cons, 1u);
	EXPECT_EQ(c.index(), 1u);
	ASSERT_EQ(c.peek(), m.elem(1));
	EXPECT_EQ(*static_cast<const uint64_t *>(c.peek()), 0xbbbbu);
	c.consume();
	EXPECT_EQ(c.peek(), nullptr);
	EXPECT_EQ(m.hdr()->cons, 2u);

	// Full ring: exactly `entries` available.
	m.hdr()->prod = 6;
	EXPECT_EQ(c.available(), 4u);
	c.consume(4);
	EXPECT_EQ(m.hdr()->cons, 6u);
	EXPECT_EQ(c.available(), 0u);
	// The consumer never writes prod or flags.
	EXPECT_EQ(m.hdr()->prod, 6u);
	EXPECT_EQ(m.hdr()->flags, 0u);
}

TEST(RingConsumer, WrapsAcrossU32Boundary)
{
	constexpr uint32_t kEntries = 4;
	ring_mapping m(kEntries, 64);
	const uint32_t start = 0xfffffff0u;
	m.init_indices(start);
	consumer_ring c;
	ASSERT_TRUE(m.attach(c));

	uint32_t kprod = start;
	uint32_t expect = 0;
	for (int round = 0; round < 20; round++) {
		// Kernel produces up to 3 at a time.
		for (int k = 0; k < 3; k++) {
			*reinterpret_cast<uint32_t *>(m.elem(kprod)) = kprod - start;
			kprod++;
		}
		m.hdr()->prod = kprod;
		ASSERT_EQ(c.available(), 3u);
		for (uint32_t k = 0; k < 3; k++) {
			ASSERT_EQ(c.elem(k), m.elem(c.index() + k));
			ASSERT_EQ(*static_cast<const uint32_t *>(c.elem(k)), expect + k);
		}
		c.consume(3);
		expect += 3;
		ASSERT_EQ(m.hdr()->cons, kprod);
	}
	EXPECT_EQ(c.index(), start + 60);
	EXPECT_LT(c.index(), start);	// it did wrap
}

TEST(RingConsumer, GarbageProdIsTreatedAsEmpty)
{
	ring_mapping m(8, 64);
	m.init_indices(0xfffffffau);
	consumer_ring c;
	ASSERT_TRUE(m.attach(c));
	const uint32_t cons = c.index();
	const uint32_t garbage[] = {
		cons + 5 * 8,		// prod = cons + 5 * entries
		cons + 9,
		cons - 1,		// behind our cons
		cons + 0x80000000u,
		0,			// crosses the wrap by 6: legal, see below
	};
	for (uint32_t prod : garbage) {
		m.hdr()->prod = prod;
		const uint32_t avail = c.available();
		if (prod == 0) {
			EXPECT_EQ(avail, 6u);	// 0xfffffffa .. 0xffffffff
			continue;
		}
		EXPECT_EQ(avail, 0u) << std::hex << prod;
		EXPECT_EQ(c.peek(), nullptr) << std::hex << prod;
		for (uint32_t n = 0; n < 20; n++)
			EXPECT_TRUE(inside(c.elem(n), m, 64));
	}
	m.hdr()->prod = cons + 8;
	EXPECT_EQ(c.available(), 8u);
	EXPECT_NE(c.peek(), nullptr);
	// Our cons was never moved by any of it.
	EXPECT_EQ(m.hdr()->cons, cons);
	EXPECT_EQ(c.index(), cons);
}

TEST(RingBoth, ProducerAndConsumerShareOneMapping)
{
	ring_mapping m(4, 256);
	m.init_indices(0xfffffffeu);
	producer_ring p;
	consumer_ring c;
	ASSERT_TRUE(m.attach(p));
	ASSERT_TRUE(m.attach(c));
	for (uint32_t i = 0; i < 10; i++) {
		ASSERT_EQ(p.free_slots(), 4u);
		ASSERT_EQ(c.available(), 0u);
		for (uint32_t k = 0; k < 4; k++)
			memset(p.slot(k), static_cast<int>(i * 4 + k), 256);
		p.publish(4);
		ASSERT_EQ(p.free_slots(), 0u);
		ASSERT_EQ(c.available(), 4u);
		for (uint32_t k = 0; k < 4; k++) {
			auto *e = static_cast<const unsigned char *>(c.elem(k));
			ASSERT_EQ(e[0], i * 4 + k);
			ASSERT_EQ(e[255], i * 4 + k);
		}
		c.consume(4);
	}
}

// ---- two threads --------------------------------------------------------------------

// One thread produces sequence numbers, the other consumes and checks
// them, on a tiny ring whose indices cross 2^32: every element's payload
// (first and last word of the stride) must be complete when the index
// says it is published, and a slot must not be overwritten before the
// consumer has released it.
TEST(RingThreads, ProducerConsumerStress)
{
	constexpr uint32_t kEntries = 8;
	constexpr uint32_t kStride = 128;
	constexpr uint64_t kItems = 2000000;
	ring_mapping m(kEntries, kStride);
	m.init_indices(0xffffffffu - 1000);
	producer_ring p;
	consumer_ring c;
	ASSERT_TRUE(m.attach(p));
	ASSERT_TRUE(m.attach(c));

	std::atomic<bool> failed{false};
	std::thread producer([&] {
		uint64_t seq = 0;
		while (seq < kItems && !failed.load(std::memory_order_relaxed)) {
			uint32_t room = p.free_slots();
			if (!room) {
				std::this_thread::yield();
				continue;
			}
			uint32_t n = 0;
			for (; n < room && seq + n < kItems; n++) {
				auto *w = static_cast<uint64_t *>(p.slot(n));
				w[0] = seq + n;
				w[kStride / 8 - 1] = ~(seq + n);
			}
			p.publish(n);
			seq += n;
		}
	});

	uint64_t expect = 0;
	uint64_t bad_seq = 0, bad_at = UINT64_MAX;
	while (expect < kItems) {
		uint32_t avail = c.available();
		if (!avail) {
			std::this_thread::yield();
			continue;
		}
		for (uint32_t k = 0; k < avail; k++) {
			auto *w = static_cast<const uint64_t *>(c.elem(k));
			const uint64_t first = w[0];
			const uint64_t last = w[kStride / 8 - 1];
			if (first != expect + k || last != ~(expect + k)) {
				bad_seq = first;
				bad_at = expect + k;
				break;
			}
		}
		if (bad_at != UINT64_MAX) {
			failed = true;
			break;
		}
		c.consume(avail);
		expect += avail;
	}
	producer.join();
	ASSERT_EQ(bad_at, UINT64_MAX) << "element " << bad_at << " held " << bad_seq;
	EXPECT_EQ(expect, kItems);
	EXPECT_EQ(p.index(), c.index());
	EXPECT_EQ(m.hdr()->prod, static_cast<uint32_t>(0xffffffffu - 1000 + kItems));
	EXPECT_EQ(m.hdr()->cons, m.hdr()->prod);
}

// The doorbell protocol with a simulated kernel thread: when it finds the
// ring empty it sets NEED_KICK, fences, re-checks prod and only then
// sleeps until a doorbell.  The producer publishes, fences (needs_kick)
// and rings only when the flag is set.  A lost wakeup leaves the kernel
// asleep with work posted; the test catches that with a timeout.
TEST(RingThreads, KickProtocolLosesNoWakeup)
{
	constexpr uint32_t kEntries = 4;
	constexpr uint32_t kItems = 20000;
	ring_mapping m(kEntries, 64);
	m.init_indices(0xfffffff0u);
	producer_ring p;
	consumer_ring kernel_view;	// the kernel consumes an SQ
	ASSERT_TRUE(m.attach(p));
	ASSERT_TRUE(m.attach(kernel_view));

	std::mutex mu;
	std::condition_variable cv;
	uint64_t doorbells = 0;
	std::atomic<uint64_t> kicks{0};
	std::atomic<bool> lost_wakeup{false};
	std::atomic<bool> bad_data{false};
	std::atomic<uint32_t> consumed{0};
	auto flags = [&] { return std::atomic_ref<uint32_t>(m.hdr()->flags); };

	std::thread kernel([&] {
		uint64_t seen_doorbells = 0;
		uint32_t next = 0;
		while (next < kItems) {
			uint32_t avail = kernel_view.available();
			if (avail) {
				for (uint32_t k = 0; k < avail; k++) {
					if (*static_cast<const uint32_t *>(
						    kernel_view.elem(k)) != next + k)
						bad_data = true;
				}
				kernel_view.consume(avail);
				next += avail;
				consumed.store(next, std::memory_order_release);
				continue;
			}
			// Idle: announce it, then look once more.
			flags().store(SROCE_RING_F_NEED_KICK, std::memory_order_relaxed);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			if (kernel_view.available()) {
				flags().store(0, std::memory_order_relaxed);
				continue;
			}
			std::unique_lock<std::mutex> lk(mu);
			if (!cv.wait_for(lk, std::chrono::seconds(10),
					 [&] { return doorbells != seen_doorbells; })) {
				lost_wakeup = true;
				return;
			}
			seen_doorbells = doorbells;
			lk.unlock();
			flags().store(0, std::memory_order_relaxed);
		}
	});

	for (uint32_t i = 0; i < kItems && !lost_wakeup; i++) {
		while (!p.free_slots()) {
			if (lost_wakeup)
				break;
			std::this_thread::yield();
		}
		*static_cast<uint32_t *>(p.slot()) = i;
		p.publish();
		if (p.needs_kick()) {
			kicks++;
			std::lock_guard<std::mutex> lk(mu);
			doorbells++;
			cv.notify_one();
		}
	}
	kernel.join();
	EXPECT_FALSE(lost_wakeup);
	EXPECT_FALSE(bad_data);
	EXPECT_EQ(consumed.load(), kItems);
	EXPECT_GT(kicks.load(), 0u);	// the kernel did go idle and get woken
}
