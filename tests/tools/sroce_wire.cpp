// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_wire - scripted RoCE v2 wire cases: a fake peer on a plain UDP
// socket that receives what a sroce device sends, parses and checks every
// datagram (headers, payload, ICRC), and answers with crafted packets,
// case by case, asserting on what comes back. Prints TAP.
//
//   sroce_wire -d DEV -g GID_INDEX -l PEER_IP -r DEV_IP [--case NAME]...
//              [-w SECONDS] [-q MS] [--list] [-v]
//
// Topology: the device (DEV, its RoCE v2 IPv4 GID at GID_INDEX for
// DEV_IP) lives in another network namespace than this process, one with
// no sroce device, so this process can bind UDP 4791 on PEER_IP itself.
// It opens DEV through libibverbs (RDMA devices are shared between
// namespaces) for the victim QPs and MRs, and points their path at
// PEER_IP and their dest_qpn at PEER_QPN: whatever the victim sends, the
// fake peer receives.
//
// Sealing: what the peer sends carries the ICRC the device computes
// (kernel/sroce_icrc.c): CRC-32 (reflected, poly 0xEDB88320) seeded with
// eight 0xff bytes, over the IPv4 header with TOS, TTL and checksum masked
// to ones, the UDP header with its checksum masked, the BTH with byte 4
// masked, the rest of the headers, payload and pad; inverted,
// little-endian. A DF datagram from an unconnected UDP socket has IP ID 0,
// and so does every packet sroce sends (kernel/sroce_net.c,
// sroce_push_ip4): both directions' pseudo-headers are known, and every
// received datagram's ICRC is checked.
//
// Cases (--case NAME, repeatable; default all, in this order):
//   dmalen            the responder and DMA lengths above 2^31 (IBTA 9.4.4:
//                     a message is at most 2^31 bytes): READ and WRITE
//                     requests with a valid rkey and a DMA length of
//                     2^31+1 or 2^32-1 earn NAK Invalid Request (0x61) at
//                     their PSN, no READ response, and the QP goes to
//                     ERR; a READ of exactly 2^31 on a 64 KiB MR earns NAK
//                     Remote Access Error (0x62). A valid READ and WRITE
//                     first, to show the set-up answers.
//   req-edges         a victim RC requester posts SENDs (one inline),
//                     WRITEs (one inline), a READ and two atomics; the
//                     peer checks the requests, then answers at the edges
//                     of the PSN window (ACKs at una-1, una-2, max_psn,
//                     2^23 away, max_psn-1; RNR and sequence NAKs at una,
//                     mid-window and at the last PSN; READ responses out
//                     of order, too long, for an atomic; duplicate atomic
//                     ACKs) and checks each time what is resent (opcode,
//                     PSN, headers, payload bytes as posted), what
//                     completes (in order, once each, right status and
//                     data) and the counters (stale_responses,
//                     rnr_nak_received, seq_nak_received,
//                     retransmitted_packets).
//   tamper-rewrite    req-edges with every byte of the 8 WQEs' SQ slots
//                     but wr_id, opcode and flags rewritten after the
//                     kernel sent them: the resends must carry the posted
//                     bytes, READ and atomic results land where posted.
//   tamper-prod-ahead the SQ producer index moved ahead by more than the
//                     ring after the post, then the doorbell: a corrupt
//                     ring (IBV_EVENT_QP_FATAL, ERR, bad_ring_index rises),
//                     nothing sent that was not posted, no completion
//                     beyond the WQEs posted, none twice.
//   tamper-prod-back  the same with the producer index moved back below
//                     what the kernel has fetched (still within a ring of
//                     its consumer index).
//   uc-no-rwqe        UC: a SEND and a WRITE with immediate that find the
//                     receive queue empty are dropped whole and silently
//                     (no RNR NAK: UC has no answers), counted in
//                     rx_drop_qp_state; the next ones land once receive
//                     WQEs are posted.
//   xrc               an XRC target QP (IBTA A14) with SRQs in two XRC
//                     domains: SENDs naming an SRQ land in its WQEs and
//                     complete on its CQ, WRITE, READ and FETCH_ADD work
//                     under its PD, every answer has XRC's opcode; a SEND
//                     whose LAST names another SRQ than its FIRST, one
//                     naming another domain's SRQ and one naming no SRQ
//                     earn NAK Invalid Request (error_nak_sent +1, target
//                     to ERR, nothing received); an RC opcode to the
//                     target and an XRC one to an RC QP are malformed.
//   resp-race         (only when named; needs tests/kmod/sroce_race.ko
//                     loaded with scenario=qp_error) a SEND whose MIDDLE
//                     packet fails to scatter, completing its receive WQE
//                     with an error, while the module holds the responder
//                     before it moves the QP to ERR; from the other CPU
//                     the LAST packet at the same PSN follows: it must not
//                     be taken (no second completion of that WQE, no
//                     receive WQE lost), and every WQE completes once.
//
// A case is a function and one line in cases[]: adding one means writing
// the function (peer_send / collect / wait_completions / counters below)
// and naming it there. No completion or packet is waited for longer than
// -w seconds (default 3); "nothing more comes" is a quiet period of -q ms
// (default 300). The exit status is 1 if any point failed.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "sroce.hpp"	// the provider's own QP: where its SQ ring is mapped
#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

// ---- wire constants (kernel/sroce_pkt.h) ---------------------------------

constexpr uint16_t ROCE_PORT = 4791;
constexpr int BTH = 12, RETH = 16, AETH = 4, ATMETH = 28, ATMACK = 8, IMMDT = 4, IETH = 4,
	      XRCETH = 4, ICRC = 4;
constexpr uint32_t PSN_MASK = 0xffffff;
constexpr uint32_t PEER_QPN = 0x0ace01;	// the fake peer's QP number
constexpr uint32_t MTU = 1024;

enum : uint32_t {
	M_RETH = 1 << 0, M_AETH = 1 << 1, M_ATMETH = 1 << 2, M_ATMACK = 1 << 3,
	M_IMMDT = 1 << 4, M_IETH = 1 << 5, M_PAYLOAD = 1 << 7,
	M_REQ = 1 << 8, M_RESP = 1 << 9, M_READ = 1 << 14, M_ATOMIC = 1 << 15,
	M_XRCETH = 1 << 16,
};

enum : uint8_t {
	OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM, OP_SEND_ONLY,
	OP_SEND_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_LAST_IMM,
	OP_WRITE_ONLY, OP_WRITE_ONLY_IMM, OP_READ_REQ, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
	OP_READ_RESP_LAST, OP_READ_RESP_ONLY, OP_ACK, OP_ATOMIC_ACK, OP_CMP_SWAP, OP_FETCH_ADD,
	OP_SEND_LAST_INV = 0x16, OP_SEND_ONLY_INV = 0x17,
};
constexpr uint8_t UC = 0x20;	// | OP_SEND_FIRST .. OP_WRITE_ONLY_IMM: the UC opcodes
constexpr uint8_t XRC = 0xa0;	// | OP_SEND_FIRST .. OP_SEND_ONLY_INV: the XRC opcodes

// AETH syndromes.
constexpr uint8_t SYN_ACK = 0x1f;		// ACK, no end-to-end credits
constexpr uint8_t SYN_RNR = 0x20;		// | timer
constexpr uint8_t SYN_NAK_SEQ = 0x60;
constexpr uint8_t SYN_NAK_INV_REQ = 0x61;
constexpr uint8_t SYN_NAK_REM_ACCESS = 0x62;

// The RC opcodes of kernel/sroce_opcode.c: what each carries.
uint32_t op_mask[256];

void init_opcodes()
{
	const uint32_t rq = M_REQ | M_PAYLOAD, rr = M_RESP | M_READ | M_PAYLOAD;
	op_mask[OP_SEND_FIRST] = rq;
	op_mask[OP_SEND_MIDDLE] = rq;
	op_mask[OP_SEND_LAST] = rq;
	op_mask[OP_SEND_LAST_IMM] = rq | M_IMMDT;
	op_mask[OP_SEND_ONLY] = rq;
	op_mask[OP_SEND_ONLY_IMM] = rq | M_IMMDT;
	op_mask[OP_WRITE_FIRST] = rq | M_RETH;
	op_mask[OP_WRITE_MIDDLE] = rq;
	op_mask[OP_WRITE_LAST] = rq;
	op_mask[OP_WRITE_LAST_IMM] = rq | M_IMMDT;
	op_mask[OP_WRITE_ONLY] = rq | M_RETH;
	op_mask[OP_WRITE_ONLY_IMM] = rq | M_RETH | M_IMMDT;
	op_mask[OP_READ_REQ] = M_REQ | M_READ | M_RETH;
	op_mask[OP_READ_RESP_FIRST] = rr | M_AETH;
	op_mask[OP_READ_RESP_MIDDLE] = rr;
	op_mask[OP_READ_RESP_LAST] = rr | M_AETH;
	op_mask[OP_READ_RESP_ONLY] = rr | M_AETH;
	op_mask[OP_ACK] = M_RESP | M_AETH;
	op_mask[OP_ATOMIC_ACK] = M_RESP | M_ATOMIC | M_AETH | M_ATMACK;
	op_mask[OP_CMP_SWAP] = M_REQ | M_ATOMIC | M_ATMETH;
	op_mask[OP_FETCH_ADD] = M_REQ | M_ATOMIC | M_ATMETH;
	op_mask[OP_SEND_LAST_INV] = rq | M_IETH;
	op_mask[OP_SEND_ONLY_INV] = rq | M_IETH;
	for (int op = OP_SEND_FIRST; op <= OP_WRITE_ONLY_IMM; op++)
		op_mask[UC | op] = op_mask[op];
	// XRC: RC's, and the requests carry an XRCETH (IBTA A14)
	for (int op = OP_SEND_FIRST; op <= OP_SEND_ONLY_INV; op++)
		if (op_mask[op])
			op_mask[XRC | op] = op_mask[op] | (op_mask[op] & M_REQ ? (uint32_t)M_XRCETH : 0U);
}

int hdr_len(uint8_t op)
{
	uint32_t m = op_mask[op];
	return BTH + (m & M_XRCETH ? XRCETH : 0) + (m & M_RETH ? RETH : 0) + (m & M_AETH ? AETH : 0) +
	       (m & M_ATMETH ? ATMETH : 0) + (m & M_ATMACK ? ATMACK : 0) +
	       (m & M_IMMDT ? IMMDT : 0) + (m & M_IETH ? IETH : 0);
}

const char *op_name(uint8_t op)
{
	static const char *const n[] = {
		"SEND_FIRST", "SEND_MIDDLE", "SEND_LAST", "SEND_LAST_IMM", "SEND_ONLY",
		"SEND_ONLY_IMM", "WRITE_FIRST", "WRITE_MIDDLE", "WRITE_LAST", "WRITE_LAST_IMM",
		"WRITE_ONLY", "WRITE_ONLY_IMM", "READ_REQ", "READ_RESP_FIRST", "READ_RESP_MIDDLE",
		"READ_RESP_LAST", "READ_RESP_ONLY", "ACK", "ATOMIC_ACK", "CMP_SWAP", "FETCH_ADD",
		"0x15", "SEND_LAST_INV", "SEND_ONLY_INV",
	};
	static std::string uc[OP_WRITE_ONLY_IMM + 1], xrc[OP_SEND_ONLY_INV + 1];
	if (op >= UC && op <= (UC | OP_WRITE_ONLY_IMM)) {
		std::string &u = uc[op - UC];
		if (u.empty())
			u = std::string("UC_") + n[op - UC];
		return u.c_str();
	}
	if (op >= XRC && op <= (XRC | OP_SEND_ONLY_INV)) {
		std::string &u = xrc[op - XRC];
		if (u.empty())
			u = std::string("XRC_") + n[op - XRC];
		return u.c_str();
	}
	return op < sizeof(n) / sizeof(n[0]) ? n[op] : "op?";
}

uint32_t psn_add(uint32_t psn, int64_t n) { return (uint32_t)(psn + n) & PSN_MASK; }

void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8, p[1] = v; }
void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16), put16(p + 2, v); }
void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32), put32(p + 4, v); }
uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

// ---- ICRC (as tests/tools/sroce_pktfuzz.cpp, IPv4 only) --------------------

uint32_t crc_table[256];
uint32_t icrc_seed;

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

// The ICRC of @len bytes from the BTH (headers, payload, pad) of a
// datagram @src:@sport -> @dst:@dport (addresses in network order), IPv4
// with ID 0 and DF.
uint32_t icrc(const uint8_t *bth, size_t len, const uint8_t src[4], const uint8_t dst[4],
	      uint16_t sport, uint16_t dport)
{
	uint8_t ps[20 + 8 + BTH];
	uint16_t ulen = 8 + len + ICRC, tot = 20 + ulen;

	ps[0] = 0x45;
	ps[1] = 0xff;			// TOS: masked
	ps[2] = tot >> 8, ps[3] = tot;
	ps[4] = ps[5] = 0;		// ID 0
	ps[6] = 0x40, ps[7] = 0;	// DF
	ps[8] = 0xff;			// TTL: masked
	ps[9] = IPPROTO_UDP;
	ps[10] = ps[11] = 0xff;		// header checksum: masked
	memcpy(ps + 12, src, 4);
	memcpy(ps + 16, dst, 4);
	uint8_t *u = ps + 20;
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, ulen);
	u[6] = u[7] = 0xff;		// UDP checksum: masked
	memcpy(u + 8, bth, BTH);
	u[8 + 4] = 0xff;		// FECN, BECN, reserved
	uint32_t crc = crc32_le(icrc_seed, ps, sizeof(ps));
	crc = crc32_le(crc, bth + BTH, len - BTH);
	return ~crc;
}

// ---- packets ----------------------------------------------------------------

// What a packet carries, host order: what the peer builds, and what a
// request is expected to be.
struct fields {
	uint8_t op = 0;
	uint32_t qpn = 0, psn = 0;
	bool ackreq = false, se = false;
	uint64_t va = 0;		// RETH or AtomicETH
	uint32_t rkey = 0, dmalen = 0;
	uint64_t swap_add = 0, compare = 0;
	uint8_t syndrome = SYN_ACK;	// AETH
	uint32_t msn = 0;
	uint64_t orig = 0;		// AtomicAckETH
	uint32_t imm = 0;
	uint32_t srqn = 0;		// XRCETH
	std::vector<uint8_t> payload;
};

// A received datagram, parsed.
struct rx {
	fields f;
	uint16_t pkey = 0;
	uint8_t pad = 0;
	bool parsed = false, icrc_ok = false, pad_zero = false;
	size_t len = 0;			// UDP payload bytes
	uint16_t sport = 0;
};

std::vector<uint8_t> build(const fields &f)
{
	uint32_t m = op_mask[f.op];
	int hl = hdr_len(f.op);
	uint32_t paylen = m & M_PAYLOAD ? f.payload.size() : 0;
	uint32_t pad = (4 - (paylen & 3)) & 3;
	std::vector<uint8_t> b(hl + paylen + pad + ICRC, 0);
	uint8_t *h = b.data() + BTH;

	b[0] = f.op;
	b[1] = 0x40 | pad << 4 | (f.se ? 0x80 : 0);
	put16(&b[2], 0xffff);
	put32(&b[4], f.qpn & PSN_MASK);
	put32(&b[8], (f.psn & PSN_MASK) | (f.ackreq ? 0x80000000U : 0));
	if (m & M_XRCETH) {
		put32(h, f.srqn & PSN_MASK);
		h += XRCETH;
	}
	if (m & M_RETH) {
		put64(h, f.va), put32(h + 8, f.rkey), put32(h + 12, f.dmalen);
		h += RETH;
	}
	if (m & M_ATMETH) {
		put64(h, f.va), put32(h + 8, f.rkey), put64(h + 12, f.swap_add);
		put64(h + 20, f.compare);
		h += ATMETH;
	}
	if (m & M_AETH) {
		put32(h, (uint32_t)f.syndrome << 24 | (f.msn & PSN_MASK));
		h += AETH;
	}
	if (m & M_ATMACK) {
		put64(h, f.orig);
		h += ATMACK;
	}
	if (m & M_IMMDT)
		put32(h, f.imm);
	if (paylen)
		memcpy(&b[hl], f.payload.data(), paylen);
	return b;
}

bool parse(const uint8_t *b, size_t n, rx &r)
{
	r = rx();
	r.len = n;
	if (n < BTH + ICRC || !op_mask[b[0]] || (b[1] & 0x0f))
		return false;
	int hl = hdr_len(b[0]);
	r.pad = (b[1] >> 4) & 3;
	if (n < (size_t)hl + r.pad + ICRC)
		return false;
	fields &f = r.f;
	const uint8_t *h = b + BTH;
	uint32_t m = op_mask[b[0]];
	f.op = b[0];
	f.se = b[1] & 0x80;
	r.pkey = get16(b + 2);
	f.qpn = get32(b + 4) & PSN_MASK;
	f.psn = get32(b + 8) & PSN_MASK;
	f.ackreq = b[8] & 0x80;
	if (m & M_XRCETH) {
		f.srqn = get32(h) & PSN_MASK;
		h += XRCETH;
	}
	if (m & M_RETH) {
		f.va = get64(h), f.rkey = get32(h + 8), f.dmalen = get32(h + 12);
		h += RETH;
	}
	if (m & M_ATMETH) {
		f.va = get64(h), f.rkey = get32(h + 8), f.swap_add = get64(h + 12);
		f.compare = get64(h + 20);
		h += ATMETH;
	}
	if (m & M_AETH) {
		f.syndrome = h[0], f.msn = get32(h) & PSN_MASK;
		h += AETH;
	}
	if (m & M_ATMACK) {
		f.orig = get64(h);
		h += ATMACK;
	}
	if (m & M_IMMDT)
		f.imm = get32(h);
	size_t paylen = n - hl - r.pad - ICRC;
	f.payload.assign(b + hl, b + hl + paylen);
	r.pad_zero = true;
	for (int i = 0; i < r.pad; i++)
		r.pad_zero &= b[hl + paylen + i] == 0;
	r.parsed = true;
	return true;
}

std::string describe(const fields &f)
{
	char s[160];
	int n = snprintf(s, sizeof(s), "%s psn 0x%06x", op_name(f.op), f.psn);
	uint32_t m = op_mask[f.op];
	if (m & M_RETH)
		n += snprintf(s + n, sizeof(s) - n, " reth va 0x%llx rkey 0x%x len %u",
			      (unsigned long long)f.va, f.rkey, f.dmalen);
	if (m & M_ATMETH)
		n += snprintf(s + n, sizeof(s) - n, " atmeth va 0x%llx rkey 0x%x",
			      (unsigned long long)f.va, f.rkey);
	if (m & M_AETH)
		n += snprintf(s + n, sizeof(s) - n, " aeth 0x%02x msn %u", f.syndrome, f.msn);
	if (m & M_PAYLOAD)
		snprintf(s + n, sizeof(s) - n, " payload %zu", f.payload.size());
	return s;
}

// ---- TAP points: failures collected, reported at once -----------------------

bool g_verbose;
double g_wait = 3;		// seconds anything awaited may take
double g_quiet = 0.3;		// seconds in which nothing more may come

struct point {
	std::vector<std::string> why;

	__attribute__((format(printf, 2, 3))) void fail(const char *fmt, ...)
	{
		char b[600];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b, sizeof(b), fmt, ap);
		va_end(ap);
		why.emplace_back(b);
	}

	bool ok() const { return why.empty(); }

	__attribute__((format(printf, 2, 3))) bool report(const char *fmt, ...)
	{
		char b[600];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b, sizeof(b), fmt, ap);
		va_end(ap);
		bool r = tap::check(why.empty(), "%s", b);
		for (auto &w : why)
			tap::diag("%s", w.c_str());
		fflush(stdout);
		why.clear();
		return r;
	}
};

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ---- the fake peer ----------------------------------------------------------

struct {
	int fd = -1;
	uint8_t me[4], dev[4];		// IPv4, network order
	sockaddr_in to{};		// the device's UDP 4791
} peer;

void die(const char *what)
{
	fprintf(stderr, "sroce_wire: %s: %s\n", what, strerror(errno));
	exit(2);
}

void peer_open(const char *me, const char *dev)
{
	if (inet_pton(AF_INET, me, peer.me) != 1 || inet_pton(AF_INET, dev, peer.dev) != 1) {
		fprintf(stderr, "sroce_wire: -l and -r take IPv4 addresses\n");
		exit(2);
	}
	peer.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (peer.fd < 0)
		die("socket");
	// DF: never fragmented, and IP ID 0 (unconnected), as the ICRC assumes.
	int pmtu = IP_PMTUDISC_DO, buf = 4 << 20;
	if (setsockopt(peer.fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		die("IP_MTU_DISCOVER");
	setsockopt(peer.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(ROCE_PORT);
	memcpy(&a.sin_addr, peer.me, 4);
	if (bind(peer.fd, (sockaddr *)&a, sizeof(a)))
		die("bind UDP 4791 (is there a RoCE device in this namespace?)");
	peer.to.sin_family = AF_INET;
	peer.to.sin_port = htons(ROCE_PORT);
	memcpy(&peer.to.sin_addr, peer.dev, 4);
}

// Seal @f and send it to the device.
void peer_send(const fields &f)
{
	std::vector<uint8_t> b = build(f);
	size_t len = b.size() - ICRC;
	uint32_t crc = icrc(b.data(), len, peer.me, peer.dev, ROCE_PORT, ROCE_PORT);
	for (int j = 0; j < 4; j++)
		b[len + j] = crc >> (8 * j);
	if (g_verbose)
		tap::diag("  -> %s", describe(f).c_str());
	if (sendto(peer.fd, b.data(), b.size(), 0, (sockaddr *)&peer.to, sizeof(peer.to)) !=
	    (ssize_t)b.size())
		die("sendto");
}

// One datagram within @timeout seconds: parsed, its ICRC checked.
bool peer_recv(rx &r, double timeout)
{
	pollfd p = {peer.fd, POLLIN, 0};
	int ms = timeout <= 0 ? 0 : (int)(timeout * 1000) + 1;
	if (poll(&p, 1, ms) != 1)
		return false;
	uint8_t b[4096];
	sockaddr_in from{};
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(peer.fd, b, sizeof(b), 0, (sockaddr *)&from, &fl);
	if (n < 0)
		return false;
	parse(b, n, r);
	r.sport = ntohs(from.sin_port);
	if (r.parsed) {
		uint32_t want = icrc(b, n - ICRC, peer.dev, peer.me, r.sport, ROCE_PORT);
		uint32_t got = b[n - 4] | b[n - 3] << 8 | b[n - 2] << 16 | (uint32_t)b[n - 1] << 24;
		r.icrc_ok = want == got;
	}
	if (g_verbose)
		tap::diag("  <- %s%s", r.parsed ? describe(r.f).c_str() : "(unparsable)",
			  r.icrc_ok ? "" : " BAD ICRC");
	return true;
}

// Receive until @want datagrams came (then a quiet period more, to catch
// any beyond) or g_wait seconds passed; with @want 0, for a quiet period.
// A datagram that does not parse, fails its ICRC, has a P_Key other than
// the default or goes to another QP than the peer's fails @P.
std::vector<rx> collect(point &P, size_t want)
{
	std::vector<rx> got;
	double end = now() + (want ? g_wait : g_quiet);
	bool quiet = !want;
	for (;;) {
		double left = end - now();
		rx r;
		if (left <= 0)
			break;
		if (!peer_recv(r, left))
			continue;
		if (!r.parsed)
			P.fail("an unparsable datagram of %zu bytes", r.len);
		else if (!r.icrc_ok)
			P.fail("%s: bad ICRC", describe(r.f).c_str());
		else if (r.f.qpn != PEER_QPN || (r.pkey & 0x7fff) != 0x7fff || !r.pad_zero)
			P.fail("%s: dest QPN 0x%x (want 0x%x), P_Key 0x%x, pad bytes %s",
			       describe(r.f).c_str(), r.f.qpn, PEER_QPN, r.pkey,
			       r.pad_zero ? "zero" : "NOT zero");
		got.push_back(r);
		if (!quiet && got.size() >= want) {
			quiet = true;
			end = now() + g_quiet;
		}
	}
	return got;
}

void drain_peer()
{
	rx r;
	while (peer_recv(r, 0))
		;
}

std::string list(const std::vector<rx> &v)
{
	std::string s;
	for (auto &r : v) {
		char b[40];
		snprintf(b, sizeof(b), "%s%s@%06x/%zu", s.empty() ? "" : " ", op_name(r.f.op),
			 r.f.psn, r.f.payload.size());
		s += b;
	}
	return s.empty() ? "(none)" : s;
}

// Does @got carry what @want says a request is? "" if so, else why not.
std::string mismatch(const rx &got, const fields &want)
{
	char b[300];
	const fields &g = got.f;
	uint32_t m = op_mask[want.op];
	if (g.op != want.op || g.psn != want.psn) {
		snprintf(b, sizeof(b), "%s, want %s", describe(g).c_str(), describe(want).c_str());
		return b;
	}
	if ((m & M_RETH) && (g.va != want.va || g.rkey != want.rkey || g.dmalen != want.dmalen)) {
		snprintf(b, sizeof(b), "%s: RETH, want va 0x%llx rkey 0x%x len %u",
			 describe(g).c_str(), (unsigned long long)want.va, want.rkey, want.dmalen);
		return b;
	}
	if ((m & M_ATMETH) && (g.va != want.va || g.rkey != want.rkey ||
			       g.swap_add != want.swap_add ||
			       (want.op == OP_CMP_SWAP && g.compare != want.compare))) {
		snprintf(b, sizeof(b),
			 "%s: AtomicETH swap/add 0x%llx compare 0x%llx, want va 0x%llx rkey 0x%x "
			 "swap/add 0x%llx compare 0x%llx",
			 describe(g).c_str(), (unsigned long long)g.swap_add,
			 (unsigned long long)g.compare, (unsigned long long)want.va, want.rkey,
			 (unsigned long long)want.swap_add, (unsigned long long)want.compare);
		return b;
	}
	if (g.payload != want.payload) {
		size_t i = 0;
		while (i < g.payload.size() && i < want.payload.size() &&
		       g.payload[i] == want.payload[i])
			i++;
		snprintf(b, sizeof(b), "%s: payload of %zu bytes differs from the posted %zu at byte %zu",
			 describe(g).c_str(), g.payload.size(), want.payload.size(), i);
		return b;
	}
	return "";
}

// ---- the device and its victims ----------------------------------------------

struct {
	const char *name = nullptr;
	int gid_index = -1;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_gid peer_gid{};
} dev;

// A hw counter of the device's port 1, or -1.
long long counter_now(const char *name)
{
	return read_hw_counter(dev.name, name);
}

// The counters the cases look at, read at once. ib_core answers reads from
// a copy up to 10 ms old: wait that out first.
struct counters {
	static constexpr const char *names[] = {
		"stale_responses", "rnr_nak_received", "seq_nak_received", "retransmitted_packets",
		"retransmit_timeouts", "bad_ring_index", "error_nak_sent", "rx_drop_qp_state",
		"rnr_nak_sent", "rx_drop_malformed",
	};
	enum { STALE, RNR, SEQ, RETX, TIMEOUTS, BAD_RING, ERR_NAK_SENT, DROP_STATE, RNR_SENT,
	       MALFORMED, N };
	long long v[N];

	static counters read()
	{
		counters c;
		usleep(25000);
		for (int i = 0; i < N; i++)
			c.v[i] = counter_now(names[i]);
		return c;
	}
};

// @want growth of counter @i between @a and @b (want < 0: at least -want).
void check_delta(point &P, const counters &a, const counters &b, int i, long long want)
{
	if (a.v[i] < 0 || b.v[i] < 0) {
		P.fail("no hw counter %s", counters::names[i]);
		return;
	}
	long long d = b.v[i] - a.v[i];
	if (want < 0 ? d < -want : d != want)
		P.fail("%s grew by %lld, expected %s%lld", counters::names[i], d,
		       want < 0 ? "at least " : "", want < 0 ? -want : want);
}

ibv_qp *create_rc(uint32_t max_inline)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = dev.cq;
	ia.recv_cq = dev.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline;
	return ibv_create_qp(dev.pd, &ia);
}

// RESET -> INIT -> RTR, the path to the fake peer.
bool to_rtr(ibv_qp *qp, uint32_t rq_psn, int access)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu_enum(MTU);
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dev.peer_gid;
	a.ah_attr.grh.sgid_index = dev.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return !ibv_modify_qp(qp, &a, mask);
}

// RTR -> RTS. Timeout 22 (17 s): no retransmission timer fires while a
// case replays its answers; retries and RNR retries unlimited enough.
bool to_rts(ibv_qp *qp, uint32_t sq_psn, int max_rd_atomic)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 22;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = max_rd_atomic;
	return !ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC);
}

ibv_qp_state state_of(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (ibv_qp_state)-1;
	return a.qp_state;
}

bool wait_state(ibv_qp *qp, ibv_qp_state s)
{
	double end = now() + g_wait;
	while (state_of(qp) != s && now() < end)
		usleep(10000);
	return state_of(qp) == s;
}

const char *state_name(ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "?";
	}
}

// Completions of the shared CQ until @n came or g_wait passed; then what
// else is there.
std::vector<ibv_wc> wait_completions(size_t n, ibv_cq *cq = nullptr)
{
	std::vector<ibv_wc> v;
	double end = now() + g_wait;
	for (;;) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq ? cq : dev.cq, 16, wc);
		for (int i = 0; i < k; i++)
			v.push_back(wc[i]);
		if (k > 0)
			continue;
		if (v.size() >= n || now() >= end)
			break;
		usleep(1000);
	}
	return v;
}

// Async events: does IBV_EVENT_QP_FATAL for @qp come within g_wait?
// Every event read is acknowledged (ibv_destroy_qp waits for that).
bool saw_qp_fatal(ibv_qp *qp)
{
	double end = now() + g_wait;
	for (;;) {
		double left = end - now();
		pollfd p = {dev.ctx->async_fd, POLLIN, 0};
		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) != 1)
			return false;
		ibv_async_event ev;
		if (ibv_get_async_event(dev.ctx, &ev))
			return false;
		bool hit = ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp;
		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	}
}

void drain_async()
{
	pollfd p = {dev.ctx->async_fd, POLLIN, 0};
	while (poll(&p, 1, 0) == 1) {
		ibv_async_event ev;
		if (ibv_get_async_event(dev.ctx, &ev))
			return;
		ibv_ack_async_event(&ev);
	}
}

void destroy_qp(ibv_qp *&qp)
{
	if (!qp)
		return;
	drain_async();
	ibv_destroy_qp(qp);
	qp = nullptr;
	wait_completions(0);	// what it left in the CQ
}

// The uverbs POST_SEND command with no work requests: the doorbell.
int ring_doorbell(ibv_qp *qp)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_post_send cmd;
	} req = {};
	ib_uverbs_post_send_resp resp = {};

	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = reinterpret_cast<uintptr_t>(&resp);
	req.cmd.qp_handle = qp->handle;
	req.cmd.wqe_size = sizeof(ib_uverbs_send_wr);
	ssize_t n = write(qp->context->cmd_fd, &req, sizeof(req));
	return n == static_cast<ssize_t>(sizeof(req)) ? 0 : errno;
}

sroce::qp *sqp(ibv_qp *qp) { return reinterpret_cast<sroce::qp *>(qp); }

sroce_ring_hdr *sq_hdr(ibv_qp *qp) { return static_cast<sroce_ring_hdr *>(sqp(qp)->sq_map); }

uint8_t *sq_slot(ibv_qp *qp, uint32_t index)
{
	auto *q = sqp(qp);
	return reinterpret_cast<uint8_t *>(sq_hdr(qp)) + SROCE_RING_DATA_OFFSET +
	       (size_t)(index & (q->sq.entries() - 1)) * q->sq.stride();
}

// A registered buffer that frees itself.
struct region {
	uint8_t *buf = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;

	bool make(size_t n, int access)
	{
		len = n;
		if (posix_memalign(reinterpret_cast<void **>(&buf), 4096, n))
			return false;
		memset(buf, 0, n);
		mr = ibv_reg_mr(dev.pd, buf, n, access);
		return mr != nullptr;
	}
	~region()
	{
		if (mr)
			ibv_dereg_mr(mr);
		free(buf);
	}
};

uint8_t pattern(uint32_t seed, size_t i) { return (uint8_t)(seed * 37 + i * 7 + (i >> 8) + 1); }

// ---- case dmalen: the responder and DMA lengths above 2^31 ------------------

constexpr int REMOTE_RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE;

void case_dmalen()
{
	constexpr size_t MR_LEN = 64 * 1024;
	region r;
	if (!tap::check(r.make(MR_LEN, REMOTE_RW), "dmalen: a 64 KiB MR open to remote READ and WRITE"))
		return;
	for (size_t i = 0; i < MR_LEN; i++)
		r.buf[i] = pattern(1, i);
	const uint64_t va = (uintptr_t)r.buf;
	uint32_t rq_psn = 0x3a0000;

	// The set-up answers: a READ of 3000 bytes, a WRITE of 16.
	{
		point P;
		ibv_qp *qp = create_rc(0);
		if (!qp || !to_rtr(qp, rq_psn, REMOTE_RW)) {
			P.fail("victim QP to RTR: %s", strerror(errno));
		} else {
			fields f;
			f.op = OP_READ_REQ, f.qpn = qp->qp_num, f.psn = rq_psn;
			f.va = va + 100, f.rkey = r.mr->rkey, f.dmalen = 3000;
			peer_send(f);
			auto got = collect(P, 3);
			static const uint8_t ops[] = {OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
						      OP_READ_RESP_LAST};
			if (got.size() != 3)
				P.fail("%zu packets: %s", got.size(), list(got).c_str());
			for (size_t i = 0; i < got.size() && i < 3; i++) {
				fields w;
				w.op = ops[i], w.psn = psn_add(rq_psn, i);
				w.payload.assign(r.buf + 100 + i * MTU,
						 r.buf + 100 + std::min<size_t>(3000, (i + 1) * MTU));
				std::string why = mismatch(got[i], w);
				if (!why.empty())
					P.fail("response %zu: %s", i, why.c_str());
				if (i != 1 && (got[i].f.syndrome & 0xe0) != 0)
					P.fail("response %zu: AETH syndrome 0x%02x, not an ACK", i,
					       got[i].f.syndrome);
			}
			f = {};
			f.op = OP_WRITE_ONLY, f.qpn = qp->qp_num, f.psn = psn_add(rq_psn, 3);
			f.ackreq = true;
			f.va = va + 8192, f.rkey = r.mr->rkey, f.dmalen = 16;
			f.payload.assign(16, 0xc3);
			peer_send(f);
			got = collect(P, 1);
			if (got.size() != 1 || got[0].f.op != OP_ACK ||
			    (got[0].f.syndrome & 0xe0) != 0 || got[0].f.psn != f.psn)
				P.fail("WRITE ONLY 16 bytes: answered by %s", list(got).c_str());
			for (size_t i = 0; i < 16; i++)
				if (r.buf[8192 + i] != 0xc3) {
					P.fail("WRITE ONLY 16 bytes: byte %zu not written", i);
					break;
				}
			for (size_t i = 0; i < 16; i++)
				r.buf[8192 + i] = pattern(1, 8192 + i);
			if (state_of(qp) != IBV_QPS_RTR)
				P.fail("victim QP in %s after valid requests", state_name(state_of(qp)));
		}
		destroy_qp(qp);
		P.report("dmalen: the set-up answers: READ 3000 bytes -> 3 READ responses with the "
			 "MR's bytes, WRITE 16 bytes -> ACK, data landed");
	}

	struct round {
		const char *what;
		uint8_t op;
		uint32_t dmalen;
		uint8_t want;
	};
	static const round rounds[] = {
		{"READ, DMA length 2^31+1", OP_READ_REQ, 0x80000001U, SYN_NAK_INV_REQ},
		{"READ, DMA length 2^32-1", OP_READ_REQ, 0xffffffffU, SYN_NAK_INV_REQ},
		{"WRITE FIRST, DMA length 2^31+1", OP_WRITE_FIRST, 0x80000001U, SYN_NAK_INV_REQ},
		{"WRITE ONLY, DMA length 2^31+1", OP_WRITE_ONLY, 0x80000001U, SYN_NAK_INV_REQ},
		{"READ, DMA length 2^31 (a 64 KiB MR)", OP_READ_REQ, 0x80000000U, SYN_NAK_REM_ACCESS},
	};
	for (const round &rd : rounds) {
		rq_psn = psn_add(rq_psn, 0x100);
		point P1, P2, P3;
		ibv_qp *qp = create_rc(0);
		if (!qp || !to_rtr(qp, rq_psn, REMOTE_RW)) {
			P1.fail("victim QP to RTR: %s", strerror(errno));
			P1.report("dmalen: %s: set-up", rd.what);
			destroy_qp(qp);
			continue;
		}
		counters c0 = counters::read();
		fields f;
		f.op = rd.op, f.qpn = qp->qp_num, f.psn = rq_psn, f.ackreq = true;
		f.va = va, f.rkey = r.mr->rkey, f.dmalen = rd.dmalen;
		if (rd.op == OP_WRITE_FIRST)
			f.payload.assign(MTU, 0x5e);
		else if (rd.op == OP_WRITE_ONLY)
			f.payload.assign(16, 0x5e);
		peer_send(f);
		auto got = collect(P1, 1);
		counters c1 = counters::read();
		const rx *nak = nullptr;
		size_t others = 0;
		for (auto &g : got) {
			if (!nak && g.f.op == OP_ACK)
				nak = &g;
			else
				others++;
		}
		if (!nak)
			P1.fail("no ACK/NAK came: %s", list(got).c_str());
		else if (nak->f.syndrome != rd.want || nak->f.psn != rq_psn)
			P1.fail("answered by AETH syndrome 0x%02x at PSN 0x%06x, expected 0x%02x at 0x%06x",
				nak->f.syndrome, nak->f.psn, rd.want, rq_psn);
		check_delta(P1, c0, c1, counters::ERR_NAK_SENT, 1);
		P1.report("dmalen: %s: NAK %s (AETH 0x%02x) at the request's PSN", rd.what,
			  rd.want == SYN_NAK_INV_REQ ? "Invalid Request" : "Remote Access Error",
			  rd.want);

		if (others)
			P2.fail("besides the NAK: %s", list(got).c_str());
		for (size_t i = 0; i < MR_LEN; i++)
			if (r.buf[i] != pattern(1, i)) {
				P2.fail("MR byte %zu changed", i);
				break;
			}
		P2.report("dmalen: %s: no READ response nor anything else, the MR unchanged", rd.what);

		ibv_qp_state s = wait_state(qp, IBV_QPS_ERR) ? IBV_QPS_ERR : state_of(qp);
		if (s != IBV_QPS_ERR)
			P3.fail("victim QP in %s", state_name(s));
		P3.report("dmalen: %s: victim QP moved to ERR", rd.what);
		destroy_qp(qp);
	}
}

// ---- the requester series (req-edges, tamper-*) -------------------------------

// The WQEs the victim requester posts, in order, and the PSNs (relative
// to the first) each takes at MTU 1024:
//   0 SEND 101           0        4 READ 1500          6 (responses 6, 7)
//   1 SEND inline 42     1        5 CMP_SWAP           8
//   2 WRITE 2500         2 3 4    6 FETCH_ADD          9
//   3 WRITE inline 61    5        7 SEND 1499          10 11
// so max_psn is 12. The first PSN is 0xfffffb: the window wraps at 5.
struct wqe_spec {
	const char *name;
	ibv_wr_opcode op;
	uint32_t len;
	bool inl;
};

const wqe_spec series_wqes[] = {
	{"SEND 101", IBV_WR_SEND, 101, false},
	{"SEND inline 42", IBV_WR_SEND, 42, true},
	{"WRITE 2500", IBV_WR_RDMA_WRITE, 2500, false},
	{"WRITE inline 61", IBV_WR_RDMA_WRITE, 61, true},
	{"READ 1500", IBV_WR_RDMA_READ, 1500, false},
	{"CMP_SWAP", IBV_WR_ATOMIC_CMP_AND_SWP, 8, false},
	{"FETCH_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, false},
	{"SEND 1499", IBV_WR_SEND, 1499, false},
};
constexpr int NW = sizeof(series_wqes) / sizeof(series_wqes[0]);
constexpr uint32_t SQ_PSN = 0xfffffa;		// the warm-up SEND's
constexpr uint64_t WARMUP_WR_ID = 1000;
constexpr uint64_t CS_COMPARE = 0x1111222233334444ULL, CS_SWAP = 0x5555666677778888ULL;
constexpr uint64_t FA_ADD = 0x0102030405060708ULL;
constexpr uint64_t ORIG_CS = 0x0badc0de0badc0deULL, ORIG_CS_DUP = 0xfeedfacefeedfaceULL,
		   ORIG_FA = 0x7777000077770000ULL;
// Local memory: one MR; each WQE's data at w * 4096, the decoys (what a
// tampered slot points at) from DECOY on.
constexpr size_t SLOT_BYTES = 4096, DECOY = NW * SLOT_BYTES, LOCAL_LEN = 2 * DECOY;

struct series {
	const char *tag;
	ibv_qp *qp = nullptr;
	region local;
	uint32_t S = psn_add(SQ_PSN, 1);	// PSN of WQE 0
	uint32_t first_slot = 0;		// SQ index of WQE 0
	uint32_t max_rel = 0;
	int first_rel[NW], last_rel[NW];	// PSNs of each WQE
	std::vector<fields> want;		// by relative PSN (op 0xff: a hole)
	std::vector<uint32_t> req_rels;		// relative PSNs of the requests
	std::vector<uint8_t> read_data;		// what the peer's READ responses carry
	std::vector<ibv_wc> wcs;		// every completion, in order
	counters cnt;
	bool tampered = false;

	uint32_t psn(int rel) const { return psn_add(S, rel); }
	uint8_t *data(int w) { return local.buf + w * SLOT_BYTES; }
	uint64_t wr_id(int w) const { return 0x5e000 + w; }
	uint64_t raddr(int w) const { return 0x7e0000000000ULL + (uint64_t)w * 0x100000; }
	uint32_t rkey(int w) const { return 0xa000 + w; }
};

fields ack(series &s, int rel, uint8_t syndrome = SYN_ACK)
{
	fields f;
	f.op = OP_ACK;
	f.qpn = s.qp->qp_num;
	f.psn = s.psn(rel);
	f.syndrome = syndrome;
	return f;
}

fields read_resp(series &s, uint8_t op, int rel, size_t off, size_t len)
{
	fields f = ack(s, rel);
	f.op = op;
	f.payload.assign(s.read_data.begin() + off, s.read_data.begin() + off + len);
	return f;
}

fields atomic_ack(series &s, int rel, uint64_t orig)
{
	fields f = ack(s, rel);
	f.op = OP_ATOMIC_ACK;
	f.orig = orig;
	return f;
}

// The request packets the WQEs must make: s.want, s.req_rels.
void series_expect(series &s)
{
	int rel = 0;
	s.want.clear();
	s.req_rels.clear();
	for (int w = 0; w < NW; w++) {
		const wqe_spec &sp = series_wqes[w];
		const uint8_t *d = s.data(w);
		s.first_rel[w] = rel;
		auto add = [&](fields f) {
			fields hole;
			hole.op = 0xff;
			f.psn = s.psn(rel);
			if ((int)s.want.size() <= rel)
				s.want.resize(rel + 1, hole);
			s.want[rel] = f;
			s.req_rels.push_back(rel);
		};
		fields f;
		switch (sp.op) {
		case IBV_WR_RDMA_READ:
			f.op = OP_READ_REQ;
			f.va = s.raddr(w), f.rkey = s.rkey(w), f.dmalen = sp.len;
			add(f);
			rel += (sp.len + MTU - 1) / MTU;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD: {
			bool cs = sp.op == IBV_WR_ATOMIC_CMP_AND_SWP;
			f.op = cs ? OP_CMP_SWAP : OP_FETCH_ADD;
			f.va = s.raddr(w), f.rkey = s.rkey(w);
			f.swap_add = cs ? CS_SWAP : FA_ADD;
			f.compare = cs ? CS_COMPARE : FA_ADD;
			add(f);
			rel++;
			break;
		}
		default: {
			bool wr = sp.op == IBV_WR_RDMA_WRITE;
			uint32_t n = (sp.len + MTU - 1) / MTU;
			for (uint32_t k = 0; k < n; k++) {
				bool first = k == 0, last = k == n - 1;
				f = {};
				if (wr)
					f.op = first && last ? OP_WRITE_ONLY : first ? OP_WRITE_FIRST
									 : last ? OP_WRITE_LAST
										: OP_WRITE_MIDDLE;
				else
					f.op = first && last ? OP_SEND_ONLY : first ? OP_SEND_FIRST
									: last ? OP_SEND_LAST
									       : OP_SEND_MIDDLE;
				if (wr && first)
					f.va = s.raddr(w), f.rkey = s.rkey(w), f.dmalen = sp.len;
				f.payload.assign(d + k * MTU, d + std::min(sp.len, (k + 1) * MTU));
				add(f);
				rel++;
			}
			break;
		}
		}
		s.last_rel[w] = rel - 1;
	}
	s.max_rel = rel;
}

// Set up the victim requester and post the series; its requests checked.
bool series_setup(series &s)
{
	point P;
	if (!s.local.make(LOCAL_LEN, IBV_ACCESS_LOCAL_WRITE)) {
		P.report("%s: local MR", s.tag);
		return false;
	}
	s.qp = create_rc(64);
	if (!s.qp || !to_rtr(s.qp, 0x444444, 0) || !to_rts(s.qp, SQ_PSN, 4)) {
		P.fail("victim QP to RTS: %s", strerror(errno));
		P.report("%s: victim RC requester", s.tag);
		return false;
	}
	drain_peer();
	wait_completions(0);

	// Warm-up: one SEND, acknowledged without credits ("invalid": the
	// requester then never waits for end-to-end credits).
	memcpy(s.data(0), "warm-up!", 8);
	ibv_sge sge = {(uintptr_t)s.data(0), 8, s.local.mr->lkey};
	ibv_send_wr wr{}, *bad;
	wr.wr_id = WARMUP_WR_ID;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(s.qp, &wr, &bad))
		P.fail("post the warm-up SEND: %s", strerror(errno));
	auto got = collect(P, 1);
	fields w;
	w.op = OP_SEND_ONLY, w.psn = SQ_PSN;
	w.payload.assign(s.data(0), s.data(0) + 8);
	if (got.size() != 1 || !mismatch(got[0], w).empty())
		P.fail("warm-up SEND: received %s", list(got).c_str());
	fields a = ack(s, -1);
	peer_send(a);
	auto wc = wait_completions(1);
	if (wc.size() != 1 || wc[0].wr_id != WARMUP_WR_ID || wc[0].status != IBV_WC_SUCCESS)
		P.fail("warm-up SEND: %zu completions (first: wr_id %llu, %s)", wc.size(),
		       wc.empty() ? 0ULL : (unsigned long long)wc[0].wr_id,
		       wc.empty() ? "-" : ibv_wc_status_str(wc[0].status));
	if (!P.report("%s: victim RC requester in RTS, sq_psn 0x%06x: a warm-up SEND goes out "
		      "and completes on its ACK", s.tag, SQ_PSN))
		return false;

	// The series.
	for (int i = 0; i < NW; i++)
		for (size_t k = 0; k < SLOT_BYTES; k++)
			s.data(i)[k] = pattern(10 + i, k);
	for (size_t k = DECOY; k < LOCAL_LEN; k++)
		s.local.buf[k] = 0xd0;
	uint64_t *cs_res = (uint64_t *)s.data(5), *fa_res = (uint64_t *)s.data(6);
	*cs_res = 0x1234, *fa_res = 0x5678;
	memset(s.data(4), 0, 2048);	// the READ's target
	series_expect(s);
	s.read_data.resize(series_wqes[4].len);
	for (size_t k = 0; k < s.read_data.size(); k++)
		s.read_data[k] = pattern(77, k);

	ibv_sge sges[NW];
	ibv_send_wr wrs[NW]{};
	for (int i = 0; i < NW; i++) {
		const wqe_spec &sp = series_wqes[i];
		sges[i] = {(uintptr_t)s.data(i), sp.len, s.local.mr->lkey};
		wrs[i].wr_id = s.wr_id(i);
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].opcode = sp.op;
		wrs[i].send_flags = IBV_SEND_SIGNALED | (sp.inl ? IBV_SEND_INLINE : 0);
		wrs[i].next = i + 1 < NW ? &wrs[i + 1] : nullptr;
		if (sp.op == IBV_WR_ATOMIC_CMP_AND_SWP || sp.op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wrs[i].wr.atomic.remote_addr = s.raddr(i);
			wrs[i].wr.atomic.rkey = s.rkey(i);
			wrs[i].wr.atomic.compare_add =
				sp.op == IBV_WR_ATOMIC_CMP_AND_SWP ? CS_COMPARE : FA_ADD;
			wrs[i].wr.atomic.swap = CS_SWAP;
		} else {
			wrs[i].wr.rdma.remote_addr = s.raddr(i);
			wrs[i].wr.rdma.rkey = s.rkey(i);
		}
	}
	s.first_slot = sqp(s.qp)->sq.index();
	s.cnt = counters::read();
	if (ibv_post_send(s.qp, wrs, &bad))
		P.fail("post the %d WQEs: %s", NW, strerror(errno));
	got = collect(P, s.req_rels.size());
	if (got.size() != s.req_rels.size())
		P.fail("%zu request packets, expected %zu: %s", got.size(), s.req_rels.size(),
		       list(got).c_str());
	for (size_t i = 0; i < got.size() && i < s.req_rels.size(); i++) {
		std::string why = mismatch(got[i], s.want[s.req_rels[i]]);
		if (!why.empty())
			P.fail("packet %zu: %s", i, why.c_str());
	}
	if (!wait_completions(0).empty())
		P.fail("completions before any answer");
	return P.report("%s: the %d WQEs (SEND, SEND inline, WRITE, WRITE inline, READ, "
			"CMP_SWAP, FETCH_ADD, SEND) go out as %zu requests, PSN 0x%06x..0x%06x: "
			"opcodes, headers and payload bytes as posted",
			s.tag, NW, s.req_rels.size(), s.psn(0), s.psn(s.max_rel - 1));
}

// What a step expects: want().from(3).done({1}).rnr(1) ...
struct want {
	int from_rel = -1;		// the PSN (relative) resent from; -1: none
	std::vector<int> wqes;		// WQEs that complete now, in order
	long long n_stale = 0, n_rnr = 0, n_seq = 0;

	want &from(int rel) { from_rel = rel; return *this; }
	want &done(std::vector<int> w) { wqes = std::move(w); return *this; }
	want &stale(long long n) { n_stale = n; return *this; }
	want &rnr(long long n) { n_rnr = n; return *this; }
	want &seq(long long n) { n_seq = n; return *this; }
};

// Send @answers; then the requests resent must be exactly the series'
// from w.resend_from on, as posted; the completions w.done, in order, with
// success; the counters grow as w says (retransmitted_packets by the
// resends). @extra checks more (memory).
void step(series &s, const char *desc, const std::vector<fields> &answers, const want &w,
	  const std::function<void(point &)> &extra = {})
{
	point P;
	std::vector<uint32_t> exp;
	if (w.from_rel >= 0)
		for (uint32_t r : s.req_rels)
			if ((int)r >= w.from_rel)
				exp.push_back(r);
	for (const fields &a : answers)
		peer_send(a);
	auto got = collect(P, exp.size());
	if (got.size() != exp.size())
		P.fail("%zu packets sent, expected %zu (the requests from PSN 0x%06x on): %s",
		       got.size(), exp.size(), w.from_rel >= 0 ? s.psn(w.from_rel) : 0,
		       list(got).c_str());
	for (size_t i = 0; i < got.size() && i < exp.size(); i++) {
		std::string why = mismatch(got[i], s.want[exp[i]]);
		if (!why.empty())
			P.fail("resend %zu: %s", i, why.c_str());
	}
	auto wc = wait_completions(w.wqes.size());
	if (wc.size() != w.wqes.size())
		P.fail("%zu completions, expected %zu", wc.size(), w.wqes.size());
	for (size_t i = 0; i < wc.size(); i++) {
		s.wcs.push_back(wc[i]);
		uint64_t id = i < w.wqes.size() ? s.wr_id(w.wqes[i]) : 0;
		if (wc[i].wr_id != id || wc[i].status != IBV_WC_SUCCESS)
			P.fail("completion %zu: wr_id 0x%llx %s, expected 0x%llx (%s) success", i,
			       (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status),
			       (unsigned long long)id,
			       i < w.wqes.size() ? series_wqes[w.wqes[i]].name : "none");
	}
	counters c = counters::read();
	check_delta(P, s.cnt, c, counters::STALE, w.n_stale);
	check_delta(P, s.cnt, c, counters::RNR, w.n_rnr);
	check_delta(P, s.cnt, c, counters::SEQ, w.n_seq);
	check_delta(P, s.cnt, c, counters::RETX, exp.size());
	s.cnt = c;
	if (extra)
		extra(P);
	std::string d;
	if (w.from_rel >= 0) {
		char b[80];
		snprintf(b, sizeof(b), "; %zu requests resent from 0x%06x", exp.size(),
			 s.psn(w.from_rel));
		d += b;
	} else {
		d += "; nothing resent";
	}
	if (!w.wqes.empty()) {
		d += "; completes";
		for (int x : w.wqes)
			d += std::string(" ") + series_wqes[x].name;
	}
	if (w.n_stale)
		d += "; stale_responses +" + std::to_string(w.n_stale);
	P.report("%s: %s%s", s.tag, desc, d.c_str());
}

bool bytes_are(point &P, const char *what, const uint8_t *p, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != want[i]) {
			P.fail("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i], want[i]);
			return false;
		}
	return true;
}

bool u64_is(point &P, const char *what, const uint8_t *p, uint64_t want)
{
	uint64_t v;
	memcpy(&v, p, 8);
	if (v != want)
		P.fail("%s: 0x%016llx, expected 0x%016llx", what, (unsigned long long)v,
		       (unsigned long long)want);
	return v == want;
}

// The answers at the edges of the window, step by step (PSNs relative to
// WQE 0's; una and max_psn as the completer has them).
void series_steps(series &s)
{
	const uint32_t TOP = s.max_rel;		// max_psn
	const size_t RL = series_wqes[4].len;
	char d[160];

	step(s, "ACK at the first PSN (the SEND's)", {ack(s, 0)}, want().done({0}));
	step(s, "ACK at una-1 again (a repeated ACK)", {ack(s, 0)}, want());
	step(s, "ACK at una-2 (out of the window)", {ack(s, -1)}, want().stale(1));
	step(s, "ACK at max_psn (one past the last PSN sent)", {ack(s, TOP)}, want().stale(1));
	snprintf(d, sizeof(d), "ACK 2^23 beyond una (PSN 0x%06x)", s.psn(1 + (1 << 23)));
	step(s, d, {ack(s, 1 + (1 << 23))}, want().stale(1));
	step(s, "RNR NAK at una (the inline SEND)", {ack(s, 1, SYN_RNR | 1)},
	     want().from(1).rnr(1));
	step(s, "RNR NAK mid-window (the WRITE's middle packet)", {ack(s, 3, SYN_RNR | 1)},
	     want().from(3).done({1}).rnr(1));
	step(s, "sequence NAK at una", {ack(s, 3, SYN_NAK_SEQ)}, want().from(3).seq(1));
	step(s, "sequence NAK mid-window (the inline WRITE)", {ack(s, 5, SYN_NAK_SEQ)},
	     want().from(5).done({2}).seq(1));
	step(s, "sequence NAK at the last PSN (beyond the READ waiting for its data)",
	     {ack(s, TOP - 1, SYN_NAK_SEQ)}, want().from(6).done({3}).seq(1));
	step(s, "READ response LAST before FIRST (out of order): the READ asked again",
	     {read_resp(s, OP_READ_RESP_LAST, 7, MTU, RL - MTU)}, want().from(6).stale(1));
	step(s, "READ response FIRST, 1024 bytes", {read_resp(s, OP_READ_RESP_FIRST, 6, 0, MTU)},
	     want());
	{
		fields f = read_resp(s, OP_READ_RESP_LAST, 7, MTU, RL - MTU);
		f.payload.resize(f.payload.size() + 4, 0xee);
		step(s, "READ response LAST 4 bytes too long (480 of 476)", {f}, want().stale(1),
		     [&](point &P) {
			     std::vector<uint8_t> z(RL - MTU + 4, 0);
			     bytes_are(P, "READ buffer beyond the FIRST response", s.data(4) + MTU,
				       z.data(), z.size());
		     });
	}
	step(s, "READ response LAST, 476 bytes", {read_resp(s, OP_READ_RESP_LAST, 7, MTU, RL - MTU)},
	     want().done({4}), [&](point &P) {
		     bytes_are(P, "READ buffer", s.data(4), s.read_data.data(), RL);
		     std::vector<uint8_t> z(2048 - RL, 0);
		     bytes_are(P, "past the READ buffer", s.data(4) + RL, z.data(), z.size());
	     });
	{
		fields f = read_resp(s, OP_READ_RESP_ONLY, 8, 0, 8);
		step(s, "READ response ONLY at the CMP_SWAP's PSN", {f}, want().stale(1),
		     [&](point &P) { u64_is(P, "CMP_SWAP result", s.data(5), 0x1234); });
	}
	step(s, "atomic ACK for the CMP_SWAP", {atomic_ack(s, 8, ORIG_CS)}, want().done({5}),
	     [&](point &P) { u64_is(P, "CMP_SWAP result", s.data(5), ORIG_CS); });
	step(s, "the CMP_SWAP's atomic ACK again, another original value", {atomic_ack(s, 8, ORIG_CS_DUP)},
	     want().stale(1), [&](point &P) {
		     u64_is(P, "CMP_SWAP result", s.data(5), ORIG_CS);
		     u64_is(P, "FETCH_ADD result", s.data(6), 0x5678);
	     });
	step(s, "ACK at max_psn-1 while the FETCH_ADD waits for its atomic ACK: go back to it",
	     {ack(s, TOP - 1)}, want().from(9));
	step(s, "atomic ACK for the FETCH_ADD", {atomic_ack(s, 9, ORIG_FA)}, want().done({6}),
	     [&](point &P) { u64_is(P, "FETCH_ADD result", s.data(6), ORIG_FA); });
	step(s, "ACK at max_psn-1", {ack(s, TOP - 1)}, want().done({7}));
	step(s, "ACK at una-1 and at max_psn once all is done", {ack(s, TOP - 1), ack(s, TOP)},
	     want().stale(1));

	point P;
	std::vector<int> seen(NW, 0);
	int pos = 0;
	for (auto &wc : s.wcs) {
		int w = (int)(wc.wr_id - s.wr_id(0));
		if (w < 0 || w >= NW) {
			P.fail("a completion with wr_id 0x%llx", (unsigned long long)wc.wr_id);
			continue;
		}
		if (++seen[w] > 1)
			P.fail("%s completed %d times", series_wqes[w].name, seen[w]);
		if (w != pos++)
			P.fail("%s completed in place %d", series_wqes[w].name, pos - 1);
		static const ibv_wc_opcode ops[] = {IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
						    IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						    IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD, IBV_WC_SEND};
		if (wc.status == IBV_WC_SUCCESS && wc.opcode != ops[w])
			P.fail("%s completed as opcode %d", series_wqes[w].name, wc.opcode);
		if (wc.status == IBV_WC_SUCCESS && w == 4 && wc.byte_len != RL)
			P.fail("READ byte_len %u", wc.byte_len);
	}
	for (int w = 0; w < NW; w++)
		if (!seen[w])
			P.fail("%s never completed", series_wqes[w].name);
	if (state_of(s.qp) != IBV_QPS_RTS)
		P.fail("victim QP in %s", state_name(state_of(s.qp)));
	P.report("%s: each of the %d WQEs completed once, in posting order, with its opcode; the QP "
		 "still in RTS", s.tag, NW);
}

void case_req_edges()
{
	series s;
	s.tag = "req-edges";
	if (series_setup(s))
		series_steps(s);
	if (s.qp) {
		point P;
		check_delta(P, s.cnt, counters::read(), counters::TIMEOUTS, 0);
		P.report("req-edges: no retransmission timeout during the series (the answers alone "
			 "drove it)");
	}
	destroy_qp(s.qp);
}

// Rewrite each WQE's slot but wr_id, opcode and flags (what the kernel
// reads back at completion): other SGEs (into the decoys, other lengths),
// other inline bytes and lengths, other remote addresses, keys and atomic
// operands.
void tamper_rewrite(series &s)
{
	for (int w = 0; w < NW; w++) {
		uint8_t *slot = sq_slot(s.qp, s.first_slot + w);
		auto *q = reinterpret_cast<sroce_send_wqe *>(slot);
		const wqe_spec &sp = series_wqes[w];
		q->ex.imm_data = htonl(0x5a5a5a5a);
		q->xrc_srqn = 0;
		if (sp.inl) {
			memset(slot + SROCE_SEND_WQE_HDR, 0xee, q->inline_len);
			q->inline_len += 3;
		} else {
			auto *sge = reinterpret_cast<sroce_sge *>(slot + SROCE_SEND_WQE_HDR);
			sge->addr = (uintptr_t)s.local.buf + DECOY + w * SLOT_BYTES;
			sge->length = sp.len + 5;
		}
		if (sp.op == IBV_WR_ATOMIC_CMP_AND_SWP || sp.op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			q->wr.atomic.remote_addr += 8;
			q->wr.atomic.rkey ^= 1;
			q->wr.atomic.compare_add = ~q->wr.atomic.compare_add;
			q->wr.atomic.swap = ~q->wr.atomic.swap;
		} else {
			q->wr.rdma.remote_addr += 0x100;
			q->wr.rdma.rkey ^= 1;
		}
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s.tampered = true;
}

void case_tamper_rewrite()
{
	series s;
	s.tag = "tamper-rewrite";
	if (series_setup(s)) {
		tamper_rewrite(s);
		tap::diag("tamper-rewrite: the %d WQEs' SQ slots rewritten (SGEs, inline bytes and "
			  "lengths, remote addresses, rkeys, atomic operands)", NW);
		series_steps(s);
		point P;
		std::vector<uint8_t> d(LOCAL_LEN - DECOY, 0xd0);
		bytes_are(P, "decoy memory", s.local.buf + DECOY, d.data(), d.size());
		P.report("tamper-rewrite: the READ and atomic results landed only where posted (the "
			 "decoys the rewritten SGEs name are untouched)");
	}
	destroy_qp(s.qp);
}

// Answer @reqs as a responder would, in PSN order: a READ with its
// responses (up to 8 KiB), an atomic with its atomic ACK, the last packet
// of a SEND or WRITE with an ACK.
void answer_all(series &s, const std::vector<rx> &reqs)
{
	for (const rx &r : reqs) {
		const fields &f = r.f;
		fields a = ack(s, 0);
		a.psn = f.psn;
		if (f.op == OP_READ_REQ && f.dmalen <= 8192) {
			uint32_t n = f.dmalen ? (f.dmalen + MTU - 1) / MTU : 1;
			for (uint32_t k = 0; k < n; k++) {
				a.op = n == 1 ? OP_READ_RESP_ONLY : k == 0 ? OP_READ_RESP_FIRST
							     : k == n - 1 ? OP_READ_RESP_LAST
									  : OP_READ_RESP_MIDDLE;
				a.psn = psn_add(f.psn, k);
				a.payload.assign(std::min(MTU, f.dmalen - k * MTU), 0x3c);
				peer_send(a);
			}
		} else if (f.op == OP_CMP_SWAP || f.op == OP_FETCH_ADD) {
			a.op = OP_ATOMIC_ACK;
			a.orig = 0x0123456789abcdefULL;
			peer_send(a);
		} else if (f.op == OP_SEND_ONLY || f.op == OP_SEND_LAST ||
			   f.op == OP_WRITE_ONLY || f.op == OP_WRITE_LAST) {
			peer_send(a);
		}
	}
}

// The producer index moved to @prod after the kernel sent the series,
// then the doorbell: a corrupt ring.
void tamper_prod(const char *tag, bool back)
{
	series s;
	s.tag = tag;
	if (!series_setup(s)) {
		destroy_qp(s.qp);
		return;
	}
	drain_async();
	sroce_ring_hdr *h = sq_hdr(s.qp);
	uint32_t entries = sqp(s.qp)->sq.entries();
	uint32_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	// back: below what was fetched (prod), yet within a ring of cons.
	uint32_t bad = back ? cons + 2 : prod + entries + 1;
	counters c0 = counters::read();
	__atomic_store_n(&h->prod, bad, __ATOMIC_RELEASE);
	int db = ring_doorbell(s.qp);
	tap::diag("%s: SQ prod %u -> %u (cons %u, %u entries), doorbell: %s", tag, prod, bad, cons,
		  entries, db ? strerror(db) : "ok");

	point P1, P2, P3, P4, P5;
	if (!saw_qp_fatal(s.qp))
		P1.fail("no IBV_EVENT_QP_FATAL within %.0f s", g_wait);
	P1.report("%s: IBV_EVENT_QP_FATAL for the victim", tag);
	ibv_qp_state st = wait_state(s.qp, IBV_QPS_ERR) ? IBV_QPS_ERR : state_of(s.qp);
	if (st != IBV_QPS_ERR)
		P2.fail("victim QP in %s", state_name(st));
	P2.report("%s: victim QP in ERR", tag);
	counters c1 = counters::read();
	check_delta(P3, c0, c1, counters::BAD_RING, -1);
	P3.report("%s: bad_ring_index rises", tag);

	// The answers to the series, then what the kernel sends after the
	// tamper, answered as a responder would (READ responses, atomic ACKs,
	// ACKs), a few rounds: whatever it executes shows as completions.
	std::vector<rx> got = collect(P4, 0), more, all, series_reqs;
	for (uint32_t rel : s.req_rels) {
		rx r;
		r.f = s.want[rel];
		series_reqs.push_back(r);
	}
	answer_all(s, series_reqs);
	more = collect(P4, 0);
	got.insert(got.end(), more.begin(), more.end());
	for (int round = 0; round < 4 && !got.empty(); round++) {
		all.insert(all.end(), got.begin(), got.end());
		answer_all(s, got);
		got = collect(P4, 0);
	}
	all.insert(all.end(), got.begin(), got.end());
	size_t unknown = 0;
	for (auto &r : all) {
		uint32_t rel = (r.f.psn - s.S) & PSN_MASK;
		std::string why = rel < s.want.size() && s.want[rel].op != 0xff
					  ? mismatch(r, s.want[rel])
					  : "not a PSN of the series: " + describe(r.f);
		if (!why.empty() && unknown++ < 8)
			P4.fail("%s", why.c_str());
	}
	if (unknown)
		P4.fail("%zu packets after the tamper that are no resend of a posted WQE, of %zu: %s",
			unknown, all.size(), list(all).substr(0, 400).c_str());
	P4.report("%s: nothing sent after the tamper but resends of the posted WQEs, with their "
		  "bytes", tag);

	auto wc = wait_completions(0);
	std::vector<int> seen(NW, 0);
	std::string ids;
	for (auto &c : wc) {
		char b[64];
		snprintf(b, sizeof(b), "%s0x%llx %s", ids.empty() ? "" : ", ",
			 (unsigned long long)c.wr_id, ibv_wc_status_str(c.status));
		if (ids.size() < 600)
			ids += b;
		int w = (int)(c.wr_id - s.wr_id(0));
		if (w < 0 || w >= NW) {
			if (P5.why.size() < 8)
				P5.fail("a completion with wr_id 0x%llx (%s)",
					(unsigned long long)c.wr_id, ibv_wc_status_str(c.status));
			continue;
		}
		if (++seen[w] == 2)
			P5.fail("%s completed more than once", series_wqes[w].name);
	}
	if (wc.size() > (size_t)NW)
		P5.fail("%zu completions for %d WQEs", wc.size(), NW);
	tap::diag("%s: %zu completions after the tamper%s%s", tag, wc.size(), ids.empty() ? "" : ": ",
		  ids.c_str());
	P5.report("%s: no more completions than WQEs posted, none twice, none unknown", tag);
	destroy_qp(s.qp);
}

void case_tamper_prod_ahead() { tamper_prod("tamper-prod-ahead", false); }
void case_tamper_prod_back() { tamper_prod("tamper-prod-back", true); }

// ---- case resp-race: a failed request's resend on another CPU ---------------

const char *kRaceParams = "/sys/module/sroce_race/parameters/";

int race_param(const char *name, int set = -1)
{
	std::string path = std::string(kRaceParams) + name;
	FILE *f = fopen(path.c_str(), set < 0 ? "r" : "w");
	int v = -1;

	if (!f)
		return -1;
	if (set >= 0)
		v = fprintf(f, "%d\n", set) > 0 ? set : -1;
	else if (fscanf(f, "%d", &v) != 1)
		v = -1;
	return fclose(f) == 0 ? v : -1;
}

void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void case_resp_race()
{
	constexpr uint64_t WR1 = 0xa1, WR2 = 0xa2;
	const uint32_t psn = 0x5a0000;
	point P0, P1, P2, P3;
	region r;

	if (race_param("hits") != 0) {
		tap::check(false, "resp-race: sroce_race.ko loaded with scenario=qp_error, nothing hit");
		return;
	}
	ibv_qp_init_attr ia{};
	ia.send_cq = dev.cq;
	ia.recv_cq = dev.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 2;
	ibv_qp *qp = ibv_create_qp(dev.pd, &ia);
	if (!r.make(8192, REMOTE_RW) || !qp || !to_rtr(qp, psn, REMOTE_RW)) {
		tap::check(false, "resp-race: victim QP to RTR: %s", strerror(errno));
		destroy_qp(qp);
		return;
	}
	// Each receive WQE holds one MTU and 100 bytes: a SEND's MIDDLE
	// packet (a second MTU) does not fit, a LAST of 50 bytes would.
	for (uint64_t id : {WR1, WR2}) {
		ibv_sge sge[2] = {
			{(uintptr_t)r.buf + (id - WR1) * 4096, MTU, r.mr->lkey},
			{(uintptr_t)r.buf + (id - WR1) * 4096 + 2048, 100, r.mr->lkey},
		};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = id;
		wr.sg_list = sge;
		wr.num_sge = 2;
		if (ibv_post_recv(qp, &wr, &bad))
			P0.fail("post_recv: %s", strerror(errno));
	}
	P0.report("resp-race: victim RC QP %u in RTR, two receive WQEs of %u + 100 bytes",
		  qp->qp_num, MTU);

	counters c0 = counters::read();
	race_param("armed", 1);
	fields first, middle, last;
	first.op = OP_SEND_FIRST, first.qpn = qp->qp_num, first.psn = psn;
	first.payload.assign(MTU, 0x11);
	middle.op = OP_SEND_MIDDLE, middle.qpn = qp->qp_num, middle.psn = psn_add(psn, 1);
	middle.payload.assign(MTU, 0x22);
	last.op = OP_SEND_LAST, last.qpn = qp->qp_num, last.psn = psn_add(psn, 1);
	last.ackreq = true;
	last.payload.assign(50, 0x33);
	// Delivered in this thread's softirq (veth): the MIDDLE fails, and
	// the responder stalls before moving the QP to ERR.
	std::thread first_cpu([&] {
		pin_cpu(0);
		peer_send(first);
		peer_send(middle);
	});
	pin_cpu(1);
	bool held = false;
	for (int i = 0; i < 1000 && !held; i++) {
		held = race_param("hits") >= 1;
		if (!held)
			usleep(10000);
	}
	if (!held)
		P1.fail("the responder never stalled before moving the QP to ERR (hits %d)",
			race_param("hits"));
	// The LAST at the PSN the MIDDLE failed at, on this CPU meanwhile.
	peer_send(last);
	first_cpu.join();
	P1.report("resp-race: the MIDDLE failed, the responder held; the LAST sent meanwhile "
		  "from another CPU");

	auto got = collect(P2, 1);
	size_t naks = 0, acks = 0;
	for (auto &g : got) {
		if (g.f.op != OP_ACK)
			P2.fail("not an ACK/NAK: %s", describe(g.f).c_str());
		else if (g.f.syndrome == SYN_NAK_INV_REQ && g.f.psn == middle.psn)
			naks++;
		else if ((g.f.syndrome & 0xe0) == 0)
			acks++;
	}
	if (naks != 1 || acks)
		P2.fail("%zu NAK Invalid Request at the MIDDLE's PSN and %zu ACKs (want 1 and 0): %s",
			naks, acks, list(got).c_str());
	ibv_qp_state st = wait_state(qp, IBV_QPS_ERR) ? IBV_QPS_ERR : state_of(qp);
	if (st != IBV_QPS_ERR)
		P2.fail("victim QP in %s", state_name(st));
	counters c1 = counters::read();
	check_delta(P2, c0, c1, counters::DROP_STATE, -1);
	P2.report("resp-race: one NAK for the MIDDLE, nothing for the LAST (dropped), QP in ERR");

	auto wc = wait_completions(2);
	int n1 = 0, n2 = 0, ok = 0;
	for (auto &w : wc) {
		n1 += w.wr_id == WR1;
		n2 += w.wr_id == WR2;
		ok += w.status == IBV_WC_SUCCESS;
		if (w.wr_id == WR1 && w.status != IBV_WC_LOC_LEN_ERR)
			P3.fail("WQE 0x%llx: %s, want local length error",
				(unsigned long long)w.wr_id, ibv_wc_status_str(w.status));
		if (w.wr_id == WR2 && w.status != IBV_WC_WR_FLUSH_ERR)
			P3.fail("WQE 0x%llx: %s, want flushed", (unsigned long long)w.wr_id,
				ibv_wc_status_str(w.status));
	}
	if (n1 != 1 || n2 != 1 || ok || wc.size() != 2)
		P3.fail("%zu completions: WQE 0xa1 %d times, 0xa2 %d times, %d successful", wc.size(),
			n1, n2, ok);
	P3.report("resp-race: each receive WQE completed once (0xa1 length error, 0xa2 flushed)");
	race_param("armed", 0);
	destroy_qp(qp);
}

// ---- case uc-no-rwqe: UC messages that find the receive queue empty ----------

// A UC responder has no RNR NAK: a SEND (or WRITE with immediate) that finds
// no receive WQE is dropped whole, silently, and the next message is taken.
void case_uc_no_rwqe()
{
	constexpr uint64_t WR1 = 0xc1, WR2 = 0xc2;
	constexpr uint32_t IMM = 0x1234abcd;
	const uint32_t psn = 0x7c0000;
	point P0, P1, P2, P3;
	region r;

	ibv_qp_init_attr ia{};
	ia.send_cq = dev.cq;
	ia.recv_cq = dev.cq;
	ia.qp_type = IBV_QPT_UC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ibv_qp *qp = ibv_create_qp(dev.pd, &ia);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (!r.make(16384, access) || !qp || !to_rtr(qp, psn, access)) {
		tap::check(false, "uc-no-rwqe: victim UC QP to RTR: %s", strerror(errno));
		destroy_qp(qp);
		return;
	}
	auto msg = [&](uint32_t at, uint32_t seed, std::vector<fields> &out) {
		static const uint8_t ops[] = {OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST};
		static const size_t lens[] = {MTU, MTU, 500};
		size_t off = 0;
		for (int i = 0; i < 3; i++) {
			fields f;
			f.op = UC | ops[i], f.qpn = qp->qp_num, f.psn = psn_add(at, i);
			for (size_t j = 0; j < lens[i]; j++)
				f.payload.push_back(pattern(seed, off + j));
			off += lens[i];
			out.push_back(f);
		}
	};
	auto write_imm = [&](uint32_t at, uint8_t byte) {
		fields f;
		f.op = UC | OP_WRITE_ONLY_IMM, f.qpn = qp->qp_num, f.psn = at;
		f.va = (uintptr_t)r.buf + 8192, f.rkey = r.mr->rkey, f.dmalen = 16;
		f.imm = IMM;
		f.payload.assign(16, byte);
		return f;
	};
	P0.report("uc-no-rwqe: victim UC QP %u in RTR, its receive queue empty", qp->qp_num);

	// A 2548-byte SEND (FIRST, MIDDLE, LAST) and a WRITE ONLY with
	// immediate, each with no receive WQE posted.
	counters c0 = counters::read();
	std::vector<fields> pkts;
	msg(psn, 3, pkts);
	pkts.push_back(write_imm(psn_add(psn, 3), 0x9d));
	for (auto &f : pkts)
		peer_send(f);
	auto got = collect(P1, 0);
	counters c1 = counters::read();
	if (!got.empty())
		P1.fail("the device answered: %s", list(got).c_str());
	auto wc = wait_completions(0);
	if (!wc.empty())
		P1.fail("%zu completions, none expected", wc.size());
	check_delta(P1, c0, c1, counters::DROP_STATE, 2);
	check_delta(P1, c0, c1, counters::RNR_SENT, 0);
	for (size_t i = 0; i < r.len; i++)
		if (r.buf[i]) {
			P1.fail("MR byte %zu written", i);
			break;
		}
	P1.report("uc-no-rwqe: a SEND and a WRITE with immediate, no receive WQE: both dropped "
		  "whole, no answer, no RNR NAK, rx_drop_qp_state +2");

	// Receive WQEs now: the next two messages land.
	for (uint64_t id : {WR1, WR2}) {
		ibv_sge sge = {(uintptr_t)r.buf + (id - WR1) * 4096, 4096, r.mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp, &wr, &bad))
			P2.fail("post_recv: %s", strerror(errno));
	}
	pkts.clear();
	msg(psn_add(psn, 4), 4, pkts);
	pkts.push_back(write_imm(psn_add(psn, 7), 0x5a));
	for (auto &f : pkts)
		peer_send(f);
	wc = wait_completions(2);
	if (wc.size() != 2 || wc[0].wr_id != WR1 || wc[0].status != IBV_WC_SUCCESS ||
	    wc[0].opcode != IBV_WC_RECV || wc[0].byte_len != 2548 || wc[1].wr_id != WR2 ||
	    wc[1].status != IBV_WC_SUCCESS || wc[1].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    wc[1].byte_len != 16 || !(wc[1].wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc[1].imm_data) != IMM) {
		P2.fail("%zu completions, want 0xc1 RECV 2548 bytes then 0xc2 RECV_RDMA_WITH_IMM "
			"16 bytes, imm 0x%x", wc.size(), IMM);
		for (auto &w : wc)
			P2.fail("  wr_id 0x%llx %s opcode %d byte_len %u imm 0x%x",
				(unsigned long long)w.wr_id, ibv_wc_status_str(w.status), w.opcode,
				w.byte_len, ntohl(w.imm_data));
	}
	for (size_t i = 0; i < 2548; i++)
		if (r.buf[i] != pattern(4, i)) {
			P2.fail("received byte %zu differs", i);
			break;
		}
	for (size_t i = 0; i < 16; i++)
		if (r.buf[8192 + i] != 0x5a) {
			P2.fail("written byte %zu differs", i);
			break;
		}
	got = collect(P2, 0);
	if (!got.empty())
		P2.fail("the device answered: %s", list(got).c_str());
	P2.report("uc-no-rwqe: then, with receive WQEs, the next SEND and WRITE with immediate "
		  "complete with their data; still no answer on the wire");

	if (state_of(qp) != IBV_QPS_RTR)
		P3.fail("victim QP in %s", state_name(state_of(qp)));
	P3.report("uc-no-rwqe: the victim QP stays in RTR");
	destroy_qp(qp);
}

// ---- case xrc: an XRC target QP and the SRQs its requests name ---------------

// The device side of the xrc case: two XRC domains, SRQs in each (their
// receives complete on one CQ of their own), and target QPs made fresh for
// each point that fails one.
struct xrc_side {
	ibv_xrcd *xrcd = nullptr, *other = nullptr;
	ibv_cq *cq = nullptr;
	ibv_srq *a = nullptr, *a2 = nullptr, *foreign = nullptr;
	uint32_t na = 0, na2 = 0, nforeign = 0;

	static ibv_xrcd *open_xrcd()
	{
		ibv_xrcd_init_attr x{};
		x.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
		x.fd = -1;
		x.oflags = O_CREAT;
		return ibv_open_xrcd(dev.ctx, &x);
	}

	ibv_srq *make_srq(ibv_xrcd *d, uint32_t &num)
	{
		ibv_srq_init_attr_ex s{};
		s.attr.max_wr = 16;
		s.attr.max_sge = 1;
		s.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		s.srq_type = IBV_SRQT_XRC;
		s.pd = dev.pd;
		s.xrcd = d;
		s.cq = cq;
		ibv_srq *q = ibv_create_srq_ex(dev.ctx, &s);
		if (q && ibv_get_srq_num(q, &num))
			num = 0;
		return q;
	}

	bool make()
	{
		xrcd = open_xrcd();
		other = open_xrcd();
		cq = ibv_create_cq(dev.ctx, 32, nullptr, nullptr, 0);
		if (!xrcd || !other || !cq)
			return false;
		a = make_srq(xrcd, na);
		a2 = make_srq(xrcd, na2);
		foreign = make_srq(other, nforeign);
		return a && a2 && foreign && na && na2 && nforeign && na != na2 &&
		       na != nforeign && na2 != nforeign;
	}

	ibv_qp *target(uint32_t psn)
	{
		ibv_qp_init_attr_ex ia{};
		ia.qp_type = IBV_QPT_XRC_RECV;
		ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		ia.xrcd = xrcd;
		ibv_qp *qp = ibv_create_qp_ex(dev.ctx, &ia);
		if (qp && !to_rtr(qp, psn, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_ATOMIC)) {
			ibv_destroy_qp(qp);
			qp = nullptr;
		}
		return qp;
	}

	~xrc_side()
	{
		for (ibv_srq *q : {a, a2, foreign})
			if (q)
				ibv_destroy_srq(q);
		if (cq)
			ibv_destroy_cq(cq);
		for (ibv_xrcd *d : {xrcd, other})
			if (d)
				ibv_close_xrcd(d);
	}
};

bool post_srq(ibv_srq *q, uint64_t id, uint8_t *buf, uint32_t len, uint32_t lkey)
{
	ibv_sge sge = {(uintptr_t)buf, len, lkey};
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return !ibv_post_srq_recv(q, &wr, &bad);
}

// An XRC SEND of @len pattern bytes (seed @seed) from @psn naming @srqn;
// packets FIRST .. LAST, or ONLY; the last asks for an ACK.
std::vector<fields> xrc_send(uint32_t qpn, uint32_t psn, uint32_t srqn, size_t len,
			     uint32_t seed)
{
	std::vector<fields> v;
	size_t off = 0;
	do {
		size_t n = std::min<size_t>(MTU, len - off);
		bool first = off == 0, last = off + n == len;
		fields f;
		f.op = XRC | (first && last ? OP_SEND_ONLY : first ? OP_SEND_FIRST :
					      last ? OP_SEND_LAST : OP_SEND_MIDDLE);
		f.qpn = qpn, f.psn = psn_add(psn, v.size()), f.srqn = srqn, f.ackreq = last;
		for (size_t j = 0; j < n; j++)
			f.payload.push_back(pattern(seed, off + j));
		v.push_back(f);
		off += n;
	} while (off < len);
	return v;
}

// One answer at @psn with AETH syndrome @syn and opcode @op, nothing else.
void expect_one(point &P, const std::vector<rx> &got, uint8_t op, uint32_t psn, uint8_t syn)
{
	if (got.size() != 1 || got[0].f.op != op || got[0].f.psn != psn ||
	    got[0].f.syndrome != syn)
		P.fail("answers %s, want one %s at 0x%06x with AETH 0x%02x (got 0x%02x)",
		       list(got).c_str(), op_name(op), psn, syn,
		       got.empty() ? 0 : got[0].f.syndrome);
}

void case_xrc()
{
	constexpr uint32_t psn = 0x3a0000;
	point P;
	xrc_side x;
	region r;
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	ibv_qp *tgt = nullptr;

	if (!r.make(65536, access) || !x.make() || !(tgt = x.target(psn))) {
		tap::check(false, "xrc: XRCDs, XRC SRQs, a target QP to RTR: %s", strerror(errno));
		return;
	}
	P.report("xrc: two XRC domains, SRQs %u and %u in one and %u in the other, target QP %u "
		 "in RTR", x.na, x.na2, x.nforeign, tgt->qp_num);

	// A SEND ONLY naming SRQ a, a 2.5-packet SEND naming a2.
	drain_peer();
	bool posted = post_srq(x.a, 0xa1, r.buf, 4096, r.mr->lkey) &&
		      post_srq(x.a2, 0xa2, r.buf + 4096, 4096, r.mr->lkey) &&
		      post_srq(x.foreign, 0xf1, r.buf + 12288, 4096, r.mr->lkey);
	if (!posted)
		P.fail("post_srq_recv: %s", strerror(errno));
	for (auto &f : xrc_send(tgt->qp_num, psn, x.na, 700, 1))
		peer_send(f);
	expect_one(P, collect(P, 1), XRC | OP_ACK, psn, SYN_ACK);
	for (auto &f : xrc_send(tgt->qp_num, psn_add(psn, 1), x.na2, 2548, 2))
		peer_send(f);
	expect_one(P, collect(P, 1), XRC | OP_ACK, psn_add(psn, 3), SYN_ACK);
	auto wc = wait_completions(2, x.cq);
	if (wc.size() != 2 || wc[0].wr_id != 0xa1 || wc[0].byte_len != 700 ||
	    wc[1].wr_id != 0xa2 || wc[1].byte_len != 2548)
		P.fail("%zu completions on the SRQs' CQ, want 0xa1 (700 bytes) then 0xa2 (2548)",
		       wc.size());
	for (auto &w : wc)
		if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_RECV ||
		    w.qp_num != tgt->qp_num || w.src_qp != PEER_QPN)
			P.fail("wr_id 0x%llx: %s opcode %d qp_num %u src_qp 0x%x",
			       (unsigned long long)w.wr_id, ibv_wc_status_str(w.status), w.opcode,
			       w.qp_num, w.src_qp);
	if (!wait_completions(0).empty())
		P.fail("completions on the device's other CQ");
	for (size_t i = 0; i < 700; i++)
		if (r.buf[i] != pattern(1, i)) {
			P.fail("SRQ a's buffer: byte %zu differs", i);
			break;
		}
	for (size_t i = 0; i < 2548; i++)
		if (r.buf[4096 + i] != pattern(2, i)) {
			P.fail("SRQ a2's buffer: byte %zu differs", i);
			break;
		}
	P.report("xrc: SENDs naming SRQ a (one packet) and a2 (three) land in that SRQ's WQE, "
		 "complete on its CQ with the target's QPN; answered with XRC ACKs");

	// WRITE, READ and FETCH_ADD under the PD of the SRQ named.
	uint32_t p = psn_add(psn, 4);
	fields w;
	w.op = XRC | OP_WRITE_ONLY, w.qpn = tgt->qp_num, w.psn = p, w.srqn = x.na;
	w.ackreq = true;
	w.va = (uintptr_t)r.buf + 16384, w.rkey = r.mr->rkey, w.dmalen = 300;
	w.payload.assign(300, 0x6b);
	peer_send(w);
	expect_one(P, collect(P, 1), XRC | OP_ACK, p, SYN_ACK);
	if (std::count(r.buf + 16384, r.buf + 16684, 0x6b) != 300)
		P.fail("the WRITE's 300 bytes did not land");
	for (size_t i = 0; i < 1500; i++)
		r.buf[20480 + i] = pattern(5, i);
	fields rd;
	rd.op = XRC | OP_READ_REQ, rd.qpn = tgt->qp_num, rd.psn = psn_add(p, 1);
	rd.srqn = x.na2, rd.va = (uintptr_t)r.buf + 20480, rd.rkey = r.mr->rkey, rd.dmalen = 1500;
	peer_send(rd);
	auto got = collect(P, 2);
	if (got.size() != 2 || got[0].f.op != (XRC | OP_READ_RESP_FIRST) ||
	    got[1].f.op != (XRC | OP_READ_RESP_LAST) || got[0].f.psn != rd.psn ||
	    got[1].f.psn != psn_add(rd.psn, 1) || got[0].f.payload.size() != MTU ||
	    got[1].f.payload.size() != 1500 - MTU)
		P.fail("READ answered %s, want XRC READ_RESP_FIRST/LAST of 1024 + 476 bytes",
		       list(got).c_str());
	else
		for (size_t i = 0; i < 1500; i++)
			if ((i < MTU ? got[0].f.payload[i] : got[1].f.payload[i - MTU]) !=
			    pattern(5, i)) {
				P.fail("READ response byte %zu differs", i);
				break;
			}
	uint64_t *word = reinterpret_cast<uint64_t *>(r.buf + 24576);
	*word = 1000;
	fields fa;
	fa.op = XRC | OP_FETCH_ADD, fa.qpn = tgt->qp_num, fa.psn = psn_add(p, 3);
	fa.srqn = x.na, fa.va = (uintptr_t)word, fa.rkey = r.mr->rkey, fa.swap_add = 24;
	peer_send(fa);
	got = collect(P, 1);
	if (got.size() != 1 || got[0].f.op != (XRC | OP_ATOMIC_ACK) || got[0].f.orig != 1000 ||
	    *word != 1024)
		P.fail("FETCH_ADD answered %s orig %llu, word %llu; want XRC ATOMIC_ACK orig 1000, "
		       "word 1024", list(got).c_str(),
		       got.empty() ? 0ULL : (unsigned long long)got[0].f.orig,
		       (unsigned long long)*word);
	P.report("xrc: WRITE, READ (two XRC READ responses, data as in the MR) and FETCH_ADD "
		 "through the target QP");

	// A message whose LAST names another SRQ than its FIRST did.
	p = psn_add(p, 4);
	auto split = xrc_send(tgt->qp_num, p, x.na, 2048, 6);
	split[1].srqn = x.na2;
	post_srq(x.a, 0xa3, r.buf + 32768, 4096, r.mr->lkey);
	counters c0 = counters::read();
	for (auto &f : split)
		peer_send(f);
	expect_one(P, collect(P, 1), XRC | OP_ACK, split[1].psn, SYN_NAK_INV_REQ);
	counters c1 = counters::read();
	check_delta(P, c0, c1, counters::ERR_NAK_SENT, 1);
	if (!wait_state(tgt, IBV_QPS_ERR))
		P.fail("target QP in %s, want ERR", state_name(state_of(tgt)));
	if (!wait_completions(0, x.cq).empty())
		P.fail("a completion on the SRQs' CQ");
	P.report("xrc: a SEND LAST naming another SRQ than its FIRST: NAK Invalid Request at "
		 "its PSN, target QP to ERR");
	destroy_qp(tgt);

	// SRQ numbers the target may not use: another XRCD's, one that is none.
	struct {
		uint32_t srqn;
		const char *what;
	} bad[] = {{x.nforeign, "an SRQ of another XRC domain"}, {0xfffff0, "no SRQ at all"}};
	for (auto &b : bad) {
		tgt = x.target(psn);
		if (!tgt) {
			P.fail("target QP: %s", strerror(errno));
			P.report("xrc: a SEND naming %s", b.what);
			continue;
		}
		c0 = counters::read();
		for (auto &f : xrc_send(tgt->qp_num, psn, b.srqn, 200, 7))
			peer_send(f);
		expect_one(P, collect(P, 1), XRC | OP_ACK, psn, SYN_NAK_INV_REQ);
		c1 = counters::read();
		check_delta(P, c0, c1, counters::ERR_NAK_SENT, 1);
		if (!wait_state(tgt, IBV_QPS_ERR))
			P.fail("target QP in %s, want ERR", state_name(state_of(tgt)));
		if (!wait_completions(0, x.cq).empty())
			P.fail("a completion on the SRQs' CQ");
		for (size_t i = 12288; i < 16384; i++)
			if (r.buf[i]) {
				P.fail("the foreign SRQ's buffer was written");
				break;
			}
		P.report("xrc: a SEND naming %s: NAK Invalid Request, target QP to ERR, nothing "
			 "received", b.what);
		destroy_qp(tgt);
	}

	// Opcodes of the wrong transport: RC's to a target, XRC's to an RC QP.
	tgt = x.target(psn);
	ibv_qp *rc = create_rc(0);
	if (!tgt || !rc || !to_rtr(rc, psn, access)) {
		P.fail("target and RC QPs: %s", strerror(errno));
	} else {
		c0 = counters::read();
		fields f;
		f.op = OP_SEND_ONLY, f.qpn = tgt->qp_num, f.psn = psn, f.ackreq = true;
		f.payload.assign(64, 1);
		peer_send(f);
		auto g = xrc_send(rc->qp_num, psn, x.na, 64, 8);
		peer_send(g[0]);
		got = collect(P, 0);
		c1 = counters::read();
		if (!got.empty())
			P.fail("answered: %s", list(got).c_str());
		check_delta(P, c0, c1, counters::MALFORMED, 2);
		if (state_of(tgt) != IBV_QPS_RTR || state_of(rc) != IBV_QPS_RTR)
			P.fail("target in %s, RC QP in %s, want both RTR",
			       state_name(state_of(tgt)), state_name(state_of(rc)));
	}
	P.report("xrc: an RC SEND to the target QP and an XRC SEND to an RC QP: dropped as "
		 "malformed, unanswered, both QPs stay in RTR");
	destroy_qp(tgt);
	destroy_qp(rc);
}

// ---- the case runner ----------------------------------------------------------

struct wire_case {
	const char *name;
	const char *what;
	void (*run)();
	bool named_only = false;	// not in "all": needs a set-up of its own
};

const wire_case cases[] = {
	{"dmalen", "the responder and DMA lengths above 2^31", case_dmalen},
	{"req-edges", "a requester's answers at the edges of its PSN window", case_req_edges},
	{"tamper-rewrite", "req-edges with the SQ slots rewritten after the send",
	 case_tamper_rewrite},
	{"tamper-prod-ahead", "SQ prod moved ahead by more than the ring", case_tamper_prod_ahead},
	{"tamper-prod-back", "SQ prod moved back below what was fetched", case_tamper_prod_back},
	{"uc-no-rwqe", "UC messages that find the receive queue empty", case_uc_no_rwqe},
	{"xrc", "an XRC target QP and the SRQs its requests name", case_xrc},
	{"resp-race", "a failed SEND's next packet from another CPU (sroce_race.ko qp_error)",
	 case_resp_race, true},
};

void usage(FILE *f)
{
	fprintf(f,
		"usage: sroce_wire -d DEV -g GID_INDEX -l PEER_IP -r DEV_IP [options]\n"
		"  -d DEV        the sroce device (opened through libibverbs)\n"
		"  -g N          DEV's GID index for DEV_IP (RoCE v2)\n"
		"  -l IP         this side's IPv4 address: the fake peer binds UDP 4791\n"
		"  -r IP         DEV's IPv4 address\n"
		"  --case NAME   run only these cases (repeat); default all but resp-race\n"
		"  -w SECONDS    the longest wait for anything expected (default 3)\n"
		"  -q MS         quiet period: nothing more may come (default 300)\n"
		"  --list        the cases\n"
		"  -v            show every packet\n");
}

} // namespace

int main(int argc, char **argv)
{
	static const option longopts[] = {
		{"case", required_argument, nullptr, 'c'},
		{"list", no_argument, nullptr, 'L'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	const char *me = nullptr, *devip = nullptr;
	std::vector<const wire_case *> run;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:l:r:w:q:vh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'd': dev.name = optarg; break;
		case 'g': dev.gid_index = atoi(optarg); break;
		case 'l': me = optarg; break;
		case 'r': devip = optarg; break;
		case 'w': g_wait = atof(optarg); break;
		case 'q': g_quiet = atof(optarg) / 1000; break;
		case 'v': g_verbose = true; break;
		case 'L':
			for (auto &k : cases)
				printf("%-18s %s\n", k.name, k.what);
			return 0;
		case 'c': {
			const wire_case *hit = nullptr;
			for (auto &k : cases)
				if (!strcmp(k.name, optarg))
					hit = &k;
			if (!hit) {
				fprintf(stderr, "sroce_wire: no case %s (--list)\n", optarg);
				return 2;
			}
			run.push_back(hit);
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dev.name || dev.gid_index < 0 || !me || !devip) {
		usage(stderr);
		return 2;
	}
	if (run.empty())
		for (auto &k : cases)
			if (!k.named_only)
				run.push_back(&k);
	setvbuf(stdout, nullptr, _IOLBF, 0);
	init_opcodes();
	init_crc();
	peer_open(me, devip);
	dev.peer_gid.raw[10] = dev.peer_gid.raw[11] = 0xff;
	memcpy(dev.peer_gid.raw + 12, peer.me, 4);

	dev.ctx = open_device_by_name(dev.name);
	if (!tap::check(dev.ctx, "open %s", dev.name))
		return tap::done("sroce_wire");
	dev.pd = ibv_alloc_pd(dev.ctx);
	dev.cq = ibv_create_cq(dev.ctx, 256, nullptr, nullptr, 0);
	if (!tap::check(dev.pd && dev.cq, "PD and CQ"))
		return tap::done("sroce_wire");

	for (const wire_case *k : run) {
		tap::diag("case %s: %s", k->name, k->what);
		k->run();
		drain_peer();
	}

	ibv_destroy_cq(dev.cq);
	ibv_dealloc_pd(dev.pd);
	ibv_close_device(dev.ctx);
	close(peer.fd);
	return tap::done("sroce_wire");
}
