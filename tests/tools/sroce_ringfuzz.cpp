// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_ringfuzz - a stateful ring fuzzer. An unprivileged process owns the
// mmap'd rings of its QPs, SRQs and CQs and can write any byte at any time;
// this tool does so while real traffic runs on them. sroce_hostile writes
// garbage into an idle ring once; here a second thread rewrites a victim
// QP's SQ/RQ producer and consumer indices, its SRQ's, its CQ's consumer
// index and the bytes of its WQEs while the first thread posts, polls and
// receives: backwards, forwards by more than the ring, near 2^32, torn
// (two 16-bit or four byte stores, paused between), racing the kernel's own
// stores, over slots the kernel has already fetched; every opcode and flag
// bit, num_sge 0..255, lengths near 2^31 and 2^32, inline lengths. Each RC
// round that starts with a "rewind" also does the one sequence that matters
// most on purpose: WQEs in flight (the peer has no receive posted and
// answers RNR), then a smaller producer index and the doorbell.
//
//   sroce_ringfuzz -d DEV_A -g GID_A -D DEV_B -G GID_B [--seconds N]
//                  [--seed N] [-v]
//
// One process opens both devices and wires the QPs itself: a victim on A
// (RC mostly, UC, UD, RC on an SRQ; fresh rings every round) with its
// well-behaved partner on B, and a bystander RC pair A<->B for the whole
// run. Round after round (random 0.4-2 s) until --seconds: create, traffic
// and fuzz, move the victim to ERR (its flushes count too), check, destroy.
//
// What must hold, whatever the process wrote (each a TAP point at the end,
// every failure printed as it is found):
//   count   a victim queue never completes more WQEs than were ever
//           published into it: for the indices the process stored (traffic
//           and fuzzer, each intermediate value of a torn store), the
//           furthest the kernel's consumer index can legally get is the
//           closure "largest stored value at most one ring beyond where it
//           can be"; completions seen (CQEs, flushes included) stay within
//           it, and so do the partner's receives (one per victim WQE at
//           most) and the victim's successful receives (one per partner
//           send at most)
//   index   the kernel-owned consumer index, sampled throughout and at the
//           end, never runs ahead of that bound (nor behind where it began)
//           - unless the fuzzer wrote that index itself in the round
//   leak    every payload byte the process makes available to send (the
//           victims' MRs, the bytes after the 64-byte header of every SQ
//           slot) is from a per-run alphabet: 64 byte values out of
//           0x80..0xff. Every byte received at the partner (within the
//           completion's byte_len; the WRITE target MR, zero-filled; nothing
//           beyond byte_len) must be from it - or part of one of the 16-byte
//           SGE records this process itself wrote into a slot, which the
//           kernel may read as inline data when a slot is rewritten under
//           it. Kernel memory (zeros, pointers, another QP's data: the
//           bystander's alphabet is 0x01..0x7e) fails. The victim's MRs
//           stay within the alphabet, the partner's READ source unchanged.
//   cqe     every CQE on every CQ: reserved, timestamp, vendor_err, pkey,
//           slid, sl zero, port 1, status a valid ibv_wc_status, known
//           opcode and flags, qp_num the CQ's own QP, src_qp its peer's
//   event   no async event for a partner or bystander object; victims'
//           QP_FATAL (at least one in the run) and CQ_ERR are counted
//   bystander  every op of the bystander pair (SEND, WRITE_WITH_IMM, READ)
//           completes successfully in order, every byte verified, both QPs
//           still in RTS at the end
//
// The caller checks the kernel log, the bad_ring_index and bad_wqe
// counters, the resource counts and rmmod (tests/vm/48-ring-fuzz.sh).
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "sroce.hpp"	// the provider's own QP, SRQ, CQ: where their rings are
#include "tap.hpp"
#include "verbs_util.hpp"

static_assert(std::endian::native == std::endian::little, "torn stores assume little endian");

namespace {

using rng_t = std::mt19937_64;

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t rnd(rng_t &r, uint64_t n)	// [0, n)
{
	return n ? r() % n : 0;
}

bool chance(rng_t &r, unsigned pct)
{
	return r() % 100 < pct;
}

// ---- failures -------------------------------------------------------------------

enum cat { C_SETUP, C_COUNT, C_INDEX, C_LEAK, C_CQE, C_EVENT, C_BYST, C_NCAT };
const char *const cat_name[C_NCAT] = {"setup", "count", "index", "leak", "cqe", "event",
				      "bystander"};
std::mutex g_out_mu;
int g_fails[C_NCAT];
bool g_verbose;

__attribute__((format(printf, 2, 3))) void fail(cat c, const char *fmt, ...)
{
	char b[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	std::lock_guard<std::mutex> g(g_out_mu);
	int n = ++g_fails[c];
	if (n <= 20)
		printf("#   FAIL %s: %s\n", cat_name[c], b);
	else if (n == 21)
		printf("#   FAIL %s: (more of these not shown)\n", cat_name[c]);
	fflush(stdout);
}

__attribute__((format(printf, 1, 2))) void note(const char *fmt, ...)
{
	va_list ap;
	std::lock_guard<std::mutex> g(g_out_mu);
	fputs("#   ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

std::string hexdump(const uint8_t *p, size_t n, size_t at)
{
	size_t a = at > 8 ? at - 8 : 0, b = std::min(n, at + 24);
	std::string s;
	char x[8];
	for (size_t i = a; i < b; i++) {
		snprintf(x, sizeof(x), i == at ? "[%02x]" : "%02x ", p[i]);
		s += x;
	}
	return s;
}

// ---- the alphabet -------------------------------------------------------------------

// Payload bytes the victims may send: 64 values out of 0x80..0xff, chosen
// per run (the marker). The bystander uses 0x01..0x7e.
bool g_alpha[256];
uint8_t g_alist[64];

void alpha_init(uint64_t seed)
{
	std::vector<uint8_t> v;
	for (int b = 0x80; b <= 0xff; b++)
		v.push_back(static_cast<uint8_t>(b));
	rng_t r(seed ^ 0xa1fabe7ull);
	std::shuffle(v.begin(), v.end(), r);
	for (int i = 0; i < 64; i++) {
		g_alist[i] = v[i];
		g_alpha[v[i]] = true;
	}
}

void alpha_fill(uint8_t *p, size_t n, rng_t &r)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 10 == 0)
			x = r();
		p[i] = g_alist[x & 63];
		x >>= 6;
	}
}

// The 16-byte SGE records (struct sroce_sge) this process wrote into SQ
// slots: the one thing besides the alphabet the kernel may legally send
// as inline data (a slot rewritten while it is copied).
struct recpool {
	std::vector<std::array<uint8_t, 16>> r;

	void add(uint64_t addr, uint32_t len, uint32_t lkey)
	{
		sroce_sge s = {addr, len, lkey};
		std::array<uint8_t, 16> a;
		memcpy(a.data(), &s, 16);
		r.push_back(a);
	}

	// Does a record explain the byte at p: every byte of its window that
	// lies in b[0, n) either matches it or is from the alphabet? *end is
	// the end of that window.
	bool explain(const uint8_t *b, size_t n, size_t p, size_t *end) const
	{
		for (auto &x : r)
			for (long k = 0; k < 16; k++) {
				if (x[k] != b[p])
					continue;
				long s = static_cast<long>(p) - k;
				long e = std::min<long>(s + 16, static_cast<long>(n));
				bool ok = true;
				for (long q = std::max<long>(s, 0); q < e && ok; q++)
					ok = b[q] == x[q - s] || g_alpha[b[q]];
				if (ok) {
					*end = e;
					return true;
				}
			}
		return false;
	}
};

// Offset of the first byte of b[0, n) that is neither from the alphabet
// nor (zero_ok) zero nor explained by pool; n if there is none.
size_t check_bytes(const uint8_t *b, size_t n, bool zero_ok, const recpool *pool)
{
	size_t p = 0, end;
	while (p < n) {
		uint8_t c = b[p];
		if (g_alpha[c] || (zero_ok && !c)) {
			p++;
			continue;
		}
		if (pool && pool->explain(b, n, p, &end)) {
			p = end;
			continue;
		}
		return p;
	}
	return n;
}

size_t first_nonzero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return i;
	return n;
}

// ---- devices and memory ---------------------------------------------------------------

struct devinfo {
	const char *name = nullptr;
	int gid_index = -1;
	ibv_context *ctx = nullptr;
	ibv_gid gid = {};
};

devinfo DA, DB;

struct mem {
	uint8_t *p = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;
	uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(p) + off; }
};

bool mem_make(mem &m, ibv_pd *pd, size_t len, int access)
{
	m.len = len;
	m.p = static_cast<uint8_t *>(aligned_alloc(4096, len));
	if (!m.p)
		return false;
	memset(m.p, 0, len);
	m.mr = ibv_reg_mr(pd, m.p, len, access);
	return m.mr != nullptr;
}

bool mem_free(mem &m)
{
	int r = m.mr ? ibv_dereg_mr(m.mr) : 0;
	free(m.p);
	m = mem();
	return r == 0;
}

// ---- raw rings ----------------------------------------------------------------------------

struct ringref {
	sroce_ring_hdr *h = nullptr;
	uint32_t entries = 0, stride = 0;

	uint8_t *slot(uint32_t i) const
	{
		return reinterpret_cast<uint8_t *>(h) + SROCE_RING_DATA_OFFSET +
		       static_cast<size_t>(i & (entries - 1)) * stride;
	}
	uint32_t prod() const { return __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE); }
	uint32_t cons() const { return __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE); }
	uint32_t flags() const { return __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE); }
};

ringref sq_ring(ibv_qp *qp)
{
	auto *q = reinterpret_cast<sroce::qp *>(qp);
	return {static_cast<sroce_ring_hdr *>(q->sq_map), q->sq.entries(), q->sq.stride()};
}

ringref rq_ring(ibv_qp *qp)
{
	auto *q = reinterpret_cast<sroce::qp *>(qp);
	if (!q->rq_map)
		return {};
	return {static_cast<sroce_ring_hdr *>(q->rq_map), q->rq.entries(), q->rq.stride()};
}

ringref srq_ring(ibv_srq *srq)
{
	auto *s = reinterpret_cast<sroce::srq *>(srq);
	return {static_cast<sroce_ring_hdr *>(s->map), s->ring.entries(), s->ring.stride()};
}

ringref cq_ring(ibv_cq *cq)
{
	auto *c = reinterpret_cast<sroce::cq *>(cq);
	return {static_cast<sroce_ring_hdr *>(c->map), c->ring.entries(), c->ring.stride()};
}

// The provider's private copy of the producer index it owns.
uint32_t sq_shadow(ibv_qp *qp) { return reinterpret_cast<sroce::qp *>(qp)->sq.index(); }
uint32_t rq_shadow(ibv_qp *qp) { return reinterpret_cast<sroce::qp *>(qp)->rq.index(); }
uint32_t srq_shadow(ibv_srq *s) { return reinterpret_cast<sroce::srq *>(s)->ring.index(); }

// The uverbs POST_SEND / POST_RECV commands with no work request: doorbells.
int sq_doorbell(ibv_qp *qp)
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
	return write(qp->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

int rq_doorbell(ibv_qp *qp)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_post_recv cmd;
	} req = {};
	ib_uverbs_post_recv_resp resp = {};

	req.hdr.command = IB_USER_VERBS_CMD_POST_RECV;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = reinterpret_cast<uintptr_t>(&resp);
	req.cmd.qp_handle = qp->handle;
	req.cmd.wqe_size = sizeof(ib_uverbs_recv_wr);
	return write(qp->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : errno;
}

// ---- what was published --------------------------------------------------------------

// Every value this process stored into one producer index (relative to
// where the ring began), and what the kernel's consumer index was seen at.
struct idxlog {
	uint32_t base = 0, entries = 0;
	std::vector<uint32_t> offs;		// values ahead of base, under the victim's mu
	std::atomic<bool> cons_written{false};	// the fuzzer stored the consumer index
	uint32_t max_cons = 0;			// highest kernel cons seen (offset)
	bool cons_behind = false;
	uint32_t behind = 0;

	void start(const ringref &q)
	{
		base = q.prod();
		entries = q.entries;
		offs.clear();
		cons_written = false;
		max_cons = 0;
		cons_behind = false;
	}
	void wrote(uint32_t v)
	{
		uint32_t o = v - base;
		if (o < 0x80000000u)
			offs.push_back(o);
	}
	// The kernel accepts a producer index at most one ring ahead of its
	// consumer index, which only moves up to an accepted producer index:
	// from base, the largest stored value within a ring of where it can
	// be, again and again. No correct kernel gets further.
	uint32_t bound() const
	{
		std::vector<uint32_t> s = offs;
		std::sort(s.begin(), s.end());
		uint32_t r = 0;
		for (;;) {
			uint64_t lim = static_cast<uint64_t>(r) + entries;
			auto it = std::upper_bound(s.begin(), s.end(), lim,
						   [](uint64_t a, uint32_t b) { return a < b; });
			if (it == s.begin() || *(it - 1) <= r)
				return r;
			r = *(it - 1);
		}
	}
	// A consumer index just read; it counts unless the fuzzer wrote one.
	void sample(uint32_t c)
	{
		if (cons_written)
			return;
		uint32_t o = c - base;
		if (o >= 0x80000000u) {
			if (!cons_behind)
				behind = c;
			cons_behind = true;
		} else {
			max_cons = std::max(max_cons, o);
		}
	}
};

// Store v into *p one way or another: one 32-bit store, two 16-bit
// stores or four byte stores in some order, with pauses between. Every
// value the word takes on goes to log (producer indices: only we store
// them, under the victim's mu).
void pause_a_little(rng_t &r)
{
	if (chance(r, 50))
		return;
	for (unsigned i = 0, n = rnd(r, 3000); i < n; i++)
		asm volatile("" ::: "memory");
}

void torn_store(uint32_t *p, uint32_t v, rng_t &r, idxlog *log)
{
	unsigned mode = rnd(r, 4);
	if (mode < 2) {
		__atomic_store_n(p, v, __ATOMIC_RELEASE);
		if (log)
			log->wrote(v);
		return;
	}
	uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	int order[4] = {0, 1, 2, 3};
	int parts = mode == 2 ? 2 : 4;
	std::shuffle(order, order + parts, r);
	for (int i = 0; i < parts; i++) {
		int k = order[i];
		if (parts == 2) {
			uint16_t h = static_cast<uint16_t>(v >> (16 * k));
			__atomic_store_n(reinterpret_cast<uint16_t *>(p) + k, h, __ATOMIC_RELEASE);
			cur = (cur & ~(0xffffu << (16 * k))) | (static_cast<uint32_t>(h) << (16 * k));
		} else {
			uint8_t b = static_cast<uint8_t>(v >> (8 * k));
			__atomic_store_n(reinterpret_cast<uint8_t *>(p) + k, b, __ATOMIC_RELEASE);
			cur = (cur & ~(0xffu << (8 * k))) | (static_cast<uint32_t>(b) << (8 * k));
		}
		if (log)
			log->wrote(cur);
		pause_a_little(r);
	}
}

// ---- CQEs -----------------------------------------------------------------------------------

// Copy the CQEs ibv_poll_cq is about to return, then poll them.
int poll_raw(ibv_cq *cq, int max, ibv_wc *wc, sroce_cqe *raw)
{
	auto &ring = reinterpret_cast<sroce::cq *>(cq)->ring;
	int n = std::min<int>(max, ring.available());
	for (int i = 0; i < n; i++)
		memcpy(&raw[i], ring.elem(i), sizeof(raw[i]));
	return n ? ibv_poll_cq(cq, n, wc) : 0;
}

// One CQE as it lay in the ring: what the kernel may put there.
void check_cqe(const char *who, const sroce_cqe &c, uint32_t qpn, uint32_t peer, uint32_t max_recv)
{
	std::string why;
	auto bad = [&](const char *what, unsigned long long v) {
		char b[96];
		snprintf(b, sizeof(b), "%s%s 0x%llx", why.empty() ? "" : ", ", what, v);
		why += b;
	};
	for (int i = 0; i < 4; i++)
		if (c.reserved[i])
			bad("reserved", c.reserved[i]);
	if (c.timestamp)
		bad("timestamp", c.timestamp);
	if (c.vendor_err)
		bad("vendor_err", c.vendor_err);
	if (c.status > IBV_WC_GENERAL_ERR)
		bad("status", c.status);
	if (c.opcode > 15 && c.opcode != IBV_WC_RECV && c.opcode != IBV_WC_RECV_RDMA_WITH_IMM)
		bad("opcode", c.opcode);
	if (c.wc_flags & ~0xfu)
		bad("wc_flags", c.wc_flags);
	if (c.qp_num != qpn)
		bad("qp_num", c.qp_num);
	if (c.src_qp && c.src_qp != peer)
		bad("src_qp", c.src_qp);
	if (c.pkey_index)
		bad("pkey_index", c.pkey_index);
	if (c.slid || c.sl || c.dlid_path_bits)
		bad("slid/sl/dlid_path_bits", (0ull + c.slid) << 16 | c.sl << 8 | c.dlid_path_bits);
	if (c.port_num != 1)
		bad("port_num", c.port_num);
	if (c.network_hdr_type > 3)
		bad("network_hdr_type", c.network_hdr_type);
	if (c.status == IBV_WC_SUCCESS && (c.opcode & 0x80) && c.byte_len > max_recv)
		bad("byte_len of a receive", c.byte_len);
	if (c.status == IBV_WC_SUCCESS && !(c.opcode & 0x80) && c.byte_len > (1u << 31))
		bad("byte_len of a send", c.byte_len);
	if (!why.empty())
		fail(C_CQE, "%s CQE (wr_id 0x%llx status %u opcode %u): %s", who,
		     static_cast<unsigned long long>(c.wr_id), c.status, c.opcode, why.c_str());
}

// ---- QPs -----------------------------------------------------------------------------------

ibv_qp *make_qp(ibv_pd *pd, ibv_cq *cq, ibv_qp_type t, ibv_srq *srq, uint32_t swr, uint32_t rwr,
		uint32_t ssge, uint32_t rsge, uint32_t inl)
{
	ibv_qp_init_attr ia = {};
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.cap.max_send_wr = swr;
	ia.cap.max_recv_wr = srq ? 0 : rwr;
	ia.cap.max_send_sge = ssge;
	ia.cap.max_recv_sge = srq ? 0 : rsge;
	ia.cap.max_inline_data = inl;
	return ibv_create_qp(pd, &ia);
}

constexpr uint32_t QKEY = 0x11113333;

// RESET -> INIT -> RTR -> RTS towards (dqpn, dgid); UD has no peer.
int qp_ready(ibv_qp *qp, const devinfo &self, ibv_qp_type t, uint32_t dqpn, const ibv_gid &dgid,
	     int access, uint8_t min_rnr, uint8_t timeout, uint8_t retry)
{
	bool ud = t == IBV_QPT_UD, rc = t == IBV_QPT_RC;
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	a.qp_access_flags = access;
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
	if (r)
		return r;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0x10;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = dgid;
		a.ah_attr.grh.sgid_index = self.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (rc) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = min_rnr;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	r = ibv_modify_qp(qp, &a, mask);
	if (r)
		return r;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = timeout;
		a.retry_cnt = retry;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : a.qp_state;
}

ibv_ah *make_ah(ibv_pd *pd, const devinfo &self, const ibv_gid &dgid)
{
	ibv_ah_attr a = {};
	a.is_global = 1;
	a.grh.dgid = dgid;
	a.grh.sgid_index = self.gid_index;
	a.grh.hop_limit = 64;
	a.port_num = 1;
	return ibv_create_ah(pd, &a);
}

// ---- async events ------------------------------------------------------------------------

// The objects events may name, under g_reg_mu.
std::mutex g_reg_mu;
struct {
	ibv_qp *victim = nullptr, *partner = nullptr, *bys[2] = {};
	ibv_cq *vcq = nullptr, *pcq = nullptr, *bcq[2] = {};
	ibv_srq *vsrq = nullptr;
} g_reg;
std::atomic<uint64_t> g_qp_fatal, g_cq_err, g_victim_events;
std::atomic<int> g_round_fatal;
std::atomic<bool> g_events_stop;

void events_thread()
{
	pollfd p[2] = {{DA.ctx->async_fd, POLLIN, 0}, {DB.ctx->async_fd, POLLIN, 0}};
	ibv_context *ctx[2] = {DA.ctx, DB.ctx};
	while (!g_events_stop) {
		if (poll(p, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			ibv_async_event ev;
			if (ibv_get_async_event(ctx[i], &ev))
				continue;
			const char *name = ibv_event_type_str(ev.event_type);
			{
				std::lock_guard<std::mutex> g(g_reg_mu);
				switch (ev.event_type) {
				case IBV_EVENT_CQ_ERR:
					if (ev.element.cq == g_reg.vcq)
						g_cq_err++;
					else
						fail(C_EVENT, "%s on %s's CQ %s", name, DA.name,
						     ev.element.cq == g_reg.pcq ? "(the partner's)" :
						     "(the bystander's or unknown)");
					break;
				case IBV_EVENT_SRQ_ERR:
				case IBV_EVENT_SRQ_LIMIT_REACHED:
					if (ev.element.srq == g_reg.vsrq)
						g_victim_events++;
					else
						fail(C_EVENT, "%s on an SRQ that is not the victim's", name);
					break;
				case IBV_EVENT_QP_FATAL:
				case IBV_EVENT_QP_REQ_ERR:
				case IBV_EVENT_QP_ACCESS_ERR:
				case IBV_EVENT_COMM_EST:
				case IBV_EVENT_SQ_DRAINED:
				case IBV_EVENT_PATH_MIG:
				case IBV_EVENT_PATH_MIG_ERR:
				case IBV_EVENT_QP_LAST_WQE_REACHED:
					if (ev.element.qp == g_reg.victim) {
						g_victim_events++;
						if (ev.event_type == IBV_EVENT_QP_FATAL) {
							g_qp_fatal++;
							g_round_fatal++;
						}
					} else {
						fail(C_EVENT, "%s on QP %u (%s)", name, ev.element.qp->qp_num,
						     ev.element.qp == g_reg.partner ? "the partner" :
						     ev.element.qp == g_reg.bys[0] ||
						     ev.element.qp == g_reg.bys[1] ? "the bystander" :
						     "unknown");
					}
					break;
				case IBV_EVENT_DEVICE_FATAL:
					fail(C_EVENT, "%s on %s", name, ctx[i]->device->name);
					break;
				default:	// port and GID events: not ours to judge
					note("event %s on %s", name, ctx[i]->device->name);
					break;
				}
			}
			ibv_ack_async_event(&ev);
		}
	}
}

// ---- the bystander -------------------------------------------------------------------------

// An RC pair A<->B beside the victims: SEND, WRITE_WITH_IMM and READ,
// at most 8 in flight, every byte and every completion checked.
uint8_t bpat(uint64_t seq, uint32_t i)
{
	uint64_t x = (seq * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
	x ^= x >> 29;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return static_cast<uint8_t>(1 + x % 0x7e);
}

constexpr uint32_t BSLOT = 4096;
constexpr uint64_t BTAG = 0xb5ull << 56;

struct bystander {
	ibv_pd *pda = nullptr, *pdb = nullptr;
	ibv_cq *cqa = nullptr, *cqb = nullptr;
	ibv_qp *qa = nullptr, *qb = nullptr;
	mem srca, rdsta, recvb, tgtb, rsrcb;	// 16, 16, 32, 16 slots; 64 KiB
	struct op {
		uint64_t seq;
		int type;	// 0 SEND, 1 WRITE_WITH_IMM, 2 READ
		uint32_t size, roff;
		bool a_done, b_done;
	};
	std::deque<op> win;
	std::deque<uint32_t> recvs;	// recvb slots in posting order
	uint64_t seq = 0, done = 0, bytes = 0;
	std::atomic<bool> stop{false};
	bool failed = false;

	bool setup();
	void post_recv(uint32_t j);
	bool post_next(rng_t &r);
	void poll_a();
	void poll_b();
	void run(uint64_t seed);
	bool teardown();
	__attribute__((format(printf, 2, 3))) void bad(const char *fmt, ...)
	{
		char b[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b, sizeof(b), fmt, ap);
		va_end(ap);
		failed = true;
		fail(C_BYST, "%s", b);
	}
};

bystander BY;

bool bystander::setup()
{
	pda = ibv_alloc_pd(DA.ctx);
	pdb = ibv_alloc_pd(DB.ctx);
	if (!pda || !pdb)
		return false;
	cqa = ibv_create_cq(DA.ctx, 256, nullptr, nullptr, 0);
	cqb = ibv_create_cq(DB.ctx, 256, nullptr, nullptr, 0);
	if (!cqa || !cqb)
		return false;
	if (!mem_make(srca, pda, 16 * BSLOT, 0) ||
	    !mem_make(rdsta, pda, 16 * BSLOT, IBV_ACCESS_LOCAL_WRITE) ||
	    !mem_make(recvb, pdb, 32 * BSLOT, IBV_ACCESS_LOCAL_WRITE) ||
	    !mem_make(tgtb, pdb, 16 * BSLOT, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    !mem_make(rsrcb, pdb, 16 * BSLOT, IBV_ACCESS_REMOTE_READ))
		return false;
	for (uint32_t i = 0; i < rsrcb.len; i++)
		rsrcb.p[i] = bpat(~0ull, i);
	qa = make_qp(pda, cqa, IBV_QPT_RC, nullptr, 16, 16, 1, 1, 0);
	qb = make_qp(pdb, cqb, IBV_QPT_RC, nullptr, 16, 64, 1, 1, 0);
	if (!qa || !qb)
		return false;
	int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (qp_ready(qa, DA, IBV_QPT_RC, qb->qp_num, DB.gid, access, 12, 18, 7) ||
	    qp_ready(qb, DB, IBV_QPT_RC, qa->qp_num, DA.gid, access, 12, 18, 7))
		return false;
	for (uint32_t j = 0; j < 32; j++)
		post_recv(j);
	std::lock_guard<std::mutex> g(g_reg_mu);
	g_reg.bys[0] = qa;
	g_reg.bys[1] = qb;
	g_reg.bcq[0] = cqa;
	g_reg.bcq[1] = cqb;
	return true;
}

void bystander::post_recv(uint32_t j)
{
	ibv_sge s = {recvb.addr(j * BSLOT), BSLOT, recvb.mr->lkey};
	ibv_recv_wr wr = {}, *badwr;
	wr.wr_id = BTAG | j;
	wr.sg_list = &s;
	wr.num_sge = 1;
	if (ibv_post_recv(qb, &wr, &badwr))
		bad("post_recv on B: %s", strerror(errno));
	else
		recvs.push_back(j);
}

bool bystander::post_next(rng_t &r)
{
	op o = {seq, static_cast<int>(rnd(r, 4)), static_cast<uint32_t>(1 + rnd(r, BSLOT)), 0,
		false, false};
	if (o.type == 3)
		o.type = 0;
	uint32_t slot = seq % 16;
	ibv_sge s = {};
	ibv_send_wr wr = {}, *badwr;
	wr.wr_id = BTAG | seq;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (o.type == 2) {
		o.roff = rnd(r, rsrcb.len - o.size + 1);
		s = {rdsta.addr(slot * BSLOT), o.size, rdsta.mr->lkey};
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = rsrcb.addr(o.roff);
		wr.wr.rdma.rkey = rsrcb.mr->rkey;
		o.b_done = true;
	} else {
		for (uint32_t i = 0; i < o.size; i++)
			srca.p[slot * BSLOT + i] = bpat(seq, i);
		s = {srca.addr(slot * BSLOT), o.size, srca.mr->lkey};
		if (o.type == 0) {
			wr.opcode = IBV_WR_SEND;
		} else {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(static_cast<uint32_t>(seq));
			wr.wr.rdma.remote_addr = tgtb.addr(slot * BSLOT);
			wr.wr.rdma.rkey = tgtb.mr->rkey;
		}
	}
	int e = ibv_post_send(qa, &wr, &badwr);
	if (e) {
		bad("post_send of op %llu: %s", static_cast<unsigned long long>(seq), strerror(e));
		return false;
	}
	win.push_back(o);
	seq++;
	return true;
}

// An op's data at B or in A's READ buffer: the pattern, then untouched.
bool check_slot(bystander &b, const char *what, uint64_t seq, const uint8_t *p, uint32_t size,
		const uint8_t *want)
{
	for (uint32_t i = 0; i < BSLOT; i++) {
		uint8_t w = i < size ? (want ? want[i] : bpat(seq, i)) : 0;
		if (p[i] != w) {
			b.bad("op %llu %s, %u bytes: byte %u is 0x%02x, expected 0x%02x: %s",
			      static_cast<unsigned long long>(seq), what, size, i, p[i], w,
			      hexdump(p, BSLOT, i).c_str());
			return false;
		}
	}
	b.bytes += size;
	return true;
}

void bystander::poll_a()
{
	ibv_wc wc[16];
	sroce_cqe raw[16];
	int n = poll_raw(cqa, 16, wc, raw);
	for (int i = 0; i < n; i++) {
		check_cqe("bystander A", raw[i], qa->qp_num, 0, 0);
		auto it = std::find_if(win.begin(), win.end(), [](const op &o) { return !o.a_done; });
		if (it == win.end()) {
			bad("A: completion with nothing outstanding (wr_id 0x%llx)",
			    static_cast<unsigned long long>(wc[i].wr_id));
			continue;
		}
		static const ibv_wc_opcode want_op[3] = {IBV_WC_SEND, IBV_WC_RDMA_WRITE,
							 IBV_WC_RDMA_READ};
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (BTAG | it->seq) ||
		    wc[i].opcode != want_op[it->type]) {
			bad("A: op %llu completes with status %s, wr_id 0x%llx, opcode %d",
			    static_cast<unsigned long long>(it->seq), ibv_wc_status_str(wc[i].status),
			    static_cast<unsigned long long>(wc[i].wr_id), wc[i].opcode);
		} else if (it->type == 2) {
			uint8_t *p = rdsta.p + (it->seq % 16) * BSLOT;
			if (wc[i].byte_len != it->size)
				bad("A: READ %llu byte_len %u, expected %u",
				    static_cast<unsigned long long>(it->seq), wc[i].byte_len, it->size);
			check_slot(*this, "READ", it->seq, p, it->size, rsrcb.p + it->roff);
			memset(p, 0, BSLOT);
		}
		it->a_done = true;
	}
}

void bystander::poll_b()
{
	ibv_wc wc[16];
	sroce_cqe raw[16];
	int n = poll_raw(cqb, 16, wc, raw);
	for (int i = 0; i < n; i++) {
		check_cqe("bystander B", raw[i], qb->qp_num, qa->qp_num, BSLOT);
		uint32_t j = recvs.empty() ? ~0u : recvs.front();
		if (!recvs.empty())
			recvs.pop_front();
		auto it = std::find_if(win.begin(), win.end(),
				       [](const op &o) { return !o.b_done; });
		if (it == win.end() || wc[i].wr_id != (BTAG | j) || wc[i].status != IBV_WC_SUCCESS) {
			bad("B: receive wr_id 0x%llx (expected slot %u) status %s with %s",
			    static_cast<unsigned long long>(wc[i].wr_id), j,
			    ibv_wc_status_str(wc[i].status),
			    it == win.end() ? "nothing outstanding" : "an op outstanding");
			continue;
		}
		uint8_t *rp = recvb.p + j * BSLOT;
		if (wc[i].byte_len != it->size)
			bad("B: op %llu byte_len %u, expected %u",
			    static_cast<unsigned long long>(it->seq), wc[i].byte_len, it->size);
		if (it->type == 0) {
			if (wc[i].opcode != IBV_WC_RECV)
				bad("B: op %llu (SEND) received as opcode %d",
				    static_cast<unsigned long long>(it->seq), wc[i].opcode);
			check_slot(*this, "SEND", it->seq, rp, it->size, nullptr);
		} else {
			uint8_t *tp = tgtb.p + (it->seq % 16) * BSLOT;
			if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
			    !(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
			    wc[i].imm_data != htonl(static_cast<uint32_t>(it->seq)))
				bad("B: op %llu (WRITE_WITH_IMM) received as opcode %d imm 0x%x",
				    static_cast<unsigned long long>(it->seq), wc[i].opcode,
				    ntohl(wc[i].imm_data));
			check_slot(*this, "WRITE_WITH_IMM", it->seq, tp, it->size, nullptr);
			size_t z = first_nonzero(rp, BSLOT);
			if (z != BSLOT)
				bad("B: op %llu (WRITE_WITH_IMM) wrote into receive slot %u at %zu",
				    static_cast<unsigned long long>(it->seq), j, z);
			memset(tp, 0, BSLOT);
		}
		memset(rp, 0, BSLOT);
		it->b_done = true;
		post_recv(j);
	}
}

void bystander::run(uint64_t seed)
{
	rng_t r(seed ^ 0xb75ull);
	double last = now();
	while (!failed) {
		bool stopping = stop;
		if (stopping && win.empty())
			break;
		if (!stopping)
			while (win.size() < 8 && post_next(r))
				;
		poll_a();
		poll_b();
		while (!win.empty() && win.front().a_done && win.front().b_done) {
			win.pop_front();
			done++;
			last = now();
		}
		if (now() - last > 60) {
			bad("no op completed for 60 s (%zu outstanding, %llu done)", win.size(),
			    static_cast<unsigned long long>(done));
			break;
		}
		usleep(200);
	}
}

bool bystander::teardown()
{
	bool ok = true;
	{
		std::lock_guard<std::mutex> g(g_reg_mu);
		g_reg.bys[0] = g_reg.bys[1] = nullptr;
		g_reg.bcq[0] = g_reg.bcq[1] = nullptr;
	}
	if (qa)
		ok &= !ibv_destroy_qp(qa);
	if (qb)
		ok &= !ibv_destroy_qp(qb);
	ok &= mem_free(srca) & mem_free(rdsta) & mem_free(recvb) & mem_free(tgtb) & mem_free(rsrcb);
	if (cqa)
		ok &= !ibv_destroy_cq(cqa);
	if (cqb)
		ok &= !ibv_destroy_cq(cqb);
	if (pda)
		ok &= !ibv_dealloc_pd(pda);
	if (pdb)
		ok &= !ibv_dealloc_pd(pdb);
	return ok;
}

// ---- the victims' memory (whole run) --------------------------------------------------------

constexpr uint32_t VSLOT = 4096, VRSLOTS = 32;	// victim receive slots
constexpr uint32_t PSLOT = 8192, PRSLOTS = 64;	// partner receive slots
constexpr uint64_t VTAG = 0x7eull << 56, PTAG = 0x9aull << 56;

struct res {
	ibv_pd *pdv = nullptr, *pdp = nullptr;
	mem vsrc;	// A: what victims send, READ into; alphabet only
	mem vrecv;	// A: victims' receive buffers
	mem psrc;	// B: READ source, partner's send source; alphabet, fixed
	mem pdst;	// B: WRITE target, zero-filled
	mem precv;	// B: partner's receive buffers, zero-filled
	std::vector<uint8_t> psrc_ref;
	std::vector<std::pair<uint32_t, uint32_t>> sges;	// (offset, length) in vsrc
} R;

bool res_setup(rng_t &r)
{
	R.pdv = ibv_alloc_pd(DA.ctx);
	R.pdp = ibv_alloc_pd(DB.ctx);
	if (!R.pdv || !R.pdp)
		return false;
	if (!mem_make(R.vsrc, R.pdv, 64 << 10, IBV_ACCESS_LOCAL_WRITE) ||
	    !mem_make(R.vrecv, R.pdv, VRSLOTS * VSLOT, IBV_ACCESS_LOCAL_WRITE) ||
	    !mem_make(R.psrc, R.pdp, 64 << 10, IBV_ACCESS_REMOTE_READ) ||
	    !mem_make(R.pdst, R.pdp, 64 << 10, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    !mem_make(R.precv, R.pdp, PRSLOTS * PSLOT, IBV_ACCESS_LOCAL_WRITE))
		return false;
	alpha_fill(R.vsrc.p, R.vsrc.len, r);
	alpha_fill(R.psrc.p, R.psrc.len, r);
	R.psrc_ref.assign(R.psrc.p, R.psrc.p + R.psrc.len);
	static const uint32_t lens[] = {1, 8, 63, 64, 100, 255, 256, 511, 512, 700,
					1000, 1024, 1500, 2000, 2048, 3000};
	for (uint32_t l : lens)
		R.sges.emplace_back(rnd(r, R.vsrc.len - l + 1), l);
	return true;
}

bool res_teardown()
{
	bool ok = mem_free(R.vsrc) & mem_free(R.vrecv) & mem_free(R.psrc) & mem_free(R.pdst) &
		  mem_free(R.precv);
	if (R.pdv)
		ok &= !ibv_dealloc_pd(R.pdv);
	if (R.pdp)
		ok &= !ibv_dealloc_pd(R.pdp);
	return ok;
}

// ---- a round's victim --------------------------------------------------------------------------

enum kind { K_RC, K_UC, K_UD, K_SRQ, K_N };
const char *const kind_name[K_N] = {"RC", "UC", "UD", "RC+SRQ"};

struct victim {
	int n = 0;
	kind k = K_RC;
	rng_t rng, frng;		// traffic's, fuzzer's
	ibv_cq *vcq = nullptr, *pcq = nullptr;
	ibv_srq *srq = nullptr;
	ibv_qp *vqp = nullptr, *pqp = nullptr;
	ibv_ah *vah = nullptr, *pah = nullptr;
	uint32_t vqpn = 0, pqpn = 0, max_inline = 0, max_sge = 0, max_rsge = 0;
	ringref sq, rq, srqr, cqr;
	// Our stores to the producer side of the victim's rings: the
	// provider's posts (the traffic thread) and the fuzzer's.
	std::mutex mu;
	idxlog lsq, lrq, lsrq;
	recpool pool;			// records in SQ slots: traffic's, fuzzer's
	std::vector<sroce_sge> fz_sq, fz_rq;	// the fuzzer's own
	std::vector<std::pair<uint64_t, uint32_t>> remotes;	// (addr, rkey) to aim at
	std::atomic<bool> go{false}, stop{false};
	double hard_at = 0;		// when the fuzzer may kill the QP on purpose
	double died = 0;		// when the victim was first seen in ERR
	std::string first_err;		// the round's first error completion
	// traffic
	uint64_t posts = 0, c_send = 0, c_recv = 0, c_recv_ok = 0;
	uint64_t p_sends = 0, p_out = 0, p_recv = 0, p_rq_out = 0, v_rq_out = 0;
	std::vector<bool> p_posted = std::vector<bool>(PRSLOTS);	// partner slots posted
	// fuzzer
	uint64_t fz_ops = 0, fz_doorbells = 0;
	bool udp() const { return k == K_UD; }
};

uint64_t g_seed;
uint64_t g_rounds[K_N], g_fz_ops, g_doorbells, g_completions, g_phases, g_checked_bytes;
uint64_t g_uc_leftovers;	// UC receives holding a dropped message's bytes

// The SGE records a slot can hold: the traffic's and the fuzzer's.
void build_pools(victim &v)
{
	for (auto &[off, len] : R.sges)
		v.pool.add(R.vsrc.addr(off), len, R.vsrc.mr->lkey);
	rng_t &r = v.rng;
	static const uint32_t lens[] = {0, 1, 4096, 0x7fffffff, 0x80000000u, 0x80000001u,
					0xffffffffu, 0xffffffc0u, 65536, 65537};
	for (int i = 0; i < 32; i++) {
		uint64_t addr;
		switch (rnd(r, 6)) {
		case 0: addr = R.vsrc.addr(rnd(r, R.vsrc.len)); break;
		case 1: addr = R.vsrc.addr(R.vsrc.len - rnd(r, 64)); break;
		case 2: addr = R.vsrc.addr() - rnd(r, 4096); break;
		case 3: addr = r(); break;
		case 4: addr = 0; break;
		default: addr = ~0ull - rnd(r, 4096); break;
		}
		uint32_t len = chance(r, 50) ? lens[rnd(r, 10)] : static_cast<uint32_t>(rnd(r, 5000));
		// Never the receive MR's key: UD receives put a GRH there.
		uint32_t lkey = chance(r, 60) ? R.vsrc.mr->lkey :
				chance(r, 50) ? R.vsrc.mr->lkey ^ 1 :
				static_cast<uint32_t>(r()) | 0x80000000u;
		v.fz_sq.push_back({addr, len, lkey});
		v.pool.add(addr, len, lkey);
		// Receive SGEs: anywhere in the receive MR, never the send MR.
		uint64_t raddr = chance(r, 70) ? R.vrecv.addr(rnd(r, R.vrecv.len)) : addr;
		uint32_t rkey = chance(r, 60) ? R.vrecv.mr->lkey :
				chance(r, 50) ? R.vrecv.mr->lkey ^ 1 :
				static_cast<uint32_t>(r()) | 0x80000000u;
		v.fz_rq.push_back({raddr, len, rkey});
	}
	auto aim = [&](const mem &m) {
		v.remotes.emplace_back(m.addr(rnd(r, m.len)), m.mr->rkey);
		v.remotes.emplace_back(m.addr(m.len - rnd(r, 16)), m.mr->rkey);
	};
	aim(R.pdst);
	aim(R.psrc);
	aim(R.precv);
	aim(BY.tgtb);
	aim(BY.rsrcb);
	aim(BY.recvb);
	v.remotes.emplace_back(r(), static_cast<uint32_t>(r()));
	v.remotes.emplace_back(R.pdst.addr(), R.pdst.mr->rkey ^ 1);
}

void make_fuzz_wqe(victim &v, uint8_t *s, bool bad);

bool victim_setup(victim &v)
{
	bool srqk = v.k == K_SRQ;
	ibv_qp_type t = v.k == K_UC ? IBV_QPT_UC : v.k == K_UD ? IBV_QPT_UD : IBV_QPT_RC;
	static const uint32_t sq_sizes[] = {8, 16, 16, 32};
	uint32_t swr = sq_sizes[rnd(v.rng, 4)];
	v.vcq = ibv_create_cq(DA.ctx, 256, nullptr, nullptr, 0);
	v.pcq = ibv_create_cq(DB.ctx, 512, nullptr, nullptr, 0);
	if (!v.vcq || !v.pcq)
		return false;
	if (srqk) {
		ibv_srq_init_attr sa = {};
		sa.attr.max_wr = 32;
		sa.attr.max_sge = 4;
		v.srq = ibv_create_srq(R.pdv, &sa);
		if (!v.srq)
			return false;
		v.max_rsge = sa.attr.max_sge;
	}
	v.vqp = make_qp(R.pdv, v.vcq, t, v.srq, swr, VRSLOTS, 4, 4, 128);
	v.pqp = make_qp(R.pdp, v.pcq, t, nullptr, 32, PRSLOTS, 2, 1, 0);
	if (!v.vqp || !v.pqp)
		return false;
	v.vqpn = v.vqp->qp_num;
	v.pqpn = v.pqp->qp_num;
	ibv_qp_attr qa = {};
	ibv_qp_init_attr qia = {};
	if (ibv_query_qp(v.vqp, &qa, IBV_QP_CAP, &qia))
		return false;
	v.max_inline = qia.cap.max_inline_data;
	v.max_sge = qia.cap.max_send_sge;
	if (!srqk)
		v.max_rsge = qia.cap.max_recv_sge;
	int vacc = 0, pacc = t == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE :
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (qp_ready(v.vqp, DA, t, v.pqpn, DB.gid, vacc, 14, 16, 7) ||
	    qp_ready(v.pqp, DB, t, v.vqpn, DA.gid, pacc, 14, 14, 3))
		return false;
	if (t == IBV_QPT_UD) {
		v.vah = make_ah(R.pdv, DA, DB.gid);
		v.pah = make_ah(R.pdp, DB, DA.gid);
		if (!v.vah || !v.pah)
			return false;
	}
	v.sq = sq_ring(v.vqp);
	v.rq = rq_ring(v.vqp);
	v.cqr = cq_ring(v.vcq);
	if (v.srq)
		v.srqr = srq_ring(v.srq);
	v.lsq.start(v.sq);
	if (v.rq.h)
		v.lrq.start(v.rq);
	if (v.srqr.h)
		v.lsrq.start(v.srqr);
	build_pools(v);
	// Every byte after a slot's header is ours to send: the alphabet; and
	// a slot published as it is holds a valid WQE (zeros are a WRITE,
	// which a UD QP cannot do).
	for (uint32_t i = 0; i < v.sq.entries; i++) {
		alpha_fill(v.sq.slot(i) + SROCE_SEND_WQE_HDR, v.sq.stride - SROCE_SEND_WQE_HDR, v.rng);
		make_fuzz_wqe(v, v.sq.slot(i), false);
	}
	std::lock_guard<std::mutex> g(g_reg_mu);
	g_reg.victim = v.vqp;
	g_reg.partner = v.pqp;
	g_reg.vcq = v.vcq;
	g_reg.pcq = v.pcq;
	g_reg.vsrq = v.srq;
	return true;
}

// Unregistered only once destroyed: ibv_destroy_* waits until every
// event of its object has been acknowledged.
bool victim_teardown(victim &v)
{
	bool ok = true;
	auto chk = [&](int r, const char *what) {
		if (r) {
			fail(C_SETUP, "round %d: %s: %s", v.n, what, strerror(r));
			ok = false;
		}
	};
	if (v.vqp)
		chk(ibv_destroy_qp(v.vqp), "destroy the victim QP");
	if (v.pqp)
		chk(ibv_destroy_qp(v.pqp), "destroy the partner QP");
	if (v.vah)
		chk(ibv_destroy_ah(v.vah), "destroy an AH");
	if (v.pah)
		chk(ibv_destroy_ah(v.pah), "destroy an AH");
	if (v.srq)
		chk(ibv_destroy_srq(v.srq), "destroy the SRQ");
	if (v.vcq)
		chk(ibv_destroy_cq(v.vcq), "destroy the victim CQ");
	if (v.pcq)
		chk(ibv_destroy_cq(v.pcq), "destroy the partner CQ");
	std::lock_guard<std::mutex> g(g_reg_mu);
	g_reg.victim = g_reg.partner = nullptr;
	g_reg.vcq = g_reg.pcq = nullptr;
	g_reg.vsrq = nullptr;
	return ok;
}

// ---- traffic -----------------------------------------------------------------------------------

// One victim WR into wr/sge (inline bytes into ibuf): SEND (SGEs or
// inline), WRITE, WRITE_WITH_IMM, READ as the QP type allows.
void make_victim_wr(victim &v, ibv_send_wr &wr, ibv_sge *sge, uint8_t *ibuf)
{
	rng_t &r = v.rng;
	wr = {};
	wr.wr_id = VTAG | v.posts;
	wr.sg_list = sge;
	wr.send_flags = chance(r, 85) ? IBV_SEND_SIGNALED : 0;
	unsigned op = rnd(r, v.k == K_UD ? 2 : v.k == K_UC ? 4 : 6);
	// What the partner's receive buffers take (a SEND), or the MTU (UD).
	uint32_t cap = v.k == K_UD ? 1024 : PSLOT;
	if (op < 2 && v.max_inline && chance(r, 40)) {	// inline SEND / WRITE
		uint32_t len = 1 + rnd(r, v.max_inline);
		alpha_fill(ibuf, len, r);
		sge[0] = {reinterpret_cast<uintptr_t>(ibuf), len, 0};
		wr.num_sge = 1;
		wr.send_flags |= IBV_SEND_INLINE;
	} else {
		uint32_t total = 0, n = 1 + rnd(r, std::min(3u, v.max_sge));
		wr.num_sge = 0;
		for (uint32_t i = 0; i < n; i++) {
			auto [off, len] = R.sges[rnd(r, R.sges.size())];
			if (total + len > cap)
				continue;
			sge[wr.num_sge++] = {R.vsrc.addr(off), len, R.vsrc.mr->lkey};
			total += len;
		}
	}
	switch (op) {
	case 0:
		wr.opcode = chance(r, 25) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		break;
	case 1:
	case 2:
		if (v.k == K_UD) {
			wr.opcode = IBV_WR_SEND;
			break;
		}
		wr.opcode = op == 1 ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
		break;
	case 3:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		break;
	default:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags &= ~IBV_SEND_INLINE;
		if (!wr.num_sge || sge[0].lkey == 0) {
			auto [off, len] = R.sges[rnd(r, R.sges.size())];
			sge[0] = {R.vsrc.addr(off), len, R.vsrc.mr->lkey};
			wr.num_sge = 1;
		}
		break;
	}
	wr.imm_data = htonl(static_cast<uint32_t>(v.posts));
	if (v.k == K_UD) {
		wr.wr.ud.ah = v.vah;
		wr.wr.ud.remote_qpn = v.pqpn;
		wr.wr.ud.remote_qkey = QKEY;
	} else if (wr.opcode == IBV_WR_RDMA_READ) {
		uint32_t len = 0;
		for (int i = 0; i < wr.num_sge; i++)
			len += sge[i].length;
		wr.wr.rdma.remote_addr = R.psrc.addr(rnd(r, R.psrc.len - std::min<size_t>(len, R.psrc.len) + 1));
		wr.wr.rdma.rkey = R.psrc.mr->rkey;
	} else {
		wr.wr.rdma.remote_addr = R.pdst.addr(rnd(r, R.pdst.len - 3 * 3000));
		wr.wr.rdma.rkey = R.pdst.mr->rkey;
	}
}

// Post a chain of n victim WRs; the prod it leaves goes to the log.
int post_victim_sends(victim &v, unsigned n)
{
	ibv_send_wr wr[16], *badwr = nullptr;
	ibv_sge sge[16][4];
	uint8_t ibuf[16][256];
	n = std::min(n, 16u);
	for (unsigned i = 0; i < n; i++) {
		make_victim_wr(v, wr[i], sge[i], ibuf[i]);
		wr[i].wr_id = VTAG | (v.posts + i);
		wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
	}
	std::lock_guard<std::mutex> g(v.mu);
	int e = ibv_post_send(v.vqp, wr, &badwr);
	v.lsq.wrote(v.sq.prod());
	unsigned done = n;
	if (e && badwr)
		done = badwr - wr;
	v.posts += done;
	return done;
}

void post_victim_recvs(victim &v)
{
	for (int tries = 0; tries < 4 && v.v_rq_out < 24; tries++) {
		uint32_t j = rnd(v.rng, VRSLOTS);
		ibv_sge s = {R.vrecv.addr(j * VSLOT), VSLOT, R.vrecv.mr->lkey};
		ibv_recv_wr wr = {}, *badwr;
		wr.wr_id = VTAG | j;
		wr.sg_list = &s;
		wr.num_sge = 1;
		std::lock_guard<std::mutex> g(v.mu);
		int e;
		if (v.srq) {
			e = ibv_post_srq_recv(v.srq, &wr, &badwr);
			v.lsrq.wrote(v.srqr.prod());
		} else {
			e = ibv_post_recv(v.vqp, &wr, &badwr);
			v.lrq.wrote(v.rq.prod());
		}
		if (e)
			break;
		v.v_rq_out++;
	}
}

// The partner is not fuzzed: its receives and sends go through the verbs.
void post_partner_recv(victim &v, uint32_t j)
{
	ibv_sge s = {R.precv.addr(j * PSLOT), PSLOT, R.precv.mr->lkey};
	ibv_recv_wr wr = {}, *badwr;
	wr.wr_id = PTAG | j;
	wr.sg_list = &s;
	wr.num_sge = 1;
	if (!ibv_post_recv(v.pqp, &wr, &badwr)) {
		v.p_rq_out++;
		v.p_posted[j] = true;
	}
}

void fill_partner_rq(victim &v)
{
	for (uint32_t j = 0; j < PRSLOTS && v.p_rq_out < 48; j++)
		if (!v.p_posted[j])
			post_partner_recv(v, j);
}

void post_partner_send(victim &v)
{
	uint32_t len = 1 + rnd(v.rng, v.k == K_UD ? 1024 : 2048);
	ibv_sge s = {R.psrc.addr(rnd(v.rng, R.psrc.len - len)), len, R.psrc.mr->lkey};
	ibv_send_wr wr = {}, *badwr;
	wr.wr_id = PTAG | v.p_sends;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (v.k == K_UD) {
		wr.wr.ud.ah = v.pah;
		wr.wr.ud.remote_qpn = v.vqpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	if (!ibv_post_send(v.pqp, &wr, &badwr)) {
		v.p_sends++;
		v.p_out++;
	}
}

void poll_victim(victim &v)
{
	ibv_wc wc[32];
	sroce_cqe raw[32];
	int n = poll_raw(v.vcq, 32, wc, raw);
	char who[64];
	snprintf(who, sizeof(who), "round %d (%s): victim", v.n, kind_name[v.k]);
	for (int i = 0; i < n; i++) {
		check_cqe(who, raw[i], v.vqpn, v.pqpn, 2048 + 40);
		if (wc[i].status != IBV_WC_SUCCESS && v.first_err.empty())
			v.first_err = std::string("victim ") + ibv_wc_status_str(wc[i].status) +
				      (wc[i].opcode & IBV_WC_RECV ? " (receive)" : " (send)");
		if (wc[i].opcode & IBV_WC_RECV) {
			v.c_recv++;
			if (wc[i].status == IBV_WC_SUCCESS)
				v.c_recv_ok++;
			if (v.v_rq_out)
				v.v_rq_out--;
		} else {
			v.c_send++;
		}
	}
	g_completions += n;
}

// A receive at the partner: what arrived is the victim's alphabet (or a
// record of its own), nothing beyond byte_len, and a WRITE_WITH_IMM left
// the buffer alone. On UC a message that lost a packet is dropped whole
// but its earlier packets were placed, and the receive WQE they went to
// takes the next message (IBTA's UC responder; hardware alike): beyond byte_len,
// and under a WRITE_WITH_IMM, that WQE may hold the victim's bytes of the
// dropped message (still the alphabet: never a byte from elsewhere).
bool uc_leftover(const victim &v, const uint8_t *b, size_t n, size_t *bad)
{
	if (v.k != K_UC)
		return false;
	*bad = check_bytes(b, n, true, &v.pool);
	if (*bad != n)
		return false;
	g_uc_leftovers++;
	return true;
}

void partner_received(victim &v, const ibv_wc &wc)
{
	uint32_t j = wc.wr_id & 0xffff;
	if ((wc.wr_id & ~0xffffull) != PTAG || j >= PRSLOTS) {
		fail(C_CQE, "round %d: partner receive with wr_id 0x%llx", v.n,
		     static_cast<unsigned long long>(wc.wr_id));
		return;
	}
	uint8_t *p = R.precv.p + j * PSLOT;
	uint32_t g = v.udp() ? 40 : 0;		// the GRH
	size_t bad;
	const char *what = nullptr;
	if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV) {
		uint32_t len = std::min(wc.byte_len, PSLOT);
		if (len < g) {
			what = "UD receive shorter than its GRH";
			bad = 0;
		} else if ((bad = check_bytes(p + g, len - g, false, &v.pool)) != len - g) {
			what = "received byte not from the alphabet";
			bad += g;
		} else if ((bad = first_nonzero(p + len, PSLOT - len)) != PSLOT - len &&
			   !uc_leftover(v, p + len, PSLOT - len, &bad)) {
			what = "written beyond byte_len";
			bad += len;
		}
		g_checked_bytes += len;
	} else if (wc.status == IBV_WC_SUCCESS) {	// WRITE_WITH_IMM: data went to pdst
		if ((bad = first_nonzero(p, PSLOT)) != PSLOT && !uc_leftover(v, p, PSLOT, &bad))
			what = "WRITE_WITH_IMM wrote into the receive buffer";
	} else if ((bad = check_bytes(p + g, PSLOT - g, true, &v.pool)) != PSLOT - g) {
		what = "byte not from the alphabet in a failed receive";
		bad += g;
	}
	if (what)
		fail(C_LEAK, "round %d (%s): partner slot %u, status %s, opcode %d, byte_len %u: %s at %zu: %s",
		     v.n, kind_name[v.k], j, ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len,
		     what, bad, hexdump(p, PSLOT, bad).c_str());
	memset(p, 0, PSLOT);
	v.p_posted[j] = false;
	if (v.p_rq_out)
		v.p_rq_out--;
	// A flushed QP would flush a new receive at once, and so on.
	if (wc.status != IBV_WC_WR_FLUSH_ERR) {
		v.p_recv++;
		post_partner_recv(v, j);
	}
}

void poll_partner(victim &v)
{
	ibv_wc wc[32];
	sroce_cqe raw[32];
	int n = poll_raw(v.pcq, 32, wc, raw);
	char who[64];
	snprintf(who, sizeof(who), "round %d (%s): partner", v.n, kind_name[v.k]);
	for (int i = 0; i < n; i++) {
		check_cqe(who, raw[i], v.pqpn, v.vqpn, PSLOT);
		if (wc[i].status != IBV_WC_SUCCESS && v.first_err.empty())
			v.first_err = std::string("partner ") + ibv_wc_status_str(wc[i].status) +
				      (wc[i].opcode & IBV_WC_RECV ? " (receive)" : " (send)");
		if (wc[i].opcode & IBV_WC_RECV)
			partner_received(v, wc[i]);
		else if (v.p_out)
			v.p_out--;
	}
}

// The kernel's consumer indices, as they are now.
void sample_indices(victim &v)
{
	v.lsq.sample(v.sq.cons());
	if (v.rq.h)
		v.lrq.sample(v.rq.cons());
	if (v.srqr.h)
		v.lsrq.sample(v.srqr.cons());
}

// What was published bounds what completed and where the kernel stands.
bool check_indices(victim &v, const char *when)
{
	std::lock_guard<std::mutex> g(v.mu);
	bool ok = true;
	uint32_t bsq = v.lsq.bound();
	idxlog &lr = v.srq ? v.lsrq : v.lrq;
	uint32_t brq = lr.bound();
	const char *rqn = v.srq ? "SRQ" : "RQ";
	auto f = [&](cat c, const char *fmt, auto... a) {
		char b[400];
		snprintf(b, sizeof(b), fmt, a...);
		fail(c, "round %d (%s, SQ of %u, %s): %s", v.n, kind_name[v.k], v.sq.entries, when, b);
		ok = false;
	};
	if (v.c_send > bsq)
		f(C_COUNT, "%llu send completions, but at most %u WQEs were ever published (%llu posted)",
		  static_cast<unsigned long long>(v.c_send), bsq, static_cast<unsigned long long>(v.posts));
	if (v.p_recv > bsq)
		f(C_COUNT, "the partner received %llu messages from at most %u published WQEs",
		  static_cast<unsigned long long>(v.p_recv), bsq);
	if (v.c_recv > brq)
		f(C_COUNT, "%llu receive completions, but at most %u %s WQEs were ever published",
		  static_cast<unsigned long long>(v.c_recv), brq, rqn);
	if (v.c_recv_ok > v.p_sends)
		f(C_COUNT, "%llu successful receives, but the partner sent only %llu messages",
		  static_cast<unsigned long long>(v.c_recv_ok), static_cast<unsigned long long>(v.p_sends));
	auto idx = [&](idxlog &l, const char *qn, uint32_t b) {
		if (l.cons_behind)
			f(C_INDEX, "the kernel's %s cons 0x%x went behind where it began (0x%x)", qn,
			  l.behind, l.base);
		if (l.max_cons > b)
			f(C_INDEX, "the kernel's %s cons reached base+%u, but prod was never published beyond base+%u",
			  qn, l.max_cons, b);
	};
	idx(v.lsq, "SQ", bsq);
	if (v.rq.h || v.srqr.h)
		idx(lr, rqn, brq);
	return ok;
}

// ---- the fuzzer ----------------------------------------------------------------------------------

// A producer index: back a little, back up to a ring, behind the
// consumer, forward over stale slots, exactly full, more than a ring,
// far away, near 2^32, the same value again, the provider's own value.
void fz_prod(victim &v, bool sq)
{
	rng_t &r = v.frng;
	ringref &q = sq ? v.sq : v.srq ? v.srqr : v.rq;
	idxlog &log = sq ? v.lsq : v.srq ? v.lsrq : v.lrq;
	{
		std::lock_guard<std::mutex> g(v.mu);
		uint32_t shadow_now = sq ? sq_shadow(v.vqp) : v.srq ? srq_shadow(v.srq) :
				      rq_shadow(v.vqp);
		uint32_t p = q.prod(), c = q.cons(), e = q.entries, x;
		switch (rnd(r, 12)) {
		case 0: x = p - 1 - rnd(r, 3); break;
		case 1: x = p - 1 - rnd(r, e); break;
		case 2: x = c - 1 - rnd(r, 4); break;
		case 3: x = p + 1 + rnd(r, e); break;
		case 4: x = c + e; break;
		case 5: x = c + e + 1 + rnd(r, 3 * e); break;
		case 6: x = c ^ 0x80000000u; break;
		case 7: x = 0xffffffffu - rnd(r, 2 * e); break;
		case 8: x = static_cast<uint32_t>(r()); break;
		case 9: x = p; break;
		case 10: x = c; break;
		default: x = shadow_now; break;
		}
		torn_store(&q.h->prod, x, r, &log);
	}
	if (chance(r, 60)) {
		v.fz_doorbells++;
		if (sq)
			sq_doorbell(v.vqp);
		else if (!v.srq)
			rq_doorbell(v.vqp);
	}
}

// A consumer index the kernel owns (or, for the CQ, the provider does).
void fz_cons(victim &v, ringref &q, idxlog *log)
{
	rng_t &r = v.frng;
	if (log)
		log->cons_written = true;
	uint32_t p = q.prod(), c = q.cons(), e = q.entries, x;
	switch (rnd(r, 9)) {
	case 0: x = c - 1; break;
	case 1: x = c + 1; break;
	case 2: x = c + rnd(r, e); break;
	case 3: x = p; break;
	case 4: x = p + 1; break;
	case 5: x = c - e - 1; break;
	case 6: x = 0; break;
	case 7: x = 0xffffffffu; break;
	default: x = static_cast<uint32_t>(r()); break;
	}
	torn_store(&q.h->cons, x, r, nullptr);
}

// A slot index to rewrite: one in flight (fetched or not), one about to
// be posted, any; only one in flight if @in_flight.
uint32_t fz_pick(rng_t &r, const ringref &q, bool in_flight = false)
{
	uint32_t p = q.prod(), c = q.cons();
	if ((in_flight || chance(r, 45)) && p - c - 1 < q.entries)
		return c + rnd(r, p - c);
	if (chance(r, 55))
		return p + rnd(r, 4);
	return static_cast<uint32_t>(r());
}

void store_bytes(uint8_t *dst, const void *src, size_t n, rng_t &r)
{
	if (chance(r, 50)) {
		memcpy(dst, src, n);
		return;
	}
	const uint8_t *s = static_cast<const uint8_t *>(src);
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(dst + i, s[i], __ATOMIC_RELAXED);
}

// Rewrite fields of a send WQE (every opcode and flag, num_sge 0..255,
// lengths near 2^31/2^32, remote keys of every MR around). A header with
// INLINE set goes out only after the slot's payload bytes are the
// alphabet again; SGE records follow a header without it.
void fz_sq_wqe(victim &v, bool in_flight)
{
	rng_t &r = v.frng;
	std::lock_guard<std::mutex> g(v.mu);
	uint8_t *s = v.sq.slot(fz_pick(r, v.sq, in_flight));
	sroce_send_wqe w;
	memcpy(&w, s, sizeof(w));
	static const uint32_t ilens[] = {0, 1, 0x7fffffff, 0x80000000u, 0xffffffffu, 4096, 255, 256, 257};
	for (int n = 1 + rnd(r, 4); n--;) {
		switch (rnd(r, 11)) {
		case 0:
			w.opcode = chance(r, 70) ? rnd(r, 10) : chance(r, 30) ? 0x20 :
				   static_cast<uint8_t>(r());
			break;
		case 1: {
			const uint8_t c[] = {0, 1, 2, static_cast<uint8_t>(v.max_sge),
					     static_cast<uint8_t>(v.max_sge + 1), 255,
					     static_cast<uint8_t>(r())};
			w.num_sge = c[rnd(r, 7)];
			break;
		}
		case 2:
			w.flags = chance(r, 50) ? rnd(r, 16) : chance(r, 50) ? static_cast<uint16_t>(r()) :
				  w.flags ^ SROCE_WQE_F_INLINE;
			break;
		case 3: {
			uint32_t c[] = {v.max_inline - 1, v.max_inline, v.max_inline + 1,
					v.sq.stride - SROCE_SEND_WQE_HDR, static_cast<uint32_t>(r()),
					ilens[rnd(r, 9)]};
			w.inline_len = c[rnd(r, 6)];
			break;
		}
		case 4: {
			auto [a, k] = v.remotes[rnd(r, v.remotes.size())];
			w.wr.rdma.remote_addr = a;
			w.wr.rdma.rkey = k;
			break;
		}
		case 5:
			w.wr.ud.ah_num = chance(r, 50) ? w.wr.ud.ah_num : static_cast<uint32_t>(r()) & 0xffff;
			w.wr.ud.remote_qpn = chance(r, 50) ? v.pqpn : chance(r, 50) ? rnd(r, 1 << 24) :
					     static_cast<uint32_t>(r());
			w.wr.ud.remote_qkey = chance(r, 50) ? QKEY : static_cast<uint32_t>(r());
			break;
		case 6:
			w.ex.imm_data = static_cast<uint32_t>(r());
			break;
		case 7:
			w.wr_id = r();
			break;
		case 8:
			if (chance(r, 50))
				w.xrc_srqn = static_cast<uint32_t>(r());
			else
				w.wr.rdma.reserved = static_cast<uint32_t>(r());
			break;
		case 9:
			for (auto &b : w.wr.raw)
				b = static_cast<uint8_t>(r());
			break;
		default:
			w.wr.atomic.compare_add = r();
			w.wr.atomic.swap = r();
			break;
		}
	}
	uint8_t *tail = s + SROCE_SEND_WQE_HDR;
	size_t tlen = v.sq.stride - SROCE_SEND_WQE_HDR;
	if (w.flags & SROCE_WQE_F_INLINE) {
		alpha_fill(tail, tlen, r);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		store_bytes(s, &w, sizeof(w), r);
		return;
	}
	store_bytes(s, &w, sizeof(w), r);
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (chance(r, 40)) {
		for (size_t i = 0, n = rnd(r, tlen / 16) + 1; i < n; i++) {
			const sroce_sge &e = chance(r, 70) ? v.fz_sq[rnd(r, v.fz_sq.size())] :
					     sroce_sge{R.vsrc.addr(R.sges[i % R.sges.size()].first),
						       R.sges[i % R.sges.size()].second, R.vsrc.mr->lkey};
			store_bytes(tail + 16 * i, &e, 16, r);
		}
	}
}

// Rewrite a receive WQE of the RQ or SRQ: num_sge 0..2^32-1, SGEs
// anywhere in the receive MR or nowhere.
void fz_recv_wqe(victim &v, ringref &q)
{
	rng_t &r = v.frng;
	std::lock_guard<std::mutex> g(v.mu);
	uint8_t *s = q.slot(fz_pick(r, q));
	sroce_recv_wqe h;
	memcpy(&h, s, sizeof(h));
	const uint32_t c[] = {0, 1, 2, v.max_rsge, v.max_rsge + 1, 255, 0xffffffffu,
			      static_cast<uint32_t>(r())};
	if (chance(r, 70))
		h.num_sge = c[rnd(r, 8)];
	if (chance(r, 30))
		h.wr_id = r();
	if (chance(r, 20))
		h.reserved = static_cast<uint32_t>(r());
	if (chance(r, 60)) {
		size_t n = std::min<size_t>(1 + rnd(r, 4), (q.stride - SROCE_RECV_WQE_HDR) / 16);
		for (size_t i = 0; i < n; i++)
			store_bytes(s + SROCE_RECV_WQE_HDR + 16 * i, &v.fz_rq[rnd(r, v.fz_rq.size())], 16, r);
	}
	store_bytes(s, &h, sizeof(h), r);
}

// One send WQE of the fuzzer's own into slot s: a valid one, odd where it
// may be (zero or maximal lengths, inline up to the limit, unsignaled,
// solicited, fenced), or with @bad one thing wrong.
void make_fuzz_wqe(victim &v, uint8_t *s, bool bad)
{
	rng_t &r = v.frng;
	sroce_send_wqe w = {};
	w.wr_id = r();
	static const uint8_t rc_ops[] = {SROCE_WR_SEND, SROCE_WR_SEND_WITH_IMM, SROCE_WR_RDMA_WRITE,
					 SROCE_WR_RDMA_WRITE_WITH_IMM, SROCE_WR_RDMA_READ};
	w.opcode = rc_ops[rnd(r, v.k == K_UD ? 2 : v.k == K_UC ? 4 : 5)];
	w.flags = (chance(r, 80) ? SROCE_WQE_F_SIGNALED : 0) |
		  (chance(r, 20) ? SROCE_WQE_F_SOLICITED : 0) | (chance(r, 10) ? SROCE_WQE_F_FENCE : 0);
	w.ex.imm_data = static_cast<uint32_t>(r());
	uint32_t cap = v.k == K_UD ? 1024 : w.opcode == SROCE_WR_RDMA_READ ? 4096 : PSLOT;
	uint32_t total = 0;
	sroce_sge sg[4] = {};
	bool inl = w.opcode != SROCE_WR_RDMA_READ && v.max_inline && chance(r, 30);
	if (inl) {
		w.flags |= SROCE_WQE_F_INLINE;
		w.inline_len = chance(r, 20) ? v.max_inline : rnd(r, v.max_inline + 1);
		total = w.inline_len;
	} else {
		for (uint32_t i = 0, n = rnd(r, std::min(v.max_sge, 4u) + 1); i < n; i++) {
			auto [off, len] = R.sges[rnd(r, R.sges.size())];
			if (total + len > cap)
				continue;
			sg[w.num_sge++] = {R.vsrc.addr(off), len, R.vsrc.mr->lkey};
			total += len;
		}
	}
	if (v.k == K_UD) {
		w.wr.ud.ah_num = sroce::to_sah(v.vah)->ah_num;
		w.wr.ud.remote_qpn = v.pqpn;
		w.wr.ud.remote_qkey = chance(r, 80) ? QKEY : 0x80000000u;
	} else if (w.opcode == SROCE_WR_RDMA_READ) {
		w.wr.rdma.remote_addr = R.psrc.addr(rnd(r, R.psrc.len - total + 1));
		w.wr.rdma.rkey = R.psrc.mr->rkey;
	} else {
		w.wr.rdma.remote_addr = R.pdst.addr(rnd(r, R.pdst.len - total + 1));
		w.wr.rdma.rkey = R.pdst.mr->rkey;
	}
	if (bad) {
		switch (rnd(r, 9)) {
		case 0: w.opcode = 10 + rnd(r, 246); break;
		case 1: w.flags |= 0x10 << rnd(r, 12); break;
		case 2: w.num_sge = v.max_sge + 1 + rnd(r, 255 - v.max_sge); break;
		case 3:
			w.flags |= SROCE_WQE_F_INLINE;
			inl = true;
			w.inline_len = chance(r, 50) ? v.max_inline + 1 : 0x80000000u + rnd(r, 2);
			break;
		case 4:
			w.num_sge = 1;
			sg[0] = v.fz_sq[rnd(r, v.fz_sq.size())];
			break;
		case 5:	// READ with inline data, atomics to memory without the right
			w.opcode = chance(r, 50) ? SROCE_WR_RDMA_READ : SROCE_WR_ATOMIC_FETCH_AND_ADD;
			w.flags |= SROCE_WQE_F_INLINE;
			inl = true;
			break;
		case 6: w.opcode = chance(r, 50) ? SROCE_WR_LOCAL_INV : SROCE_WR_BIND_MW; break;
		case 7: w.opcode = 0x20; break;	// REG_MR: kernel ULPs only
		default:
			w.wr.rdma.rkey ^= 1 + rnd(r, 255);
			break;
		}
	}
	uint8_t *tail = s + SROCE_SEND_WQE_HDR;
	size_t tlen = v.sq.stride - SROCE_SEND_WQE_HDR;
	if (inl) {
		alpha_fill(tail, tlen, r);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		memcpy(s, &w, sizeof(w));
		return;
	}
	memcpy(s, &w, sizeof(w));
	std::atomic_thread_fence(std::memory_order_seq_cst);
	// Only real records: a slot read while rewritten sends what is there.
	unsigned nrec = 0;
	while (nrec < 4 && sg[nrec].lkey)
		nrec++;
	memcpy(tail, sg, std::min<size_t>(nrec * sizeof(sg[0]), tlen));
}

// Rewrite a slot in flight with another valid WQE (the kernel has fetched
// it or will fetch this one), or only its wr_id or SIGNALED flag, which
// the kernel reads again when it completes the WQE.
void fz_sq_rewrite(victim &v)
{
	rng_t &r = v.frng;
	std::lock_guard<std::mutex> g(v.mu);
	uint8_t *s = v.sq.slot(fz_pick(r, v.sq, true));
	auto *w = reinterpret_cast<sroce_send_wqe *>(s);
	switch (rnd(r, 3)) {
	case 0:
		make_fuzz_wqe(v, s, false);
		break;
	case 1:
		__atomic_store_n(&w->wr_id, r(), __ATOMIC_RELAXED);
		break;
	default:
		__atomic_fetch_xor(&w->flags, SROCE_WQE_F_SIGNALED, __ATOMIC_RELAXED);
		break;
	}
}

// Publish WQEs of our own as the provider would (its lock, its shadow
// producer index): what a process with its own provider may do.
void fz_publish(victim &v, bool bad)
{
	rng_t &r = v.frng;
	auto *q = reinterpret_cast<sroce::qp *>(v.vqp);
	uint32_t k;
	{
		std::lock_guard<std::mutex> g(v.mu);
		pthread_spin_lock(&q->sq_lock);
		k = std::min<uint32_t>(q->sq.free_slots(), 1 + rnd(r, 4));
		for (uint32_t i = 0; i < k; i++)
			make_fuzz_wqe(v, static_cast<uint8_t *>(q->sq.slot(i)), bad && i == k - 1);
		if (k) {
			q->sq.publish(k);
			v.lsq.wrote(q->sq.index());
		}
		pthread_spin_unlock(&q->sq_lock);
	}
	if (k) {
		v.fz_doorbells++;
		sq_doorbell(v.vqp);
	}
}

// Publish the next slots again as they are: stale WQEs, done long ago.
void fz_republish(victim &v)
{
	rng_t &r = v.frng;
	auto *q = reinterpret_cast<sroce::qp *>(v.vqp);
	uint32_t k;
	{
		std::lock_guard<std::mutex> g(v.mu);
		pthread_spin_lock(&q->sq_lock);
		k = std::min<uint32_t>(q->sq.free_slots(), 1 + rnd(r, 4));
		if (k) {
			q->sq.publish(k);
			v.lsq.wrote(q->sq.index());
		}
		pthread_spin_unlock(&q->sq_lock);
	}
	if (k) {
		v.fz_doorbells++;
		sq_doorbell(v.vqp);
	}
}

// Receive WQEs of our own into the RQ or SRQ, the provider's way: into
// the receive MR, one to four SGEs, odd lengths; with @bad one wrong.
void fz_publish_recv(victim &v, bool bad)
{
	rng_t &r = v.frng;
	auto *q = reinterpret_cast<sroce::qp *>(v.vqp);
	auto *sr = reinterpret_cast<sroce::srq *>(v.srq);
	sroce::producer_ring &ring = sr ? sr->ring : q->rq;
	pthread_spinlock_t *lock = sr ? &sr->lock : &q->rq_lock;
	std::lock_guard<std::mutex> g(v.mu);
	pthread_spin_lock(lock);
	uint32_t k = std::min<uint32_t>(ring.free_slots(), 1 + rnd(r, 4));
	for (uint32_t i = 0; i < k; i++) {
		auto *s = static_cast<uint8_t *>(ring.slot(i));
		sroce_recv_wqe h = {r(), static_cast<uint32_t>(1 + rnd(r, std::min(v.max_rsge, 4u))), 0};
		sroce_sge sg[4] = {};
		// Pieces of one receive slot, some empty: room for any message.
		uint64_t at = R.vrecv.addr(rnd(r, VRSLOTS) * VSLOT);
		for (uint32_t j = 0, left = VSLOT; j < h.num_sge; j++) {
			uint32_t len = j + 1 == h.num_sge ? left : chance(r, 25) ? 0 : rnd(r, left + 1);
			sg[j] = {at, len, R.vrecv.mr->lkey};
			at += len;
			left -= len;
		}
		if (bad && i == k - 1) {
			switch (rnd(r, 3)) {
			case 0: h.num_sge = v.max_rsge + 1 + rnd(r, 300); break;
			case 1: sg[0] = v.fz_rq[rnd(r, v.fz_rq.size())]; break;
			default: sg[0].lkey ^= 1; break;
			}
		}
		memcpy(s + SROCE_RECV_WQE_HDR, sg,
		       std::min<size_t>(std::min(h.num_sge, 4u) * 16, ring.stride() - SROCE_RECV_WQE_HDR));
		memcpy(s, &h, sizeof(h));
	}
	if (k) {
		ring.publish(k);
		(sr ? v.lsrq : v.lrq).wrote(ring.index());
	}
	pthread_spin_unlock(lock);
}

// The sequence that matters: WQEs in flight, then prod a little back and
// the doorbell; a moment later the provider's own prod again.
void fz_rewind(victim &v)
{
	rng_t &r = v.frng;
	uint32_t x;
	{
		std::lock_guard<std::mutex> g(v.mu);
		uint32_t p = v.sq.prod(), c = v.sq.cons();
		if (p - c < 2 || p - c > v.sq.entries)
			return;
		x = p - 1 - rnd(r, std::min(3u, p - c - 1));
		torn_store(&v.sq.h->prod, x, r, &v.lsq);
	}
	v.fz_doorbells++;
	sq_doorbell(v.vqp);
	usleep(rnd(r, 3000));
	std::lock_guard<std::mutex> g(v.mu);
	if (v.sq.prod() == x) {
		uint32_t own = sq_shadow(v.vqp);
		torn_store(&v.sq.h->prod, own, r, &v.lsq);
	}
}

void fuzzer(victim *vp)
{
	victim &v = *vp;
	rng_t &r = v.frng;
	while (!v.go && !v.stop)
		usleep(1000);
	while (!v.stop) {
		unsigned op = rnd(r, 100);
		bool srqk = v.srq != nullptr;
		ringref &rq = srqk ? v.srqr : v.rq;
		idxlog &lrq = srqk ? v.lsrq : v.lrq;
		if (now() < v.hard_at) {
			// Soft: nothing that is fatal by itself but a bad WQE now
			// and then, so the QP lives on under traffic and fuzz.
			if (op < 30)
				fz_publish(v, rnd(r, 500) == 0);
			else if (op < 45)
				fz_publish_recv(v, rnd(r, 500) == 0);
			else if (op < 55)
				fz_republish(v);
			else if (op < 80)
				fz_sq_rewrite(v);
			else if (op < 90)
				sq_doorbell(v.vqp);
			else if (!srqk)
				rq_doorbell(v.vqp);
			else
				fz_publish_recv(v, false);
		} else if (op < 16) {
			fz_prod(v, true);
		} else if (op < 21) {
			fz_cons(v, v.sq, &v.lsq);
		} else if (op < 32) {
			fz_sq_wqe(v, false);
		} else if (op < 40) {
			fz_publish(v, chance(r, 30));
		} else if (op < 46) {
			v.fz_doorbells++;
			sq_doorbell(v.vqp);
		} else if (op < 56) {
			fz_prod(v, false);
		} else if (op < 59) {
			fz_cons(v, rq, &lrq);
		} else if (op < 66) {
			fz_recv_wqe(v, rq);
		} else if (op < 70) {
			fz_publish_recv(v, chance(r, 30));
		} else if (op < 73) {
			if (!srqk) {
				v.fz_doorbells++;
				rq_doorbell(v.vqp);
			}
		} else if (op < 80) {
			fz_cons(v, v.cqr, nullptr);
		} else if (op < 92) {
			fz_rewind(v);
		} else if (op < 94) {
			ringref &q = chance(r, 50) ? v.sq : rq;
			__atomic_store_n(&q.h->flags, static_cast<uint32_t>(rnd(r, 4)), __ATOMIC_RELEASE);
		} else {
			// A burst of prod values with no pause: racing the kernel.
			for (int i = 0; i < 8; i++) {
				std::lock_guard<std::mutex> g(v.mu);
				uint32_t p = v.sq.prod();
				torn_store(&v.sq.h->prod, p + (i & 1 ? 1 : -1), r, &v.lsq);
			}
			sq_doorbell(v.vqp);
		}
		v.fz_ops++;
		unsigned z = rnd(r, 10);
		if (z >= 5)
			usleep(z < 9 ? rnd(r, 500) : 1000 + rnd(r, 4000));
	}
}

// ---- one round -----------------------------------------------------------------------------------

// The partner has no receive posted, so the victim's first SEND draws RNR
// NAKs and the rest wait behind it, all fetched by the kernel. Then prod
// goes back below what was fetched, the doorbell rings, and the partner
// posts its receives: the kernel must not fetch "new" WQEs from there.
void phase_rewind(victim &v)
{
	rng_t &r = v.rng;
	unsigned n = 4 + rnd(r, v.sq.entries - 5), d = v.n == 1 || chance(r, 75) ? 1 : 2;
	ibv_send_wr wr[32], *badwr = nullptr;
	ibv_sge sge[32];
	uint8_t ibuf[32][64];
	n = std::min(n, 32u);
	for (unsigned i = 0; i < n; i++) {
		wr[i] = {};
		wr[i].wr_id = VTAG | (v.posts + i);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		if (i % 2 && v.max_inline >= 64) {
			alpha_fill(ibuf[i], 64, r);
			sge[i] = {reinterpret_cast<uintptr_t>(ibuf[i]), 64, 0};
			wr[i].send_flags |= IBV_SEND_INLINE;
		} else {
			auto [off, len] = R.sges[rnd(r, 6)];	// one packet
			sge[i] = {R.vsrc.addr(off), len, R.vsrc.mr->lkey};
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
	}
	{
		std::lock_guard<std::mutex> g(v.mu);
		if (ibv_post_send(v.vqp, wr, &badwr)) {
			v.lsq.wrote(v.sq.prod());
			fail(C_SETUP, "round %d: rewind: post_send of %u SENDs: %s", v.n, n, strerror(errno));
			return;
		}
		v.lsq.wrote(v.sq.prod());
		v.posts += n;
	}
	// The doorbell's pass fetched them all when NEED_KICK is clear.
	double t = now();
	while ((v.sq.flags() & SROCE_RING_F_NEED_KICK) && now() - t < 2)
		usleep(1000);
	usleep(10000);
	uint32_t c = v.sq.cons();
	{
		std::lock_guard<std::mutex> g(v.mu);
		uint32_t x = sq_shadow(v.vqp) - d;
		__atomic_store_n(&v.sq.h->prod, x, __ATOMIC_RELEASE);
		v.lsq.wrote(x);
	}
	sq_doorbell(v.vqp);
	if (g_verbose)
		note("round %d: rewind: %u SENDs in flight (cons +%u), prod back by %u", v.n, n,
		     c - v.lsq.base, d);
	usleep(2000);
	// A few receives beyond the chain only: what the kernel then sends
	// from behind its rewound index runs the partner dry, and the RNR NAK
	// makes the requester go back to the oldest WQE it believes in flight.
	for (uint32_t j = 0; j < n + 2 && j < PRSLOTS; j++)
		post_partner_recv(v, j);
	g_phases++;
}

void round_checks(victim &v)
{
	check_indices(v, "at the end");
	size_t b;
	if ((b = check_bytes(R.vsrc.p, R.vsrc.len, false, nullptr)) != R.vsrc.len)
		fail(C_LEAK, "round %d (%s): the victims' send MR holds 0x%02x at %zu: %s", v.n,
		     kind_name[v.k], R.vsrc.p[b], b, hexdump(R.vsrc.p, R.vsrc.len, b).c_str());
	if (!v.udp() && (b = check_bytes(R.vrecv.p, R.vrecv.len, true, nullptr)) != R.vrecv.len)
		fail(C_LEAK, "round %d (%s): the victim's receive MR holds 0x%02x at %zu: %s", v.n,
		     kind_name[v.k], R.vrecv.p[b], b, hexdump(R.vrecv.p, R.vrecv.len, b).c_str());
	memset(R.vrecv.p, 0, R.vrecv.len);
	if ((b = check_bytes(R.pdst.p, R.pdst.len, true, &v.pool)) != R.pdst.len)
		fail(C_LEAK, "round %d (%s): the partner's WRITE target holds 0x%02x at %zu: %s", v.n,
		     kind_name[v.k], R.pdst.p[b], b, hexdump(R.pdst.p, R.pdst.len, b).c_str());
	g_checked_bytes += R.pdst.len;
	memset(R.pdst.p, 0, R.pdst.len);
	if (memcmp(R.psrc.p, R.psrc_ref.data(), R.psrc.len)) {
		fail(C_LEAK, "round %d (%s): the partner's READ source changed", v.n, kind_name[v.k]);
		memcpy(R.psrc.p, R.psrc_ref.data(), R.psrc.len);
	}
	for (uint32_t j = 0; j < PRSLOTS; j++) {
		uint8_t *p = R.precv.p + j * PSLOT;
		uint32_t g = v.udp() ? 40 : 0;
		if ((b = check_bytes(p + g, PSLOT - g, true, &v.pool)) != PSLOT - g)
			fail(C_LEAK, "round %d (%s): partner receive slot %u%s holds 0x%02x at %zu: %s",
			     v.n, kind_name[v.k], j, v.p_posted[j] ? " (never completed)" : "",
			     p[g + b], g + b, hexdump(p, PSLOT, g + b).c_str());
	}
	memset(R.precv.p, 0, R.precv.len);
}

void run_round(int n, kind k, bool phase, double max_len)
{
	victim v;
	v.n = n;
	v.k = k;
	v.rng.seed(g_seed * 1000003 + n);
	v.frng.seed(g_seed * 1000033 + n * 7 + 1);
	g_round_fatal = 0;
	if (!victim_setup(v)) {
		fail(C_SETUP, "round %d (%s): setting up the victim and its partner: %s", n,
		     kind_name[k], strerror(errno));
		victim_teardown(v);
		return;
	}
	g_rounds[k]++;
	if (!phase)
		fill_partner_rq(v);
	post_victim_recvs(v);
	double len = std::min(max_len, 0.4 + rnd(v.rng, 1600) / 1000.0);
	if (phase)
		phase_rewind(v);
	double t0 = now(), fuzz_at = t0 + (phase ? 0.3 : 0.0), end = std::max(t0 + len, fuzz_at + 0.1);
	// Soft fuzzing first; in 30 % of the rounds nothing else.
	v.hard_at = chance(v.rng, 30) ? end + 1 : fuzz_at + (end - fuzz_at) * (0.3 + rnd(v.rng, 50) / 100.0);
	std::thread fz(fuzzer, &v);
	double last_state = 0;
	while (now() < end) {
		if (!v.go && now() >= fuzz_at) {
			sample_indices(v);
			check_indices(v, phase ? "after the rewind" : "before the fuzzer");
			v.go = true;
		}
		bool busy = false;
		// After a rewind no post of ours may restore prod before the
		// kernel has fetched behind it.
		if ((v.go || !phase) && chance(v.rng, 50))
			busy |= post_victim_sends(v, 1 + rnd(v.rng, 3)) > 0;
		post_victim_recvs(v);
		if (v.p_out < 4 && chance(v.rng, 30))
			post_partner_send(v);
		if (v.p_rq_out < 40 && (v.go || !phase))
			fill_partner_rq(v);
		uint64_t before = v.c_send + v.c_recv;
		poll_victim(v);
		poll_partner(v);
		busy |= v.c_send + v.c_recv != before;
		sample_indices(v);
		if (!v.died && now() - last_state > 0.05) {
			last_state = now();
			if (qp_state(v.vqp) == IBV_QPS_ERR)
				v.died = last_state;
		}
		if (!busy)
			usleep(300);
	}
	v.stop = true;
	fz.join();
	// Let things settle, then ERR: the flushes count as completions too.
	for (double t = now(); now() - t < 0.05;) {
		poll_victim(v);
		poll_partner(v);
		usleep(1000);
	}
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(v.vqp, &a, IBV_QP_STATE))
		fail(C_SETUP, "round %d: victim QP to ERR: %s", n, strerror(errno));
	double quiet = now();
	for (double t = now(); now() - t < 1 && now() - quiet < 0.1;) {
		uint64_t before = v.c_send + v.c_recv;
		poll_victim(v);
		poll_partner(v);
		if (v.c_send + v.c_recv != before)
			quiet = now();
		usleep(1000);
	}
	sample_indices(v);
	// The partner's receives still posted: flushed and checked too.
	if (ibv_modify_qp(v.pqp, &a, IBV_QP_STATE))
		fail(C_SETUP, "round %d: partner QP to ERR: %s", n, strerror(errno));
	for (double t = now(); now() - t < 1 && v.p_rq_out;) {
		poll_partner(v);
		usleep(1000);
	}
	round_checks(v);
	g_fz_ops += v.fz_ops;
	g_doorbells += v.fz_doorbells;
	int fatal = g_round_fatal;
	{
		std::lock_guard<std::mutex> g(g_out_mu);
		char life[64];
		if (v.died)
			snprintf(life, sizeof(life), "ERR after %.2f s%s", v.died - t0,
				 v.died < v.hard_at ? " (soft)" : "");
		else
			snprintf(life, sizeof(life), "alive");
		if (g_verbose && !v.first_err.empty())
			printf("#   round %d: first error completion: %s\n", n, v.first_err.c_str());
		printf("#   round %d %s%s: %s, SQ %u, %.2f s, %llu posted, %llu+%llu completions, partner %llu received, %llu fuzz ops, SQ cons +%u of bound %u, %d QP_FATAL\n",
		       n, kind_name[k], phase ? " (rewind)" : "", life, v.sq.entries, len,
		       static_cast<unsigned long long>(v.posts),
		       static_cast<unsigned long long>(v.c_send),
		       static_cast<unsigned long long>(v.c_recv),
		       static_cast<unsigned long long>(v.p_recv),
		       static_cast<unsigned long long>(v.fz_ops), v.lsq.max_cons, v.lsq.bound(), fatal);
		fflush(stdout);
	}
	victim_teardown(v);
}

void usage()
{
	fprintf(stderr,
		"usage: sroce_ringfuzz -d DEV_A -g GID_A -D DEV_B -G GID_B [--seconds N] [--seed N] [-v]\n");
}

} // namespace

int main(int argc, char **argv)
{
	double seconds = 60;
	bool have_seed = false;
	static const option longopts[] = {
		{"seconds", required_argument, nullptr, 's'},
		{"seed", required_argument, nullptr, 'S'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	int c;
	while ((c = getopt_long(argc, argv, "d:g:D:G:vh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'd': DA.name = optarg; break;
		case 'g': DA.gid_index = atoi(optarg); break;
		case 'D': DB.name = optarg; break;
		case 'G': DB.gid_index = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'S': g_seed = strtoull(optarg, nullptr, 0); have_seed = true; break;
		case 'v': g_verbose = true; break;
		default: usage(); return 2;
		}
	}
	if (!DA.name || !DB.name || DA.gid_index < 0 || DB.gid_index < 0) {
		usage();
		return 2;
	}
	if (!have_seed)
		g_seed = static_cast<uint64_t>(time(nullptr)) ^ (static_cast<uint64_t>(getpid()) << 32);
	setvbuf(stdout, nullptr, _IOLBF, 0);
	printf("# ringfuzz: seed %llu, %.0f s, victims on %s, partners on %s\n",
	       static_cast<unsigned long long>(g_seed), seconds, DA.name, DB.name);
	alpha_init(g_seed);
	{
		std::string a;
		char x[4];
		for (int b = 0x80; b <= 0xff; b++)
			if (g_alpha[b]) {
				snprintf(x, sizeof(x), "%02x", b);
				a += x;
			}
		printf("# ringfuzz: alphabet %s\n", a.c_str());
	}

	DA.ctx = open_device_by_name(DA.name);
	DB.ctx = open_device_by_name(DB.name);
	if (!tap::check(DA.ctx && DB.ctx, "open %s and %s", DA.name, DB.name))
		return tap::done("sroce_ringfuzz");
	bool ok = !ibv_query_gid(DA.ctx, 1, DA.gid_index, &DA.gid) &&
		  !ibv_query_gid(DB.ctx, 1, DB.gid_index, &DB.gid);
	rng_t r(g_seed);
	ok = ok && res_setup(r);
	ok = ok && BY.setup();
	if (!tap::check(ok, "PDs, MRs and the bystander RC pair %u <-> %u", BY.qa ? BY.qa->qp_num : 0,
			BY.qb ? BY.qb->qp_num : 0)) {
		tap::diag("%s", strerror(errno));
		return tap::done("sroce_ringfuzz");
	}

	std::thread ev(events_thread);
	std::thread by([] { BY.run(g_seed); });
	double t0 = now();
	int n = 0;
	while (now() - t0 < seconds) {
		n++;
		kind k;
		unsigned x = rnd(r, 100);
		k = n == 1 || x < 50 ? K_RC : x < 65 ? K_SRQ : x < 80 ? K_UC : K_UD;
		bool phase = (k == K_RC || k == K_SRQ) && (n == 1 || chance(r, 30));
		run_round(n, k, phase, std::max(0.4, seconds - (now() - t0)));
	}
	BY.stop = true;
	by.join();
	bool by_rts = qp_state(BY.qa) == IBV_QPS_RTS && qp_state(BY.qb) == IBV_QPS_RTS;

	printf("# ringfuzz: %d rounds (RC %llu, RC+SRQ %llu, UC %llu, UD %llu; %llu rewinds), %llu fuzz ops, %llu doorbells, %llu victim completions, %llu partner bytes checked, %llu UC receives with a dropped message's bytes\n",
	       n, static_cast<unsigned long long>(g_rounds[K_RC]),
	       static_cast<unsigned long long>(g_rounds[K_SRQ]),
	       static_cast<unsigned long long>(g_rounds[K_UC]),
	       static_cast<unsigned long long>(g_rounds[K_UD]),
	       static_cast<unsigned long long>(g_phases), static_cast<unsigned long long>(g_fz_ops),
	       static_cast<unsigned long long>(g_doorbells),
	       static_cast<unsigned long long>(g_completions),
	       static_cast<unsigned long long>(g_checked_bytes),
	       static_cast<unsigned long long>(g_uc_leftovers));
	printf("# ringfuzz: victims' events: %llu QP_FATAL, %llu CQ_ERR, %llu other\n",
	       static_cast<unsigned long long>(g_qp_fatal.load()),
	       static_cast<unsigned long long>(g_cq_err.load()),
	       static_cast<unsigned long long>(g_victim_events.load()));
	printf("# ringfuzz: bystander: %llu ops, %llu bytes verified\n",
	       static_cast<unsigned long long>(BY.done), static_cast<unsigned long long>(BY.bytes));

	uint64_t rounds = g_rounds[K_RC] + g_rounds[K_SRQ] + g_rounds[K_UC] + g_rounds[K_UD];
	tap::check(!g_fails[C_SETUP] && rounds == static_cast<uint64_t>(n) && g_phases > 0,
		   "%d rounds set up and torn down (%llu with a rewind in flight)", n,
		   static_cast<unsigned long long>(g_phases));
	tap::check(!g_fails[C_COUNT], "no queue completed more WQEs than were published into it (%d failures)",
		   g_fails[C_COUNT]);
	tap::check(!g_fails[C_INDEX], "no kernel consumer index ran ahead of the published producer index (%d failures)",
		   g_fails[C_INDEX]);
	tap::check(!g_fails[C_LEAK], "every byte received came from this process (%d failures)",
		   g_fails[C_LEAK]);
	tap::check(!g_fails[C_CQE], "every CQE well-formed (%d failures)", g_fails[C_CQE]);
	g_events_stop = true;
	ev.join();
	tap::check(!g_fails[C_EVENT], "no async event for a partner or bystander object (%d failures)",
		   g_fails[C_EVENT]);
	tap::check(g_qp_fatal > 0, "victims whose index went impossible got IBV_EVENT_QP_FATAL (%llu)",
		   static_cast<unsigned long long>(g_qp_fatal.load()));
	tap::check(!g_fails[C_BYST] && !BY.failed && BY.done > 0 && BY.win.empty() && by_rts,
		   "bystander: %llu ops in order, every byte verified, both QPs in RTS",
		   static_cast<unsigned long long>(BY.done));
	bool gone = BY.teardown() & res_teardown();
	gone &= !ibv_close_device(DA.ctx) & !ibv_close_device(DB.ctx);
	tap::check(gone, "every object destroyed");
	return tap::done("sroce_ringfuzz");
}
