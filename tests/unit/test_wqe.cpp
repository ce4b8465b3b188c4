// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// provider/wqe.hpp, wqe.cpp: send/receive WQE encoding - every opcode on
// every QP type, every field, every error path, inline boundaries, and
// the builder the extended API will use.
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <gtest/gtest.h>

#include "sroce.hpp"
#include "wqe.hpp"

using namespace sroce;

namespace {

constexpr uint32_t kStride = 512;
constexpr unsigned char kPoison = 0xa5;

constexpr send_queue_caps kRc = {IBV_QPT_RC, 4, 128, 256};
constexpr send_queue_caps kUc = {IBV_QPT_UC, 4, 128, 256};
constexpr send_queue_caps kUd = {IBV_QPT_UD, 4, 128, 256};
constexpr send_queue_caps kXrc = {IBV_QPT_XRC_SEND, 4, 128, 256};
static_assert(send_caps_ok(kRc) && send_caps_ok(kUc) && send_caps_ok(kUd) &&
	      send_caps_ok(kXrc));

// A slot (with room past the stride, to see nothing is written there)
// and the objects a WR points at.
class WqeTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		slot_ = static_cast<unsigned char *>(aligned_alloc(64, kStride));
		ASSERT_NE(slot_, nullptr);
		poison();
		memset(&ah_, 0, sizeof(ah_));
		ah_.ah_num = 0x00c0ffee;
		memset(&mw_, 0, sizeof(mw_));
		mw_.handle = 0x77;
		mw_.rkey = 0x1100;
		memset(&mr_, 0, sizeof(mr_));
		mr_.lkey = 0x2200;
		for (int i = 0; i < 8; i++) {
			sge_[i].addr = 0x1000000000ull * (i + 1) + 0x10 * i;
			sge_[i].length = 0x100 + i;
			sge_[i].lkey = 0xab00 + i;
		}
	}
	void TearDown() override { free(slot_); }

	void poison() { memset(slot_, kPoison, kStride); }

	// A WR that is valid for `op` on any QP type that carries it.
	struct ibv_send_wr wr_for(unsigned op)
	{
		struct ibv_send_wr wr;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x1122334455667788ull;
		wr.opcode = static_cast<enum ibv_wr_opcode>(op);
		wr.sg_list = sge_;
		wr.num_sge = 2;
		switch (op) {
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			sge_[0].length = 8;
			wr.num_sge = 1;
			wr.wr.atomic.remote_addr = 0xdead0000beef0008ull;
			wr.wr.atomic.rkey = 0x5151;
			wr.wr.atomic.compare_add = 0x0102030405060708ull;
			wr.wr.atomic.swap = 0x1112131415161718ull;
			break;
		case IBV_WR_BIND_MW:
			wr.num_sge = 0;
			wr.bind_mw.mw = &mw_;
			wr.bind_mw.rkey = 0x1101;
			wr.bind_mw.bind_info.mr = &mr_;
			wr.bind_mw.bind_info.addr = 0x7000;
			wr.bind_mw.bind_info.length = 0x3000;
			wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
			break;
		case IBV_WR_LOCAL_INV:
			wr.num_sge = 0;
			wr.invalidate_rkey = 0x4444;
			break;
		case IBV_WR_SEND:
		case IBV_WR_SEND_WITH_IMM:
			// Only UD reads these; harmless otherwise.
			wr.wr.ud.ah = &ah_.ibv_ah;
			wr.wr.ud.remote_qpn = 0x123456;
			wr.wr.ud.remote_qkey = 0x80010203;
			break;
		default:
			wr.wr.rdma.remote_addr = 0xfeedface00001000ull;
			wr.wr.rdma.rkey = 0x9999;
			break;
		}
		if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
			wr.imm_data = htonl(0xa1b2c3d4);
		if (op == IBV_WR_SEND_WITH_INV)
			wr.invalidate_rkey = 0x3333;
		return wr;
	}

	const struct sroce_send_wqe *wqe() const
	{
		return reinterpret_cast<const struct sroce_send_wqe *>(slot_);
	}
	const struct sroce_sge *wqe_sges() const
	{
		return reinterpret_cast<const struct sroce_sge *>(slot_ +
								  SROCE_SEND_WQE_HDR);
	}
	const unsigned char *wqe_union() const
	{
		return reinterpret_cast<const unsigned char *>(&wqe()->wr);
	}
	// Bytes [from, to) of the slot still hold the poison.
	bool untouched(size_t from, size_t to) const
	{
		for (size_t i = from; i < to; i++)
			if (slot_[i] != kPoison)
				return false;
		return true;
	}
	bool union_zero_from(size_t off) const
	{
		for (size_t i = off; i < sizeof(wqe()->wr); i++)
			if (wqe_union()[i] != 0)
				return false;
		return true;
	}
	void expect_sges(unsigned n) const
	{
		for (unsigned i = 0; i < n; i++) {
			EXPECT_EQ(wqe_sges()[i].addr, sge_[i].addr) << i;
			EXPECT_EQ(wqe_sges()[i].length, sge_[i].length) << i;
			EXPECT_EQ(wqe_sges()[i].lkey, sge_[i].lkey) << i;
		}
		// Nothing written past the last SGE.
		EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR + n * sizeof(struct sroce_sge),
				      kStride));
	}

	unsigned char *slot_ = nullptr;
	struct ibv_sge sge_[8];
	struct sroce::ah ah_;
	struct ibv_mw mw_;
	struct ibv_mr mr_;
};

} // namespace

// ---- sizes and caps --------------------------------------------------------------------

static_assert(send_wqe_max_sge(32) == 0 && send_wqe_max_sge(64) == 0);
static_assert(send_wqe_max_sge(128) == 4 && send_wqe_max_sge(256) == 12);
static_assert(send_wqe_max_sge(8192) == 255);	// u8 num_sge
static_assert(send_wqe_max_inline(64) == 0 && send_wqe_max_inline(256) == 192);
static_assert(recv_wqe_max_sge(64) == 3 && recv_wqe_max_sge(128) == 7);
static_assert(send_wqe_stride(0, 0) == 64);
static_assert(send_wqe_stride(1, 0) == 128);	// 80 -> 128
static_assert(send_wqe_stride(4, 0) == 128);
static_assert(send_wqe_stride(5, 0) == 256);
static_assert(send_wqe_stride(0, 64) == 128 && send_wqe_stride(0, 65) == 256);
static_assert(send_wqe_stride(2, 200) == 512);
static_assert(send_wqe_stride(255, 0) == 8192 && send_wqe_stride(256, 0) == 0);
static_assert(send_wqe_stride(0, 0xffffffffu) == 0);
static_assert(recv_wqe_stride(0) == 64 && recv_wqe_stride(3) == 64);
static_assert(recv_wqe_stride(4) == 128 && recv_wqe_stride(7) == 128);

TEST(WqeCaps, StrideRoundTrips)
{
	for (uint32_t sge = 0; sge <= 255; sge++) {
		const uint32_t s = send_wqe_stride(sge, 0);
		ASSERT_TRUE(is_pow2(s)) << sge;
		EXPECT_GE(send_wqe_max_sge(s), sge) << sge;
		const uint32_t r = recv_wqe_stride(sge);
		EXPECT_GE(recv_wqe_max_sge(r), sge) << sge;
	}
	for (uint32_t inl = 0; inl <= 4096; inl += 7)
		EXPECT_GE(send_wqe_max_inline(send_wqe_stride(0, inl)), inl) << inl;
}

TEST(WqeCaps, SendCapsOk)
{
	EXPECT_TRUE(send_caps_ok({IBV_QPT_RC, 12, 192, 256}));
	EXPECT_TRUE(send_caps_ok({IBV_QPT_UD, 0, 0, 64}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RC, 13, 0, 256}));	// SGEs
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RC, 0, 193, 256}));	// inline
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RC, 0, 0, 96}));	// stride
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RC, 0, 0, 32}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RC, 256, 0, 1u << 20}));	// u8
	EXPECT_TRUE(send_caps_ok({IBV_QPT_XRC_SEND, 1, 0, 128}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_XRC_SEND, 13, 0, 256}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_XRC_RECV, 1, 0, 128}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_RAW_PACKET, 1, 0, 128}));
	EXPECT_FALSE(send_caps_ok({IBV_QPT_DRIVER, 1, 0, 128}));
	EXPECT_TRUE(recv_caps_ok({3, 64}));
	EXPECT_FALSE(recv_caps_ok({4, 64}));
	EXPECT_FALSE(recv_caps_ok({1, 48}));
	EXPECT_FALSE(recv_caps_ok({1, 80}));
}

// ---- opcodes ---------------------------------------------------------------------------

namespace {
struct opcode_case {
	unsigned op;
	bool rc, uc, ud;
};
// The expected table, written out rather than derived.
const opcode_case kOpcodeTable[] = {
	{IBV_WR_RDMA_WRITE, true, true, false},
	{IBV_WR_RDMA_WRITE_WITH_IMM, true, true, false},
	{IBV_WR_SEND, true, true, true},
	{IBV_WR_SEND_WITH_IMM, true, true, true},
	{IBV_WR_RDMA_READ, true, false, false},
	{IBV_WR_ATOMIC_CMP_AND_SWP, true, false, false},
	{IBV_WR_ATOMIC_FETCH_AND_ADD, true, false, false},
	{IBV_WR_LOCAL_INV, true, true, false},
	{IBV_WR_BIND_MW, true, true, false},
	{IBV_WR_SEND_WITH_INV, true, false, false},
	{IBV_WR_TSO, false, false, false},
	{IBV_WR_DRIVER1, false, false, false},
	{12, false, false, false},
	{IBV_WR_ATOMIC_WRITE, false, false, false},
	{16, false, false, false},
	{31, false, false, false},
	{32, false, false, false},
	{255, false, false, false},
	{0x80000000u, false, false, false},
	{0xffffffffu, false, false, false},
};
} // namespace

TEST_F(WqeTest, OpcodeTableEveryQpType)
{
	for (const opcode_case &c : kOpcodeTable) {
		const struct {
			const send_queue_caps *caps;
			bool ok;
		} per_type[] = {{&kRc, c.rc}, {&kUc, c.uc}, {&kUd, c.ud},
				// XRC initiators carry RC's operations
				{&kXrc, c.rc}};
		for (const auto &t : per_type) {
			SCOPED_TRACE(::testing::Message() << "opcode " << c.op
							  << " qp_type " << t.caps->qp_type);
			EXPECT_EQ(check_send_opcode(t.caps->qp_type, c.op),
				  t.ok ? 0 : EINVAL);
			struct ibv_send_wr wr =
				wr_for(c.op < 16 ? c.op : unsigned(IBV_WR_SEND));
			// C callers can store any value in the enum: set the
			// bits, not an out-of-range C++ enum value.
			memcpy(&wr.opcode, &c.op, sizeof(wr.opcode));
			poison();
			EXPECT_EQ(encode_send_wqe(slot_, *t.caps, &wr), t.ok ? 0 : EINVAL);
			if (t.ok) {
				EXPECT_EQ(wqe()->opcode, c.op);
			}
		}
	}
}

TEST_F(WqeTest, UnsupportedQpTypesRejectEverything)
{
	for (enum ibv_qp_type t : {IBV_QPT_XRC_RECV, IBV_QPT_RAW_PACKET, IBV_QPT_DRIVER}) {
		send_queue_caps caps = kRc;
		caps.qp_type = t;
		for (unsigned op = 0; op < 16; op++) {
			EXPECT_EQ(check_send_opcode(t, op), EINVAL);
			struct ibv_send_wr wr = wr_for(op);
			EXPECT_EQ(encode_send_wqe(slot_, caps, &wr), EINVAL) << op;
		}
	}
}

// ---- every opcode's encoding --------------------------------------------------------------

TEST_F(WqeTest, RdmaWrite)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE);
	wr.num_sge = 3;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->wr_id, 0x1122334455667788ull);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_RDMA_WRITE);
	EXPECT_EQ(wqe()->num_sge, 3);
	EXPECT_EQ(wqe()->flags, 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->ex.imm_data, 0u);
	EXPECT_EQ(wqe()->xrc_srqn, 0u);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0xfeedface00001000ull);
	EXPECT_EQ(wqe()->wr.rdma.rkey, 0x9999u);
	EXPECT_EQ(wqe()->wr.rdma.reserved, 0u);
	EXPECT_TRUE(union_zero_from(16));
	expect_sges(3);
}

TEST_F(WqeTest, RdmaWriteWithImm)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE_WITH_IMM);
	ASSERT_EQ(encode_send_wqe(slot_, kUc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_RDMA_WRITE_WITH_IMM);
	// Network byte order, passed through as bytes.
	const unsigned char imm[4] = {0xa1, 0xb2, 0xc3, 0xd4};
	EXPECT_EQ(memcmp(&wqe()->ex.imm_data, imm, 4), 0);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0xfeedface00001000ull);
	EXPECT_EQ(wqe()->wr.rdma.rkey, 0x9999u);
	EXPECT_TRUE(union_zero_from(12));
	EXPECT_EQ(wqe()->num_sge, 2);
	expect_sges(2);
}

TEST_F(WqeTest, RdmaRead)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_READ);
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_RDMA_READ);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_SIGNALED);
	EXPECT_EQ(wqe()->ex.imm_data, 0u);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0xfeedface00001000ull);
	EXPECT_EQ(wqe()->wr.rdma.rkey, 0x9999u);
	EXPECT_TRUE(union_zero_from(12));
	expect_sges(2);
}

TEST_F(WqeTest, SendOnConnectedQpsHasNoAddress)
{
	for (const send_queue_caps *caps : {&kRc, &kUc}) {
		poison();
		struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
		ASSERT_EQ(encode_send_wqe(slot_, *caps, &wr), 0);
		EXPECT_EQ(wqe()->opcode, SROCE_WR_SEND);
		EXPECT_EQ(wqe()->ex.imm_data, 0u);
		// wr.ud of the ibv_send_wr is ignored off UD.
		EXPECT_TRUE(union_zero_from(0));
		expect_sges(2);
	}
}

TEST_F(WqeTest, SendWithImm)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND_WITH_IMM);
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_SEND_WITH_IMM);
	EXPECT_EQ(wqe()->ex.imm_data, htonl(0xa1b2c3d4));
	EXPECT_TRUE(union_zero_from(0));
	expect_sges(2);
}

TEST_F(WqeTest, UdSendCarriesAddress)
{
	for (unsigned op : {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM}) {
		poison();
		struct ibv_send_wr wr = wr_for(op);
		ASSERT_EQ(encode_send_wqe(slot_, kUd, &wr), 0) << op;
		EXPECT_EQ(wqe()->opcode, op);
		EXPECT_EQ(wqe()->wr.ud.ah_num, 0x00c0ffeeu);
		EXPECT_EQ(wqe()->wr.ud.remote_qpn, 0x123456u);
		EXPECT_EQ(wqe()->wr.ud.remote_qkey, 0x80010203u);
		EXPECT_EQ(wqe()->wr.ud.reserved, 0u);
		EXPECT_TRUE(union_zero_from(16));
		EXPECT_EQ(wqe()->ex.imm_data,
			  op == IBV_WR_SEND_WITH_IMM ? htonl(0xa1b2c3d4) : 0u);
		expect_sges(2);
	}
}

TEST_F(WqeTest, UdSendWithoutAhIsEinval)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.wr.ud.ah = nullptr;
	EXPECT_EQ(encode_send_wqe(slot_, kUd, &wr), EINVAL);
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	EXPECT_EQ(encode_send_wqe(slot_, kUd, &wr), EINVAL);
	// RC does not look at it.
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
}

TEST_F(WqeTest, SendWithInv)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND_WITH_INV);
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_SEND_WITH_INV);
	EXPECT_EQ(wqe()->ex.invalidate_rkey, 0x3333u);
	EXPECT_TRUE(union_zero_from(0));
	expect_sges(2);
}

TEST_F(WqeTest, AtomicCompareAndSwap)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_ATOMIC_CMP_AND_SWP);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_ATOMIC_CMP_AND_SWP);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_SIGNALED | SROCE_WQE_F_FENCE);
	EXPECT_EQ(wqe()->wr.atomic.remote_addr, 0xdead0000beef0008ull);
	EXPECT_EQ(wqe()->wr.atomic.compare_add, 0x0102030405060708ull);
	EXPECT_EQ(wqe()->wr.atomic.swap, 0x1112131415161718ull);
	EXPECT_EQ(wqe()->wr.atomic.rkey, 0x5151u);
	EXPECT_EQ(wqe()->wr.atomic.reserved, 0u);
	EXPECT_TRUE(union_zero_from(32));
	EXPECT_EQ(wqe()->num_sge, 1);
	expect_sges(1);
}

TEST_F(WqeTest, AtomicFetchAndAdd)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_ATOMIC_FETCH_AND_ADD);
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_ATOMIC_FETCH_AND_ADD);
	EXPECT_EQ(wqe()->wr.atomic.remote_addr, 0xdead0000beef0008ull);
	EXPECT_EQ(wqe()->wr.atomic.compare_add, 0x0102030405060708ull);
	EXPECT_EQ(wqe()->wr.atomic.rkey, 0x5151u);
	expect_sges(1);
}

TEST_F(WqeTest, AtomicErrors)
{
	for (unsigned op : {IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
		SCOPED_TRACE(op);
		struct ibv_send_wr wr = wr_for(op);
		for (uint64_t mis : {1, 2, 4, 7}) {
			wr.wr.atomic.remote_addr = 0x1000 + mis;
			EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL) << mis;
		}
		wr.wr.atomic.remote_addr = 0x1000;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
		// The local buffer must hold the 8-byte original value.
		sge_[0].length = 7;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		wr.num_sge = 0;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		// Scattered over two SGEs is fine (as rxe).
		sge_[0].length = 4;
		sge_[1].length = 4;
		wr.num_sge = 2;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
		// Inline makes no sense for a result buffer.
		sge_[0].length = 8;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_INLINE;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
	}
}

// IBTA 1.5, where the kernel has them (send_queue_caps.ext_opcodes).
constexpr send_queue_caps kRcExt = {IBV_QPT_RC, 4, 128, 256,
				    ext_send_opcodes(IBV_QPT_RC, ~0u)};

TEST_F(WqeTest, ExtOpcodesOnlyWhereTheKernelHasThemAndOnRc)
{
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_RC, 0), 0u);
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_UC, ~0u), 0u);
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_UD, ~0u), 0u);
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_XRC_SEND, ~0u), 0u);
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_RC, SROCE_CTX_F_ATOMIC_WRITE),
		  wr_bit(IBV_WR_ATOMIC_WRITE));
	EXPECT_EQ(ext_send_opcodes(IBV_QPT_RC, SROCE_CTX_F_FLUSH) != 0, kHaveFlushApi);
	EXPECT_EQ(check_send_opcode(kRc, IBV_WR_ATOMIC_WRITE), EINVAL);
	EXPECT_EQ(check_send_opcode(kRcExt, IBV_WR_ATOMIC_WRITE), 0);
	// ibv_send_wr cannot carry a FLUSH: ibv_wr_flush only.
	EXPECT_EQ(check_send_opcode(kRcExt, SROCE_WR_FLUSH), EINVAL);
}

TEST_F(WqeTest, AtomicWriteThroughPostSend)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE);
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.wr.rdma.remote_addr = 0xdead0000beef0010ull;
	sge_[0].length = 8;
	wr.num_sge = 1;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);	// kernel without it
	ASSERT_EQ(encode_send_wqe(slot_, kRcExt, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_ATOMIC_WRITE);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0xdead0000beef0010ull);
	EXPECT_EQ(wqe()->wr.rdma.rkey, wr.wr.rdma.rkey);
	expect_sges(1);
	// Exactly 8 bytes, to an aligned word.
	for (uint64_t mis : {1, 4, 7}) {
		wr.wr.rdma.remote_addr = 0x1000 + mis;
		EXPECT_EQ(encode_send_wqe(slot_, kRcExt, &wr), EINVAL) << mis;
	}
	wr.wr.rdma.remote_addr = 0x1000;
	for (uint32_t len : {0u, 4u, 9u, 16u}) {
		sge_[0].length = len;
		EXPECT_EQ(encode_send_wqe(slot_, kRcExt, &wr), EINVAL) << len;
	}
	sge_[0].length = 4;
	sge_[1].length = 4;
	wr.num_sge = 2;
	EXPECT_EQ(encode_send_wqe(slot_, kRcExt, &wr), 0);
}

TEST_F(WqeTest, BuilderAtomicWriteAndFlush)
{
	send_wqe_builder b;
	const uint64_t v = 0x0102030405060708ull;

	b.start(slot_, 1, IBV_WR_ATOMIC_WRITE, 0);
	EXPECT_EQ(b.set_atomic_write(0x1004, 9), EINVAL);
	ASSERT_EQ(b.set_atomic_write(0x1008, 9), 0);
	EXPECT_EQ(b.finish(), EINVAL);	// no 8 bytes yet
	ASSERT_EQ(b.add_inline(kRcExt, &v, 8), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE);
	EXPECT_EQ(wqe()->inline_len, 8u);
	EXPECT_EQ(memcmp(reinterpret_cast<const unsigned char *>(wqe()) + SROCE_SEND_WQE_HDR,
			 &v, 8), 0);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0x1008u);
	EXPECT_EQ(wqe()->wr.rdma.rkey, 9u);

	poison();
	b.start(slot_, 2, SROCE_WR_FLUSH, 0);
	EXPECT_EQ(b.set_flush(0x2000, 7, (size_t{1} << 31) + 1, SROCE_FLUSH_GLOBAL,
			      SROCE_FLUSH_RANGE), EINVAL);
	EXPECT_EQ(b.set_flush(0x2000, 7, 64, 4, SROCE_FLUSH_RANGE), EINVAL);
	EXPECT_EQ(b.set_flush(0x2000, 7, 64, SROCE_FLUSH_GLOBAL, 2), EINVAL);
	ASSERT_EQ(b.set_flush(0x2000, 7, size_t{1} << 31, SROCE_FLUSH_GLOBAL, SROCE_FLUSH_MR), 0);
	EXPECT_EQ(b.add_sge(kRcExt, 0x9000, 8, 5), EINVAL);	// no data
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_FLUSH);
	EXPECT_EQ(wqe()->num_sge, 0u);
	EXPECT_EQ(wqe()->wr.flush.remote_addr, 0x2000u);
	EXPECT_EQ(wqe()->wr.flush.length, uint64_t{1} << 31);
	EXPECT_EQ(wqe()->wr.flush.rkey, 7u);
	EXPECT_EQ(wqe()->wr.flush.type, SROCE_FLUSH_GLOBAL);
	EXPECT_EQ(wqe()->wr.flush.level, SROCE_FLUSH_MR);
	EXPECT_EQ(wqe()->wr.flush.reserved, 0u);
}

TEST_F(WqeTest, LocalInvalidateIgnoresSgList)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_LOCAL_INV);
	wr.num_sge = 2;	// not used by a local operation
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(encode_send_wqe(slot_, kUc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_LOCAL_INV);
	EXPECT_EQ(wqe()->ex.invalidate_rkey, 0x4444u);
	EXPECT_EQ(wqe()->num_sge, 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_SIGNALED);
	EXPECT_TRUE(union_zero_from(0));
	EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR, kStride));
}

TEST_F(WqeTest, BindMw)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_BIND_MW);
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_BIND_MW);
	EXPECT_EQ(wqe()->ex.imm_data, 0u);
	EXPECT_EQ(wqe()->wr.bind_mw.addr, 0x7000u);
	EXPECT_EQ(wqe()->wr.bind_mw.length, 0x3000u);
	EXPECT_EQ(wqe()->wr.bind_mw.mw_handle, 0x77u);
	EXPECT_EQ(wqe()->wr.bind_mw.rkey, 0x1101u);	// the new rkey, not mw->rkey
	EXPECT_EQ(wqe()->wr.bind_mw.mr_lkey, 0x2200u);
	EXPECT_EQ(wqe()->wr.bind_mw.access, unsigned(IBV_ACCESS_REMOTE_WRITE));
	EXPECT_TRUE(union_zero_from(32));
	EXPECT_EQ(wqe()->num_sge, 0);
	EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR, kStride));
}

TEST_F(WqeTest, BindMwErrorsAndUnbind)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_BIND_MW);
	wr.bind_mw.mw = nullptr;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
	wr.bind_mw.mw = &mw_;
	wr.bind_mw.bind_info.mr = nullptr;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
	// Zero length unbinds: no MR needed.
	wr.bind_mw.bind_info.length = 0;
	poison();
	ASSERT_EQ(encode_send_wqe(slot_, kUc, &wr), 0);
	EXPECT_EQ(wqe()->wr.bind_mw.mr_lkey, 0u);
	EXPECT_EQ(wqe()->wr.bind_mw.length, 0u);
	EXPECT_EQ(wqe()->wr.bind_mw.mw_handle, 0x77u);
	// Not on UD.
	wr.bind_mw.bind_info.mr = &mr_;
	EXPECT_EQ(encode_send_wqe(slot_, kUd, &wr), EINVAL);
}

// ---- flags ---------------------------------------------------------------------------

TEST(WqeFlags, EachFlagMaps)
{
	const struct {
		unsigned ibv;
		uint16_t wqe;
	} map[] = {
		{0, 0},
		{IBV_SEND_SIGNALED, SROCE_WQE_F_SIGNALED},
		{IBV_SEND_SOLICITED, SROCE_WQE_F_SOLICITED},
		{IBV_SEND_FENCE, SROCE_WQE_F_FENCE},
		{IBV_SEND_INLINE, SROCE_WQE_F_INLINE},
	};
	for (const auto &m : map) {
		uint16_t f = 0xffff;
		ASSERT_EQ(send_flags_to_wqe(m.ibv, IBV_WR_SEND, &f), 0) << m.ibv;
		EXPECT_EQ(f, m.wqe) << m.ibv;
	}
	// All combinations of the four.
	for (unsigned bits = 0; bits < 16; bits++) {
		uint16_t f = 0;
		ASSERT_EQ(send_flags_to_wqe(bits, IBV_WR_RDMA_WRITE, &f), 0);
		uint16_t want = 0;
		for (const auto &m : map)
			if (bits & m.ibv)
				want |= m.wqe;
		EXPECT_EQ(f, want) << bits;
	}
}

TEST(WqeFlags, UnsupportedFlagsAreEinval)
{
	uint16_t f = 0x5a5a;
	EXPECT_EQ(send_flags_to_wqe(IBV_SEND_IP_CSUM, IBV_WR_SEND, &f), EINVAL);
	EXPECT_EQ(send_flags_to_wqe(IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM,
				    IBV_WR_SEND, &f), EINVAL);
	EXPECT_EQ(send_flags_to_wqe(1u << 5, IBV_WR_SEND, &f), EINVAL);
	EXPECT_EQ(send_flags_to_wqe(1u << 31, IBV_WR_SEND, &f), EINVAL);
	EXPECT_EQ(f, 0x5a5a);	// untouched on error
}

TEST(WqeFlags, InlineOnlyWhereDataIsGathered)
{
	uint16_t f;
	for (unsigned op = 0; op < 10; op++) {
		const bool ok = op == IBV_WR_RDMA_WRITE ||
				op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND ||
				op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV;
		EXPECT_EQ(send_flags_to_wqe(IBV_SEND_INLINE, op, &f), ok ? 0 : EINVAL)
			<< op;
		// The other flags go with any opcode.
		EXPECT_EQ(send_flags_to_wqe(IBV_SEND_SIGNALED | IBV_SEND_FENCE |
						    IBV_SEND_SOLICITED,
					    op, &f),
			  0)
			<< op;
	}
}

TEST_F(WqeTest, FlagsThroughEncode)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND_WITH_IMM);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_SIGNALED | SROCE_WQE_F_SOLICITED);
	wr.send_flags = IBV_SEND_IP_CSUM;
	EXPECT_EQ(encode_send_wqe(slot_, kUd, &wr), EINVAL);
	for (unsigned op : {IBV_WR_RDMA_READ, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW}) {
		struct ibv_send_wr w = wr_for(op);
		w.send_flags = IBV_SEND_INLINE;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &w), EINVAL) << op;
	}
}

// ---- SGE counts ------------------------------------------------------------------------

TEST_F(WqeTest, NumSgeLimits)
{
	for (unsigned op : {IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
			    IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV}) {
		SCOPED_TRACE(op);
		struct ibv_send_wr wr = wr_for(op);
		wr.num_sge = static_cast<int>(kRc.max_sge);
		poison();
		ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
		if (op != IBV_WR_LOCAL_INV) {
			EXPECT_EQ(wqe()->num_sge, kRc.max_sge);
			expect_sges(kRc.max_sge);
		}
		wr.num_sge = static_cast<int>(kRc.max_sge) + 1;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		wr.num_sge = -1;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		wr.num_sge = INT32_MIN;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		wr.num_sge = 1;
		wr.sg_list = nullptr;
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
		wr.num_sge = 0;
		poison();
		ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
		EXPECT_EQ(wqe()->num_sge, 0);
		EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR, kStride));
	}
}

TEST_F(WqeTest, ZeroSgeCapsAcceptsOnlyEmptyLists)
{
	const send_queue_caps caps = {IBV_QPT_RC, 0, 0, 64};
	ASSERT_TRUE(send_caps_ok(caps));
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.num_sge = 1;
	EXPECT_EQ(encode_send_wqe(slot_, caps, &wr), EINVAL);
	wr.num_sge = 0;
	EXPECT_EQ(encode_send_wqe(slot_, caps, &wr), 0);
}

// ---- inline ------------------------------------------------------------------------------

namespace {
std::vector<unsigned char> pattern(size_t n, unsigned seed)
{
	std::vector<unsigned char> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = static_cast<unsigned char>(seed + i * 7);
	return v;
}
struct ibv_sge sge_of(const std::vector<unsigned char> &v, size_t off, size_t len)
{
	struct ibv_sge s;
	s.addr = reinterpret_cast<uintptr_t>(v.data() + off);
	s.length = static_cast<uint32_t>(len);
	s.lkey = 0xdeadbeef;	// not used for inline
	return s;
}
} // namespace

TEST_F(WqeTest, InlineExactlyMax)
{
	const auto data = pattern(kRc.max_inline, 3);
	struct ibv_sge s = sge_of(data, 0, data.size());
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE | SROCE_WQE_F_SIGNALED);
	EXPECT_EQ(wqe()->inline_len, kRc.max_inline);
	EXPECT_EQ(wqe()->num_sge, 0);
	EXPECT_EQ(memcmp(slot_ + SROCE_SEND_WQE_HDR, data.data(), data.size()), 0);
	EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR + kRc.max_inline, kStride));
}

TEST_F(WqeTest, InlineMaxPlusOneIsEinval)
{
	const auto data = pattern(kRc.max_inline + 1, 5);
	struct ibv_sge s = sge_of(data, 0, data.size());
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
	// The same payload without INLINE is an ordinary gather.
	wr.send_flags = 0;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->num_sge, 1);
}

TEST_F(WqeTest, InlineGathersSgesInOrder)
{
	const auto data = pattern(200, 11);
	// 3 pieces summing to exactly max_inline, one of them empty.
	struct ibv_sge s[4] = {sge_of(data, 10, 50), sge_of(data, 100, 0),
			       sge_of(data, 0, 10), sge_of(data, 120, 68)};
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND_WITH_INV);
	wr.sg_list = s;
	wr.num_sge = 4;
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	ASSERT_EQ(wqe()->inline_len, 128u);
	EXPECT_EQ(wqe()->ex.invalidate_rkey, 0x3333u);
	const unsigned char *p = slot_ + SROCE_SEND_WQE_HDR;
	EXPECT_EQ(memcmp(p, data.data() + 10, 50), 0);
	EXPECT_EQ(memcmp(p + 50, data.data(), 10), 0);
	EXPECT_EQ(memcmp(p + 60, data.data() + 120, 68), 0);
	EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR + 128, kStride));

	// One byte more in the last piece: over the limit.
	s[3].length = 69;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
}

TEST_F(WqeTest, InlineLengthOverflowCannotWrap)
{
	// Lengths whose u32 sum wraps to something small must still fail.
	const auto data = pattern(16, 1);
	struct ibv_sge s[2] = {sge_of(data, 0, 16), sge_of(data, 0, 16)};
	s[1].length = 0xfffffff8u;	// 16 + that wraps to 8
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.sg_list = s;
	wr.num_sge = 2;
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
}

TEST_F(WqeTest, InlineEmptyAndZeroMaxInline)
{
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.num_sge = 0;
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE);

	const send_queue_caps no_inline = {IBV_QPT_RC, 4, 0, 128};
	ASSERT_TRUE(send_caps_ok(no_inline));
	EXPECT_EQ(encode_send_wqe(slot_, no_inline, &wr), 0);
	const auto data = pattern(1, 0);
	struct ibv_sge s = sge_of(data, 0, 1);
	wr.sg_list = &s;
	wr.num_sge = 1;
	EXPECT_EQ(encode_send_wqe(slot_, no_inline, &wr), EINVAL);
}

TEST_F(WqeTest, InlineStillBoundByMaxSge)
{
	const auto data = pattern(8, 0);
	struct ibv_sge s[5];
	for (auto &e : s)
		e = sge_of(data, 0, 1);
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.sg_list = s;
	wr.num_sge = 5;	// max_sge is 4, 5 bytes fit inline easily
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), EINVAL);
	wr.num_sge = 4;
	EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0);
	EXPECT_EQ(wqe()->inline_len, 4u);
}

TEST_F(WqeTest, InlineOnUd)
{
	const auto data = pattern(40, 9);
	struct ibv_sge s = sge_of(data, 0, 40);
	struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(encode_send_wqe(slot_, kUd, &wr), 0);
	EXPECT_EQ(wqe()->wr.ud.ah_num, 0x00c0ffeeu);
	EXPECT_EQ(wqe()->inline_len, 40u);
	EXPECT_EQ(memcmp(slot_ + SROCE_SEND_WQE_HDR, data.data(), 40), 0);
}

// ---- header hygiene --------------------------------------------------------------------

TEST_F(WqeTest, HeaderFullyRewritten)
{
	// A previous WQE (or garbage) in the slot must not leak into
	// reserved fields or the unused part of the union.
	for (unsigned op = 0; op < 10; op++) {
		memset(slot_, 0xff, kStride);
		struct ibv_send_wr wr = wr_for(op);
		ASSERT_EQ(encode_send_wqe(slot_, kRc, &wr), 0) << op;
		EXPECT_EQ(wqe()->xrc_srqn, 0u) << op;
		EXPECT_EQ(wqe()->flags, 0) << op;
		switch (op) {
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			EXPECT_EQ(wqe()->wr.atomic.reserved, 0u);
			EXPECT_TRUE(union_zero_from(32)) << op;
			break;
		case IBV_WR_BIND_MW:
			EXPECT_TRUE(union_zero_from(32)) << op;
			break;
		case IBV_WR_SEND:
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_SEND_WITH_INV:
		case IBV_WR_LOCAL_INV:
			EXPECT_TRUE(union_zero_from(0)) << op;
			break;
		default:
			EXPECT_EQ(wqe()->wr.rdma.reserved, 0u);
			EXPECT_TRUE(union_zero_from(12)) << op;
			break;
		}
		if (op != IBV_WR_RDMA_WRITE_WITH_IMM && op != IBV_WR_SEND_WITH_IMM &&
		    op != IBV_WR_SEND_WITH_INV && op != IBV_WR_LOCAL_INV) {
			EXPECT_EQ(wqe()->ex.imm_data, 0u) << op;
		}
	}
}

// ---- XRC: the remote SRQ in every WQE of an XRC_SEND queue -----------------------------

TEST_F(WqeTest, XrcSendEveryOpcodeCarriesTheRemoteSrqn)
{
	for (unsigned op = 0; op < 11; op++) {
		if (!(kRcOpcodes & wr_bit(op)))
			continue;
		struct ibv_send_wr wr = wr_for(op);
		wr.qp_type.xrc.remote_srqn = 0xabc000 + op;
		memset(slot_, 0xff, kStride);
		ASSERT_EQ(encode_send_wqe(slot_, kXrc, &wr), 0) << op;
		EXPECT_EQ(wqe()->xrc_srqn, 0xabc000u + op) << op;
		EXPECT_EQ(wqe()->opcode, op);
		EXPECT_EQ(wqe()->wr_id, wr.wr_id) << op;
		// Otherwise the WQE RC would get: no address (that is UD's).
		if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM) {
			EXPECT_TRUE(union_zero_from(0)) << op;
		}
	}
	// The largest number the XRCETH carries, and zero.
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE);
	wr.qp_type.xrc.remote_srqn = 0xffffff;
	ASSERT_EQ(encode_send_wqe(slot_, kXrc, &wr), 0);
	EXPECT_EQ(wqe()->xrc_srqn, 0xffffffu);
	wr.qp_type.xrc.remote_srqn = 0;
	memset(slot_, 0xff, kStride);
	ASSERT_EQ(encode_send_wqe(slot_, kXrc, &wr), 0);
	EXPECT_EQ(wqe()->xrc_srqn, 0u);
}

TEST_F(WqeTest, XrcSrqnOver24BitsIsEinval)
{
	for (uint32_t n : {0x1000000u, 0x80000001u, 0xffffffffu}) {
		struct ibv_send_wr wr = wr_for(IBV_WR_SEND);
		wr.qp_type.xrc.remote_srqn = n;
		EXPECT_EQ(encode_send_wqe(slot_, kXrc, &wr), EINVAL) << n;
		// Not an XRC queue: the field is not read at all.
		EXPECT_EQ(encode_send_wqe(slot_, kRc, &wr), 0) << n;
	}
}

TEST_F(WqeTest, OtherQpTypesWriteZeroSrqn)
{
	const send_queue_caps *types[] = {&kRc, &kUc, &kUd, &kRcExt};
	for (const send_queue_caps *c : types) {
		for (unsigned op = 0; op < 11; op++) {
			if (check_send_opcode(*c, op))
				continue;
			struct ibv_send_wr wr = wr_for(op);
			wr.qp_type.xrc.remote_srqn = 0x123456;
			memset(slot_, 0xff, kStride);
			ASSERT_EQ(encode_send_wqe(slot_, *c, &wr), 0) << op;
			EXPECT_EQ(wqe()->xrc_srqn, 0u) << c->qp_type << " " << op;
		}
	}
}

TEST_F(WqeTest, XrcSendHasNoExtOpcodesOrUdAddress)
{
	// ATOMIC WRITE and FLUSH are RC's only (ext_send_opcodes).
	struct ibv_send_wr wr = wr_for(IBV_WR_RDMA_WRITE);
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	sge_[0].length = 8;
	wr.num_sge = 1;
	EXPECT_EQ(encode_send_wqe(slot_, kXrc, &wr), EINVAL);
	// A SEND without an AH is fine: the AH is UD's, not read here.
	wr = wr_for(IBV_WR_SEND);
	wr.wr.ud.ah = nullptr;
	EXPECT_EQ(encode_send_wqe(slot_, kXrc, &wr), 0);
}

TEST_F(WqeTest, BuilderSetsXrcSrqn)
{
	send_wqe_builder b;
	b.start(slot_, 5, IBV_WR_SEND, 0);
	EXPECT_EQ(wqe()->xrc_srqn, 0u);	// start() clears it
	b.set_xrc_srqn(0x654321);
	ASSERT_EQ(b.add_sge(kXrc, 0x1000, 16, 3), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->xrc_srqn, 0x654321u);
	memset(slot_, 0xff, kStride);
	b.start(slot_, 6, IBV_WR_SEND, 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->xrc_srqn, 0u);
}

// ---- the builder (extended API) ----------------------------------------------------------

TEST_F(WqeTest, BuilderSetSgeListReplaces)
{
	send_wqe_builder b;
	b.start(slot_, 42, IBV_WR_RDMA_WRITE, SROCE_WQE_F_SIGNALED);
	b.set_rdma(0x5000, 0x66);
	ASSERT_EQ(b.set_sge_list(kRc, sge_, 3), 0);
	ASSERT_EQ(b.set_sge_list(kRc, sge_, 2), 0);	// second call wins
	EXPECT_EQ(b.num_sge(), 2u);
	EXPECT_EQ(b.data_len(), uint64_t{sge_[0].length} + sge_[1].length);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->wr_id, 42u);
	EXPECT_EQ(wqe()->num_sge, 2);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_SIGNALED);
	EXPECT_EQ(wqe()->wr.rdma.remote_addr, 0x5000u);
	EXPECT_EQ(wqe_sges()[1].lkey, sge_[1].lkey);
	EXPECT_EQ(b.set_sge_list(kRc, sge_, 5), EINVAL);	// > max_sge
}

TEST_F(WqeTest, BuilderInlineAppendsAndReplaces)
{
	const auto a = pattern(100, 1), c = pattern(28, 2);
	send_wqe_builder b;
	b.start(slot_, 7, IBV_WR_SEND, 0);
	ASSERT_EQ(b.add_inline(kRc, a.data(), a.size()), 0);
	ASSERT_EQ(b.add_inline(kRc, c.data(), c.size()), 0);	// 128: full
	EXPECT_EQ(b.add_inline(kRc, c.data(), 1), EINVAL);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE);	// set by add_inline
	EXPECT_EQ(wqe()->inline_len, 128u);
	EXPECT_EQ(memcmp(slot_ + 64, a.data(), 100), 0);
	EXPECT_EQ(memcmp(slot_ + 164, c.data(), 28), 0);

	struct ibv_data_buf bufs[2] = {{const_cast<unsigned char *>(c.data()), 28},
				       {const_cast<unsigned char *>(a.data()), 10}};
	ASSERT_EQ(b.set_inline_list(kRc, bufs, 2), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->inline_len, 38u);
	EXPECT_EQ(memcmp(slot_ + 64, c.data(), 28), 0);
	EXPECT_EQ(memcmp(slot_ + 92, a.data(), 10), 0);
	// set_inline_list with nothing: an empty inline payload.
	ASSERT_EQ(b.set_inline_list(kRc, nullptr, 0), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE);
}

TEST_F(WqeTest, BuilderRejectsMixingAndWrongOpcodes)
{
	const auto a = pattern(8, 1);
	send_wqe_builder b;
	b.start(slot_, 1, IBV_WR_SEND, 0);
	ASSERT_EQ(b.add_sge(kRc, 1, 2, 3), 0);
	EXPECT_EQ(b.add_inline(kRc, a.data(), 8), EINVAL);	// SGEs already
	// Replacing the data with a list switches to inline cleanly.
	struct ibv_data_buf buf = {const_cast<unsigned char *>(a.data()), 8};
	ASSERT_EQ(b.set_inline_list(kRc, &buf, 1), 0);
	EXPECT_EQ(b.add_sge(kRc, 1, 2, 3), EINVAL);	// inline now
	// ... and back to SGEs.
	ASSERT_EQ(b.set_sge_list(kRc, sge_, 1), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->flags, 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->num_sge, 1);

	// start() with F_INLINE (ibv_post_send's IBV_SEND_INLINE): no SGEs.
	b.start(slot_, 1, IBV_WR_SEND, SROCE_WQE_F_INLINE);
	EXPECT_EQ(b.add_sge(kRc, 1, 2, 3), EINVAL);

	b.start(slot_, 1, IBV_WR_RDMA_READ, 0);
	EXPECT_EQ(b.add_inline(kRc, a.data(), 8), EINVAL);
	b.start(slot_, 1, IBV_WR_LOCAL_INV, 0);
	EXPECT_EQ(b.add_sge(kRc, 1, 2, 3), EINVAL);
	EXPECT_EQ(b.add_inline(kRc, a.data(), 8), EINVAL);
	b.start(slot_, 1, IBV_WR_BIND_MW, 0);
	EXPECT_EQ(b.add_sge(kRc, 1, 2, 3), EINVAL);

	// add_sge stops at max_sge.
	b.start(slot_, 1, IBV_WR_SEND, 0);
	for (uint32_t i = 0; i < kRc.max_sge; i++)
		ASSERT_EQ(b.add_sge(kRc, i, 1, i), 0);
	EXPECT_EQ(b.add_sge(kRc, 9, 1, 9), EINVAL);
	EXPECT_EQ(b.num_sge(), kRc.max_sge);
}

TEST_F(WqeTest, BuilderAtomicChecks)
{
	send_wqe_builder b;
	b.start(slot_, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0);
	EXPECT_EQ(b.set_atomic(0x1004, 1, 2, 3), EINVAL);
	ASSERT_EQ(b.set_atomic(0x1008, 1, 2, 3), 0);
	EXPECT_EQ(b.finish(), EINVAL);	// no result buffer yet
	ASSERT_EQ(b.add_sge(kRc, 0x9000, 8, 5), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->wr.atomic.remote_addr, 0x1008u);
	EXPECT_EQ(wqe()->wr.atomic.compare_add, 2u);
	EXPECT_EQ(wqe()->wr.atomic.swap, 3u);
	EXPECT_EQ(wqe()->wr.atomic.rkey, 1u);
}

// IBV_SEND_INLINE with an SGE list (ibv_wr_set_sge* under wr_flags
// INLINE): the bytes the list points at, copied in order; lkeys unused.
TEST_F(WqeTest, BuilderInlineSgeListCopiesThePointedBytes)
{
	const auto data = pattern(200, 21);
	struct ibv_sge s[3] = {sge_of(data, 30, 40), sge_of(data, 0, 0),
			       sge_of(data, 150, 50)};
	send_wqe_builder b;
	b.start(slot_, 9, IBV_WR_RDMA_WRITE, SROCE_WQE_F_INLINE | SROCE_WQE_F_FENCE);
	ASSERT_EQ(b.set_inline_sge_list(kRc, s, 3), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE | SROCE_WQE_F_FENCE);
	EXPECT_EQ(wqe()->inline_len, 90u);
	EXPECT_EQ(wqe()->num_sge, 0);
	EXPECT_EQ(memcmp(slot_ + SROCE_SEND_WQE_HDR, data.data() + 30, 40), 0);
	EXPECT_EQ(memcmp(slot_ + SROCE_SEND_WQE_HDR + 40, data.data() + 150, 50), 0);
	EXPECT_TRUE(untouched(SROCE_SEND_WQE_HDR + 90, kStride));

	// A second list replaces the first.
	ASSERT_EQ(b.set_inline_sge_list(kRc, &s[2], 1), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->inline_len, 50u);
	EXPECT_EQ(memcmp(slot_ + SROCE_SEND_WQE_HDR, data.data() + 150, 50), 0);
	// An empty list: an empty inline payload, INLINE still set.
	ASSERT_EQ(b.set_inline_sge_list(kRc, nullptr, 0), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->inline_len, 0u);
	EXPECT_EQ(wqe()->flags, SROCE_WQE_F_INLINE | SROCE_WQE_F_FENCE);

	// Bounded by max_sge (4) and max_inline (128), like ibv_post_send.
	struct ibv_sge five[5];
	for (auto &e : five)
		e = sge_of(data, 0, 1);
	EXPECT_EQ(b.set_inline_sge_list(kRc, five, 5), EINVAL);
	struct ibv_sge big[2] = {sge_of(data, 0, 100), sge_of(data, 100, 29)};
	EXPECT_EQ(b.set_inline_sge_list(kRc, big, 2), EINVAL);
	big[1].length = 28;
	EXPECT_EQ(b.set_inline_sge_list(kRc, big, 2), 0);
	// Not for an opcode that scatters (READ) or has no data.
	b.start(slot_, 9, IBV_WR_RDMA_READ, 0);
	EXPECT_EQ(b.set_inline_sge_list(kRc, s, 1), EINVAL);
	b.start(slot_, 9, IBV_WR_LOCAL_INV, 0);
	EXPECT_EQ(b.set_inline_sge_list(kRc, s, 1), EINVAL);
}

TEST_F(WqeTest, BuilderBindMwChecksAndFields)
{
	struct ibv_mw_bind_info bi = {};
	bi.mr = &mr_;
	bi.addr = 0xabc000;
	bi.length = 0x1000;
	bi.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	send_wqe_builder b;
	b.start(slot_, 3, IBV_WR_BIND_MW, 0);
	EXPECT_EQ(b.set_bind_mw(nullptr, 0x42, &bi), EINVAL);
	EXPECT_EQ(b.set_bind_mw(&mw_, 0x42, nullptr), EINVAL);
	bi.mr = nullptr;
	EXPECT_EQ(b.set_bind_mw(&mw_, 0x42, &bi), EINVAL);
	bi.mr = &mr_;
	ASSERT_EQ(b.set_bind_mw(&mw_, 0x42, &bi), 0);
	ASSERT_EQ(b.finish(), 0);
	EXPECT_EQ(wqe()->opcode, SROCE_WR_BIND_MW);
	EXPECT_EQ(wqe()->wr.bind_mw.addr, 0xabc000u);
	EXPECT_EQ(wqe()->wr.bind_mw.length, 0x1000u);
	EXPECT_EQ(wqe()->wr.bind_mw.mw_handle, mw_.handle);
	EXPECT_EQ(wqe()->wr.bind_mw.rkey, 0x42u);
	EXPECT_EQ(wqe()->wr.bind_mw.mr_lkey, mr_.lkey);
	EXPECT_EQ(wqe()->wr.bind_mw.access, unsigned(IBV_ACCESS_REMOTE_READ));
}

// ---- receive WQEs ----------------------------------------------------------------------

TEST_F(WqeTest, RecvWqe)
{
	const recv_queue_caps caps = {7, 128};
	ASSERT_TRUE(recv_caps_ok(caps));
	struct ibv_recv_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xfedcba9876543210ull;
	wr.sg_list = sge_;
	wr.num_sge = 3;
	ASSERT_EQ(encode_recv_wqe(slot_, caps, &wr), 0);
	auto *r = reinterpret_cast<const struct sroce_recv_wqe *>(slot_);
	EXPECT_EQ(r->wr_id, 0xfedcba9876543210ull);
	EXPECT_EQ(r->num_sge, 3u);
	EXPECT_EQ(r->reserved, 0u);
	auto *s = reinterpret_cast<const struct sroce_sge *>(slot_ + SROCE_RECV_WQE_HDR);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(s[i].addr, sge_[i].addr);
		EXPECT_EQ(s[i].length, sge_[i].length);
		EXPECT_EQ(s[i].lkey, sge_[i].lkey);
	}
	EXPECT_TRUE(untouched(SROCE_RECV_WQE_HDR + 3 * 16, kStride));

	// Exactly max, then the errors.
	wr.num_sge = 7;
	poison();
	ASSERT_EQ(encode_recv_wqe(slot_, caps, &wr), 0);
	EXPECT_EQ(r->num_sge, 7u);
	EXPECT_EQ(s[6].lkey, sge_[6].lkey);
	EXPECT_TRUE(untouched(SROCE_RECV_WQE_HDR + 7 * 16, kStride));
	wr.num_sge = 8;
	EXPECT_EQ(encode_recv_wqe(slot_, caps, &wr), EINVAL);
	wr.num_sge = -1;
	EXPECT_EQ(encode_recv_wqe(slot_, caps, &wr), EINVAL);
	wr.num_sge = 1;
	wr.sg_list = nullptr;
	EXPECT_EQ(encode_recv_wqe(slot_, caps, &wr), EINVAL);
	// Zero SGEs: a receive for a zero-length message.
	wr.num_sge = 0;
	memset(slot_, 0xff, kStride);
	ASSERT_EQ(encode_recv_wqe(slot_, caps, &wr), 0);
	EXPECT_EQ(r->num_sge, 0u);
	EXPECT_EQ(r->reserved, 0u);
	EXPECT_EQ(r->wr_id, 0xfedcba9876543210ull);
}

TEST_F(WqeTest, WriteRecvWqeDirect)
{
	const recv_queue_caps caps = {3, 64};
	ASSERT_EQ(write_recv_wqe(slot_, caps, 5, sge_, 3), 0);
	auto *r = reinterpret_cast<const struct sroce_recv_wqe *>(slot_);
	EXPECT_EQ(r->wr_id, 5u);
	EXPECT_EQ(r->num_sge, 3u);
	EXPECT_TRUE(untouched(64, kStride));	// fills a 64-byte slot exactly
	EXPECT_EQ(write_recv_wqe(slot_, caps, 5, sge_, 4), EINVAL);
}
