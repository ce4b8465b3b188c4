// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Completion queues through libibverbs: create (command, udata sizes,
// ring mapping, bad ring descriptions), ibv_poll_cq over the mapped ring
// (decoding, order, wrap-around, a full ring, a corrupt producer index,
// concurrent pollers), req_notify_cq, resize (remap, unpolled CQEs kept,
// EINVAL below the unpolled count, mmap failure), destroy (unmap).
#include <pthread.h>

#include <set>
#include <vector>

#include "inproc.hpp"

using namespace inproc;

namespace {

class Cq : public Verbs {
protected:
	void TearDown() override
	{
		if (cq_) {
			EXPECT_EQ(ibv_destroy_cq(cq_), 0);
		}
		Verbs::TearDown();
	}

	struct ibv_cq *create(int cqe)
	{
		cq_ = ibv_create_cq(ctx_, cqe, nullptr, nullptr, 0);
		return cq_;
	}

	int push(uint64_t wr_id, uint8_t status = IBV_WC_SUCCESS)
	{
		const struct sroce_cqe c = make_cqe(wr_id, status);
		return fake.cq_push(cq_->handle, &c);
	}

	uint32_t kernel_cons()
	{
		uint32_t prod = 0, cons = 0, entries = 0;
		EXPECT_EQ(fake.cq_state(cq_->handle, &prod, &cons, &entries), 0);
		return cons;
	}

	uint32_t kernel_entries()
	{
		uint32_t prod = 0, cons = 0, entries = 0;
		EXPECT_EQ(fake.cq_state(cq_->handle, &prod, &cons, &entries), 0);
		return entries;
	}

	struct ibv_cq *cq_ = nullptr;
};

void expect_wc_is(const struct ibv_wc &wc, uint64_t wr_id)
{
	const struct sroce_cqe c = make_cqe(wr_id);
	EXPECT_EQ(wc.wr_id, wr_id);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wr_id;
	EXPECT_EQ(wc.opcode, IBV_WC_RECV) << wr_id;
	EXPECT_EQ(wc.byte_len, c.byte_len) << wr_id;
	EXPECT_EQ(wc.qp_num, c.qp_num) << wr_id;
	EXPECT_EQ(wc.src_qp, c.src_qp) << wr_id;
	EXPECT_EQ(wc.pkey_index, c.pkey_index) << wr_id;
	EXPECT_EQ(wc.slid, c.slid) << wr_id;
	EXPECT_EQ(wc.sl, c.sl) << wr_id;
	EXPECT_EQ(wc.dlid_path_bits, c.dlid_path_bits) << wr_id;
}

TEST_F(Cq, CreateSendsCoreCommandAndMapsTheRing)
{
	ASSERT_TRUE(create(100)) << strerror(errno);
	EXPECT_EQ(cq_->cqe, 128);		// the kernel's power of two
	EXPECT_EQ(cq_->context, ctx_);
	EXPECT_EQ(live_maps(), 1);
	const std::string l = log();
	// No driver request; the response is the 8-byte core + 32-byte ours.
	EXPECT_TRUE(contains(l, "CREATE_CQ in=32 out=40 udata_in=0 udata_out=" +
					std::to_string(sizeof(struct sroce_create_cq_resp)) +
					" cqe=100 comp_vector=0 comp_channel=-1"))
		<< l;
	// Shared and writable (we store the consumer index), whole ring.
	EXPECT_TRUE(contains(l, "MMAP offset=0x")) << l;
	EXPECT_TRUE(contains(l, "len=12288 prot=0x3 flags=0x1 ret=0")) << l;	// 192 + 128*64

	ASSERT_EQ(ibv_destroy_cq(cq_), 0);
	cq_ = nullptr;
	EXPECT_EQ(live_maps(), 0);
	EXPECT_TRUE(contains(log(), "DESTROY_CQ")) << log();
	EXPECT_TRUE(contains(log(), "MUNMAP len=12288\n")) << log();
}

TEST_F(Cq, KernelErrorsComeBackAsErrno)
{
	errno = 0;
	EXPECT_FALSE(ibv_create_cq(ctx_, 0, nullptr, nullptr, 0));
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_FALSE(ibv_create_cq(ctx_, 1 << 22, nullptr, nullptr, 0));
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_FALSE(ibv_create_cq(ctx_, 8, nullptr, nullptr, 1));
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(live_maps(), 0);
	EXPECT_FALSE(contains(log(), "MMAP")) << log();
}

TEST_F(Cq, CompletionChannelIsPassedToTheKernel)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx_);
	ASSERT_TRUE(ch);
	cq_ = ibv_create_cq(ctx_, 16, this, ch, 0);
	ASSERT_TRUE(cq_) << strerror(errno);
	EXPECT_EQ(cq_->channel, ch);		// libibverbs' verbs_init_cq
	EXPECT_EQ(cq_->cq_context, this);
	EXPECT_TRUE(contains(log(), "comp_channel=" + std::to_string(ch->fd))) << log();
	EXPECT_EQ(ibv_destroy_cq(cq_), 0);
	cq_ = nullptr;
	EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

// A ring the provider cannot index safely is refused, and the kernel CQ
// is destroyed again: nothing leaks.
TEST_F(Cq, BadRingDescriptionIsRefusedAndUndone)
{
	for (const char *bad : {"entries", "stride", "length", "offset"}) {
		scoped_env env("FAKE_CQ_BAD_RING", bad);
		mark();
		errno = 0;
		EXPECT_FALSE(ibv_create_cq(ctx_, 8, nullptr, nullptr, 0)) << bad;
		EXPECT_EQ(errno, EPROTO) << bad;
		EXPECT_TRUE(contains(log(), "DESTROY_CQ")) << bad << "\n" << log();
		EXPECT_FALSE(contains(log(), "MMAP")) << bad << "\n" << log();
		EXPECT_EQ(live_maps(), 0) << bad;
	}
}

TEST_F(Cq, MmapFailureIsReportedAndUndone)
{
	scoped_env env("FAKE_MMAP_FAIL", "1");
	errno = 0;
	EXPECT_FALSE(ibv_create_cq(ctx_, 8, nullptr, nullptr, 0));
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_TRUE(contains(log(), "MMAP offset=0x")) << log();
	EXPECT_TRUE(contains(log(), "DESTROY_CQ")) << log();
}

TEST_F(Cq, PollEmptyReturnsZero)
{
	ASSERT_TRUE(create(4));
	struct ibv_wc wc[4];
	EXPECT_EQ(ibv_poll_cq(cq_, 4, wc), 0);
	EXPECT_EQ(kernel_cons(), 0u);
}

TEST_F(Cq, PollDecodesInOrderAndReleasesSlots)
{
	ASSERT_TRUE(create(8));
	for (uint64_t i = 1; i <= 5; i++)
		ASSERT_EQ(push(i), 0);
	struct ibv_wc wc[8];
	memset(wc, 0xee, sizeof(wc));
	ASSERT_EQ(ibv_poll_cq(cq_, 3, wc), 3);
	for (int i = 0; i < 3; i++)
		expect_wc_is(wc[i], i + 1);
	EXPECT_EQ(wc[3].wr_id, 0xeeeeeeeeeeeeeeeeull);	// ne respected
	EXPECT_EQ(kernel_cons(), 3u);			// slots given back
	ASSERT_EQ(ibv_poll_cq(cq_, 8, wc), 2);
	expect_wc_is(wc[0], 4);
	expect_wc_is(wc[1], 5);
	EXPECT_EQ(ibv_poll_cq(cq_, 8, wc), 0);
	EXPECT_EQ(kernel_cons(), 5u);
	EXPECT_EQ(ibv_poll_cq(cq_, 0, wc), 0);
	EXPECT_EQ(ibv_poll_cq(cq_, -1, wc), 0);
}

TEST_F(Cq, ErrorStatusAndVendorErr)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(push(7, IBV_WC_REM_ACCESS_ERR), 0);
	ASSERT_EQ(push(8, 200), 0);	// a status rdma-core 44 does not know
	struct ibv_wc wc[2];
	ASSERT_EQ(ibv_poll_cq(cq_, 2, wc), 2);
	EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	EXPECT_EQ(wc[0].vendor_err, 0x77u);
	EXPECT_EQ(wc[1].status, IBV_WC_GENERAL_ERR);
}

// Full ring: the kernel cannot add more, we get all of them.
TEST_F(Cq, FullRingPollsCompletely)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(kernel_entries(), 4u);
	for (uint64_t i = 1; i <= 4; i++)
		ASSERT_EQ(push(i), 0);
	EXPECT_EQ(push(5), -ENOSPC);
	struct ibv_wc wc[8];
	ASSERT_EQ(ibv_poll_cq(cq_, 8, wc), 4);
	for (int i = 0; i < 4; i++)
		expect_wc_is(wc[i], i + 1);
	EXPECT_EQ(push(5), 0);
	ASSERT_EQ(ibv_poll_cq(cq_, 8, wc), 1);
	expect_wc_is(wc[0], 5);
}

// Indices start just below 2^32 and wrap while the ring wraps too.
TEST_F(Cq, PollAcrossRingAndIndexWrap)
{
	scoped_env env("FAKE_CQ_START_INDEX", "0xfffffff9");
	ASSERT_TRUE(create(4));
	uint64_t next = 1, expect = 1;
	struct ibv_wc wc[4];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 3; i++)
			ASSERT_EQ(push(next++), 0) << round;
		int n = ibv_poll_cq(cq_, 2, wc);
		ASSERT_EQ(n, 2) << round;
		for (int i = 0; i < n; i++)
			expect_wc_is(wc[i], expect++);
		n = ibv_poll_cq(cq_, 4, wc);
		ASSERT_EQ(n, 1) << round;
		expect_wc_is(wc[0], expect++);
	}
	EXPECT_EQ(kernel_cons(), 0xfffffff9u + 60u);
}

// A producer index more than a ring ahead is garbage: nothing is read.
TEST_F(Cq, CorruptProducerIndexReadsAsEmpty)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(push(1), 0);
	ASSERT_EQ(fake.cq_poke_prod(cq_->handle, 1000), 0);
	struct ibv_wc wc[4];
	EXPECT_EQ(ibv_poll_cq(cq_, 4, wc), 0);
	EXPECT_EQ(kernel_cons(), 0u);
	ASSERT_EQ(fake.cq_poke_prod(cq_->handle, 1), 0);	// repaired
	ASSERT_EQ(ibv_poll_cq(cq_, 4, wc), 1);
	expect_wc_is(wc[0], 1);
}

TEST_F(Cq, ReqNotifySendsTheCommand)
{
	ASSERT_TRUE(create(4));
	EXPECT_EQ(ibv_req_notify_cq(cq_, 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq_, 1), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq_, 5), 0);	// any non-zero: solicited
	unsigned next = 0, solicited = 0;
	ASSERT_EQ(fake.cq_arms(cq_->handle, &next, &solicited), 0);
	EXPECT_EQ(next, 1u);
	EXPECT_EQ(solicited, 2u);
	const std::string h = "handle=" + std::to_string(cq_->handle);
	EXPECT_TRUE(contains(log(), "REQ_NOTIFY_CQ in=8 out=0 udata_in=0 udata_out=0 " + h +
					    " solicited=0 ret=0"))
		<< log();
	EXPECT_TRUE(contains(log(), h + " solicited=1 ret=0")) << log();
}

// Resize: new ring mapped, old one unmapped, the unpolled CQEs come out
// first and in order, then new ones.
TEST_F(Cq, ResizeRemapsAndKeepsUnpolled)
{
	ASSERT_TRUE(create(4));
	for (uint64_t i = 1; i <= 3; i++)
		ASSERT_EQ(push(i), 0);
	struct ibv_wc wc[16];
	ASSERT_EQ(ibv_poll_cq(cq_, 1, wc), 1);
	expect_wc_is(wc[0], 1);

	mark();
	ASSERT_EQ(ibv_resize_cq(cq_, 100), 0);
	EXPECT_EQ(cq_->cqe, 128);
	EXPECT_EQ(kernel_entries(), 128u);
	EXPECT_EQ(live_maps(), 1);
	const std::string l = log();
	EXPECT_TRUE(contains(l, "RESIZE_CQ in=16 out=32 udata_in=0 udata_out=" +
					std::to_string(sizeof(struct sroce_resize_cq_resp)) +
					" handle=" + std::to_string(cq_->handle) +
					" cqe=100 entries=128 moved=2"))
		<< l;
	EXPECT_TRUE(contains(l, "MMAP offset=")) << l;
	EXPECT_TRUE(contains(l, "MUNMAP len=4096\n")) << l;	// the old ring
	EXPECT_LT(l.find("MMAP offset="), l.find("MUNMAP"));	// new mapped first

	for (uint64_t i = 4; i <= 6; i++)
		ASSERT_EQ(push(i), 0);
	ASSERT_EQ(ibv_poll_cq(cq_, 16, wc), 5);
	for (int i = 0; i < 5; i++)
		expect_wc_is(wc[i], i + 2);

	// and down again
	ASSERT_EQ(ibv_resize_cq(cq_, 2), 0);
	EXPECT_EQ(cq_->cqe, 2);
	ASSERT_EQ(push(7), 0);
	ASSERT_EQ(ibv_poll_cq(cq_, 16, wc), 1);
	expect_wc_is(wc[0], 7);
	EXPECT_EQ(live_maps(), 1);
}

// Below the unpolled count: EINVAL, and the old ring still works.
TEST_F(Cq, ResizeBelowUnpolledFailsAndKeepsRing)
{
	ASSERT_TRUE(create(8));
	for (uint64_t i = 1; i <= 5; i++)
		ASSERT_EQ(push(i), 0);
	EXPECT_EQ(ibv_resize_cq(cq_, 4), EINVAL);
	EXPECT_EQ(ibv_resize_cq(cq_, 0), EINVAL);
	EXPECT_EQ(cq_->cqe, 8);
	EXPECT_EQ(live_maps(), 1);
	struct ibv_wc wc[8];
	ASSERT_EQ(ibv_poll_cq(cq_, 8, wc), 5);
	for (int i = 0; i < 5; i++)
		expect_wc_is(wc[i], i + 1);
	EXPECT_FALSE(contains(log(), "MUNMAP")) << log();
}

// The kernel switched rings but the new one cannot be mapped: the old
// one is gone too, polling reports an error instead of stale CQEs.
TEST_F(Cq, ResizeWithoutMappingFailsSafely)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(push(1), 0);
	{
		scoped_env env("FAKE_MMAP_FAIL", "1");
		EXPECT_EQ(ibv_resize_cq(cq_, 16), ENOMEM);
	}
	EXPECT_EQ(live_maps(), 0);
	struct ibv_wc wc[4];
	EXPECT_LT(ibv_poll_cq(cq_, 4, wc), 0);
	EXPECT_LT(ibv_poll_cq(cq_, 4, wc), 0);	// and the lock was released
}

// Several threads poll while the "kernel" produces: every CQE is seen
// exactly once (the CQ lock serialises the consumers).
TEST_F(Cq, ConcurrentPollersSeeEachCqeOnce)
{
	ASSERT_TRUE(create(64));
	constexpr uint64_t kTotal = 200000;
	constexpr int kPollers = 4;
	std::atomic<uint64_t> seen_count{0};
	std::vector<std::vector<uint64_t>> seen(kPollers);
	std::atomic<bool> stop{false};

	std::vector<std::thread> pollers;
	for (int t = 0; t < kPollers; t++)
		pollers.emplace_back([&, t] {
			struct ibv_wc wc[8];
			while (!stop.load(std::memory_order_relaxed)) {
				int n = ibv_poll_cq(cq_, 1 + t * 2, wc);
				for (int i = 0; i < n; i++)
					seen[t].push_back(wc[i].wr_id);
				if (n > 0)
					seen_count += n;
			}
		});
	for (uint64_t i = 1; i <= kTotal;) {
		int r = push(i);
		if (r == 0)
			i++;
		else
			ASSERT_EQ(r, -ENOSPC);
	}
	const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (seen_count.load() < kTotal && std::chrono::steady_clock::now() < end)
		std::this_thread::yield();
	stop = true;
	for (auto &th : pollers)
		th.join();

	std::vector<uint64_t> all;
	for (auto &v : seen) {
		// each thread sees its share in increasing order
		for (size_t i = 1; i < v.size(); i++)
			ASSERT_LT(v[i - 1], v[i]);
		all.insert(all.end(), v.begin(), v.end());
	}
	ASSERT_EQ(all.size(), kTotal);
	std::set<uint64_t> unique(all.begin(), all.end());
	EXPECT_EQ(unique.size(), kTotal);
	EXPECT_EQ(*unique.begin(), 1u);
	EXPECT_EQ(*unique.rbegin(), kTotal);
}

} // namespace
