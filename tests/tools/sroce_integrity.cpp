// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_integrity - end-to-end data integrity of RC transfers between two
// processes, one RC QP each, over any RDMA device (sroce, rdma_rxe, a NIC).
//
//   server:  sroce_integrity -s [-d DEV] [-g GID] [-p PORT] [-m MTU]
//   client:  sroce_integrity -c HOST [-d DEV] [-g GID] [-p PORT] [-m MTU]
//                            [-n PASSES] [-q DEPTH] [--ops LIST] [--seed N]
//                            [--max-size B] [--random N] [--quick]
//                            [--seconds S [--stop-file F]] ...
//
// The two sides exchange QPN, PSN, GID, buffer address and rkey over TCP
// (like ibv_rc_pingpong); the client sends its parameters and both sides
// derive the same plan from them: for every op (send, send_imm, write,
// write_imm, read) a shuffled list of transfers of edge sizes (0, 1, 63..65,
// ..., path MTU +-1, 64 KiB +-1, 1 MiB+13, 8 MiB) and random ones, each at
// an odd offset on both sides, the local side a list of 1..4 SGEs of uneven
// lengths placed in memory in a shuffled order with gaps.  The data is a
// stream keyed by (seed, op, transfer) and indexed by the byte's offset in
// the message, so a misplaced, stale or duplicated byte differs; every byte
// around a target range (64 guard bytes either side, the gaps between SGEs,
// unused receive capacity) holds a guard stream that must not change.
//
// The client drives, keeping DEPTH transfers in flight.  SEND/SEND_WITH_IMM
// land in multi-SGE receives the server pre-posts; WRITE is followed by a
// SEND carrying the range and a checksum; WRITE_WITH_IMM is announced by its
// own receive completion; the server verifies each one and returns a credit
// SEND before the client reuses the slot.  READ: the server fills its buffer
// first, the client verifies what it read, the server that its memory did
// not change.  Every completion is checked: status, opcode, wr_id (in posting
// order per queue), byte_len, imm_data, flags, and counted, so none is
// missing or doubled; at the end the CQs must be empty and the QP in RTS.
//
// Output: TAP, one point per op and one for the end checks, mismatches on
// "# " lines, last line "integrity: N ops, M bytes verified, K errors".  Exit
// status 1 on any error.  A side whose peer dies (TCP connection closed) or
// makes no progress for -w seconds stops with a clear message.
//
// --xrc (both sides): the same transfers over XRC instead of RC. Each side
// has an XRC domain with one XRC SRQ (its receives, in its PD, completing
// on its receive CQ), an XRC_RECV QP its peer's requests go to and an
// XRC_SEND QP for its own, every request naming the peer's SRQ.
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GUARD = 64;		// checked bytes either side of a range
constexpr uint64_t MAX_OFF = 4096;	// start offsets are odd, below this
constexpr uint64_t MAX_GAP = 64;	// gap between two SGEs in memory
constexpr uint64_t RECV_EXTRA_MAX = 64; // receive capacity beyond the message
constexpr int MAX_SGE = 4;
constexpr uint64_t CTRL_SLOT = 256;	// control message slot
constexpr uint64_t CTRL_BUF = 64;	// the message's offset in its slot
constexpr uint32_t CTRL_CAP = 128;	// receive capacity of a control slot
constexpr uint32_t MSG_MAGIC = 0x53524f49;
constexpr uint32_t PROTO_VERSION = 2;	// 2: qp_info's XRC numbers
constexpr int MAX_PRINTED = 10;
constexpr int WIRE_LINES = 4;
constexpr int WIRE_LINE_LEN = 240;
constexpr uint64_t GOLDEN = 0x9e3779b97f4a7c15ULL;

enum op_t : uint32_t { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_COUNT };
const char *const op_names[OP_COUNT] = {"send", "send_imm", "write", "write_imm", "read"};

// --inject: deliberate faults, to show that the checks catch them.
enum : uint32_t {
	INJ_CORRUPT = 1,	// verifier flips one received byte
	INJ_GUARD = 2,		// verifier changes the byte after the range
	INJ_RKEY = 4,		// client uses a wrong rkey (write/read)
	INJ_IMM = 8,		// client sends a wrong imm_data
	INJ_SKIP = 16,		// client leaves out one WRITE, sends its "done"
	INJ_SHORT = 32,		// client sends one byte less than planned
};
const struct {
	const char *name;
	uint32_t bit;
} inject_names[] = {
	{"corrupt", INJ_CORRUPT}, {"guard", INJ_GUARD}, {"rkey", INJ_RKEY},
	{"imm", INJ_IMM},	  {"skip", INJ_SKIP},	{"short", INJ_SHORT},
};

enum kind_t : uint32_t { K_DATA, K_DONE, K_CREDIT };
const char *const kind_names[] = {"data", "done", "credit"};

enum msg_t : uint32_t {
	M_HELLO = 1,
	M_HELLO_REPLY,
	M_RTS,
	M_PHASE_BEGIN,
	M_PHASE_READY,
	M_PROGRESS,
	M_PHASE_END,
	M_PHASE_DONE,
	M_FINISH,
	M_FINISH_REPLY,
};

// ---- wire formats (TCP, both sides the same ABI) ------------------------

struct params {
	uint64_t seed;
	uint64_t max_size;
	uint64_t max_bytes; // per op, 0 = no cap
	uint32_t ops[OP_COUNT];
	uint32_t nops;
	uint32_t passes;
	uint32_t nrandom;
	uint32_t depth;
	uint32_t path_mtu; // bytes; the smaller of the two sides'
	uint32_t inject;
	uint32_t pad;
};

struct qp_info {
	uint64_t addr;
	uint64_t region_len;
	uint64_t plan_hash;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t mtu;
	uint32_t max_dest_rd;
	uint32_t xrc_tgt_qpn;	// --xrc: the XRC_RECV QP (qpn is the XRC_SEND one)
	uint32_t xrc_srqn;	// --xrc: the SRQ requests name
	uint32_t pad;
	uint8_t gid[16];
};

struct wire_stats {
	uint64_t ops;
	uint64_t bytes;
	uint64_t errors;
	uint32_t nlines;
	uint32_t pad;
	char lines[WIRE_LINES][WIRE_LINE_LEN];
};

struct msg {
	uint32_t magic;
	uint32_t version;
	uint32_t type;
	uint32_t op;
	params p;
	qp_info q;
	wire_stats st;
};

// Control messages over the QPs.
struct done_msg { // client -> server after a WRITE
	uint32_t magic;
	uint32_t op;
	uint32_t iter;
	uint32_t pad;
	uint64_t size;
	uint64_t raddr_off;
	uint64_t sum_a, sum_b;
};

struct credit_msg { // server -> client: transfer verified, slot free
	uint32_t magic;
	uint32_t op;
	uint32_t iter;
	uint32_t errors;
};

static_assert(sizeof(done_msg) <= CTRL_CAP && sizeof(credit_msg) <= CTRL_CAP);

// ---- options -------------------------------------------------------------

struct options {
	bool server = false;
	const char *host = nullptr;
	const char *port = "18525";
	const char *dev = nullptr;
	int ib_port = 1;
	int gid_index = -1;
	uint32_t mtu = 0;
	uint32_t passes = 1;
	uint64_t seed = 0;
	bool seed_set = false;
	std::vector<uint32_t> ops;
	uint64_t max_size = 8 * MiB;
	bool max_size_set = false;
	uint32_t nrandom = 16;
	bool nrandom_set = false;
	bool quick = false;
	uint32_t depth = 8;
	uint64_t max_bytes = 0;
	int timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
	uint32_t flow_label = 0;	// the path's GRH flow label, as given
	bool odp = false;		// this side's MRs IBV_ACCESS_ON_DEMAND
	bool churn = false;		// ... and fork + compaction under them
	bool xrc = false;		// XRC QPs and an XRC SRQ instead of RC
	int wait_s = 30;
	int seconds = 0;	// client: run the op set again until this long
	const char *stop_file = nullptr;	// ... or until this file exists
	uint32_t inject = 0;
	bool verbose = false;
};

// ---- output, errors ------------------------------------------------------

struct stats {
	uint64_t ops = 0, bytes = 0, errors = 0;
};

const char *g_role = "client";
stats g_st;		 // this side, whole run
stats g_peer;		 // the peer's, as far as reported
int g_printed;
std::vector<std::string> g_lines; // this phase's reports, for the peer

void vreport(const char *fmt, va_list ap)
{
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	g_st.errors++;
	if (g_printed < MAX_PRINTED)
		printf("# %s: %s\n", g_role, buf);
	else if (g_printed == MAX_PRINTED)
		printf("# %s: (further errors counted, not printed)\n", g_role);
	g_printed++;
	if (g_lines.size() < WIRE_LINES)
		g_lines.emplace_back(buf);
	fflush(stdout);
}

__attribute__((format(printf, 1, 2))) void report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) void note(const char *fmt, ...)
{
	va_list ap;
	printf("# %s: ", g_role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void final_line()
{
	printf("integrity: %llu ops, %llu bytes verified, %llu errors\n",
	       (unsigned long long)(g_st.ops + g_peer.ops),
	       (unsigned long long)(g_st.bytes + g_peer.bytes),
	       (unsigned long long)(g_st.errors + g_peer.errors));
	fflush(stdout);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void fatal(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_st.errors++;
	printf("# %s: FATAL: %s\nBail out! %s: %s\n", g_role, buf, g_role, buf);
	fprintf(stderr, "sroce_integrity %s: %s\n", g_role, buf);
	final_line();
	exit(1);
}

double now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

// ---- patterns ------------------------------------------------------------

inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
	uint64_t next()
	{
		s += GOLDEN;
		return mix64(s);
	}
	uint64_t below(uint64_t n) { return n ? next() % n : 0; }
	bool one_in(uint64_t n) { return below(n) == 0; }
};

// A byte stream: byte p of stream "key" is byte (p % 8) (little-endian) of
// mix64(key + (p / 8) * GOLDEN).  Data, guards and the READ source are all
// streams with different keys.
constexpr uint64_t CHUNK = 64 * KiB;
uint64_t g_words[CHUNK / 8 + 2];
uint8_t g_expect[CHUNK];

void gen(uint64_t key, uint64_t pos, uint8_t *out, uint64_t len)
{
	while (len) {
		uint64_t n = std::min(len, CHUNK);
		uint64_t w0 = pos >> 3, nw = ((pos + n + 7) >> 3) - w0;
		for (uint64_t j = 0; j < nw; j++)
			g_words[j] = htole64(mix64(key + (w0 + j) * GOLDEN));
		memcpy(out, reinterpret_cast<uint8_t *>(g_words) + (pos & 7), n);
		out += n;
		pos += n;
		len -= n;
	}
}

struct diff {
	uint64_t count = 0;
	uint64_t first = 0; // caller's index of the first differing byte
	uint8_t exp = 0, got = 0;
};

// Compare mem[0, len) with stream key from pos; idx0 names mem[0] in d.first.
void compare(uint64_t key, uint64_t pos, const uint8_t *mem, uint64_t len, diff &d,
	     uint64_t idx0)
{
	while (len) {
		uint64_t n = std::min(len, CHUNK);
		gen(key, pos, g_expect, n);
		if (memcmp(mem, g_expect, n)) {
			for (uint64_t j = 0; j < n; j++) {
				if (mem[j] == g_expect[j])
					continue;
				if (!d.count++) {
					d.first = idx0 + j;
					d.exp = g_expect[j];
					d.got = mem[j];
				}
			}
		}
		mem += n;
		pos += n;
		idx0 += n;
		len -= n;
	}
}

// Fletcher-style checksum of a byte stream, fed in pieces.
struct fletcher {
	uint64_t a = 0, b = 0;
	void feed(const uint8_t *p, uint64_t n)
	{
		for (uint64_t i = 0; i < n; i++) {
			a += p[i];
			b += a;
		}
	}
};

uint64_t data_key(uint64_t seed, uint32_t op, uint32_t iter)
{
	return mix64(mix64(seed ^ 0x64617461ULL) + mix64(0x100 + op) + mix64((uint64_t)iter << 8 | 0x5a));
}

uint64_t guard_key(uint64_t seed, int which) // 0/1 client/server region, 2/3 control
{
	return mix64(seed ^ (0x6775617264000000ULL + which));
}

uint64_t src_key(uint64_t seed) // the server's READ source
{
	return mix64(seed ^ 0x7372630000000000ULL);
}

// ---- the plan --------------------------------------------------------------

struct seg {
	uint64_t off; // in the region
	uint64_t len;
};

// An SGE list in one slot: s[] in list (logical) order; in memory they lie
// in a shuffled order with gaps.  [lo, hi) is the span checked afterwards.
struct layout {
	int n = 0;
	seg s[MAX_SGE] = {};
	uint64_t start = 0, lo = 0, hi = 0;
};

struct xfer {
	uint64_t size = 0;
	uint32_t imm = 0;
	bool inl = false;  // send inline if the QP allows that much
	layout loc;	   // client: gather (send/write) or scatter (read) list
	layout rem;	   // server: receive list (send) or the remote range
};

uint64_t slot_size(const params &p)
{
	uint64_t s = GUARD + MAX_OFF + p.max_size + RECV_EXTRA_MAX + MAX_SGE * MAX_GAP + GUARD;
	return (s + 4095) & ~4095ULL;
}

// Insertion sort for at most MAX_SGE + 1 elements (std::sort on arrays this
// small trips GCC 12's -Warray-bounds).
template <typename T, typename Less> void small_sort(T *a, int n, Less less)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && less(a[j], a[j - 1]); j--)
			std::swap(a[j], a[j - 1]);
}

layout make_layout(rng &r, uint64_t base, uint64_t size, uint64_t extra, int max_sge)
{
	layout l;
	uint64_t cap = size + extra;
	l.start = base + GUARD + 2 * r.below(MAX_OFF / 2) + 1; // odd
	l.lo = l.start - GUARD;
	if (!cap) {
		l.hi = l.start + GUARD;
		return l;
	}
	int k = 1 + (int)r.below(std::min<uint64_t>(max_sge, cap));
	uint64_t cuts[MAX_SGE + 1] = {0};
	int nc = 1;
	while (nc < k) { // k - 1 distinct cut points in [1, cap - 1]
		uint64_t c;
		switch (r.below(4)) {
		case 0:
			c = 1;
			break;
		case 1:
			c = cap - 1;
			break;
		default:
			c = 1 + r.below(cap - 1);
		}
		if (std::find(cuts, cuts + nc, c) == cuts + nc)
			cuts[nc++] = c;
	}
	small_sort(cuts, nc, [](uint64_t a, uint64_t b) { return a < b; });
	cuts[nc] = cap;
	l.n = k;
	int perm[MAX_SGE];
	for (int j = 0; j < k; j++) {
		l.s[j].len = cuts[j + 1] - cuts[j];
		perm[j] = j;
	}
	for (int j = k - 1; j > 0; j--)
		std::swap(perm[j], perm[r.below(j + 1)]);
	uint64_t cur = l.start;
	for (int j = 0; j < k; j++) {
		l.s[perm[j]].off = cur;
		cur += l.s[perm[j]].len;
		if (j + 1 < k && !r.one_in(4))
			cur += 1 + r.below(MAX_GAP);
	}
	l.hi = cur + GUARD;
	return l;
}

std::vector<uint64_t> fixed_sizes(const params &p)
{
	uint64_t m = p.path_mtu;
	std::vector<uint64_t> v = {0,	  1,	 2,	3,	 63,	   64,	     65,      255,
				   256,	  257,	 1023,	1024,	 1025,	   4095,     4096,    4097,
				   m - 1, m,	 m + 1, 65535,	 65536,	   65537,    MiB + 13, 8 * MiB,
				   p.max_size};
	std::erase_if(v, [&](uint64_t s) { return s > p.max_size; });
	std::sort(v.begin(), v.end());
	v.erase(std::unique(v.begin(), v.end()), v.end());
	return v;
}

// Log-uniform up to max: as many small sizes as large ones.
uint64_t random_size(rng &r, uint64_t max)
{
	int bits = 64 - __builtin_clzll(max | 1);
	int b = 1 + (int)r.below(bits);
	uint64_t v = r.next() & ((b >= 64 ? 0 : (1ULL << b)) - 1);
	return v > max ? v % (max + 1) : v;
}

std::vector<xfer> make_plan(const params &p, uint32_t op)
{
	rng r{mix64(p.seed ^ (0x706c616e00ULL + op))};
	std::vector<uint64_t> fixed = fixed_sizes(p), sizes;
	for (uint32_t pass = 0; pass < p.passes; pass++) {
		std::vector<uint64_t> v = fixed;
		for (uint32_t k = 0; k < p.nrandom; k++)
			v.push_back(random_size(r, p.max_size));
		for (size_t j = v.size() - 1; j > 0; j--)
			std::swap(v[j], v[r.below(j + 1)]);
		sizes.insert(sizes.end(), v.begin(), v.end());
	}
	if (p.max_bytes) {
		uint64_t total = 0;
		std::erase_if(sizes, [&](uint64_t s) {
			if (total + s > p.max_bytes)
				return true;
			total += s;
			return false;
		});
	}
	std::vector<xfer> plan;
	uint64_t ss = slot_size(p);
	for (size_t i = 0; i < sizes.size(); i++) {
		xfer x;
		uint64_t base = (i % p.depth) * ss;
		x.size = sizes[i];
		x.loc = make_layout(r, base, x.size, 0, MAX_SGE);
		if (op == OP_SEND || op == OP_SEND_IMM)
			x.rem = make_layout(r, base, x.size,
					    r.one_in(2) ? 0 : 1 + r.below(RECV_EXTRA_MAX), MAX_SGE);
		else
			x.rem = make_layout(r, base, x.size, 0, 1);
		x.imm = (uint32_t)r.next();
		x.inl = r.one_in(2);
		plan.push_back(x);
	}
	return plan;
}

uint64_t hash_layout(uint64_t h, const layout &l)
{
	h = mix64(h ^ l.n) ^ mix64(l.start + l.lo * 3 + l.hi * 7);
	for (int j = 0; j < l.n; j++)
		h = mix64(h + l.s[j].off) ^ mix64(l.s[j].len + 11);
	return h;
}

uint64_t hash_plan(const std::vector<xfer> &plan, uint64_t h)
{
	for (const xfer &x : plan) {
		h = mix64(h ^ x.size) + mix64(x.imm ^ ((uint64_t)x.inl << 40));
		h = hash_layout(hash_layout(h, x.loc), x.rem);
	}
	return h;
}

// Per slot, the union of the spans a phase touches (to fill once).
std::vector<std::pair<uint64_t, uint64_t>> extents(const std::vector<xfer> &plan, uint32_t depth,
						    bool remote)
{
	std::vector<std::pair<uint64_t, uint64_t>> e(depth, {UINT64_MAX, 0});
	for (size_t i = 0; i < plan.size(); i++) {
		const layout &l = remote ? plan[i].rem : plan[i].loc;
		auto &x = e[i % depth];
		x.first = std::min(x.first, l.lo);
		x.second = std::max(x.second, l.hi);
	}
	std::erase_if(e, [](auto &x) { return x.second == 0; });
	return e;
}

// ---- the side's state --------------------------------------------------

struct expect {
	uint64_t wr_id;
	ibv_wc_opcode opcode;
	uint32_t iter;
	uint32_t kind;
	bool last; // the transfer's last send WR
};

struct side {
	options o;
	params p = {};
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *scq = nullptr, *rcq = nullptr;
	ibv_qp *qp = nullptr;		// RC, or --xrc the XRC_SEND QP
	ibv_qp *tgt = nullptr;		// --xrc: the XRC_RECV QP
	ibv_srq *srq = nullptr;		// --xrc: where receives are posted
	ibv_xrcd *xrcd = nullptr;
	uint8_t *region = nullptr;
	uint64_t region_len = 0;
	ibv_mr *mr = nullptr;
	uint8_t *ctrl = nullptr;
	uint64_t ctrl_len = 0;
	ibv_mr *cmr = nullptr;
	uint32_t max_inline = 0;
	uint32_t max_rd = 1;	   // responder resources
	uint32_t max_init_rd = 1; // initiator depth
	ibv_port_attr port = {};
	int gid_index = 0;
	ibv_gid gid = {};
	int sock = -1;
	qp_info me = {}, peer = {};
	uint64_t gkey = 0, ckey = 0, skey = 0;
	std::vector<std::vector<xfer>> plans; // by op
	std::vector<uint8_t> rxbuf;		  // partial TCP message

	// the current phase
	uint32_t op = 0;
	const std::vector<xfer> *plan = nullptr;
	uint32_t target = UINT32_MAX; // transfer an --inject fault hits
	std::deque<expect> sq, rq;
	uint32_t posted = 0, sq_done = 0, credits = 0; // client
	uint32_t verified = 0, credit_posted = 0, credit_done = 0; // server
	// --churn
	std::atomic<uint64_t> churns{0}, churn_compact_errors{0};
};

side S;
void *churn_thread(void *);

uint64_t wr_id_of(uint32_t op, uint32_t kind, uint32_t iter)
{
	return 0x5aULL << 56 | (uint64_t)op << 48 | (uint64_t)kind << 40 | iter;
}

std::string wr_id_str(uint64_t id)
{
	char b[96];
	uint32_t op = (id >> 48) & 0xff, kind = (id >> 40) & 0xff;
	if (id >> 56 != 0x5a || op >= OP_COUNT || kind > K_CREDIT)
		snprintf(b, sizeof(b), "0x%llx (not ours)", (unsigned long long)id);
	else
		snprintf(b, sizeof(b), "0x%llx (%s #%u %s)", (unsigned long long)id, op_names[op],
			 (uint32_t)(id & 0xffffffffU), kind_names[kind]);
	return b;
}

const char *wc_opcode_str(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "other";
	}
}

// ---- TCP -------------------------------------------------------------------

void handle_async();
void get_cq_events();
int drain();

// Wait for one message of type @want (M_PROGRESS is skipped and restarts the
// clock; with want == 0 any type).  Completions meanwhile are unexpected and
// reported by the handlers.
msg recv_msg(uint32_t want)
{
	double last = now_s();
	for (;;) {
		while (S.rxbuf.size() >= sizeof(msg)) {
			msg m;
			memcpy(&m, S.rxbuf.data(), sizeof(m));
			S.rxbuf.erase(S.rxbuf.begin(), S.rxbuf.begin() + sizeof(m));
			if (m.magic != MSG_MAGIC || m.version != PROTO_VERSION)
				fatal("protocol: bad message from the peer (magic 0x%x version %u)",
				      m.magic, m.version);
			if (m.type == M_PROGRESS) {
				last = now_s();
				continue;
			}
			if (want && m.type != want)
				fatal("protocol: message type %u from the peer, expected %u", m.type,
				      want);
			return m;
		}
		pollfd f[3] = {{S.sock, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
		if (S.ch)
			f[1].fd = S.ch->fd;
		if (S.ctx)
			f[2].fd = S.ctx->async_fd;
		int left = (int)((last + S.o.wait_s - now_s()) * 1000);
		if (left <= 0)
			fatal("no message from the peer for %d s (-w)", S.o.wait_s);
		int r = poll(f, 3, left);
		if (r < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		if (f[2].revents)
			handle_async();
		if (f[1].revents) {
			get_cq_events();
			drain();
		}
		if (f[0].revents) {
			uint8_t buf[4096];
			ssize_t n = recv(S.sock, buf, sizeof(buf), 0);
			if (n == 0)
				fatal("the peer closed the connection (it failed or died)");
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				fatal("recv from the peer: %s", strerror(errno));
			if (n > 0)
				S.rxbuf.insert(S.rxbuf.end(), buf, buf + n);
		}
	}
}

void send_msg(msg &m, uint32_t type)
{
	m.magic = MSG_MAGIC;
	m.version = PROTO_VERSION;
	m.type = type;
	const uint8_t *p = reinterpret_cast<const uint8_t *>(&m);
	size_t left = sizeof(m);
	while (left) {
		ssize_t n = send(S.sock, p, left, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fatal("send to the peer: %s", n < 0 ? strerror(errno) : "closed");
		p += n;
		left -= n;
	}
}

void set_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_listen_accept(const char *port, int timeout_s)
{
	addrinfo hints = {}, *res;
	hints.ai_flags = AI_PASSIVE;
	hints.ai_family = AF_INET6;
	hints.ai_socktype = SOCK_STREAM;
	int fd = -1;
	// An IPv6 socket that also takes IPv4; IPv4 alone if there is no IPv6.
	for (int fam : {AF_INET6, AF_INET}) {
		hints.ai_family = fam;
		if (getaddrinfo(nullptr, port, &hints, &res))
			continue;
		for (addrinfo *a = res; a && fd < 0; a = a->ai_next) {
			fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
			if (fd < 0)
				continue;
			int one = 1, zero = 0;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (fam == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 1)) {
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(res);
		if (fd >= 0)
			break;
	}
	if (fd < 0)
		fatal("cannot listen on TCP port %s: %s", port, strerror(errno));
	note("waiting for the client on TCP port %s", port);
	pollfd f = {fd, POLLIN, 0};
	int r = poll(&f, 1, timeout_s * 1000);
	if (r <= 0)
		fatal("no client connected within %d s", timeout_s);
	int c = accept(fd, nullptr, nullptr);
	if (c < 0)
		fatal("accept: %s", strerror(errno));
	close(fd);
	set_nodelay(c);
	return c;
}

int tcp_connect(const char *host, const char *port, int timeout_s)
{
	addrinfo hints = {}, *res;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int e = getaddrinfo(host, port, &hints, &res);
	if (e)
		fatal("%s: %s", host, gai_strerror(e));
	double end = now_s() + timeout_s;
	int fd = -1, err = 0;
	// The server may not be listening yet: retry until -w runs out.
	while (fd < 0 && now_s() < end) {
		for (addrinfo *a = res; a && fd < 0; a = a->ai_next) {
			fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
			if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen)) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		fatal("cannot connect to %s port %s within %d s: %s", host, port, timeout_s,
		      strerror(err));
	set_nodelay(fd);
	return fd;
}

// ---- verbs set-up -------------------------------------------------------

void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void open_dev()
{
	if (S.o.dev) {
		S.ctx = open_device_by_name(S.o.dev);
		if (!S.ctx)
			fatal("no RDMA device %s", S.o.dev);
	} else {
		int n = 0;
		ibv_device **l = ibv_get_device_list(&n);
		if (!l || !n)
			fatal("no RDMA device");
		S.ctx = ibv_open_device(l[0]);
		ibv_free_device_list(l);
		if (!S.ctx)
			fatal("cannot open the first RDMA device");
	}
	if (ibv_query_port(S.ctx, S.o.ib_port, &S.port))
		fatal("ibv_query_port %d: %s", S.o.ib_port, strerror(errno));
	if (S.port.state != IBV_PORT_ACTIVE)
		note("warning: port %d is not ACTIVE (state %d)", S.o.ib_port, S.port.state);
	if (S.o.gid_index >= 0) {
		S.gid_index = S.o.gid_index;
	} else {
		// The first RoCE v2 GID of an IPv4 address, else the first RoCE v2
		// one, else 0.
		int v2 = -1, v4 = -1;
		for (int i = 0; i < S.port.gid_tbl_len && v4 < 0; i++) {
			ibv_gid_entry e;
			if (ibv_query_gid_ex(S.ctx, S.o.ib_port, i, &e, 0) ||
			    e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			if (v2 < 0)
				v2 = i;
			static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
			if (!memcmp(e.gid.raw, v4map, 12))
				v4 = i;
		}
		S.gid_index = v4 >= 0 ? v4 : v2 >= 0 ? v2 : 0;
	}
	if (ibv_query_gid(S.ctx, S.o.ib_port, S.gid_index, &S.gid))
		fatal("ibv_query_gid %d: %s", S.gid_index, strerror(errno));
	uint32_t active = 128u << S.port.active_mtu;
	if (!S.o.mtu)
		S.o.mtu = active;
	else if (S.o.mtu > active)
		fatal("-m %u is larger than port %d's active MTU %u", S.o.mtu, S.o.ib_port, active);
}

void *alloc_pages(uint64_t len)
{
	void *p = nullptr;
	if (posix_memalign(&p, 4096, len))
		fatal("cannot allocate %llu bytes", (unsigned long long)len);
	memset(p, 0, len);
	return p;
}

// PD, channel, CQs, the QP, the data region (DEPTH slots) and the control
// slots; INIT.
void qp_to_init(ibv_qp *qp, int access)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = S.o.ib_port;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		fatal("modify QP 0x%x to INIT: %s", qp->qp_num, strerror(errno));
}

// --xrc: the domain, its SRQ (receives of @max_wr, completing on the
// receive CQ, in this side's PD: the peer's WRITEs and READs are checked
// against it) and the XRC_RECV QP the peer's requests come to.
void create_xrc_receive_side(uint32_t max_wr)
{
	ibv_xrcd_init_attr xa = {};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	S.xrcd = ibv_open_xrcd(S.ctx, &xa);
	if (!S.xrcd)
		fatal("ibv_open_xrcd: %s", strerror(errno));
	ibv_srq_init_attr_ex sa = {};
	sa.attr.max_wr = max_wr;
	sa.attr.max_sge = MAX_SGE;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = S.pd;
	sa.xrcd = S.xrcd;
	sa.cq = S.rcq;
	S.srq = ibv_create_srq_ex(S.ctx, &sa);
	if (!S.srq)
		fatal("ibv_create_srq_ex (XRC, %u WRs, %d SGEs): %s", max_wr, MAX_SGE,
		      strerror(errno));
	ibv_qp_init_attr_ex ta = {};
	ta.qp_type = IBV_QPT_XRC_RECV;
	ta.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ta.xrcd = S.xrcd;
	S.tgt = ibv_create_qp_ex(S.ctx, &ta);
	if (!S.tgt)
		fatal("ibv_create_qp_ex (XRC_RECV): %s", strerror(errno));
}

// A receive: on the QP's own queue, or --xrc the SRQ.
int post_recv_wr(ibv_recv_wr *wr, ibv_recv_wr **bad)
{
	return S.srq ? ibv_post_srq_recv(S.srq, wr, bad) : ibv_post_recv(S.qp, wr, bad);
}

// Sends: --xrc, every WR names the peer's SRQ.
int post_send_wr(ibv_send_wr *wr, ibv_send_wr **bad)
{
	for (ibv_send_wr *w = wr; S.o.xrc && w; w = w->next)
		w->qp_type.xrc.remote_srqn = S.peer.xrc_srqn;
	return ibv_post_send(S.qp, wr, bad);
}

void create_resources(bool server)
{
	ibv_device_attr da;
	if (ibv_query_device(S.ctx, &da))
		fatal("ibv_query_device: %s", strerror(errno));
	uint32_t depth = S.p.depth;
	S.pd = ibv_alloc_pd(S.ctx);
	S.ch = ibv_create_comp_channel(S.ctx);
	if (!S.pd || !S.ch)
		fatal("PD / completion channel: %s", strerror(errno));
	nonblock(S.ch->fd);
	nonblock(S.ctx->async_fd);
	int cqe = 4 * depth + 16;
	S.scq = ibv_create_cq(S.ctx, cqe, nullptr, S.ch, 0);
	S.rcq = ibv_create_cq(S.ctx, cqe, nullptr, S.ch, 0);
	if (!S.scq || !S.rcq)
		fatal("ibv_create_cq(%d): %s", cqe, strerror(errno));
	if (ibv_req_notify_cq(S.scq, 0) || ibv_req_notify_cq(S.rcq, 0))
		fatal("ibv_req_notify_cq: %s", strerror(errno));

	S.region_len = depth * slot_size(S.p);
	S.region = static_cast<uint8_t *>(alloc_pages(S.region_len));
	int access = IBV_ACCESS_LOCAL_WRITE | (S.o.odp ? IBV_ACCESS_ON_DEMAND : 0);
	if (server)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	S.mr = ibv_reg_mr(S.pd, S.region, S.region_len, access);
	if (!S.mr)
		fatal("ibv_reg_mr(%llu bytes): %s", (unsigned long long)S.region_len,
		      strerror(errno));
	// Control slots: [0, depth) receives, [depth, 3 depth) sends.
	S.ctrl_len = 3 * depth * CTRL_SLOT;
	S.ctrl = static_cast<uint8_t *>(alloc_pages(S.ctrl_len));
	S.cmr = ibv_reg_mr(S.pd, S.ctrl, S.ctrl_len,
			   IBV_ACCESS_LOCAL_WRITE | (S.o.odp ? IBV_ACCESS_ON_DEMAND : 0));
	if (!S.cmr)
		fatal("ibv_reg_mr(control): %s", strerror(errno));
	pthread_t churner;
	if (S.o.churn && pthread_create(&churner, nullptr, churn_thread, nullptr))
		fatal("pthread_create: %s", strerror(errno));

	ibv_qp_init_attr_ex ia = {};
	ia.send_cq = S.scq;
	ia.recv_cq = S.rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = S.pd;
	ia.cap.max_send_wr = 2 * depth + 4;
	ia.cap.max_recv_wr = depth + 4;
	ia.cap.max_send_sge = MAX_SGE;
	ia.cap.max_recv_sge = MAX_SGE;
	ia.cap.max_inline_data = 64;
	if (S.o.xrc) {
		create_xrc_receive_side(depth + 4);
		// The initiator: sends only, its receives are the peer's SRQ's.
		ia.qp_type = IBV_QPT_XRC_SEND;
		ia.recv_cq = nullptr;
		ia.cap.max_recv_wr = 0;
		ia.cap.max_recv_sge = 0;
	}
	S.qp = ibv_create_qp_ex(S.ctx, &ia);
	if (!S.qp) {
		ia.cap.max_inline_data = 0;
		S.qp = ibv_create_qp_ex(S.ctx, &ia);
	}
	if (!S.qp)
		fatal("ibv_create_qp (%s, %u/%u WRs, %d SGEs): %s", S.o.xrc ? "XRC_SEND" : "RC",
		      ia.cap.max_send_wr, ia.cap.max_recv_wr, MAX_SGE, strerror(errno));
	S.max_inline = ia.cap.max_inline_data;

	int responder_access = server ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ : 0;
	qp_to_init(S.qp, S.o.xrc ? 0 : responder_access);
	if (S.o.xrc)
		qp_to_init(S.tgt, responder_access);

	S.max_rd = std::max(1, std::min<int>(da.max_qp_rd_atom, 16));
	S.max_init_rd = std::max(1, std::min<int>(da.max_qp_init_rd_atom, 16));
	S.me.qpn = S.qp->qp_num;
	if (S.o.xrc) {
		S.me.xrc_tgt_qpn = S.tgt->qp_num;
		if (ibv_get_srq_num(S.srq, &S.me.xrc_srqn))
			fatal("ibv_get_srq_num: %s", strerror(errno));
	}
	S.me.psn = (uint32_t)mix64(S.p.seed ^ (server ? 0x5e : 0xc1) ^ getpid()) & 0xffffff;
	S.me.addr = reinterpret_cast<uintptr_t>(S.region);
	S.me.region_len = S.region_len;
	S.me.rkey = S.mr->rkey;
	S.me.mtu = S.o.mtu;
	S.me.max_dest_rd = S.max_rd;
	memcpy(S.me.gid, S.gid.raw, 16);
	S.gkey = guard_key(S.p.seed, server);
	S.ckey = guard_key(S.p.seed, 2 + server);
	S.skey = src_key(S.p.seed);
}

// INIT -> RTR toward the peer's QP @dest_qpn; @responder: with the
// responder's attributes (an XRC_SEND QP has none).
void qp_to_rtr(ibv_qp *qp, uint32_t dest_qpn, bool responder)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu_enum(S.p.path_mtu);
	a.dest_qp_num = dest_qpn;
	a.rq_psn = S.peer.psn;
	a.max_dest_rd_atomic = S.max_rd;
	a.min_rnr_timer = S.o.min_rnr_timer;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, S.peer.gid, 16);
	a.ah_attr.grh.sgid_index = S.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.flow_label = S.o.flow_label;
	a.ah_attr.port_num = S.o.ib_port;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (responder)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		fatal("modify QP 0x%x to RTR: %s", qp->qp_num, strerror(errno));
}

void connect_qp()
{
	ibv_qp_attr a = {};
	// --xrc: the peer's XRC_SEND QP sends to our XRC_RECV QP (RTR is all
	// a responder needs), ours to its XRC_RECV QP.
	if (S.o.xrc)
		qp_to_rtr(S.tgt, S.peer.qpn, true);
	qp_to_rtr(S.qp, S.o.xrc ? S.peer.xrc_tgt_qpn : S.peer.qpn, !S.o.xrc);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = S.o.timeout;
	a.retry_cnt = S.o.retry_cnt;
	a.rnr_retry = S.o.rnr_retry;
	a.sq_psn = S.me.psn;
	a.max_rd_atomic = std::min(S.max_init_rd, S.peer.max_dest_rd);
	if (ibv_modify_qp(S.qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		fatal("modify QP to RTS: %s", strerror(errno));
}

// ---- completions ----------------------------------------------------------

void handle_async()
{
	ibv_async_event ev;
	while (!ibv_get_async_event(S.ctx, &ev)) {
		ibv_event_type t = ev.event_type;
		ibv_ack_async_event(&ev);
		switch (t) {
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_SQ_DRAINED:
			note("async event: %s", ibv_event_type_str(t));
			break;
		default:
			fatal("async event: %s", ibv_event_type_str(t));
		}
	}
}

void get_cq_events()
{
	ibv_cq *cq;
	void *cq_ctx;
	while (!ibv_get_cq_event(S.ch, &cq, &cq_ctx)) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			fatal("ibv_req_notify_cq: %s", strerror(errno));
	}
}

// Pop the completion's expected entry: fatal unless it is next in order.
bool take_expected(std::deque<expect> &q, const ibv_wc &wc, const char *queue, expect &e)
{
	if (q.empty()) {
		report("unexpected %s completion (nothing outstanding; a duplicate?): wr_id %s, "
		       "status %s, opcode %s",
		       queue, wr_id_str(wc.wr_id).c_str(), ibv_wc_status_str(wc.status),
		       wc_opcode_str(wc.opcode));
		return false;
	}
	e = q.front();
	if (wc.wr_id != e.wr_id)
		fatal("%s completion out of order: wr_id %s (status %s), expected %s", queue,
		      wr_id_str(wc.wr_id).c_str(), ibv_wc_status_str(wc.status),
		      wr_id_str(e.wr_id).c_str());
	if (wc.status != IBV_WC_SUCCESS)
		fatal("%s completion %s: status %s (vendor error 0x%x)", queue,
		      wr_id_str(wc.wr_id).c_str(), ibv_wc_status_str(wc.status), wc.vendor_err);
	q.pop_front();
	if (wc.opcode != e.opcode)
		report("%s completion %s: opcode %s, expected %s", queue,
		       wr_id_str(wc.wr_id).c_str(), wc_opcode_str(wc.opcode),
		       wc_opcode_str(e.opcode));
	// --xrc: receives complete for the XRC_RECV QP they came through.
	uint32_t qpn = (&q == &S.rq && S.tgt ? S.tgt : S.qp)->qp_num;
	if (wc.qp_num != qpn)
		report("%s completion %s: qp_num 0x%x, expected 0x%x", queue,
		       wr_id_str(wc.wr_id).c_str(), wc.qp_num, qpn);
	return true;
}

// Where region offset @off lies relative to layout @l, for messages.
std::string where(const layout &l, uint64_t off)
{
	char b[128];
	uint64_t first = UINT64_MAX, last = 0;
	for (int j = 0; j < l.n; j++) {
		first = std::min(first, l.s[j].off);
		last = std::max(last, l.s[j].off + l.s[j].len);
	}
	if (!l.n)
		first = last = l.start;
	if (off < first) {
		snprintf(b, sizeof(b), "%llu bytes before the buffer",
			 (unsigned long long)(first - off));
		return b;
	}
	if (off >= last) {
		snprintf(b, sizeof(b), "%llu bytes after the buffer",
			 (unsigned long long)(off - last + 1));
		return b;
	}
	for (int j = 0; j < l.n; j++)
		if (off >= l.s[j].off && off < l.s[j].off + l.s[j].len) {
			snprintf(b, sizeof(b), "in sge %d's unused capacity (+%llu)", j,
				 (unsigned long long)(off - l.s[j].off));
			return b;
		}
	return "in a gap between SGEs";
}

// The first @size bytes of @l's SGE list (list order) must be data stream
// @dkey from @dpos, every other byte of [l.lo, l.hi) guard stream @gkey at
// its region offset.  Restores the guard afterwards.
void verify_layout(uint32_t iter, uint64_t size, const layout &l, uint64_t dkey, uint64_t dpos)
{
	const char *opn = op_names[S.op];
	uint64_t logical[MAX_SGE];
	int order[MAX_SGE];
	uint64_t acc = 0;
	for (int j = 0; j < l.n; j++) {
		logical[j] = acc;
		acc += l.s[j].len;
		order[j] = j;
	}
	small_sort(order, l.n, [&](int a, int b) { return l.s[a].off < l.s[b].off; });

	if (iter == S.target && (S.p.inject & INJ_CORRUPT) && size) {
		uint64_t at = size / 2;
		for (int j = 0; j < l.n; j++)
			if (at >= logical[j] && at < logical[j] + l.s[j].len)
				S.region[l.s[j].off + at - logical[j]] ^= 0x5a;
		note("inject: corrupted byte %llu of %s #%u", (unsigned long long)at, opn, iter);
	}
	if (iter == S.target && (S.p.inject & INJ_GUARD)) {
		S.region[l.hi - GUARD] ^= 0xa5;
		note("inject: changed the guard byte after %s #%u", opn, iter);
	}

	diff dd, gd;
	auto guard = [&](uint64_t from, uint64_t to) {
		if (to > from)
			compare(S.gkey, from, S.region + from, to - from, gd, from);
	};
	uint64_t cur = l.lo;
	for (int k = 0; k < l.n; k++) {
		const seg &s = l.s[order[k]];
		uint64_t lg = logical[order[k]];
		uint64_t dl = lg < size ? std::min(s.len, size - lg) : 0;
		guard(cur, s.off);
		compare(dkey, dpos + lg, S.region + s.off, dl, dd, lg);
		guard(s.off + dl, s.off + s.len);
		cur = s.off + s.len;
	}
	guard(cur, l.hi);
	if (dd.count) {
		int j = 0;
		while (j + 1 < l.n && dd.first >= logical[j + 1])
			j++;
		report("%s #%u (size %llu, %d sge): %llu of %llu bytes wrong, first at offset %llu "
		       "(sge %d +%llu): expected 0x%02x got 0x%02x",
		       opn, iter, (unsigned long long)size, l.n, (unsigned long long)dd.count,
		       (unsigned long long)size, (unsigned long long)dd.first, j,
		       (unsigned long long)(dd.first - logical[j]), dd.exp, dd.got);
	}
	if (gd.count)
		report("%s #%u (size %llu, %d sge): %llu guard bytes changed, first %s (region "
		       "offset 0x%llx): expected 0x%02x got 0x%02x",
		       opn, iter, (unsigned long long)size, l.n, (unsigned long long)gd.count,
		       where(l, gd.first).c_str(), (unsigned long long)gd.first, gd.exp, gd.got);
	gen(S.gkey, l.lo, S.region + l.lo, l.hi - l.lo);
}

uint8_t *ctrl_slot(uint32_t i) { return S.ctrl + i * CTRL_SLOT; }

void ctrl_restore(uint32_t slot)
{
	gen(S.ckey, slot * CTRL_SLOT, ctrl_slot(slot), CTRL_SLOT);
}

// A received control slot: outside [CTRL_BUF, CTRL_BUF + len) nothing changed.
void ctrl_check(uint32_t slot, uint32_t len, const char *what, uint32_t iter)
{
	diff d;
	uint64_t base = slot * CTRL_SLOT;
	compare(S.ckey, base, S.ctrl + base, CTRL_BUF, d, 0);
	compare(S.ckey, base + CTRL_BUF + len, S.ctrl + base + CTRL_BUF + len,
		CTRL_SLOT - CTRL_BUF - len, d, CTRL_BUF + len);
	if (d.count)
		report("%s #%u: %llu bytes around the %u-byte receive changed, first at slot "
		       "offset %llu: expected 0x%02x got 0x%02x",
		       what, iter, (unsigned long long)d.count, len, (unsigned long long)d.first,
		       d.exp, d.got);
}

void post_recv_ctrl(uint32_t iter, uint32_t kind)
{
	uint32_t slot = iter % S.p.depth;
	ibv_sge sge = {reinterpret_cast<uintptr_t>(ctrl_slot(slot) + CTRL_BUF), CTRL_CAP,
		       S.cmr->lkey};
	ibv_recv_wr wr = {}, *bad;
	wr.wr_id = wr_id_of(S.op, kind, iter);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (int e = post_recv_wr(&wr, &bad))
		fatal("ibv_post_recv (%s #%u): %s", op_names[S.op], iter, strerror(e));
	bool imm = S.op == OP_WRITE_IMM && kind == K_DATA;
	S.rq.push_back({wr.wr_id, imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, iter, kind, false});
}

int fill_sges(const layout &l, ibv_sge *sge, uint32_t lkey)
{
	for (int j = 0; j < l.n; j++)
		sge[j] = {reinterpret_cast<uintptr_t>(S.region + l.s[j].off), (uint32_t)l.s[j].len,
			  lkey};
	return l.n;
}

// ---- server --------------------------------------------------------------

void server_post_recv(uint32_t iter)
{
	const xfer &x = (*S.plan)[iter];
	if (S.op == OP_WRITE || S.op == OP_WRITE_IMM) {
		post_recv_ctrl(iter, S.op == OP_WRITE ? K_DONE : K_DATA);
		return;
	}
	ibv_sge sge[MAX_SGE];
	ibv_recv_wr wr = {}, *bad;
	wr.wr_id = wr_id_of(S.op, K_DATA, iter);
	wr.num_sge = fill_sges(x.rem, sge, S.mr->lkey);
	wr.sg_list = wr.num_sge ? sge : nullptr;
	if (int e = post_recv_wr(&wr, &bad))
		fatal("ibv_post_recv (%s #%u, %d SGEs): %s", op_names[S.op], iter, wr.num_sge,
		      strerror(e));
	S.rq.push_back({wr.wr_id, IBV_WC_RECV, iter, K_DATA, false});
}

void server_post_credits()
{
	uint32_t ring = 2 * S.p.depth;
	while (S.credit_posted < S.verified && S.credit_posted < S.credit_done + ring) {
		uint32_t i = S.credit_posted++;
		uint32_t slot = S.p.depth + i % ring;
		credit_msg c = {MSG_MAGIC, S.op, i, (uint32_t)g_st.errors};
		memcpy(ctrl_slot(slot) + CTRL_BUF, &c, sizeof(c));
		ibv_sge sge = {reinterpret_cast<uintptr_t>(ctrl_slot(slot) + CTRL_BUF), sizeof(c),
			       S.cmr->lkey};
		ibv_send_wr wr = {}, *bad;
		wr.wr_id = wr_id_of(S.op, K_CREDIT, i);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (int e = post_send_wr(&wr, &bad))
			fatal("ibv_post_send (credit #%u): %s", i, strerror(e));
		S.sq.push_back({wr.wr_id, IBV_WC_SEND, i, K_CREDIT, true});
	}
}

void server_recv_wc(const ibv_wc &wc)
{
	expect e;
	if (!take_expected(S.rq, wc, "receive", e))
		return;
	uint32_t i = e.iter;
	const xfer &x = (*S.plan)[i];
	const char *opn = op_names[S.op];
	bool imm = S.op == OP_SEND_IMM || S.op == OP_WRITE_IMM;
	uint64_t want_len = S.op == OP_WRITE ? sizeof(done_msg) : x.size;
	if (wc.byte_len != want_len)
		report("%s #%u: receive byte_len %u, expected %llu", opn, i, wc.byte_len,
		       (unsigned long long)want_len);
	if (!!(wc.wc_flags & IBV_WC_WITH_IMM) != imm)
		report("%s #%u: IBV_WC_WITH_IMM %s", opn, i, imm ? "missing" : "set");
	else if (imm && wc.imm_data != htonl(x.imm))
		report("%s #%u: imm_data 0x%08x, expected 0x%08x", opn, i, ntohl(wc.imm_data),
		       x.imm);
	uint32_t slot = i % S.p.depth;
	if (S.op == OP_WRITE) {
		done_msg d;
		memcpy(&d, ctrl_slot(slot) + CTRL_BUF, sizeof(d));
		fletcher f;
		f.feed(S.region + x.rem.start, x.size);
		if (d.magic != MSG_MAGIC || d.op != S.op || d.iter != i || d.size != x.size ||
		    d.raddr_off != x.rem.start)
			report("%s #%u: \"done\" message says op %u #%u size %llu at 0x%llx, "
			       "expected op %u #%u size %llu at 0x%llx",
			       opn, i, d.op, d.iter, (unsigned long long)d.size,
			       (unsigned long long)d.raddr_off, S.op, i, (unsigned long long)x.size,
			       (unsigned long long)x.rem.start);
		else if (d.sum_a != f.a || d.sum_b != f.b)
			report("%s #%u (size %llu): checksum of the written range %016llx:%016llx, "
			       "the client sent %016llx:%016llx",
			       opn, i, (unsigned long long)x.size, (unsigned long long)f.a,
			       (unsigned long long)f.b, (unsigned long long)d.sum_a,
			       (unsigned long long)d.sum_b);
		ctrl_check(slot, sizeof(d), "done message", i);
		ctrl_restore(slot);
	} else if (S.op == OP_WRITE_IMM) {
		ctrl_check(slot, 0, "write_imm receive buffer", i);
		ctrl_restore(slot);
	}
	verify_layout(i, x.size, x.rem, data_key(S.p.seed, S.op, i), 0);
	g_st.ops++;
	g_st.bytes += x.size;
	S.verified++;
	if (i + S.p.depth < S.plan->size())
		server_post_recv(i + S.p.depth);
	server_post_credits();
}

void server_send_wc(const ibv_wc &wc)
{
	expect e;
	if (take_expected(S.sq, wc, "send", e))
		S.credit_done++;
}

// ---- client --------------------------------------------------------------

void client_post(uint32_t i)
{
	const xfer &x = (*S.plan)[i];
	const char *opn = op_names[S.op];
	uint32_t slot = i % S.p.depth;
	bool tgt = i == S.target;
	if (S.op != OP_READ) {
		post_recv_ctrl(i, K_CREDIT);
		uint64_t lg = 0;
		for (int j = 0; j < x.loc.n; lg += x.loc.s[j].len, j++)
			gen(data_key(S.p.seed, S.op, i), lg, S.region + x.loc.s[j].off,
			    x.loc.s[j].len);
	}
	ibv_sge sge[MAX_SGE], dsge;
	ibv_send_wr wr[2] = {}, *bad;
	wr[0].wr_id = wr_id_of(S.op, K_DATA, i);
	wr[0].num_sge = fill_sges(x.loc, sge, S.mr->lkey);
	wr[0].sg_list = wr[0].num_sge ? sge : nullptr;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	if (x.inl && x.size <= S.max_inline && S.op != OP_READ)
		wr[0].send_flags |= IBV_SEND_INLINE;
	wr[0].wr.rdma.remote_addr = S.peer.addr + x.rem.start;
	wr[0].wr.rdma.rkey = S.peer.rkey;
	wr[0].imm_data = htonl(x.imm);
	if (tgt && (S.p.inject & INJ_RKEY)) {
		wr[0].wr.rdma.rkey ^= 0x80;
		note("inject: wrong rkey for %s #%u", opn, i);
	}
	if (tgt && (S.p.inject & INJ_IMM)) {
		wr[0].imm_data = htonl(x.imm ^ 1);
		note("inject: wrong imm_data for %s #%u", opn, i);
	}
	if (tgt && (S.p.inject & INJ_SHORT) && wr[0].num_sge) {
		ibv_sge &last = sge[wr[0].num_sge - 1];
		if (!--last.length)
			wr[0].num_sge--;
		note("inject: %s #%u one byte short", opn, i);
	}
	ibv_wc_opcode wop = IBV_WC_SEND;
	switch (S.op) {
	case OP_SEND: wr[0].opcode = IBV_WR_SEND; break;
	case OP_SEND_IMM: wr[0].opcode = IBV_WR_SEND_WITH_IMM; break;
	case OP_WRITE: wr[0].opcode = IBV_WR_RDMA_WRITE; wop = IBV_WC_RDMA_WRITE; break;
	case OP_WRITE_IMM: wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM; wop = IBV_WC_RDMA_WRITE; break;
	default: wr[0].opcode = IBV_WR_RDMA_READ; wop = IBV_WC_RDMA_READ; break;
	}
	ibv_send_wr *first = &wr[0];
	bool skip = tgt && (S.p.inject & INJ_SKIP) && S.op == OP_WRITE;
	if (S.op == OP_WRITE) {
		uint32_t cslot = S.p.depth + slot;
		done_msg d = {MSG_MAGIC, S.op, i, 0, x.size, x.rem.start, 0, 0};
		fletcher f;
		for (int j = 0; j < x.loc.n; j++)
			f.feed(S.region + x.loc.s[j].off, x.loc.s[j].len);
		d.sum_a = f.a;
		d.sum_b = f.b;
		memcpy(ctrl_slot(cslot) + CTRL_BUF, &d, sizeof(d));
		dsge = {reinterpret_cast<uintptr_t>(ctrl_slot(cslot) + CTRL_BUF), sizeof(d),
			S.cmr->lkey};
		wr[1].wr_id = wr_id_of(S.op, K_DONE, i);
		wr[1].sg_list = &dsge;
		wr[1].num_sge = 1;
		wr[1].opcode = IBV_WR_SEND;
		wr[1].send_flags = IBV_SEND_SIGNALED;
		wr[0].next = &wr[1];
		if (skip) {
			first = &wr[1];
			note("inject: left out the RDMA WRITE of %s #%u", opn, i);
		}
	}
	if (S.o.verbose)
		note("post %s #%u: size %llu, %d local sge at +0x%llx, remote +0x%llx%s", opn, i,
		     (unsigned long long)x.size, x.loc.n,
		     (unsigned long long)(x.loc.start - slot * slot_size(S.p)),
		     (unsigned long long)(x.rem.start - slot * slot_size(S.p)),
		     (wr[0].send_flags & IBV_SEND_INLINE) ? ", inline" : "");
	if (int e = post_send_wr(first, &bad))
		fatal("ibv_post_send (%s #%u, size %llu, %d SGEs): %s", opn, i,
		      (unsigned long long)x.size, wr[0].num_sge, strerror(e));
	if (!skip)
		S.sq.push_back({wr[0].wr_id, wop, i, K_DATA, S.op != OP_WRITE});
	if (S.op == OP_WRITE)
		S.sq.push_back({wr[1].wr_id, IBV_WC_SEND, i, K_DONE, true});
}

void client_send_wc(const ibv_wc &wc)
{
	expect e;
	if (!take_expected(S.sq, wc, "send", e))
		return;
	uint32_t i = e.iter;
	const xfer &x = (*S.plan)[i];
	if (S.op == OP_READ) {
		if (wc.byte_len != x.size)
			report("read #%u: completion byte_len %u, expected %llu", i, wc.byte_len,
			       (unsigned long long)x.size);
		verify_layout(i, x.size, x.loc, S.skey, x.rem.start);
		g_st.ops++;
		g_st.bytes += x.size;
	}
	if (e.last)
		S.sq_done++;
}

void client_recv_wc(const ibv_wc &wc)
{
	expect e;
	if (!take_expected(S.rq, wc, "receive", e))
		return;
	uint32_t i = e.iter, slot = i % S.p.depth;
	credit_msg c;
	memcpy(&c, ctrl_slot(slot) + CTRL_BUF, sizeof(c));
	if (wc.byte_len != sizeof(c) || (wc.wc_flags & IBV_WC_WITH_IMM))
		report("credit #%u: byte_len %u flags 0x%x, expected %zu and no immediate", i,
		       wc.byte_len, wc.wc_flags, sizeof(c));
	if (c.magic != MSG_MAGIC || c.op != S.op || c.iter != i)
		report("credit #%u: message says op %u #%u (magic 0x%x)", i, c.op, c.iter, c.magic);
	ctrl_check(slot, sizeof(c), "credit", i);
	ctrl_restore(slot);
	S.credits++;
}

bool g_server;

int drain()
{
	ibv_wc wc[16];
	int total = 0;
	for (;;) {
		int ns = ibv_poll_cq(S.scq, 16, wc);
		if (ns < 0)
			fatal("ibv_poll_cq (send CQ): %d", ns);
		for (int k = 0; k < ns; k++)
			g_server ? server_send_wc(wc[k]) : client_send_wc(wc[k]);
		int nr = ibv_poll_cq(S.rcq, 16, wc);
		if (nr < 0)
			fatal("ibv_poll_cq (receive CQ): %d", nr);
		for (int k = 0; k < nr; k++)
			g_server ? server_recv_wc(wc[k]) : client_recv_wc(wc[k]);
		if (!ns && !nr)
			return total;
		total += ns + nr;
	}
}

// Sleep until a completion, an async event or the peer's hang-up; fatal
// after -w seconds with no completion.
void wait_events(double &last)
{
	pollfd f[3] = {{S.ch->fd, POLLIN, 0}, {S.sock, POLLRDHUP, 0}, {S.ctx->async_fd, POLLIN, 0}};
	int left = (int)((last + S.o.wait_s - now_s()) * 1000);
	if (left <= 0)
		fatal("%s: no completion for %d s (-w); %u sends and %u receives outstanding",
		      op_names[S.op], S.o.wait_s, (unsigned)S.sq.size(), (unsigned)S.rq.size());
	int r = poll(f, 3, std::min(left, 1000));
	if (r < 0 && errno != EINTR)
		fatal("poll: %s", strerror(errno));
	if (r <= 0)
		return;
	if (f[2].revents)
		handle_async();
	if (f[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
		fatal("%s: the peer closed the connection (it failed or died)", op_names[S.op]);
	if (f[0].revents)
		get_cq_events();
}

void begin_phase(uint32_t op)
{
	S.op = op;
	S.plan = &S.plans[op];
	S.sq.clear();
	S.rq.clear();
	S.posted = S.sq_done = S.credits = 0;
	S.verified = S.credit_posted = S.credit_done = 0;
	S.target = UINT32_MAX;
	for (uint32_t i = 0; i < S.plan->size(); i++)
		if ((*S.plan)[i].size) {
			S.target = i;
			break;
		}
	g_lines.clear();
	gen(S.ckey, 0, S.ctrl, S.ctrl_len);
}

wire_stats to_wire(const stats &s)
{
	wire_stats w = {};
	w.ops = s.ops;
	w.bytes = s.bytes;
	w.errors = s.errors;
	w.nlines = std::min<uint32_t>(g_lines.size(), WIRE_LINES);
	for (uint32_t k = 0; k < w.nlines; k++)
		snprintf(w.lines[k], WIRE_LINE_LEN, "%s", g_lines[k].c_str());
	return w;
}

stats since(const stats &at)
{
	return {g_st.ops - at.ops, g_st.bytes - at.bytes, g_st.errors - at.errors};
}

void show_peer_lines(const wire_stats &w)
{
	const char *peer = g_server ? "client" : "server";
	for (uint32_t k = 0; k < std::min<uint32_t>(w.nlines, WIRE_LINES); k++)
		printf("# %s: %.*s\n", peer, WIRE_LINE_LEN, w.lines[k]);
}

void phase_line(uint32_t op, const stats &mine, const wire_stats &peer, double secs)
{
	uint64_t n = mine.ops + peer.ops, bytes = mine.bytes + peer.bytes;
	uint64_t errs = mine.errors + peer.errors;
	uint64_t maxs = 0;
	for (const xfer &x : S.plans[op])
		maxs = std::max(maxs, x.size);
	tap::check(!errs && n == S.plans[op].size(),
		   "%s: %llu of %zu transfers (0..%llu bytes), %llu bytes verified, %llu errors "
		   "(%.2f s, %.1f MiB/s)",
		   op_names[op], (unsigned long long)n, S.plans[op].size(), (unsigned long long)maxs,
		   (unsigned long long)bytes, (unsigned long long)errs, secs,
		   secs > 0 ? bytes / secs / MiB : 0.0);
	g_peer.ops += peer.ops;
	g_peer.bytes += peer.bytes;
	g_peer.errors += peer.errors;
}

void client_phase(uint32_t op)
{
	begin_phase(op);
	stats at = g_st;
	const std::vector<xfer> &plan = *S.plan;
	uint32_t T = plan.size(), D = S.p.depth;
	if (op == OP_READ)
		for (auto &e : extents(plan, D, false))
			gen(S.gkey, e.first, S.region + e.first, e.second - e.first);
	msg m = {};
	m.op = op;
	m.p.seed = S.p.seed;	// a new round (--seconds) has a new one
	send_msg(m, M_PHASE_BEGIN);
	recv_msg(M_PHASE_READY);
	double t0 = now_s(), last = t0, beat = t0;
	auto done = [&] { return S.sq_done == T && (op == OP_READ || S.credits == T); };
	while (!done()) {
		if (op == OP_READ && now_s() - beat > 1) { // the server only waits
			msg pm = {};
			send_msg(pm, M_PROGRESS);
			beat = now_s();
		}
		uint32_t freed = op == OP_READ ? S.sq_done : std::min(S.sq_done, S.credits);
		while (S.posted < T && S.posted < freed + D)
			client_post(S.posted++);
		if (drain()) {
			last = now_s();
			continue;
		}
		if (done())
			break;
		wait_events(last);
	}
	double secs = now_s() - t0;
	m = {};
	m.op = op;
	m.st = to_wire(since(at));
	send_msg(m, M_PHASE_END);
	msg r = recv_msg(M_PHASE_DONE);
	show_peer_lines(r.st);
	phase_line(op, since(at), r.st, secs);
}

void server_phase(uint32_t op)
{
	begin_phase(op);
	stats at = g_st;
	const std::vector<xfer> &plan = *S.plan;
	uint32_t T = plan.size(), D = S.p.depth;
	auto ext = extents(plan, D, true);
	for (auto &e : ext)
		gen(op == OP_READ ? S.skey : S.gkey, e.first, S.region + e.first,
		    e.second - e.first);
	if (op != OP_READ)
		for (uint32_t i = 0; i < std::min(T, D); i++)
			server_post_recv(i);
	msg m = {};
	m.op = op;
	send_msg(m, M_PHASE_READY);
	double t0 = now_s(), last = t0;
	if (op != OP_READ) {
		while (S.verified < T || S.credit_done < T) {
			server_post_credits();
			if (drain()) {
				last = now_s();
				continue;
			}
			if (S.verified == T && S.credit_done == T)
				break;
			wait_events(last);
		}
	}
	msg e = recv_msg(M_PHASE_END);
	double secs = now_s() - t0;
	if (op == OP_READ) {
		for (auto &x : ext) {
			diff d;
			compare(S.skey, x.first, S.region + x.first, x.second - x.first, d, x.first);
			if (d.count)
				report("read: the server's source changed: %llu bytes, first at region "
				       "offset 0x%llx: expected 0x%02x got 0x%02x",
				       (unsigned long long)d.count, (unsigned long long)d.first, d.exp,
				       d.got);
		}
	}
	drain(); // anything now is unexpected
	show_peer_lines(e.st);
	m = {};
	m.op = op;
	m.st = to_wire(since(at));
	send_msg(m, M_PHASE_DONE);
	phase_line(op, since(at), e.st, secs);
}

// After the run: no stray completion, the QP still in RTS, clean teardown.
void final_checks()
{
	usleep(200000);
	g_lines.clear();
	S.sq.clear();
	S.rq.clear();
	drain();
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	if (ibv_query_qp(S.qp, &a, IBV_QP_STATE, &ia))
		report("ibv_query_qp: %s", strerror(errno));
	else if (a.qp_state != IBV_QPS_RTS)
		report("the QP is in state %d after the run, expected RTS", a.qp_state);
	int e = 0;
	if ((e = ibv_destroy_qp(S.qp)))
		report("ibv_destroy_qp: %s", strerror(e));
	if (S.tgt && (e = ibv_destroy_qp(S.tgt)))
		report("ibv_destroy_qp (XRC_RECV): %s", strerror(e));
	if (S.srq && (e = ibv_destroy_srq(S.srq)))
		report("ibv_destroy_srq (XRC): %s", strerror(e));
	if (S.xrcd && (e = ibv_close_xrcd(S.xrcd)))
		report("ibv_close_xrcd: %s", strerror(e));
	if ((e = ibv_dereg_mr(S.mr)) || (e = ibv_dereg_mr(S.cmr)))
		report("ibv_dereg_mr: %s", strerror(e));
	if ((e = ibv_destroy_cq(S.scq)) || (e = ibv_destroy_cq(S.rcq)))
		report("ibv_destroy_cq: %s", strerror(e));
	if ((e = ibv_destroy_comp_channel(S.ch)))
		report("ibv_destroy_comp_channel: %s", strerror(e));
	if ((e = ibv_dealloc_pd(S.pd)))
		report("ibv_dealloc_pd: %s", strerror(e));
	S.ch = nullptr;
	ibv_context *ctx = S.ctx;
	S.ctx = nullptr;
	if ((e = ibv_close_device(ctx)))
		report("ibv_close_device: %s", strerror(e));
}

void describe()
{
	char g[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, S.gid.raw, g, sizeof(g));
	std::string ops;
	for (uint32_t k = 0; k < S.p.nops; k++)
		ops += (k ? "," : "") + std::string(op_names[S.p.ops[k]]);
	note("%s port %d GID %d %s QPN 0x%x; peer QPN 0x%x; path MTU %u, depth %u, inline %u",
	     ibv_get_device_name(S.ctx->device), S.o.ib_port, S.gid_index, g, S.me.qpn,
	     S.peer.qpn, S.p.path_mtu, S.p.depth, S.max_inline);
	uint64_t bytes = 0;
	for (const xfer &x : S.plans[S.p.ops[0]])
		bytes += x.size;
	note("seed %llu, ops %s, %u pass(es), max size %llu, %u random sizes per pass; %s: %zu "
	     "transfers, %.1f MiB%s",
	     (unsigned long long)S.p.seed, ops.c_str(), S.p.passes,
	     (unsigned long long)S.p.max_size, S.p.nrandom, op_names[S.p.ops[0]],
	     S.plans[S.p.ops[0]].size(),
	     (double)bytes / MiB, S.p.inject ? " (faults injected)" : "");
}

void make_plans()
{
	S.plans.assign(OP_COUNT, {});
	uint64_t h = mix64(S.p.seed);
	for (uint32_t k = 0; k < S.p.nops; k++) {
		S.plans[S.p.ops[k]] = make_plan(S.p, S.p.ops[k]);
		h = hash_plan(S.plans[S.p.ops[k]], h ^ S.p.ops[k]);
	}
	S.me.plan_hash = h;
}

// @peer_final: the peer's whole-run totals; @at: ours before final_checks().
void finish(msg &peer_final, const stats &at)
{
	uint64_t peer_end = peer_final.st.errors - std::min(peer_final.st.errors, g_peer.errors);
	uint64_t mine_end = since(at).errors;
	g_peer.ops = peer_final.st.ops;
	g_peer.bytes = peer_final.st.bytes;
	g_peer.errors = peer_final.st.errors;
	show_peer_lines(peer_final.st);
	tap::check(!mine_end && !peer_end,
		   "end: no stray completion, QPs still in RTS, clean teardown (%llu errors)",
		   (unsigned long long)(mine_end + peer_end));
}

int run_client()
{
	S.sock = tcp_connect(S.o.host, S.o.port, S.o.wait_s);
	create_resources(false);
	msg m = {};
	m.p = S.p;
	m.q = S.me;
	send_msg(m, M_HELLO);
	msg r = recv_msg(M_HELLO_REPLY);
	S.peer = r.q;
	S.p.path_mtu = std::min(S.o.mtu, S.peer.mtu);
	make_plans();
	if (S.me.plan_hash != S.peer.plan_hash)
		fatal("the server derived a different plan (hash %016llx, ours %016llx): "
		      "another version of this tool?",
		      (unsigned long long)S.peer.plan_hash, (unsigned long long)S.me.plan_hash);
	if (S.peer.region_len < S.region_len)
		fatal("the server's buffer is %llu bytes, the plan needs %llu",
		      (unsigned long long)S.peer.region_len, (unsigned long long)S.region_len);
	connect_qp();
	recv_msg(M_RTS);
	describe();
	// --seconds: again with new data, sizes and layouts (a new seed, so a
	// stale byte of an earlier round still differs) until time is up.
	double t_end = now_s() + S.o.seconds;
	for (uint64_t round = 0;; round++) {
		if (round) {
			S.p.seed = mix64(S.o.seed + round);
			make_plans();
			note("round %llu, seed %llu", (unsigned long long)round,
			     (unsigned long long)S.p.seed);
		}
		for (uint32_t k = 0; k < S.p.nops; k++)
			client_phase(S.p.ops[k]);
		if (now_s() >= t_end || (S.o.stop_file && !access(S.o.stop_file, F_OK)))
			break;
	}
	stats at = g_st;
	final_checks();
	m = {};
	m.st = to_wire(g_st);
	send_msg(m, M_FINISH);
	r = recv_msg(M_FINISH_REPLY);
	finish(r, at);
	return 0;
}

int run_server()
{
	S.sock = tcp_listen_accept(S.o.port, 4 * S.o.wait_s);
	msg h = recv_msg(M_HELLO);
	S.p = h.p;
	S.peer = h.q;
	if (!S.p.depth || S.p.depth > 4096 || !S.p.nops || S.p.nops > OP_COUNT ||
	    !S.p.max_size || S.p.max_size > (1ULL << 31) - 1)
		fatal("protocol: bad parameters from the client");
	for (uint32_t k = 0; k < S.p.nops; k++)
		if (S.p.ops[k] >= OP_COUNT)
			fatal("protocol: bad op %u from the client", S.p.ops[k]);
	S.p.path_mtu = std::min(S.o.mtu, S.peer.mtu);
	create_resources(true);
	make_plans();
	msg m = {};
	m.q = S.me;
	send_msg(m, M_HELLO_REPLY);
	connect_qp();
	m = {};
	send_msg(m, M_RTS);
	describe();
	for (;;) {
		msg r = recv_msg(0);
		if (r.type == M_PHASE_BEGIN && r.op < OP_COUNT) {
			if (r.p.seed && r.p.seed != S.p.seed) {	// a new round
				S.p.seed = r.p.seed;
				make_plans();
			}
			server_phase(r.op);
		} else if (r.type == M_FINISH) {
			stats at = g_st;
			final_checks();
			m = {};
			m.st = to_wire(g_st);
			send_msg(m, M_FINISH_REPLY);
			finish(r, at);
			return 0;
		} else {
			fatal("protocol: unexpected message type %u", r.type);
		}
	}
}

void usage(FILE *f)
{
	fprintf(f,
		"usage: sroce_integrity -s [options]          (server)\n"
		"       sroce_integrity -c HOST [options]     (client; drives the run)\n"
		"\n"
		"  -d DEV            RDMA device (default: the first)\n"
		"  -i PORT           device port (default 1)\n"
		"  -g GID_INDEX      source GID (default: the first RoCE v2 IPv4 one)\n"
		"  -p TCP_PORT       for the exchange (default 18525)\n"
		"  -m PATH_MTU       256, 512, 1024, 2048 or 4096 (default: the port's\n"
		"                    active MTU; the smaller of the two sides is used)\n"
		"  -q DEPTH          transfers in flight (default 8)\n"
		"  -n PASSES         passes over the size set (default 1)\n"
		"  -w SECONDS        give up after this long without progress (default 30;\n"
		"                    the server waits 4x as long for the client to connect)\n"
		"  -v                print every transfer\n"
		"client only (the server takes them from the client):\n"
		"  --ops LIST        of send,send_imm,write,write_imm,read (default all)\n"
		"  --seed N          (default: from the clock, printed)\n"
		"  --max-size B      largest transfer (default 8 MiB, suffixes k, m)\n"
		"  --random N        random sizes per pass (default 16)\n"
		"  --max-bytes B     per op, leave out transfers beyond this total\n"
		"  --quick           max size 128 KiB and 8 random sizes unless given\n"
		"  --seconds S       run the op set again (new seed) until S seconds\n"
		"                    have passed\n"
		"  --stop-file F     ... or until file F exists\n"
		"  --inject LIST     deliberate faults, to see the checks fail:\n"
		"                    corrupt,guard,rkey,imm,skip,short\n"
		"either side, for its own memory:\n"
		"  --odp             register the buffers IBV_ACCESS_ON_DEMAND\n"
		"  --xrc             XRC QPs and an XRC SRQ on each side instead of RC\n"
		"  --churn           --odp, and fork() and compact all memory every 20 ms\n"
		"                    while the transfers run (root for the compaction)\n"
		"QP settings: --timeout 14 --retry-cnt 7 --rnr-retry 7 --min-rnr-timer 12\n"
		"             --flow-label N (the path's GRH flow label, default 0;\n"
		"             UCX sets ~0, which a device must mask to 20 bits)\n");
}

// --churn: the kernel takes this side's ODP pages back again and again
// while the transfers run, and its data must survive: a fork() (every
// private page becomes copy-on-write, so the ODP MRs are invalidated and
// the next write copies the page) and a compaction of all memory (pages
// move) every 20 ms. Started once the MRs exist; runs until exit.
void *churn_thread(void *)
{
	for (;;) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, nullptr, 0);
		int fd = open("/proc/sys/vm/compact_memory", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "1", 1) != 1)
				S.churn_compact_errors++;
			close(fd);
		}
		S.churns++;
		usleep(20000);
	}
	return nullptr;
}

uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);
	if (*end == 'k' || *end == 'K')
		v *= KiB, end++;
	else if (*end == 'm' || *end == 'M')
		v *= MiB, end++;
	else if (*end == 'g' || *end == 'G')
		v *= 1024 * MiB, end++;
	if (*end || end == s) {
		fprintf(stderr, "sroce_integrity: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

uint32_t parse_list(const char *s, bool ops)
{
	uint32_t mask = 0;
	std::string str(s);
	size_t pos = 0;
	while (pos <= str.size()) {
		size_t c = str.find(',', pos);
		std::string w = str.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
		bool found = false;
		if (ops) {
			for (uint32_t k = 0; k < OP_COUNT; k++)
				if (w == op_names[k] || w == "all") {
					found = true;
					if (!std::count(S.o.ops.begin(), S.o.ops.end(), k))
						S.o.ops.push_back(k);
				}
		} else {
			for (auto &n : inject_names)
				if (w == n.name) {
					found = true;
					mask |= n.bit;
				}
		}
		if (!found) {
			fprintf(stderr, "sroce_integrity: unknown %s '%s'\n", ops ? "op" : "fault",
				w.c_str());
			exit(2);
		}
		if (c == std::string::npos)
			break;
		pos = c + 1;
	}
	return mask;
}

} // namespace

int main(int argc, char **argv)
{
	enum {
		O_OPS = 256, O_SEED, O_MAX_SIZE, O_RANDOM, O_MAX_BYTES, O_QUICK, O_INJECT,
		O_TIMEOUT, O_RETRY, O_RNR_RETRY, O_MIN_RNR, O_FLOW_LABEL, O_SECONDS,
		O_STOP_FILE, O_ODP, O_CHURN, O_XRC,
	};
	static const option longopts[] = {
		{"server", no_argument, nullptr, 's'},
		{"client", required_argument, nullptr, 'c'},
		{"port", required_argument, nullptr, 'p'},
		{"dev", required_argument, nullptr, 'd'},
		{"ib-port", required_argument, nullptr, 'i'},
		{"gid-index", required_argument, nullptr, 'g'},
		{"mtu", required_argument, nullptr, 'm'},
		{"iterations", required_argument, nullptr, 'n'},
		{"depth", required_argument, nullptr, 'q'},
		{"wait", required_argument, nullptr, 'w'},
		{"verbose", no_argument, nullptr, 'v'},
		{"help", no_argument, nullptr, 'h'},
		{"ops", required_argument, nullptr, O_OPS},
		{"seed", required_argument, nullptr, O_SEED},
		{"max-size", required_argument, nullptr, O_MAX_SIZE},
		{"random", required_argument, nullptr, O_RANDOM},
		{"max-bytes", required_argument, nullptr, O_MAX_BYTES},
		{"quick", no_argument, nullptr, O_QUICK},
		{"seconds", required_argument, nullptr, O_SECONDS},
		{"stop-file", required_argument, nullptr, O_STOP_FILE},
		{"inject", required_argument, nullptr, O_INJECT},
		{"timeout", required_argument, nullptr, O_TIMEOUT},
		{"retry-cnt", required_argument, nullptr, O_RETRY},
		{"rnr-retry", required_argument, nullptr, O_RNR_RETRY},
		{"min-rnr-timer", required_argument, nullptr, O_MIN_RNR},
		{"flow-label", required_argument, nullptr, O_FLOW_LABEL},
		{"odp", no_argument, nullptr, O_ODP},
		{"xrc", no_argument, nullptr, O_XRC},
		{"churn", no_argument, nullptr, O_CHURN},
		{nullptr, 0, nullptr, 0},
	};
	options &o = S.o;
	int c;
	while ((c = getopt_long(argc, argv, "sc:p:d:i:g:m:n:q:w:vh", longopts, nullptr)) != -1) {
		switch (c) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'd': o.dev = optarg; break;
		case 'i': o.ib_port = atoi(optarg); break;
		case 'g': o.gid_index = atoi(optarg); break;
		case 'm': o.mtu = atoi(optarg); break;
		case 'n': o.passes = atoi(optarg); break;
		case 'q': o.depth = atoi(optarg); break;
		case 'w': o.wait_s = atoi(optarg); break;
		case 'v': o.verbose = true; break;
		case 'h': usage(stdout); return 0;
		case O_OPS: parse_list(optarg, true); break;
		case O_SEED: o.seed = strtoull(optarg, nullptr, 0); o.seed_set = true; break;
		case O_MAX_SIZE: o.max_size = parse_size(optarg); o.max_size_set = true; break;
		case O_RANDOM: o.nrandom = atoi(optarg); o.nrandom_set = true; break;
		case O_MAX_BYTES: o.max_bytes = parse_size(optarg); break;
		case O_QUICK: o.quick = true; break;
		case O_SECONDS: o.seconds = atoi(optarg); break;
		case O_STOP_FILE: o.stop_file = optarg; break;
		case O_INJECT: o.inject = parse_list(optarg, false); break;
		case O_TIMEOUT: o.timeout = atoi(optarg); break;
		case O_RETRY: o.retry_cnt = atoi(optarg); break;
		case O_RNR_RETRY: o.rnr_retry = atoi(optarg); break;
		case O_MIN_RNR: o.min_rnr_timer = atoi(optarg); break;
		case O_FLOW_LABEL: o.flow_label = strtoul(optarg, nullptr, 0); break;
		case O_ODP: o.odp = true; break;
		case O_XRC: o.xrc = true; break;
		case O_CHURN: o.odp = o.churn = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (o.server == !!o.host || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.mtu && o.mtu != 256 && o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 &&
	    o.mtu != 4096) {
		fprintf(stderr, "sroce_integrity: -m must be 256, 512, 1024, 2048 or 4096\n");
		return 2;
	}
	if (!o.depth || o.depth > 4096 || !o.passes || o.wait_s <= 0 || !o.max_size ||
	    o.max_size > (1ULL << 31) - 1 || o.timeout < 0 || o.timeout > 31 || o.retry_cnt < 0 ||
	    o.retry_cnt > 7 || o.rnr_retry < 0 || o.rnr_retry > 7 || o.min_rnr_timer < 0 ||
	    o.min_rnr_timer > 31) {
		fprintf(stderr, "sroce_integrity: option out of range\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, nullptr, _IOLBF, 0);
	g_server = o.server;
	g_role = o.server ? "server" : "client";
	open_dev();
	int rc;
	if (o.server) {
		rc = run_server();
	} else {
		if (o.quick) {
			if (!o.max_size_set)
				o.max_size = 128 * KiB;
			if (!o.nrandom_set)
				o.nrandom = 8;
		}
		if (o.ops.empty())
			for (uint32_t k = 0; k < OP_COUNT; k++)
				o.ops.push_back(k);
		if (!o.seed_set)
			o.seed = (uint32_t)mix64(time(nullptr) ^ ((uint64_t)getpid() << 32));
		S.p.seed = o.seed;
		S.p.max_size = o.max_size;
		S.p.max_bytes = o.max_bytes;
		S.p.nops = o.ops.size();
		for (uint32_t k = 0; k < S.p.nops; k++)
			S.p.ops[k] = o.ops[k];
		S.p.passes = o.passes;
		S.p.nrandom = o.nrandom;
		S.p.depth = o.depth;
		S.p.path_mtu = o.mtu;
		S.p.inject = o.inject;
		rc = run_client();
	}
	if (o.churn)
		tap::check(S.churns > 0 && !S.churn_compact_errors,
			   "%s: %llu forks and compactions under the ODP MRs (%llu compactions "
			   "refused)", g_role, (unsigned long long)S.churns.load(),
			   (unsigned long long)S.churn_compact_errors.load());
	int st = tap::done("sroce_integrity");
	final_line();
	return rc || st || g_st.errors || g_peer.errors ? 1 : 0;
}
