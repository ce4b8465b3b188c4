// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_xrc - XRC (IBTA A14, extended reliable connections) through
// libibverbs only. One process opens two devices (RDMA devices are visible
// from every network namespace in the "shared" netns mode): A holds the
// initiators (XRC_SEND QPs), B the XRC domain, its SRQs and the targets
// (XRC_RECV QPs). A helper process, forked before any device is opened,
// is the second user of the shared XRC domain.
//
//   sroce_xrc -a DEV_A -A GID_A -b DEV_B -B GID_B [-f XRCD_FILE] [-m MTU]
//             [-w SECONDS] [--inject data] [-v]
//
// -f names the file the XRC domain is opened on (default: a new file
// /tmp/sroce_xrc.XXXXXX, removed at the end); -m the path MTU (default
// 1024, at most the ports' active MTU). Every point asserts completions
// (wr_id, status, opcode, byte_len, qp_num, immediate), the bytes of every
// buffer involved (each MR compared in full against what it must hold),
// errnos, QP states or hw counters:
//
//   caps      IBV_DEVICE_XRC in both devices' device_cap_flags
//   domain    an XRC domain on the file (O_CREAT); two XRC SRQs in it,
//             each with its own PD and CQ, distinct non-zero numbers
//             (ibv_get_srq_num); XRC_RECV (only the XRCD) on B, XRC_SEND
//             on A, INIT/RTR/RTS as ibv_xsrq_pingpong does
//   traffic   once through ibv_post_send (wr.qp_type.xrc.remote_srqn),
//             once through the ibv_wr_* API (ibv_wr_set_xrc_srqn): SENDs
//             of 1, 4096 and 65536 bytes naming SRQ A then SRQ B, each in
//             its SRQ's buffer, on its CQ, qp_num the XRC_RECV QP's; SEND
//             with immediate; RDMA WRITE (and with immediate: a receive of
//             the named SRQ consumed, its buffer untouched) and READ into
//             and from MRs of the named SRQ's PD; FETCH_ADD and CMP_SWAP
//             (hit and miss); an ibv_wr_* SEND without an SRQ number is
//             refused at ibv_wr_complete
//   posting   ibv_post_send / ibv_post_recv on the XRC_RECV QP and
//             ibv_post_recv on the XRC_SEND QP fail with EINVAL, nothing
//             breaks
//   naks      a SEND naming an SRQ of another XRC domain, a number that is
//             no SRQ, a basic SRQ's number: IBV_WC_REM_INV_REQ_ERR, the
//             initiator in ERR and its next WR flushed, nothing in any
//             SRQ (CQs empty, buffers unchanged), B's error_nak_sent and
//             A's error_nak_received +1; a WRITE (READ) naming one SRQ
//             with the rkey of an MR in the other SRQ's PD:
//             IBV_WC_REM_ACCESS_ERR, memory unchanged
//   close     ib_core's rules for ibv_close_xrcd: EBUSY while this
//             process has an SRQ or target QP in the domain (fd -1 or
//             file), the domain unharmed; 0 once they are gone
//   sharing   the helper opens the file's domain (no O_CREAT), the target
//             QP by number (ibv_open_qp) and an XRC SRQ of its own, and
//             receives a SEND naming it; this process then closes the
//             domain (0) and a SEND still reaches the helper's SRQ through
//             the target QP it alone holds now; the helper closes all
//             (0 each); after that the domain and the target QP are gone
//             (the file without O_CREAT: EAGAIN; ibv_open_qp: EINVAL)
//   cleanup   every object destroyed without an error
//
// The hw counters in /sys/class/infiniband/DEV/ports/1/hw_counters are
// sroce's (error_nak_sent, error_nak_received). No completion is waited
// for longer than -w seconds (default 10). --inject data expects another
// pattern in SRQ A's SENDs, to see the data checks fail. TAP on stdout;
// the exit status is 1 if any point failed.
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr size_t PAGE = 4096;
constexpr int REMOTE = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
// A target buffer: receive slots, an RDMA area, atomic words.
constexpr size_t SLOT = 65536;
constexpr size_t NSLOTS = 8;
constexpr size_t RDMA_OFF = NSLOTS * SLOT;
constexpr size_t RDMA_LEN = 65536;
constexpr size_t ATOMIC_OFF = RDMA_OFF + RDMA_LEN;
constexpr size_t TARGET_LEN = ATOMIC_OFF + PAGE;
// The initiator's buffer: what it sends, what READs bring, atomic results.
constexpr size_t SRC_OFF = 0;
constexpr size_t READ_OFF = 65536;
constexpr size_t RES_OFF = 2 * 65536;
constexpr size_t LOCAL_LEN = RES_OFF + PAGE;
// An XRCETH carries 24 bits; sroce numbers SRQs from 1 to 4095.
constexpr uint32_t NO_SRQ = 0xabcdef;

double g_wait = 10;
bool g_verbose;
bool g_is_helper;		// the forked helper: no output of its own
bool g_inject;
const char *g_file;
uint32_t g_mtu_bytes = 1024;
ibv_mtu g_mtu = IBV_MTU_1024;

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ---- one TAP point: failures collected, reported at once ------------------

struct point {
	std::vector<std::string> why;

	__attribute__((format(printf, 2, 3))) void fail(const char *fmt, ...)
	{
		char b[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b, sizeof(b), fmt, ap);
		va_end(ap);
		why.emplace_back(b);
	}

	bool ok() const { return why.empty(); }

	std::string joined() const
	{
		std::string s;
		for (auto &w : why)
			s += (s.empty() ? "" : "; ") + w;
		return s;
	}

	__attribute__((format(printf, 2, 3))) bool report(const char *fmt, ...)
	{
		char b[512];
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

// A verbs call's status: libibverbs returns an errno, or -1 with errno set.
int err_of(int r)
{
	return r == -1 ? errno : r;
}

// ---- devices ----------------------------------------------------------------

struct dev {
	const char *name = nullptr;
	int gid_index = -1;
	ibv_context *ctx = nullptr;
	ibv_device_attr da = {};
	ibv_port_attr port = {};
	ibv_gid gid = {};
};

dev A, B;

bool open_dev(dev &d)
{
	d.ctx = open_device_by_name(d.name);
	if (!tap::check(d.ctx, "open %s", d.name))
		return false;
	bool ok = !ibv_query_device(d.ctx, &d.da) && !ibv_query_port(d.ctx, 1, &d.port) &&
		  !ibv_query_gid(d.ctx, 1, d.gid_index, &d.gid);
	static const uint8_t zero[16] = {};
	ok = ok && memcmp(d.gid.raw, zero, 16) && d.port.state == IBV_PORT_ACTIVE;
	return tap::check(ok, "%s: port 1 ACTIVE (active MTU %d), GID %d set", d.name,
			  128 << d.port.active_mtu, d.gid_index);
}

// A hw counter of port 1, or -1 when there is none by that name. ib_core
// answers from a copy up to 10 ms old: wait that out.
long long counter(const dev &d, const char *name)
{
	usleep(25000);
	return read_hw_counter(d.name, name);
}

struct delta {
	const dev *d;
	const char *name;
	long long before;
	delta(const dev &dv, const char *n) : d(&dv), name(n), before(counter(dv, n)) {}
	void expect(point &P, long long want) const
	{
		long long after = counter(*d, name);
		if (before < 0 || after < 0)
			P.fail("%s has no hw counter %s", d->name, name);
		else if (after - before != want)
			P.fail("%s %s grew by %lld, expected %lld", d->name, name, after - before,
			       want);
		else if (g_verbose)
			tap::diag("%s %s +%lld", d->name, name, after - before);
	}
};

// ---- memory -----------------------------------------------------------------

void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 0x9e3779b9u;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = static_cast<uint8_t>(x >> 7);
	}
}

uint32_t g_seed = 100;

// A registered buffer and what each of its bytes must hold (ref).
struct region {
	const char *name = "";
	uint8_t *mem = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> ref;

	uint64_t addr(size_t off) const { return reinterpret_cast<uintptr_t>(mem) + off; }
	uint32_t lkey() const { return mr ? mr->lkey : 0; }
	uint32_t rkey() const { return mr ? mr->rkey : 0; }
	// The bytes at @off must hold @src from now on.
	void expect(size_t off, const void *src, size_t n) { memcpy(ref.data() + off, src, n); }
	// Write a new pattern at @off (this process's own store).
	void fill(size_t off, size_t n, uint32_t seed)
	{
		pattern(mem + off, n, seed);
		memcpy(ref.data() + off, mem + off, n);
	}
};

bool region_make(point &P, region &r, const char *name, ibv_pd *pd, size_t len, int access)
{
	r.name = name;
	r.len = len;
	r.mem = static_cast<uint8_t *>(aligned_alloc(PAGE, (len + PAGE - 1) / PAGE * PAGE));
	if (!r.mem) {
		P.fail("%s: out of memory", name);
		return false;
	}
	pattern(r.mem, len, g_seed++);
	r.ref.assign(r.mem, r.mem + len);
	r.mr = ibv_reg_mr(pd, r.mem, len, access);
	if (!r.mr)
		P.fail("%s: ibv_reg_mr(%zu bytes, access 0x%x): %s", name, len, access,
		       strerror(errno));
	return r.mr != nullptr;
}

// Every byte holds what ref says.
void region_check(point &P, const region &r)
{
	size_t ndiff = 0, first = 0;
	for (size_t i = 0; i < r.len; i++)
		if (r.mem[i] != r.ref[i] && !ndiff++)
			first = i;
	if (ndiff)
		P.fail("%s: %zu byte(s) differ, first at offset %zu: expected 0x%02x got 0x%02x",
		       r.name, ndiff, first, r.ref[first], r.mem[first]);
}

// ---- completions ------------------------------------------------------------

const char *wc_opcode_name(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

// Up to @n completions of @cq within @wait seconds.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, double wait)
{
	std::vector<ibv_wc> got;
	double end = now() + wait;
	while (got.size() < n) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, static_cast<int>(std::min<size_t>(16, n - got.size())), wc);
		if (k < 0)
			break;
		got.insert(got.end(), wc, wc + k);
		if (k == 0) {
			if (now() > end)
				break;
			usleep(200);
		}
	}
	return got;
}

struct want {
	uint64_t wr_id = 0;
	ibv_wc_status status = IBV_WC_SUCCESS;
	int opcode = -1;	// on success only
	int64_t len = -1;	// byte_len, on success only
	int64_t imm = -1;	// IBV_WC_WITH_IMM and this immediate (host order)
};

// The next completions of @cq are exactly @w, in order, for QP @qpn, and
// nothing follows.
void expect_wcs(point &P, const char *who, ibv_cq *cq, uint32_t qpn, const std::vector<want> &w)
{
	auto got = poll_n(cq, w.size(), g_wait);
	if (got.size() < w.size())
		P.fail("%s: %zu of %zu completion(s) within %g s", who, got.size(), w.size(),
		       g_wait);
	for (size_t i = 0; i < got.size(); i++) {
		const ibv_wc &g = got[i];
		const want &x = w[i];
		bool bad = g.wr_id != x.wr_id || g.qp_num != qpn || g.status != x.status;
		if (g.status == IBV_WC_SUCCESS && x.status == IBV_WC_SUCCESS) {
			bad |= x.opcode >= 0 && g.opcode != x.opcode;
			bad |= x.len >= 0 && g.byte_len != static_cast<uint64_t>(x.len);
			bool has_imm = g.wc_flags & IBV_WC_WITH_IMM;
			if (x.imm >= 0)
				bad |= !has_imm || be32toh(g.imm_data) != static_cast<uint32_t>(x.imm);
			else
				bad |= has_imm;
		}
		if ((bad || g_verbose) && !g_is_helper)
			tap::diag("%s completion %zu: wr_id 0x%llx %s (%d) qp %u opcode %s byte_len %u flags 0x%x imm 0x%x",
				  who, i + 1, static_cast<unsigned long long>(g.wr_id),
				  ibv_wc_status_str(g.status), g.status, g.qp_num,
				  wc_opcode_name(g.opcode), g.byte_len, g.wc_flags,
				  be32toh(g.imm_data));
		if (bad)
			P.fail("%s completion %zu: expected wr_id 0x%llx %s qp %u%s%s%s%s%s", who,
			       i + 1, static_cast<unsigned long long>(x.wr_id),
			       ibv_wc_status_str(x.status), qpn,
			       x.opcode >= 0 ? " opcode " : "",
			       x.opcode >= 0 ? wc_opcode_name(x.opcode) : "",
			       x.len >= 0 ? " byte_len " : "",
			       x.len >= 0 ? std::to_string(x.len).c_str() : "",
			       x.imm >= 0 ? " with immediate" : "");
	}
	for (auto &g : poll_n(cq, 8, 0.005))
		P.fail("%s: unexpected completion wr_id 0x%llx %s qp %u", who,
		       static_cast<unsigned long long>(g.wr_id), ibv_wc_status_str(g.status),
		       g.qp_num);
}

// Nothing arrives on @cq for @ms milliseconds.
void expect_empty(point &P, const char *who, ibv_cq *cq, int ms = 100)
{
	for (auto &g : poll_n(cq, 8, ms / 1000.0))
		P.fail("%s: unexpected completion wr_id 0x%llx %s qp %u opcode %s byte_len %u", who,
		       static_cast<unsigned long long>(g.wr_id), ibv_wc_status_str(g.status),
		       g.qp_num, wc_opcode_name(g.opcode), g.byte_len);
}

const char *state_name(int s)
{
	static const char *const n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return s >= 0 && s <= IBV_QPS_ERR ? n[s] : "?";
}

void expect_state(point &P, const char *who, ibv_qp *qp, ibv_qp_state want_state)
{
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	int s = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : a.qp_state;
	if (s != want_state)
		P.fail("%s QP is in %s (%d), expected %s", who, state_name(s), s,
		       state_name(want_state));
}

// ---- XRC SRQs -----------------------------------------------------------------

// An SRQ (XRC or basic) of B, its CQ, the buffer its receives land in and
// the wr_ids it holds in posting order (an SRQ hands them out FIFO).
struct xsrq {
	const char *name = "";
	uint32_t tag = 0;		// wr_id = tag << 16 | slot
	ibv_srq *srq = nullptr;
	ibv_cq *cq = nullptr;
	region *buf = nullptr;
	uint32_t num = 0;
	std::deque<uint64_t> posted;
	uint32_t next = 0;
};

// An XRC SRQ in @xrcd with its own CQ on @ctx, receives into @buf (@pd).
bool xsrq_make(point &P, xsrq &q, const char *name, uint32_t tag, ibv_context *ctx,
	       ibv_xrcd *xrcd, ibv_pd *pd, region *buf)
{
	q.name = name;
	q.tag = tag;
	q.buf = buf;
	q.cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
	if (!q.cq) {
		P.fail("%s: ibv_create_cq: %s", name, strerror(errno));
		return false;
	}
	ibv_srq_init_attr_ex sa = {};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		       IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = q.cq;
	sa.pd = pd;
	q.srq = ibv_create_srq_ex(ctx, &sa);
	if (!q.srq) {
		P.fail("%s: ibv_create_srq_ex(IBV_SRQT_XRC): %s", name, strerror(errno));
		return false;
	}
	int r = ibv_get_srq_num(q.srq, &q.num);
	if (r) {
		P.fail("%s: ibv_get_srq_num: %s", name, strerror(r));
		return false;
	}
	return true;
}

// One receive of a whole slot; the slot is the next one round the buffer.
bool xsrq_post(point &P, xsrq &q)
{
	uint32_t slot = q.next++ % NSLOTS;
	ibv_sge sge = {q.buf->addr(slot * SLOT), static_cast<uint32_t>(SLOT), q.buf->lkey()};
	ibv_recv_wr wr = {};
	ibv_recv_wr *bad = nullptr;
	wr.wr_id = static_cast<uint64_t>(q.tag) << 16 | slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int r = ibv_post_srq_recv(q.srq, &wr, &bad);
	if (r) {
		P.fail("%s: ibv_post_srq_recv: %s", q.name, strerror(r));
		return false;
	}
	q.posted.push_back(wr.wr_id);
	return true;
}

// The receive @q handed out next completes on its CQ for QP @qpn: opcode,
// byte_len, immediate; the bytes it received must be @data (which the
// caller lays out; null: the slot stays as it was, WRITE with immediate).
void expect_recv(point &P, xsrq &q, uint32_t qpn, int opcode, uint32_t len, const void *data,
		 int64_t imm = -1)
{
	if (q.posted.empty()) {
		P.fail("%s: no receive posted", q.name);
		return;
	}
	uint64_t id = q.posted.front();
	q.posted.pop_front();
	want w;
	w.wr_id = id;
	w.opcode = opcode;
	w.len = len;
	w.imm = imm;
	expect_wcs(P, q.name, q.cq, qpn, {w});
	if (data)
		q.buf->expect((id & 0xffff) * SLOT, data, len);
}

// Destroy the SRQ and its CQ; the first error, 0 if none.
int xsrq_free(xsrq &q)
{
	int e = 0, r;
	if (q.srq && (r = err_of(ibv_destroy_srq(q.srq))))
		e = r;
	if (q.cq && (r = err_of(ibv_destroy_cq(q.cq))) && !e)
		e = r;
	q.srq = nullptr;
	q.cq = nullptr;
	q.posted.clear();
	return e;
}

// ---- the shared state -----------------------------------------------------------

ibv_pd *pd_a;			// A: the initiators' PD
ibv_pd *pd1, *pd2;		// B: SRQ A's and SRQ B's
region loc;			// A, pd_a
region buf1, buf2;		// B, pd1 and pd2
int xfd = -1;			// the file of domain X
ibv_xrcd *X;			// B: the domain on the file
xsrq sA, sB;			// B: XRC SRQs of X in pd1 and pd2
std::vector<std::string> cleanup_errors;

void destroyed(int r, const char *what)
{
	if (r) {
		char b[256];
		snprintf(b, sizeof(b), "%s: %s", what, strerror(r));
		cleanup_errors.emplace_back(b);
	}
}

// ---- XRC QP pairs -----------------------------------------------------------------

constexpr uint64_t SEND_OPS = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

// An XRC_SEND QP on A (its own send CQ) connected to an XRC_RECV QP on B.
struct xpair {
	ibv_cq *cq = nullptr;
	ibv_qp *ini = nullptr;
	ibv_qp_ex *qpx = nullptr;	// made with send_ops_flags
	ibv_qp *tgt = nullptr;
	uint32_t ini_qpn = 0, tgt_qpn = 0;
};

uint32_t g_psn = 0x1000;

int modify(ibv_qp *qp, ibv_qp_attr &a, int mask)
{
	return ibv_modify_qp(qp, &a, mask);
}

bool pair_make(point &P, xpair &p, ibv_xrcd *xrcd, bool wr_api)
{
	p.cq = ibv_create_cq(A.ctx, 64, nullptr, nullptr, 0);
	if (!p.cq) {
		P.fail("%s: ibv_create_cq: %s", A.name, strerror(errno));
		return false;
	}
	ibv_qp_init_attr_ex x = {};
	x.qp_type = IBV_QPT_XRC_SEND;
	x.send_cq = p.cq;
	x.cap.max_send_wr = 64;
	x.cap.max_send_sge = 1;
	x.comp_mask = IBV_QP_INIT_ATTR_PD;
	x.pd = pd_a;
	if (wr_api) {
		x.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		x.send_ops_flags = SEND_OPS;
	}
	p.ini = ibv_create_qp_ex(A.ctx, &x);
	if (!p.ini) {
		P.fail("%s: ibv_create_qp_ex(IBV_QPT_XRC_SEND%s): %s", A.name,
		       wr_api ? ", send_ops_flags" : "", strerror(errno));
		return false;
	}
	p.ini_qpn = p.ini->qp_num;
	if (wr_api) {
		p.qpx = ibv_qp_to_qp_ex(p.ini);
		if (!p.qpx) {
			P.fail("ibv_qp_to_qp_ex of the XRC_SEND QP: NULL");
			return false;
		}
	}
	ibv_qp_init_attr_ex t = {};
	t.qp_type = IBV_QPT_XRC_RECV;
	t.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	t.xrcd = xrcd;
	p.tgt = ibv_create_qp_ex(B.ctx, &t);
	if (!p.tgt) {
		P.fail("%s: ibv_create_qp_ex(IBV_QPT_XRC_RECV): %s", B.name, strerror(errno));
		return false;
	}
	p.tgt_qpn = p.tgt->qp_num;
	uint32_t psn_it = g_psn++ & 0xffffff, psn_ti = (g_psn++ * 7) & 0xffffff;

	// The target: INIT, RTR, RTS (no retry counts, no read credits).
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	int r = modify(p.tgt, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
	if (!r) {
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = g_mtu;
		a.dest_qp_num = p.ini_qpn;
		a.rq_psn = psn_it;
		a.max_dest_rd_atomic = std::clamp(B.da.max_qp_rd_atom, 1, 16);
		a.min_rnr_timer = 12;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = A.gid;
		a.ah_attr.grh.sgid_index = B.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		r = modify(p.tgt, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	}
	if (!r) {
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.sq_psn = psn_ti;
		r = modify(p.tgt, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
	}
	if (r) {
		P.fail("connect the XRC_RECV QP %u: ibv_modify_qp: %s", p.tgt_qpn, strerror(r));
		return false;
	}

	// The initiator: INIT, RTR (no receive side), RTS.
	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	r = modify(p.ini, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
	if (!r) {
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = g_mtu;
		a.dest_qp_num = p.tgt_qpn;
		a.rq_psn = psn_ti;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = B.gid;
		a.ah_attr.grh.sgid_index = A.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		r = modify(p.ini, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	}
	if (!r) {
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = psn_it;
		a.max_rd_atomic = std::clamp(std::min(A.da.max_qp_init_rd_atom,
						      B.da.max_qp_rd_atom), 1, 16);
		r = modify(p.ini, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (r) {
		P.fail("connect the XRC_SEND QP %u: ibv_modify_qp: %s", p.ini_qpn, strerror(r));
		return false;
	}
	return true;
}

// Destroy what is left of @p; the first error, 0 if none.
int pair_free(xpair &p)
{
	int e = 0, r;
	if (p.tgt && (r = err_of(ibv_destroy_qp(p.tgt))) && !e)
		e = r;
	if (p.ini && (r = err_of(ibv_destroy_qp(p.ini))) && !e)
		e = r;
	if (p.cq && (r = err_of(ibv_destroy_cq(p.cq))) && !e)
		e = r;
	p = xpair();
	return e;
}

// ---- posting ------------------------------------------------------------------------

struct op {
	ibv_wr_opcode opcode = IBV_WR_SEND;
	uint64_t wr_id = 0;
	uint32_t srqn = 0;
	bool no_srqn = false;	// ibv_wr_*: leave ibv_wr_set_xrc_srqn out
	uint64_t laddr = 0;
	uint32_t lkey = 0;
	uint32_t len = 0;
	uint64_t raddr = 0;
	uint32_t rkey = 0;
	uint64_t add = 0;	// FETCH_ADD's add, CMP_SWAP's compare
	uint64_t swap = 0;
	uint32_t imm = 0;	// host order
};

uint64_t g_wr_id = 0x100;

// One signaled WR through ibv_post_send or (@wr_api) the ibv_wr_* API;
// 0 or an errno.
int post_op(xpair &p, bool wr_api, const op &o)
{
	if (!wr_api) {
		ibv_sge sge = {o.laddr, o.len, o.lkey};
		ibv_send_wr wr = {};
		ibv_send_wr *bad = nullptr;
		wr.wr_id = o.wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = o.opcode;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(o.imm);
		wr.qp_type.xrc.remote_srqn = o.srqn;
		switch (o.opcode) {
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			wr.wr.atomic.remote_addr = o.raddr;
			wr.wr.atomic.rkey = o.rkey;
			wr.wr.atomic.compare_add = o.add;
			wr.wr.atomic.swap = o.swap;
			break;
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			wr.wr.rdma.remote_addr = o.raddr;
			wr.wr.rdma.rkey = o.rkey;
			break;
		default:
			break;
		}
		return err_of(ibv_post_send(p.ini, &wr, &bad));
	}
	ibv_qp_ex *x = p.qpx;
	ibv_wr_start(x);
	x->wr_id = o.wr_id;
	x->wr_flags = IBV_SEND_SIGNALED;
	switch (o.opcode) {
	case IBV_WR_SEND: ibv_wr_send(x); break;
	case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(x, htobe32(o.imm)); break;
	case IBV_WR_RDMA_WRITE: ibv_wr_rdma_write(x, o.rkey, o.raddr); break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, o.rkey, o.raddr, htobe32(o.imm));
		break;
	case IBV_WR_RDMA_READ: ibv_wr_rdma_read(x, o.rkey, o.raddr); break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, o.rkey, o.raddr, o.add);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(x, o.rkey, o.raddr, o.add, o.swap);
		break;
	default:
		ibv_wr_abort(x);
		return EINVAL;
	}
	if (!o.no_srqn)
		ibv_wr_set_xrc_srqn(x, o.srqn);
	ibv_wr_set_sge(x, o.lkey, o.laddr, o.len);
	return err_of(ibv_wr_complete(x));
}

const char *api_name(bool wr_api)
{
	return wr_api ? "ibv_wr_*" : "ibv_post_send";
}

void posted(point &P, int r, const char *what)
{
	if (r)
		P.fail("posting %s failed: %s", what, strerror(r));
}

// A SEND of @len bytes of a new pattern from loc, naming @q; completes
// at the initiator and lands in @q's next receive.
void send_one(point &P, xpair &p, bool wr_api, xsrq &q, uint32_t len, bool inject = false)
{
	uint32_t seed = g_seed++;
	loc.fill(SRC_OFF, len, seed);
	op o;
	o.wr_id = g_wr_id++;
	o.srqn = q.num;
	o.laddr = loc.addr(SRC_OFF);
	o.lkey = loc.lkey();
	o.len = len;
	posted(P, post_op(p, wr_api, o), "SEND");
	want w;
	w.wr_id = o.wr_id;
	w.opcode = IBV_WC_SEND;
	expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
	std::vector<uint8_t> data(len);
	pattern(data.data(), len, inject ? seed + 1 : seed);
	expect_recv(P, q, p.tgt_qpn, IBV_WC_RECV, len, data.data());
}

// ---- traffic --------------------------------------------------------------------------

void test_sends(xpair &p, bool wr_api, uint32_t len)
{
	point P;
	for (xsrq *q : {&sA, &sB}) {
		xsrq &other = q == &sA ? sB : sA;
		if (!xsrq_post(P, *q))
			break;
		send_one(P, p, wr_api, *q, len, g_inject && q == &sA);
		expect_empty(P, other.name, other.cq, 20);
	}
	region_check(P, buf1);
	region_check(P, buf2);
	P.report("%s: SEND %u B naming SRQ A, then SRQ B: each in its own SRQ's buffer byte "
		 "for byte, on its CQ only, byte_len %u, qp_num the XRC_RECV QP's",
		 api_name(wr_api), len, len);
}

void test_send_imm(xpair &p, bool wr_api)
{
	point P;
	uint32_t len = 3000, imm = 0xc0ffee00u | (wr_api ? 1 : 0), seed = g_seed++;
	if (xsrq_post(P, sB)) {
		loc.fill(SRC_OFF, len, seed);
		op o;
		o.opcode = IBV_WR_SEND_WITH_IMM;
		o.wr_id = g_wr_id++;
		o.srqn = sB.num;
		o.laddr = loc.addr(SRC_OFF);
		o.lkey = loc.lkey();
		o.len = len;
		o.imm = imm;
		posted(P, post_op(p, wr_api, o), "SEND with immediate");
		want w;
		w.wr_id = o.wr_id;
		w.opcode = IBV_WC_SEND;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
		expect_recv(P, sB, p.tgt_qpn, IBV_WC_RECV, len, loc.mem + SRC_OFF, imm);
		expect_empty(P, sA.name, sA.cq, 20);
	}
	region_check(P, buf1);
	region_check(P, buf2);
	P.report("%s: SEND with immediate 0x%x naming SRQ B: the immediate and %u bytes on "
		 "SRQ B's CQ", api_name(wr_api), imm, len);
}

// WRITE into each SRQ's PD naming that SRQ; WRITE with immediate (consumes
// a receive of the named SRQ, writes nothing into it); READ back.
void test_rdma(xpair &p, bool wr_api)
{
	point P, Pi, Pr;
	struct {
		xsrq *q;
		region *buf;
		uint32_t len;
	} writes[] = {{&sA, &buf1, 65536}, {&sB, &buf2, 4096}};
	for (auto &w : writes) {
		uint32_t seed = g_seed++;
		loc.fill(SRC_OFF, w.len, seed);
		op o;
		o.opcode = IBV_WR_RDMA_WRITE;
		o.wr_id = g_wr_id++;
		o.srqn = w.q->num;
		o.laddr = loc.addr(SRC_OFF);
		o.lkey = loc.lkey();
		o.len = w.len;
		o.raddr = w.buf->addr(RDMA_OFF);
		o.rkey = w.buf->rkey();
		posted(P, post_op(p, wr_api, o), "RDMA WRITE");
		want x;
		x.wr_id = o.wr_id;
		x.opcode = IBV_WC_RDMA_WRITE;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {x});
		w.buf->expect(RDMA_OFF, loc.mem + SRC_OFF, w.len);
	}
	expect_empty(P, sA.name, sA.cq, 20);
	expect_empty(P, sB.name, sB.cq, 20);
	region_check(P, buf1);
	region_check(P, buf2);
	P.report("%s: RDMA WRITE 65536 B naming SRQ A into an MR of its PD, 4096 B naming SRQ "
		 "B into one of its PD: every byte in place, no receive consumed",
		 api_name(wr_api));

	// WRITE with immediate naming SRQ A.
	uint32_t imm = 0x5eed0000u | (wr_api ? 1 : 0), len = 5000;
	if (xsrq_post(Pi, sA)) {
		loc.fill(SRC_OFF, len, g_seed++);
		op o;
		o.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		o.wr_id = g_wr_id++;
		o.srqn = sA.num;
		o.laddr = loc.addr(SRC_OFF);
		o.lkey = loc.lkey();
		o.len = len;
		o.raddr = buf1.addr(RDMA_OFF + 100);
		o.rkey = buf1.rkey();
		o.imm = imm;
		posted(Pi, post_op(p, wr_api, o), "RDMA WRITE with immediate");
		want x;
		x.wr_id = o.wr_id;
		x.opcode = IBV_WC_RDMA_WRITE;
		expect_wcs(Pi, "initiator", p.cq, p.ini_qpn, {x});
		buf1.expect(RDMA_OFF + 100, loc.mem + SRC_OFF, len);
		expect_recv(Pi, sA, p.tgt_qpn, IBV_WC_RECV_RDMA_WITH_IMM, len, nullptr, imm);
		expect_empty(Pi, sB.name, sB.cq, 20);
	}
	region_check(Pi, buf1);
	region_check(Pi, buf2);
	Pi.report("%s: RDMA WRITE with immediate 0x%x naming SRQ A: the data in place, "
		  "RECV_RDMA_WITH_IMM on SRQ A's CQ, its receive buffer untouched",
		  api_name(wr_api), imm);

	// READ 65536 B naming SRQ B from its PD's MR.
	buf2.fill(RDMA_OFF, 65536, g_seed++);
	loc.fill(READ_OFF, 65536, g_seed++);
	op o;
	o.opcode = IBV_WR_RDMA_READ;
	o.wr_id = g_wr_id++;
	o.srqn = sB.num;
	o.laddr = loc.addr(READ_OFF);
	o.lkey = loc.lkey();
	o.len = 65536;
	o.raddr = buf2.addr(RDMA_OFF);
	o.rkey = buf2.rkey();
	posted(Pr, post_op(p, wr_api, o), "RDMA READ");
	want x;
	x.wr_id = o.wr_id;
	x.opcode = IBV_WC_RDMA_READ;
	x.len = 65536;
	expect_wcs(Pr, "initiator", p.cq, p.ini_qpn, {x});
	loc.expect(READ_OFF, buf2.mem + RDMA_OFF, 65536);
	region_check(Pr, loc);
	region_check(Pr, buf1);
	region_check(Pr, buf2);
	expect_empty(Pr, sB.name, sB.cq, 20);
	Pr.report("%s: RDMA READ 65536 B naming SRQ B from an MR of its PD: every byte",
		  api_name(wr_api));
}

void test_atomics(xpair &p, bool wr_api)
{
	point P;
	const size_t word = ATOMIC_OFF + 24;
	uint64_t v = 0x0123456789abcdefull ^ (wr_api ? 0xff : 0), add = 0x1111, swap =
		0xfeedfacecafebeefull, poison = 0xeeeeeeeeeeeeeeeeull;
	memcpy(buf1.mem + word, &v, 8);
	buf1.expect(word, &v, 8);
	struct step {
		ibv_wr_opcode opcode;
		uint64_t add, swap, old, after;
		int wc;
		const char *what;
	} steps[] = {
		{IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0, v, v + add, IBV_WC_FETCH_ADD, "FETCH_ADD"},
		{IBV_WR_ATOMIC_CMP_AND_SWP, v + add, swap, v + add, swap, IBV_WC_COMP_SWAP,
		 "CMP_SWAP hit"},
		{IBV_WR_ATOMIC_CMP_AND_SWP, v, 1, swap, swap, IBV_WC_COMP_SWAP, "CMP_SWAP miss"},
	};
	int i = 0;
	for (auto &s : steps) {
		size_t res = RES_OFF + 8 * i++;
		memcpy(loc.mem + res, &poison, 8);
		loc.expect(res, &poison, 8);
		op o;
		o.opcode = s.opcode;
		o.wr_id = g_wr_id++;
		o.srqn = sA.num;
		o.laddr = loc.addr(res);
		o.lkey = loc.lkey();
		o.len = 8;
		o.raddr = buf1.addr(word);
		o.rkey = buf1.rkey();
		o.add = s.add;
		o.swap = s.swap;
		posted(P, post_op(p, wr_api, o), s.what);
		want x;
		x.wr_id = o.wr_id;
		x.opcode = s.wc;
		x.len = 8;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {x});
		uint64_t got, now_word;
		memcpy(&got, loc.mem + res, 8);
		memcpy(&now_word, buf1.mem + word, 8);
		if (got != s.old)
			P.fail("%s returned 0x%016llx, the word held 0x%016llx", s.what,
			       static_cast<unsigned long long>(got),
			       static_cast<unsigned long long>(s.old));
		if (now_word != s.after)
			P.fail("after %s the word is 0x%016llx, expected 0x%016llx", s.what,
			       static_cast<unsigned long long>(now_word),
			       static_cast<unsigned long long>(s.after));
		loc.expect(res, &s.old, 8);
		buf1.expect(word, &s.after, 8);
	}
	region_check(P, loc);
	region_check(P, buf1);
	region_check(P, buf2);
	expect_empty(P, sA.name, sA.cq, 20);
	P.report("%s: FETCH_ADD, CMP_SWAP hit and miss naming SRQ A on a word of its PD's MR: "
		 "the old values returned, the word's new values, its neighbours unchanged",
		 api_name(wr_api));
}

// ibv_wr_* without ibv_wr_set_xrc_srqn: the WR has no target SRQ; the
// provider refuses it at ibv_wr_complete, sends nothing, and the QP goes on.
void test_wr_no_srqn(xpair &p)
{
	point P;
	uint32_t len = 512;
	if (xsrq_post(P, sA)) {
		loc.fill(SRC_OFF, len, g_seed++);
		op o;
		o.wr_id = g_wr_id++;
		o.no_srqn = true;
		o.laddr = loc.addr(SRC_OFF);
		o.lkey = loc.lkey();
		o.len = len;
		int r = post_op(p, true, o);
		if (r != EINVAL)
			P.fail("ibv_wr_complete of a SEND without ibv_wr_set_xrc_srqn: %s, "
			       "expected EINVAL", r ? strerror(r) : "success");
		expect_empty(P, "initiator", p.cq, 100);
		expect_empty(P, sA.name, sA.cq, 20);
		expect_empty(P, sB.name, sB.cq, 20);
		region_check(P, buf1);
		// Still in RTS and working: a proper SEND takes the receive.
		expect_state(P, "initiator", p.ini, IBV_QPS_RTS);
		send_one(P, p, true, sA, len);
		region_check(P, buf1);
	}
	P.report("ibv_wr_send without ibv_wr_set_xrc_srqn: ibv_wr_complete refuses it (EINVAL), "
		 "nothing sent; the QP stays in RTS and the next SEND arrives");
}

// Posting on the wrong half: XRC_RECV has no queues, XRC_SEND no receive side.
void test_wrong_posts(xpair &p)
{
	point P;
	ibv_sge sge = {loc.addr(SRC_OFF), 8, loc.lkey()};
	ibv_send_wr wr = {};
	ibv_send_wr *bad = nullptr;
	wr.wr_id = 0xbad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = sA.num;
	int r1 = err_of(ibv_post_send(p.tgt, &wr, &bad));
	if (r1 != EINVAL)
		P.fail("ibv_post_send on the XRC_RECV QP: %s, expected EINVAL",
		       r1 ? strerror(r1) : "success");
	else if (bad != &wr)
		P.fail("ibv_post_send on the XRC_RECV QP: bad_wr does not point at the WR");
	ibv_recv_wr rw = {};
	ibv_recv_wr *rbad = nullptr;
	rw.wr_id = 0xbad;
	rw.sg_list = &sge;
	rw.num_sge = 1;
	int r2 = err_of(ibv_post_recv(p.tgt, &rw, &rbad));
	if (r2 != EINVAL)
		P.fail("ibv_post_recv on the XRC_RECV QP: %s, expected EINVAL",
		       r2 ? strerror(r2) : "success");
	rbad = nullptr;
	int r3 = err_of(ibv_post_recv(p.ini, &rw, &rbad));
	if (r3 != EINVAL)
		P.fail("ibv_post_recv on the XRC_SEND QP: %s, expected EINVAL",
		       r3 ? strerror(r3) : "success");
	else if (rbad != &rw)
		P.fail("ibv_post_recv on the XRC_SEND QP: bad_wr does not point at the WR");
	expect_empty(P, "initiator", p.cq, 50);
	expect_empty(P, sA.name, sA.cq, 20);
	// Nothing broke: a SEND still arrives.
	if (xsrq_post(P, sA))
		send_one(P, p, false, sA, 100);
	region_check(P, buf1);
	P.report("ibv_post_send and ibv_post_recv on the XRC_RECV QP and ibv_post_recv on the "
		 "XRC_SEND QP fail with EINVAL, nothing completes; then a SEND works");
}

// ---- NAKs ------------------------------------------------------------------------------

// A SEND naming @srqn, which no XRC SRQ of X answers to: NAK Invalid
// Request. @victim (may be null) holds a receive that must stay unused.
void test_bad_srqn(const char *what, uint32_t srqn, xsrq *victim, region *victim_buf)
{
	point P;
	xpair p;
	if (pair_make(P, p, X, false) && xsrq_post(P, sA) && (!victim || xsrq_post(P, *victim))) {
		// One packet: the NAK answers all there is.
		delta sent(B, "error_nak_sent"), rcvd(A, "error_nak_received");
		loc.fill(SRC_OFF, 200, g_seed++);
		op o;
		o.wr_id = g_wr_id++;
		o.srqn = srqn;
		o.laddr = loc.addr(SRC_OFF);
		o.lkey = loc.lkey();
		o.len = 200;
		posted(P, post_op(p, false, o), "SEND");
		want w;
		w.wr_id = o.wr_id;
		w.status = IBV_WC_REM_INV_REQ_ERR;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
		expect_state(P, "initiator", p.ini, IBV_QPS_ERR);
		// The next WR, naming a good SRQ, is flushed.
		o.wr_id = g_wr_id++;
		o.srqn = sA.num;
		posted(P, post_op(p, false, o), "SEND after the error");
		w.wr_id = o.wr_id;
		w.status = IBV_WC_WR_FLUSH_ERR;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
		expect_empty(P, sA.name, sA.cq, 100);
		expect_empty(P, sB.name, sB.cq, 20);
		if (victim && victim->cq)
			expect_empty(P, victim->name, victim->cq, 20);
		region_check(P, buf1);
		region_check(P, buf2);
		if (victim_buf)
			region_check(P, *victim_buf);
		sent.expect(P, 1);
		rcvd.expect(P, 1);
	}
	if (int e = pair_free(p))
		P.fail("destroying the pair: %s", strerror(e));
	P.report("SEND naming %s (0x%x): IBV_WC_REM_INV_REQ_ERR, initiator in ERR, the next WR "
		 "flushed, nothing in any SRQ, buffers unchanged, error_nak_sent +1 on %s",
		 what, srqn, B.name);
}

// WRITE (READ) naming one SRQ with the rkey of an MR in the other SRQ's PD.
void test_wrong_pd(bool read)
{
	point P;
	xpair p;
	if (pair_make(P, p, X, false)) {
		delta sent(B, "error_nak_sent");
		op o;
		o.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		o.wr_id = g_wr_id++;
		o.len = read ? 4096 : 200;	// one request packet
		if (read) {
			// SRQ B (pd2) named, buf1 (pd1) read.
			loc.fill(READ_OFF, 4096, g_seed++);
			o.srqn = sB.num;
			o.laddr = loc.addr(READ_OFF);
			o.raddr = buf1.addr(RDMA_OFF);
			o.rkey = buf1.rkey();
		} else {
			// SRQ A (pd1) named, buf2 (pd2) written.
			loc.fill(SRC_OFF, 200, g_seed++);
			o.srqn = sA.num;
			o.laddr = loc.addr(SRC_OFF);
			o.raddr = buf2.addr(RDMA_OFF);
			o.rkey = buf2.rkey();
		}
		o.lkey = loc.lkey();
		posted(P, post_op(p, false, o), read ? "RDMA READ" : "RDMA WRITE");
		want w;
		w.wr_id = o.wr_id;
		w.status = IBV_WC_REM_ACCESS_ERR;
		expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
		expect_state(P, "initiator", p.ini, IBV_QPS_ERR);
		expect_empty(P, sA.name, sA.cq, 20);
		expect_empty(P, sB.name, sB.cq, 20);
		region_check(P, loc);
		region_check(P, buf1);
		region_check(P, buf2);
		sent.expect(P, 1);
	}
	if (int e = pair_free(p))
		P.fail("destroying the pair: %s", strerror(e));
	if (read)
		P.report("RDMA READ naming SRQ B with the rkey of an MR in SRQ A's PD: "
			 "IBV_WC_REM_ACCESS_ERR, the local buffer unchanged");
	else
		P.report("RDMA WRITE naming SRQ A with the rkey of an MR in SRQ B's PD: "
			 "IBV_WC_REM_ACCESS_ERR, the target MR unchanged");
}

// An XRC SRQ of another domain (opened with fd -1), then ib_core's close
// rule for such a domain: EBUSY while an SRQ of it exists, 0 after.
void test_other_domain()
{
	point P, Pc;
	xsrq sY;
	region bufY;
	ibv_xrcd *Y = nullptr;
	ibv_xrcd_init_attr xa = {};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	Y = ibv_open_xrcd(B.ctx, &xa);
	if (!Y)
		P.fail("ibv_open_xrcd(fd -1): %s", strerror(errno));
	bool ok = Y && region_make(P, bufY, "SRQ Y's buffer", pd1, TARGET_LEN, REMOTE) &&
		  xsrq_make(P, sY, "SRQ Y", 0x59, B.ctx, Y, pd1, &bufY);
	if (!ok)
		P.report("a second XRC domain (fd -1) and an XRC SRQ in it");
	else
		test_bad_srqn("an XRC SRQ of another XRC domain", sY.num, &sY, &bufY);

	// ib_core: the process's SRQ in the domain keeps it (EBUSY), and the
	// domain is unharmed: a target QP of Y delivers into SRQ Y.
	if (ok) {
		int r = err_of(ibv_close_xrcd(Y));
		if (r != EBUSY)
			Pc.fail("ibv_close_xrcd with SRQ Y alive: %s, expected EBUSY",
				r ? strerror(r) : "success");
		if (r) {
			xpair p;
			if (pair_make(Pc, p, Y, false))
				send_one(Pc, p, false, sY, 2000);	// the receive posted above
			region_check(Pc, bufY);
			if (int e = pair_free(p))
				Pc.fail("destroying the pair: %s", strerror(e));
			if (int e = xsrq_free(sY))
				Pc.fail("destroying SRQ Y: %s", strerror(e));
			r = err_of(ibv_close_xrcd(Y));
			if (r)
				Pc.fail("ibv_close_xrcd after its SRQ and QP: %s", strerror(r));
		}
		Y = nullptr;
		Pc.report("ibv_close_xrcd of a domain opened with fd -1 while an XRC SRQ of it "
			  "exists: EBUSY, the domain still delivers; 0 once the SRQ is gone");
	}
	if (int e = xsrq_free(sY))
		destroyed(e, "SRQ Y");
	if (Y)
		destroyed(err_of(ibv_close_xrcd(Y)), "XRCD Y");
	if (bufY.mr)
		destroyed(err_of(ibv_dereg_mr(bufY.mr)), "SRQ Y's MR");
	free(bufY.mem);
}

// A basic SRQ's number. ibv_get_srq_num is for XRC SRQs; sroce numbers all
// SRQs of a device from one table, in order: a basic SRQ made between two
// XRC SRQs numbered n and n + 2 is n + 1.
void test_basic_srq()
{
	point P;
	xsrq t1, t2, basic;
	region bufb;
	uint32_t num = 0;
	bool ok = xsrq_make(P, t1, "probe SRQ 1", 0x71, B.ctx, X, pd1, &buf1) &&
		  region_make(P, bufb, "the basic SRQ's buffer", pd1, TARGET_LEN, REMOTE);
	if (ok) {
		// No QP takes its receives: no CQ either; its buffer must stay.
		basic.name = "basic SRQ";
		basic.tag = 0xb5;
		basic.buf = &bufb;
		ibv_srq_init_attr sa = {};
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		basic.srq = ibv_create_srq(pd1, &sa);
		ok = basic.srq != nullptr;
		if (!ok)
			P.fail("a basic SRQ: %s", strerror(errno));
	}
	ok = ok && xsrq_make(P, t2, "probe SRQ 2", 0x72, B.ctx, X, pd1, &buf1);
	if (ok) {
		uint32_t via = 0;
		int r = ibv_get_srq_num(basic.srq, &via);
		if (t2.num == t1.num + 2)
			num = t1.num + 1;
		else if (!r && via)
			num = via;
		tap::diag("basic SRQ: between XRC SRQs %u and %u; ibv_get_srq_num: %s %u", t1.num,
			  t2.num, r ? strerror(r) : "ok", via);
		if (!num)
			P.fail("cannot tell the basic SRQ's number");
	}
	// Only the basic SRQ stays: the probes' numbers must not be it.
	if (int e = xsrq_free(t1))
		P.fail("destroying probe SRQ 1: %s", strerror(e));
	if (int e = xsrq_free(t2))
		P.fail("destroying probe SRQ 2: %s", strerror(e));
	if (ok && num && P.ok())
		test_bad_srqn("a basic SRQ's number", num, &basic, &bufb);
	else
		P.report("a basic SRQ and its number");
	destroyed(xsrq_free(basic), "the basic SRQ");
	if (bufb.mr)
		destroyed(err_of(ibv_dereg_mr(bufb.mr)), "the basic SRQ's MR");
	free(bufb.mem);
}

// ---- the helper process (the domain's second user) ------------------------------

enum child_cmd : uint32_t { C_SETUP = 1, C_EXPECT, C_TEARDOWN, C_QUIT };
struct cmd_msg {
	uint32_t cmd = 0;
	uint32_t qpn = 0;
	uint32_t seed = 0;
	uint32_t len = 0;
};
struct reply_msg {
	int32_t ok = 0;
	uint32_t value = 0;
	char text[900] = {};
};

pid_t g_child = -1;
int g_to_child = -1, g_from_child = -1;

bool read_full(int fd, void *p, size_t n)
{
	auto *b = static_cast<uint8_t *>(p);
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= static_cast<size_t>(k);
	}
	return true;
}

bool write_full(int fd, const void *p, size_t n)
{
	auto *b = static_cast<const uint8_t *>(p);
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= static_cast<size_t>(k);
	}
	return true;
}

void child_reply(int fd, const point &P, uint32_t value)
{
	reply_msg r;
	r.ok = P.ok();
	r.value = value;
	snprintf(r.text, sizeof(r.text), "%s", P.joined().c_str());
	write_full(fd, &r, sizeof(r));
}

// The helper: opens B, the domain on the file (it exists: no O_CREAT), the
// target QP by number, an XRC SRQ of its own; receives; closes.
[[noreturn]] void child_main(int rfd, int wfd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	g_is_helper = true;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	region buf;
	int fd = -1;
	ibv_xrcd *xrcd = nullptr;
	ibv_qp *qp = nullptr;
	xsrq s;
	uint32_t tgt_qpn = 0;
	cmd_msg c;

	while (read_full(rfd, &c, sizeof(c))) {
		point P;
		switch (c.cmd) {
		case C_SETUP: {
			tgt_qpn = c.qpn;
			ctx = open_device_by_name(B.name);
			pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
			if (!pd) {
				P.fail("helper: open %s and a PD: %s", B.name, strerror(errno));
				break;
			}
			fd = open(g_file, O_RDONLY);
			if (fd < 0) {
				P.fail("helper: open %s: %s", g_file, strerror(errno));
				break;
			}
			ibv_xrcd_init_attr xa = {};
			xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
			xa.fd = fd;
			xa.oflags = 0;	// it exists: found by the file alone
			xrcd = ibv_open_xrcd(ctx, &xa);
			if (!xrcd) {
				P.fail("helper: ibv_open_xrcd on the file, no O_CREAT: %s",
				       strerror(errno));
				break;
			}
			ibv_qp_open_attr oa = {};
			oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
				       IBV_QP_OPEN_ATTR_TYPE;
			oa.qp_num = tgt_qpn;
			oa.xrcd = xrcd;
			oa.qp_type = IBV_QPT_XRC_RECV;
			qp = ibv_open_qp(ctx, &oa);
			if (!qp) {
				P.fail("helper: ibv_open_qp(%u): %s", tgt_qpn, strerror(errno));
				break;
			}
			if (qp->qp_num != tgt_qpn || qp->qp_type != IBV_QPT_XRC_RECV)
				P.fail("helper: the opened QP is %u type %d, expected %u XRC_RECV",
				       qp->qp_num, qp->qp_type, tgt_qpn);
			if (!region_make(P, buf, "the helper's SRQ buffer", pd, TARGET_LEN, REMOTE) ||
			    !xsrq_make(P, s, "SRQ C (helper)", 0xc, ctx, xrcd, pd, &buf))
				break;
			for (int i = 0; i < 4; i++)
				if (!xsrq_post(P, s))
					break;
			break;
		}
		case C_EXPECT: {
			std::vector<uint8_t> data(c.len);
			pattern(data.data(), c.len, c.seed);
			if (!s.srq) {
				P.fail("helper: no SRQ");
				break;
			}
			expect_recv(P, s, tgt_qpn, IBV_WC_RECV, c.len, data.data());
			region_check(P, buf);
			xsrq_post(P, s);
			break;
		}
		case C_TEARDOWN: {
			int e;
			if ((e = xsrq_free(s)))
				P.fail("helper: destroying its SRQ: %s", strerror(e));
			if (qp && (e = err_of(ibv_destroy_qp(qp))))
				P.fail("helper: ibv_destroy_qp of the opened QP: %s", strerror(e));
			qp = nullptr;
			if (xrcd && (e = err_of(ibv_close_xrcd(xrcd))))
				P.fail("helper: ibv_close_xrcd: %s", strerror(e));
			xrcd = nullptr;
			if (buf.mr && (e = err_of(ibv_dereg_mr(buf.mr))))
				P.fail("helper: ibv_dereg_mr: %s", strerror(e));
			buf.mr = nullptr;
			if (pd && (e = err_of(ibv_dealloc_pd(pd))))
				P.fail("helper: ibv_dealloc_pd: %s", strerror(e));
			pd = nullptr;
			if (ctx && (e = err_of(ibv_close_device(ctx))))
				P.fail("helper: ibv_close_device: %s", strerror(e));
			ctx = nullptr;
			if (fd >= 0)
				close(fd);
			fd = -1;
			break;
		}
		default:
			_exit(0);
		}
		child_reply(wfd, P, s.num);
	}
	_exit(0);
}

bool child_start()
{
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		return false;
	fflush(stdout);
	g_child = fork();
	if (g_child < 0)
		return false;
	if (g_child == 0) {
		close(down[1]);
		close(up[0]);
		child_main(down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	g_to_child = down[1];
	g_from_child = up[0];
	return true;
}

// One command to the helper and its answer (false: no answer in time).
bool child_call(point &P, const cmd_msg &c, reply_msg &r)
{
	if (g_child < 0 || !write_full(g_to_child, &c, sizeof(c))) {
		P.fail("the helper process is not there");
		return false;
	}
	pollfd pf = {g_from_child, POLLIN, 0};
	if (poll(&pf, 1, static_cast<int>(g_wait * 1000) + 10000) != 1 ||
	    !read_full(g_from_child, &r, sizeof(r))) {
		P.fail("no answer from the helper process");
		return false;
	}
	if (!r.ok)
		P.fail("%s", r.text);
	return r.ok;
}

void child_stop()
{
	if (g_child < 0)
		return;
	cmd_msg c;
	c.cmd = C_QUIT;
	write_full(g_to_child, &c, sizeof(c));
	close(g_to_child);
	close(g_from_child);
	int status;
	for (int i = 0; i < 100; i++) {
		if (waitpid(g_child, &status, WNOHANG) == g_child) {
			g_child = -1;
			return;
		}
		usleep(20000);
	}
	kill(g_child, SIGKILL);
	waitpid(g_child, &status, 0);
	g_child = -1;
}

// A SEND through @p naming the helper's SRQ @srqn; the helper checks it.
void send_to_child(point &P, xpair &p, uint32_t srqn, uint32_t len)
{
	uint32_t seed = g_seed++;
	loc.fill(SRC_OFF, len, seed);
	op o;
	o.wr_id = g_wr_id++;
	o.srqn = srqn;
	o.laddr = loc.addr(SRC_OFF);
	o.lkey = loc.lkey();
	o.len = len;
	posted(P, post_op(p, false, o), "SEND");
	want w;
	w.wr_id = o.wr_id;
	w.opcode = IBV_WC_SEND;
	expect_wcs(P, "initiator", p.cq, p.ini_qpn, {w});
	cmd_msg c;
	c.cmd = C_EXPECT;
	c.seed = seed;
	c.len = len;
	reply_msg r;
	child_call(P, c, r);
}

// The domain shared with the helper; closed here first, there last.
void test_sharing(xpair &p1, xpair &p2)
{
	point P1, P2, P3, P4, P5, P6, P7;
	reply_msg r;
	cmd_msg c;
	c.cmd = C_SETUP;
	c.qpn = p1.tgt_qpn;
	bool up = child_call(P1, c, r);
	uint32_t srqn = r.value;
	if (up && (!srqn || srqn == sA.num || srqn == sB.num))
		P1.fail("the helper's SRQ number %u (SRQ A %u, SRQ B %u)", srqn, sA.num, sB.num);
	P1.report("a second process opens the XRCD file without O_CREAT, the XRC_RECV QP %u by "
		  "number (ibv_open_qp) and an XRC SRQ of its own in the shared domain "
		  "(number %u)", p1.tgt_qpn, srqn);
	if (!up || !P1.ok())
		return;

	send_to_child(P2, p1, srqn, 4096);
	expect_empty(P2, sA.name, sA.cq, 20);
	expect_empty(P2, sB.name, sB.cq, 20);
	region_check(P2, buf1);
	region_check(P2, buf2);
	P2.report("a SEND naming the second process's SRQ through this process's XRC pair "
		  "lands there byte for byte (qp_num %u), nothing here", p1.tgt_qpn);

	// ib_core: this process's SRQs and target QPs in X hold its handle.
	int rc = err_of(ibv_close_xrcd(X));
	if (rc != EBUSY)
		P3.fail("ibv_close_xrcd with SRQs and target QPs alive: %s, expected EBUSY",
			rc ? strerror(rc) : "success");
	if (!rc) {
		X = nullptr;
	} else {
		if (xsrq_post(P3, sA))
			send_one(P3, p1, false, sA, 1024);
		region_check(P3, buf1);
	}
	P3.report("ibv_close_xrcd of the shared domain while this process's XRC SRQs and "
		  "XRC_RECV QPs are in it: EBUSY, and it still delivers (a SEND to SRQ A)");
	if (!X)
		return;

	// This process's own objects in X go; then the close is this
	// process's alone: 0, and the domain lives on in the helper.
	int e = 0;
	if (p1.tgt && (e = err_of(ibv_destroy_qp(p1.tgt))))
		P4.fail("ibv_destroy_qp of this process's handle on QP %u: %s", p1.tgt_qpn,
			strerror(e));
	p1.tgt = nullptr;
	if (p2.tgt && (e = err_of(ibv_destroy_qp(p2.tgt))))
		P4.fail("ibv_destroy_qp of the second XRC_RECV QP: %s", strerror(e));
	p2.tgt = nullptr;
	if ((e = xsrq_free(sA)))
		P4.fail("destroying SRQ A: %s", strerror(e));
	if ((e = xsrq_free(sB)))
		P4.fail("destroying SRQ B: %s", strerror(e));
	if ((e = err_of(ibv_close_xrcd(X))))
		P4.fail("ibv_close_xrcd: %s", strerror(e));
	else
		X = nullptr;
	P4.report("its SRQs and its handles on the XRC_RECV QPs destroyed, this process closes "
		  "the shared domain: 0, while the second process still uses it");

	send_to_child(P5, p1, srqn, 65536);
	P5.report("a SEND (65536 B) still reaches the second process's SRQ through XRC_RECV QP "
		  "%u, which only that process holds now", p1.tgt_qpn);

	c = cmd_msg();
	c.cmd = C_TEARDOWN;
	child_call(P6, c, r);
	P6.report("the second process destroys its SRQ and its handle on the XRC_RECV QP and "
		  "closes the domain: 0 each");

	// The last user gone, the domain is: the file names none, and a new
	// domain on it has no QP of that number.
	int f = open(g_file, O_RDONLY);
	ibv_xrcd_init_attr xa = {};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = f;
	xa.oflags = 0;
	ibv_xrcd *x = ibv_open_xrcd(B.ctx, &xa);
	int err = errno;
	if (x) {
		P7.fail("ibv_open_xrcd without O_CREAT found a domain on the file");
		ibv_close_xrcd(x);
	} else if (err != EAGAIN) {
		P7.fail("ibv_open_xrcd without O_CREAT: %s, expected EAGAIN", strerror(err));
	}
	xa.oflags = O_CREAT;
	x = ibv_open_xrcd(B.ctx, &xa);
	if (!x) {
		P7.fail("ibv_open_xrcd with O_CREAT: %s", strerror(errno));
	} else {
		ibv_qp_open_attr oa = {};
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
		oa.qp_num = p1.tgt_qpn;
		oa.xrcd = x;
		oa.qp_type = IBV_QPT_XRC_RECV;
		ibv_qp *q = ibv_open_qp(B.ctx, &oa);
		err = errno;
		if (q) {
			P7.fail("ibv_open_qp(%u) in the new domain succeeded", p1.tgt_qpn);
			ibv_destroy_qp(q);
		} else if (err != EINVAL) {
			P7.fail("ibv_open_qp(%u) in the new domain: %s, expected EINVAL",
				p1.tgt_qpn, strerror(err));
		}
		if ((e = err_of(ibv_close_xrcd(x))))
			P7.fail("closing the new domain: %s", strerror(e));
	}
	if (f >= 0)
		close(f);
	P7.report("with its last user the domain is gone: the file without O_CREAT gives "
		  "EAGAIN, a new domain on it cannot open QP %u (EINVAL)", p1.tgt_qpn);
}

void usage()
{
	fprintf(stderr, "usage: sroce_xrc -a DEV_A -A GID_A -b DEV_B -B GID_B [-f XRCD_FILE] "
			"[-m MTU] [-w SECONDS] [--inject data] [-v]\n");
}

} // namespace

int main(int argc, char **argv)
{
	static const option longopts[] = {
		{"inject", required_argument, nullptr, 'X'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	char tmpl[] = "/tmp/sroce_xrc.XXXXXX";
	bool own_file = false;
	int mtu = 1024, c;

	while ((c = getopt_long(argc, argv, "a:A:b:B:f:m:w:vh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'a': A.name = optarg; break;
		case 'A': A.gid_index = atoi(optarg); break;
		case 'b': B.name = optarg; break;
		case 'B': B.gid_index = atoi(optarg); break;
		case 'f': g_file = optarg; break;
		case 'm': mtu = atoi(optarg); break;
		case 'w': g_wait = atof(optarg); break;
		case 'v': g_verbose = true; break;
		case 'X':
			if (strcmp(optarg, "data")) {
				usage();
				return 2;
			}
			g_inject = true;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (!A.name || !B.name || A.gid_index < 0 || B.gid_index < 0 || g_wait <= 0 ||
	    (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)) {
		usage();
		return 2;
	}
	if (!g_file) {
		int fd = mkstemp(tmpl);
		if (fd < 0) {
			perror("sroce_xrc: mkstemp");
			return 2;
		}
		close(fd);
		g_file = tmpl;
		own_file = true;
	} else {
		int fd = open(g_file, O_RDONLY | O_CREAT, 0600);
		if (fd < 0) {
			perror(g_file);
			return 2;
		}
		close(fd);
	}
	// Before any device is open: the helper shares nothing but the file.
	if (!child_start()) {
		perror("sroce_xrc: the helper process");
		return 2;
	}

	if (open_dev(A) && open_dev(B)) {
		g_mtu = std::min({A.port.active_mtu, B.port.active_mtu, mtu_enum(mtu)});
		g_mtu_bytes = 128u << g_mtu;
		tap::diag("path MTU %u", g_mtu_bytes);

		tap::check((A.da.device_cap_flags & IBV_DEVICE_XRC) &&
				   (B.da.device_cap_flags & IBV_DEVICE_XRC),
			   "IBV_DEVICE_XRC in device_cap_flags of %s (0x%08x) and %s (0x%08x)",
			   A.name, A.da.device_cap_flags, B.name, B.da.device_cap_flags);

		point P;
		pd_a = ibv_alloc_pd(A.ctx);
		pd1 = ibv_alloc_pd(B.ctx);
		pd2 = ibv_alloc_pd(B.ctx);
		if (!pd_a || !pd1 || !pd2)
			P.fail("ibv_alloc_pd: %s", strerror(errno));
		bool ok = P.ok() &&
			  region_make(P, loc, "the initiator's buffer", pd_a, LOCAL_LEN,
				      IBV_ACCESS_LOCAL_WRITE) &&
			  region_make(P, buf1, "SRQ A's PD's buffer", pd1, TARGET_LEN, REMOTE) &&
			  region_make(P, buf2, "SRQ B's PD's buffer", pd2, TARGET_LEN, REMOTE);
		if (ok) {
			xfd = open(g_file, O_RDONLY);
			ibv_xrcd_init_attr xa = {};
			xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
			xa.fd = xfd;
			xa.oflags = O_CREAT;
			X = xfd >= 0 ? ibv_open_xrcd(B.ctx, &xa) : nullptr;
			if (!X)
				P.fail("ibv_open_xrcd(%s, O_CREAT): %s", g_file, strerror(errno));
			ok = X != nullptr;
		}
		P.report("PDs, MRs; an XRC domain on %s (O_CREAT)", g_file);

		if (ok) {
			ok = xsrq_make(P, sA, "SRQ A", 0xa, B.ctx, X, pd1, &buf1) &&
			     xsrq_make(P, sB, "SRQ B", 0xb, B.ctx, X, pd2, &buf2);
			if (ok && (!sA.num || !sB.num || sA.num == sB.num))
				P.fail("SRQ numbers %u and %u: not distinct and non-zero", sA.num,
				       sB.num);
			ok = P.report("two XRC SRQs in it, each with its own PD and CQ: numbers "
				      "%u and %u, distinct, non-zero", sA.num, sB.num);
		}
		xpair p1, p2;
		if (ok) {
			pair_make(P, p1, X, false);
			ok = P.report("XRC_RECV QP %u (only the XRCD) on %s, XRC_SEND QP %u on %s: "
				      "INIT, RTR, RTS", p1.tgt_qpn, B.name, p1.ini_qpn, A.name);
			pair_make(P, p2, X, true);
			ok = P.report("XRC_SEND QP %u with send_ops_flags (ibv_wr_*) and XRC_RECV "
				      "QP %u: INIT, RTR, RTS", p2.ini_qpn, p2.tgt_qpn) && ok;
		}
		if (ok) {
			for (bool wr_api : {false, true}) {
				xpair &p = wr_api ? p2 : p1;
				for (uint32_t len : {1u, 4096u, 65536u})
					test_sends(p, wr_api, len);
				test_send_imm(p, wr_api);
				test_rdma(p, wr_api);
				test_atomics(p, wr_api);
			}
			test_wr_no_srqn(p2);
			test_wrong_posts(p1);

			test_other_domain();
			test_bad_srqn("a number that is no SRQ", NO_SRQ, nullptr, nullptr);
			test_basic_srq();
			test_wrong_pd(false);
			test_wrong_pd(true);

			test_sharing(p1, p2);
		}

		// Cleanup: whatever is left.
		destroyed(pair_free(p1), "the first XRC pair");
		destroyed(pair_free(p2), "the second XRC pair");
		destroyed(xsrq_free(sA), "SRQ A");
		destroyed(xsrq_free(sB), "SRQ B");
		if (X)
			destroyed(err_of(ibv_close_xrcd(X)), "XRCD X");
		for (region *r : {&loc, &buf1, &buf2})
			if (r->mr)
				destroyed(err_of(ibv_dereg_mr(r->mr)), r->name);
		for (ibv_pd *pd : {pd_a, pd1, pd2})
			if (pd)
				destroyed(err_of(ibv_dealloc_pd(pd)), "a PD");
		for (auto &e : cleanup_errors)
			P.fail("%s", e.c_str());
		P.report("cleanup: every QP, SRQ, CQ, MR, PD and XRC domain destroyed without an "
			 "error");
	}
	child_stop();
	if (xfd >= 0)
		close(xfd);
	if (B.ctx)
		ibv_close_device(B.ctx);
	if (A.ctx)
		ibv_close_device(A.ctx);
	if (own_file)
		unlink(g_file);
	return tap::done("sroce_xrc");
}
