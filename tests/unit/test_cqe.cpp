// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// provider/cqe.hpp: struct sroce_cqe -> struct ibv_wc, field by field,
// and CQEs read through a consumer ring the way ibv_poll_cq will.
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <gtest/gtest.h>

#include "cqe.hpp"
#include "ring.hpp"

using namespace sroce;

namespace {

// Every field a different, recognisable value.
struct sroce_cqe sample_cqe()
{
	struct sroce_cqe c;
	memset(&c, 0, sizeof(c));
	c.wr_id = 0x0102030405060708ull;
	c.status = IBV_WC_SUCCESS;
	c.opcode = IBV_WC_RECV;
	c.wc_flags = IBV_WC_GRH | IBV_WC_WITH_IMM;
	c.byte_len = 0x11223344;
	c.qp_num = 0x00abcdef;
	c.src_qp = 0x00fedcba;
	c.ex.imm_data = htonl(0xcafef00d);
	c.vendor_err = 0x55667788;
	c.pkey_index = 0x1234;
	c.slid = 0x4321;
	c.sl = 0x5;
	c.dlid_path_bits = 0x7f;
	c.port_num = 1;
	c.network_hdr_type = 3;
	c.timestamp = 0x8877665544332211ull;
	return c;
}

struct ibv_wc poisoned_wc()
{
	struct ibv_wc wc;
	memset(&wc, 0xee, sizeof(wc));
	return wc;
}

} // namespace

TEST(Cqe, DecodesEveryField)
{
	const struct sroce_cqe c = sample_cqe();
	struct ibv_wc wc = poisoned_wc();
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.wr_id, 0x0102030405060708ull);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.opcode, IBV_WC_RECV);
	EXPECT_EQ(wc.vendor_err, 0x55667788u);
	EXPECT_EQ(wc.byte_len, 0x11223344u);
	EXPECT_EQ(wc.imm_data, htonl(0xcafef00d));
	EXPECT_EQ(wc.qp_num, 0x00abcdefu);
	EXPECT_EQ(wc.src_qp, 0x00fedcbau);
	EXPECT_EQ(wc.wc_flags, unsigned(IBV_WC_GRH | IBV_WC_WITH_IMM));
	EXPECT_EQ(wc.pkey_index, 0x1234);
	EXPECT_EQ(wc.slid, 0x4321);
	EXPECT_EQ(wc.sl, 0x9);	// GRH + IPv6: the packet type, not c.sl
	EXPECT_EQ(wc.dlid_path_bits, 0x7f);
}

TEST(Cqe, DecodeWritesEveryWcByteItOwns)
{
	// Two different poisons give the same WC: nothing is left over.
	const struct sroce_cqe c = sample_cqe();
	struct ibv_wc a, b;
	memset(&a, 0x00, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	decode_cqe(&c, &a);
	decode_cqe(&c, &b);
	// Compare up to the end of the last member (the tail is padding).
	const size_t used = offsetof(struct ibv_wc, dlid_path_bits) + 1;
	EXPECT_EQ(memcmp(&a, &b, used), 0);
}

TEST(Cqe, ImmediateAndInvalidateDependOnFlags)
{
	struct sroce_cqe c = sample_cqe();
	struct ibv_wc wc;

	c.wc_flags = IBV_WC_WITH_IMM;
	c.ex.imm_data = htonl(0x01020304);
	wc = poisoned_wc();
	decode_cqe(&c, &wc);
	const unsigned char imm[4] = {1, 2, 3, 4};	// network order kept
	EXPECT_EQ(memcmp(&wc.imm_data, imm, 4), 0);

	c.wc_flags = IBV_WC_WITH_INV;
	c.ex.invalidated_rkey = 0x00c0ffee;
	wc = poisoned_wc();
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.invalidated_rkey, 0x00c0ffeeu);
	EXPECT_EQ(wc.wc_flags, unsigned(IBV_WC_WITH_INV));

	// Neither flag: the union is 0, not whatever the ring held.
	for (unsigned flags : {0u, unsigned(IBV_WC_GRH), unsigned(IBV_WC_IP_CSUM_OK)}) {
		c.wc_flags = static_cast<uint16_t>(flags);
		wc = poisoned_wc();
		decode_cqe(&c, &wc);
		EXPECT_EQ(wc.imm_data, 0u) << flags;
		EXPECT_EQ(wc.wc_flags, flags);
	}
	// The raw accessors give the union regardless (cq_ex checks flags).
	EXPECT_EQ(cqe_invalidated_rkey(&c), 0x00c0ffeeu);
	EXPECT_EQ(cqe_imm_data(&c), c.ex.imm_data);
}

TEST(Cqe, EveryKnownStatusPassesThrough)
{
	struct sroce_cqe c = sample_cqe();
	for (unsigned s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; s++) {
		c.status = static_cast<uint8_t>(s);
		struct ibv_wc wc = poisoned_wc();
		decode_cqe(&c, &wc);
		EXPECT_EQ(static_cast<unsigned>(wc.status), s);
		EXPECT_EQ(static_cast<unsigned>(cqe_status(&c)), s);
	}
}

TEST(Cqe, UnknownStatusIsAnErrorNeverSuccess)
{
	struct sroce_cqe c = sample_cqe();
	for (unsigned s : {unsigned(IBV_WC_TM_RNDV_INCOMPLETE) + 1, 64u, 128u, 255u}) {
		c.status = static_cast<uint8_t>(s);
		struct ibv_wc wc = poisoned_wc();
		decode_cqe(&c, &wc);
		EXPECT_EQ(wc.status, IBV_WC_GENERAL_ERR) << s;
		// The rest is still decoded (wr_id lets the app find its WR).
		EXPECT_EQ(wc.wr_id, c.wr_id);
	}
}

TEST(Cqe, OpcodesPassThrough)
{
	struct sroce_cqe c = sample_cqe();
	for (enum ibv_wc_opcode op :
	     {IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP,
	      IBV_WC_FETCH_ADD, IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_TSO,
	      IBV_WC_ATOMIC_WRITE, IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM}) {
		c.opcode = static_cast<uint8_t>(op);
		struct ibv_wc wc = poisoned_wc();
		decode_cqe(&c, &wc);
		EXPECT_EQ(wc.opcode, op);
		EXPECT_EQ(cqe_opcode(&c), op);
		EXPECT_EQ((wc.opcode & IBV_WC_RECV) != 0, op >= IBV_WC_RECV);
	}
}

TEST(Cqe, PerFieldAccessors)
{
	const struct sroce_cqe c = sample_cqe();
	EXPECT_EQ(cqe_wr_id(&c), c.wr_id);
	EXPECT_EQ(cqe_status(&c), IBV_WC_SUCCESS);
	EXPECT_EQ(cqe_opcode(&c), IBV_WC_RECV);
	EXPECT_EQ(cqe_vendor_err(&c), 0x55667788u);
	EXPECT_EQ(cqe_byte_len(&c), 0x11223344u);
	EXPECT_EQ(cqe_qp_num(&c), 0x00abcdefu);
	EXPECT_EQ(cqe_src_qp(&c), 0x00fedcbau);
	EXPECT_EQ(cqe_wc_flags(&c), unsigned(IBV_WC_GRH | IBV_WC_WITH_IMM));
	EXPECT_EQ(cqe_pkey_index(&c), 0x1234);
	EXPECT_EQ(cqe_slid(&c), 0x4321);
	EXPECT_EQ(cqe_sl(&c), 0x9);
	EXPECT_EQ(cqe_dlid_path_bits(&c), 0x7f);
	EXPECT_EQ(cqe_timestamp(&c), 0x8877665544332211ull);
}

// A RoCE v2 receive with a GRH reports its packet type in the SL as
// hardware does (0x8 UDP | 0x2 IPv4 or 0x1 IPv6): UCX's ud_verbs finds the
// destination address in the GRH area by it.  Anything else keeps its SL.
TEST(Cqe, SlCarriesRocePacketType)
{
	struct sroce_cqe c = sample_cqe();
	struct ibv_wc wc = poisoned_wc();

	c.network_hdr_type = SROCE_NETWORK_IPV4;
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.sl, 0xa);
	EXPECT_EQ(cqe_sl(&c), 0xa);
	EXPECT_EQ(wc.sl & 0x7, 2);	// what UCX 1.13 tests: IPv4

	c.network_hdr_type = SROCE_NETWORK_IPV6;
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.sl, 0x9);

	c.wc_flags = IBV_WC_WITH_IMM;	// no GRH (an RC receive)
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.sl, 0x5);

	c.wc_flags = IBV_WC_GRH;	// a type this provider does not know
	c.network_hdr_type = 0x77;
	decode_cqe(&c, &wc);
	EXPECT_EQ(wc.sl, 0x5);
}

TEST(Cqe, PollThroughConsumerRing)
{
	// A CQ ring as the kernel lays it out: 8 CQEs of 64 bytes.
	constexpr uint32_t kEntries = 8;
	const uint64_t len = ring_mapping_length(kEntries, SROCE_CQE_SIZE, 4096);
	void *mem = aligned_alloc(4096, len);
	ASSERT_NE(mem, nullptr);
	memset(mem, 0, len);
	auto *hdr = static_cast<struct sroce_ring_hdr *>(mem);
	hdr->prod = hdr->cons = 0xfffffffcu;
	consumer_ring cq;
	ASSERT_TRUE(cq.attach(mem, len, kEntries, SROCE_CQE_SIZE));

	// The kernel writes 6 completions, crossing the index wrap.
	auto *cqes = reinterpret_cast<struct sroce_cqe *>(
		static_cast<char *>(mem) + SROCE_RING_DATA_OFFSET);
	for (uint32_t i = 0; i < 6; i++) {
		struct sroce_cqe c = sample_cqe();
		c.wr_id = 1000 + i;
		c.byte_len = i;
		cqes[(0xfffffffcu + i) & (kEntries - 1)] = c;
	}
	hdr->prod = 0xfffffffcu + 6;

	// ibv_poll_cq(cq, 4, wc) then the rest.
	struct ibv_wc wc[4];
	int got = 0;
	uint32_t avail = cq.available();
	ASSERT_EQ(avail, 6u);
	for (; got < 4 && static_cast<uint32_t>(got) < avail; got++)
		decode_cqe(static_cast<const struct sroce_cqe *>(cq.elem(got)), &wc[got]);
	cq.consume(got);
	ASSERT_EQ(got, 4);
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(wc[i].wr_id, 1000u + i);
		EXPECT_EQ(wc[i].byte_len, static_cast<uint32_t>(i));
	}
	EXPECT_EQ(hdr->cons, 0u);	// wrapped
	ASSERT_EQ(cq.available(), 2u);
	decode_cqe(static_cast<const struct sroce_cqe *>(cq.peek()), &wc[0]);
	EXPECT_EQ(wc[0].wr_id, 1004u);
	cq.consume();
	decode_cqe(static_cast<const struct sroce_cqe *>(cq.peek()), &wc[0]);
	EXPECT_EQ(wc[0].wr_id, 1005u);
	cq.consume();
	EXPECT_EQ(cq.peek(), nullptr);
	EXPECT_EQ(hdr->cons, 2u);
	free(mem);
}
