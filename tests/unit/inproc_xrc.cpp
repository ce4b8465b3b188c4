// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// XRC through libibverbs on the fake kernel: nothing of it without
// SROCE_CTX_F_XRC (EOPNOTSUPP, no command); with it, XRC domains
// (OPEN_XRCD / CLOSE_XRCD, shared through an inode), XRC SRQs
// (create_srq_ex -> CREATE_XSRQ, the ring mapped and posted to like a
// basic SRQ's, ibv_get_srq_num giving ib_core's number, not the driver's),
// basic SRQs through create_srq_ex, an XRC initiator's single SQ ring, an
// XRC target with no rings and no udata (modify, query, destroy work,
// posts are EINVAL), and ibv_open_qp of a target by number - from the
// same context and from another one sharing the domain through a file.
// The WQEs of an initiator (remote SRQ numbers from ibv_post_send and
// ibv_wr_set_xrc_srqn) are checked in inproc_qp_ex.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "inproc.hpp"

using namespace inproc;

namespace {

// The first number after "key=" in the last log line that has it.
long last_value(const std::string &log, const std::string &key)
{
	const size_t at = log.rfind(" " + key + "=");
	if (at == std::string::npos)
		return -1;
	return strtol(log.c_str() + at + key.size() + 2, nullptr, 0);
}

// A context whose kernel does not say SROCE_CTX_F_XRC (the fake's default).
class NoXrc : public Verbs {};

TEST_F(NoXrc, EveryXrcVerbIsEopnotsuppWithoutACommand)
{
	struct ibv_cq *cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
	ASSERT_TRUE(cq) << strerror(errno);
	mark();

	struct ibv_xrcd_init_attr xa = {};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	errno = 0;
	EXPECT_FALSE(ibv_open_xrcd(ctx_, &xa));
	EXPECT_EQ(errno, EOPNOTSUPP);

	// The QP and SRQ types, with a domain that never reaches a command.
	struct ibv_xrcd not_opened = {};
	not_opened.context = ctx_;
	struct ibv_qp_init_attr_ex qa = {};
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = &not_opened;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &qa));
	EXPECT_EQ(errno, EOPNOTSUPP);

	struct ibv_qp_init_attr ia = {};
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = cq;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp(pd_, &ia));
	EXPECT_EQ(errno, EOPNOTSUPP);
	qa = {};
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = pd_;
	qa.send_cq = cq;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qa.cap.max_send_wr = 4;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &qa));
	EXPECT_EQ(errno, EOPNOTSUPP);

	struct ibv_srq_init_attr_ex sa = {};
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd_;
	sa.xrcd = &not_opened;
	sa.cq = cq;
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	errno = 0;
	EXPECT_FALSE(ibv_create_srq_ex(ctx_, &sa));
	EXPECT_EQ(errno, EOPNOTSUPP);

	struct ibv_qp_open_attr oa = {};
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = 16;
	oa.xrcd = &not_opened;
	oa.qp_type = IBV_QPT_XRC_RECV;
	errno = 0;
	EXPECT_FALSE(ibv_open_qp(ctx_, &oa));
	EXPECT_EQ(errno, EOPNOTSUPP);

	const std::string l = log();
	for (const char *c : {"OPEN_XRCD", "CREATE_QP", "CREATE_XSRQ", "CREATE_SRQ", "OPEN_QP"})
		EXPECT_FALSE(contains(l, c)) << c << "\n" << l;

	// A basic SRQ through ibv_create_srq_ex still works; it has no number
	// to give (libibverbs' own answer: the op is not offered).
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_BASIC;
	struct ibv_srq *srq = ibv_create_srq_ex(ctx_, &sa);
	ASSERT_TRUE(srq) << strerror(errno);
	EXPECT_TRUE(contains(log(), "CREATE_SRQ in=")) << log();
	uint32_t num = 77;
	EXPECT_EQ(ibv_get_srq_num(srq, &num), EOPNOTSUPP);
	EXPECT_EQ(num, 77u);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// A context whose kernel has XRC, a CQ, and what the tests made.
class Xrc : public Verbs {
protected:
	void SetUp() override
	{
		// Read by the fake at GET_CONTEXT only.
		scoped_env env("FAKE_SROCE_CTX_FLAGS", std::to_string(SROCE_CTX_F_XRC).c_str());
		Verbs::SetUp();
		ASSERT_FALSE(HasFatalFailure());
		cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
		ASSERT_TRUE(cq_) << strerror(errno);
	}

	void TearDown() override
	{
		for (struct ibv_qp *q : qps_)
			EXPECT_EQ(ibv_destroy_qp(q), 0);
		for (struct ibv_srq *s : srqs_)
			EXPECT_EQ(ibv_destroy_srq(s), 0);
		for (struct ibv_xrcd *x : xrcds_)
			EXPECT_EQ(ibv_close_xrcd(x), 0);
		if (cq_) {
			EXPECT_EQ(ibv_destroy_cq(cq_), 0);
		}
		Verbs::TearDown();
	}

	struct ibv_xrcd *open_xrcd(int fd = -1, int oflags = O_CREAT,
				   struct ibv_context *ctx = nullptr)
	{
		struct ibv_xrcd_init_attr a = {};
		a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
		a.fd = fd;
		a.oflags = oflags;
		struct ibv_xrcd *x = ibv_open_xrcd(ctx ? ctx : ctx_, &a);
		if (x && !ctx)
			xrcds_.push_back(x);
		return x;
	}

	struct ibv_srq *xrc_srq(struct ibv_xrcd *x, uint32_t wr = 8, uint32_t sge = 1,
				void *srq_context = nullptr)
	{
		struct ibv_srq_init_attr_ex a = {};
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		a.srq_type = IBV_SRQT_XRC;
		a.pd = pd_;
		a.xrcd = x;
		a.cq = cq_;
		a.attr.max_wr = wr;
		a.attr.max_sge = sge;
		a.srq_context = srq_context;
		struct ibv_srq *s = ibv_create_srq_ex(ctx_, &a);
		if (s)
			srqs_.push_back(s);
		granted_ = a.attr;
		return s;
	}

	struct ibv_qp *target(struct ibv_xrcd *x)
	{
		struct ibv_qp_init_attr_ex a = {};
		a.qp_type = IBV_QPT_XRC_RECV;
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = x;
		a.qp_context = this;
		struct ibv_qp *q = ibv_create_qp_ex(ctx_, &a);
		if (q)
			qps_.push_back(q);
		return q;
	}

	template <class T>
	void forget(std::vector<T *> &v, T *p)
	{
		for (auto it = v.begin(); it != v.end(); ++it)
			if (*it == p) {
				v.erase(it);
				return;
			}
	}

	int post_send_one(struct ibv_qp *q, struct ibv_send_wr **bad)
	{
		struct ibv_sge s = {0x4000, 8, 1};
		struct ibv_send_wr w = {};
		w.opcode = IBV_WR_SEND;
		w.sg_list = &s;
		w.num_sge = 1;
		w.qp_type.xrc.remote_srqn = 5;
		*bad = nullptr;
		int r = ibv_post_send(q, &w, bad);
		bad_is_first_ = *bad == &w;
		return r;
	}

	int post_recv_one(struct ibv_qp *q, struct ibv_recv_wr **bad)
	{
		struct ibv_sge s = {0x4000, 8, 1};
		struct ibv_recv_wr w = {};
		w.sg_list = &s;
		w.num_sge = 1;
		*bad = nullptr;
		int r = ibv_post_recv(q, &w, bad);
		bad_is_first_ = *bad == &w;
		return r;
	}

	struct ibv_cq *cq_ = nullptr;
	std::vector<struct ibv_qp *> qps_;
	std::vector<struct ibv_srq *> srqs_;
	std::vector<struct ibv_xrcd *> xrcds_;
	struct ibv_srq_attr granted_ = {};
	bool bad_is_first_ = false;
};

// ---- domains -----------------------------------------------------------------------------

TEST_F(Xrc, DomainOpensAndCloses)
{
	mark();
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	EXPECT_EQ(x->context, ctx_);
	std::string l = log();
	// ib_core's command, no driver data either way.
	EXPECT_TRUE(contains(l, "OPEN_XRCD in=16 out=4 udata_in=0 udata_out=0 fd=-1 oflags=" +
					hex(O_CREAT)))
		<< l;
	EXPECT_TRUE(contains(l, "ret=0")) << l;
	const long h = last_value(l, "handle");
	EXPECT_GT(h, 0);

	mark();
	EXPECT_EQ(ibv_close_xrcd(x), 0);
	forget(xrcds_, x);
	EXPECT_TRUE(contains(log(), "CLOSE_XRCD in=4 out=0 udata_in=0 udata_out=0 handle=" +
					    std::to_string(h) + " ret=0"))
		<< log();
}

TEST_F(Xrc, DomainSharedThroughAFile)
{
	char path[] = "/tmp/sroce-xrcd-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);

	// No domain for this inode yet: without O_CREAT the kernel says EAGAIN.
	errno = 0;
	EXPECT_FALSE(open_xrcd(fd, 0));
	EXPECT_EQ(errno, EAGAIN);
	mark();
	struct ibv_xrcd *a = open_xrcd(fd, O_CREAT);
	ASSERT_TRUE(a) << strerror(errno);
	const long dom = last_value(log(), "domain");
	mark();
	struct ibv_xrcd *b = open_xrcd(fd, 0);
	ASSERT_TRUE(b) << strerror(errno);
	EXPECT_NE(a, b);
	EXPECT_EQ(last_value(log(), "domain"), dom) << log();
	EXPECT_TRUE(contains(log(), " fd=" + std::to_string(fd) + " oflags=0x0")) << log();
	// O_EXCL: the domain exists.
	errno = 0;
	EXPECT_FALSE(open_xrcd(fd, O_CREAT | O_EXCL));
	EXPECT_EQ(errno, EINVAL);
	close(fd);

	// libibverbs' own checks: FD and OFLAGS must both be named.
	struct ibv_xrcd_init_attr attr = {};
	attr.comp_mask = IBV_XRCD_INIT_ATTR_FD;
	attr.fd = -1;
	mark();
	errno = 0;
	EXPECT_FALSE(ibv_open_xrcd(ctx_, &attr));
	EXPECT_EQ(errno, EINVAL);
	EXPECT_FALSE(contains(log(), "OPEN_XRCD")) << log();
}

// ---- SRQs ----------------------------------------------------------------------------------

TEST_F(Xrc, XrcSrqIsARingWithIbCoresNumber)
{
	mark();
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	const long xh = last_value(log(), "handle");
	const int maps = live_maps();
	mark();
	int tag;
	struct ibv_srq *s = xrc_srq(x, 10, 2, &tag);
	ASSERT_TRUE(s) << strerror(errno);
	const std::string l = log();
	EXPECT_TRUE(contains(l, "CREATE_XSRQ in=")) << l;
	EXPECT_TRUE(contains(l, "udata_out=" + std::to_string(sizeof(sroce_create_srq_resp))))
		<< l;
	EXPECT_TRUE(contains(l, "type=1 xrcd=" + std::to_string(xh) + " cq=" +
					std::to_string(cq_->handle) + " max_wr=10 max_sge=2"))
		<< l;
	EXPECT_EQ(live_maps(), maps + 1);
	EXPECT_EQ(granted_.max_wr, 16u);
	EXPECT_GE(granted_.max_sge, 2u);
	// What ibv_create_srq would have set, and the SRQ's own context.
	EXPECT_EQ(s->context, ctx_);
	EXPECT_EQ(s->pd, pd_);
	EXPECT_EQ(s->srq_context, &tag);

	// ib_core's XRC SRQ number (the fake's 0x5000 + handle), not the
	// driver's srqn (the handle).
	uint32_t num = 0;
	ASSERT_EQ(ibv_get_srq_num(s, &num), 0);
	EXPECT_EQ(num, 0x5000u + s->handle);
	EXPECT_EQ(static_cast<long>(num), last_value(l, "srqn"));

	// Receives go into its ring, without a system call.
	void *k = nullptr;
	uint32_t entries = 0, stride = 0;
	ASSERT_EQ(fake.srq_ring(s->handle, &k, &entries, &stride), 0);
	kring r = make_kring(k, entries, stride);
	const uint32_t prod0 = r.prod();
	struct ibv_sge sg[2] = {{0x7000, 100, 0x71}, {0x8000, 200, 0x81}};
	struct ibv_recv_wr w[2] = {};
	w[0].wr_id = 0xa1;
	w[0].sg_list = sg;
	w[0].num_sge = 2;
	w[0].next = &w[1];
	w[1].wr_id = 0xa2;
	w[1].sg_list = &sg[1];
	w[1].num_sge = 1;
	mark();
	struct ibv_recv_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_srq_recv(s, w, &bad), 0);
	EXPECT_EQ(r.prod(), prod0 + 2);
	EXPECT_EQ(r.recv(prod0)->wr_id, 0xa1u);
	EXPECT_EQ(r.recv(prod0)->num_sge, 2u);
	EXPECT_EQ(r.sge(prod0, SROCE_RECV_WQE_HDR, 1)->addr, 0x8000u);
	EXPECT_EQ(r.recv(prod0 + 1)->wr_id, 0xa2u);
	EXPECT_EQ(r.sge(prod0 + 1, SROCE_RECV_WQE_HDR, 0)->lkey, 0x81u);
	EXPECT_FALSE(contains(log(), "POST")) << log();

	// The domain is busy while its SRQ lives.
	EXPECT_EQ(ibv_close_xrcd(x), EBUSY);
	mark();
	EXPECT_EQ(ibv_destroy_srq(s), 0);
	forget(srqs_, s);
	EXPECT_EQ(live_maps(), maps);
	EXPECT_TRUE(contains(log(), "DESTROY_SRQ")) << log();
}

TEST_F(Xrc, XrcSrqAttributeErrors)
{
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	struct ibv_srq_init_attr_ex a = {};
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd_;
	a.xrcd = x;
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	mark();
	// No CQ: libibverbs refuses it.
	errno = 0;
	EXPECT_FALSE(ibv_create_srq_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	// Tag matching: not here.
	a.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	a.cq = cq_;
	a.srq_type = IBV_SRQT_TM;
	errno = 0;
	EXPECT_FALSE(ibv_create_srq_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	a.srq_type = IBV_SRQT_XRC;
	a.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
	a.tm_cap.max_num_tags = 4;
	errno = 0;
	EXPECT_FALSE(ibv_create_srq_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_FALSE(contains(log(), "SRQ")) << log();
}

TEST_F(Xrc, BasicSrqThroughCreateSrqEx)
{
	// More comp_mask bits than ibv_create_srq takes: the provider's
	// create_srq_ex, the basic command, no type named.
	struct ibv_srq_init_attr_ex a = {};
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = static_cast<enum ibv_srq_type>(7);	// not named: ignored
	a.pd = pd_;
	a.cq = cq_;
	a.attr.max_wr = 5;
	a.attr.max_sge = 1;
	a.srq_context = &a;
	const int maps = live_maps();
	mark();
	struct ibv_srq *s = ibv_create_srq_ex(ctx_, &a);
	ASSERT_TRUE(s) << strerror(errno);
	srqs_.push_back(s);
	EXPECT_TRUE(contains(log(), "CREATE_SRQ in=")) << log();
	EXPECT_FALSE(contains(log(), "CREATE_XSRQ")) << log();
	EXPECT_EQ(live_maps(), maps + 1);
	EXPECT_EQ(a.attr.max_wr, 8u);
	EXPECT_EQ(s->srq_context, &a);
	uint32_t num = 77;
	EXPECT_EQ(ibv_get_srq_num(s, &num), EINVAL);	// not an XRC SRQ
	EXPECT_EQ(num, 77u);

	// And ibv_create_srq's SRQs answer the same.
	struct ibv_srq_init_attr b = {};
	b.attr.max_wr = 4;
	b.attr.max_sge = 1;
	struct ibv_srq *s2 = ibv_create_srq(pd_, &b);
	ASSERT_TRUE(s2) << strerror(errno);
	srqs_.push_back(s2);
	EXPECT_EQ(ibv_get_srq_num(s2, &num), EINVAL);
}

// ---- the initiator ---------------------------------------------------------------------------

TEST_F(Xrc, InitiatorHasAnSqAndNoRq)
{
	struct ibv_qp_init_attr a = {};
	a.qp_type = IBV_QPT_XRC_SEND;
	a.send_cq = cq_;	// no recv_cq: an initiator receives nothing
	a.cap.max_send_wr = 8;
	a.cap.max_recv_wr = 8;	// ignored
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = 2;
	const int maps = live_maps();
	mark();
	struct ibv_qp *q = ibv_create_qp(pd_, &a);
	ASSERT_TRUE(q) << strerror(errno);
	qps_.push_back(q);
	const std::string l = log();
	EXPECT_TRUE(contains(l, "type=9 wr=8/0 sge=2/0")) << l;
	EXPECT_TRUE(contains(l, "udata_out=" + std::to_string(sizeof(sroce_create_qp_resp))))
		<< l;
	EXPECT_EQ(live_maps(), maps + 1);	// the SQ only
	EXPECT_EQ(a.cap.max_recv_wr, 0u);
	EXPECT_EQ(a.cap.max_send_wr, 8u);
	EXPECT_EQ(q->qp_type, IBV_QPT_XRC_SEND);
	void *k;
	uint32_t e, st;
	EXPECT_EQ(fake.qp_ring(q->handle, 0, &k, &e, &st), 0);
	EXPECT_EQ(fake.qp_ring(q->handle, 1, &k, &e, &st), -EINVAL);

	// Receives: none, in any state.
	struct ibv_qp_attr ma = {};
	ma.qp_state = IBV_QPS_INIT;
	ASSERT_EQ(ibv_modify_qp(q, &ma, IBV_QP_STATE), 0);
	struct ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(post_recv_one(q, &bad), EINVAL);
	EXPECT_TRUE(bad_is_first_);
}

TEST_F(Xrc, InitiatorAttributeErrorsNeverReachTheKernel)
{
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	struct ibv_srq *srq = ibv_create_srq(pd_, &sa);
	ASSERT_TRUE(srq) << strerror(errno);
	srqs_.push_back(srq);
	struct ibv_qp_init_attr_ex a = {};
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd_;
	a.send_cq = cq_;
	a.srq = srq;	// an initiator has no receive side
	a.cap.max_send_wr = 4;
	mark();
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	a.srq = nullptr;
	a.send_cq = nullptr;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	a.send_cq = cq_;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;	// no PD
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	EXPECT_FALSE(contains(log(), "CREATE_QP")) << log();
}

// ---- the target ------------------------------------------------------------------------------

TEST_F(Xrc, TargetHasNoRingsNoUdataAndRefusesPosts)
{
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	const int maps = live_maps();
	mark();
	struct ibv_qp *q = target(x);
	ASSERT_TRUE(q) << strerror(errno);
	std::string l = log();
	// ib_core makes it without udata: the provider sends and expects none.
	EXPECT_TRUE(contains(l, "CREATE_QP in=")) << l;
	EXPECT_TRUE(contains(l, "udata_in=0 udata_out=0 type=10")) << l;
	EXPECT_EQ(last_value(l, "qpn"), static_cast<long>(q->qp_num)) << l;
	EXPECT_FALSE(contains(l, "MMAP")) << l;
	EXPECT_EQ(live_maps(), maps);
	EXPECT_EQ(q->qp_type, IBV_QPT_XRC_RECV);
	EXPECT_EQ(q->context, ctx_);
	EXPECT_EQ(q->qp_context, this);
	EXPECT_FALSE(ibv_qp_to_qp_ex(q));
	void *k;
	uint32_t e, st;
	EXPECT_EQ(fake.qp_ring(q->handle, 0, &k, &e, &st), -EINVAL);
	EXPECT_EQ(fake.qp_ring(q->handle, 1, &k, &e, &st), -EINVAL);

	// modify and query go to the kernel as for any QP.
	struct ibv_qp_attr ma = {};
	for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR}) {
		ma.qp_state = s;
		ASSERT_EQ(ibv_modify_qp(q, &ma, IBV_QP_STATE), 0) << s;
	}
	struct ibv_qp_attr qa = {};
	struct ibv_qp_init_attr qi = {};
	mark();
	ASSERT_EQ(ibv_query_qp(q, &qa, IBV_QP_STATE, &qi), 0);
	EXPECT_EQ(qa.qp_state, IBV_QPS_RTR);
	EXPECT_TRUE(contains(log(), "QUERY_QP")) << log();

	// No queue to post to, in any state; nothing reaches the kernel.
	mark();
	struct ibv_send_wr *sbad = nullptr;
	EXPECT_EQ(post_send_one(q, &sbad), EINVAL);
	EXPECT_TRUE(bad_is_first_);
	struct ibv_recv_wr *rbad = nullptr;
	EXPECT_EQ(post_recv_one(q, &rbad), EINVAL);
	EXPECT_TRUE(bad_is_first_);
	ma.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(ibv_modify_qp(q, &ma, IBV_QP_STATE), 0);
	EXPECT_EQ(post_send_one(q, &sbad), EINVAL);
	EXPECT_EQ(post_recv_one(q, &rbad), EINVAL);
	EXPECT_FALSE(contains(log(), "POST")) << log();

	// Its domain is busy until it is gone.
	EXPECT_EQ(ibv_close_xrcd(x), EBUSY);
	mark();
	EXPECT_EQ(ibv_destroy_qp(q), 0);
	forget(qps_, q);
	EXPECT_TRUE(contains(log(), "DESTROY_QP")) << log();
}

TEST_F(Xrc, TargetAttributeErrorsNeverReachTheKernel)
{
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	struct ibv_qp_init_attr_ex a = {};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;	// a PD is not a domain
	a.pd = pd_;
	mark();
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;	// the bit without a domain
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EINVAL);
	a.xrcd = x;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;	// it has no SQ
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	EXPECT_FALSE(ibv_create_qp_ex(ctx_, &a));
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_FALSE(contains(log(), "CREATE_QP")) << log();
	// A PD beside the domain is fine (not used).
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD;
	a.create_flags = 0;
	struct ibv_qp *q = ibv_create_qp_ex(ctx_, &a);
	ASSERT_TRUE(q) << strerror(errno);
	qps_.push_back(q);
}

// ---- ibv_open_qp -------------------------------------------------------------------------------

TEST_F(Xrc, OpenQpByNumberInTheSameContext)
{
	struct ibv_xrcd *x = open_xrcd();
	ASSERT_TRUE(x) << strerror(errno);
	struct ibv_qp *t = target(x);
	ASSERT_TRUE(t) << strerror(errno);

	struct ibv_qp_open_attr oa = {};
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT;
	oa.qp_num = t->qp_num;
	oa.xrcd = x;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.qp_context = &oa;
	const int maps = live_maps();
	mark();
	struct ibv_qp *o = ibv_open_qp(ctx_, &oa);
	ASSERT_TRUE(o) << strerror(errno);
	qps_.push_back(o);
	const std::string l = log();
	EXPECT_TRUE(contains(l, "OPEN_QP in=")) << l;
	EXPECT_TRUE(contains(l, "udata_in=0 udata_out=0 xrcd=")) << l;
	EXPECT_TRUE(contains(l, " qpn=" + std::to_string(t->qp_num) + " type=10")) << l;
	EXPECT_EQ(last_value(l, "handle"), static_cast<long>(o->handle)) << l;
	EXPECT_NE(o->handle, t->handle);
	EXPECT_EQ(o->qp_num, t->qp_num);
	EXPECT_EQ(o->qp_type, IBV_QPT_XRC_RECV);
	EXPECT_EQ(o->context, ctx_);
	EXPECT_EQ(o->qp_context, &oa);
	EXPECT_EQ(live_maps(), maps);

	struct ibv_qp_attr ma = {};
	ma.qp_state = IBV_QPS_INIT;
	EXPECT_EQ(ibv_modify_qp(o, &ma, IBV_QP_STATE), 0);
	struct ibv_qp_attr qa = {};
	struct ibv_qp_init_attr qi = {};
	ASSERT_EQ(ibv_query_qp(o, &qa, IBV_QP_STATE, &qi), 0);
	EXPECT_EQ(qa.qp_state, IBV_QPS_INIT);
	struct ibv_send_wr *sbad = nullptr;
	EXPECT_EQ(post_send_one(o, &sbad), EINVAL);
	struct ibv_recv_wr *rbad = nullptr;
	EXPECT_EQ(post_recv_one(o, &rbad), EINVAL);

	mark();
	EXPECT_EQ(ibv_destroy_qp(o), 0);
	forget(qps_, o);
	EXPECT_TRUE(contains(log(), "DESTROY_QP in=")) << log();

	// A number that is no target of the domain: the kernel's EINVAL.
	oa.qp_num = t->qp_num + 1000;
	errno = 0;
	EXPECT_FALSE(ibv_open_qp(ctx_, &oa));
	EXPECT_EQ(errno, EINVAL);
	// No number named: libibverbs refuses before any command.
	oa.qp_num = t->qp_num;
	oa.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	mark();
	errno = 0;
	EXPECT_FALSE(ibv_open_qp(ctx_, &oa));
	EXPECT_EQ(errno, EINVAL);
	EXPECT_FALSE(contains(log(), "OPEN_QP")) << log();
}

TEST_F(Xrc, OpenQpFromAnotherContextSharingTheDomain)
{
	char path[] = "/tmp/sroce-xrcd-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	unlink(path);
	struct ibv_xrcd *x = open_xrcd(fd, O_CREAT);
	ASSERT_TRUE(x) << strerror(errno);
	struct ibv_qp *t = target(x);
	ASSERT_TRUE(t) << strerror(errno);

	// Another process would open the device and the file itself.
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	ASSERT_TRUE(list);
	struct ibv_context *ctx2 = nullptr;
	{
		scoped_env env("FAKE_SROCE_CTX_FLAGS",
			       std::to_string(SROCE_CTX_F_XRC).c_str());
		for (int i = 0; i < n; i++)
			if (!strcmp(ibv_get_device_name(list[i]), "sroce0"))
				ctx2 = ibv_open_device(list[i]);
	}
	ibv_free_device_list(list);
	ASSERT_TRUE(ctx2) << strerror(errno);
	struct ibv_xrcd *x2 = open_xrcd(fd, 0, ctx2);
	ASSERT_TRUE(x2) << strerror(errno);
	close(fd);

	struct ibv_qp_open_attr oa = {};
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = t->qp_num;
	oa.xrcd = x2;
	oa.qp_type = IBV_QPT_XRC_RECV;
	struct ibv_qp *o = ibv_open_qp(ctx2, &oa);
	ASSERT_TRUE(o) << strerror(errno);
	EXPECT_EQ(o->context, ctx2);
	EXPECT_EQ(o->qp_num, t->qp_num);
	struct ibv_qp_attr qa = {};
	struct ibv_qp_init_attr qi = {};
	EXPECT_EQ(ibv_query_qp(o, &qa, IBV_QP_STATE, &qi), 0);
	EXPECT_EQ(ibv_destroy_qp(o), 0);
	// The first context's handle keeps the domain; this one lets go.
	EXPECT_EQ(ibv_close_xrcd(x2), 0);
	EXPECT_EQ(ibv_close_device(ctx2), 0);
}

} // namespace
