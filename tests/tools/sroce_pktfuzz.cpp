// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_pktfuzz - hostile RoCEv2 packets at a sroce device, from another
// network namespace, while real traffic runs.
//
//   sroce_pktfuzz -t DST_IP -s SRC_IP [-n COUNT] [--seed N] [--mtu 1024]
//                 [--live QPN:RQ_PSN:SQ_PSN]... [--victim DEV --victim-gid IDX]
//
// Every datagram goes out of a plain UDP socket to port 4791 of DST_IP, so
// the kernel builds IP and UDP; the tool seals each one with the ICRC the
// receiver will compute (kernel/sroce_icrc.c): CRC-32 (reflected, poly
// 0xEDB88320) seeded with eight 0xff bytes, over the IPv4 header with TOS,
// TTL and checksum masked to ones, the UDP header with its checksum masked,
// the BTH with byte 4 masked, then the rest of the headers, payload and pad;
// inverted, little-endian. The IPv4 header a DF-marked datagram from an
// unconnected UDP socket gets is known: version 4, IHL 5, ID 0, DF, UDP,
// SRC_IP -> DST_IP; what the ICRC masks (TOS, TTL, checksum) need not be.
// IPv6 (both addresses IPv6): traffic class, flow label and hop limit are
// masked, the rest is known.
//
// Targets: --live names the QPs of a real run (its PSNs from "rdma resource
// show qp -dd"); they only ever get PSNs far out of their window (2^22 or
// more away), so a spoofed packet is answered as a duplicate, dropped as out
// of sequence or stale, and never executed: the real run must go on byte
// for byte. (RoCE has no authentication: an in-window forgery would be
// executed by any implementation.) In-window fuzzing goes to the tool's own
// "victim" QPs (--victim: RC, UC and UD QPs on the device under test, with
// one MR open to everything, connected to a peer that never answers), which
// are reset and re-armed every few hundred packets. Dead QPNs are numbers
// no sroce QP can have (beyond 16 + 16384) and QP 0.
//
// Classes (see usage() and Documentation/testing.rst): some have an exact
// expected fate, printed as "expect COUNTER N" lines; the test compares
// them with the device's hw counters.
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <infiniband/verbs.h>

#include "verbs_util.hpp"

namespace {

// ---- wire constants (kernel/sroce_pkt.h) ---------------------------------

constexpr uint16_t ROCE_PORT = 4791;
constexpr int BTH = 12, RETH = 16, AETH = 4, ATMETH = 28, ATMACK = 8, IMMDT = 4, IETH = 4,
	      DETH = 8, FETH = 4, XRCETH = 4, ICRC = 4;
constexpr uint32_t PSN_MASK = 0xffffff;
constexpr uint32_t MCAST_QPN = 0xffffff;
constexpr uint32_t GSI_QKEY = 0x80010000;
constexpr size_t MAX_LEN = 1400;		// BTH..pad: fits a 1500-byte MTU
constexpr uint32_t DEAD_QPN_MIN = 0x10000;	// sroce QPNs are 1 and 16..16+16383

enum : uint32_t {
	M_RETH = 1 << 0, M_AETH = 1 << 1, M_ATMETH = 1 << 2, M_ATMACK = 1 << 3,
	M_IMMDT = 1 << 4, M_IETH = 1 << 5, M_DETH = 1 << 6, M_PAYLOAD = 1 << 7,
	M_REQ = 1 << 8, M_RESP = 1 << 9, M_FIRST = 1 << 10, M_MIDDLE = 1 << 11,
	M_LAST = 1 << 12, M_ONLY = 1 << 13, M_READ = 1 << 14, M_ATOMIC = 1 << 15,
	M_FETH = 1 << 16, M_ATOMIC_WRITE = 1 << 17, M_XRCETH = 1 << 18,
};

enum : uint8_t {
	OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM, OP_SEND_ONLY,
	OP_SEND_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_LAST_IMM,
	OP_WRITE_ONLY, OP_WRITE_ONLY_IMM, OP_READ_REQ, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
	OP_READ_RESP_LAST, OP_READ_RESP_ONLY, OP_ACK, OP_ATOMIC_ACK, OP_CMP_SWAP, OP_FETCH_ADD,
	OP_SEND_LAST_INV = 0x16, OP_SEND_ONLY_INV = 0x17,
	OP_FLUSH = 0x1c, OP_ATOMIC_WRITE = 0x1d,	// IBTA 1.5
	UC = 0x20, UD = 0x60, XRC = 0xa0,
};

// The opcode table of kernel/sroce_opcode.c: 0 = not an opcode sroce takes.
uint32_t op_mask[256];

void init_opcodes()
{
	const uint32_t send = M_REQ | M_PAYLOAD, write = M_REQ | M_PAYLOAD,
		       rresp = M_RESP | M_READ | M_PAYLOAD;
	for (int t : {0, (int)UC}) {
		op_mask[t | OP_SEND_FIRST] = send | M_FIRST;
		op_mask[t | OP_SEND_MIDDLE] = send | M_MIDDLE;
		op_mask[t | OP_SEND_LAST] = send | M_LAST;
		op_mask[t | OP_SEND_LAST_IMM] = send | M_LAST | M_IMMDT;
		op_mask[t | OP_SEND_ONLY] = send | M_ONLY;
		op_mask[t | OP_SEND_ONLY_IMM] = send | M_ONLY | M_IMMDT;
		op_mask[t | OP_WRITE_FIRST] = write | M_FIRST | M_RETH;
		op_mask[t | OP_WRITE_MIDDLE] = write | M_MIDDLE;
		op_mask[t | OP_WRITE_LAST] = write | M_LAST;
		op_mask[t | OP_WRITE_LAST_IMM] = write | M_LAST | M_IMMDT;
		op_mask[t | OP_WRITE_ONLY] = write | M_ONLY | M_RETH;
		op_mask[t | OP_WRITE_ONLY_IMM] = write | M_ONLY | M_RETH | M_IMMDT;
	}
	op_mask[OP_READ_REQ] = M_REQ | M_READ | M_ONLY | M_RETH;
	op_mask[OP_READ_RESP_FIRST] = rresp | M_FIRST | M_AETH;
	op_mask[OP_READ_RESP_MIDDLE] = rresp | M_MIDDLE;
	op_mask[OP_READ_RESP_LAST] = rresp | M_LAST | M_AETH;
	op_mask[OP_READ_RESP_ONLY] = rresp | M_ONLY | M_AETH;
	op_mask[OP_ACK] = M_RESP | M_ONLY | M_AETH;
	op_mask[OP_ATOMIC_ACK] = M_RESP | M_ATOMIC | M_ONLY | M_AETH | M_ATMACK;
	op_mask[OP_CMP_SWAP] = M_REQ | M_ATOMIC | M_ONLY | M_ATMETH;
	op_mask[OP_FETCH_ADD] = M_REQ | M_ATOMIC | M_ONLY | M_ATMETH;
	op_mask[OP_SEND_LAST_INV] = send | M_LAST | M_IETH;
	op_mask[OP_SEND_ONLY_INV] = send | M_ONLY | M_IETH;
	op_mask[OP_FLUSH] = M_REQ | M_ONLY | M_FETH | M_RETH;
	op_mask[OP_ATOMIC_WRITE] = M_REQ | M_ONLY | M_RETH | M_PAYLOAD | M_ATOMIC_WRITE;
	op_mask[UD | OP_SEND_ONLY] = send | M_ONLY | M_DETH;
	op_mask[UD | OP_SEND_ONLY_IMM] = send | M_ONLY | M_DETH | M_IMMDT;
	// XRC: RC's operations up to SEND ONLY with invalidate; requests
	// carry an XRCETH (they go to XRC targets only: sroce's fuzzed QPs
	// are none, so every one is of the wrong transport for its QP).
	for (int op = OP_SEND_FIRST; op <= OP_SEND_ONLY_INV; op++)
		if (op_mask[op])
			op_mask[XRC | op] = op_mask[op] | (op_mask[op] & M_REQ ? M_XRCETH : 0U);
}

int hdr_len(uint8_t op)
{
	uint32_t m = op_mask[op];
	return BTH + (m & M_RETH ? RETH : 0) + (m & M_AETH ? AETH : 0) +
	       (m & M_ATMETH ? ATMETH : 0) + (m & M_ATMACK ? ATMACK : 0) +
	       (m & M_IMMDT ? IMMDT : 0) + (m & M_IETH ? IETH : 0) + (m & M_DETH ? DETH : 0) +
	       (m & M_FETH ? FETH : 0) + (m & M_XRCETH ? XRCETH : 0);
}

// ---- ICRC -----------------------------------------------------------------

uint32_t crc_table[256];
uint32_t icrc_seed;

// crc32_le() of the kernel: reflected, no pre- or post-inversion.
uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

void init_crc()
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	icrc_seed = crc32_le(~0U, lrh, sizeof(lrh));
}

// The two ends, as GIDs (IPv4: ::ffff:a.b.c.d), and the source port.
struct {
	bool v6;
	uint8_t src[16], dst[16];
	uint16_t sport;
} ends;

// ICRC of @len bytes from the BTH (headers, payload, pad; not the ICRC) as
// the receiver computes it over the IP/UDP headers the kernel gave them.
uint32_t icrc(const uint8_t *bth, size_t len)
{
	uint8_t ps[40 + 8 + BTH];
	size_t l3 = ends.v6 ? 40 : 20;
	uint16_t ulen = 8 + len + ICRC;

	if (ends.v6) {
		ps[0] = 0x6f;			// version 6; traffic class and
		ps[1] = ps[2] = ps[3] = 0xff;	// flow label: masked
		ps[4] = ulen >> 8, ps[5] = ulen;	// payload length
		ps[6] = IPPROTO_UDP;
		ps[7] = 0xff;			// hop limit: masked
		memcpy(ps + 8, ends.src, 16);
		memcpy(ps + 24, ends.dst, 16);
	} else {
		uint16_t tot = 20 + ulen;

		ps[0] = 0x45;
		ps[1] = 0xff;			// TOS: masked
		ps[2] = tot >> 8, ps[3] = tot;
		ps[4] = ps[5] = 0;		// ID 0: DF, unconnected socket
		ps[6] = 0x40, ps[7] = 0;	// DF
		ps[8] = 0xff;			// TTL: masked
		ps[9] = IPPROTO_UDP;
		ps[10] = ps[11] = 0xff;		// header checksum: masked
		memcpy(ps + 12, ends.src + 12, 4);
		memcpy(ps + 16, ends.dst + 12, 4);
	}
	uint8_t *u = ps + l3;
	u[0] = ends.sport >> 8, u[1] = ends.sport;
	u[2] = ROCE_PORT >> 8, u[3] = ROCE_PORT & 0xff;
	u[4] = ulen >> 8, u[5] = ulen;
	u[6] = u[7] = 0xff;			// UDP checksum: masked
	memcpy(u + 8, bth, BTH);
	u[8 + 4] = 0xff;			// FECN, BECN, reserved
	uint32_t crc = crc32_le(icrc_seed, ps, l3 + 8 + BTH);
	crc = crc32_le(crc, bth + BTH, len - BTH);
	return ~crc;
}

// ---- random ---------------------------------------------------------------

uint64_t rng_state;

uint64_t rnd()
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint32_t rn(uint32_t n) { return n ? rnd() % n : 0; }
bool chance(int percent) { return rn(100) < (uint32_t)percent; }

void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8, p[1] = v; }
void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16), put16(p + 2, v); }
void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32), put32(p + 4, v); }

// A length with the edges sroce must get right, or anything.
uint32_t rnd_len(uint32_t mtu)
{
	switch (rn(8)) {
	case 0: return 0;
	case 1: return rn(4) + 1;
	case 2: return mtu - 1 + rn(3);
	case 3: return (uint32_t)rnd();
	case 4: return 0x80000000U - rn(2);
	default: return rn(3 * mtu);
	}
}

// ---- the packet -----------------------------------------------------------

struct pkt {
	uint8_t b[2048];
	size_t len = 0;		// from the BTH to the end of the pad
	bool bad_icrc = false;
};

struct fields {
	uint8_t op = 0;
	uint32_t qpn = 0, psn = 0;
	bool ackreq = false, se = false;
	uint16_t pkey = 0xffff;
	uint64_t va = 0;
	uint32_t rkey = 0, dmalen = 0;
	uint8_t syndrome = 0x1f;
	uint32_t msn = 0, qkey = 0, sqpn = 0;
	uint32_t paylen = 0;
};

// A packet the parser takes: the headers of f.op, f.paylen bytes of
// payload (if the opcode has one) and the pad that goes with it.
void build(pkt &p, const fields &f)
{
	uint32_t m = op_mask[f.op];
	int hl = hdr_len(f.op);
	uint32_t paylen = m & M_PAYLOAD ? std::min<uint32_t>(f.paylen, 1400) : 0;
	uint32_t pad = (4 - (paylen & 3)) & 3;
	uint8_t *h = p.b + BTH;

	p.b[0] = f.op;
	p.b[1] = 0x40 | pad << 4 | (f.se ? 0x80 : 0);
	put16(p.b + 2, f.pkey);
	put32(p.b + 4, f.qpn & PSN_MASK);
	put32(p.b + 8, (f.psn & PSN_MASK) | (f.ackreq ? 0x80000000U : 0));
	if (m & M_DETH) {
		put32(h, f.qkey), put32(h + 4, f.sqpn & PSN_MASK);
		h += DETH;
	}
	if (m & M_XRCETH) {
		put32(h, (uint32_t)rnd());
		h += XRCETH;
	}
	if (m & M_FETH) {
		// Placement and selectivity mostly known, reserved bits sometimes.
		put32(h, chance(80) ? rn(4) | rn(3) << 4 : (uint32_t)rnd());
		h += FETH;
	}
	if (m & M_RETH) {
		put64(h, f.va), put32(h + 8, f.rkey), put32(h + 12, f.dmalen);
		h += RETH;
	}
	if (m & M_ATMETH) {
		put64(h, f.va), put32(h + 8, f.rkey), put64(h + 12, rnd()), put64(h + 20, rnd());
		h += ATMETH;
	}
	if (m & M_AETH) {
		put32(h, (uint32_t)f.syndrome << 24 | (f.msn & PSN_MASK));
		h += AETH;
	}
	if (m & M_ATMACK) {
		put64(h, rnd());
		h += ATMACK;
	}
	if (m & M_IMMDT) {
		put32(h, (uint32_t)rnd());
		h += IMMDT;
	}
	if (m & M_IETH)
		put32(h, (uint32_t)rnd());
	for (uint32_t i = 0; i < paylen; i++)
		p.b[hl + i] = (uint8_t)(i * 7 + f.psn);
	memset(p.b + hl + paylen, 0, pad);
	p.len = hl + paylen + pad;
	p.bad_icrc = false;
}

// ---- targets --------------------------------------------------------------

struct live_qp {
	uint32_t qpn, rq_psn, sq_psn;
};

struct opts {
	const char *dst = nullptr, *src = nullptr;
	uint64_t count = 100000;
	uint64_t seed = 0;
	uint32_t mtu = 1024;
	std::vector<live_qp> live;
	const char *victim_dev = nullptr;
	int victim_gid = -1;
	uint32_t victim_cycle = 400;	// packets between victim resets
	int batch = 32;
	pid_t while_pid = 0;
} o;

// A PSN at least 2^22 from @base either way: never in a window that a
// QP which started at @base can reach within this run (as long as it moves
// fewer than 2^22 PSNs: 4 GiB at a 1024-byte MTU).
uint32_t far_psn(uint32_t base)
{
	return (base + (1U << 23) + rn(1U << 23) - (1U << 22)) & PSN_MASK;
}

uint32_t dead_qpn()
{
	return chance(10) ? 0 : DEAD_QPN_MIN + rn(MCAST_QPN - DEAD_QPN_MIN);
}

// ---- the victim: in-window targets the tool owns ------------------------

constexpr uint32_t VICTIM_MR = 64 * 1024;
constexpr uint32_t VICTIM_PEER_QPN = 0xdead01;	// no one: answers go nowhere
constexpr uint32_t VICTIM_QKEY = 0x5ec0de;
constexpr int VICTIM_RECVS = 64;

struct victim {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	uint8_t *buf = nullptr;
	ibv_qp *rc = nullptr, *uc = nullptr, *ud = nullptr;
	uint32_t rc_epsn = 0, uc_epsn = 0;	// what the responder expects (guessed)
	uint32_t sq_psn = 0, sq_npsn = 0;	// PSNs the requester has out
	uint32_t read_psn = 0, read_npsn = 0;	// the last READ we had executed
	uint64_t resets = 0, completions = 0, errors = 0;
	ibv_gid peer_gid{};
} v;

bool victim_on() { return v.rc != nullptr; }

void die(const char *what)
{
	fprintf(stderr, "sroce_pktfuzz: %s: %s\n", what, strerror(errno));
	exit(2);
}

ibv_qp *victim_qp(ibv_qp_type t)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = v.cq;
	ia.recv_cq = v.cq;
	ia.qp_type = t;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = VICTIM_RECVS;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 2;
	ibv_qp *qp = ibv_create_qp(v.pd, &ia);
	if (!qp)
		die("ibv_create_qp (victim)");
	return qp;
}

void victim_post_recvs(ibv_qp *qp)
{
	for (int i = 0; i < VICTIM_RECVS; i++) {
		// Two SGEs at the MR's far end, apart: SEND data goes there.
		ibv_sge sge[2] = {
			{(uint64_t)(uintptr_t)v.buf + VICTIM_MR / 2, 1500, v.mr->lkey},
			{(uint64_t)(uintptr_t)v.buf + VICTIM_MR / 2 + 4096, 3000, v.mr->lkey},
		};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = i;
		wr.sg_list = sge;
		wr.num_sge = 2;
		if (ibv_post_recv(qp, &wr, &bad))
			break;
	}
}

// What the victim RC QP's requester sends to a peer that never answers:
// a window of PSNs the fuzzer then answers in.
void victim_post_sends()
{
	struct {
		ibv_wr_opcode op;
		uint32_t len, npsn;
	} w[] = {
		{IBV_WR_RDMA_READ, 3000, 3}, {IBV_WR_RDMA_WRITE, 2000, 2}, {IBV_WR_SEND, 100, 1},
		{IBV_WR_ATOMIC_CMP_AND_SWP, 8, 1}, {IBV_WR_RDMA_READ, 0, 1},
		{IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 1}, {IBV_WR_RDMA_READ, 1024, 1},
	};
	v.sq_npsn = 0;
	for (auto &x : w) {
		ibv_sge sge = {(uint64_t)(uintptr_t)v.buf + 8192, x.len, v.mr->lkey};
		ibv_send_wr wr{}, *bad;
		wr.opcode = x.op;
		wr.sg_list = &sge;
		wr.num_sge = x.len ? 1 : 0;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = 0x1000;
		wr.wr.rdma.rkey = 0x1234;
		if (x.op == IBV_WR_ATOMIC_CMP_AND_SWP || x.op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = 0x1000;
			wr.wr.atomic.rkey = 0x1234;
		}
		if (ibv_post_send(v.rc, &wr, &bad))
			break;
		v.sq_npsn += x.npsn;
	}
}

void victim_modify(ibv_qp *qp, ibv_qp_type t, uint32_t rq_psn, uint32_t sq_psn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("victim: modify to RESET");

	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (t == IBV_QPT_UD) {
		a.qkey = VICTIM_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    (t == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ |
							       IBV_ACCESS_REMOTE_ATOMIC
						     : 0);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (ibv_modify_qp(qp, &a, mask))
		die("victim: modify to INIT");
	victim_post_recvs(qp);

	a = {};
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (t != IBV_QPT_UD) {
		a.path_mtu = o.mtu == 4096 ? IBV_MTU_4096 : o.mtu == 2048 ? IBV_MTU_2048
							 : o.mtu == 512	 ? IBV_MTU_512
							 : o.mtu == 256	 ? IBV_MTU_256
									 : IBV_MTU_1024;
		a.dest_qp_num = VICTIM_PEER_QPN;
		a.rq_psn = rq_psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = v.peer_gid;
		a.ah_attr.grh.sgid_index = o.victim_gid;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(qp, &a, mask))
		die("victim: modify to RTR");

	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (t == IBV_QPT_RC) {
		a.timeout = 12;		// 16 ms: the requester retries, then gives up
		a.retry_cnt = 3;
		a.rnr_retry = 3;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask))
		die("victim: modify to RTS");
}

void victim_drain()
{
	ibv_wc wc[32];
	int n;
	while ((n = ibv_poll_cq(v.cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++) {
			v.completions++;
			if (wc[i].status != IBV_WC_SUCCESS)
				v.errors++;
		}
}

// Back to a known state: fresh PSNs, receives posted, sends outstanding.
void victim_reset()
{
	victim_drain();
	v.rc_epsn = (uint32_t)rnd() & PSN_MASK;
	v.uc_epsn = (uint32_t)rnd() & PSN_MASK;
	v.sq_psn = (uint32_t)rnd() & PSN_MASK;
	v.read_npsn = 0;
	victim_modify(v.rc, IBV_QPT_RC, v.rc_epsn, v.sq_psn);
	victim_modify(v.uc, IBV_QPT_UC, v.uc_epsn, 0);
	victim_modify(v.ud, IBV_QPT_UD, 0, 0);
	victim_post_sends();
	victim_drain();
	v.resets++;
}

void victim_setup()
{
	v.ctx = open_device_by_name(o.victim_dev);
	if (!v.ctx)
		die("open the victim device");
	v.pd = ibv_alloc_pd(v.ctx);
	v.cq = v.pd ? ibv_create_cq(v.ctx, 1024, nullptr, nullptr, 0) : nullptr;
	if (!v.cq)
		die("victim PD/CQ");
	v.buf = (uint8_t *)aligned_alloc(4096, VICTIM_MR);
	memset(v.buf, 0x5a, VICTIM_MR);
	v.mr = ibv_reg_mr(v.pd, v.buf, VICTIM_MR,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!v.mr)
		die("victim MR");
	memcpy(v.peer_gid.raw, ends.src, 16);	// answers go to us, unheard
	v.rc = victim_qp(IBV_QPT_RC);
	v.uc = victim_qp(IBV_QPT_UC);
	v.ud = victim_qp(IBV_QPT_UD);
	victim_reset();
	printf("# victim %s: RC QP %u, UC QP %u, UD QP %u, MR va 0x%llx rkey 0x%x len %u\n",
	       o.victim_dev, v.rc->qp_num, v.uc->qp_num, v.ud->qp_num,
	       (unsigned long long)(uintptr_t)v.buf, v.mr->rkey, VICTIM_MR);
}

// RETH fields: right, at an edge of the victim MR, or wrong.
void victim_reth(fields &f, uint32_t len)
{
	uint64_t base = (uint64_t)(uintptr_t)v.buf;
	f.rkey = v.mr->rkey;
	f.va = base + rn(VICTIM_MR / 4);
	f.dmalen = len;
	switch (rn(10)) {
	case 0: f.rkey = (uint32_t)rnd(); break;
	case 1: f.rkey = v.mr->lkey ^ 0x100; break;
	case 2: f.va = base + VICTIM_MR - rn(8); break;	// runs off the end
	case 3: f.va = base - 1 - rn(64); break;
	case 4: f.va = rnd(); break;
	case 5: f.va = ~0ULL - rn(16); f.dmalen = rnd_len(o.mtu); break;	// wraps
	case 6: f.dmalen = rnd_len(o.mtu); break;
	default: break;
	}
}

// ---- classes --------------------------------------------------------------

enum cls_t {
	C_RANDOM,	// random bytes behind any opcode byte
	C_BADICRC,	// well-formed, wrong ICRC            -> rx_drop_icrc
	C_MALFORMED,	// bad opcode/version/length/pad/P_Key -> rx_drop_malformed
	C_DEADQP,	// well-formed, no such QP           -> rx_drop_no_qp
	C_OPCODES,	// every opcode 0..255 in turn, any target
	C_LIVE_REQ,	// requests to live QPs, PSN far out -> duplicate / out of seq
	C_LIVE_RESP,	// ACK/NAK/READ responses to live QPs, PSN far out -> stale
	C_VICTIM_REQ,	// in-window requests to the victim QPs
	C_VICTIM_RESP,	// in-window responses to the victim requester
	C_DUP_READ,	// floods of duplicate READ requests
	C_UD,		// UD sends: victim (good/bad Q_Key), GSI QP1, multicast QPN
	C_MUTATE,	// a well-formed packet with bytes flipped, ICRC redone
	C_COUNT
};
const char *const cls_name[C_COUNT] = {
	"random", "bad_icrc", "malformed", "dead_qp", "opcodes", "live_req", "live_resp",
	"victim_req", "victim_resp", "dup_read", "ud", "mutate",
};
// Weights of the mix (percent).
const int cls_weight[C_COUNT] = {8, 8, 12, 8, 6, 9, 7, 14, 9, 6, 4, 9};
uint64_t sent[C_COUNT], send_errors, guarded;

uint32_t any_qpn()
{
	switch (rn(5)) {
	case 0: return dead_qpn();
	case 1: if (!o.live.empty()) return o.live[rn(o.live.size())].qpn; [[fallthrough]];
	case 2: if (victim_on()) return (rn(2) ? v.rc : v.uc)->qp_num; [[fallthrough]];
	case 3: return rn(64);
	default: return (uint32_t)rnd() & PSN_MASK;
	}
}

uint8_t any_valid_op()
{
	for (;;) {
		uint8_t op = (uint8_t)rnd();
		if (op_mask[op])
			return op;
	}
}

// Plausible fields for @op: the payload the opcode wants, random RETH.
void plausible(fields &f, uint8_t op)
{
	uint32_t m = op_mask[op];
	f.op = op;
	f.ackreq = chance(50);
	f.se = chance(20);
	f.va = rnd();
	f.rkey = (uint32_t)rnd();
	f.dmalen = rnd_len(o.mtu);
	f.syndrome = (uint8_t)rnd();
	f.msn = (uint32_t)rnd();
	f.qkey = chance(50) ? VICTIM_QKEY : (uint32_t)rnd();
	f.sqpn = (uint32_t)rnd();
	if (m & (M_FIRST | M_MIDDLE))
		f.paylen = o.mtu;
	else
		f.paylen = rn(o.mtu + 1);
	if (chance(5))
		f.paylen = o.mtu + 1 + rn(1400 - o.mtu);	// oversized
}

void gen_random(pkt &p)
{
	p.len = BTH + rn(1200);
	for (size_t i = 0; i < p.len; i++)
		p.b[i] = (uint8_t)rnd();
	if (chance(50))
		p.b[0] = any_valid_op();
	if (chance(50))
		p.b[1] &= 0x30 | 0xc0;	// version 0
	if (chance(50))
		put16(p.b + 2, 0xffff);
	if (chance(50))
		put32(p.b + 4, any_qpn());
}

void gen_badicrc(pkt &p)
{
	fields f;
	plausible(f, any_valid_op());
	f.qpn = any_qpn();
	f.psn = (uint32_t)rnd();
	if (f.paylen > o.mtu)
		f.paylen = o.mtu;
	build(p, f);
	p.bad_icrc = true;
}

void gen_malformed(pkt &p)
{
	fields f;
	uint8_t op = any_valid_op();
	plausible(f, op);
	f.qpn = any_qpn();
	f.psn = (uint32_t)rnd();
	if (f.paylen > o.mtu)
		f.paylen = o.mtu;
	for (;;) {
		switch (rn(7)) {
		case 0:	// an opcode sroce does not take
			do
				op = (uint8_t)rnd();
			while (op_mask[op]);
			build(p, f);
			p.b[0] = op;
			return;
		case 1:	// transport header version != 0
			build(p, f);
			p.b[1] |= 1 + rn(15);
			return;
		case 2:	// too short for its headers (and the ICRC)
			build(p, f);
			p.len = rn(hdr_len(op));
			return;
		case 3:	// pad count beyond the bytes after the headers
			f.paylen = 0;
			build(p, f);
			p.b[1] = (p.b[1] & ~0x30) | (1 + rn(3)) << 4;
			return;
		case 4:	// a payload on an opcode that has none
			if (op_mask[op] & M_PAYLOAD)
				continue;
			build(p, f);
			for (uint32_t i = 0, n = 4 + 4 * rn(64); i < n; i++)
				p.b[p.len++] = (uint8_t)rnd();
			return;
		case 5:	// not the default P_Key (the low 15 bits)
			f.pkey = (uint16_t)rnd();
			if ((f.pkey & 0x7fff) == 0x7fff)
				f.pkey = 0x8001;
			build(p, f);
			return;
		case 6:	// an opcode of another transport than the live QP's
			if (o.live.empty())
				continue;
			do
				op = any_valid_op();
			while (!(op & 0xe0));
			plausible(f, op);
			f.paylen = std::min(f.paylen, o.mtu);
			f.qpn = o.live[rn(o.live.size())].qpn;
			build(p, f);
			return;
		}
	}
}

void gen_deadqp(pkt &p)
{
	fields f;
	plausible(f, any_valid_op());
	f.qpn = dead_qpn();
	f.psn = (uint32_t)rnd();
	build(p, f);
}

uint32_t opcode_next;

void gen_opcodes(pkt &p)
{
	fields f;
	uint8_t op = (uint8_t)opcode_next++;
	plausible(f, op_mask[op] ? op : 0);
	f.op = op;
	f.qpn = any_qpn();
	f.psn = (uint32_t)rnd();
	if (victim_on() && f.qpn == v.rc->qp_num && chance(50))
		f.psn = op_mask[op] & M_RESP ? v.sq_psn : v.rc_epsn;
	if (!o.live.empty() && chance(30)) {
		const live_qp &l = o.live[rn(o.live.size())];
		f.qpn = l.qpn;
		f.psn = far_psn(op_mask[op] & M_RESP ? l.sq_psn : l.rq_psn);
	}
	build(p, f);
	if (!op_mask[op]) {	// headers unknown: give it some bytes anyway
		for (uint32_t i = 0, n = rn(64); i < n; i++)
			p.b[p.len++] = (uint8_t)rnd();
	}
}

void gen_live_req(pkt &p)
{
	const live_qp &l = o.live[rn(o.live.size())];
	fields f;
	uint8_t op;
	do
		op = any_valid_op();
	while (!(op_mask[op] & M_REQ) || (op & 0xe0));
	plausible(f, op);
	f.qpn = l.qpn;
	f.psn = far_psn(l.rq_psn);
	build(p, f);
}

// The AETH syndromes worth sending: ACK, RNR NAK, the NAK codes, reserved.
uint8_t rnd_syndrome()
{
	switch (rn(5)) {
	case 0: return 0x1f;
	case 1: return 0x20 | rn(32);
	case 2: return 0x60 | rn(5);
	case 3: return 0x60 | (5 + rn(27));
	default: return (uint8_t)rnd();
	}
}

void gen_live_resp(pkt &p)
{
	const live_qp &l = o.live[rn(o.live.size())];
	static const uint8_t ops[] = {OP_ACK, OP_ACK, OP_ACK, OP_ATOMIC_ACK, OP_READ_RESP_FIRST,
				      OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST, OP_READ_RESP_ONLY};
	fields f;
	plausible(f, ops[rn(sizeof(ops))]);
	f.qpn = l.qpn;
	f.psn = far_psn(l.sq_psn);
	f.syndrome = rnd_syndrome();
	build(p, f);
}

void gen_victim_req(pkt &p)
{
	fields f;
	bool uc = chance(25);
	uint32_t &epsn = uc ? v.uc_epsn : v.rc_epsn;
	uint8_t op;
	do
		op = any_valid_op();
	while (!(op_mask[op] & M_REQ) || (op & 0xe0) != (uc ? UC : 0));
	plausible(f, op);
	f.qpn = (uc ? v.uc : v.rc)->qp_num;
	// Mostly the expected PSN; around it or anywhere otherwise.
	f.psn = chance(80) ? epsn : chance(70) ? (epsn + rn(9) - 4) & PSN_MASK : (uint32_t)rnd();
	uint32_t m = op_mask[op];
	if ((m & M_ATOMIC_WRITE) && chance(80))
		f.paylen = 8;
	uint32_t len = m & M_ATOMIC ? 8 : m & M_READ ? rn(3 * o.mtu) : f.paylen;
	if (m & (M_RETH | M_ATMETH))
		victim_reth(f, len);
	if ((m & (M_ATOMIC | M_ATOMIC_WRITE)) && chance(70))
		f.va &= ~7ULL;
	build(p, f);
	if (f.psn == epsn) {
		uint32_t n = (m & M_READ) ? std::max<uint32_t>(1, (f.dmalen + o.mtu - 1) / o.mtu) : 1;
		if ((m & M_READ) && f.dmalen <= 3 * o.mtu) {
			v.read_psn = epsn;
			v.read_npsn = n;
		}
		epsn = (epsn + ((m & M_READ) && f.dmalen <= 3 * o.mtu ? n : 1)) & PSN_MASK;
	}
}

void gen_victim_resp(pkt &p)
{
	static const uint8_t ops[] = {OP_ACK, OP_ACK, OP_ATOMIC_ACK, OP_READ_RESP_FIRST,
				      OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST, OP_READ_RESP_ONLY};
	fields f;
	plausible(f, ops[rn(sizeof(ops))]);
	f.qpn = v.rc->qp_num;
	f.psn = (v.sq_psn + rn(v.sq_npsn + 3) - 1) & PSN_MASK;	// the window, +-1
	f.syndrome = chance(60) ? 0x1f : rnd_syndrome();
	f.msn = rn(8);
	if (op_mask[f.op] & M_READ)
		f.paylen = chance(50) ? o.mtu : rn(o.mtu + 2);
	build(p, f);
}

void gen_dup_read(pkt &p)
{
	fields f;
	plausible(f, OP_READ_REQ);
	if (!victim_on() || (!o.live.empty() && chance(30))) {
		if (o.live.empty())
			return gen_deadqp(p);
		const live_qp &l = o.live[rn(o.live.size())];
		f.qpn = l.qpn;
		f.psn = far_psn(l.rq_psn);
	} else {
		f.qpn = v.rc->qp_num;
		f.psn = v.read_npsn ? (v.read_psn + rn(v.read_npsn + 1)) & PSN_MASK
				    : (v.rc_epsn - 1 - rn(4)) & PSN_MASK;
		victim_reth(f, rn(3 * o.mtu));
	}
	build(p, f);
}

void gen_ud(pkt &p)
{
	fields f;
	plausible(f, chance(50) ? UD | OP_SEND_ONLY : UD | OP_SEND_ONLY_IMM);
	f.psn = (uint32_t)rnd();
	switch (rn(4)) {
	case 0:	// GSI: random MADs (256 bytes) with the GSI Q_Key
		f.qpn = 1;
		f.qkey = chance(80) ? GSI_QKEY : (uint32_t)rnd();
		f.paylen = chance(80) ? 256 : rn(o.mtu + 1);
		break;
	case 1:
		f.qpn = MCAST_QPN;
		break;
	default:
		f.qpn = victim_on() ? v.ud->qp_num : dead_qpn();
		break;
	}
	build(p, f);
	if (f.qpn == 1 && f.paylen >= 24) {
		// A MAD header ib_core's MAD layer and ib_cm take a look at:
		// base version 1 mostly (any other is logged, unratelimited, by
		// ib_mad), CM and other GSI classes, CM message attributes.
		static const uint8_t classes[] = {0x03, 0x04, 0x07, 0x07, 0x07, 0x0a, 0x81};
		uint8_t *mad = p.b + hdr_len(f.op);
		for (uint32_t i = 0; i < f.paylen; i++)
			mad[i] = (uint8_t)rnd();
		if (chance(98))
			mad[0] = 1;
		if (chance(90))
			mad[1] = classes[rn(sizeof(classes))];
		if (chance(80))
			mad[2] = 1 + rn(2);
		if (mad[1] == 0x07 && chance(70))
			mad[16] = 0, mad[17] = 0x10 + rn(11);	// REQ..APR
	}
}

void gen_mutate(pkt &p)
{
	fields f;
	plausible(f, any_valid_op());
	f.qpn = any_qpn();
	f.psn = (uint32_t)rnd();
	if (victim_on() && chance(50)) {
		f.qpn = v.rc->qp_num;
		f.psn = op_mask[f.op] & M_RESP ? v.sq_psn : v.rc_epsn;
		if (op_mask[f.op] & (M_RETH | M_ATMETH))
			victim_reth(f, f.paylen);
	}
	build(p, f);
	for (uint32_t i = 0, n = 1 + rn(4); i < n; i++) {
		size_t at = rn(std::min<size_t>(p.len, 48));
		switch (rn(4)) {
		case 0: p.b[at] ^= 1 << rn(8); break;
		case 1: p.b[at] = (uint8_t)rnd(); break;
		case 2: p.b[at] = 0xff; break;
		default: p.b[at] = 0; break;
		}
	}
	if (chance(10))
		p.len = BTH + rn(p.len - BTH + 1);
	else if (chance(10))
		while (p.len < MAX_LEN && chance(90))
			p.b[p.len++] = (uint8_t)rnd();
}

// The one rule every class keeps: a packet that reaches a live QP (by
// design, or because a random or mutated QPN happens to be one) carries a
// PSN far from that QP's, so it can never be executed or accepted.
void guard_live(pkt &p)
{
	if (p.len < BTH)
		return;
	uint32_t qpn = (uint32_t)p.b[5] << 16 | p.b[6] << 8 | p.b[7];
	for (const live_qp &l : o.live) {
		if (l.qpn != qpn)
			continue;
		uint32_t base = op_mask[p.b[0]] & M_RESP ? l.sq_psn : l.rq_psn;
		uint32_t psn = (uint32_t)p.b[9] << 16 | p.b[10] << 8 | p.b[11];
		uint32_t d = (psn - base) & PSN_MASK;
		if (d >= (1U << 22) && d <= (3U << 22))
			return;		// what far_psn() gives: far enough
		psn = far_psn(base);
		p.b[9] = psn >> 16, p.b[10] = psn >> 8, p.b[11] = psn;
		guarded++;
		return;
	}
}

cls_t pick()
{
	uint32_t r = rn(100), acc = 0;
	for (int c = 0; c < C_COUNT; c++) {
		acc += cls_weight[c];
		if (r < acc) {
			if ((c == C_LIVE_REQ || c == C_LIVE_RESP) && o.live.empty())
				return C_DEADQP;
			if ((c == C_VICTIM_REQ || c == C_VICTIM_RESP) && !victim_on())
				return C_MUTATE;
			return (cls_t)c;
		}
	}
	return C_RANDOM;
}

void generate(cls_t c, pkt &p)
{
	p.bad_icrc = false;	// the slot may hold a bad_icrc packet of before
	switch (c) {
	case C_RANDOM: gen_random(p); break;
	case C_BADICRC: gen_badicrc(p); break;
	case C_MALFORMED: gen_malformed(p); break;
	case C_DEADQP: gen_deadqp(p); break;
	case C_OPCODES: gen_opcodes(p); break;
	case C_LIVE_REQ: gen_live_req(p); break;
	case C_LIVE_RESP: gen_live_resp(p); break;
	case C_VICTIM_REQ: gen_victim_req(p); break;
	case C_VICTIM_RESP: gen_victim_resp(p); break;
	case C_DUP_READ: gen_dup_read(p); break;
	case C_UD: gen_ud(p); break;
	default: gen_mutate(p); break;
	}
}

double now_s()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

// Has @pid ended (gone, or a zombie its parent has not reaped yet)?
bool process_gone(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *st = strrchr(buf, ')');	// "pid (comm) S ..."
	return !st || st[1] != ' ' || st[2] == 'Z' || st[2] == 'X';
}

void usage(FILE *f)
{
	fprintf(f,
		"usage: sroce_pktfuzz -t DST_IP -s SRC_IP [options]\n"
		"  -t IP            the sroce device's IPv4 or IPv6 address (UDP 4791)\n"
		"  -s IP            this side's address (bound; it is in the ICRC)\n"
		"  -n COUNT         packets to send (default 100000)\n"
		"  --seed N         (default: from the clock, printed)\n"
		"  --mtu B          path MTU of the QPs (default 1024)\n"
		"  --live Q:R:S     a live QP: QPN, its rq_psn and sq_psn at start\n"
		"                   (repeat; they only get PSNs far out of window)\n"
		"  --victim DEV     own RC/UC/UD QPs on DEV for in-window fuzzing\n"
		"  --victim-gid N   DEV's GID index for its RoCE v2 IPv4 address\n"
		"  --cycle N        victim reset every N packets (default 400)\n"
		"  --batch N        datagrams per sendmmsg (default 32)\n"
		"  --while-pid PID  stop early once process PID has ended\n"
		"  -o FILE          output to FILE instead of stdout\n"
		"Classes: random bad_icrc malformed dead_qp opcodes live_req live_resp\n"
		"victim_req victim_resp dup_read ud mutate. Summary: packets sent by\n"
		"class, and \"expect COUNTER N\": the device's counter must grow by N.\n");
}

} // namespace

int main(int argc, char **argv)
{
	static const option longopts[] = {
		{"seed", required_argument, nullptr, 'S'},
		{"mtu", required_argument, nullptr, 'm'},
		{"live", required_argument, nullptr, 'L'},
		{"victim", required_argument, nullptr, 'V'},
		{"victim-gid", required_argument, nullptr, 'G'},
		{"cycle", required_argument, nullptr, 'C'},
		{"batch", required_argument, nullptr, 'B'},
		{"while-pid", required_argument, nullptr, 'P'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	int c;

	o.seed = (uint64_t)time(nullptr) ^ (uint64_t)getpid() << 20;
	while ((c = getopt_long(argc, argv, "t:s:n:o:h", longopts, nullptr)) != -1) {
		switch (c) {
		case 't': o.dst = optarg; break;
		case 's': o.src = optarg; break;
		case 'n': o.count = strtoull(optarg, nullptr, 0); break;
		case 'S': o.seed = strtoull(optarg, nullptr, 0); break;
		case 'm': o.mtu = strtoul(optarg, nullptr, 0); break;
		case 'V': o.victim_dev = optarg; break;
		case 'G': o.victim_gid = atoi(optarg); break;
		case 'C': o.victim_cycle = std::max(1UL, strtoul(optarg, nullptr, 0)); break;
		case 'P': o.while_pid = atoi(optarg); break;
		case 'o':
			if (!freopen(optarg, "w", stdout))
				die(optarg);
			break;
		case 'B': o.batch = std::clamp(atoi(optarg), 1, 256); break;
		case 'L': {
			live_qp l;
			if (sscanf(optarg, "%u:%u:%u", &l.qpn, &l.rq_psn, &l.sq_psn) != 3) {
				usage(stderr);
				return 2;
			}
			o.live.push_back(l);
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	// IPv4 or IPv6 (both the same), kept as GIDs.
	ends.v6 = o.dst && strchr(o.dst, ':');
	int af = ends.v6 ? AF_INET6 : AF_INET;
	uint8_t *s4 = ends.src + 12, *d4 = ends.dst + 12;
	if (!ends.v6)
		ends.src[10] = ends.src[11] = ends.dst[10] = ends.dst[11] = 0xff;
	if (!o.dst || !o.src || inet_pton(af, o.dst, ends.v6 ? ends.dst : d4) != 1 ||
	    inet_pton(af, o.src, ends.v6 ? ends.src : s4) != 1 ||
	    (o.victim_dev && o.victim_gid < 0) ||
	    (o.mtu != 256 && o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 && o.mtu != 4096)) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	init_opcodes();
	init_crc();
	rng_state = o.seed;
	printf("# sroce_pktfuzz: %llu packets %s -> %s:%u, seed %llu, %zu live QPs\n",
	       (unsigned long long)o.count, o.src, o.dst, ROCE_PORT, (unsigned long long)o.seed,
	       o.live.size());

	int fd = socket(af, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	// Never fragmented; IPv4: DF, and then the IP ID is 0 (unconnected
	// socket), as the ICRC assumes.
	int pmtu = IP_PMTUDISC_DO;
	if (ends.v6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu))
		    : setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		die("IP(V6)_MTU_DISCOVER");
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	sockaddr_storage sa{}, to{};
	socklen_t sl = ends.v6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
	if (ends.v6) {
		auto *a = (sockaddr_in6 *)&sa, *t = (sockaddr_in6 *)&to;
		a->sin6_family = t->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, ends.src, 16);
		memcpy(&t->sin6_addr, ends.dst, 16);
		t->sin6_port = htons(ROCE_PORT);
	} else {
		auto *a = (sockaddr_in *)&sa, *t = (sockaddr_in *)&to;
		a->sin_family = t->sin_family = AF_INET;
		memcpy(&a->sin_addr, s4, 4);
		memcpy(&t->sin_addr, d4, 4);
		t->sin_port = htons(ROCE_PORT);
	}
	if (bind(fd, (sockaddr *)&sa, sl))
		die("bind");
	socklen_t gl = sizeof(sa);
	getsockname(fd, (sockaddr *)&sa, &gl);
	ends.sport = ntohs(ends.v6 ? ((sockaddr_in6 *)&sa)->sin6_port
				   : ((sockaddr_in *)&sa)->sin_port);

	if (o.victim_dev)
		victim_setup();

	std::vector<pkt> pk(o.batch);
	std::vector<mmsghdr> mm(o.batch);
	std::vector<iovec> iov(o.batch);
	uint64_t done = 0, since_reset = 0, expect_icrc = 0, expect_malformed = 0,
		 expect_no_qp = 0;
	double t0 = now_s(), last = t0;

	while (done < o.count) {
		int n = (int)std::min<uint64_t>(o.batch, o.count - done);
		for (int i = 0; i < n; i++) {
			cls_t k = pick();
			generate(k, pk[i]);
			pkt &p = pk[i];
			guard_live(p);
			// Shorter than a BTH: the ICRC hardly matters (UDP length check).
			uint32_t crc = p.len < BTH ? (uint32_t)rnd()
						   : icrc(p.b, p.len);
			if (p.bad_icrc)
				crc ^= 1U << rn(32);
			for (int j = 0; j < 4; j++)
				p.b[p.len + j] = crc >> (8 * j);
			iov[i] = {p.b, p.len + ICRC};
			mm[i] = {};
			mm[i].msg_hdr.msg_name = &to;
			mm[i].msg_hdr.msg_namelen = sl;
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			sent[k]++;
			expect_icrc += k == C_BADICRC;
			expect_malformed += k == C_MALFORMED;
			expect_no_qp += k == C_DEADQP;
		}
		for (int i = 0; i < n;) {
			int r = sendmmsg(fd, mm.data() + i, n - i, 0);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno != ENOBUFS && errno != EAGAIN)
					die("sendmmsg");
				// The device queue is full: wait a little, retry.
				send_errors++;
				usleep(1000);
				continue;
			}
			i += r;
		}
		done += n;
		since_reset += n;
		if (victim_on()) {
			victim_drain();
			if (since_reset >= o.victim_cycle) {
				victim_reset();
				since_reset = 0;
			}
		}
		if (o.while_pid && (done / o.batch) % 64 == 0 && process_gone(o.while_pid)) {
			printf("# process %d has ended: stopping\n", (int)o.while_pid);
			break;
		}
		double t = now_s();
		if (t - last >= 10) {
			printf("# %llu packets, %.0f/s\n", (unsigned long long)done, done / (t - t0));
			last = t;
		}
	}
	double secs = now_s() - t0;
	if (victim_on())
		victim_drain();

	printf("# %-12s %10s\n", "class", "sent");
	for (int k = 0; k < C_COUNT; k++)
		printf("# %-12s %10llu\n", cls_name[k], (unsigned long long)sent[k]);
	if (victim_on())
		printf("# victim: %llu resets, %llu completions (%llu with an error status)\n",
		       (unsigned long long)v.resets, (unsigned long long)v.completions,
		       (unsigned long long)v.errors);
	printf("# %llu packets that hit a live QPN got a far PSN instead\n",
	       (unsigned long long)guarded);
	printf("expect rx_drop_icrc %llu\n", (unsigned long long)expect_icrc);
	printf("expect rx_drop_malformed %llu\n", (unsigned long long)expect_malformed);
	printf("expect rx_drop_no_qp %llu\n", (unsigned long long)expect_no_qp);
	printf("pktfuzz: %llu packets in %.1f s (%.0f/s), %llu send retries\n",
	       (unsigned long long)done, secs, done / secs, (unsigned long long)send_errors);

	if (v.ctx) {
		ibv_destroy_qp(v.rc);
		ibv_destroy_qp(v.uc);
		ibv_destroy_qp(v.ud);
		ibv_dereg_mr(v.mr);
		ibv_destroy_cq(v.cq);
		ibv_dealloc_pd(v.pd);
		ibv_close_device(v.ctx);
		free(v.buf);
	}
	close(fd);
	return 0;
}
