// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// ibv_create_cq_ex and its iterator, against ibv_create_cq_ex(3):
//   start_poll: 0 with a current completion, or an error (ENOENT when
//     empty) - and then end_poll must NOT be called;
//   next_poll: 0 or an error (ENOENT) - end_poll is called either way;
//   end_poll: ends the batch.
// So the CQ must be free again after a failed start_poll, still held
// after a failed next_poll (until end_poll), and no CQE may be consumed
// twice or skipped - the two places rdma-core 44's rxe gets wrong.
#include <set>

#include "inproc.hpp"

using namespace inproc;

namespace {

class CqEx : public Verbs {
protected:
	void TearDown() override
	{
		if (cq_) {
			EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq_)), 0);
		}
		Verbs::TearDown();
	}

	struct ibv_cq_ex *create(int cqe, uint64_t wc_flags = IBV_WC_STANDARD_FLAGS)
	{
		struct ibv_cq_init_attr_ex attr = {};
		attr.cqe = cqe;
		attr.wc_flags = wc_flags;
		cq_ = ibv_create_cq_ex(ctx_, &attr);
		return cq_;
	}

	int push(const struct sroce_cqe &c) { return fake.cq_push(cq_->handle, &c); }
	int push(uint64_t wr_id) { return push(make_cqe(wr_id)); }

	void state(uint32_t *prod, uint32_t *cons)
	{
		uint32_t entries;
		ASSERT_EQ(fake.cq_state(cq_->handle, prod, cons, &entries), 0);
	}

	uint32_t kernel_cons()
	{
		uint32_t prod = 0, cons = 0;
		state(&prod, &cons);
		return cons;
	}

	// An ibv_poll_cq on another thread: it gets through only while the
	// CQ lock is free.
	std::shared_ptr<std::atomic<bool>> start_poller()
	{
		struct ibv_cq *cq = ibv_cq_ex_to_cq(cq_);
		return start_detached([cq] {
			struct ibv_wc wc[1];
			ibv_poll_cq(cq, 0, wc);
		});
	}

	bool lock_is_free(int ms = 2000) { return wait_flag(start_poller(), ms); }

	struct ibv_cq_ex *cq_ = nullptr;
};

TEST_F(CqEx, RefusesWhatItCannotAnswer)
{
	struct {
		uint64_t wc_flags;
		uint32_t comp_mask;
		uint32_t flags;
		const char *what;
	} cases[] = {
		{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0, "completion timestamp"},
		{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0, "wallclock timestamp"},
		{IBV_WC_EX_WITH_CVLAN, 0, 0, "cvlan"},
		{IBV_WC_EX_WITH_FLOW_TAG, 0, 0, "flow tag"},
		{IBV_WC_EX_WITH_TM_INFO, 0, 0, "tag matching"},
		{1ull << 40, 0, 0, "unknown wc flag"},
		{0, IBV_CQ_INIT_ATTR_MASK_PD, 0, "parent domain"},
		{0, 1u << 7, 0, "unknown comp_mask"},
		{0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
		 "ignore overrun"},
		{0, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1u << 6, "unknown flag"},
	};
	for (const auto &c : cases) {
		struct ibv_cq_init_attr_ex attr = {};
		attr.cqe = 8;
		attr.wc_flags = c.wc_flags;
		attr.comp_mask = c.comp_mask;
		attr.flags = c.flags;
		attr.parent_domain = pd_;
		errno = 0;
		struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx_, &attr);
		EXPECT_FALSE(cq) << c.what;
		EXPECT_EQ(errno, EOPNOTSUPP) << c.what;
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	EXPECT_FALSE(contains(log(), "CREATE_CQ")) << log();
}

TEST_F(CqEx, CreatesLikeCreateCq)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx_);
	ASSERT_TRUE(ch);
	struct ibv_cq_init_attr_ex attr = {};
	attr.cqe = 30;
	attr.cq_context = this;
	attr.channel = ch;
	attr.wc_flags = IBV_WC_STANDARD_FLAGS;
	attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	attr.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;	// a hint: accepted
	cq_ = ibv_create_cq_ex(ctx_, &attr);
	ASSERT_TRUE(cq_) << strerror(errno);
	EXPECT_EQ(cq_->cqe, 32);
	EXPECT_EQ(cq_->cq_context, this);
	EXPECT_EQ(cq_->channel, ch);
	EXPECT_EQ(live_maps(), 1);
	// The legacy command: no flags need the extended one.
	EXPECT_TRUE(contains(log(), "CREATE_CQ in=32 out=40 udata_in=0 udata_out=32 cqe=30 "
				    "comp_vector=0 comp_channel=" +
					    std::to_string(ch->fd)))
		<< log();
	EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(cq_), 0), 0);
	EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq_)), 0);
	cq_ = nullptr;
	EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(CqEx, StartPollOnEmptyIsEnoentAndReleasesTheCq)
{
	ASSERT_TRUE(create(4));
	struct ibv_poll_cq_attr attr = {};
	EXPECT_EQ(ibv_start_poll(cq_, &attr), ENOENT);
	// No end_poll (the man page forbids it): the CQ must be usable.
	EXPECT_TRUE(lock_is_free());
	EXPECT_EQ(ibv_start_poll(cq_, &attr), ENOENT);
	EXPECT_EQ(kernel_cons(), 0u);
	ASSERT_EQ(push(1), 0);
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 1u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 1u);
	EXPECT_TRUE(lock_is_free());
}

// The man page forbids end_poll after a failed start_poll; rxe 44 then
// unlocks an unlocked CQ and advances past prod.  Here it does nothing.
TEST_F(CqEx, EndPollAfterFailedStartPollDoesNothing)
{
	ASSERT_TRUE(create(4));
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), ENOENT);
	ibv_end_poll(cq_);
	EXPECT_EQ(ibv_next_poll(cq_), EINVAL);	// no batch: nothing to step
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 0u);
	EXPECT_TRUE(lock_is_free());
	ASSERT_EQ(push(1), 0);
	ASSERT_EQ(push(2), 0);
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 1u);
	ibv_end_poll(cq_);
	ibv_end_poll(cq_);	// a second end_poll: nothing more consumed
	EXPECT_EQ(kernel_cons(), 1u);
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 2u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 2u);
	EXPECT_EQ(ibv_start_poll(cq_, &attr), ENOENT);
	EXPECT_TRUE(lock_is_free());
}

// The same stray end_poll (or next_poll) while another thread is in a
// batch must neither release that thread's lock nor consume its CQE.
TEST_F(CqEx, StrayEndPollCannotEndAnotherThreadsBatch)
{
	ASSERT_TRUE(create(8));
	for (uint64_t i = 1; i <= 3; i++)
		ASSERT_EQ(push(i), 0);
	// Shared with the other thread by value: it may outlive a failed test.
	struct shared {
		std::atomic<int> step{0};
		std::atomic<uint64_t> first{0}, second{0};
	};
	auto sh = std::make_shared<shared>();
	struct ibv_cq_ex *cq = cq_;
	auto batch = start_detached([sh, cq] {
		struct ibv_poll_cq_attr attr = {};
		if (ibv_start_poll(cq, &attr)) {
			sh->step = -1;
			return;
		}
		sh->first = cq->wr_id;
		sh->step = 1;
		while (sh->step.load() != 2)
			std::this_thread::yield();
		if (ibv_next_poll(cq) == 0)
			sh->second = cq->wr_id;
		ibv_end_poll(cq);
	});
	while (sh->step.load() == 0)
		std::this_thread::yield();
	ASSERT_EQ(sh->step.load(), 1);
	EXPECT_EQ(sh->first.load(), 1u);

	// This thread has no batch: its end_poll and next_poll are no-ops.
	ibv_end_poll(cq_);
	EXPECT_EQ(ibv_next_poll(cq_), EINVAL);
	EXPECT_EQ(kernel_cons(), 0u);		// CQE 1 is still the other's
	auto waiter = start_poller();
	EXPECT_FALSE(wait_flag(waiter, 100));	// and so is the lock

	sh->step = 2;
	ASSERT_TRUE(wait_flag(batch, 2000));
	EXPECT_EQ(sh->second.load(), 2u);	// nothing skipped
	EXPECT_EQ(kernel_cons(), 2u);
	EXPECT_TRUE(wait_flag(waiter, 2000));
	EXPECT_TRUE(lock_is_free());
}

TEST_F(CqEx, StartPollRejectsUnknownAttrWithoutHoldingTheCq)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(push(1), 0);
	struct ibv_poll_cq_attr attr = {};
	attr.comp_mask = 1;
	EXPECT_EQ(ibv_start_poll(cq_, &attr), EINVAL);
	EXPECT_TRUE(lock_is_free());
	EXPECT_EQ(kernel_cons(), 0u);
}

// The full sequence: start, next, next, next -> ENOENT, end.
TEST_F(CqEx, BatchConsumesEachCqeOnceAndStopsAtProd)
{
	ASSERT_TRUE(create(8));
	for (uint64_t i = 1; i <= 3; i++)
		ASSERT_EQ(push(i), 0);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 1u);
	EXPECT_EQ(cq_->status, IBV_WC_SUCCESS);
	// Held from start_poll on: another poller waits.
	auto waiter = start_poller();
	EXPECT_FALSE(wait_flag(waiter, 100));
	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 2u);
	EXPECT_EQ(kernel_cons(), 1u);		// the first is given back
	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 3u);
	EXPECT_EQ(ibv_next_poll(cq_), ENOENT);
	EXPECT_EQ(kernel_cons(), 3u);		// not past prod
	// Still held after next_poll's ENOENT, until end_poll.
	EXPECT_FALSE(wait_flag(waiter, 100));
	ibv_end_poll(cq_);
	uint32_t prod, cons;
	state(&prod, &cons);
	EXPECT_EQ(cons, 3u);			// end_poll consumed nothing more
	EXPECT_EQ(prod, 3u);
	EXPECT_TRUE(wait_flag(waiter, 2000));	// the poller that waited got in
	EXPECT_TRUE(lock_is_free());		// and released it: unlocked once

	// Nothing was skipped: the next CQE is the next one.
	ASSERT_EQ(push(4), 0);
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 4u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 4u);
	EXPECT_EQ(ibv_start_poll(cq_, &attr), ENOENT);
}

// end_poll right after start_poll (or a successful next_poll) consumes
// the current CQE.
TEST_F(CqEx, EndPollConsumesTheCurrentCqe)
{
	ASSERT_TRUE(create(8));
	for (uint64_t i = 1; i <= 3; i++)
		ASSERT_EQ(push(i), 0);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 1u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 1u);
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 2u);
	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 3u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 3u);
	// and ibv_poll_cq on the same CQ agrees
	struct ibv_wc wc[4];
	EXPECT_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq_), 4, wc), 0);
}

// A CQE that arrives during a batch is picked up by next_poll.
TEST_F(CqEx, NextPollSeesArrivalsDuringTheBatch)
{
	ASSERT_TRUE(create(4));
	ASSERT_EQ(push(1), 0);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	ASSERT_EQ(push(2), 0);
	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 2u);
	EXPECT_EQ(ibv_next_poll(cq_), ENOENT);
	ASSERT_EQ(push(3), 0);
	// after ENOENT the iterator may be asked again
	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 3u);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 3u);
}

// A batch longer than the ring: slots are given back as we go, so the
// kernel can keep producing into them.
TEST_F(CqEx, LongBatchWrapsTheRing)
{
	ASSERT_TRUE(create(4));
	for (uint64_t i = 1; i <= 4; i++)
		ASSERT_EQ(push(i), 0);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	uint64_t expect = 1, next = 5;
	// The ring is full and its first CQE current: not yet given back.
	EXPECT_EQ(push(next), -ENOSPC);
	for (int i = 0; i < 40; i++) {
		EXPECT_EQ(cq_->wr_id, expect++);
		ASSERT_EQ(ibv_next_poll(cq_), 0) << i;
		ASSERT_EQ(push(next++), 0) << i;	// into the slot just freed
	}
	EXPECT_EQ(cq_->wr_id, expect);
	ibv_end_poll(cq_);
	EXPECT_EQ(kernel_cons(), 41u);
}

TEST_F(CqEx, ReadersReturnTheCurrentCqe)
{
	ASSERT_TRUE(create(8));
	struct sroce_cqe a = make_cqe(10, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
				      IBV_WC_WITH_IMM | IBV_WC_GRH);
	struct sroce_cqe b = make_cqe(11, IBV_WC_SUCCESS, IBV_WC_RECV, IBV_WC_WITH_INV);
	b.ex.invalidated_rkey = 0x12345678;
	struct sroce_cqe c = make_cqe(12, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND);
	struct sroce_cqe d = make_cqe(13, 99, IBV_WC_SEND);
	for (const auto *e : {&a, &b, &c, &d})
		ASSERT_EQ(push(*e), 0);

	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	EXPECT_EQ(cq_->wr_id, 10u);
	EXPECT_EQ(cq_->status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_wc_read_opcode(cq_), IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(ibv_wc_read_wc_flags(cq_), unsigned(IBV_WC_WITH_IMM | IBV_WC_GRH));
	EXPECT_EQ(ibv_wc_read_imm_data(cq_), a.ex.imm_data);
	EXPECT_EQ(ibv_wc_read_byte_len(cq_), a.byte_len);
	EXPECT_EQ(ibv_wc_read_qp_num(cq_), a.qp_num);
	EXPECT_EQ(ibv_wc_read_src_qp(cq_), a.src_qp);
	EXPECT_EQ(ibv_wc_read_slid(cq_), a.slid);
	EXPECT_EQ(ibv_wc_read_sl(cq_), a.sl);
	EXPECT_EQ(ibv_wc_read_dlid_path_bits(cq_), a.dlid_path_bits);
	EXPECT_EQ(ibv_wc_read_vendor_err(cq_), 0u);

	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 11u);
	EXPECT_EQ(ibv_wc_read_wc_flags(cq_), unsigned(IBV_WC_WITH_INV));
	EXPECT_EQ(ibv_wc_read_invalidated_rkey(cq_), 0x12345678u);

	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 12u);
	EXPECT_EQ(cq_->status, IBV_WC_LOC_PROT_ERR);
	EXPECT_EQ(ibv_wc_read_opcode(cq_), IBV_WC_SEND);
	EXPECT_EQ(ibv_wc_read_vendor_err(cq_), 0x77u);

	ASSERT_EQ(ibv_next_poll(cq_), 0);
	EXPECT_EQ(cq_->wr_id, 13u);
	EXPECT_EQ(cq_->status, IBV_WC_GENERAL_ERR);	// unknown status

	EXPECT_EQ(ibv_next_poll(cq_), ENOENT);
	ibv_end_poll(cq_);
}

// Only some readers asked for: the rest are installed anyway.
TEST_F(CqEx, ReadersInstalledWhateverWasAskedFor)
{
	ASSERT_TRUE(create(4, 0));
	EXPECT_TRUE(cq_->read_opcode && cq_->read_vendor_err && cq_->read_wc_flags &&
		    cq_->read_byte_len && cq_->read_imm_data && cq_->read_qp_num &&
		    cq_->read_src_qp && cq_->read_slid && cq_->read_sl &&
		    cq_->read_dlid_path_bits);
	EXPECT_FALSE(cq_->read_completion_ts);
	EXPECT_FALSE(cq_->read_completion_wallclock_ns);
}

// Resize works on an extended CQ too, and the iterator follows the new
// ring.
TEST_F(CqEx, ResizeThenIterate)
{
	ASSERT_TRUE(create(2));
	ASSERT_EQ(push(1), 0);
	ASSERT_EQ(push(2), 0);
	ASSERT_EQ(ibv_resize_cq(ibv_cq_ex_to_cq(cq_), 64), 0);
	EXPECT_EQ(cq_->cqe, 64);
	ASSERT_EQ(push(3), 0);
	struct ibv_poll_cq_attr attr = {};
	std::vector<uint64_t> got;
	ASSERT_EQ(ibv_start_poll(cq_, &attr), 0);
	do
		got.push_back(cq_->wr_id);
	while (ibv_next_poll(cq_) == 0);
	ibv_end_poll(cq_);
	EXPECT_EQ(got, (std::vector<uint64_t>{1, 2, 3}));
	EXPECT_EQ(live_maps(), 1);
}

// Pollers on both interfaces at once: each CQE is delivered once.
TEST_F(CqEx, IteratorAndPollCqTogether)
{
	ASSERT_TRUE(create(32));
	constexpr uint64_t kTotal = 50000;
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> count{0};
	std::vector<uint64_t> a, b;
	std::thread it([&] {
		struct ibv_poll_cq_attr attr = {};
		while (!stop.load()) {
			if (ibv_start_poll(cq_, &attr))
				continue;
			int k = 0;
			do {
				a.push_back(cq_->wr_id);
				k++;
			} while (k < 5 && ibv_next_poll(cq_) == 0);
			ibv_end_poll(cq_);
			count += k;
		}
	});
	std::thread pc([&] {
		struct ibv_wc wc[3];
		while (!stop.load()) {
			int n = ibv_poll_cq(ibv_cq_ex_to_cq(cq_), 3, wc);
			for (int i = 0; i < n; i++)
				b.push_back(wc[i].wr_id);
			if (n > 0)
				count += n;
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
	while (count.load() < kTotal && std::chrono::steady_clock::now() < end)
		std::this_thread::yield();
	stop = true;
	it.join();
	pc.join();
	std::set<uint64_t> all(a.begin(), a.end());
	all.insert(b.begin(), b.end());
	EXPECT_EQ(a.size() + b.size(), kTotal);
	EXPECT_EQ(all.size(), kTotal);
}

} // namespace
