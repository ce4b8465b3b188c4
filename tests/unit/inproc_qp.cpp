// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Queue pairs, SRQs through libibverbs on the fake kernel: create_qp
// (command, udata sizes, granted caps, SQ/RQ mapping, bad ring
// descriptions, unsupported attributes), ibv_post_send (WQEs encoded into
// the SQ ring, one publish, the doorbell only when the ring says
// NEED_KICK or ERROR, ENOMEM when full, *bad_wr), ibv_post_recv (RQ
// ring, doorbell only in error, EINVAL on an SRQ QP), SRQ create, post,
// full ring, modify, destroy.  Posting by QP state: send WRs only from RTS
// on (RESET, INIT, RTR are EINVAL with nothing queued), receive WRs from
// INIT on, both in ERR - set by modify_qp or by the kernel (ERROR flag).
#include <vector>

#include "inproc.hpp"

using namespace inproc;

namespace {

class Qp : public Verbs {
protected:
	void SetUp() override
	{
		Verbs::SetUp();
		ASSERT_FALSE(HasFatalFailure());
		cq_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
		ASSERT_TRUE(cq_) << strerror(errno);
	}

	void TearDown() override
	{
		if (qp_) {
			EXPECT_EQ(ibv_destroy_qp(qp_), 0);
		}
		if (srq_) {
			EXPECT_EQ(ibv_destroy_srq(srq_), 0);
		}
		if (cq_) {
			EXPECT_EQ(ibv_destroy_cq(cq_), 0);
		}
		Verbs::TearDown();
	}

	// A QP the tests post to: created, then moved to RTS (the fake takes
	// the state alone, as ibv_modify_qp would after the right attributes).
	struct ibv_qp *create(ibv_qp_type type, uint32_t wr, uint32_t sge,
			      uint32_t inl, struct ibv_srq *srq = nullptr)
	{
		if (!create_in_reset(type, wr, sge, inl, srq))
			return nullptr;
		const ibv_qp_state walk[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
		for (ibv_qp_state s : walk)
			EXPECT_EQ(to_state(s), 0) << s;
		return qp_;
	}

	struct ibv_qp *create_in_reset(ibv_qp_type type, uint32_t wr, uint32_t sge,
				       uint32_t inl, struct ibv_srq *srq = nullptr)
	{
		struct ibv_qp_init_attr a = {};
		a.send_cq = cq_;
		a.recv_cq = cq_;
		a.srq = srq;
		a.qp_type = type;
		a.cap.max_send_wr = wr;
		a.cap.max_recv_wr = wr;
		a.cap.max_send_sge = sge;
		a.cap.max_recv_sge = sge;
		a.cap.max_inline_data = inl;
		qp_ = ibv_create_qp(pd_, &a);
		cap_ = a.cap;
		return qp_;
	}

	int to_state(ibv_qp_state state, int mask = IBV_QP_STATE)
	{
		struct ibv_qp_attr a = {};
		a.qp_state = state;
		return ibv_modify_qp(qp_, &a, mask);
	}

	int post_recv_one(uint64_t wr_id, struct ibv_recv_wr **bad)
	{
		struct ibv_sge s = {0x6000, 16, 0x66};
		struct ibv_recv_wr w = {};
		w.wr_id = wr_id;
		w.sg_list = &s;
		w.num_sge = 1;
		*bad = nullptr;
		int r = ibv_post_recv(qp_, &w, bad);
		bad_index_ = *bad == &w ? 0 : (*bad ? 99 : -1);
		return r;
	}

	kring ring(int which)
	{
		void *k = nullptr;
		uint32_t entries = 0, stride = 0;
		EXPECT_EQ(fake.qp_ring(qp_->handle, which, &k, &entries, &stride), 0);
		return make_kring(k, entries, stride);
	}

	unsigned send_db()
	{
		unsigned s = 0, r = 0;
		EXPECT_EQ(fake.qp_doorbells(qp_->handle, &s, &r), 0);
		return s;
	}

	unsigned recv_db()
	{
		unsigned s = 0, r = 0;
		EXPECT_EQ(fake.qp_doorbells(qp_->handle, &s, &r), 0);
		return r;
	}

	int post_sends(unsigned n, uint64_t first_id, struct ibv_send_wr **bad)
	{
		std::vector<struct ibv_send_wr> wrs(n);
		sges_.assign(n, {});
		for (unsigned i = 0; i < n; i++) {
			sges_[i].addr = 0x10000 + 64 * i;
			sges_[i].length = 64;
			sges_[i].lkey = 0x77;
			wrs[i] = {};
			wrs[i].wr_id = first_id + i;
			wrs[i].sg_list = &sges_[i];
			wrs[i].num_sge = 1;
			wrs[i].opcode = IBV_WR_SEND;
			wrs[i].next = i + 1 < n ? &wrs[i + 1] : nullptr;
		}
		*bad = nullptr;
		int r = ibv_post_send(qp_, wrs.data(), bad);
		// Report bad_wr as an index into the list (the vector dies here).
		bad_index_ = *bad ? static_cast<int>(*bad - wrs.data()) : -1;
		return r;
	}

	struct ibv_cq *cq_ = nullptr;
	struct ibv_qp *qp_ = nullptr;
	struct ibv_srq *srq_ = nullptr;
	struct ibv_qp_cap cap_ = {};
	std::vector<struct ibv_sge> sges_;
	int bad_index_ = -1;
};

TEST_F(Qp, CreateMapsBothRingsAndReportsGrantedCaps)
{
	const int maps = live_maps();
	mark();
	ASSERT_TRUE(create(IBV_QPT_RC, 100, 3, 60)) << strerror(errno);
	EXPECT_EQ(live_maps(), maps + 2);
	const std::string l = log();
	EXPECT_TRUE(contains(l, "CREATE_QP in=")) << l;
	EXPECT_TRUE(contains(l, "udata_out=" + std::to_string(sizeof(sroce_create_qp_resp))))
		<< l;
	EXPECT_TRUE(contains(l, "type=2 wr=100/100 sge=3/3 inline=60 srq=0")) << l;
	EXPECT_EQ(cap_.max_send_wr, 128u);
	EXPECT_EQ(cap_.max_recv_wr, 128u);
	EXPECT_GE(cap_.max_send_sge, 3u);
	EXPECT_GE(cap_.max_recv_sge, 3u);
	EXPECT_GE(cap_.max_inline_data, 60u);
	kring sq = ring(0), rq = ring(1);
	EXPECT_EQ(sq.entries, 128u);
	EXPECT_EQ(rq.entries, 128u);
	EXPECT_NE(qp_->qp_num, 0u);

	mark();
	EXPECT_EQ(ibv_destroy_qp(qp_), 0);
	qp_ = nullptr;
	EXPECT_EQ(live_maps(), maps);
	EXPECT_TRUE(contains(log(), "DESTROY_QP")) << log();
}

TEST_F(Qp, UnusableRingDescriptionIsEprotoAndUndone)
{
	const char *bad[] = {"sq_entries", "rq_stride", "inline"};
	const int maps = live_maps();
	for (const char *b : bad) {
		scoped_env env("FAKE_QP_BAD_RING", b);
		mark();
		errno = 0;
		EXPECT_FALSE(create(IBV_QPT_RC, 16, 2, 32)) << b;
		EXPECT_EQ(errno, EPROTO) << b;
		EXPECT_EQ(live_maps(), maps) << b;
		const std::string l = log();
		EXPECT_TRUE(contains(l, "DESTROY_QP")) << b << l;
	}
}

TEST_F(Qp, UnsupportedCreateAttributesNeverReachTheKernel)
{
	struct ibv_qp_init_attr_ex a = {};
	a.send_cq = cq_;
	a.recv_cq = cq_;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.pd = pd_;
	mark();
	// (inproc_qp_ex.cpp checks every send_ops_flags bit per QP type.)
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.qp_type = IBV_QPT_RAW_PACKET;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_FALSE(contains(log(), "CREATE_QP")) << log();

	// send_ops_flags 0 with the mask bit is fine.
	a.qp_type = IBV_QPT_UD;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = 0;
	qp_ = ibv_create_qp_ex(ctx_, &a);
	EXPECT_TRUE(qp_) << strerror(errno);
}

TEST_F(Qp, PostSendEncodesPublishesAndKicksOnlyWhenAsked)
{
	ASSERT_TRUE(create(IBV_QPT_RC, 16, 2, 64));
	kring sq = ring(0);
	const uint32_t prod0 = sq.prod();
	// A new QP's SQ asks for a kick (the fake sets NEED_KICK).
	struct ibv_send_wr *bad;
	char inl[40];
	memset(inl, 0x5a, sizeof(inl));
	struct ibv_sge s0[2] = {{0x1000, 100, 0x11}, {0x2000, 200, 0x22}};
	struct ibv_sge s1 = {reinterpret_cast<uintptr_t>(inl), sizeof(inl), 0};
	struct ibv_send_wr w[2] = {};
	w[0].wr_id = 0xabc;
	w[0].opcode = IBV_WR_SEND;
	w[0].sg_list = s0;
	w[0].num_sge = 2;
	w[0].send_flags = IBV_SEND_SIGNALED;
	w[0].next = &w[1];
	w[1].wr_id = 0xdef;
	w[1].opcode = IBV_WR_RDMA_WRITE;
	w[1].sg_list = &s1;
	w[1].num_sge = 1;
	w[1].send_flags = IBV_SEND_INLINE;
	w[1].wr.rdma.remote_addr = 0x123456789;
	w[1].wr.rdma.rkey = 0x4321;
	ASSERT_EQ(ibv_post_send(qp_, w, &bad), 0);
	EXPECT_EQ(sq.prod(), prod0 + 2);
	EXPECT_EQ(send_db(), 1u);

	const struct sroce_send_wqe *e = sq.send(prod0);
	EXPECT_EQ(e->wr_id, 0xabcu);
	EXPECT_EQ(e->opcode, SROCE_WR_SEND);
	EXPECT_EQ(e->num_sge, 2);
	EXPECT_EQ(e->flags, SROCE_WQE_F_SIGNALED);
	EXPECT_EQ(sq.sge(prod0, SROCE_SEND_WQE_HDR, 1)->addr, 0x2000u);
	EXPECT_EQ(sq.sge(prod0, SROCE_SEND_WQE_HDR, 1)->length, 200u);
	EXPECT_EQ(sq.sge(prod0, SROCE_SEND_WQE_HDR, 1)->lkey, 0x22u);
	e = sq.send(prod0 + 1);
	EXPECT_EQ(e->wr_id, 0xdefu);
	EXPECT_EQ(e->opcode, SROCE_WR_RDMA_WRITE);
	EXPECT_EQ(e->flags, SROCE_WQE_F_INLINE);
	EXPECT_EQ(e->inline_len, sizeof(inl));
	EXPECT_EQ(e->wr.rdma.remote_addr, 0x123456789u);
	EXPECT_EQ(e->wr.rdma.rkey, 0x4321u);
	EXPECT_EQ(memcmp(sq.slot(prod0 + 1) + SROCE_SEND_WQE_HDR, inl, sizeof(inl)), 0);

	// The requester is running: no flags, no system call.
	sq.set_flags(0);
	mark();
	EXPECT_EQ(post_sends(3, 10, &bad), 0);
	EXPECT_EQ(sq.prod(), prod0 + 5);
	EXPECT_EQ(send_db(), 1u);
	EXPECT_FALSE(contains(log(), "POST_SEND")) << log();

	sq.set_flags(SROCE_RING_F_NEED_KICK);
	EXPECT_EQ(post_sends(1, 20, &bad), 0);
	EXPECT_EQ(send_db(), 2u);

	// ERROR alone also rings: the kernel must flush the new WQEs.
	sq.set_flags(SROCE_RING_F_ERROR);
	mark();
	EXPECT_EQ(post_sends(2, 30, &bad), 0);
	EXPECT_EQ(send_db(), 3u);
	EXPECT_TRUE(contains(log(), "POST_SEND in=24 out=4 udata_in=0 udata_out=0 handle=" +
					    std::to_string(qp_->handle) + " wr_count=0 sge_count=0"))
		<< log();
	EXPECT_EQ(sq.prod(), prod0 + 8);
}

TEST_F(Qp, PostSendFullRingIsEnomemAtTheFirstWrThatDoesNotFit)
{
	ASSERT_TRUE(create(IBV_QPT_UC, 4, 1, 0));
	kring sq = ring(0);
	ASSERT_EQ(sq.entries, 4u);
	sq.set_flags(0);
	const uint32_t prod0 = sq.prod();
	struct ibv_send_wr *bad;

	EXPECT_EQ(post_sends(3, 0, &bad), 0);
	EXPECT_EQ(post_sends(3, 3, &bad), ENOMEM);
	EXPECT_EQ(bad_index_, 1);	// one slot was left: wr 3 went in
	EXPECT_EQ(sq.prod(), prod0 + 4);
	EXPECT_EQ(sq.send(prod0 + 3)->wr_id, 3u);

	EXPECT_EQ(post_sends(1, 9, &bad), ENOMEM);
	EXPECT_EQ(bad_index_, 0);
	EXPECT_EQ(sq.prod(), prod0 + 4);

	// Two completions free two slots.
	sq.set_cons(sq.cons() + 2);
	EXPECT_EQ(post_sends(3, 100, &bad), ENOMEM);
	EXPECT_EQ(bad_index_, 2);
	EXPECT_EQ(sq.prod(), prod0 + 6);
	EXPECT_EQ(sq.send(prod0 + 5)->wr_id, 101u);
	EXPECT_EQ(send_db(), 0u);	// the rings never asked
}

TEST_F(Qp, PostSendStopsAtAnInvalidWrAndPostsThoseBefore)
{
	ASSERT_TRUE(create(IBV_QPT_UC, 8, 1, 0));
	kring sq = ring(0);
	const uint32_t prod0 = sq.prod();
	struct ibv_sge sge = {0x1000, 8, 1};
	struct ibv_send_wr w[3] = {};
	for (int i = 0; i < 3; i++) {
		w[i].wr_id = 50 + i;
		w[i].opcode = IBV_WR_SEND;
		w[i].sg_list = &sge;
		w[i].num_sge = 1;
		w[i].next = i < 2 ? &w[i + 1] : nullptr;
	}
	w[1].opcode = IBV_WR_RDMA_READ;	// not on UC
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(qp_, w, &bad), EINVAL);
	EXPECT_EQ(bad, &w[1]);
	EXPECT_EQ(sq.prod(), prod0 + 1);
	EXPECT_EQ(send_db(), 1u);	// NEED_KICK from creation

	w[0].num_sge = static_cast<int>(cap_.max_send_sge) + 1;	// over the cap
	bad = nullptr;
	EXPECT_EQ(ibv_post_send(qp_, w, &bad), EINVAL);
	EXPECT_EQ(bad, &w[0]);
	EXPECT_EQ(sq.prod(), prod0 + 1);
	EXPECT_EQ(send_db(), 1u);	// nothing published, no doorbell
}

TEST_F(Qp, PostRecvWritesTheRqAndKicksOnlyInError)
{
	ASSERT_TRUE(create(IBV_QPT_RC, 8, 2, 0));
	kring rq = ring(1);
	const uint32_t prod0 = rq.prod();
	struct ibv_sge s[2] = {{0x3000, 300, 0x33}, {0x4000, 400, 0x44}};
	struct ibv_recv_wr w[2] = {};
	w[0].wr_id = 7;
	w[0].sg_list = s;
	w[0].num_sge = 2;
	w[0].next = &w[1];
	w[1].wr_id = 8;
	w[1].sg_list = &s[1];
	w[1].num_sge = 1;
	struct ibv_recv_wr *bad = nullptr;
	mark();
	ASSERT_EQ(ibv_post_recv(qp_, w, &bad), 0);
	EXPECT_EQ(rq.prod(), prod0 + 2);
	EXPECT_EQ(rq.recv(prod0)->wr_id, 7u);
	EXPECT_EQ(rq.recv(prod0)->num_sge, 2u);
	EXPECT_EQ(rq.sge(prod0, SROCE_RECV_WQE_HDR, 0)->addr, 0x3000u);
	EXPECT_EQ(rq.sge(prod0, SROCE_RECV_WQE_HDR, 1)->lkey, 0x44u);
	EXPECT_EQ(rq.recv(prod0 + 1)->wr_id, 8u);
	EXPECT_EQ(rq.recv(prod0 + 1)->num_sge, 1u);
	EXPECT_EQ(recv_db(), 0u);
	EXPECT_FALSE(contains(log(), "POST_RECV")) << log();

	// Over max_recv_sge: EINVAL, nothing published.
	w[1].num_sge = static_cast<int>(cap_.max_recv_sge) + 1;
	w[1].sg_list = nullptr;
	EXPECT_EQ(ibv_post_recv(qp_, &w[1], &bad), EINVAL);
	EXPECT_EQ(bad, &w[1]);
	EXPECT_EQ(rq.prod(), prod0 + 2);

	// ERR: the fake sets ERROR on both rings; posting rings doorbells.
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(ibv_modify_qp(qp_, &a, IBV_QP_STATE), 0);
	w[1].num_sge = 1;
	w[1].sg_list = &s[1];
	w[1].next = nullptr;
	EXPECT_EQ(ibv_post_recv(qp_, &w[1], &bad), 0);
	EXPECT_EQ(recv_db(), 1u);
	kring sq = ring(0);
	sq.set_flags(SROCE_RING_F_ERROR);	// ERROR without NEED_KICK
	struct ibv_send_wr *sbad;
	const unsigned before = send_db();
	EXPECT_EQ(post_sends(1, 1, &sbad), 0);
	EXPECT_EQ(send_db(), before + 1);
}

// ---- posting by QP state -----------------------------------------------------------

const char *state_name(ibv_qp_state s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};
	return s <= IBV_QPS_ERR ? names[s] : "?";
}

// RESET (from creation), INIT, RTR: EINVAL at the first WR, prod never
// moves (the ring keeps NEED_KICK from creation, so a publish would also
// ring); RTS, SQD, SQE: posted.
TEST_F(Qp, PostSendIsEinvalBeforeRtsAndQueuesNothing)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, 8, 1, 0));
	kring sq = ring(0);
	const uint32_t prod0 = sq.prod();
	struct ibv_send_wr *bad;
	const ibv_qp_state refused[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR};
	for (ibv_qp_state s : refused) {
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(to_state(s), 0) << state_name(s);
		}
		mark();
		EXPECT_EQ(post_sends(3, 0x10 * (s + 1), &bad), EINVAL) << state_name(s);
		EXPECT_EQ(bad_index_, 0) << state_name(s);
		EXPECT_EQ(sq.prod(), prod0) << state_name(s);
		EXPECT_EQ(send_db(), 0u) << state_name(s);
		EXPECT_FALSE(contains(log(), "POST_SEND")) << state_name(s) << ": " << log();
	}

	uint32_t prod = prod0;
	const ibv_qp_state allowed[] = {IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE};
	for (ibv_qp_state s : allowed) {
		ASSERT_EQ(to_state(s), 0) << state_name(s);
		const uint64_t id = 0x100 * (s + 1);
		EXPECT_EQ(post_sends(2, id, &bad), 0) << state_name(s);
		EXPECT_EQ(sq.prod(), prod + 2) << state_name(s);
		EXPECT_EQ(sq.send(prod)->wr_id, id) << state_name(s);
		prod = sq.prod();
		sq.set_cons(prod);	// the kernel completed them
	}
	EXPECT_EQ(send_db(), 3u);	// NEED_KICK is never cleared here
}

// RESET: EINVAL at the first WR, the RQ untouched; INIT, RTR, RTS posted.
TEST_F(Qp, PostRecvIsEinvalOnlyInReset)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, 8, 1, 0));
	kring rq = ring(1);
	const uint32_t prod0 = rq.prod();
	struct ibv_sge sge = {0x3000, 30, 0x33};
	struct ibv_recv_wr w[2] = {};
	w[0].wr_id = 1;
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[0].next = &w[1];
	w[1] = w[0];
	w[1].wr_id = 2;
	w[1].next = nullptr;
	struct ibv_recv_wr *bad = nullptr;
	mark();
	EXPECT_EQ(ibv_post_recv(qp_, w, &bad), EINVAL);
	EXPECT_EQ(bad, &w[0]);
	EXPECT_EQ(rq.prod(), prod0);
	EXPECT_EQ(recv_db(), 0u);
	EXPECT_FALSE(contains(log(), "POST_RECV")) << log();

	uint32_t prod = prod0;
	const ibv_qp_state allowed[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	for (ibv_qp_state s : allowed) {
		ASSERT_EQ(to_state(s), 0) << state_name(s);
		EXPECT_EQ(post_recv_one(0x10 + s, &bad), 0) << state_name(s);
		EXPECT_EQ(bad_index_, -1) << state_name(s);
		EXPECT_EQ(rq.prod(), prod + 1) << state_name(s);
		EXPECT_EQ(rq.recv(prod)->wr_id, 0x10u + s) << state_name(s);
		prod = rq.prod();
	}
	EXPECT_EQ(recv_db(), 0u);
}

// ERR takes both, whether the kernel moved the QP there on its own (the
// rings' ERROR flag; from RTR here, where sends were refused) or
// modify_qp did: published, and the doorbells make the kernel flush
// them.  RESET again refuses both.
TEST_F(Qp, PostsInErrAreAcceptedAndFlushedResetRefusesAgain)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, 8, 1, 0));
	kring sq = ring(0), rq = ring(1);
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	ASSERT_EQ(to_state(IBV_QPS_RTR), 0);
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	const uint32_t sprod0 = sq.prod(), rprod0 = rq.prod();
	ASSERT_EQ(post_sends(1, 1, &sbad), EINVAL);
	ASSERT_EQ(sq.prod(), sprod0);

	// What sroce_qp_flush does to the flags.
	sq.set_flags(SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK);
	rq.set_flags(SROCE_RING_F_ERROR);
	EXPECT_EQ(post_sends(2, 0x20, &sbad), 0);
	EXPECT_EQ(sq.prod(), sprod0 + 2);
	EXPECT_EQ(sq.send(sprod0)->wr_id, 0x20u);
	EXPECT_EQ(send_db(), 1u);
	EXPECT_EQ(post_recv_one(0x21, &rbad), 0);
	EXPECT_EQ(rq.prod(), rprod0 + 1);
	EXPECT_EQ(recv_db(), 1u);

	// modify_qp to ERR (the fake sets the flags the same way).
	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	EXPECT_EQ(post_sends(1, 0x30, &sbad), 0);
	EXPECT_EQ(sq.prod(), sprod0 + 3);
	EXPECT_EQ(send_db(), 2u);
	EXPECT_EQ(post_recv_one(0x31, &rbad), 0);
	EXPECT_EQ(rq.prod(), rprod0 + 2);
	EXPECT_EQ(recv_db(), 2u);

	// RESET: the kernel empties the rings and clears ERROR.
	sq.set_cons(sq.prod());
	rq.set_cons(rq.prod());
	ASSERT_EQ(to_state(IBV_QPS_RESET), 0);
	EXPECT_EQ(post_sends(1, 0x40, &sbad), EINVAL);
	EXPECT_EQ(bad_index_, 0);
	EXPECT_EQ(post_recv_one(0x41, &rbad), EINVAL);
	EXPECT_EQ(bad_index_, 0);
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	EXPECT_EQ(post_sends(1, 0x50, &sbad), EINVAL);
	EXPECT_EQ(post_recv_one(0x51, &rbad), 0);
	EXPECT_EQ(sq.prod(), sprod0 + 3);
	EXPECT_EQ(rq.prod(), rprod0 + 3);
	EXPECT_EQ(send_db(), 2u);
	EXPECT_EQ(recv_db(), 2u);
}

// Only a modify_qp that succeeded, with IBV_QP_STATE, changes what the
// posts go by.
TEST_F(Qp, OnlyASuccessfulStateChangeCounts)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, 8, 1, 0));
	kring sq = ring(0);
	const uint32_t prod0 = sq.prod();
	struct ibv_send_wr *bad;
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	{
		scoped_env env("FAKE_MODIFY_QP_ERRNO", "22");
		EXPECT_EQ(to_state(IBV_QPS_RTS), EINVAL);
	}
	EXPECT_EQ(post_sends(1, 1, &bad), EINVAL);
	// qp_state = RTS without IBV_QP_STATE in the mask: no state change.
	ASSERT_EQ(to_state(IBV_QPS_RTS, IBV_QP_QKEY), 0);
	EXPECT_EQ(post_sends(1, 2, &bad), EINVAL);
	EXPECT_EQ(sq.prod(), prod0);

	ASSERT_EQ(to_state(IBV_QPS_RTR), 0);
	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	{
		scoped_env env("FAKE_MODIFY_QP_ERRNO", "22");
		EXPECT_EQ(to_state(IBV_QPS_RESET), EINVAL);
	}
	EXPECT_EQ(post_sends(1, 3, &bad), 0);
	EXPECT_EQ(sq.prod(), prod0 + 1);
	EXPECT_EQ(sq.send(prod0)->wr_id, 3u);
}

TEST_F(Qp, SrqQpHasNoRqAndRefusesPostRecv)
{
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq_ = ibv_create_srq(pd_, &sa);
	ASSERT_TRUE(srq_) << strerror(errno);
	const int maps = live_maps();
	ASSERT_TRUE(create(IBV_QPT_RC, 8, 1, 0, srq_)) << strerror(errno);
	EXPECT_EQ(live_maps(), maps + 1);	// the SQ only
	EXPECT_EQ(cap_.max_recv_wr, 0u);
	void *k;
	uint32_t e, st;
	EXPECT_EQ(fake.qp_ring(qp_->handle, 1, &k, &e, &st), -EINVAL);

	struct ibv_sge s = {0x1000, 8, 1};
	struct ibv_recv_wr w = {};
	w.sg_list = &s;
	w.num_sge = 1;
	struct ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(qp_, &w, &bad), EINVAL);
	EXPECT_EQ(bad, &w);
}

TEST_F(Qp, SrqPostFillsTheRingWithoutSystemCalls)
{
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 10;
	sa.attr.max_sge = 2;
	const int maps = live_maps();
	mark();
	srq_ = ibv_create_srq(pd_, &sa);
	ASSERT_TRUE(srq_) << strerror(errno);
	EXPECT_EQ(live_maps(), maps + 1);
	EXPECT_TRUE(contains(log(), "CREATE_SRQ in=")) << log();
	EXPECT_TRUE(contains(log(), "udata_out=" +
					    std::to_string(sizeof(sroce_create_srq_resp))))
		<< log();
	EXPECT_EQ(sa.attr.max_wr, 16u);
	EXPECT_GE(sa.attr.max_sge, 2u);

	void *k = nullptr;
	uint32_t entries = 0, stride = 0;
	ASSERT_EQ(fake.srq_ring(srq_->handle, &k, &entries, &stride), 0);
	kring r = make_kring(k, entries, stride);
	const uint32_t prod0 = r.prod();

	std::vector<struct ibv_recv_wr> w(20);
	struct ibv_sge s = {0x5000, 500, 0x55};
	for (size_t i = 0; i < w.size(); i++) {
		w[i].wr_id = 900 + i;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].next = i + 1 < w.size() ? &w[i + 1] : nullptr;
	}
	mark();
	struct ibv_recv_wr *bad = nullptr;
	w[2].next = nullptr;
	EXPECT_EQ(ibv_post_srq_recv(srq_, w.data(), &bad), 0);
	EXPECT_EQ(r.prod(), prod0 + 3);
	EXPECT_EQ(r.recv(prod0 + 2)->wr_id, 902u);
	EXPECT_EQ(r.sge(prod0 + 2, SROCE_RECV_WQE_HDR, 0)->length, 500u);
	// 13 slots left: the 14th WR of the rest is ENOMEM.
	w[2].next = &w[3];
	EXPECT_EQ(ibv_post_srq_recv(srq_, &w[3], &bad), ENOMEM);
	EXPECT_EQ(bad, &w[16]);
	EXPECT_EQ(r.prod(), prod0 + 16);
	EXPECT_EQ(r.recv(prod0 + 15)->wr_id, 915u);
	EXPECT_FALSE(contains(log(), "POST")) << log();	// no command at all

	struct ibv_srq_attr ma = {};
	ma.max_wr = 32;
	EXPECT_EQ(ibv_modify_srq(srq_, &ma, IBV_SRQ_MAX_WR), EINVAL);

	mark();
	EXPECT_EQ(ibv_destroy_srq(srq_), 0);
	srq_ = nullptr;
	EXPECT_EQ(live_maps(), maps);
	EXPECT_TRUE(contains(log(), "DESTROY_SRQ")) << log();
}

} // namespace
