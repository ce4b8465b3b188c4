// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// The extended send API (ibv_wr_post(3)) through libibverbs on the fake
// kernel: ibv_create_qp_ex's send_ops_flags per QP type, the WQE every
// ibv_wr_* builder and setter writes into the SQ ring (compared byte for
// byte with the uapi layout), one publish of prod per ibv_wr_complete and
// nothing before it, ibv_wr_abort, a batch larger than the free slots,
// the doorbell only on NEED_KICK / ERROR, and the errno ibv_wr_complete
// returns for each invalid WR; a QP before RTS refuses every batch
// (EINVAL, nothing published), one in ERR takes them.
#include <endian.h>

#include <set>
#include <vector>

#include "inproc.hpp"

using namespace inproc;

namespace {

// What the brief of the API (ibv_wr_post(3)'s table, restricted to what
// RoCE carries) lets each QP type do - written out here, not taken from
// the provider, so a wrong table there fails.
constexpr uint64_t kRcOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
			    IBV_QP_EX_WITH_BIND_MW;
constexpr uint64_t kUcOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
constexpr uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

std::string hexdump(const void *p, size_t n)
{
	std::string s;
	const auto *b = static_cast<const unsigned char *>(p);
	char buf[4];
	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%02x", b[i]);
		s += buf;
		s += (i % 16 == 15) ? '\n' : ' ';
	}
	return s;
}

// A WQE header as the uapi defines it: everything zero but what is set.
struct sroce_send_wqe wqe_hdr(uint64_t wr_id, uint8_t opcode, uint16_t flags)
{
	struct sroce_send_wqe w;
	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = opcode;
	w.flags = flags;
	return w;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed)
{
	std::vector<unsigned char> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = static_cast<unsigned char>(seed * 31 + i * 7 + 1);
	return v;
}

class QpEx : public Verbs {
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
		if (ah_) {
			EXPECT_EQ(ibv_destroy_ah(ah_), 0);
		}
		if (cq_) {
			EXPECT_EQ(ibv_destroy_cq(cq_), 0);
		}
		Verbs::TearDown();
	}

	struct ibv_qp_init_attr_ex attr(ibv_qp_type type, uint64_t ops, uint32_t wr = 16,
					uint32_t sge = 4, uint32_t inl = 64)
	{
		struct ibv_qp_init_attr_ex a = {};
		a.send_cq = cq_;
		a.recv_cq = cq_;
		a.qp_type = type;
		a.cap.max_send_wr = wr;
		a.cap.max_recv_wr = wr;
		a.cap.max_send_sge = sge;
		a.cap.max_recv_sge = sge;
		a.cap.max_inline_data = inl;
		a.pd = pd_;
		a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
		return a;
	}

	// An ibv_qp_ex of this type with these send_ops_flags, moved to RTS
	// (the fake takes the state alone); sq_ is its SQ as the kernel maps
	// it, prod0_ its producer index now.
	struct ibv_qp_ex *create(ibv_qp_type type, uint64_t ops, uint32_t wr = 16,
				 uint32_t sge = 4, uint32_t inl = 64)
	{
		if (!create_in_reset(type, ops, wr, sge, inl))
			return nullptr;
		const ibv_qp_state walk[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
		for (ibv_qp_state s : walk)
			EXPECT_EQ(to_state(s), 0) << s;
		return qpx_;
	}

	struct ibv_qp_ex *create_in_reset(ibv_qp_type type, uint64_t ops, uint32_t wr = 16,
					  uint32_t sge = 4, uint32_t inl = 64)
	{
		struct ibv_qp_init_attr_ex a = attr(type, ops, wr, sge, inl);
		qp_ = ibv_create_qp_ex(ctx_, &a);
		if (!qp_)
			return nullptr;
		cap_ = a.cap;
		qpx_ = ibv_qp_to_qp_ex(qp_);
		void *k = nullptr;
		uint32_t entries = 0, stride = 0;
		EXPECT_EQ(fake.qp_ring(qp_->handle, 0, &k, &entries, &stride), 0);
		sq_ = make_kring(k, entries, stride);
		prod0_ = sq_.prod();
		return qpx_;
	}

	int to_state(ibv_qp_state state)
	{
		struct ibv_qp_attr a = {};
		a.qp_state = state;
		return ibv_modify_qp(qp_, &a, IBV_QP_STATE);
	}

	struct ibv_ah *create_ah()
	{
		struct ibv_ah_attr a = {};
		a.is_global = 1;
		a.port_num = 1;
		a.grh.hop_limit = 64;
		a.grh.dgid.raw[15] = 2;
		ah_ = ibv_create_ah(pd_, &a);
		return ah_;
	}

	unsigned send_db()
	{
		unsigned s = 0, r = 0;
		EXPECT_EQ(fake.qp_doorbells(qp_->handle, &s, &r), 0);
		return s;
	}

	// The header, SGEs (or inline bytes) of SQ slot `idx`, byte for byte.
	void expect_wqe(uint32_t idx, const struct sroce_send_wqe &want,
			const std::vector<struct ibv_sge> &sges = {},
			const std::vector<unsigned char> &inl = {})
	{
		const unsigned char *slot = sq_.slot(idx);
		EXPECT_EQ(memcmp(slot, &want, sizeof(want)), 0)
			<< "slot " << idx << " header\nwant:\n"
			<< hexdump(&want, sizeof(want)) << "got:\n"
			<< hexdump(slot, sizeof(want));
		for (size_t i = 0; i < sges.size(); i++) {
			const struct sroce_sge *g = sq_.sge(idx, SROCE_SEND_WQE_HDR,
							    static_cast<unsigned>(i));
			EXPECT_EQ(g->addr, sges[i].addr) << idx << "/" << i;
			EXPECT_EQ(g->length, sges[i].length) << idx << "/" << i;
			EXPECT_EQ(g->lkey, sges[i].lkey) << idx << "/" << i;
		}
		if (!inl.empty()) {
			EXPECT_EQ(memcmp(slot + SROCE_SEND_WQE_HDR, inl.data(), inl.size()), 0)
				<< "slot " << idx << " inline\n"
				<< hexdump(slot + SROCE_SEND_WQE_HDR, inl.size());
		}
	}

	// n SENDs of one SGE each, wr_id first_id.. (inside a batch).
	void sends(unsigned n, uint64_t first_id)
	{
		for (unsigned i = 0; i < n; i++) {
			qpx_->wr_id = first_id + i;
			qpx_->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(qpx_);
			ibv_wr_set_sge(qpx_, 0x42, 0x100000 + 0x100 * i, 0x80);
		}
	}

	int post_send_one(uint64_t wr_id)
	{
		struct ibv_sge s = {0x5000, 16, 0x42};
		struct ibv_send_wr w = {};
		w.wr_id = wr_id;
		w.opcode = IBV_WR_SEND;
		w.sg_list = &s;
		w.num_sge = 1;
		struct ibv_send_wr *bad = nullptr;
		return ibv_post_send(qp_, &w, &bad);
	}

	// One batch that fails: ibv_wr_complete's errno; checks that nothing
	// was published or rung and that the SQ lock was given back.
	int failed_batch(const std::function<void()> &fill)
	{
		const uint32_t prod = sq_.prod();
		const unsigned db = send_db();
		ibv_wr_start(qpx_);
		fill();
		int ret = ibv_wr_complete(qpx_);
		EXPECT_EQ(sq_.prod(), prod);
		EXPECT_EQ(send_db(), db);
		struct ibv_qp_ex *x = qpx_;
		EXPECT_TRUE(finishes_within(
			[x] {
				ibv_wr_start(x);
				ibv_wr_abort(x);
			},
			2000))
			<< "SQ lock still held after a failed ibv_wr_complete";
		return ret;
	}

	struct ibv_cq *cq_ = nullptr;
	struct ibv_qp *qp_ = nullptr;
	struct ibv_qp_ex *qpx_ = nullptr;
	struct ibv_ah *ah_ = nullptr;
	struct ibv_qp_cap cap_ = {};
	kring sq_;
	uint32_t prod0_ = 0;
};

// ---- creation -----------------------------------------------------------------------------

TEST_F(QpEx, SendOpsFlagsEachBitPerQpType)
{
	struct {
		ibv_qp_type type;
		uint64_t allowed;
	} types[] = {{IBV_QPT_RC, kRcOps}, {IBV_QPT_UC, kUcOps}, {IBV_QPT_UD, kUdOps}};
	for (const auto &t : types) {
		for (unsigned bit = 0; bit < 64; bit++) {
			const uint64_t ops = uint64_t{1} << bit;
			struct ibv_qp_init_attr_ex a = attr(t.type, ops);
			mark();
			errno = 0;
			struct ibv_qp *qp = ibv_create_qp_ex(ctx_, &a);
			if (t.allowed & ops) {
				ASSERT_TRUE(qp) << "type " << t.type << " bit " << bit << ": "
						<< strerror(errno);
				struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
				ASSERT_TRUE(x) << "type " << t.type << " bit " << bit;
				EXPECT_EQ(&x->qp_base, qp);
				EXPECT_EQ(ibv_destroy_qp(qp), 0);
			} else {
				EXPECT_FALSE(qp) << "type " << t.type << " bit " << bit;
				EXPECT_EQ(errno, EOPNOTSUPP) << "type " << t.type << " bit " << bit;
				EXPECT_FALSE(contains(log(), "CREATE_QP")) << log();
				if (qp)
					ibv_destroy_qp(qp);
			}
		}
	}
}

TEST_F(QpEx, SendOpsFlagsCombinations)
{
	struct {
		ibv_qp_type type;
		uint64_t ops;
		bool ok;
	} cases[] = {
		{IBV_QPT_RC, kRcOps, true},
		{IBV_QPT_UC, kUcOps, true},
		{IBV_QPT_UD, kUdOps, true},
		{IBV_QPT_RC, 0, true},	// a qp_ex that enables nothing
		{IBV_QPT_RC, kRcOps | IBV_QP_EX_WITH_TSO, false},
		{IBV_QPT_RC, kRcOps | IBV_QP_EX_WITH_ATOMIC_WRITE, false},
		{IBV_QPT_UC, kUcOps | IBV_QP_EX_WITH_RDMA_READ, false},
		{IBV_QPT_UC, kUcOps | IBV_QP_EX_WITH_SEND_WITH_INV, false},
		{IBV_QPT_UC, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, false},
		{IBV_QPT_UD, kUdOps | IBV_QP_EX_WITH_RDMA_WRITE, false},
		{IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV, false},
		{IBV_QPT_UD, IBV_QP_EX_WITH_SEND | (uint64_t{1} << 40), false},
	};
	for (const auto &c : cases) {
		struct ibv_qp_init_attr_ex a = attr(c.type, c.ops);
		errno = 0;
		struct ibv_qp *qp = ibv_create_qp_ex(ctx_, &a);
		EXPECT_EQ(qp != nullptr, c.ok) << c.type << " 0x" << std::hex << c.ops;
		if (qp) {
			EXPECT_TRUE(ibv_qp_to_qp_ex(qp));
			EXPECT_EQ(ibv_destroy_qp(qp), 0);
		} else {
			EXPECT_EQ(errno, EOPNOTSUPP) << c.type << " 0x" << std::hex << c.ops;
		}
	}
}

TEST_F(QpEx, OnlySendOpsFlagsMakeAQpEx)
{
	// ibv_create_qp, or ibv_create_qp_ex without the mask bit: a plain
	// QP that ibv_qp_to_qp_ex() refuses.
	struct ibv_qp_init_attr a = {};
	a.send_cq = cq_;
	a.recv_cq = cq_;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	qp_ = ibv_create_qp(pd_, &a);
	ASSERT_TRUE(qp_) << strerror(errno);
	EXPECT_FALSE(ibv_qp_to_qp_ex(qp_));
	EXPECT_EQ(ibv_destroy_qp(qp_), 0);
	qp_ = nullptr;

	ASSERT_TRUE(create(IBV_QPT_UC, kUcOps));
	EXPECT_EQ(reinterpret_cast<void *>(qpx_), reinterpret_cast<void *>(qp_));
	EXPECT_EQ(qpx_->comp_mask, 0u);
	// Every callback is there, the unsupported ones too (they fail the
	// batch rather than jump to NULL).
	EXPECT_TRUE(qpx_->wr_start && qpx_->wr_complete && qpx_->wr_abort);
	EXPECT_TRUE(qpx_->wr_send && qpx_->wr_send_imm && qpx_->wr_send_inv &&
		    qpx_->wr_rdma_write && qpx_->wr_rdma_write_imm && qpx_->wr_rdma_read &&
		    qpx_->wr_atomic_cmp_swp && qpx_->wr_atomic_fetch_add &&
		    qpx_->wr_local_inv && qpx_->wr_bind_mw && qpx_->wr_send_tso &&
		    qpx_->wr_atomic_write);
	EXPECT_TRUE(qpx_->wr_set_sge && qpx_->wr_set_sge_list && qpx_->wr_set_inline_data &&
		    qpx_->wr_set_inline_data_list && qpx_->wr_set_ud_addr &&
		    qpx_->wr_set_xrc_srqn);
}

// ---- the WQE of each builder and setter ----------------------------------------------------

TEST_F(QpEx, EveryRcBuilderWritesItsWqe)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps)) << strerror(errno);
	ASSERT_GE(sq_.entries, 16u);
	ASSERT_GE(cap_.max_send_sge, 3u);
	ASSERT_GE(cap_.max_inline_data, 40u);

	const std::vector<struct ibv_sge> s1 = {{0x1000, 100, 0x11}};
	const std::vector<struct ibv_sge> s2 = {{0x2000, 200, 0x21}, {0x2400, 0, 0x22}};
	const std::vector<struct ibv_sge> s3 = {
		{0x3000, 1, 0x31}, {0x3100, 2, 0x32}, {0x3200, 3, 0x33}};
	const std::vector<struct ibv_sge> s5 = {{0x8000, 4096, 0x77}};
	const std::vector<struct ibv_sge> s6 = {{0x9000, 8, 0x88}};
	const std::vector<struct ibv_sge> s7 = {{0xa000, 8, 0x99}};
	const auto inl2 = pattern(40, 2);
	const auto inl4a = pattern(10, 4), inl4b = pattern(20, 5);
	std::vector<unsigned char> inl4 = inl4a;
	inl4.insert(inl4.end(), inl4b.begin(), inl4b.end());
	struct ibv_data_buf bufs4[2] = {{const_cast<unsigned char *>(inl4a.data()), 10},
					{const_cast<unsigned char *>(inl4b.data()), 20}};
	struct ibv_mw mw = {};
	mw.handle = 0x31;
	mw.rkey = 0x3100;
	struct ibv_mr mr = {};
	mr.lkey = 0x2200;
	struct ibv_mw_bind_info bi = {};
	bi.mr = &mr;
	bi.addr = 0x7000;
	bi.length = 0x3000;
	bi.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;

	ibv_wr_start(qpx_);
	qpx_->wr_id = 0x100;
	qpx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx_);
	ibv_wr_set_sge(qpx_, s1[0].lkey, s1[0].addr, s1[0].length);

	qpx_->wr_id = 0x101;
	qpx_->wr_flags = 0;
	ibv_wr_send_imm(qpx_, htobe32(0xa1b2c3d4));
	ibv_wr_set_sge_list(qpx_, s2.size(), s2.data());

	qpx_->wr_id = 0x102;
	qpx_->wr_flags = IBV_SEND_SOLICITED;
	ibv_wr_send_inv(qpx_, 0x3333);
	ibv_wr_set_inline_data(qpx_, const_cast<unsigned char *>(inl2.data()), inl2.size());

	qpx_->wr_id = 0x103;
	qpx_->wr_flags = IBV_SEND_FENCE | IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx_, 0x4444, 0x123456789abcull);
	ibv_wr_set_sge_list(qpx_, s3.size(), s3.data());

	qpx_->wr_id = 0x104;
	qpx_->wr_flags = 0;
	ibv_wr_rdma_write_imm(qpx_, 0x5555, 0xfeed0000ull, htobe32(0x01020304));
	ibv_wr_set_inline_data_list(qpx_, 2, bufs4);

	qpx_->wr_id = 0x105;
	ibv_wr_rdma_read(qpx_, 0x6666, 0xbeef000ull);
	ibv_wr_set_sge(qpx_, s5[0].lkey, s5[0].addr, s5[0].length);

	qpx_->wr_id = 0x106;
	ibv_wr_atomic_cmp_swp(qpx_, 0x7777, 0x10008, 0x0102030405060708ull,
			      0x1112131415161718ull);
	ibv_wr_set_sge(qpx_, s6[0].lkey, s6[0].addr, s6[0].length);

	qpx_->wr_id = 0x107;
	ibv_wr_atomic_fetch_add(qpx_, 0x8888, 0x20010, 5);
	ibv_wr_set_sge_list(qpx_, 1, s7.data());

	qpx_->wr_id = 0x108;
	qpx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qpx_, 0x9999);

	qpx_->wr_id = 0x109;
	qpx_->wr_flags = 0;
	ibv_wr_bind_mw(qpx_, &mw, 0x3101, &bi);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 10);

	struct sroce_send_wqe w = wqe_hdr(0x100, SROCE_WR_SEND, SROCE_WQE_F_SIGNALED);
	w.num_sge = 1;
	expect_wqe(prod0_ + 0, w, s1);

	w = wqe_hdr(0x101, SROCE_WR_SEND_WITH_IMM, 0);
	w.num_sge = 2;
	w.ex.imm_data = htobe32(0xa1b2c3d4);
	expect_wqe(prod0_ + 1, w, s2);

	w = wqe_hdr(0x102, SROCE_WR_SEND_WITH_INV, SROCE_WQE_F_SOLICITED | SROCE_WQE_F_INLINE);
	w.inline_len = 40;
	w.ex.invalidate_rkey = 0x3333;
	expect_wqe(prod0_ + 2, w, {}, inl2);

	w = wqe_hdr(0x103, SROCE_WR_RDMA_WRITE, SROCE_WQE_F_FENCE | SROCE_WQE_F_SIGNALED);
	w.num_sge = 3;
	w.wr.rdma.remote_addr = 0x123456789abcull;
	w.wr.rdma.rkey = 0x4444;
	expect_wqe(prod0_ + 3, w, s3);

	w = wqe_hdr(0x104, SROCE_WR_RDMA_WRITE_WITH_IMM, SROCE_WQE_F_INLINE);
	w.inline_len = 30;
	w.ex.imm_data = htobe32(0x01020304);
	w.wr.rdma.remote_addr = 0xfeed0000ull;
	w.wr.rdma.rkey = 0x5555;
	expect_wqe(prod0_ + 4, w, {}, inl4);

	w = wqe_hdr(0x105, SROCE_WR_RDMA_READ, 0);
	w.num_sge = 1;
	w.wr.rdma.remote_addr = 0xbeef000ull;
	w.wr.rdma.rkey = 0x6666;
	expect_wqe(prod0_ + 5, w, s5);

	w = wqe_hdr(0x106, SROCE_WR_ATOMIC_CMP_AND_SWP, 0);
	w.num_sge = 1;
	w.wr.atomic.remote_addr = 0x10008;
	w.wr.atomic.compare_add = 0x0102030405060708ull;
	w.wr.atomic.swap = 0x1112131415161718ull;
	w.wr.atomic.rkey = 0x7777;
	expect_wqe(prod0_ + 6, w, s6);

	w = wqe_hdr(0x107, SROCE_WR_ATOMIC_FETCH_AND_ADD, 0);
	w.num_sge = 1;
	w.wr.atomic.remote_addr = 0x20010;
	w.wr.atomic.compare_add = 5;
	w.wr.atomic.rkey = 0x8888;
	expect_wqe(prod0_ + 7, w, s7);

	w = wqe_hdr(0x108, SROCE_WR_LOCAL_INV, SROCE_WQE_F_SIGNALED);
	w.ex.invalidate_rkey = 0x9999;
	expect_wqe(prod0_ + 8, w);

	w = wqe_hdr(0x109, SROCE_WR_BIND_MW, 0);
	w.wr.bind_mw.addr = 0x7000;
	w.wr.bind_mw.length = 0x3000;
	w.wr.bind_mw.mw_handle = 0x31;
	w.wr.bind_mw.rkey = 0x3101;	// the new rkey, not mw->rkey
	w.wr.bind_mw.mr_lkey = 0x2200;
	w.wr.bind_mw.access = IBV_ACCESS_REMOTE_WRITE;
	expect_wqe(prod0_ + 9, w);
}

// The same WR through ibv_post_send and through ibv_wr_*: the same bytes.
TEST_F(QpEx, SameWqeAsPostSend)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	struct ibv_sge s[2] = {{0x1000, 10, 1}, {0x2000, 20, 2}};
	struct ibv_send_wr w = {};
	w.wr_id = 77;
	w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	w.sg_list = s;
	w.num_sge = 2;
	w.imm_data = htobe32(0xcafe);
	w.wr.rdma.remote_addr = 0xabcdef;
	w.wr.rdma.rkey = 0x99;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(qp_, &w, &bad), 0);

	ibv_wr_start(qpx_);
	qpx_->wr_id = 77;
	qpx_->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_write_imm(qpx_, 0x99, 0xabcdef, htobe32(0xcafe));
	ibv_wr_set_sge_list(qpx_, 2, s);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 2);
	const size_t n = SROCE_SEND_WQE_HDR + 2 * sizeof(struct sroce_sge);
	EXPECT_EQ(memcmp(sq_.slot(prod0_), sq_.slot(prod0_ + 1), n), 0)
		<< hexdump(sq_.slot(prod0_), n) << "\n"
		<< hexdump(sq_.slot(prod0_ + 1), n);
}

TEST_F(QpEx, UdSendsCarryTheAddress)
{
	ASSERT_TRUE(create(IBV_QPT_UD, kUdOps));
	ASSERT_TRUE(create_ah()) << strerror(errno);
	EXPECT_TRUE(contains(log(), "CREATE_AH")) << log();
	const uint32_t ah_num = 0x1000 + ah_->handle;	// the fake's numbering
	const std::vector<struct ibv_sge> s = {{0x6000, 60, 0x66}};
	const auto inl = pattern(16, 7);

	ibv_wr_start(qpx_);
	qpx_->wr_id = 1;
	qpx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx_);
	ibv_wr_set_ud_addr(qpx_, ah_, 0x123456, 0x80010203);
	ibv_wr_set_sge(qpx_, s[0].lkey, s[0].addr, s[0].length);
	// Setters in the other order.
	qpx_->wr_id = 2;
	qpx_->wr_flags = IBV_SEND_SOLICITED;
	ibv_wr_send_imm(qpx_, htobe32(0x55aa));
	ibv_wr_set_inline_data(qpx_, const_cast<unsigned char *>(inl.data()), inl.size());
	ibv_wr_set_ud_addr(qpx_, ah_, 0x654321, 0x11111111);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 2);

	struct sroce_send_wqe w = wqe_hdr(1, SROCE_WR_SEND, SROCE_WQE_F_SIGNALED);
	w.num_sge = 1;
	w.wr.ud.ah_num = ah_num;
	w.wr.ud.remote_qpn = 0x123456;
	w.wr.ud.remote_qkey = 0x80010203;
	expect_wqe(prod0_, w, s);
	w = wqe_hdr(2, SROCE_WR_SEND_WITH_IMM, SROCE_WQE_F_SOLICITED | SROCE_WQE_F_INLINE);
	w.inline_len = 16;
	w.ex.imm_data = htobe32(0x55aa);
	w.wr.ud.ah_num = ah_num;
	w.wr.ud.remote_qpn = 0x654321;
	w.wr.ud.remote_qkey = 0x11111111;
	expect_wqe(prod0_ + 1, w, {}, inl);
}

// IBV_SEND_INLINE in wr_flags: what ibv_post_send does with it - the
// bytes the SGEs point at are copied, the lkeys are not used.
TEST_F(QpEx, WrFlagsInlineCopiesTheSgeBytes)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	const auto a = pattern(24, 8), b = pattern(8, 9);
	struct ibv_sge s[2] = {{reinterpret_cast<uintptr_t>(a.data()), 24, 0xdead},
			       {reinterpret_cast<uintptr_t>(b.data()), 8, 0xbeef}};
	std::vector<unsigned char> both = a;
	both.insert(both.end(), b.begin(), b.end());

	ibv_wr_start(qpx_);
	qpx_->wr_id = 5;
	qpx_->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ibv_wr_send(qpx_);
	ibv_wr_set_sge_list(qpx_, 2, s);
	qpx_->wr_id = 6;
	ibv_wr_rdma_write(qpx_, 0x10, 0x20);
	ibv_wr_set_sge(qpx_, 0xdead, reinterpret_cast<uintptr_t>(b.data()), 8);
	// Without INLINE the same list is an ordinary gather list.
	qpx_->wr_id = 7;
	qpx_->wr_flags = 0;
	ibv_wr_send(qpx_);
	ibv_wr_set_sge_list(qpx_, 2, s);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);

	struct sroce_send_wqe w = wqe_hdr(5, SROCE_WR_SEND,
					  SROCE_WQE_F_INLINE | SROCE_WQE_F_SIGNALED);
	w.inline_len = 32;
	expect_wqe(prod0_, w, {}, both);
	w = wqe_hdr(6, SROCE_WR_RDMA_WRITE, SROCE_WQE_F_INLINE | SROCE_WQE_F_SIGNALED);
	w.inline_len = 8;
	w.wr.rdma.remote_addr = 0x20;
	w.wr.rdma.rkey = 0x10;
	expect_wqe(prod0_ + 1, w, {}, b);
	w = wqe_hdr(7, SROCE_WR_SEND, 0);
	w.num_sge = 2;
	expect_wqe(prod0_ + 2, w, {s[0], s[1]});
}

// A second data setter replaces the first one's data.
TEST_F(QpEx, LastDataSetterWins)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	const auto d = pattern(12, 3);
	const std::vector<struct ibv_sge> s = {{0x1000, 1, 1}, {0x2000, 2, 2}};
	ibv_wr_start(qpx_);
	qpx_->wr_id = 1;
	qpx_->wr_flags = 0;
	ibv_wr_send(qpx_);
	ibv_wr_set_inline_data(qpx_, const_cast<unsigned char *>(d.data()), d.size());
	ibv_wr_set_sge_list(qpx_, 2, s.data());
	qpx_->wr_id = 2;
	ibv_wr_send(qpx_);
	ibv_wr_set_sge_list(qpx_, 2, s.data());
	ibv_wr_set_inline_data(qpx_, const_cast<unsigned char *>(d.data()), d.size());
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	struct sroce_send_wqe w = wqe_hdr(1, SROCE_WR_SEND, 0);
	w.num_sge = 2;
	expect_wqe(prod0_, w, s);
	w = wqe_hdr(2, SROCE_WR_SEND, SROCE_WQE_F_INLINE);
	w.inline_len = 12;
	expect_wqe(prod0_ + 1, w, {}, d);
}

// ---- publishing -----------------------------------------------------------------------------

TEST_F(QpEx, BatchPublishesOnceAtComplete)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	struct sroce_ring_hdr before;
	memcpy(&before, sq_.hdr, sizeof(before));
	const unsigned db0 = send_db();
	mark();

	constexpr unsigned kN = 5;
	ibv_wr_start(qpx_);
	for (unsigned i = 0; i < kN; i++) {
		sends(1, 0x500 + i);
		// Nothing the kernel reads has changed: prod (and the rest of
		// the header) are as before ibv_wr_start.
		EXPECT_EQ(memcmp(sq_.hdr, &before, sizeof(before)), 0) << i;
	}
	EXPECT_EQ(sq_.prod(), prod0_);
	EXPECT_EQ(send_db(), db0);
	EXPECT_FALSE(contains(log(), "POST_SEND")) << log();

	// Every value prod takes while ibv_wr_complete runs.
	std::atomic<bool> stop{false}, running{false};
	std::set<uint32_t> seen;
	std::thread watcher([&] {
		// Read prod once before saying so: the watcher may be
		// descheduled for all of ibv_wr_complete on a busy machine,
		// and it must still have seen the value before the batch.
		seen.insert(sq_.prod());
		running = true;
		while (!stop.load()) {
			seen.insert(sq_.prod());
		}
		seen.insert(sq_.prod());
	});
	while (!running.load())
		std::this_thread::yield();
	EXPECT_EQ(ibv_wr_complete(qpx_), 0);
	stop = true;
	watcher.join();
	EXPECT_EQ(seen, (std::set<uint32_t>{prod0_, prod0_ + kN}));
	EXPECT_EQ(sq_.prod(), prod0_ + kN);
	// The new QP's ring asked for a kick: exactly one doorbell.
	EXPECT_EQ(send_db(), db0 + 1);
	for (unsigned i = 0; i < kN; i++) {
		EXPECT_EQ(sq_.send(prod0_ + i)->wr_id, 0x500u + i);
		EXPECT_EQ(sq_.sge(prod0_ + i, SROCE_SEND_WQE_HDR, 0)->addr, 0x100000u);
	}
}

TEST_F(QpEx, EmptyBatchPublishesAndRingsNothing)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	const unsigned db0 = send_db();
	ibv_wr_start(qpx_);
	EXPECT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod0_);
	EXPECT_EQ(send_db(), db0);	// even with NEED_KICK set
}

TEST_F(QpEx, AbortDiscardsTheBatch)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps, 8));
	// Two WQEs already posted and not yet consumed by the kernel.
	ASSERT_EQ(post_send_one(1), 0);
	ASSERT_EQ(post_send_one(2), 0);
	const uint32_t prod = sq_.prod();
	ASSERT_EQ(prod, prod0_ + 2);
	std::vector<unsigned char> ring(sq_.data - reinterpret_cast<unsigned char *>(sq_.hdr) +
					size_t{sq_.entries} * sq_.stride);
	memcpy(ring.data(), sq_.hdr, ring.size());
	const size_t hdr_len = SROCE_RING_DATA_OFFSET;
	const size_t posted = 2 * size_t{sq_.stride};
	const size_t first = hdr_len + size_t{prod0_ & (sq_.entries - 1)} * sq_.stride;
	ASSERT_LE(first + posted, ring.size());
	const unsigned db = send_db();
	mark();

	ibv_wr_start(qpx_);
	sends(3, 0x700);
	ibv_wr_abort(qpx_);
	EXPECT_EQ(sq_.prod(), prod);
	// Header and the posted WQEs untouched.
	EXPECT_EQ(memcmp(sq_.hdr, ring.data(), hdr_len), 0);
	EXPECT_EQ(memcmp(reinterpret_cast<unsigned char *>(sq_.hdr) + first,
			 ring.data() + first, posted),
		  0);
	EXPECT_EQ(send_db(), db);
	EXPECT_FALSE(contains(log(), "POST_SEND")) << log();

	// The lock is free (ibv_post_send gets in) and the next batch
	// starts where the aborted one did.
	ASSERT_TRUE(finishes_within([this] { EXPECT_EQ(post_send_one(3), 0); }, 2000));
	ibv_wr_start(qpx_);
	sends(1, 0x800);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod + 2);
	EXPECT_EQ(sq_.send(prod)->wr_id, 3u);
	EXPECT_EQ(sq_.send(prod + 1)->wr_id, 0x800u);
}

TEST_F(QpEx, InterleavesWithPostSend)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	sq_.set_flags(0);
	ASSERT_EQ(post_send_one(1), 0);
	ibv_wr_start(qpx_);
	sends(2, 2);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(post_send_one(4), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 4);
	for (uint32_t i = 0; i < 4; i++)
		EXPECT_EQ(sq_.send(prod0_ + i)->wr_id, i + 1);
}

TEST_F(QpEx, MoreWrsThanFreeSlotsIsEnomemAndPublishesNothing)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps, 8));
	ASSERT_EQ(sq_.entries, 8u);
	sq_.set_flags(SROCE_RING_F_NEED_KICK);

	// An empty ring, one WR too many.
	EXPECT_EQ(failed_batch([this] { sends(9, 0x10); }), ENOMEM);
	EXPECT_EQ(sq_.prod(), prod0_);

	// Five posted: three slots left.
	for (uint64_t i = 0; i < 5; i++)
		ASSERT_EQ(post_send_one(0x20 + i), 0);
	const unsigned db = send_db();
	EXPECT_EQ(failed_batch([this] { sends(4, 0x30); }), ENOMEM);
	EXPECT_EQ(sq_.prod(), prod0_ + 5);
	ibv_wr_start(qpx_);
	sends(3, 0x40);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 8);
	EXPECT_EQ(sq_.send(prod0_ + 7)->wr_id, 0x42u);
	EXPECT_EQ(send_db(), db + 1);

	// Full: one WR is ENOMEM ...
	EXPECT_EQ(failed_batch([this] { sends(1, 0x50); }), ENOMEM);
	// ... unless the kernel completes WQEs during the batch.
	ibv_wr_start(qpx_);
	sq_.set_cons(sq_.cons() + 2);
	sends(2, 0x60);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 10);
	EXPECT_EQ(sq_.send(prod0_ + 9)->wr_id, 0x61u);
}

TEST_F(QpEx, DoorbellOnlyOnNeedKickOrError)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	struct {
		uint32_t flags;
		unsigned rings;
	} cases[] = {
		{0, 0},
		{SROCE_RING_F_NEED_KICK, 1},
		{SROCE_RING_F_ERROR, 1},
		{SROCE_RING_F_NEED_KICK | SROCE_RING_F_ERROR, 1},
		{0, 0},
	};
	uint32_t prod = prod0_;
	for (const auto &c : cases) {
		sq_.set_flags(c.flags);
		const unsigned db = send_db();
		mark();
		ibv_wr_start(qpx_);
		sends(2, prod);
		ASSERT_EQ(ibv_wr_complete(qpx_), 0);
		prod += 2;
		EXPECT_EQ(sq_.prod(), prod);
		EXPECT_EQ(send_db(), db + c.rings) << "flags " << c.flags;
		EXPECT_EQ(contains(log(), "POST_SEND"), c.rings != 0) << log();
		if (c.rings) {
			EXPECT_TRUE(contains(log(), "POST_SEND in=24 out=4 udata_in=0 udata_out=0 handle=" +
							    std::to_string(qp_->handle) +
							    " wr_count=0 sge_count=0"))
				<< log();
		}
		sq_.set_cons(prod);	// the kernel completed them
	}
	// A failed batch rings nothing, whatever the flags.
	sq_.set_flags(SROCE_RING_F_NEED_KICK | SROCE_RING_F_ERROR);
	EXPECT_EQ(failed_batch([this] {
			  sends(1, 1);
			  ibv_wr_set_ud_addr(qpx_, nullptr, 0, 0);
		  }),
		  EINVAL);
}

// ---- QP state ---------------------------------------------------------------------------------

// RESET (from creation), INIT, RTR: ibv_wr_complete is EINVAL, nothing
// published or rung (NEED_KICK is set from creation), the lock given
// back - an empty batch too, as rxe's doorbell there; ibv_post_send on
// the same QP is EINVAL as well.  RTS, SQD, SQE: published.
TEST_F(QpEx, BatchIsEinvalBeforeRtsAndPublishesNothing)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, kRcOps));
	const ibv_qp_state refused[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR};
	for (ibv_qp_state s : refused) {
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(to_state(s), 0) << s;
		}
		mark();
		EXPECT_EQ(failed_batch([this] { sends(3, 0x10); }), EINVAL) << s;
		EXPECT_EQ(failed_batch([] {}), EINVAL) << s;
		EXPECT_EQ(post_send_one(0x20), EINVAL) << s;
		EXPECT_EQ(sq_.prod(), prod0_) << s;
		EXPECT_EQ(send_db(), 0u) << s;
		EXPECT_FALSE(contains(log(), "POST_SEND")) << s << ": " << log();
	}

	uint32_t prod = prod0_;
	const ibv_qp_state allowed[] = {IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE};
	for (ibv_qp_state s : allowed) {
		ASSERT_EQ(to_state(s), 0) << s;
		ibv_wr_start(qpx_);
		sends(2, 0x100 * (s + 1));
		EXPECT_EQ(ibv_wr_complete(qpx_), 0) << s;
		EXPECT_EQ(sq_.prod(), prod + 2) << s;
		EXPECT_EQ(sq_.send(prod)->wr_id, 0x100u * (s + 1)) << s;
		prod = sq_.prod();
		sq_.set_cons(prod);	// the kernel completed them
	}
	EXPECT_EQ(send_db(), 3u);
}

// ERR takes batches - the kernel's own move there (the ring's ERROR flag,
// from RTR here) or modify_qp's - and rings so that the kernel flushes
// them; RESET refuses them again.
TEST_F(QpEx, BatchInErrIsPublishedAndRungResetRefusesAgain)
{
	ASSERT_TRUE(create_in_reset(IBV_QPT_RC, kRcOps));
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	ASSERT_EQ(to_state(IBV_QPS_RTR), 0);
	EXPECT_EQ(failed_batch([this] { sends(1, 1); }), EINVAL);

	sq_.set_flags(SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK);	// sroce_qp_flush
	ibv_wr_start(qpx_);
	sends(2, 0x20);
	EXPECT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 2);
	EXPECT_EQ(sq_.send(prod0_)->wr_id, 0x20u);
	EXPECT_EQ(send_db(), 1u);

	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	ibv_wr_start(qpx_);
	sends(1, 0x30);
	EXPECT_EQ(ibv_wr_complete(qpx_), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 3);
	EXPECT_EQ(send_db(), 2u);

	sq_.set_cons(sq_.prod());	// the flush
	ASSERT_EQ(to_state(IBV_QPS_RESET), 0);
	EXPECT_EQ(failed_batch([this] { sends(1, 0x40); }), EINVAL);
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	EXPECT_EQ(failed_batch([this] { sends(1, 0x50); }), EINVAL);
	EXPECT_EQ(sq_.prod(), prod0_ + 3);
	EXPECT_EQ(send_db(), 2u);
}

// ---- errors -------------------------------------------------------------------------------------

TEST_F(QpEx, InvalidWrsAreEinvalAtComplete)
{
	ASSERT_TRUE(create(IBV_QPT_RC,
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV,
			   16, 4, 64));
	ASSERT_EQ(cap_.max_send_sge, 4u);
	ASSERT_EQ(cap_.max_inline_data, 64u);
	struct ibv_qp_ex *x = qpx_;
	const auto big = pattern(65, 1);
	struct ibv_sge five[5] = {};
	struct ibv_data_buf bufs[2] = {{const_cast<unsigned char *>(big.data()), 40},
				       {const_cast<unsigned char *>(big.data()), 25}};
	struct ibv_sge sge8 = {0x9000, 8, 1};
	struct ibv_mw mw = {};
	struct ibv_mw_bind_info bi = {};
	struct {
		const char *what;
		std::function<void()> fill;
	} cases[] = {
		{"op not in send_ops_flags", [&] { ibv_wr_rdma_write(x, 1, 2); }},
		{"send_inv not enabled", [&] { ibv_wr_send_inv(x, 1); }},
		{"bind_mw not enabled", [&] { ibv_wr_bind_mw(x, &mw, 1, &bi); }},
		{"too many SGEs",
		 [&] {
			 ibv_wr_send(x);
			 ibv_wr_set_sge_list(x, 5, five);
		 }},
		{"inline one byte too long",
		 [&] {
			 ibv_wr_send(x);
			 ibv_wr_set_inline_data(x, const_cast<unsigned char *>(big.data()), 65);
		 }},
		{"inline list too long",
		 [&] {
			 ibv_wr_send(x);
			 ibv_wr_set_inline_data_list(x, 2, bufs);
		 }},
		{"NULL SGE list",
		 [&] {
			 ibv_wr_send(x);
			 ibv_wr_set_sge_list(x, 1, nullptr);
		 }},
		{"inline on a READ",
		 [&] {
			 ibv_wr_rdma_read(x, 1, 0x1000);
			 ibv_wr_set_inline_data(x, const_cast<unsigned char *>(big.data()), 8);
		 }},
		{"wr_flags INLINE on a READ",
		 [&] {
			 x->wr_flags = IBV_SEND_INLINE;
			 ibv_wr_rdma_read(x, 1, 0x1000);
			 ibv_wr_set_sge(x, 1, 0x2000, 8);
		 }},
		{"wr_flags IP_CSUM", [&] {
			 x->wr_flags = IBV_SEND_IP_CSUM;
			 ibv_wr_send(x);
		 }},
		{"SGE on LOCAL_INV",
		 [&] {
			 ibv_wr_local_inv(x, 5);
			 ibv_wr_set_sge(x, 1, 0x2000, 8);
		 }},
		{"misaligned atomic",
		 [&] {
			 ibv_wr_atomic_fetch_add(x, 1, 0x1004, 1);
			 ibv_wr_set_sge(x, sge8.lkey, sge8.addr, sge8.length);
		 }},
		{"atomic without a result buffer", [&] { ibv_wr_atomic_fetch_add(x, 1, 0x1008, 1); }},
		{"atomic with a 4-byte buffer",
		 [&] {
			 ibv_wr_atomic_fetch_add(x, 1, 0x1008, 1);
			 ibv_wr_set_sge(x, 1, 0x9000, 4);
		 }},
		{"UD address on RC",
		 [&] {
			 ibv_wr_send(x);
			 ibv_wr_set_ud_addr(x, nullptr, 1, 1);
		 }},
		{"setter before any builder", [&] { ibv_wr_set_sge(x, 1, 0x2000, 8); }},
		{"good WRs, then a bad one",
		 [&] {
			 sends(3, 1);
			 ibv_wr_rdma_write(x, 1, 2);
			 sends(1, 9);
		 }},
		{"first error wins over a later overflow",
		 [&] {
			 ibv_wr_rdma_write(x, 1, 2);
			 sends(40, 1);
		 }},
	};
	for (const auto &c : cases) {
		x->wr_flags = 0;
		EXPECT_EQ(failed_batch(c.fill), EINVAL) << c.what;
	}
	// After all that, a good batch goes through.
	x->wr_flags = 0;
	ibv_wr_start(x);
	sends(1, 0x99);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 1);
	EXPECT_EQ(sq_.send(prod0_)->wr_id, 0x99u);
}

TEST_F(QpEx, UdWrNeedsItsAddress)
{
	ASSERT_TRUE(create(IBV_QPT_UD, kUdOps));
	ASSERT_TRUE(create_ah()) << strerror(errno);
	struct ibv_qp_ex *x = qpx_;
	struct ibv_ah *ah = ah_;
	x->wr_flags = 0;
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_sge(x, 1, 0x2000, 8);
		  }),
		  EINVAL);
	// The last WR of the batch is checked too, and so is each one
	// before a following builder.
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_ud_addr(x, ah, 1, 1);
			  ibv_wr_send(x);
		  }),
		  EINVAL);
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_send(x);
			  ibv_wr_set_ud_addr(x, ah, 1, 1);
		  }),
		  EINVAL);
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_ud_addr(x, nullptr, 1, 1);
		  }),
		  EINVAL);
	EXPECT_EQ(failed_batch([&] { ibv_wr_rdma_write(x, 1, 2); }), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, 7, 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_.send(prod0_)->wr.ud.remote_qpn, 7u);
}

TEST_F(QpEx, OperationsWithoutAFlagAreEopnotsupp)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps));
	struct ibv_qp_ex *x = qpx_;
	char hdr[16] = {};
	uint64_t v = 0;
	x->wr_flags = 0;
	EXPECT_EQ(failed_batch([&] { ibv_wr_send_tso(x, hdr, sizeof(hdr), 1000); }),
		  EOPNOTSUPP);
	EXPECT_EQ(failed_batch([&] {
			  sends(1, 1);
			  x->wr_atomic_write(x, 1, 0x1000, &v);
		  }),
		  EOPNOTSUPP);
}

// ibv_wr_set_xrc_srqn on a QP that is no XRC initiator: an invalid WR,
// as ibv_wr_set_ud_addr on a connected QP is.
TEST_F(QpEx, XrcSrqnSetterOnOtherQpTypesIsEinval)
{
	struct {
		ibv_qp_type type;
		uint64_t ops;
	} types[] = {{IBV_QPT_RC, kRcOps}, {IBV_QPT_UC, kUcOps}, {IBV_QPT_UD, kUdOps}};
	ASSERT_TRUE(create_ah()) << strerror(errno);
	for (const auto &t : types) {
		ASSERT_TRUE(create(t.type, t.ops)) << t.type << ": " << strerror(errno);
		struct ibv_qp_ex *x = qpx_;
		struct ibv_ah *ah = ah_;
		const bool ud = t.type == IBV_QPT_UD;
		// A valid WR, with and without the XRC setter.
		auto wr = [&](bool srqn) {
			ibv_wr_send(x);
			if (ud)
				ibv_wr_set_ud_addr(x, ah, 1, 1);
			ibv_wr_set_sge(x, 1, 0x2000, 8);
			if (srqn)
				ibv_wr_set_xrc_srqn(x, 5);
		};
		x->wr_flags = 0;
		EXPECT_EQ(failed_batch([&] { wr(true); }), EINVAL) << t.type;
		EXPECT_EQ(failed_batch([&] { ibv_wr_set_xrc_srqn(x, 5); }), EINVAL) << t.type;
		ibv_wr_start(x);
		wr(false);
		ASSERT_EQ(ibv_wr_complete(x), 0) << t.type;
		EXPECT_EQ(sq_.prod(), prod0_ + 1) << t.type;
		EXPECT_EQ(sq_.send(prod0_)->xrc_srqn, 0u) << t.type;
		EXPECT_EQ(ibv_destroy_qp(qp_), 0);
		qp_ = nullptr;
	}
}

// ---- XRC initiators (a kernel with SROCE_CTX_F_XRC) -------------------------------------

class QpExXrc : public QpEx {
protected:
	void SetUp() override
	{
		// Read by the fake at GET_CONTEXT only.
		scoped_env env("FAKE_SROCE_CTX_FLAGS", std::to_string(SROCE_CTX_F_XRC).c_str());
		QpEx::SetUp();
	}

	// An XRC_SEND QP with every RC operation, in RTS.
	struct ibv_qp_ex *create_xrc() { return create(IBV_QPT_XRC_SEND, kRcOps); }

	// The header of an XRC WQE: xrc_srqn besides what wqe_hdr sets.
	static struct sroce_send_wqe xrc_hdr(uint64_t wr_id, uint8_t opcode, uint16_t flags,
					     uint32_t srqn)
	{
		struct sroce_send_wqe w = wqe_hdr(wr_id, opcode, flags);
		w.xrc_srqn = srqn;
		return w;
	}
};

TEST_F(QpExXrc, SendOpsFlagsAreRcsWithoutAtomicWriteOrFlush)
{
	for (unsigned bit = 0; bit < 64; bit++) {
		const uint64_t ops = uint64_t{1} << bit;
		struct ibv_qp_init_attr_ex a = attr(IBV_QPT_XRC_SEND, ops);
		mark();
		errno = 0;
		struct ibv_qp *qp = ibv_create_qp_ex(ctx_, &a);
		if (kRcOps & ops) {
			ASSERT_TRUE(qp) << "bit " << bit << ": " << strerror(errno);
			EXPECT_TRUE(ibv_qp_to_qp_ex(qp)) << bit;
			EXPECT_TRUE(contains(log(), "type=9 ")) << log();
			EXPECT_EQ(ibv_destroy_qp(qp), 0);
		} else {
			EXPECT_FALSE(qp) << "bit " << bit;
			EXPECT_EQ(errno, EOPNOTSUPP) << "bit " << bit;
			EXPECT_FALSE(contains(log(), "CREATE_QP")) << log();
			if (qp)
				ibv_destroy_qp(qp);
		}
	}
}

TEST_F(QpExXrc, EveryWrCarriesItsSrqn)
{
	ASSERT_TRUE(create_xrc()) << strerror(errno);
	struct ibv_qp_ex *x = qpx_;
	const std::vector<struct ibv_sge> s1 = {{0x1000, 100, 0x11}};
	const std::vector<struct ibv_sge> s2 = {{0x2000, 8, 0x21}};
	const auto inl = pattern(24, 3);

	ibv_wr_start(x);
	x->wr_id = 0x200;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 0x000101);
	ibv_wr_set_sge(x, s1[0].lkey, s1[0].addr, s1[0].length);

	x->wr_id = 0x201;
	x->wr_flags = 0;
	ibv_wr_rdma_write_imm(x, 0x4444, 0x9000, htobe32(7));
	ibv_wr_set_inline_data(x, const_cast<unsigned char *>(inl.data()), inl.size());
	ibv_wr_set_xrc_srqn(x, 0xffffff);	// after the data: any order

	x->wr_id = 0x202;
	ibv_wr_atomic_fetch_add(x, 0x5555, 0x10010, 3);
	ibv_wr_set_xrc_srqn(x, 0x123456);
	ibv_wr_set_sge_list(x, 1, s2.data());

	x->wr_id = 0x203;
	ibv_wr_rdma_read(x, 0x6666, 0x20000);
	ibv_wr_set_xrc_srqn(x, 1);
	ibv_wr_set_xrc_srqn(x, 0x222);	// the last one counts
	ibv_wr_set_sge(x, s1[0].lkey, s1[0].addr, s1[0].length);

	// Local operations have no target: no setter needed.
	x->wr_id = 0x204;
	ibv_wr_local_inv(x, 0x7777);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 5);

	struct sroce_send_wqe w = xrc_hdr(0x200, SROCE_WR_SEND, SROCE_WQE_F_SIGNALED, 0x101);
	w.num_sge = 1;
	expect_wqe(prod0_, w, s1);

	w = xrc_hdr(0x201, SROCE_WR_RDMA_WRITE_WITH_IMM, SROCE_WQE_F_INLINE, 0xffffff);
	w.inline_len = 24;
	w.ex.imm_data = htobe32(7);
	w.wr.rdma.remote_addr = 0x9000;
	w.wr.rdma.rkey = 0x4444;
	expect_wqe(prod0_ + 1, w, {}, inl);

	w = xrc_hdr(0x202, SROCE_WR_ATOMIC_FETCH_AND_ADD, 0, 0x123456);
	w.num_sge = 1;
	w.wr.atomic.remote_addr = 0x10010;
	w.wr.atomic.compare_add = 3;
	w.wr.atomic.rkey = 0x5555;
	expect_wqe(prod0_ + 2, w, s2);

	w = xrc_hdr(0x203, SROCE_WR_RDMA_READ, 0, 0x222);
	w.num_sge = 1;
	w.wr.rdma.remote_addr = 0x20000;
	w.wr.rdma.rkey = 0x6666;
	expect_wqe(prod0_ + 3, w, s1);

	w = xrc_hdr(0x204, SROCE_WR_LOCAL_INV, 0, 0);
	w.ex.invalidate_rkey = 0x7777;
	expect_wqe(prod0_ + 4, w);
}

TEST_F(QpExXrc, WrWithoutItsSrqnIsEinval)
{
	ASSERT_TRUE(create_xrc()) << strerror(errno);
	struct ibv_qp_ex *x = qpx_;
	ASSERT_TRUE(create_ah()) << strerror(errno);
	struct ibv_ah *ah = ah_;
	x->wr_flags = 0;
	// Every operation that reaches the wire needs it, the last WR of the
	// batch too.
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_sge(x, 1, 0x2000, 8);
		  }),
		  EINVAL);
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_rdma_write(x, 1, 0x1000);
			  ibv_wr_set_xrc_srqn(x, 9);
			  ibv_wr_set_sge(x, 1, 0x2000, 8);
			  ibv_wr_rdma_read(x, 1, 0x1000);
			  ibv_wr_set_sge(x, 1, 0x2000, 8);
		  }),
		  EINVAL);
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_send(x);
			  ibv_wr_set_xrc_srqn(x, 9);
		  }),
		  EINVAL);
	// A number the XRCETH cannot carry.
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_xrc_srqn(x, 0x1000000);
		  }),
		  EINVAL);
	// UD's address is not XRC's.
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_xrc_srqn(x, 9);
			  ibv_wr_set_ud_addr(x, ah, 1, 1);
		  }),
		  EINVAL);
	// Not without a builder either.
	EXPECT_EQ(failed_batch([&] { ibv_wr_set_xrc_srqn(x, 9); }), EINVAL);
	// What the kernel has no flag for on this QP type.
	uint64_t v = 0;
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_xrc_srqn(x, 9);
			  x->wr_atomic_write(x, 1, 0x1000, &v);
		  }),
		  EOPNOTSUPP);
	// After all that a good batch goes through.
	ibv_wr_start(x);
	x->wr_id = 0x99;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 0xabcdef);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_.prod(), prod0_ + 1);
	EXPECT_EQ(sq_.send(prod0_)->wr_id, 0x99u);
	EXPECT_EQ(sq_.send(prod0_)->xrc_srqn, 0xabcdefu);
}

// ibv_post_send: wr->qp_type.xrc.remote_srqn into every WQE, local
// operations too; a number over 24 bits stops the list there.
TEST_F(QpExXrc, PostSendCarriesTheRemoteSrqn)
{
	ASSERT_TRUE(create_xrc()) << strerror(errno);
	struct ibv_sge s = {0x1000, 16, 0x11};
	struct ibv_send_wr w[4] = {};
	for (int i = 0; i < 4; i++) {
		w[i].wr_id = 0x300 + i;
		w[i].opcode = IBV_WR_SEND;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].qp_type.xrc.remote_srqn = 0x10 * (i + 1);
		w[i].next = i < 3 ? &w[i + 1] : nullptr;
	}
	w[1].opcode = IBV_WR_RDMA_WRITE;
	w[1].wr.rdma.remote_addr = 0x8000;
	w[1].wr.rdma.rkey = 0x42;
	w[2].opcode = IBV_WR_LOCAL_INV;
	w[2].num_sge = 0;
	w[2].invalidate_rkey = 0x77;
	w[3].qp_type.xrc.remote_srqn = 0x1000000;
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(qp_, w, &bad), EINVAL);
	EXPECT_EQ(bad, &w[3]);
	ASSERT_EQ(sq_.prod(), prod0_ + 3);
	EXPECT_EQ(sq_.send(prod0_)->xrc_srqn, 0x10u);
	EXPECT_EQ(sq_.send(prod0_ + 1)->xrc_srqn, 0x20u);
	EXPECT_EQ(sq_.send(prod0_ + 1)->wr.rdma.rkey, 0x42u);
	EXPECT_EQ(sq_.send(prod0_ + 2)->xrc_srqn, 0x30u);
	EXPECT_EQ(sq_.send(prod0_ + 2)->opcode, SROCE_WR_LOCAL_INV);

	// The same WR through both APIs: the same bytes.
	w[0].next = nullptr;
	w[0].send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(ibv_post_send(qp_, w, &bad), 0);
	ibv_wr_start(qpx_);
	qpx_->wr_id = w[0].wr_id;
	qpx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx_);
	ibv_wr_set_sge(qpx_, s.lkey, s.addr, s.length);
	ibv_wr_set_xrc_srqn(qpx_, 0x10);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 5);
	const size_t n = SROCE_SEND_WQE_HDR + sizeof(struct sroce_sge);
	EXPECT_EQ(memcmp(sq_.slot(prod0_ + 3), sq_.slot(prod0_ + 4), n), 0)
		<< hexdump(sq_.slot(prod0_ + 3), n) << "\n"
		<< hexdump(sq_.slot(prod0_ + 4), n);
	EXPECT_EQ(sq_.send(prod0_ + 4)->xrc_srqn, 0x10u);

	// An XRC initiator has no receive queue.
	struct ibv_recv_wr r = {};
	struct ibv_recv_wr *rbad = nullptr;
	EXPECT_EQ(ibv_post_recv(qp_, &r, &rbad), EINVAL);
	EXPECT_EQ(rbad, &r);
}

// On an RC QP of the same context the field stays 0 whatever the WR says.
TEST_F(QpExXrc, RcWqesCarryNoSrqn)
{
	ASSERT_TRUE(create(IBV_QPT_RC, kRcOps)) << strerror(errno);
	struct ibv_sge s = {0x1000, 16, 0x11};
	struct ibv_send_wr w = {};
	w.opcode = IBV_WR_SEND;
	w.sg_list = &s;
	w.num_sge = 1;
	w.qp_type.xrc.remote_srqn = 0x4242;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(qp_, &w, &bad), 0);
	ibv_wr_start(qpx_);
	ibv_wr_send(qpx_);
	ibv_wr_set_sge(qpx_, s.lkey, s.addr, s.length);
	ASSERT_EQ(ibv_wr_complete(qpx_), 0);
	ASSERT_EQ(sq_.prod(), prod0_ + 2);
	EXPECT_EQ(sq_.send(prod0_)->xrc_srqn, 0u);
	EXPECT_EQ(sq_.send(prod0_ + 1)->xrc_srqn, 0u);
	struct ibv_qp_ex *x = qpx_;
	EXPECT_EQ(failed_batch([&] {
			  ibv_wr_send(x);
			  ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
			  ibv_wr_set_xrc_srqn(x, 5);
		  }),
		  EINVAL);
}

// BIND_MW is encoded although the kernel has no memory windows yet
// (max_mw 0): the kernel rejects or executes it.  A zero length unbinds
// and needs no MR; a bind with length needs one.
TEST_F(QpEx, BindMwOnUcAndItsErrors)
{
	ASSERT_TRUE(create(IBV_QPT_UC, kUcOps));
	struct ibv_qp_ex *x = qpx_;
	struct ibv_mw mw = {};
	mw.handle = 9;
	struct ibv_mw_bind_info bi = {};
	bi.length = 0x100;
	x->wr_flags = 0;
	EXPECT_EQ(failed_batch([&] { ibv_wr_bind_mw(x, &mw, 1, &bi); }), EINVAL);
	EXPECT_EQ(failed_batch([&] { ibv_wr_bind_mw(x, nullptr, 1, &bi); }), EINVAL);
	EXPECT_EQ(failed_batch([&] { ibv_wr_bind_mw(x, &mw, 1, nullptr); }), EINVAL);
	EXPECT_EQ(failed_batch([&] {
			  x->wr_flags = IBV_SEND_INLINE;
			  ibv_wr_bind_mw(x, &mw, 1, &bi);
		  }),
		  EINVAL);
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	bi.length = 0;
	x->wr_id = 0xb1;
	ibv_wr_start(x);
	ibv_wr_bind_mw(x, &mw, 0x901, &bi);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	struct sroce_send_wqe w = wqe_hdr(0xb1, SROCE_WR_BIND_MW,
					  SROCE_WQE_F_SIGNALED | SROCE_WQE_F_FENCE);
	w.wr.bind_mw.mw_handle = 9;
	w.wr.bind_mw.rkey = 0x901;
	expect_wqe(prod0_, w);
}

} // namespace
