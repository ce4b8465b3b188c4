// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_rc_errors - the error paths of the RC transport, seen through
// libibverbs only. One process opens two devices (RDMA devices are visible
// from every network namespace in the "shared" netns mode) and connects an
// RC QP on each to the other, so it controls both ends: it registers the
// responder's memory, fills it with a pattern and checks it byte for byte.
//
//   sroce_rc_errors -a DEV_A -A GID_A -b DEV_B -B GID_B [-w SECONDS]
//                   [-o GROUPS] [--inject rkey] [-v]
//
// A (the requester) sends to B (the responder). Every check is one TAP
// point that asserts exact statuses, wr_ids in posting order, opcodes and
// byte counts of successful completions, QP states and memory contents
// (the MR and a guard page either side of it):
//
//   rkey     WRITE with the rkey of a deregistered MR (over the same
//            memory), a made-up one (the target's index, another variant;
//            an index that does not exist) and one of an MR in another PD:
//            IBV_WC_REM_ACCESS_ERR, the WQEs after it IBV_WC_WR_FLUSH_ERR
//            in order, target memory unchanged, the responder QP in ERR
//            with its posted receives flushed in order
//   bounds   WRITE 1 byte past the MR's end (after a WRITE that fits
//            exactly, which must land), one starting 1 byte before it, a
//            3-packet WRITE 1 byte past the end, a READ 1 byte past it
//   access   WRITE to an MR without REMOTE_WRITE, READ from one without
//            REMOTE_READ, FETCH_ADD on one without REMOTE_ATOMIC; WRITE
//            through a QP without REMOTE_WRITE access (REM_ACCESS_ERR or, as
//            rdma_rxe has it, REM_INV_REQ_ERR)
//   read     READ with a bad rkey: REM_ACCESS_ERR, local buffer unchanged
//   gone     the responder QP destroyed (or moved to RESET), timeout 12
//            (16.8 ms): the first WQE IBV_WC_RETRY_EXC_ERR after at least
//            (retry_cnt + 1) x timeout x 0.5 and within 5 s, the rest
//            flushed; retry_cnt 3 and 0; the device's retransmit_timeouts
//            grows by exactly retry_cnt
//   rnr      no receive posted, rnr_retry 2 and 0: IBV_WC_RNR_RETRY_EXC_ERR
//            after exactly rnr_retry + 1 RNR NAKs; rnr_retry 7 (infinite)
//            with the receive posted 100 ms late: the SEND completes then,
//            and the data arrives intact; again with timeout 12 and
//            retry_cnt 1 and the receive 300 ms late: RNR NAKs are answers,
//            the transport timer must not give up meanwhile; a SEND of 64
//            packets with the receive 50 ms late: intact, and at most one
//            packet resent per RNR NAK (the first packet probes alone)
//   atomic   FETCH_ADD and CMP_SWAP (hit and miss), one at a time and 16 /
//            8 in flight: the original value in the local buffer, the
//            target changed exactly, its neighbours not at all
//   len      SEND larger than the posted receive (1 and 3 packets): the
//            requester IBV_WC_REM_INV_REQ_ERR, the receive
//            IBV_WC_LOC_LEN_ERR, nothing written beyond its buffer
//   mw       memory windows: binds, access through them, invalidation,
//            bind errors; a window with REMOTE_WRITE | LOCAL_WRITE over
//            an MR with LOCAL_WRITE | MW_BIND only binds (both types)
//   awrite   IBTA 1.5 ATOMIC WRITE (ibv_wr_atomic_write and ibv_post_send):
//            the device cap, 8 bytes placed at the word and nowhere else,
//            16 in flight in order, a misaligned one refused at posting,
//            one to an MR without REMOTE_WRITE REM_ACCESS_ERR; FLUSH
//            (rdma-core 45 on: ibv_wr_flush) of a range and of the whole
//            MR after WRITEs, one to an MR without FLUSH_GLOBAL
//            REM_ACCESS_ERR, no FLUSH_PERSISTENT MR on non-persistent memory;
//            with --no-flush (a kernel whose ib_core has no FLUSH, before
//            6.2) instead: no device offers it, ibv_reg_mr with
//            FLUSH_GLOBAL EINVAL, sroce's QP with IBV_QP_EX_WITH_FLUSH
//            EOPNOTSUPP
//   dmabuf-move  (only when named: the caller loaded sroce_dmabuf_exp.ko)
//            a dma-buf MR of tests/kmod's moving exporter: READ and WRITE
//            after a move, 24 moves while a WRITE and a READ are in flight,
//            every byte read back and in the exporter's pages, no old page
//            written after its move, the moves counted; with dmabuf_pin=1
//            the MR pins the buffer (MOVE refused) until dereg
//   awrite-loss  (only when named: the caller sets up packet loss)
//            rounds of ATOMIC WRITEs to the same words and a READ of
//            them, resent until they arrive: replayed, never re-stored
//   odp      on-demand paging (IBV_ACCESS_ON_DEMAND): the caps; an MR
//            over untouched memory pins and faults nothing; WRITE, READ,
//            SEND and both atomics between ODP MRs nobody touched, data
//            checked, B's RNR NAKs and faults counted; after
//            MADV_DONTNEED and after a remap the peer sees the new
//            contents; after fork() a WRITE lands in the parent's copy,
//            not the child's; ibv_advise_mr prefetch (no RNR NAK after it,
//            EINVAL for a pinned MR); a WRITE to an unmapped or read-only
//            range REM_ACCESS_ERR, a WRITE from an unmapped one
//            LOC_PROT_ERR; UD datagrams into untouched ODP receive
//            buffers wait for their pages, none lost
//   dmabuf   ibv_reg_dmabuf_mr of a udmabuf (memfd pages), or where the
//            kernel has no udmabuf (Debian's 6.1) of a vgem buffer (DRM
//            PRIME, shmem pages): its errors; a peer's WRITE, READ, SEND
//            and atomics into it, B's WRITE from it, and a WRITE after the
//            dma-buf's fd is closed, every byte checked through the CPU's
//            mapping (the memfd, or the dma-buf's own mmap)
//   rereg    B's MR re-registered (translation, PD away and back,
//            access) while A holds its rkey: the keys stay, A's WRITE and
//            READ meet the new region, a WRITE the access no longer
//            allows gets REM_ACCESS_ERR
//
// The hw counters in /sys/class/infiniband/DEV/ports/1/hw_counters are
// checked where they are exact (sroce's names; skipped when absent).
// No completion is waited for longer than -w seconds (default 10): a
// missing one fails its point. --inject rkey uses the valid rkey where a
// bad one belongs, to see the checks fail. The exit status is 1 if any
// point failed.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include <linux/udmabuf.h>

#include "../kmod/sroce_dmabuf_exp.h"
#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr size_t PAGE = 4096;
constexpr size_t GUARD = PAGE;	// checked bytes either side of an MR
constexpr int ALL_REMOTE = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

double g_wait = 10;		// seconds any completion may take
bool g_no_flush;		// --no-flush: the kernel has no FLUSH (test_flush_absent)
bool g_verbose;
bool g_inject_rkey;		// use the valid rkey where a bad one belongs

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

// A point that is not applicable here (TAP SKIP).
void skip(const char *desc, const char *reason)
{
	tap::check(true, "%s # SKIP %s", desc, reason);
}

// ---- devices ----------------------------------------------------------------

struct dev {
	const char *name = nullptr;
	int gid_index = -1;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_device_attr da = {};
	ibv_port_attr port = {};
	ibv_gid gid = {};
};

dev A, B;
ibv_mtu g_mtu = IBV_MTU_1024;
uint32_t g_mtu_bytes = 1024;

// A hw counter of port 1, or -1 when there is none by that name.
// ib_core answers hw_counters reads from a copy up to 10 ms old
// (RDMA_HW_STATS_DEFAULT_LIFESPAN): wait that out, or an exchange shorter
// than that reads as no change at all.
long long counter(const dev &d, const char *name)
{
	usleep(25000);
	char path[256];
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", d.name,
		 name);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long long v = -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

// A counter's value at construction; its growth checked later.
struct delta {
	const dev *d;
	const char *name;
	long long before;
	delta(const dev &dv, const char *n) : d(&dv), name(n), before(counter(dv, n)) {}
	bool available() const { return before >= 0; }
	long long grown() const { return counter(*d, name) - before; }
};

// Counter point: each delta must have grown by exactly @want (or, for
// want < 0, by at least -want).
void check_counters(const char *desc, std::initializer_list<std::pair<const delta *, long long>> l)
{
	point P;
	std::string got;
	for (auto &[dl, want] : l) {
		if (!dl->available()) {
			skip(desc, "no such hw counter");
			return;
		}
		long long g = dl->grown();
		char b[128];
		snprintf(b, sizeof(b), "%s%s %s +%lld", got.empty() ? "" : ", ", dl->d->name,
			 dl->name, g);
		got += b;
		if (want < 0 ? g < -want : g != want)
			P.fail("%s %s grew by %lld, expected %s%lld", dl->d->name, dl->name, g,
			       want < 0 ? "at least " : "", want < 0 ? -want : want);
	}
	if (g_verbose || !P.ok())
		tap::diag("%s", got.c_str());
	P.report("%s", desc);
}

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

// An MR of @len bytes with a guard page either side, all of it filled with
// a pattern; ref is what every byte must hold.
struct region {
	const char *name = "";
	uint8_t *base = nullptr;
	size_t total = 0;
	uint8_t *mem = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> ref;

	uint64_t addr(long off = 0) const { return reinterpret_cast<uintptr_t>(mem) + off; }
	uint32_t rkey() const { return mr ? mr->rkey : 0; }
	uint32_t lkey() const { return mr ? mr->lkey : 0; }
	// Expect @n bytes at MR offset @off to hold @src from now on.
	void expect(size_t off, const void *src, size_t n)
	{
		memcpy(ref.data() + GUARD + off, src, n);
	}
	// Accept whatever the bytes at MR offset @off hold now.
	void accept(size_t off, size_t n)
	{
		memcpy(ref.data() + GUARD + off, mem + off, n);
	}
};

bool region_make(point &P, region &r, const char *name, dev &d, size_t len, int access,
		 uint32_t seed)
{
	r.name = name;
	r.len = len;
	r.total = len + 2 * GUARD;
	r.base = static_cast<uint8_t *>(aligned_alloc(PAGE, (r.total + PAGE - 1) / PAGE * PAGE));
	if (!r.base) {
		P.fail("%s: out of memory", name);
		return false;
	}
	r.mem = r.base + GUARD;
	pattern(r.base, r.total, seed);
	r.ref.assign(r.base, r.base + r.total);
	r.mr = ibv_reg_mr(d.pd, r.mem, len, access);
	if (!r.mr)
		P.fail("%s: ibv_reg_mr(%zu bytes, access 0x%x) on %s: %s", name, len, access,
		       d.name, strerror(errno));
	return r.mr != nullptr;
}

void region_free(region &r)
{
	if (r.mr)
		ibv_dereg_mr(r.mr);
	free(r.base);
	r = region();
}

// Every byte of the MR and its guards holds what ref says.
void region_check(point &P, const region &r)
{
	size_t ndiff = 0, first = 0;
	for (size_t i = 0; i < r.total; i++)
		if (r.base[i] != r.ref[i] && !ndiff++)
			first = i;
	if (!ndiff)
		return;
	long off = static_cast<long>(first) - static_cast<long>(GUARD);
	const char *where = off < 0 ? "before the MR" :
			    off >= static_cast<long>(r.len) ? "after the MR" : "in the MR";
	P.fail("%s: %zu byte(s) differ, first at MR offset %ld (%s): expected 0x%02x got 0x%02x",
	       r.name, ndiff, off, where, r.ref[first], r.base[first]);
}

// ---- queue pairs ------------------------------------------------------------

struct qp_params {
	uint8_t timeout = 17;		// 537 ms: no retransmission muddles counters
	uint8_t retry_cnt = 7;
	uint8_t rnr_retry = 7;
	uint8_t min_rnr_timer = 12;	// the responder's (B's)
	int access_a = ALL_REMOTE;	// qp_access_flags
	int access_b = ALL_REMOTE;
	uint32_t psn_ab = 0x123456;	// A's sq_psn, B's rq_psn
	uint32_t psn_ba = 0x6543;
	uint64_t send_ops_a = 0;	// A through ibv_create_qp_ex with these
};

struct end {
	dev *d = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	uint32_t qpn = 0;
};

struct conn {
	end a, b;
};

const char *state_name(int s)
{
	static const char *const n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return s >= 0 && s <= IBV_QPS_ERR ? n[s] : "?";
}

int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

void expect_state(point &P, const char *who, ibv_qp *qp, ibv_qp_state want)
{
	int s = qp_state(qp);
	if (s != want)
		P.fail("%s QP is in %s (%d), expected %s", who, state_name(s), s,
		       state_name(want));
}

int to_state(ibv_qp *qp, ibv_qp_state s)
{
	ibv_qp_attr a = {};
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

// An RC QP of 64 WRs and 2 SGEs each way on @cq, through ibv_create_qp_ex
// with @send_ops; errno is the provider's when it refuses.
ibv_qp *create_rc_qp_ex(dev &d, ibv_cq *cq, uint64_t send_ops)
{
	ibv_qp_init_attr_ex x = {};
	x.send_cq = cq;
	x.recv_cq = cq;
	x.qp_type = IBV_QPT_RC;
	x.cap.max_send_wr = 64;
	x.cap.max_recv_wr = 64;
	x.cap.max_send_sge = 2;
	x.cap.max_recv_sge = 2;
	x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	x.pd = d.pd;
	x.send_ops_flags = send_ops;
	return ibv_create_qp_ex(d.ctx, &x);
}

bool end_make(point &P, end &e, dev &d, uint64_t send_ops = 0)
{
	e.d = &d;
	e.cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
	if (!e.cq) {
		P.fail("%s: ibv_create_cq: %s", d.name, strerror(errno));
		return false;
	}
	ibv_qp_init_attr ia = {};
	ia.send_cq = e.cq;
	ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	if (send_ops) {
		e.qp = create_rc_qp_ex(d, e.cq, send_ops);
	} else {
		e.qp = ibv_create_qp(d.pd, &ia);
	}
	if (!e.qp) {
		P.fail("%s: ibv_create_qp%s: %s", d.name, send_ops ? "_ex" : "",
		       strerror(errno));
		return false;
	}
	e.qpn = e.qp->qp_num;
	return true;
}

// ibv_rc_pingpong's three steps, for one end.
int qp_connect(end &self, const end &peer, int access, uint32_t sq_psn, uint32_t rq_psn,
	       uint8_t min_rnr_timer, const qp_params &p)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = access;
	int r = ibv_modify_qp(self.qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;

	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = g_mtu;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = std::clamp(self.d->da.max_qp_rd_atom, 1, 16);
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.d->gid;
	a.ah_attr.grh.sgid_index = self.d->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	r = ibv_modify_qp(self.qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r)
		return r;

	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = p.timeout;
	a.retry_cnt = p.retry_cnt;
	a.rnr_retry = p.rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = std::clamp(std::min(self.d->da.max_qp_init_rd_atom,
					      peer.d->da.max_qp_rd_atom), 1, 16);
	return ibv_modify_qp(self.qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// A fresh RC QP on A and on B, connected to each other, both in RTS.
bool conn_make(point &P, conn &c, const qp_params &p)
{
	if (!end_make(P, c.a, A, p.send_ops_a) || !end_make(P, c.b, B))
		return false;
	int r = qp_connect(c.a, c.b, p.access_a, p.psn_ab, p.psn_ba, 12, p);
	if (r) {
		P.fail("connect %s QP %u: ibv_modify_qp: %s", A.name, c.a.qpn, strerror(r));
		return false;
	}
	r = qp_connect(c.b, c.a, p.access_b, p.psn_ba, p.psn_ab, p.min_rnr_timer, p);
	if (r) {
		P.fail("connect %s QP %u: ibv_modify_qp: %s", B.name, c.b.qpn, strerror(r));
		return false;
	}
	return true;
}

void conn_free(conn &c)
{
	for (end *e : {&c.a, &c.b}) {
		if (e->qp)
			ibv_destroy_qp(e->qp);
		if (e->cq)
			ibv_destroy_cq(e->cq);
		*e = end();
	}
}

// ---- posting ----------------------------------------------------------------

// One signaled work request with one SGE.
int post_sge(ibv_qp *qp, uint64_t wr_id, ibv_wr_opcode op, uint64_t laddr, uint32_t lkey,
	     uint32_t len, uint64_t raddr = 0, uint32_t rkey = 0, uint64_t add = 0,
	     uint64_t swap = 0)
{
	ibv_sge sge = {laddr, len, lkey};
	ibv_send_wr wr = {};
	ibv_send_wr *bad;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
		wr.wr.atomic.swap = swap;
	} else if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

int post(ibv_qp *qp, uint64_t wr_id, ibv_wr_opcode op, const region &l, size_t loff,
	 uint32_t len, uint64_t raddr = 0, uint32_t rkey = 0, uint64_t cmp_add = 0,
	 uint64_t swap = 0)
{
	return post_sge(qp, wr_id, op, l.addr(loff), l.lkey(), len, raddr, rkey, cmp_add, swap);
}

int post_recv(ibv_qp *qp, uint64_t wr_id, const region &l, size_t loff, uint32_t len)
{
	ibv_sge sge = {l.addr(loff), len, l.lkey()};
	ibv_recv_wr wr = {};
	ibv_recv_wr *bad;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

// Posting is part of what a point checks: a refused post fails it.
void posted(point &P, int r, const char *what, uint64_t wr_id)
{
	if (r)
		P.fail("posting %s (wr_id %llu) failed: %s", what,
		       static_cast<unsigned long long>(wr_id), strerror(r));
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
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
#if SROCE_RDMA_CORE >= 45
	case IBV_WC_FLUSH: return "FLUSH";
#endif
	default: return "?";
	}
}

// Up to @n completions of @cq, waiting at most @wait seconds; *t_first gets
// the time the first one was seen.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, double wait, double *t_first = nullptr)
{
	std::vector<ibv_wc> got;
	double end = now() + wait;
	while (got.size() < n) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, static_cast<int>(std::min<size_t>(16, n - got.size())), wc);
		if (k < 0)
			break;
		if (k > 0 && got.empty() && t_first)
			*t_first = now();
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
	uint64_t wr_id;
	ibv_wc_status status;
	int opcode = -1;	// checked on success only (undefined on error)
	int64_t len = -1;	// byte_len, on success only
	int alt = -1;		// another acceptable status
};

// The next completions of @cq are exactly @w, in this order (wr_id, status,
// QP, and opcode and byte_len of the successful ones), and then no more.
void expect_wcs(point &P, const char *who, ibv_cq *cq, uint32_t qpn, const std::vector<want> &w,
		double *t_first = nullptr)
{
	auto got = poll_n(cq, w.size(), g_wait, t_first);
	if (got.size() < w.size())
		P.fail("%s: %zu of %zu completion(s) within %g s", who, got.size(), w.size(),
		       g_wait);
	for (size_t i = 0; i < got.size(); i++) {
		const ibv_wc &g = got[i];
		const want &x = w[i];
		bool bad = g.wr_id != x.wr_id || g.qp_num != qpn ||
			   (g.status != x.status && static_cast<int>(g.status) != x.alt);
		if (g.status == IBV_WC_SUCCESS && x.status == IBV_WC_SUCCESS) {
			bad |= x.opcode >= 0 && g.opcode != x.opcode;
			bad |= x.len >= 0 && g.byte_len != static_cast<uint64_t>(x.len);
		}
		if (bad || g_verbose)
			tap::diag("%s completion %zu: wr_id %llu %s (%d) qp %u opcode %s byte_len %u",
				  who, i + 1, static_cast<unsigned long long>(g.wr_id),
				  ibv_wc_status_str(g.status), g.status, g.qp_num,
				  wc_opcode_name(g.opcode), g.byte_len);
		if (bad)
			P.fail("%s completion %zu: expected wr_id %llu %s%s%s qp %u%s%s%s%s", who,
			       i + 1, static_cast<unsigned long long>(x.wr_id),
			       ibv_wc_status_str(x.status), x.alt >= 0 ? " or " : "",
			       x.alt >= 0 ? ibv_wc_status_str(static_cast<ibv_wc_status>(x.alt)) : "",
			       qpn, x.opcode >= 0 ? " opcode " : "",
			       x.opcode >= 0 ? wc_opcode_name(x.opcode) : "",
			       x.len >= 0 ? " byte_len " : "",
			       x.len >= 0 ? std::to_string(x.len).c_str() : "");
	}
	// Nothing more may follow.
	for (auto &g : poll_n(cq, 8, 0.005))
		P.fail("%s: unexpected completion wr_id %llu %s qp %u", who,
		       static_cast<unsigned long long>(g.wr_id), ibv_wc_status_str(g.status),
		       g.qp_num);
}

// ---- 1. rkey ----------------------------------------------------------------

enum bad_key { KEY_DEREG, KEY_VARIANT, KEY_NO_INDEX, KEY_OTHER_PD };
const char *const bad_key_names[] = {
	"the rkey of a deregistered MR",
	"a made-up rkey (the target's index, another variant)",
	"a made-up rkey (no MR at its index)",
	"the rkey of an MR in another PD",
};

// A bad rkey for @tgt (on B) of the given kind. *other_pd and *other_mr
// are what the caller frees.
uint32_t make_bad_key(point &P, bad_key kind, const region &tgt, ibv_pd **other_pd,
		      ibv_mr **other_mr)
{
	uint32_t k = 0;
	switch (kind) {
	case KEY_DEREG: {
		// Over the same memory: a stale key must not reach it.
		ibv_mr *mr = ibv_reg_mr(B.pd, tgt.mem, tgt.len, ALL_REMOTE);
		if (!mr) {
			P.fail("ibv_reg_mr: %s", strerror(errno));
			return 0;
		}
		k = mr->rkey;
		ibv_dereg_mr(mr);
		break;
	}
	case KEY_VARIANT:
		k = tgt.rkey() ^ 0x5a;
		break;
	case KEY_NO_INDEX:
		k = (tgt.rkey() ^ 0x00ff0000u) | 0x80000000u;
		break;
	case KEY_OTHER_PD:
		*other_pd = ibv_alloc_pd(B.ctx);
		*other_mr = *other_pd ? ibv_reg_mr(*other_pd, tgt.mem, tgt.len, ALL_REMOTE) :
					nullptr;
		if (!*other_mr) {
			P.fail("MR in a second PD: %s", strerror(errno));
			return 0;
		}
		k = (*other_mr)->rkey;
		break;
	}
	if (k == tgt.rkey())
		P.fail("the bad key 0x%x equals the target's", k);
	return g_inject_rkey ? tgt.rkey() : k;
}

void test_write_bad_rkey(bad_key kind)
{
	point P;
	conn c;
	region tgt, src, rbuf;
	ibv_pd *opd = nullptr;
	ibv_mr *omr = nullptr;
	qp_params p;

	if (region_make(P, tgt, "target", B, 8192, ALL_REMOTE, 11) &&
	    region_make(P, src, "source", A, 8192, IBV_ACCESS_LOCAL_WRITE, 12) &&
	    region_make(P, rbuf, "receive buffer", B, 4096, IBV_ACCESS_LOCAL_WRITE, 13) &&
	    conn_make(P, c, p)) {
		uint32_t bad = make_bad_key(P, kind, tgt, &opd, &omr);
		for (int i = 0; i < 4; i++)
			posted(P, post_recv(c.b.qp, 100 + i, rbuf, 64 * i, 64), "receive", 100 + i);
		// The bad WRITE, then a WRITE, SEND, READ and WRITE that are valid
		// but come after it: flushed, nothing of them executed.
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, src, 0, 256, tgt.addr(0), bad),
		       "WRITE", 1);
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_WRITE, src, 256, 256, tgt.addr(256),
			       tgt.rkey()), "WRITE", 2);
		posted(P, post(c.a.qp, 3, IBV_WR_SEND, src, 512, 64), "SEND", 3);
		posted(P, post(c.a.qp, 4, IBV_WR_RDMA_READ, src, 1024, 512, tgt.addr(1024),
			       tgt.rkey()), "READ", 4);
		posted(P, post(c.a.qp, 5, IBV_WR_RDMA_WRITE, src, 2048, 3000, tgt.addr(2048),
			       tgt.rkey()), "WRITE", 5);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_REM_ACCESS_ERR},
			    {2, IBV_WC_WR_FLUSH_ERR},
			    {3, IBV_WC_WR_FLUSH_ERR},
			    {4, IBV_WC_WR_FLUSH_ERR},
			    {5, IBV_WC_WR_FLUSH_ERR}});
		expect_wcs(P, "responder", c.b.cq, c.b.qpn,
			   {{100, IBV_WC_WR_FLUSH_ERR},
			    {101, IBV_WC_WR_FLUSH_ERR},
			    {102, IBV_WC_WR_FLUSH_ERR},
			    {103, IBV_WC_WR_FLUSH_ERR}});
		expect_state(P, "requester", c.a.qp, IBV_QPS_ERR);
		expect_state(P, "responder", c.b.qp, IBV_QPS_ERR);
		region_check(P, tgt);
		region_check(P, src);
		region_check(P, rbuf);
	}
	P.report("WRITE with %s: REM_ACCESS_ERR, 4 WQEs after it flushed in order, target "
		 "unchanged, responder in ERR with its 4 receives flushed in order",
		 bad_key_names[kind]);
	conn_free(c);
	if (omr)
		ibv_dereg_mr(omr);
	if (opd)
		ibv_dealloc_pd(opd);
	region_free(rbuf);
	region_free(src);
	region_free(tgt);
}

// ---- 2-4. bounds, access rights, READ ---------------------------------------

// One request that must fail with REM_ACCESS_ERR, then a SEND that must be
// flushed; the target and the local buffer unchanged, both QPs in ERR.
struct access_case {
	const char *desc;
	ibv_wr_opcode op;
	long toff;		// target offset from the MR's start
	uint32_t len;
	int mr_access;		// of the target MR
	int qp_access = ALL_REMOTE;	// B's qp_access_flags
	bool bad_rkey = false;	// a deregistered MR's rkey
	bool control = false;	// first a WRITE that ends exactly at the MR's end
	int alt = -1;		// another acceptable status than REM_ACCESS_ERR
};

void run_access_case(const access_case &k)
{
	point P;
	conn c;
	region tgt, loc;
	qp_params p;
	p.access_b = k.qp_access;

	if (region_make(P, tgt, "target", B, 8192, k.mr_access, 21) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 22) &&
	    conn_make(P, c, p)) {
		uint32_t rkey = tgt.rkey();
		if (k.bad_rkey) {
			ibv_mr *mr = ibv_reg_mr(B.pd, tgt.mem, tgt.len, ALL_REMOTE);
			if (mr) {
				rkey = g_inject_rkey ? rkey : mr->rkey;
				ibv_dereg_mr(mr);
			} else {
				P.fail("ibv_reg_mr: %s", strerror(errno));
			}
		}
		std::vector<want> w;
		uint64_t id = 1;
		if (k.control) {
			posted(P, post(c.a.qp, id, IBV_WR_RDMA_WRITE, loc, 4096, 100,
				       tgt.addr(tgt.len - 100), rkey), "WRITE", id);
			tgt.expect(tgt.len - 100, loc.mem + 4096, 100);
			w.push_back({id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE});
		}
		uint64_t cmp_add = 0x1111111111111111ull;
		posted(P, post(c.a.qp, id, k.op, loc, 64, k.len, tgt.addr(k.toff), rkey, cmp_add,
			       cmp_add), "request", id);
		w.push_back({id++, IBV_WC_REM_ACCESS_ERR, -1, -1, k.alt});
		posted(P, post(c.a.qp, id, IBV_WR_SEND, loc, 0, 16), "SEND", id);
		w.push_back({id++, IBV_WC_WR_FLUSH_ERR});
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, w);
		expect_wcs(P, "responder", c.b.cq, c.b.qpn, {});
		expect_state(P, "requester", c.a.qp, IBV_QPS_ERR);
		expect_state(P, "responder", c.b.qp, IBV_QPS_ERR);
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("%s", k.desc);
	conn_free(c);
	region_free(loc);
	region_free(tgt);
}

void test_bounds()
{
	constexpr int RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	access_case past = {"WRITE [end-100, end) lands; WRITE [end-100, end+1): "
			    "REM_ACCESS_ERR, MR and the pages around it unchanged",
			    IBV_WR_RDMA_WRITE, 8192 - 100, 101, RW};
	past.control = true;
	run_access_case(past);
	run_access_case({"WRITE [start-1, start+99): REM_ACCESS_ERR, MR and the pages "
			 "around it unchanged",
			 IBV_WR_RDMA_WRITE, -1, 100, RW});
	run_access_case({"3-packet WRITE ending 1 byte past the MR: REM_ACCESS_ERR, not one "
			 "byte of it written",
			 IBV_WR_RDMA_WRITE, 8192 - 2999, 3000, RW});
	run_access_case({"READ [end-100, end+1): REM_ACCESS_ERR, local buffer unchanged",
			 IBV_WR_RDMA_READ, 8192 - 100, 101, RW});
}

void test_access()
{
	run_access_case({"WRITE to an MR without REMOTE_WRITE: REM_ACCESS_ERR, target unchanged",
			 IBV_WR_RDMA_WRITE, 0, 512,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC});
	run_access_case({"READ from an MR without REMOTE_READ: REM_ACCESS_ERR, local buffer "
			 "unchanged",
			 IBV_WR_RDMA_READ, 0, 512,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_ATOMIC});
	run_access_case({"FETCH_ADD on an MR without REMOTE_ATOMIC: REM_ACCESS_ERR, target and "
			 "local buffer unchanged",
			 IBV_WR_ATOMIC_FETCH_AND_ADD, 64, 8,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ});
	// Implementations differ here (rdma_rxe NAKs it as an invalid request):
	// either status, but the access must fail and change nothing.
	access_case qpw = {"WRITE through a responder QP without REMOTE_WRITE access: "
			   "REM_ACCESS_ERR (or REM_INV_REQ_ERR), target unchanged",
			   IBV_WR_RDMA_WRITE, 0, 512, ALL_REMOTE};
	qpw.qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	qpw.alt = IBV_WC_REM_INV_REQ_ERR;
	run_access_case(qpw);
}

void test_read()
{
	access_case k = {"READ with the rkey of a deregistered MR: REM_ACCESS_ERR, local "
			 "buffer unchanged",
			 IBV_WR_RDMA_READ, 0, 2048, ALL_REMOTE};
	k.bad_rkey = true;
	run_access_case(k);
}

// ---- 5. the peer vanishes ---------------------------------------------------

// How the responder goes away: its QP destroyed, moved to RESET, or the
// network between drops everything (netem loss 100% set by the caller:
// -o blackhole; the responder QP stays in RTS and sees nothing).
enum gone_how { GONE_DESTROY, GONE_RESET, GONE_BLACKHOLE };

void test_peer_gone(uint8_t retry_cnt, gone_how how)
{
	const bool destroy = how == GONE_DESTROY;
	const char *const what[] = {"destroyed", "moved to RESET",
				    "cut off (netem loss 100%)"};
	point P;
	conn c;
	region tgt, src;
	qp_params p;
	p.timeout = 12;
	p.retry_cnt = retry_cnt;
	const double T = 4.096e-6 * (1 << p.timeout);
	const double lo = (retry_cnt + 1) * T * 0.5, hi = 5.0;
	double elapsed = -1;
	delta rto(A, "retransmit_timeouts"), rex(A, "retry_exceeded");
	delta drop(B, destroy ? "rx_drop_no_qp" :
		      how == GONE_RESET ? "rx_drop_qp_state" : "rx_packets");
	char desc[256];

	snprintf(desc, sizeof(desc),
		 "responder QP %s, timeout 12, retry_cnt %u: SEND RETRY_EXC_ERR after >= %.1f "
		 "ms and < %.0f s, the WRITE after it flushed",
		 what[how], retry_cnt, lo * 1e3, hi);
	if (region_make(P, tgt, "target", B, 4096, ALL_REMOTE, 31) &&
	    region_make(P, src, "source", A, 4096, IBV_ACCESS_LOCAL_WRITE, 32) &&
	    conn_make(P, c, p)) {
		if (destroy) {
			if (ibv_destroy_qp(c.b.qp))
				P.fail("ibv_destroy_qp on %s failed", B.name);
			c.b.qp = nullptr;
		} else if (how == GONE_RESET && to_state(c.b.qp, IBV_QPS_RESET)) {
			P.fail("responder -> RESET failed");
		}
		double t0 = now(), t1 = 0;
		posted(P, post(c.a.qp, 1, IBV_WR_SEND, src, 0, 100), "SEND", 1);
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_WRITE, src, 100, 1000, tgt.addr(0),
			       tgt.rkey()), "WRITE", 2);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_RETRY_EXC_ERR}, {2, IBV_WC_WR_FLUSH_ERR}}, &t1);
		if (t1 > 0) {
			elapsed = t1 - t0;
			if (elapsed < lo || elapsed >= hi)
				P.fail("the error came after %.1f ms, expected [%.1f ms, %.0f s)",
				       elapsed * 1e3, lo * 1e3, hi);
		}
		expect_state(P, "requester", c.a.qp, IBV_QPS_ERR);
		if (!destroy)
			expect_state(P, "responder", c.b.qp,
				     how == GONE_RESET ? IBV_QPS_RESET : IBV_QPS_RTS);
		expect_wcs(P, "responder", c.b.cq, c.b.qpn, {});
		region_check(P, tgt);
		region_check(P, src);
	}
	if (elapsed >= 0)
		tap::diag("retry_cnt %u: RETRY_EXC_ERR after %.1f ms ((retry_cnt + 1) x timeout "
			  "= %.1f ms)", retry_cnt, elapsed * 1e3, (retry_cnt + 1) * T * 1e3);
	P.report("%s", desc);
	snprintf(desc, sizeof(desc),
		 "retry_cnt %u: %s retransmit_timeouts +%u, retry_exceeded +1; %s %s %s",
		 retry_cnt, A.name, retry_cnt, B.name, drop.name,
		 how == GONE_BLACKHOLE ? "+0" : "grew");
	check_counters(desc, {{&rto, retry_cnt}, {&rex, 1},
			      {&drop, how == GONE_BLACKHOLE ? 0 : -1}});
	conn_free(c);
	region_free(src);
	region_free(tgt);
}

// ---- 6. RNR -----------------------------------------------------------------

void test_rnr_exceeded(uint8_t rnr_retry)
{
	point P;
	conn c;
	region src;
	qp_params p;
	p.rnr_retry = rnr_retry;
	p.min_rnr_timer = 1;	// 0.01 ms
	delta sent(B, "rnr_nak_sent"), rcvd(A, "rnr_nak_received"), rex(A, "retry_exceeded");
	char desc[256];

	if (region_make(P, src, "source", A, 4096, IBV_ACCESS_LOCAL_WRITE, 41) &&
	    conn_make(P, c, p)) {
		posted(P, post(c.a.qp, 1, IBV_WR_SEND, src, 0, 100), "SEND", 1);
		posted(P, post(c.a.qp, 2, IBV_WR_SEND, src, 100, 100), "SEND", 2);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_RNR_RETRY_EXC_ERR}, {2, IBV_WC_WR_FLUSH_ERR}});
		expect_wcs(P, "responder", c.b.cq, c.b.qpn, {});
		expect_state(P, "requester", c.a.qp, IBV_QPS_ERR);
		// An RNR NAK is no error of the responder's.
		expect_state(P, "responder", c.b.qp, IBV_QPS_RTS);
		region_check(P, src);
	}
	P.report("no receive posted, rnr_retry %u: SEND RNR_RETRY_EXC_ERR, the next flushed, "
		 "responder still in RTS", rnr_retry);
	snprintf(desc, sizeof(desc),
		 "rnr_retry %u: %u RNR NAKs received by %s (at least as many sent by %s), "
		 "retry_exceeded +1", rnr_retry, rnr_retry + 1, A.name, B.name);
	// A retransmission that crosses an RNR NAK in flight (a slow guest) earns
	// one more NAK, for a PSN the requester has already given up on: the
	// responder may send more than the requester counts.
	check_counters(desc, {{&sent, -(long long)(rnr_retry + 1)}, {&rcvd, rnr_retry + 1},
			      {&rex, 1}});
	conn_free(c);
	region_free(src);
}

// rnr_retry 7 (infinite): the SEND waits for the receive however long it
// takes. With @timeout and @retry_cnt small, the RNR back-off lasts many
// times (retry_cnt + 1) x timeout: RNR NAKs are answers, so the transport
// timer must not give up on a responder that keeps sending them.
void test_rnr_recovers(uint8_t timeout, uint8_t retry_cnt, double delay)
{
	point P;
	conn c;
	region src, rbuf;
	qp_params p;
	p.timeout = timeout;
	p.retry_cnt = retry_cnt;
	p.rnr_retry = 7;
	p.min_rnr_timer = 1;
	const uint32_t len = 3000;
	delta sent(B, "rnr_nak_sent");

	if (region_make(P, src, "source", A, 4096, IBV_ACCESS_LOCAL_WRITE, 51) &&
	    region_make(P, rbuf, "receive buffer", B, 4096, IBV_ACCESS_LOCAL_WRITE, 52) &&
	    conn_make(P, c, p)) {
		posted(P, post(c.a.qp, 1, IBV_WR_SEND, src, 5, len), "SEND", 1);
		// No receive for a while: the SEND must not complete meanwhile.
		double t0 = now();
		auto early = poll_n(c.a.cq, 1, delay);
		for (auto &g : early)
			P.fail("requester: completion wr_id %llu %s after %.0f ms, before any "
			       "receive was posted", static_cast<unsigned long long>(g.wr_id),
			       ibv_wc_status_str(g.status), (now() - t0) * 1e3);
		posted(P, post_recv(c.b.qp, 7, rbuf, 0, 4096), "receive", 7);
		if (early.empty()) {
			rbuf.expect(0, src.mem + 5, len);
			expect_wcs(P, "requester", c.a.cq, c.a.qpn,
				   {{1, IBV_WC_SUCCESS, IBV_WC_SEND}});
			expect_wcs(P, "responder", c.b.cq, c.b.qpn,
				   {{7, IBV_WC_SUCCESS, IBV_WC_RECV, len}});
		}
		expect_state(P, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(P, "responder", c.b.qp, IBV_QPS_RTS);
		region_check(P, rbuf);
		region_check(P, src);
		if (sent.available() && sent.grown() < 1)
			P.fail("%s sent no RNR NAK", B.name);
	}
	P.report("rnr_retry 7 (infinite), timeout %u, retry_cnt %u, receive posted %.0f ms late: "
		 "the %u-byte SEND completes then, RECV byte_len %u, data intact, nothing "
		 "written past it",
		 timeout, retry_cnt, delay * 1e3, len, len);
	conn_free(c);
	region_free(rbuf);
	region_free(src);
}

// A SEND of 64 packets to a receive queue that stays empty for @delay: an
// RNR NAK must cost the requester one packet, not the message. A message
// started past the responder's credit limit (the first of a connection is)
// sends its first packet alone and the rest once that one is acknowledged;
// otherwise all 64 go out, the first draws the RNR NAK, the responder drops
// the other 63 as out of sequence, and after each back-off all 64 go again.
void test_rnr_long_send(double delay)
{
	point P;
	conn c;
	region src, rbuf;
	qp_params p;
	p.rnr_retry = 7;
	p.min_rnr_timer = 1;
	const uint32_t len = 64 * g_mtu_bytes;
	delta naks(A, "rnr_nak_received"), resent(A, "retransmitted_packets");

	if (region_make(P, src, "source", A, len, IBV_ACCESS_LOCAL_WRITE, 55) &&
	    region_make(P, rbuf, "receive buffer", B, len, IBV_ACCESS_LOCAL_WRITE, 56) &&
	    conn_make(P, c, p)) {
		posted(P, post(c.a.qp, 1, IBV_WR_SEND, src, 0, len), "SEND", 1);
		auto early = poll_n(c.a.cq, 1, delay);
		for (auto &g : early)
			P.fail("requester: completion wr_id %llu %s before any receive was posted",
			       static_cast<unsigned long long>(g.wr_id), ibv_wc_status_str(g.status));
		posted(P, post_recv(c.b.qp, 7, rbuf, 0, len), "receive", 7);
		if (early.empty()) {
			rbuf.expect(0, src.mem, len);
			expect_wcs(P, "requester", c.a.cq, c.a.qpn,
				   {{1, IBV_WC_SUCCESS, IBV_WC_SEND}});
			expect_wcs(P, "responder", c.b.cq, c.b.qpn,
				   {{7, IBV_WC_SUCCESS, IBV_WC_RECV, len}});
		}
		region_check(P, rbuf);
		region_check(P, src);
		if (naks.available() && resent.available()) {
			long long n = naks.grown(), r = resent.grown();
			if (g_verbose || n < 1 || r > n + 1)
				tap::diag("%s: rnr_nak_received +%lld, retransmitted_packets +%lld",
					  A.name, n, r);
			if (n < 1)
				P.fail("%s received no RNR NAK", A.name);
			else if (r > n + 1)
				P.fail("%lld packets resent for %lld RNR NAKs: more than one each",
				       r, n);
		}
	}
	P.report("a %u-byte SEND (64 packets), receive posted %.0f ms late: RECV byte_len %u, "
		 "data intact, at most one packet resent per RNR NAK", len, delay * 1e3, len);
	conn_free(c);
	region_free(rbuf);
	region_free(src);
}

// ---- 7. atomics -------------------------------------------------------------

uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void test_atomics()
{
	point P, Pfa, Phit, Pmiss, Pburst, Pchain;
	conn c;
	region tgt, loc;
	qp_params p;
	constexpr size_t SLOT = 5 * 8;	// the target u64's MR offset
	uint64_t v = 0x0123456789abcdefull;
	const uint64_t poison = 0xeeeeeeeeeeeeeeeeull;

	if (region_make(P, tgt, "target", B, 4096, ALL_REMOTE, 61) &&
	    region_make(P, loc, "local buffer", A, 4096, IBV_ACCESS_LOCAL_WRITE, 62) &&
	    conn_make(P, c, p)) {
		auto target = [&]() {
			uint64_t t;
			memcpy(&t, tgt.mem + SLOT, 8);
			return t;
		};
		memcpy(tgt.mem + SLOT, &v, 8);
		tgt.accept(SLOT, 8);
		uint64_t id = 1;

		// One at a time: FETCH_ADD, CMP_SWAP that hits, CMP_SWAP that misses.
		for (int i = 0; i < 30; i++) {
			int kind = i % 3;
			point &Q = kind == 0 ? Pfa : kind == 1 ? Phit : Pmiss;
			size_t loff = 8 * (i + 1);
			memcpy(loc.mem + loff, &poison, 8);
			loc.accept(loff, 8);
			uint64_t r = mix(i), nv = v, cmp = 0, swap = 0;
			ibv_wr_opcode op = IBV_WR_ATOMIC_CMP_AND_SWP;
			if (kind == 0) {
				op = IBV_WR_ATOMIC_FETCH_AND_ADD;
				cmp = (i & 1) ? r : r & 0xffff;	// large adds wrap
				nv = v + cmp;
			} else if (kind == 1) {
				cmp = v;
				swap = r;
				nv = r;
			} else {
				cmp = v ^ (1ull << (i % 64));
				swap = r;
			}
			posted(Q, post(c.a.qp, id, op, loc, loff, 8, tgt.addr(SLOT), tgt.rkey(),
				       cmp, swap), "atomic", id);
			expect_wcs(Q, "requester", c.a.cq, c.a.qpn,
				   {{id, IBV_WC_SUCCESS,
				     kind ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, 8}});
			id++;
			uint64_t orig;
			memcpy(&orig, loc.mem + loff, 8);
			if (orig != v)
				Q.fail("#%d: returned 0x%016llx, the target held 0x%016llx", i,
				       static_cast<unsigned long long>(orig),
				       static_cast<unsigned long long>(v));
			if (target() != nv)
				Q.fail("#%d: target is 0x%016llx, expected 0x%016llx", i,
				       static_cast<unsigned long long>(target()),
				       static_cast<unsigned long long>(nv));
			loc.expect(loff, &v, 8);
			tgt.expect(SLOT, &nv, 8);
			v = nv;
			region_check(Q, tgt);
			region_check(Q, loc);
		}
		Pfa.report("10 x FETCH_ADD: the original value returned, the target = old + add "
			   "(mod 2^64), its neighbours unchanged");
		Phit.report("10 x CMP_SWAP, compare equal: the original value returned, the "
			    "target swapped");
		Pmiss.report("10 x CMP_SWAP, compare unequal: the original value returned, the "
			     "target unchanged");

		// 16 FETCH_ADDs in flight (max_rd_atomic 16): executed in order.
		std::vector<want> w;
		uint64_t x = v;
		for (int i = 0; i < 16; i++) {
			size_t loff = 512 + 8 * i;
			memcpy(loc.mem + loff, &poison, 8);
			posted(Pburst, post(c.a.qp, id, IBV_WR_ATOMIC_FETCH_AND_ADD, loc, loff, 8,
					    tgt.addr(SLOT), tgt.rkey(), i + 1), "FETCH_ADD", id);
			w.push_back({id++, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8});
			loc.expect(loff, &x, 8);
			x += i + 1;
		}
		expect_wcs(Pburst, "requester", c.a.cq, c.a.qpn, w);
		tgt.expect(SLOT, &x, 8);
		v = x;
		region_check(Pburst, tgt);
		region_check(Pburst, loc);
		Pburst.report("16 FETCH_ADDs in flight (add 1..16): originals v, v+1, v+3, ... "
			      "in order, target v+136");

		// A chain of 8 CMP_SWAPs in flight, each expecting its predecessor's
		// result: all hit only if they execute once each, in order.
		w.clear();
		for (int i = 0; i < 8; i++) {
			size_t loff = 1024 + 8 * i;
			uint64_t cur = v + i, next = v + i + 1;
			memcpy(loc.mem + loff, &poison, 8);
			posted(Pchain, post(c.a.qp, id, IBV_WR_ATOMIC_CMP_AND_SWP, loc, loff, 8,
					    tgt.addr(SLOT), tgt.rkey(), cur, next), "CMP_SWAP", id);
			w.push_back({id++, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8});
			loc.expect(loff, &cur, 8);
		}
		expect_wcs(Pchain, "requester", c.a.cq, c.a.qpn, w);
		v += 8;
		tgt.expect(SLOT, &v, 8);
		region_check(Pchain, tgt);
		region_check(Pchain, loc);
		expect_state(Pchain, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(Pchain, "responder", c.b.qp, IBV_QPS_RTS);
		expect_wcs(Pchain, "responder", c.b.cq, c.b.qpn, {});
		Pchain.report("a chain of 8 CMP_SWAPs in flight (v+k -> v+k+1): every one hits, "
			      "target v+8; both QPs still in RTS");
	}
	if (!P.ok()) {
		// Set-up failed: every point fails with its reason.
		for (point *Q : {&Pfa, &Phit, &Pmiss, &Pburst, &Pchain})
			Q->why = P.why;
		Pfa.report("10 x FETCH_ADD");
		Phit.report("10 x CMP_SWAP, compare equal");
		Pmiss.report("10 x CMP_SWAP, compare unequal");
		Pburst.report("16 FETCH_ADDs in flight");
		Pchain.report("a chain of 8 CMP_SWAPs in flight");
	}
	conn_free(c);
	region_free(loc);
	region_free(tgt);
}

// ---- 7b. IBTA 1.5: ATOMIC WRITE and FLUSH -----------------------------------

// ibv_query_device_ex's device_cap_flags_ex: no rdma-core names these bits.
constexpr uint64_t CAP_FLUSH_GLOBAL = 1ull << 38;
constexpr uint64_t CAP_ATOMIC_WRITE = 1ull << 40;

// IB_UVERBS_ACCESS_FLUSH_GLOBAL and _PERSISTENT (rdma-core 45 names them).
// ib_cm's connection set-up gives a QP both whenever the device can flush
// at all, so every rdma_cm QP on such a device is moved to INIT with them.
constexpr int CM_FLUSH_ACCESS = (1 << 8) | (1 << 9);

// An sroce device (its sysfs ABI attribute), not rdma_rxe or hardware:
// what only sroce's provider checks at posting is checked there only.
bool is_sroce(const dev &d)
{
	std::string p = std::string("/sys/class/infiniband/") + d.name + "/sroce_abi_version";
	return access(p.c_str(), F_OK) == 0;
}

uint64_t device_caps_ex(const dev &d)
{
	ibv_device_attr_ex x = {};
	return ibv_query_device_ex(d.ctx, nullptr, &x) ? 0 : x.device_cap_flags_ex;
}

// One ibv_wr_atomic_write batch of @n words from MR offset @off, values
// from @seed; the target expects them.
int post_awrites(ibv_qp *qp, uint64_t &id, region &tgt, size_t off, int n, uint64_t seed,
		 std::vector<want> &w)
{
	ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(x);
	for (int i = 0; i < n; i++) {
		uint64_t v = mix(seed + i);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, tgt.rkey(), tgt.addr(off + 8 * i), &v);
		v = ~v;	// the builder copied it: changing it now changes nothing
		w.push_back({id++, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8});
		uint64_t want_v = mix(seed + i);
		tgt.expect(off + 8 * i, &want_v, 8);
	}
	return ibv_wr_complete(x);
}

void test_atomic_write()
{
	point P, Pcap, Pcm, Pone, Pburst, Pold, Palign, Paccess;
	conn c;
	region tgt, loc, ro;
	ibv_qp_ex *x = nullptr;
	qp_params p;
	p.send_ops_a = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_RDMA_WRITE;
	uint64_t id = 1;

	uint64_t caps = device_caps_ex(A) & device_caps_ex(B);
	if (!(caps & CAP_ATOMIC_WRITE))
		Pcap.fail("device_cap_flags_ex 0x%llx (both devices) without ATOMIC_WRITE (bit 40)",
			  static_cast<unsigned long long>(caps));
	Pcap.report("ibv_query_device_ex: ATOMIC_WRITE (bit 40) on both devices");
	// B's QP gets the access ib_cm would give it (a regression: sroce
	// refused FLUSH_PERSISTENT on a QP, so no rdma_cm QP could connect).
	if (device_caps_ex(B) & CAP_FLUSH_GLOBAL)
		p.access_b |= CM_FLUSH_ACCESS;

	if (region_make(P, tgt, "target", B, 4096, ALL_REMOTE, 71) &&
	    region_make(P, loc, "local buffer", A, 4096, IBV_ACCESS_LOCAL_WRITE, 72) &&
	    region_make(P, ro, "read-only target", B, 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 73) &&
	    conn_make(P, c, p)) {
		Pcm.report("B's QP connects with the access ib_cm gives it (remote write, "
			   "read, atomic%s)", (p.access_b & CM_FLUSH_ACCESS) ?
			   ", flush global and persistent" : "");
		std::vector<want> w;
		posted(Pone, post_awrites(c.a.qp, id, tgt, 40, 1, 1000, w), "ATOMIC_WRITE", id - 1);
		expect_wcs(Pone, "requester", c.a.cq, c.a.qpn, w);
		region_check(Pone, tgt);
		Pone.report("ibv_wr_atomic_write: IBV_WC_ATOMIC_WRITE, the 8 bytes at the word, "
			    "nothing else in the MR or its guards changed");

		w.clear();
		// Twice the same 16 words: the second batch's values must win.
		posted(Pburst, post_awrites(c.a.qp, id, tgt, 512, 16, 2000, w), "16 x ATOMIC_WRITE",
		       id - 1);
		posted(Pburst, post_awrites(c.a.qp, id, tgt, 512, 16, 3000, w), "16 x ATOMIC_WRITE",
		       id - 1);
		expect_wcs(Pburst, "requester", c.a.cq, c.a.qpn, w);
		region_check(Pburst, tgt);
		expect_state(Pburst, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(Pburst, "responder", c.b.qp, IBV_QPS_RTS);
		expect_wcs(Pburst, "responder", c.b.cq, c.b.qpn, {});
		Pburst.report("2 x 16 ATOMIC WRITEs in flight to the same words: completions in "
			      "order, the later values placed; both QPs in RTS, no responder CQE");

		// What sroce's provider checks or takes at posting (rdma-core's
		// rxe provider takes neither from an ibv_send_wr, nor checks).
		uint64_t v = 0x1122334455667788ull;
		if (is_sroce(A)) {
			// ibv_post_send: wr.rdma, the 8 bytes from the SGE.
			memcpy(loc.mem + 64, &v, 8);
			loc.accept(64, 8);
			posted(Pold, post(c.a.qp, id, IBV_WR_ATOMIC_WRITE, loc, 64, 8, tgt.addr(1024),
					  tgt.rkey()), "ATOMIC_WRITE (ibv_post_send)", id);
			expect_wcs(Pold, "requester", c.a.cq, c.a.qpn,
				   {{id++, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8}});
			tgt.expect(1024, &v, 8);
			region_check(Pold, tgt);
			region_check(Pold, loc);
			Pold.report("ibv_post_send IBV_WR_ATOMIC_WRITE (8 bytes from sg_list): placed");

			// Misaligned: refused at posting by either API, nothing sent.
			int r1 = post(c.a.qp, id, IBV_WR_ATOMIC_WRITE, loc, 64, 8, tgt.addr(1028),
				      tgt.rkey());
			int r2 = post(c.a.qp, id, IBV_WR_ATOMIC_WRITE, loc, 64, 4, tgt.addr(1032),
				      tgt.rkey());
			w.clear();
			x = ibv_qp_to_qp_ex(c.a.qp);
			ibv_wr_start(x);
			x->wr_id = id;
			x->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(x, tgt.rkey(), tgt.addr(1036), &v);
			int r3 = ibv_wr_complete(x);
			if (r1 != EINVAL || r2 != EINVAL || r3 != EINVAL)
				Palign.fail("misaligned post_send %d, 4-byte post_send %d, misaligned "
					    "wr_complete %d (EINVAL %d wanted)", r1, r2, r3, EINVAL);
			expect_wcs(Palign, "requester", c.a.cq, c.a.qpn, {});
			region_check(Palign, tgt);
			Palign.report("ATOMIC WRITE to a misaligned word or of 4 bytes: EINVAL at posting "
				      "(both APIs), no completion, target unchanged");
		} else {
			skip("ibv_post_send IBV_WR_ATOMIC_WRITE; misaligned ATOMIC WRITE",
			     "the requester's provider is not sroce's");
		}
		// To an MR without REMOTE_WRITE: REM_ACCESS_ERR, nothing placed.
		w.clear();
		x = ibv_qp_to_qp_ex(c.a.qp);
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, ro.rkey(), ro.addr(8), &v);
		x->wr_id = id + 1;
		ibv_wr_rdma_write(x, tgt.rkey(), tgt.addr(2048));
		ibv_wr_set_sge(x, loc.lkey(), loc.addr(0), 16);
		posted(Paccess, ibv_wr_complete(x), "ATOMIC_WRITE + WRITE", id);
		expect_wcs(Paccess, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_REM_ACCESS_ERR}, {id + 1, IBV_WC_WR_FLUSH_ERR}});
		id += 2;
		region_check(Paccess, ro);
		region_check(Paccess, tgt);
		expect_state(Paccess, "responder", c.b.qp, IBV_QPS_ERR);
		Paccess.report("ATOMIC WRITE to an MR without REMOTE_WRITE: REM_ACCESS_ERR, the "
			       "WRITE after it flushed, nothing placed, the responder in ERR");
	}
	if (!P.ok()) {
		for (point *Q : {&Pcm, &Pone, &Pburst, &Pold, &Palign, &Paccess})
			Q->why = P.why;
		Pcm.report("B's QP connects with the access ib_cm gives it");
		Pone.report("ibv_wr_atomic_write");
		Pburst.report("ATOMIC WRITEs in flight");
		Pold.report("ibv_post_send IBV_WR_ATOMIC_WRITE");
		Palign.report("misaligned ATOMIC WRITE");
		Paccess.report("ATOMIC WRITE without REMOTE_WRITE");
	}
	conn_free(c);
	region_free(ro);
	region_free(loc);
	region_free(tgt);
}

// Under loss (the caller has set it up: -o awrite-loss): rounds of 2 x 16
// ATOMIC WRITEs to the same 16 words and a READ of them, every one
// resent until it arrives; the responder must replay, never re-store, so
// each word ends with its later value, and the READ, ordered after them,
// returns exactly those. B's duplicate_requests shows the replays.
void test_atomic_write_loss()
{
	point P, Pdata;
	conn c;
	region tgt, loc;
	qp_params p;
	p.send_ops_a = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_RDMA_READ;
	p.timeout = 12;		// 16.8 ms: many resends in little time
	uint64_t id = 1;
	constexpr int ROUNDS = 8, WORDS = 16;
	delta dup(B, "duplicate_requests");

	if (region_make(P, tgt, "target", B, 4096, ALL_REMOTE, 91) &&
	    region_make(P, loc, "local buffer", A, 4096, IBV_ACCESS_LOCAL_WRITE, 92) &&
	    conn_make(P, c, p)) {
		ibv_qp_ex *x = ibv_qp_to_qp_ex(c.a.qp);
		for (int r = 0; r < ROUNDS && Pdata.ok(); r++) {
			std::vector<want> w;
			posted(Pdata, post_awrites(c.a.qp, id, tgt, 256, WORDS, 100 * r, w),
			       "16 x ATOMIC_WRITE", id - 1);
			posted(Pdata, post_awrites(c.a.qp, id, tgt, 256, WORDS, 100 * r + 50, w),
			       "16 x ATOMIC_WRITE", id - 1);
			ibv_wr_start(x);
			x->wr_id = id;
			x->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_read(x, tgt.rkey(), tgt.addr(256));
			ibv_wr_set_sge(x, loc.lkey(), loc.addr(512), 8 * WORDS);
			posted(Pdata, ibv_wr_complete(x), "READ", id);
			w.push_back({id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8 * WORDS});
			expect_wcs(Pdata, "requester", c.a.cq, c.a.qpn, w);
			loc.expect(512, tgt.ref.data() + GUARD + 256, 8 * WORDS);
			region_check(Pdata, tgt);
			region_check(Pdata, loc);
			if (!Pdata.ok())
				Pdata.fail("round %d of %d", r + 1, ROUNDS);
		}
		expect_state(Pdata, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(Pdata, "responder", c.b.qp, IBV_QPS_RTS);
	}
	if (!P.ok())
		Pdata.why = P.why;
	Pdata.report("under loss: %d rounds of 2 x %d ATOMIC WRITEs to the same words and a "
		     "READ of them: all succeed in order, the later values in place, the READ "
		     "returns them", ROUNDS, WORDS);
	if (P.ok())
		check_counters("under loss: the responder saw duplicate requests",
			       {{&dup, -1}});
	conn_free(c);
	region_free(loc);
	region_free(tgt);
}

#if SROCE_RDMA_CORE >= 45
// --no-flush: a kernel whose ib_core has no FLUSH (before 6.2: no MR
// flush access), where sroce does not offer it. Each device says so and
// refuses what needs it; nothing is sent.
void test_flush_absent()
{
	point P;
	for (dev *d : {&A, &B}) {
		uint64_t caps = device_caps_ex(*d);
		if (caps & CAP_FLUSH_GLOBAL)
			P.fail("%s: device_cap_flags_ex 0x%llx has FLUSH_GLOBAL (bit 38)", d->name,
			       static_cast<unsigned long long>(caps));
		uint8_t *mem = static_cast<uint8_t *>(aligned_alloc(PAGE, PAGE));
		errno = 0;
		ibv_mr *mr = mem ? ibv_reg_mr(d->pd, mem, PAGE,
					      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_FLUSH_GLOBAL)
				 : nullptr;
		if (mr) {
			P.fail("%s: ibv_reg_mr with FLUSH_GLOBAL succeeded", d->name);
			ibv_dereg_mr(mr);
		} else if (errno != EINVAL) {
			P.fail("%s: ibv_reg_mr with FLUSH_GLOBAL: %s, expected EINVAL", d->name,
			       strerror(errno));
		}
		free(mem);
		if (!is_sroce(*d))
			continue;
		// sroce's provider offers ibv_wr_flush only where the kernel has it.
		ibv_cq *cq = ibv_create_cq(d->ctx, 16, nullptr, nullptr, 0);
		if (!cq) {
			P.fail("%s: ibv_create_cq: %s", d->name, strerror(errno));
			continue;
		}
		errno = 0;
		ibv_qp *qp = create_rc_qp_ex(*d, cq, IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE);
		int err = errno;
		if (qp) {
			P.fail("%s: a QP with IBV_QP_EX_WITH_FLUSH was created", d->name);
			ibv_destroy_qp(qp);
		} else if (err != EOPNOTSUPP) {
			P.fail("%s: a QP with IBV_QP_EX_WITH_FLUSH: %s, expected EOPNOTSUPP", d->name,
			       strerror(err));
		}
		ibv_destroy_cq(cq);
	}
	P.report("FLUSH not offered (this kernel's ib_core has no MR flush access): no "
		 "FLUSH_GLOBAL in device_cap_flags_ex, ibv_reg_mr with FLUSH_GLOBAL EINVAL, sroce's "
		 "QP with IBV_QP_EX_WITH_FLUSH EOPNOTSUPP");
}

void test_flush()
{
	point P, Pcap, Ppmem, Prange, Pmr, Paccess;
	conn c;
	region tgt, loc, noflush;
	qp_params p;
	p.send_ops_a = IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE;
	p.access_b = ALL_REMOTE | IBV_ACCESS_FLUSH_GLOBAL;
	uint64_t id = 1;

	uint64_t caps = device_caps_ex(A) & device_caps_ex(B);
	if (g_no_flush) {
		test_flush_absent();
		return;
	}
	if (!(caps & CAP_FLUSH_GLOBAL))
		Pcap.fail("device_cap_flags_ex 0x%llx (both devices) without FLUSH_GLOBAL (bit 38)",
			  static_cast<unsigned long long>(caps));
	Pcap.report("ibv_query_device_ex: FLUSH_GLOBAL (bit 38) on both devices");

	// Ordinary memory is not persistent: no MR may promise it.
	uint8_t *mem = static_cast<uint8_t *>(aligned_alloc(PAGE, PAGE));
	ibv_mr *pm = mem ? ibv_reg_mr(B.pd, mem, PAGE,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_FLUSH_PERSISTENT)
			 : nullptr;
	if (pm) {
		Ppmem.fail("ibv_reg_mr with FLUSH_PERSISTENT on anonymous memory succeeded");
		ibv_dereg_mr(pm);
	}
	free(mem);
	Ppmem.report("ibv_reg_mr(IBV_ACCESS_FLUSH_PERSISTENT) on RAM: refused");

	if (region_make(P, tgt, "target", B, 8192,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL, 81) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 82) &&
	    region_make(P, noflush, "target without flush", B, 4096, ALL_REMOTE, 83) &&
	    conn_make(P, c, p)) {
		ibv_qp_ex *x = ibv_qp_to_qp_ex(c.a.qp);
		// WRITE 8 KiB, FLUSH the range written: both complete in order.
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, tgt.rkey(), tgt.addr(0));
		ibv_wr_set_sge(x, loc.lkey(), loc.addr(0), 8192);
		x->wr_id = id + 1;
		ibv_wr_flush(x, tgt.rkey(), tgt.addr(0), 8192, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
		posted(Prange, ibv_wr_complete(x), "WRITE + FLUSH", id);
		expect_wcs(Prange, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8192},
			    {id + 1, IBV_WC_SUCCESS, IBV_WC_FLUSH}});
		id += 2;
		tgt.expect(0, loc.mem, 8192);
		region_check(Prange, tgt);
		Prange.report("WRITE 8 KiB then FLUSH (global, range): IBV_WC_FLUSH after the "
			      "WRITE's completion, the data in place");

		// The whole MR (address and length not used), then a range past
		// its end: REM_ACCESS_ERR.
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_flush(x, tgt.rkey(), 0, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR);
		posted(Pmr, ibv_wr_complete(x), "FLUSH (MR)", id);
		expect_wcs(Pmr, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_SUCCESS, IBV_WC_FLUSH}});
		id++;
		expect_state(Pmr, "responder", c.b.qp, IBV_QPS_RTS);
		Pmr.report("FLUSH (global, whole MR, address 0): IBV_WC_FLUSH, responder in RTS");

		// An MR registered without FLUSH_GLOBAL.
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_flush(x, noflush.rkey(), noflush.addr(0), 64, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_RANGE);
		posted(Paccess, ibv_wr_complete(x), "FLUSH", id);
		expect_wcs(Paccess, "requester", c.a.cq, c.a.qpn, {{id, IBV_WC_REM_ACCESS_ERR}});
		id++;
		region_check(Paccess, noflush);
		expect_state(Paccess, "responder", c.b.qp, IBV_QPS_ERR);
		Paccess.report("FLUSH of an MR without FLUSH_GLOBAL: REM_ACCESS_ERR, responder in ERR");
	}
	if (!P.ok()) {
		for (point *Q : {&Prange, &Pmr, &Paccess})
			Q->why = P.why;
		Prange.report("WRITE then FLUSH (range)");
		Pmr.report("FLUSH (whole MR)");
		Paccess.report("FLUSH without FLUSH_GLOBAL");
	}
	conn_free(c);
	region_free(noflush);
	region_free(loc);
	region_free(tgt);
}
#endif

// ---- 8. a SEND larger than the receive --------------------------------------

void test_send_too_big(uint32_t cap, uint32_t len)
{
	point P;
	conn c;
	region src, rbuf;
	qp_params p;

	if (region_make(P, src, "source", A, 8192, IBV_ACCESS_LOCAL_WRITE, 71) &&
	    region_make(P, rbuf, "receive buffer", B, 8192, IBV_ACCESS_LOCAL_WRITE, 72) &&
	    conn_make(P, c, p)) {
		posted(P, post_recv(c.b.qp, 500, rbuf, 0, cap), "receive", 500);
		posted(P, post_recv(c.b.qp, 501, rbuf, 6144, 64), "receive", 501);
		posted(P, post(c.a.qp, 1, IBV_WR_SEND, src, 0, len), "SEND", 1);
		posted(P, post(c.a.qp, 2, IBV_WR_SEND, src, 4096, 10), "SEND", 2);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_REM_INV_REQ_ERR}, {2, IBV_WC_WR_FLUSH_ERR}});
		expect_wcs(P, "responder", c.b.cq, c.b.qpn,
			   {{500, IBV_WC_LOC_LEN_ERR}, {501, IBV_WC_WR_FLUSH_ERR}});
		expect_state(P, "requester", c.a.qp, IBV_QPS_ERR);
		expect_state(P, "responder", c.b.qp, IBV_QPS_ERR);
		// The receive's own bytes are undefined now; nothing else may change.
		rbuf.accept(0, cap);
		region_check(P, rbuf);
		region_check(P, src);
	}
	P.report("%u-byte SEND (%u packet(s)) into a %u-byte receive: requester "
		 "REM_INV_REQ_ERR, receive LOC_LEN_ERR, the next of each flushed, nothing "
		 "written past the receive buffer",
		 len, (len + g_mtu_bytes - 1) / g_mtu_bytes, cap);
	conn_free(c);
	region_free(rbuf);
	region_free(src);
}

// ---- SRQ ----------------------------------------------------------------

// Wait up to g_wait for an async event of @ctx; false on timeout.
bool async_event(ibv_context *ctx, ibv_async_event *ev)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	double end = now() + g_wait;
	bool got = false;
	while (!got && now() < end) {
		if (!ibv_get_async_event(ctx, ev))
			got = true;
		else
			usleep(1000);
	}
	fcntl(ctx->async_fd, F_SETFL, fl);
	return got;
}

// A QP whose receives come from an SRQ: SENDs land in the SRQ's WQEs in
// order, with their data; the armed limit fires IBV_EVENT_SRQ_LIMIT_REACHED
// once, when fewer WQEs than the limit are left, and disarms.
void test_srq_limit()
{
	point P;
	conn c;
	region src, rbuf;
	qp_params p;
	ibv_srq *srq = nullptr;
	const int nrecv = 8, nsend = 5, limit = 4, len = 100;

	if (region_make(P, src, "source", A, 8192, IBV_ACCESS_LOCAL_WRITE, 81) &&
	    region_make(P, rbuf, "SRQ buffers", B, 8192, IBV_ACCESS_LOCAL_WRITE, 82) &&
	    end_make(P, c.a, A)) {
		ibv_srq_init_attr sa = {};
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		srq = ibv_create_srq(B.pd, &sa);
		c.b.d = &B;
		c.b.cq = srq ? ibv_create_cq(B.ctx, 64, nullptr, nullptr, 0) : nullptr;
		if (c.b.cq) {
			ibv_qp_init_attr ia = {};
			ia.send_cq = c.b.cq;
			ia.recv_cq = c.b.cq;
			ia.srq = srq;
			ia.qp_type = IBV_QPT_RC;
			ia.cap.max_send_wr = 16;
			ia.cap.max_send_sge = 1;
			c.b.qp = ibv_create_qp(B.pd, &ia);
		}
		if (!c.b.qp) {
			P.fail("SRQ, CQ or QP on %s: %s", B.name, strerror(errno));
		} else {
			c.b.qpn = c.b.qp->qp_num;
			int r = qp_connect(c.a, c.b, p.access_a, p.psn_ab, p.psn_ba, 12, p);
			if (!r)
				r = qp_connect(c.b, c.a, p.access_b, p.psn_ba, p.psn_ab,
					       p.min_rnr_timer, p);
			if (r)
				P.fail("connect: ibv_modify_qp: %s", strerror(r));
		}
	}
	if (P.ok()) {
		for (int i = 0; i < nrecv; i++) {
			ibv_sge sge = {rbuf.addr(i * 256), 256, rbuf.lkey()};
			ibv_recv_wr wr = {}, *bad;
			wr.wr_id = 600 + i;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			posted(P, ibv_post_srq_recv(srq, &wr, &bad), "SRQ receive", 600 + i);
		}
		ibv_srq_attr at = {};
		at.srq_limit = limit;
		if (ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT))
			P.fail("ibv_modify_srq(limit %d): %s", limit, strerror(errno));
		std::vector<want> ws, wr;
		for (int i = 0; i < nsend; i++) {
			posted(P, post(c.a.qp, 1 + i, IBV_WR_SEND, src, i * 512, len), "SEND",
			       1 + i);
			ws.push_back({static_cast<uint64_t>(1 + i), IBV_WC_SUCCESS});
			wr.push_back({static_cast<uint64_t>(600 + i), IBV_WC_SUCCESS,
				      IBV_WC_RECV, len});
			rbuf.expect(i * 256, src.mem + i * 512, len);
		}
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, ws);
		expect_wcs(P, "responder", c.b.cq, c.b.qpn, wr);
		region_check(P, rbuf);
		ibv_async_event ev;
		if (!async_event(B.ctx, &ev)) {
			P.fail("no async event within %g s", g_wait);
		} else {
			if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED ||
			    ev.element.srq != srq)
				P.fail("async event %s (%d), expected SRQ_LIMIT_REACHED on the SRQ",
				       ibv_event_type_str(ev.event_type), ev.event_type);
			ibv_ack_async_event(&ev);
		}
		if (!ibv_query_srq(srq, &at) && at.srq_limit != 0)
			P.fail("srq_limit is %u after the event, expected 0 (disarmed)",
			       at.srq_limit);
	}
	P.report("SRQ: %d SENDs land in the SRQ's WQEs in order with their data; "
		 "limit %d of %d fires SRQ_LIMIT_REACHED once and disarms",
		 nsend, limit, nrecv);
	conn_free(c);
	if (srq)
		ibv_destroy_srq(srq);
	region_free(rbuf);
	region_free(src);
}

// ---- 10. memory windows ----------------------------------------------------

constexpr int MW_MR = ALL_REMOTE | IBV_ACCESS_MW_BIND;
constexpr int MW_RW = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

// Bind @mw (B's) through B's QP @qp to [off, off + len) of @r with
// @access: a type 1 window through ibv_bind_mw(), which moves its rkey on
// to the next key; a type 2 one through ibv_post_send(BIND_MW) with @key.
// len 0 binds nothing (a type 1 window is unbound then).
int bind_window(ibv_qp *qp, ibv_mw *mw, uint64_t wr_id, const region &r, size_t off,
		size_t len, int access, uint32_t key = 0)
{
	ibv_mw_bind_info bi = {};
	if (len) {
		bi.mr = r.mr;
		bi.addr = r.addr(static_cast<long>(off));
		bi.length = len;
	}
	bi.mw_access_flags = access;
	if (mw->type == IBV_MW_TYPE_1) {
		ibv_mw_bind b = {};
		b.wr_id = wr_id;
		b.send_flags = IBV_SEND_SIGNALED;
		b.bind_info = bi;
		return ibv_bind_mw(qp, mw, &b);
	}
	ibv_send_wr wr = {};
	ibv_send_wr *bad;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info = bi;
	return ibv_post_send(qp, &wr, &bad);
}

int post_key_op(ibv_qp *qp, uint64_t wr_id, ibv_wr_opcode op, uint32_t key,
		const region *l = nullptr, size_t loff = 0, uint32_t len = 0)
{
	ibv_sge sge = {};
	ibv_send_wr wr = {};
	ibv_send_wr *bad;
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	if (l) {
		sge = {l->addr(static_cast<long>(loff)), len, l->lkey()};
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	return ibv_post_send(qp, &wr, &bad);
}

ibv_mw *alloc_window(point &P, ibv_mw_type type)
{
	ibv_mw *mw = ibv_alloc_mw(B.pd, type);
	if (!mw)
		P.fail("ibv_alloc_mw(type %d) on %s: %s", type, B.name, strerror(errno));
	return mw;
}

// The set-up most window tests share: an 8 KiB target MR on B that windows
// may bind to, a local buffer on A, a connected QP pair and a type 1 window.
struct mw_pair {
	conn c;
	region tgt, loc;
	ibv_mw *mw = nullptr;

	bool make(point &P, uint32_t seed)
	{
		qp_params p;
		return region_make(P, tgt, "target", B, 8192, MW_MR, seed) &&
		       region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE,
				   seed + 1) &&
		       conn_make(P, c, p) && (mw = alloc_window(P, IBV_MW_TYPE_1));
	}

	void free()
	{
		if (mw)
			ibv_dealloc_mw(mw);
		mw = nullptr;
		conn_free(c);
		region_free(loc);
		region_free(tgt);
	}
};

void test_mw_device()
{
	point P;
	ibv_device_attr_ex ax = {};
	if (ibv_query_device_ex(B.ctx, nullptr, &ax))
		P.fail("ibv_query_device_ex: %s", strerror(errno));
	uint64_t f = ax.orig_attr.device_cap_flags;
	if (ax.orig_attr.max_mw <= 0 || !(f & IBV_DEVICE_MEM_WINDOW) ||
	    !(f & IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		P.fail("max_mw %d, device_cap_flags 0x%llx: want max_mw > 0, MEM_WINDOW and "
		       "MEM_WINDOW_TYPE_2B", ax.orig_attr.max_mw,
		       static_cast<unsigned long long>(f));
	region r;
	ibv_mw *m1 = alloc_window(P, IBV_MW_TYPE_1);
	ibv_mw *m2 = alloc_window(P, IBV_MW_TYPE_2);
	if (region_make(P, r, "MR", B, 4096, MW_MR, 90) && m1 && m2) {
		if (m1->type != IBV_MW_TYPE_1 || m2->type != IBV_MW_TYPE_2)
			P.fail("window types %d and %d", m1->type, m2->type);
		if (m1->rkey == m2->rkey || m1->rkey == r.rkey() || m2->rkey == r.rkey())
			P.fail("rkeys not distinct: windows 0x%x 0x%x, MR 0x%x", m1->rkey,
			       m2->rkey, r.rkey());
	}
	for (ibv_mw *m : {m1, m2})
		if (m && ibv_dealloc_mw(m))
			P.fail("ibv_dealloc_mw: %s", strerror(errno));
	region_free(r);
	P.report("memory windows offered (max_mw, MEM_WINDOW, TYPE_2B); a type 1 and a type 2 "
		 "window allocated with their own rkeys, then freed");
}

// Type 1: bind, WRITE and READ through the window, rebind elsewhere, READ
// there; the key of the first binding is dead.
void test_mw_type1()
{
	point P;
	mw_pair e;
	conn &c = e.c;
	region &tgt = e.tgt, &loc = e.loc;
	ibv_mw *&mw = e.mw;

	if (e.make(P, 91)) {
		uint32_t k0 = mw->rkey;
		posted(P, bind_window(c.b.qp, mw, 50, tgt, 1024, 4096, MW_RW), "bind", 50);
		uint32_t k1 = mw->rkey;
		if (k1 == k0 || (k1 >> 8) != (k0 >> 8))
			P.fail("bind moved the rkey 0x%x to 0x%x: want a new key, same index", k0,
			       k1);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, {{50, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		// 3 packets at path MTU 1024, then a READ that overlaps them.
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 3000, tgt.addr(2024), k1),
		       "WRITE", 1);
		tgt.expect(2024, loc.mem, 3000);
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_READ, loc, 4096, 1024, tgt.addr(1024), k1),
		       "READ", 2);
		loc.expect(4096, tgt.ref.data() + GUARD + 1024, 1024);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE},
			    {2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 1024}});
		posted(P, bind_window(c.b.qp, mw, 51, tgt, 6144, 1024, IBV_ACCESS_REMOTE_READ),
		       "rebind", 51);
		uint32_t k2 = mw->rkey;
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, {{51, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		posted(P, post(c.a.qp, 3, IBV_WR_RDMA_READ, loc, 6000, 512, tgt.addr(6144 + 256),
			       k2), "READ", 3);
		loc.expect(6000, tgt.ref.data() + GUARD + 6144 + 256, 512);
		// The first binding's key, at an address both bindings cover.
		posted(P, post(c.a.qp, 4, IBV_WR_RDMA_WRITE, loc, 0, 64, tgt.addr(6144),
			       g_inject_rkey ? tgt.rkey() : k1), "WRITE", 4);
		posted(P, post(c.a.qp, 5, IBV_WR_SEND, loc, 0, 16), "SEND", 5);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 512},
			    {4, IBV_WC_REM_ACCESS_ERR},
			    {5, IBV_WC_WR_FLUSH_ERR}});
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("type 1 window: ibv_bind_mw gives a new key; a 3-packet WRITE and a READ "
		 "through it land; rebound elsewhere READ-only, a READ there lands and the "
		 "old key gets REM_ACCESS_ERR, target unchanged");
	e.free();
}

// A type 1 window on [1024, 5120) of an 8 KiB MR with @win_access: the
// request must fail with REM_ACCESS_ERR and change nothing.
struct mw_denied {
	const char *desc;
	ibv_wr_opcode op;
	long toff;
	uint32_t len;
	int win_access = MW_RW;
	bool unbind = false;	// bind length 0 first, then use the new key
};

void run_mw_denied(const mw_denied &k)
{
	point P;
	mw_pair e;
	conn &c = e.c;
	region &tgt = e.tgt, &loc = e.loc;
	ibv_mw *&mw = e.mw;

	if (e.make(P, 93)) {
		posted(P, bind_window(c.b.qp, mw, 50, tgt, 1024, 4096, k.win_access), "bind",
		       50);
		std::vector<want> wb = {{50, IBV_WC_SUCCESS, IBV_WC_BIND_MW}};
		if (k.unbind) {
			posted(P, bind_window(c.b.qp, mw, 51, tgt, 0, 0, 0), "unbind", 51);
			wb.push_back({51, IBV_WC_SUCCESS, IBV_WC_BIND_MW});
		}
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, wb);
		uint32_t key = g_inject_rkey ? tgt.rkey() : mw->rkey;
		posted(P, post(c.a.qp, 1, k.op, loc, 64, k.len, tgt.addr(k.toff), key, 1, 1),
		       "request", 1);
		posted(P, post(c.a.qp, 2, IBV_WR_SEND, loc, 0, 16), "SEND", 2);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_REM_ACCESS_ERR}, {2, IBV_WC_WR_FLUSH_ERR}});
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("%s", k.desc);
	e.free();
}

// The first completion of @cq within g_wait seconds.
bool poll_one(ibv_cq *cq, ibv_wc &wc)
{
	auto got = poll_n(cq, 1, g_wait);
	if (got.empty())
		return false;
	wc = got[0];
	return true;
}

// Type 2: bound once through one QP; LOCAL_INV; bound again; a SEND with
// invalidate from the peer kills it.
void test_mw_type2()
{
	point P;
	conn c;
	region tgt, loc, rbuf;
	qp_params p;
	ibv_mw *mw = nullptr;

	if (region_make(P, tgt, "target", B, 8192, MW_MR, 95) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 96) &&
	    region_make(P, rbuf, "receive buffer", B, 4096, IBV_ACCESS_LOCAL_WRITE, 97) &&
	    conn_make(P, c, p) && (mw = alloc_window(P, IBV_MW_TYPE_2))) {
		uint32_t k1 = ibv_inc_rkey(mw->rkey), k2 = ibv_inc_rkey(k1);
		posted(P, bind_window(c.b.qp, mw, 60, tgt, 0, 8192, MW_RW, k1), "bind", 60);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, {{60, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 2000, tgt.addr(100), k1),
		       "WRITE", 1);
		tgt.expect(100, loc.mem, 2000);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		posted(P, post_key_op(c.b.qp, 61, IBV_WR_LOCAL_INV, k1), "LOCAL_INV", 61);
		posted(P, bind_window(c.b.qp, mw, 62, tgt, 4096, 4096, MW_RW, k2), "bind", 62);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn,
			   {{61, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV},
			    {62, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_WRITE, loc, 2000, 1000, tgt.addr(5000), k2),
		       "WRITE", 2);
		tgt.expect(5000, loc.mem + 2000, 1000);
		posted(P, post_recv(c.b.qp, 100, rbuf, 0, 256), "receive", 100);
		posted(P, post_key_op(c.a.qp, 3, IBV_WR_SEND_WITH_INV, k2, &loc, 3000, 200),
		       "SEND_WITH_INV", 3);
		rbuf.expect(0, loc.mem + 3000, 200);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}, {3, IBV_WC_SUCCESS, IBV_WC_SEND}});
		ibv_wc wc = {};
		if (!poll_one(c.b.cq, wc))
			P.fail("responder: no completion for the SEND with invalidate");
		else if (wc.wr_id != 100 || wc.status != IBV_WC_SUCCESS || wc.byte_len != 200 ||
			 !(wc.wc_flags & IBV_WC_WITH_INV) || wc.invalidated_rkey != k2)
			P.fail("responder: wr_id %llu %s byte_len %u wc_flags 0x%x rkey 0x%x; want "
			       "100 success 200 WITH_INV 0x%x",
			       static_cast<unsigned long long>(wc.wr_id),
			       ibv_wc_status_str(wc.status), wc.byte_len, wc.wc_flags,
			       wc.invalidated_rkey, k2);
		// The SEND killed k2.
		posted(P, post(c.a.qp, 4, IBV_WR_RDMA_WRITE, loc, 0, 64, tgt.addr(5000),
			       g_inject_rkey ? tgt.rkey() : k2), "WRITE", 4);
		posted(P, post(c.a.qp, 5, IBV_WR_SEND, loc, 0, 16), "SEND", 5);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{4, IBV_WC_REM_ACCESS_ERR}, {5, IBV_WC_WR_FLUSH_ERR}});
		// The same window on a new QP pair: bind, WRITE, LOCAL_INV, and
		// its key is dead.
		conn_free(c);
		if (conn_make(P, c, p)) {
			uint32_t k3 = ibv_inc_rkey(k2);
			posted(P, bind_window(c.b.qp, mw, 63, tgt, 0, 4096, MW_RW, k3), "bind", 63);
			expect_wcs(P, "binder", c.b.cq, c.b.qpn,
				   {{63, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
			posted(P, post(c.a.qp, 6, IBV_WR_RDMA_WRITE, loc, 4000, 300,
				       tgt.addr(3000), k3), "WRITE", 6);
			tgt.expect(3000, loc.mem + 4000, 300);
			expect_wcs(P, "requester", c.a.cq, c.a.qpn,
				   {{6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
			posted(P, post_key_op(c.b.qp, 64, IBV_WR_LOCAL_INV, k3), "LOCAL_INV", 64);
			expect_wcs(P, "binder", c.b.cq, c.b.qpn,
				   {{64, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV}});
			posted(P, post(c.a.qp, 7, IBV_WR_RDMA_WRITE, loc, 0, 64, tgt.addr(3000),
				       g_inject_rkey ? tgt.rkey() : k3), "WRITE", 7);
			posted(P, post(c.a.qp, 8, IBV_WR_SEND, loc, 0, 16), "SEND", 8);
			expect_wcs(P, "requester", c.a.cq, c.a.qpn,
				   {{7, IBV_WC_REM_ACCESS_ERR}, {8, IBV_WC_WR_FLUSH_ERR}});
		}
		region_check(P, tgt);
		region_check(P, loc);
		region_check(P, rbuf);
	}
	P.report("type 2 window: bound through the responder's QP, a WRITE lands; LOCAL_INV, "
		 "bound again elsewhere, a WRITE lands; a SEND with invalidate arrives "
		 "WITH_INV and its key gets REM_ACCESS_ERR; on a new QP pair the same window "
		 "binds again and LOCAL_INV kills that key too; memory exact");
	if (mw)
		ibv_dealloc_mw(mw);
	conn_free(c);
	region_free(rbuf);
	region_free(loc);
	region_free(tgt);
}

// Type 2 windows belong to their QP (type 2B): another QP of the same PD
// gets REM_ACCESS_ERR.
void test_mw_type2_other_qp()
{
	point P;
	conn c1, c2;
	region tgt, loc;
	qp_params p;
	ibv_mw *mw = nullptr;

	if (region_make(P, tgt, "target", B, 8192, MW_MR, 98) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 99) &&
	    conn_make(P, c1, p) && conn_make(P, c2, p) &&
	    (mw = alloc_window(P, IBV_MW_TYPE_2))) {
		uint32_t k = ibv_inc_rkey(mw->rkey);
		posted(P, bind_window(c1.b.qp, mw, 60, tgt, 0, 8192, MW_RW, k), "bind", 60);
		expect_wcs(P, "binder", c1.b.cq, c1.b.qpn, {{60, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		posted(P, post(c1.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 500, tgt.addr(0), k),
		       "WRITE", 1);
		tgt.expect(0, loc.mem, 500);
		expect_wcs(P, "bound QP's peer", c1.a.cq, c1.a.qpn,
			   {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		posted(P, post(c2.a.qp, 2, IBV_WR_RDMA_WRITE, loc, 1000, 500, tgt.addr(1000),
			       g_inject_rkey ? tgt.rkey() : k), "WRITE", 2);
		posted(P, post(c2.a.qp, 3, IBV_WR_RDMA_READ, loc, 2000, 500, tgt.addr(1000), k),
		       "READ", 3);
		expect_wcs(P, "other QP's peer", c2.a.cq, c2.a.qpn,
			   {{2, IBV_WC_REM_ACCESS_ERR}, {3, IBV_WC_WR_FLUSH_ERR}});
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("type 2 window: usable through the QP that bound it only; a WRITE through "
		 "another QP of the PD gets REM_ACCESS_ERR, target unchanged");
	if (mw)
		ibv_dealloc_mw(mw);
	conn_free(c2);
	conn_free(c1);
	region_free(loc);
	region_free(tgt);
}

// Binds that must fail: IBV_WC_MW_BIND_ERR on the binder, what follows it
// flushed, nothing bound.
struct mw_bind_bad {
	const char *desc;
	int mr_access;
	ibv_mw_type type;
	size_t off, len;
	int win_access = MW_RW;
	bool twice = false;	// type 2: a second bind while bound
};

void run_mw_bind_bad(const mw_bind_bad &k)
{
	point P;
	conn c;
	region tgt, loc;
	qp_params p;
	ibv_mw *mw = nullptr;

	if (region_make(P, tgt, "target", B, 8192, k.mr_access, 101) &&
	    region_make(P, loc, "local buffer", B, 4096, IBV_ACCESS_LOCAL_WRITE, 102) &&
	    conn_make(P, c, p) && (mw = alloc_window(P, k.type))) {
		std::vector<want> w;
		uint32_t key = ibv_inc_rkey(mw->rkey);
		if (k.twice) {
			posted(P, bind_window(c.b.qp, mw, 59, tgt, 0, 4096, MW_RW, key), "bind",
			       59);
			w.push_back({59, IBV_WC_SUCCESS, IBV_WC_BIND_MW});
			key = ibv_inc_rkey(key);
		}
		posted(P, bind_window(c.b.qp, mw, 60, tgt, k.off, k.len, k.win_access, key),
		       "bind", 60);
		w.push_back({60, IBV_WC_MW_BIND_ERR});
		posted(P, post(c.b.qp, 61, IBV_WR_SEND, loc, 0, 16), "SEND", 61);
		w.push_back({61, IBV_WC_WR_FLUSH_ERR});
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, w);
		expect_state(P, "binder", c.b.qp, IBV_QPS_ERR);
		region_check(P, tgt);
	}
	P.report("%s", k.desc);
	if (mw)
		ibv_dealloc_mw(mw);
	conn_free(c);
	region_free(loc);
	region_free(tgt);
}

// An MR with a window bound to it cannot be deregistered; a window's key
// is no lkey.
void test_mw_dereg_busy()
{
	point P;
	mw_pair e;
	conn &c = e.c;
	region &tgt = e.tgt, &loc = e.loc;
	ibv_mw *&mw = e.mw;

	if (e.make(P, 103)) {
		posted(P, bind_window(c.b.qp, mw, 50, tgt, 0, 8192, MW_RW), "bind", 50);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, {{50, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		int r = ibv_dereg_mr(tgt.mr);
		if (r != EBUSY)
			P.fail("ibv_dereg_mr with a window bound: %s (%d), want EBUSY", strerror(r),
			       r);
		if (r == 0)
			tgt.mr = nullptr;
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 1500, tgt.addr(10),
			       mw->rkey), "WRITE", 1);
		tgt.expect(10, loc.mem, 1500);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		region_check(P, tgt);
		// The window's key as a local key: a local protection error.
		ibv_sge sge = {tgt.addr(0), 64, mw->rkey};
		ibv_send_wr wr = {};
		ibv_send_wr *bad;
		wr.wr_id = 51;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		posted(P, ibv_post_send(c.b.qp, &wr, &bad), "SEND", 51);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn, {{51, IBV_WC_LOC_PROT_ERR}});
		r = ibv_dealloc_mw(mw);
		mw = nullptr;
		if (r)
			P.fail("ibv_dealloc_mw of a bound window: %s", strerror(r));
		if (tgt.mr) {
			r = ibv_dereg_mr(tgt.mr);
			if (r)
				P.fail("ibv_dereg_mr after the window is gone: %s", strerror(r));
			else
				tgt.mr = nullptr;
		}
	}
	P.report("an MR with a window bound: ibv_dereg_mr EBUSY and the MR still works; the "
		 "window's key as an lkey: LOC_PROT_ERR; dealloc the bound window, then "
		 "dereg succeeds");
	e.free();
}

// The window asks for REMOTE_WRITE | LOCAL_WRITE over an MR registered
// LOCAL_WRITE | MW_BIND only (no remote access of its own), as a user
// following the verbs man pages writes it: IBTA (C10-74) needs the MR's
// local write for a window's remote write, not its remote write, and
// LOCAL_WRITE in a window's access is no remote right, nothing to refuse
// (rdma_rxe binds it). Both window types bind, a WRITE through each lands.
void test_mw_local_write_mr()
{
	point P;
	conn c;
	region tgt, loc;
	qp_params p;
	ibv_mw *mw1 = nullptr, *mw2 = nullptr;
	const int win = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;

	if (region_make(P, tgt, "target", B, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
			98) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 99) &&
	    conn_make(P, c, p) && (mw1 = alloc_window(P, IBV_MW_TYPE_1)) &&
	    (mw2 = alloc_window(P, IBV_MW_TYPE_2))) {
		posted(P, bind_window(c.b.qp, mw1, 70, tgt, 0, 4096, win), "bind type 1", 70);
		uint32_t k1 = mw1->rkey, k2 = ibv_inc_rkey(mw2->rkey);
		posted(P, bind_window(c.b.qp, mw2, 71, tgt, 4096, 4096, win, k2), "bind type 2",
		       71);
		expect_wcs(P, "binder", c.b.cq, c.b.qpn,
			   {{70, IBV_WC_SUCCESS, IBV_WC_BIND_MW}, {71, IBV_WC_SUCCESS, IBV_WC_BIND_MW}});
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 3000, tgt.addr(500), k1),
		       "WRITE", 1);
		tgt.expect(500, loc.mem, 3000);
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_WRITE, loc, 3000, 2000, tgt.addr(5000), k2),
		       "WRITE", 2);
		tgt.expect(5000, loc.mem + 3000, 2000);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE},
			    {2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("windows with REMOTE_WRITE | LOCAL_WRITE over an MR with LOCAL_WRITE | "
		 "MW_BIND only: type 1 and type 2 bind, a WRITE through each lands");
	if (mw1)
		ibv_dealloc_mw(mw1);
	if (mw2)
		ibv_dealloc_mw(mw2);
	conn_free(c);
	region_free(loc);
	region_free(tgt);
}

void test_mw()
{
	test_mw_device();
	test_mw_type1();
	run_mw_denied({"type 1 window [1024, 5120): WRITE [5020, 5121) inside the MR but past "
		       "the window: REM_ACCESS_ERR, target unchanged",
		       IBV_WR_RDMA_WRITE, 5120 - 100, 101});
	run_mw_denied({"type 1 window [1024, 5120): WRITE [1023, 1123): REM_ACCESS_ERR",
		       IBV_WR_RDMA_WRITE, 1023, 100});
	run_mw_denied({"READ-only window: WRITE through it gets REM_ACCESS_ERR, target "
		       "unchanged",
		       IBV_WR_RDMA_WRITE, 2048, 100, IBV_ACCESS_REMOTE_READ});
	run_mw_denied({"window without REMOTE_ATOMIC on an MR with it: FETCH_ADD gets "
		       "REM_ACCESS_ERR, target unchanged",
		       IBV_WR_ATOMIC_FETCH_AND_ADD, 2048, 8});
	run_mw_denied({"type 1 window unbound (length 0): its new key gets REM_ACCESS_ERR",
		       IBV_WR_RDMA_WRITE, 2048, 100, MW_RW, true});
	test_mw_type2();
	test_mw_type2_other_qp();
	test_mw_local_write_mr();
	run_mw_bind_bad({"bind to an MR without MW_BIND: MW_BIND_ERR, the rest flushed",
			 ALL_REMOTE, IBV_MW_TYPE_1, 0, 4096});
	run_mw_bind_bad({"bind past the MR's end: MW_BIND_ERR", MW_MR, IBV_MW_TYPE_1, 4096,
			 4097});
	run_mw_bind_bad({"REMOTE_WRITE window on an MR without LOCAL_WRITE: MW_BIND_ERR",
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND, IBV_MW_TYPE_1, 0, 4096});
	mw_bind_bad twice = {"type 2 window bound twice without invalidation: MW_BIND_ERR",
			     MW_MR, IBV_MW_TYPE_2, 0, 4096};
	twice.twice = true;
	run_mw_bind_bad(twice);
	test_mw_dereg_busy();
}

// ---- 10b. re-registration in place --------------------------------------------

// B re-registers its MR while A holds the rkey, as a peer does: the keys
// stay, and A's requests meet the new translation, PD and access.
void test_rereg()
{
	point P;
	conn c;
	region tgt, loc;
	qp_params p;
	ibv_pd *pd2 = nullptr;

	if (region_make(P, tgt, "target", B, 8192, ALL_REMOTE, 120) &&
	    region_make(P, loc, "local buffer", A, 8192, IBV_ACCESS_LOCAL_WRITE, 121) &&
	    conn_make(P, c, p)) {
		ibv_mr *mr = tgt.mr;
		const uint32_t key = mr->rkey;
		auto kept = [&](const char *what, int r) {
			if (r || mr->lkey != key || mr->rkey != key)
				P.fail("%s: ret %d, keys 0x%x/0x%x, want 0 and 0x%x", what, r, mr->lkey,
				       mr->rkey, key);
		};
		// The MR now names the upper half only: the old rkey writes there.
		kept("rereg CHANGE_TRANSLATION",
		     ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, tgt.mem + 4096,
				  4096, 0));
		posted(P, post(c.a.qp, 1, IBV_WR_RDMA_WRITE, loc, 0, 2000, tgt.addr(4096 + 100),
			       key), "WRITE", 1);
		tgt.expect(4096 + 100, loc.mem, 2000);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		// To another PD and back: the key still works.
		pd2 = ibv_alloc_pd(B.ctx);
		if (!pd2)
			P.fail("ibv_alloc_pd: %s", strerror(errno));
		else {
			kept("rereg CHANGE_PD away",
			     ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0));
			kept("rereg CHANGE_PD back",
			     ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, B.pd, nullptr, 0, 0));
		}
		posted(P, post(c.a.qp, 2, IBV_WR_RDMA_WRITE, loc, 2000, 500, tgt.addr(4096 + 3000),
			       key), "WRITE", 2);
		tgt.expect(4096 + 3000, loc.mem + 2000, 500);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, {{2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE}});
		// READ-only now: a READ lands, a WRITE is refused.
		kept("rereg CHANGE_ACCESS",
		     ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
		posted(P, post(c.a.qp, 3, IBV_WR_RDMA_READ, loc, 4096, 1024, tgt.addr(4096), key),
		       "READ", 3);
		loc.expect(4096, tgt.ref.data() + GUARD + 4096, 1024);
		posted(P, post(c.a.qp, 4, IBV_WR_RDMA_WRITE, loc, 0, 64, tgt.addr(4096), key),
		       "WRITE", 4);
		posted(P, post(c.a.qp, 5, IBV_WR_SEND, loc, 0, 16), "SEND", 5);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn,
			   {{3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 1024},
			    {4, IBV_WC_REM_ACCESS_ERR},
			    {5, IBV_WC_WR_FLUSH_ERR}});
		region_check(P, tgt);
		region_check(P, loc);
	}
	P.report("B's MR re-registered while A holds its rkey: the keys stay; moved to its "
		 "upper half, a WRITE there lands; to another PD and back, a WRITE lands; "
		 "READ-only, a READ lands and a WRITE gets REM_ACCESS_ERR, target unchanged");
	conn_free(c);
	region_free(loc);
	region_free(tgt);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

// ---- 11. end-to-end credits -------------------------------------------------

// A receiver that keeps 8 receives posted and reposts one 2 ms after each
// completion; the sender posts 64 SENDs at once. With end-to-end credits
// the sender holds what the receiver cannot take and probes with one
// message: every RNR NAK costs that probe only. Without them the sender
// runs ahead, the responder drops what follows each RNR-NAKed SEND as out
// of sequence and the requester resends it all (go-back-N).
void test_credits()
{
	point P;
	conn c;
	region src, rbuf;
	qp_params p;
	const int nmsg = 64, window = 8, len = 100, slot = 128;
	delta rnr(A, "rnr_nak_received"), retx(A, "retransmitted_packets");
	delta ooo(B, "rx_drop_out_of_sequence");

	if (region_make(P, src, "source", A, nmsg * len, IBV_ACCESS_LOCAL_WRITE, 111) &&
	    region_make(P, rbuf, "receive buffers", B, nmsg * slot, IBV_ACCESS_LOCAL_WRITE,
			112) &&
	    conn_make(P, c, p)) {
		for (int i = 0; i < window; i++)
			posted(P, post_recv(c.b.qp, 1000 + i, rbuf, i * slot, slot), "receive",
			       1000 + i);
		std::vector<want> ws;
		for (int i = 0; i < nmsg; i++) {
			posted(P, post(c.a.qp, 1 + i, IBV_WR_SEND, src, i * len, len), "SEND", 1 + i);
			ws.push_back({static_cast<uint64_t>(1 + i), IBV_WC_SUCCESS, IBV_WC_SEND});
			rbuf.expect(i * slot, src.mem + i * len, len);
		}
		int got = 0, next = window;
		double end = now() + 3 * g_wait;
		while (got < nmsg && now() < end) {
			auto w = poll_n(c.b.cq, 1, 0.05);
			if (w.empty())
				continue;
			const ibv_wc &g = w[0];
			if (g.wr_id != static_cast<uint64_t>(1000 + got) || g.status != IBV_WC_SUCCESS ||
			    g.opcode != IBV_WC_RECV || g.byte_len != static_cast<uint32_t>(len))
				P.fail("receive %d: wr_id %llu %s opcode %d byte_len %u, want %d success "
				       "RECV %d", got, static_cast<unsigned long long>(g.wr_id),
				       ibv_wc_status_str(g.status), g.opcode, g.byte_len, 1000 + got,
				       len);
			got++;
			usleep(2000);
			if (next < nmsg) {
				posted(P, post_recv(c.b.qp, 1000 + next, rbuf, next * slot, slot),
				       "receive", 1000 + next);
				next++;
			}
		}
		if (got < nmsg)
			P.fail("%d of %d receives completed within %g s", got, nmsg, 3 * g_wait);
		expect_wcs(P, "requester", c.a.cq, c.a.qpn, ws);
		region_check(P, rbuf);
		region_check(P, src);
	}
	P.report("%d SENDs into a receiver that keeps %d receives posted and reposts one "
		 "2 ms after each completion: all complete, in order, intact", nmsg, window);

	point Q;
	long long r = rnr.grown(), x = retx.grown(), o = ooo.grown();
	if (!rnr.available() || !retx.available() || !ooo.available()) {
		skip("end-to-end credits: counters", "no such hw counter");
	} else {
		if (o != 0 || x > r)
			Q.fail("%s rnr_nak_received +%lld, retransmitted_packets +%lld; %s "
			       "rx_drop_out_of_sequence +%lld", A.name, r, x, B.name, o);
		Q.report("end-to-end credits: nothing sent behind an RNR-NAKed probe (%s "
			 "rx_drop_out_of_sequence +%lld, retransmitted_packets +%lld <= "
			 "rnr_nak_received +%lld)", B.name, o, x, r);
	}
	conn_free(c);
	region_free(rbuf);
	region_free(src);
}

// ---- main -------------------------------------------------------------------

bool open_dev(dev &d)
{
	d.ctx = open_device_by_name(d.name);
	if (!tap::check(d.ctx, "open %s", d.name))
		return false;
	bool ok = !ibv_query_device(d.ctx, &d.da) && !ibv_query_port(d.ctx, 1, &d.port) &&
		  !ibv_query_gid(d.ctx, 1, d.gid_index, &d.gid);
	d.pd = ok ? ibv_alloc_pd(d.ctx) : nullptr;
	static const uint8_t zero[16] = {};
	ok = ok && d.pd && memcmp(d.gid.raw, zero, 16) && d.port.state == IBV_PORT_ACTIVE;
	return tap::check(ok, "%s: port 1 ACTIVE (active MTU %d), GID %d set, PD", d.name,
			  128 << d.port.active_mtu, d.gid_index);
}

void close_dev(dev &d)
{
	if (d.pd)
		ibv_dealloc_pd(d.pd);
	if (d.ctx)
		ibv_close_device(d.ctx);
}

bool want_group(const char *groups, const char *g)
{
	if (!groups)
		return true;
	std::string s = std::string(",") + groups + ",";
	return s.find(std::string(",") + g + ",") != std::string::npos;
}

// ---- 9b. on-demand paging -----------------------------------------------------

constexpr int ODP = IBV_ACCESS_ON_DEMAND;

// Anonymous memory nobody has touched: no page behind it yet.
struct fresh {
	uint8_t *mem = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;
	uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(mem) + off; }
};

bool fresh_make(point &P, fresh &f, const char *name, dev &d, size_t len, int access,
		int prot = PROT_READ | PROT_WRITE)
{
	f.len = len;
	void *m = mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		P.fail("%s: mmap %zu: %s", name, len, strerror(errno));
		return false;
	}
	f.mem = static_cast<uint8_t *>(m);
	f.mr = ibv_reg_mr(d.pd, f.mem, len, access);
	if (!f.mr)
		P.fail("%s: ibv_reg_mr(%zu bytes, access 0x%x) on %s: %s", name, len, access,
		       d.name, strerror(errno));
	return f.mr != nullptr;
}

void fresh_free(fresh &f)
{
	if (f.mr)
		ibv_dereg_mr(f.mr);
	if (f.mem)
		munmap(f.mem, f.len);
	f = fresh();
}

// kB of a /proc/self/status line ("VmRSS:", "VmPin:"), or -1.
long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

// @n bytes at @p equal those at @q; the first difference as a failure.
void same_bytes(point &P, const char *what, const uint8_t *p, const uint8_t *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != q[i]) {
			P.fail("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i], q[i]);
			return;
		}
}

void test_odp_caps()
{
	point P;
	ibv_device_attr_ex x = {};
	if (ibv_query_device_ex(B.ctx, nullptr, &x)) {
		P.fail("ibv_query_device_ex: %s", strerror(errno));
	} else {
		const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
				    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
				    IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
		const uint64_t gen = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
		if ((x.odp_caps.general_caps & gen) != gen)
			P.fail("general_caps 0x%llx without IBV_ODP_SUPPORT(_IMPLICIT)",
			       static_cast<unsigned long long>(x.odp_caps.general_caps));
		if ((x.odp_caps.per_transport_caps.rc_odp_caps & rc) != rc)
			P.fail("rc_odp_caps 0x%x, expected 0x%x at least",
			       x.odp_caps.per_transport_caps.rc_odp_caps, rc);
		const uint32_t ud = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
				    IBV_ODP_SUPPORT_SRQ_RECV;
		if ((x.odp_caps.per_transport_caps.ud_odp_caps & ud) != ud)
			P.fail("ud_odp_caps 0x%x, expected 0x%x at least",
			       x.odp_caps.per_transport_caps.ud_odp_caps, ud);
	}
	P.report("ibv_query_device_ex: ODP and implicit ODP; on RC SEND, RECV, WRITE, READ, "
		 "ATOMIC, SRQ_RECV; on UD SEND, RECV, SRQ_RECV");

	// Registration pins nothing and faults nothing in.
	point Pnopin;
	constexpr size_t BIG = 64 << 20;
	long rss0 = status_kb("VmRSS:"), pin0 = status_kb("VmPin:");
	fresh f;
	if (fresh_make(Pnopin, f, "64 MiB ODP MR", B, BIG, ODP | ALL_REMOTE)) {
		long rss = status_kb("VmRSS:") - rss0, pin = status_kb("VmPin:") - pin0;
		if (rss > 2048 || pin != 0)
			Pnopin.fail("after ibv_reg_mr: VmRSS +%ld kB, VmPin +%ld kB", rss, pin);
	}
	fresh_free(f);
	Pnopin.report("ibv_reg_mr(IBV_ACCESS_ON_DEMAND) of 64 MiB nobody touched: nothing "
		      "pinned, nothing faulted in");
}

// WRITE, READ, SEND and atomics between ODP MRs of untouched memory.
void test_odp_ops()
{
	point P, Pw, Pr, Ps, Pa;
	conn c;
	fresh tgt, rbuf, loc, word;
	region src;
	constexpr size_t LEN = 256 << 10;
	uint64_t id = 1;
	delta faults(B, "odp_page_faults"), rnr(B, "odp_rnr_nak_sent"),
		waits(A, "odp_requester_waits");

	if (region_make(P, src, "source", A, LEN, ODP | IBV_ACCESS_LOCAL_WRITE, 61) &&
	    fresh_make(P, tgt, "target", B, LEN, ODP | ALL_REMOTE) &&
	    fresh_make(P, rbuf, "receive buffer", B, LEN, ODP | IBV_ACCESS_LOCAL_WRITE) &&
	    fresh_make(P, loc, "READ destination", A, LEN, ODP | IBV_ACCESS_LOCAL_WRITE) &&
	    fresh_make(P, word, "atomic target", B, PAGE, ODP | ALL_REMOTE) && conn_make(P, c, {})) {
		posted(Pw, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(), src.lkey(), LEN,
				    tgt.addr(), tgt.mr->rkey), "WRITE", id);
		expect_wcs(Pw, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN}});
		same_bytes(Pw, "target", tgt.mem, src.mem, LEN);
		Pw.report("WRITE of 256 KiB from an ODP MR to an untouched ODP MR: every byte");

		posted(Pr, post_sge(c.a.qp, id, IBV_WR_RDMA_READ, loc.addr(), loc.mr->lkey, LEN,
				    tgt.addr(), tgt.mr->rkey), "READ", id);
		expect_wcs(Pr, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN}});
		same_bytes(Pr, "READ destination", loc.mem, src.mem, LEN);
		Pr.report("READ of 256 KiB into an untouched ODP MR: every byte");

		ibv_sge rs = {rbuf.addr(), static_cast<uint32_t>(LEN), rbuf.mr->lkey};
		ibv_recv_wr rw = {};
		ibv_recv_wr *bad;
		rw.wr_id = 900;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		posted(Ps, ibv_post_recv(c.b.qp, &rw, &bad), "receive", 900);
		posted(Ps, post_sge(c.a.qp, id, IBV_WR_SEND, src.addr(4096), src.lkey(), 65536),
		       "SEND", id);
		expect_wcs(Ps, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_SEND, 65536}});
		expect_wcs(Ps, "responder", c.b.cq, c.b.qpn,
			   {{900, IBV_WC_SUCCESS, IBV_WC_RECV, 65536}});
		same_bytes(Ps, "receive buffer", rbuf.mem, src.mem + 4096, 65536);
		Ps.report("SEND of 64 KiB into an untouched ODP receive buffer: every byte");

		// Untouched memory reads as zeros.
		posted(Pa, post_sge(c.a.qp, id, IBV_WR_ATOMIC_FETCH_AND_ADD, loc.addr(0),
				    loc.mr->lkey, 8, word.addr(64), word.mr->rkey, 5), "FETCH_ADD", id);
		posted(Pa, post_sge(c.a.qp, id + 1, IBV_WR_ATOMIC_CMP_AND_SWP, loc.addr(8),
				    loc.mr->lkey, 8, word.addr(64), word.mr->rkey, 5, 77),
		       "CMP_SWAP", id + 1);
		expect_wcs(Pa, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8},
			    {id + 1, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8}});
		id += 2;
		uint64_t v[2], w;
		memcpy(v, loc.mem, 16);
		memcpy(&w, word.mem + 64, 8);
		if (v[0] != 0 || v[1] != 5 || w != 77)
			Pa.fail("FETCH_ADD returned %llu (0), CMP_SWAP %llu (5), word %llu (77)",
				static_cast<unsigned long long>(v[0]),
				static_cast<unsigned long long>(v[1]),
				static_cast<unsigned long long>(w));
		Pa.report("FETCH_ADD and CMP_SWAP on an untouched ODP word: results and word");
		expect_state(P, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(P, "responder", c.b.qp, IBV_QPS_RTS);
	}
	if (!P.ok())
		for (point *Q : {&Pw, &Pr, &Ps, &Pa})
			Q->why = P.why;
	P.report("both QPs in RTS after the ODP operations");
	check_counters("ODP: B faulted pages in and RNR-NAKed while it did; A's requester waited",
		       {{&faults, -1}, {&rnr, -1}, {&waits, -1}});
	conn_free(c);
	for (fresh *f : {&tgt, &rbuf, &loc, &word})
		fresh_free(*f);
	region_free(src);
}

// The process changes what is mapped under an ODP MR: the peer follows.
void test_odp_invalidate()
{
	point P, Pdn, Premap, Pfork;
	conn c;
	fresh tgt, loc;
	region src;
	constexpr size_t LEN = 64 << 10;
	uint64_t id = 1;
	delta inval(B, "odp_invalidations");

	if (region_make(P, src, "source", A, LEN, ODP | IBV_ACCESS_LOCAL_WRITE, 62) &&
	    fresh_make(P, tgt, "target", B, LEN, ODP | ALL_REMOTE) &&
	    fresh_make(P, loc, "READ destination", A, LEN, ODP | IBV_ACCESS_LOCAL_WRITE) &&
	    conn_make(P, c, {})) {
		auto rdma_write = [&](point &Q) {
			posted(Q, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(), src.lkey(),
					   LEN, tgt.addr(), tgt.mr->rkey), "WRITE", id);
			expect_wcs(Q, "requester", c.a.cq, c.a.qpn,
				   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN}});
		};
		auto rdma_read = [&](point &Q) {
			posted(Q, post_sge(c.a.qp, id, IBV_WR_RDMA_READ, loc.addr(), loc.mr->lkey,
					   LEN, tgt.addr(), tgt.mr->rkey), "READ", id);
			expect_wcs(Q, "requester", c.a.cq, c.a.qpn,
				   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN}});
		};
		std::vector<uint8_t> zero(LEN, 0), other(LEN);

		// MADV_DONTNEED drops the pages: the peer reads zeros.
		rdma_write(Pdn);
		same_bytes(Pdn, "target after the WRITE", tgt.mem, src.mem, LEN);
		if (madvise(tgt.mem, LEN, MADV_DONTNEED))
			Pdn.fail("madvise: %s", strerror(errno));
		rdma_read(Pdn);
		same_bytes(Pdn, "READ after MADV_DONTNEED", loc.mem, zero.data(), LEN);
		rdma_write(Pdn);
		same_bytes(Pdn, "target after a WRITE after MADV_DONTNEED", tgt.mem, src.mem, LEN);
		Pdn.report("ODP MR after MADV_DONTNEED: the peer READs zeros, its next WRITE lands");

		// Other memory mapped at the same address: the peer reads it.
		pattern(other.data(), LEN, 63);
		void *m = mmap(tgt.mem, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m != tgt.mem) {
			Premap.fail("mmap MAP_FIXED: %s", strerror(errno));
		} else {
			memcpy(tgt.mem, other.data(), LEN);
			rdma_read(Premap);
			same_bytes(Premap, "READ after the remap", loc.mem, other.data(), LEN);
		}
		Premap.report("ODP MR after new memory is mapped at its address: the peer READs "
			      "the new contents");

		// fork(): the parent's pages become copy-on-write; a WRITE from
		// the peer must land in the parent's copy, never the child's.
		int to_child[2], from_child[2];
		if (pipe(to_child) || pipe(from_child)) {
			Pfork.fail("pipe: %s", strerror(errno));
		} else {
			pid_t pid = fork();
			if (pid == 0) {
				char go;
				uint8_t ok = 1;
				if (::read(to_child[0], &go, 1) != 1)
					_exit(1);
				ok = !memcmp(tgt.mem, other.data(), LEN);
				_exit(::write(from_child[1], &ok, 1) == 1 ? 0 : 1);
			}
			if (pid < 0) {
				Pfork.fail("fork: %s", strerror(errno));
			} else {
				rdma_write(Pfork);
				same_bytes(Pfork, "the parent's target after a WRITE after fork()",
					   tgt.mem, src.mem, LEN);
				uint8_t ok = 0;
				int st = 0;
				if (::write(to_child[1], "g", 1) != 1 ||
				    ::read(from_child[0], &ok, 1) != 1 || !ok)
					Pfork.fail("the child's copy changed (or the child did not "
						   "answer)");
				waitpid(pid, &st, 0);
			}
			for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
				close(fd);
		}
		Pfork.report("ODP MR after fork(): the peer's WRITE lands in the parent's pages, "
			     "the child's copy keeps the old bytes");
	}
	if (!P.ok())
		for (point *Q : {&Pdn, &Premap, &Pfork})
			Q->why = P.why;
	if (!P.ok()) {
		Pdn.report("MADV_DONTNEED");
		Premap.report("remap");
		Pfork.report("fork");
	}
	check_counters("ODP: B's notifier invalidated its MR", {{&inval, -3}});
	conn_free(c);
	fresh_free(tgt);
	fresh_free(loc);
	region_free(src);
}

// ibv_advise_mr, and ranges a fault cannot make usable.
void test_odp_advise_errors()
{
	point P, Padv, Pbad, Punmapped, Pro, Plocal;
	conn c;
	fresh tgt, gone, ro, lgone;
	region src, pinned;
	constexpr size_t LEN = 1 << 20;
	uint64_t id = 1;

	if (region_make(P, src, "source", A, LEN, ODP | IBV_ACCESS_LOCAL_WRITE, 64) &&
	    region_make(P, pinned, "pinned MR", B, PAGE, ALL_REMOTE, 65) &&
	    fresh_make(P, tgt, "target", B, LEN, ODP | ALL_REMOTE) &&
	    fresh_make(P, gone, "unmapped target", B, 2 * PAGE, ODP | ALL_REMOTE) &&
	    fresh_make(P, ro, "read-only target", B, PAGE, ODP | ALL_REMOTE, PROT_READ) &&
	    fresh_make(P, lgone, "unmapped source", A, PAGE, ODP | IBV_ACCESS_LOCAL_WRITE)) {
		// Prefetch the whole target: the WRITE then needs no RNR NAK.
		delta pre(B, "odp_prefetches"), rnr(B, "odp_rnr_nak_sent");
		ibv_sge sge = {tgt.addr(), static_cast<uint32_t>(LEN), tgt.mr->lkey};
		int r = ibv_advise_mr(B.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
		if (r)
			Padv.fail("ibv_advise_mr(PREFETCH_WRITE, FLUSH): %s", strerror(r));
		// The source too, so that only B's side is measured.
		ibv_sge ssge = {src.addr(), static_cast<uint32_t>(LEN), src.lkey()};
		r = ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
				  &ssge, 1);
		if (r)
			Padv.fail("ibv_advise_mr(PREFETCH, FLUSH) of the source: %s", strerror(r));
		if (conn_make(Padv, c, {})) {
			posted(Padv, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(),
					      src.lkey(), LEN, tgt.addr(), tgt.mr->rkey),
			       "WRITE", id);
			expect_wcs(Padv, "requester", c.a.cq, c.a.qpn,
				   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN}});
			same_bytes(Padv, "target", tgt.mem, src.mem, LEN);
		}
		Padv.report("ibv_advise_mr(PREFETCH_WRITE, FLUSH) of 1 MiB: the WRITE into it "
			    "lands");
		check_counters("ODP: one prefetch counted, no RNR NAK for the prefetched range",
			       {{&pre, 1}, {&rnr, 0}});

		ibv_sge psge = {pinned.addr(), PAGE, pinned.lkey()};
		int r1 = ibv_advise_mr(B.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &psge, 1);
		ibv_sge ksge = {tgt.addr(), PAGE, tgt.mr->lkey ^ 0x80};
		int r2 = ibv_advise_mr(B.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ksge, 1);
		if (r1 != EINVAL || r2 != EINVAL)
			Pbad.fail("advise of a pinned MR %d, of a bad lkey %d (EINVAL %d wanted)",
				  r1, r2, EINVAL);
		Pbad.report("ibv_advise_mr on a pinned MR or with a bad lkey: EINVAL");

		// A range that is gone: the fault fails, the WRITE too. Unmapped
		// once the QPs exist: their rings would be mapped there else.
		auto fails = [&](point &Q, fresh &t, const char *what) {
			conn cc;
			if (conn_make(Q, cc, {})) {
				if (t.mem == gone.mem)
					munmap(gone.mem, gone.len);
				posted(Q, post_sge(cc.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(),
						   src.lkey(), 64, t.addr(), t.mr->rkey), what, id);
				expect_wcs(Q, "requester", cc.a.cq, cc.a.qpn,
					   {{id++, IBV_WC_REM_ACCESS_ERR}});
				expect_state(Q, "responder", cc.b.qp, IBV_QPS_ERR);
			}
			conn_free(cc);
		};
		delta ferr(B, "odp_page_fault_errors");
		fails(Punmapped, gone, "WRITE to an unmapped range");
		Punmapped.report("WRITE into an ODP MR whose memory was unmapped: REM_ACCESS_ERR");
		fails(Pro, ro, "WRITE to a read-only mapping");
		Pro.report("WRITE into an ODP MR over a read-only mapping: REM_ACCESS_ERR");
		check_counters("ODP: both faults failed and were counted", {{&ferr, -2}});

		conn cl;
		if (conn_make(Plocal, cl, {})) {
			munmap(lgone.mem, lgone.len);
			posted(Plocal, post_sge(cl.a.qp, id, IBV_WR_RDMA_WRITE, lgone.addr(),
						lgone.mr->lkey, 64, tgt.addr(), tgt.mr->rkey),
			       "WRITE from an unmapped range", id);
			expect_wcs(Plocal, "requester", cl.a.cq, cl.a.qpn,
				   {{id++, IBV_WC_LOC_PROT_ERR}});
		}
		conn_free(cl);
		Plocal.report("WRITE from an ODP MR whose memory was unmapped: LOC_PROT_ERR");
	}
	if (!P.ok()) {
		for (point *Q : {&Padv, &Pbad, &Punmapped, &Pro, &Plocal})
			Q->why = P.why;
		Padv.report("advise");
		Pbad.report("advise errors");
		Punmapped.report("unmapped");
		Pro.report("read-only");
		Plocal.report("local unmapped");
	}
	conn_free(c);
	for (fresh *f : {&tgt, &ro})
		fresh_free(*f);
	// Unmapped already: only the MRs.
	for (fresh *f : {&gone, &lgone}) {
		if (f->mr)
			ibv_dereg_mr(f->mr);
		*f = fresh();
	}
	region_free(pinned);
	region_free(src);
}

// A UD QP on @d, in RTS, with its own CQ.
bool ud_make(point &P, end &e, dev &d, uint32_t qkey)
{
	e.d = &d;
	e.cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	ibv_qp_init_attr ia = {};
	ia.send_cq = e.cq;
	ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	e.qp = e.cq ? ibv_create_qp(d.pd, &ia) : nullptr;
	if (!e.qp) {
		P.fail("%s: UD CQ/QP: %s", d.name, strerror(errno));
		return false;
	}
	e.qpn = e.qp->qp_num;
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	int r = ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_QKEY);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	if (!r)
		r = ibv_modify_qp(e.qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (!r)
		r = ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (r)
		P.fail("%s: UD QP to RTS: %s", d.name, strerror(r));
	return !r;
}

// UD datagrams into ODP receive buffers nobody touched: each one waits in
// B's QP for its page, none is lost, all arrive in order with their data.
void test_odp_ud()
{
	point P;
	end a, b;
	fresh rbuf;
	region src;
	constexpr int N = 8;
	constexpr uint32_t LEN = 512, GRH = 40, QKEY = 0x11111111;
	ibv_ah *ah = nullptr;
	delta deferred(B, "odp_rx_deferred"), drops(B, "odp_rx_drops");

	if (region_make(P, src, "source", A, N * PAGE, ODP | IBV_ACCESS_LOCAL_WRITE, 66) &&
	    fresh_make(P, rbuf, "receive buffers", B, N * PAGE, ODP | IBV_ACCESS_LOCAL_WRITE) &&
	    ud_make(P, a, A, QKEY) && ud_make(P, b, B, QKEY)) {
		ibv_ah_attr aa = {};
		aa.is_global = 1;
		aa.grh.dgid = B.gid;
		aa.grh.sgid_index = A.gid_index;
		aa.grh.hop_limit = 64;
		aa.port_num = 1;
		ah = ibv_create_ah(A.pd, &aa);
		if (!ah)
			P.fail("ibv_create_ah: %s", strerror(errno));
		// One receive per page, each page untouched.
		for (int i = 0; i < N && ah; i++) {
			ibv_sge sge = {rbuf.addr(i * PAGE), GRH + LEN, rbuf.mr->lkey};
			ibv_recv_wr rw = {};
			ibv_recv_wr *bad;
			rw.wr_id = 100 + i;
			rw.sg_list = &sge;
			rw.num_sge = 1;
			posted(P, ibv_post_recv(b.qp, &rw, &bad), "UD receive", 100 + i);
		}
		std::vector<want> ws, wr;
		for (int i = 0; i < N && ah; i++) {
			ibv_sge sge = {src.addr(i * PAGE), LEN, src.lkey()};
			ibv_send_wr w = {};
			ibv_send_wr *bad;
			w.wr_id = 200 + i;
			w.sg_list = &sge;
			w.num_sge = 1;
			w.opcode = IBV_WR_SEND;
			w.send_flags = IBV_SEND_SIGNALED;
			w.wr.ud.ah = ah;
			w.wr.ud.remote_qpn = b.qpn;
			w.wr.ud.remote_qkey = QKEY;
			posted(P, ibv_post_send(a.qp, &w, &bad), "UD SEND", 200 + i);
			ws.push_back({200u + i, IBV_WC_SUCCESS, IBV_WC_SEND, LEN});
			wr.push_back({100u + i, IBV_WC_SUCCESS, IBV_WC_RECV, GRH + LEN});
		}
		expect_wcs(P, "UD sender", a.cq, a.qpn, ws);
		expect_wcs(P, "UD receiver", b.cq, b.qpn, wr);
		for (int i = 0; i < N; i++)
			same_bytes(P, "UD payload", rbuf.mem + i * PAGE + GRH, src.mem + i * PAGE,
				   LEN);
	}
	P.report("%d UD datagrams into untouched ODP receive buffers: all received in order, "
		 "every byte", N);
	check_counters("ODP: B held datagrams for their pages and dropped none",
		       {{&deferred, -1}, {&drops, 0}});
	if (ah)
		ibv_destroy_ah(ah);
	conn c;
	c.a = a;
	c.b = b;
	conn_free(c);
	fresh_free(rbuf);
	region_free(src);
}

// Implicit ODP: one MR per side over the whole address space; memory
// mapped after the registration is usable with its keys.
void test_odp_implicit()
{
	point P, Pdata, Pfar, Pgone;
	conn c;
	ibv_mr *ia = nullptr, *ib = nullptr;
	constexpr size_t LEN = 3 << 20;	// across children of 2 MiB
	uint8_t *src = nullptr, *dst = nullptr, *back = nullptr;
	uint64_t id = 1;

	ia = ibv_reg_mr(A.pd, nullptr, SIZE_MAX, ODP | IBV_ACCESS_LOCAL_WRITE);
	ib = ibv_reg_mr(B.pd, nullptr, SIZE_MAX, ODP | ALL_REMOTE);
	if (!ia || !ib)
		P.fail("ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND): %s", strerror(errno));
	auto map = [&](size_t n) {
		void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		return m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
	};
	// Mapped after the MRs: covered all the same.
	src = map(LEN);
	dst = map(LEN);
	back = map(LEN);
	if (!src || !dst || !back)
		P.fail("mmap: %s", strerror(errno));
	P.report("ibv_reg_mr(NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND) on both devices");
	if (P.ok() && conn_make(P, c, {})) {
		pattern(src, LEN, 67);
		auto u = [](const uint8_t *p) { return reinterpret_cast<uintptr_t>(p); };
		// An odd offset: the WRITE spans two children unaligned.
		posted(Pdata, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, u(src) + 13, ia->lkey,
				       LEN - 4096, u(dst) + 13, ib->rkey), "WRITE", id);
		posted(Pdata, post_sge(c.a.qp, id + 1, IBV_WR_RDMA_READ, u(back) + 13, ia->lkey,
				       LEN - 4096, u(dst) + 13, ib->rkey), "READ", id + 1);
		expect_wcs(Pdata, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN - 4096},
			    {id + 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN - 4096}});
		id += 2;
		same_bytes(Pdata, "B's memory", dst + 13, src + 13, LEN - 4096);
		same_bytes(Pdata, "READ back", back + 13, src + 13, LEN - 4096);

		// A page far from the others, mapped now.
		uint8_t *far = map(PAGE);
		if (!far) {
			Pfar.fail("mmap: %s", strerror(errno));
		} else {
			posted(Pfar, post_sge(c.a.qp, id, IBV_WR_ATOMIC_FETCH_AND_ADD, u(back),
					      ia->lkey, 8, u(far) + 8, ib->rkey, 9), "FETCH_ADD",
			       id);
			expect_wcs(Pfar, "requester", c.a.cq, c.a.qpn,
				   {{id++, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8}});
			uint64_t v;
			memcpy(&v, far + 8, 8);
			if (v != 9)
				Pfar.fail("the word is %llu, expected 9",
					  static_cast<unsigned long long>(v));
			munmap(far, PAGE);
		}
		// Nothing mapped there: REM_ACCESS_ERR.
		uint8_t *hole = map(PAGE);
		if (hole)
			munmap(hole, PAGE);
		posted(Pgone, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, u(src), ia->lkey, 64,
				       u(hole), ib->rkey), "WRITE", id);
		expect_wcs(Pgone, "requester", c.a.cq, c.a.qpn, {{id++, IBV_WC_REM_ACCESS_ERR}});
		expect_state(Pgone, "responder", c.b.qp, IBV_QPS_ERR);
	}
	for (point *Q : {&Pdata, &Pfar, &Pgone})
		if (!P.ok())
			Q->why = P.why;
	Pdata.report("implicit ODP: a 3 MiB WRITE and READ between memory mapped after the "
		     "registration, at an odd offset across 2 MiB children: every byte");
	Pfar.report("implicit ODP: FETCH_ADD on a page mapped later, far from the rest");
	Pgone.report("implicit ODP: a WRITE where nothing is mapped: REM_ACCESS_ERR");
	conn_free(c);
	for (uint8_t *m : {src, dst, back})
		if (m)
			munmap(m, LEN);
	if (ia)
		ibv_dereg_mr(ia);
	if (ib)
		ibv_dereg_mr(ib);
}

void test_odp()
{
	test_odp_caps();
	test_odp_ops();
	test_odp_ud();
	test_odp_implicit();
	test_odp_invalidate();
	test_odp_advise_errors();
}

// ---- 9c. dma-buf MRs ------------------------------------------------------------

// A dma-buf from a static exporter and the CPU's view of its pages:
// udmabuf (memfd pages, the memfd mapped), or where the kernel has no
// udmabuf, vgem (a DRM dumb buffer of shmem pages exported through PRIME,
// the dma-buf itself mapped). memfd is a file that is not a dma-buf either
// way (the registration's errors).
struct udbuf {
	const char *exporter = "udmabuf";
	int memfd = -1;
	int fd = -1;
	uint8_t *cpu = nullptr;
	size_t len = 0;
};

// The DRM ioctls vgem's path needs (include/uapi/drm/drm.h and
// drm_mode.h: a stable ABI; Debian installs those headers only with
// libdrm-dev).
struct drm_version_arg {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};
struct drm_create_dumb_arg {
	uint32_t height, width, bpp, flags;
	uint32_t handle, pitch;
	uint64_t size;
};
struct drm_prime_handle_arg {
	uint32_t handle, flags;
	int32_t fd;
};
constexpr unsigned long DRM_VERSION_IOC = _IOWR('d', 0x00, drm_version_arg);
constexpr unsigned long DRM_PRIME_TO_FD_IOC = _IOWR('d', 0x2d, drm_prime_handle_arg);
constexpr unsigned long DRM_CREATE_DUMB_IOC = _IOWR('d', 0xb2, drm_create_dumb_arg);

// The first /dev/dri/card* that vgem drives (modprobe vgem made it), or -1.
int vgem_open()
{
	for (int i = 0; i < 16; i++) {
		std::string path = "/dev/dri/card" + std::to_string(i);
		int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		char name[16] = {};
		drm_version_arg v = {};
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (ioctl(fd, DRM_VERSION_IOC, &v) == 0 && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

// len bytes of vgem as a dma-buf in u.fd, mapped at u.cpu.
bool vgem_make(point &P, udbuf &u, int card)
{
	drm_create_dumb_arg d = {};
	d.width = PAGE / 4;
	d.bpp = 32;
	d.height = static_cast<uint32_t>(u.len / PAGE);
	if (ioctl(card, DRM_CREATE_DUMB_IOC, &d) || d.size < u.len) {
		P.fail("vgem: DRM_IOCTL_MODE_CREATE_DUMB of %zu bytes: %s (size %llu)", u.len,
		       strerror(errno), static_cast<unsigned long long>(d.size));
		return false;
	}
	drm_prime_handle_arg h = {};
	h.handle = d.handle;
	h.flags = O_CLOEXEC | O_RDWR;
	if (ioctl(card, DRM_PRIME_TO_FD_IOC, &h)) {
		P.fail("vgem: DRM_IOCTL_PRIME_HANDLE_TO_FD: %s", strerror(errno));
		return false;
	}
	u.fd = h.fd;
	void *m = mmap(nullptr, u.len, PROT_READ | PROT_WRITE, MAP_SHARED, u.fd, 0);
	if (m == MAP_FAILED) {
		P.fail("vgem: mmap of the dma-buf: %s", strerror(errno));
		return false;
	}
	u.cpu = static_cast<uint8_t *>(m);
	return true;
}

bool udbuf_make(point &P, udbuf &u, size_t len)
{
	u.len = len;
	u.memfd = memfd_create("sroce-dmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (u.memfd < 0 || ftruncate(u.memfd, static_cast<off_t>(len)) ||
	    fcntl(u.memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		P.fail("memfd of %zu bytes: %s", len, strerror(errno));
		return false;
	}
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		int card = vgem_open();
		if (card < 0) {
			P.fail("/dev/udmabuf: %s, and no vgem card in /dev/dri", strerror(errno));
			return false;
		}
		u.exporter = "vgem";
		bool ok = vgem_make(P, u, card);
		// The dma-buf holds the buffer; the card's handle is not needed.
		close(card);
		return ok;
	}
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, u.memfd, 0);
	if (m == MAP_FAILED) {
		P.fail("mmap of the memfd: %s", strerror(errno));
		close(dev);
		return false;
	}
	u.cpu = static_cast<uint8_t *>(m);
	udmabuf_create c = {};
	c.memfd = static_cast<uint32_t>(u.memfd);
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.size = len;
	u.fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (u.fd < 0)
		P.fail("UDMABUF_CREATE: %s", strerror(errno));
	close(dev);
	return u.fd >= 0;
}

void udbuf_free(udbuf &u)
{
	if (u.cpu)
		munmap(u.cpu, u.len);
	for (int fd : {u.fd, u.memfd})
		if (fd >= 0)
			close(fd);
	u = udbuf();
}

constexpr uint64_t DMABUF_IOVA = 0x7d0000000000ull;

// ibv_reg_dmabuf_mr's errors: each refused with its errno, nothing left.
void test_dmabuf_errors(const udbuf &u)
{
	point P;
	struct bad {
		const char *what;
		uint64_t off, len;
		int fd, access, err;
	} cases[] = {
		{"IBV_ACCESS_ON_DEMAND", 0, PAGE, u.fd, ODP | IBV_ACCESS_LOCAL_WRITE, EINVAL},
		{"a range past the buffer's end", u.len - PAGE, 2 * PAGE, u.fd,
		 IBV_ACCESS_LOCAL_WRITE, EINVAL},
		{"a memfd, not a dma-buf", 0, PAGE, u.memfd, IBV_ACCESS_LOCAL_WRITE, EINVAL},
		{"fd -1", 0, PAGE, -1, IBV_ACCESS_LOCAL_WRITE, EBADF},
		{"length 0", 0, 0, u.fd, IBV_ACCESS_LOCAL_WRITE, EINVAL},
	};
	for (const bad &b : cases) {
		errno = 0;
		ibv_mr *mr = ibv_reg_dmabuf_mr(B.pd, b.off, b.len, DMABUF_IOVA, b.fd, b.access);
		if (mr) {
			P.fail("%s: registered", b.what);
			ibv_dereg_mr(mr);
		} else if (errno != b.err) {
			P.fail("%s: %s, expected %s", b.what, strerror(errno), strerror(b.err));
		}
	}
	P.report("ibv_reg_dmabuf_mr refuses ON_DEMAND, a range past the buffer, a memfd, "
		 "fd -1 and length 0 (EINVAL, EINVAL, EINVAL, EBADF, EINVAL)");
}

// Every operation with a udmabuf (or vgem) MR on either end; bytes checked
// through the CPU's mapping.
void test_dmabuf_udmabuf()
{
	point P, Pw, Pr, Ps, Pg, Pa, Pc;
	udbuf u;
	region src, dst;
	conn c;
	ibv_mr *mr = nullptr;
	constexpr size_t BUF = 2 << 20, OFF = 4096, LEN = 1 << 20;
	uint64_t id = 1;

	if (!udbuf_make(P, u, BUF)) {
		P.report("a 2 MiB %s buffer as a dma-buf", u.exporter);
		udbuf_free(u);
		return;
	}
	test_dmabuf_errors(u);
	pattern(u.cpu, BUF, 71);
	mr = ibv_reg_dmabuf_mr(B.pd, OFF, LEN, DMABUF_IOVA, u.fd,
			       ALL_REMOTE | IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		P.fail("ibv_reg_dmabuf_mr(offset %zu, %zu bytes): %s", OFF, LEN, strerror(errno));
	else if (mr->lkey != mr->rkey || mr->length != LEN)
		P.fail("lkey 0x%x rkey 0x%x length %zu", mr->lkey, mr->rkey, mr->length);
	if (mr && region_make(P, src, "source", A, LEN, IBV_ACCESS_LOCAL_WRITE, 72) &&
	    region_make(P, dst, "destination", A, LEN, ALL_REMOTE | IBV_ACCESS_LOCAL_WRITE, 73) &&
	    conn_make(P, c, {})) {
		// Peer's WRITE into the buffer, at an odd offset.
		posted(Pw, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(), src.lkey(),
				    LEN - 4096, DMABUF_IOVA + 13, mr->rkey), "WRITE", id);
		expect_wcs(Pw, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN - 4096}});
		same_bytes(Pw, "CPU mapping", u.cpu + OFF + 13, src.mem, LEN - 4096);
		Pw.report("WRITE of 1 MiB - 4 KiB into a %s MR at an odd offset: every byte "
			  "through the CPU's mapping", u.exporter);

		// Peer's READ of it, after the CPU changed it.
		pattern(u.cpu + OFF, LEN, 74);
		posted(Pr, post_sge(c.a.qp, id, IBV_WR_RDMA_READ, dst.addr(), dst.lkey(), LEN,
				    DMABUF_IOVA, mr->rkey), "READ", id);
		expect_wcs(Pr, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN}});
		same_bytes(Pr, "READ destination", dst.mem, u.cpu + OFF, LEN);
		Pr.report("READ of 1 MiB from a %s MR the CPU wrote through its mapping: every "
			  "byte", u.exporter);

		// A SEND received into the buffer.
		ibv_sge rs = {DMABUF_IOVA + 4096, 65536, mr->lkey};
		ibv_recv_wr rw = {};
		ibv_recv_wr *bad;
		rw.wr_id = 900;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		posted(Ps, ibv_post_recv(c.b.qp, &rw, &bad), "receive", 900);
		posted(Ps, post_sge(c.a.qp, id, IBV_WR_SEND, src.addr(100), src.lkey(), 65536),
		       "SEND", id);
		expect_wcs(Ps, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_SEND, 65536}});
		expect_wcs(Ps, "responder", c.b.cq, c.b.qpn,
			   {{900, IBV_WC_SUCCESS, IBV_WC_RECV, 65536}});
		same_bytes(Ps, "CPU mapping", u.cpu + OFF + 4096, src.mem + 100, 65536);
		Ps.report("SEND of 64 KiB into a receive buffer in a %s MR: every byte",
			  u.exporter);

		// The buffer as the source of B's own WRITE (lkey gather).
		pattern(u.cpu + OFF, LEN, 75);
		posted(Pg, post_sge(c.b.qp, id, IBV_WR_RDMA_WRITE, DMABUF_IOVA + 7, mr->lkey,
				    LEN - 7, dst.addr(), dst.rkey()), "WRITE", id);
		expect_wcs(Pg, "requester", c.b.cq, c.b.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN - 7}});
		same_bytes(Pg, "A's memory", dst.mem, u.cpu + OFF + 7, LEN - 7);
		Pg.report("WRITE from a %s MR (gathered by lkey): every byte", u.exporter);

		// Atomics on a word of the buffer.
		uint64_t w0 = 1000;
		memcpy(u.cpu + OFF + 512, &w0, 8);
		posted(Pa, post_sge(c.a.qp, id, IBV_WR_ATOMIC_FETCH_AND_ADD, dst.addr(0),
				    dst.lkey(), 8, DMABUF_IOVA + 512, mr->rkey, 5), "FETCH_ADD", id);
		posted(Pa, post_sge(c.a.qp, id + 1, IBV_WR_ATOMIC_CMP_AND_SWP, dst.addr(8),
				    dst.lkey(), 8, DMABUF_IOVA + 512, mr->rkey, 1005, 77),
		       "CMP_SWAP", id + 1);
		expect_wcs(Pa, "requester", c.a.cq, c.a.qpn,
			   {{id, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8},
			    {id + 1, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8}});
		id += 2;
		uint64_t v[2], w;
		memcpy(v, dst.mem, 16);
		memcpy(&w, u.cpu + OFF + 512, 8);
		if (v[0] != 1000 || v[1] != 1005 || w != 77)
			Pa.fail("FETCH_ADD returned %llu (1000), CMP_SWAP %llu (1005), word %llu (77)",
				static_cast<unsigned long long>(v[0]),
				static_cast<unsigned long long>(v[1]),
				static_cast<unsigned long long>(w));
		Pa.report("FETCH_ADD and CMP_SWAP on a word of a %s MR: results and word",
			  u.exporter);

		// The MR holds the buffer: closing the dma-buf's fd changes nothing.
		close(u.fd);
		u.fd = -1;
		posted(Pc, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(), src.lkey(), LEN,
				    DMABUF_IOVA, mr->rkey), "WRITE", id);
		expect_wcs(Pc, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN}});
		same_bytes(Pc, "CPU mapping", u.cpu + OFF, src.mem, LEN);
		// Nothing outside the MR's range was written.
		std::vector<uint8_t> ref(BUF);
		pattern(ref.data(), BUF, 71);
		same_bytes(Pc, "the page before the MR", u.cpu + OFF - PAGE, ref.data() + OFF - PAGE,
			   PAGE);
		Pc.report("after the dma-buf's fd is closed the MR still works: a WRITE of 1 MiB, "
			  "every byte, none outside its range");
		expect_state(P, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(P, "responder", c.b.qp, IBV_QPS_RTS);
	}
	if (!P.ok())
		for (point *Q : {&Pw, &Pr, &Ps, &Pg, &Pa, &Pc})
			Q->why = P.why;
	P.report("a %s MR (offset 4 KiB, 1 MiB) registered; both QPs in RTS after the "
		 "operations", u.exporter);
	conn_free(c);
	if (mr && ibv_dereg_mr(mr))
		P.fail("ibv_dereg_mr: %s", strerror(errno));
	region_free(src);
	region_free(dst);
	udbuf_free(u);
}

// A buffer of tests/kmod/sroce_dmabuf_exp.ko: a dynamic exporter that
// moves its pages on request and poisons the old ones.
struct xbuf {
	int ctl = -1;
	int fd = -1;
	size_t len = 0;
};

bool xbuf_make(point &P, xbuf &x, size_t len)
{
	x.len = len;
	x.ctl = open("/dev/sroce_dmabuf_exp", O_RDWR | O_CLOEXEC);
	if (x.ctl < 0) {
		P.fail("/dev/sroce_dmabuf_exp (sroce_dmabuf_exp.ko): %s", strerror(errno));
		return false;
	}
	sroce_dmabuf_exp_create c = {};
	c.size = len;
	if (ioctl(x.ctl, SROCE_DMABUF_EXP_CREATE, &c)) {
		P.fail("SROCE_DMABUF_EXP_CREATE: %s", strerror(errno));
		return false;
	}
	x.fd = c.fd;
	return true;
}

void xbuf_free(xbuf &x)
{
	for (int fd : {x.fd, x.ctl})
		if (fd >= 0)
			close(fd);
	x = xbuf();
}

bool xbuf_rw(point &P, const xbuf &x, unsigned long req, uint64_t off, void *p, size_t n)
{
	sroce_dmabuf_exp_rw rw = {};
	rw.fd = x.fd;
	rw.offset = off;
	rw.len = n;
	rw.addr = reinterpret_cast<uintptr_t>(p);
	if (ioctl(x.ctl, req, &rw)) {
		P.fail("exporter %s: %s", req == SROCE_DMABUF_EXP_READ ? "READ" : "WRITE",
		       strerror(errno));
		return false;
	}
	return true;
}

// Move the buffer: 0 or the errno.
int xbuf_move(const xbuf &x)
{
	sroce_dmabuf_exp_move m = {};
	m.fd = x.fd;
	return ioctl(x.ctl, SROCE_DMABUF_EXP_MOVE, &m) ? errno : 0;
}

sroce_dmabuf_exp_info xbuf_info(const xbuf &x)
{
	sroce_dmabuf_exp_info i = {};
	i.fd = x.fd;
	if (ioctl(x.ctl, SROCE_DMABUF_EXP_INFO, &i))
		i.attachments = ~0ull;
	return i;
}

// Write "1"/"0" to sroce's dmabuf_pin parameter: false if it cannot.
bool set_dmabuf_pin(bool on)
{
	FILE *f = fopen("/sys/module/sroce/parameters/dmabuf_pin", "w");
	if (!f)
		return false;
	bool ok = fputs(on ? "1" : "0", f) >= 0;
	return fclose(f) == 0 && ok;
}

// The exporter moves the buffer between and during operations: sroce
// follows it (move_notify), never touching the old pages again.
void test_dmabuf_moves()
{
	point P, Pr, Pw, Pl, Pst, Pdet;
	xbuf x;
	region src, dst;
	conn c;
	ibv_mr *mr = nullptr;
	constexpr size_t LEN = 1 << 20;
	constexpr int ROUNDS = 24;
	uint64_t id = 1;
	delta moves(B, "dmabuf_moves"), faults(B, "odp_page_faults");
	std::vector<uint8_t> want(LEN), got(LEN);

	if (xbuf_make(P, x, LEN)) {
		pattern(want.data(), LEN, 81);
		xbuf_rw(P, x, SROCE_DMABUF_EXP_WRITE, 0, want.data(), LEN);
		mr = ibv_reg_dmabuf_mr(B.pd, 0, LEN, DMABUF_IOVA, x.fd,
				       ALL_REMOTE | IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			P.fail("ibv_reg_dmabuf_mr: %s", strerror(errno));
	}
	if (mr && region_make(P, src, "source", A, LEN, IBV_ACCESS_LOCAL_WRITE, 82) &&
	    region_make(P, dst, "destination", A, LEN, IBV_ACCESS_LOCAL_WRITE, 83) &&
	    conn_make(P, c, {})) {
		// READ after a move: the new pages, not the poisoned old ones.
		if (int e = xbuf_move(x))
			Pr.fail("MOVE: %s", strerror(e));
		posted(Pr, post_sge(c.a.qp, id, IBV_WR_RDMA_READ, dst.addr(), dst.lkey(), LEN,
				    DMABUF_IOVA, mr->rkey), "READ", id);
		expect_wcs(Pr, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN}});
		same_bytes(Pr, "READ destination", dst.mem, want.data(), LEN);
		Pr.report("the exporter moves the buffer; a READ of 1 MiB then gets its contents "
			  "from the new pages: every byte");

		// WRITE after a move lands in the new pages.
		if (int e = xbuf_move(x))
			Pw.fail("MOVE: %s", strerror(e));
		posted(Pw, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(), src.lkey(), LEN,
				    DMABUF_IOVA, mr->rkey), "WRITE", id);
		expect_wcs(Pw, "requester", c.a.cq, c.a.qpn,
			   {{id++, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, LEN}});
		if (xbuf_rw(Pw, x, SROCE_DMABUF_EXP_READ, 0, got.data(), LEN))
			same_bytes(Pw, "the exporter's pages", got.data(), src.mem, LEN);
		Pw.report("a WRITE of 1 MiB after a move: every byte in the exporter's new pages");

		// Moves while WRITEs and READs are in flight.
		for (int r = 0; r < ROUNDS && Pl.ok(); r++) {
			size_t off = static_cast<size_t>(r) * 40000 % (LEN - 262144);
			pattern(src.mem + off, 262144, 100 + r);
			posted(Pl, post_sge(c.a.qp, id, IBV_WR_RDMA_WRITE, src.addr(off), src.lkey(),
					    262144, DMABUF_IOVA + off, mr->rkey), "WRITE", id);
			posted(Pl, post_sge(c.a.qp, id + 1, IBV_WR_RDMA_READ, dst.addr(off),
					    dst.lkey(), 262144, DMABUF_IOVA + off, mr->rkey),
			       "READ", id + 1);
			if (int e = xbuf_move(x))
				Pl.fail("MOVE: %s", strerror(e));
			expect_wcs(Pl, "requester", c.a.cq, c.a.qpn,
				   {{id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 262144},
				    {id + 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 262144}});
			id += 2;
			same_bytes(Pl, "READ back", dst.mem + off, src.mem + off, 262144);
			if (xbuf_rw(Pl, x, SROCE_DMABUF_EXP_READ, 0, got.data(), LEN))
				same_bytes(Pl, "the exporter's pages", got.data(), src.mem, LEN);
		}
		Pl.report("%d rounds of a 256 KiB WRITE and READ with a move in flight: every "
			  "byte, read back and in the exporter's pages", ROUNDS);
		sroce_dmabuf_exp_info i = xbuf_info(x);
		if (i.stale_writes)
			Pst.fail("%llu old page(s) written after their move",
				 static_cast<unsigned long long>(i.stale_writes));
		if (i.moves != ROUNDS + 2)
			Pst.fail("%llu moves, expected %d", static_cast<unsigned long long>(i.moves),
				 ROUNDS + 2);
		Pst.report("no old page written after its move (the exporter's poison intact)");
		expect_state(P, "requester", c.a.qp, IBV_QPS_RTS);
		expect_state(P, "responder", c.b.qp, IBV_QPS_RTS);
	}
	if (!P.ok())
		for (point *Q : {&Pr, &Pw, &Pl, &Pst})
			Q->why = P.why;
	P.report("a dma-buf MR of a moving exporter; both QPs in RTS after the moves");
	check_counters("dma-buf moves: B counted every move and faulted the buffer back in",
		       {{&moves, ROUNDS + 2}, {&faults, -1}});
	conn_free(c);
	if (mr && ibv_dereg_mr(mr))
		Pdet.fail("ibv_dereg_mr: %s", strerror(errno));
	if (x.fd >= 0 && xbuf_info(x).attachments != 0)
		Pdet.fail("%llu attachment(s) left after dereg",
			  static_cast<unsigned long long>(xbuf_info(x).attachments));
	Pdet.report("ibv_dereg_mr detaches from the buffer");
	region_free(src);
	region_free(dst);
	xbuf_free(x);
}

// sroce.dmabuf_pin=1: the MR pins its buffer, which then cannot move.
void test_dmabuf_pinned()
{
	point P, Pm, Pd;
	xbuf x;
	region dst;
	conn c;
	ibv_mr *mr = nullptr;
	constexpr size_t LEN = 256 << 10;
	std::vector<uint8_t> want(LEN);
	delta moves(B, "dmabuf_moves");

	if (!set_dmabuf_pin(true))
		P.fail("setting /sys/module/sroce/parameters/dmabuf_pin: %s", strerror(errno));
	if (P.ok() && xbuf_make(P, x, LEN)) {
		pattern(want.data(), LEN, 91);
		xbuf_rw(P, x, SROCE_DMABUF_EXP_WRITE, 0, want.data(), LEN);
		mr = ibv_reg_dmabuf_mr(B.pd, 0, LEN, DMABUF_IOVA, x.fd, ALL_REMOTE);
		if (!mr)
			P.fail("ibv_reg_dmabuf_mr: %s", strerror(errno));
	}
	set_dmabuf_pin(false);
	if (mr) {
		if (xbuf_info(x).pins != 1)
			Pm.fail("%llu pin(s), expected 1",
				static_cast<unsigned long long>(xbuf_info(x).pins));
		if (int e = xbuf_move(x); e != EBUSY)
			Pm.fail("MOVE: %s, expected EBUSY", e ? strerror(e) : "moved");
	}
	if (mr && region_make(P, dst, "destination", A, LEN, IBV_ACCESS_LOCAL_WRITE, 92) &&
	    conn_make(P, c, {})) {
		posted(Pm, post_sge(c.a.qp, 1, IBV_WR_RDMA_READ, dst.addr(), dst.lkey(), LEN,
				    DMABUF_IOVA, mr->rkey), "READ", 1);
		expect_wcs(Pm, "requester", c.a.cq, c.a.qpn,
			   {{1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN}});
		same_bytes(Pm, "READ destination", dst.mem, want.data(), LEN);
	}
	if (!P.ok())
		Pm.why = P.why;
	Pm.report("dmabuf_pin=1: the MR pins its buffer (one pin, MOVE refused with EBUSY); a "
		  "READ of 256 KiB: every byte");
	conn_free(c);
	if (mr && ibv_dereg_mr(mr))
		Pd.fail("ibv_dereg_mr: %s", strerror(errno));
	if (x.fd >= 0) {
		if (xbuf_info(x).pins != 0)
			Pd.fail("still pinned after dereg");
		if (int e = xbuf_move(x))
			Pd.fail("MOVE after dereg: %s", strerror(e));
	}
	if (moves.grown() != 0)
		Pd.fail("dmabuf_moves grew by %lld: the move after dereg reached sroce",
			moves.grown());
	Pd.report("ibv_dereg_mr unpins: the buffer moves again, and sroce hears nothing of it");
	region_free(dst);
	xbuf_free(x);
}

void usage()
{
	fprintf(stderr, "usage: sroce_rc_errors -a DEV_A -A GID_A -b DEV_B -B GID_B "
			"[-w SECONDS] [-o rkey,bounds,access,read,gone,rnr,atomic,awrite,len,srq,mw,odp,dmabuf,rereg,credits|awrite-loss|blackhole|dmabuf-move] "
			"[--inject rkey] [--no-flush] [-v]\n");
}

} // namespace

int main(int argc, char **argv)
{
	const char *groups = nullptr;
	static const option longopts[] = {
		{"inject", required_argument, nullptr, 'X'},
		{"no-flush", no_argument, nullptr, 'F'},
		{"help", no_argument, nullptr, 'h'},
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "a:A:b:B:w:o:vh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'a': A.name = optarg; break;
		case 'A': A.gid_index = atoi(optarg); break;
		case 'b': B.name = optarg; break;
		case 'B': B.gid_index = atoi(optarg); break;
		case 'w': g_wait = atof(optarg); break;
		case 'o': groups = optarg; break;
		case 'v': g_verbose = true; break;
		case 'F': g_no_flush = true; break;
		case 'X':
			if (strcmp(optarg, "rkey")) {
				usage();
				return 2;
			}
			g_inject_rkey = true;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (!A.name || !B.name || A.gid_index < 0 || B.gid_index < 0 || g_wait <= 0) {
		usage();
		return 2;
	}

	if (open_dev(A) && open_dev(B)) {
		g_mtu = std::min(A.port.active_mtu, B.port.active_mtu);
		g_mtu_bytes = 128u << g_mtu;
		if (want_group(groups, "rkey"))
			for (auto k : {KEY_DEREG, KEY_VARIANT, KEY_NO_INDEX, KEY_OTHER_PD})
				test_write_bad_rkey(k);
		if (want_group(groups, "bounds"))
			test_bounds();
		if (want_group(groups, "access"))
			test_access();
		if (want_group(groups, "read"))
			test_read();
		if (want_group(groups, "gone")) {
			test_peer_gone(3, GONE_DESTROY);
			test_peer_gone(0, GONE_RESET);
		}
		if (want_group(groups, "rnr")) {
			test_rnr_exceeded(2);
			test_rnr_exceeded(0);
			test_rnr_recovers(17, 7, 0.1);
			// 300 ms of RNR NAKs: about 9 x what the transport timer
			// allows a silent peer (2 x 16.8 ms, in 4 ms jiffies).
			test_rnr_recovers(12, 1, 0.3);
			test_rnr_long_send(0.05);
		}
		if (want_group(groups, "atomic"))
			test_atomics();
		if (want_group(groups, "awrite")) {
			test_atomic_write();
#if SROCE_RDMA_CORE >= 45
			test_flush();
#endif
		}
		if (want_group(groups, "len")) {
			test_send_too_big(100, 101);
			test_send_too_big(2048, 3000);
		}
		if (want_group(groups, "srq"))
			test_srq_limit();
		if (want_group(groups, "mw"))
			test_mw();
		if (want_group(groups, "odp"))
			test_odp();
		if (want_group(groups, "dmabuf"))
			test_dmabuf_udmabuf();
		if (want_group(groups, "rereg"))
			test_rereg();
		if (want_group(groups, "credits"))
			test_credits();
		// Only when asked for: the caller has set up loss.
		if (groups && want_group(groups, "awrite-loss"))
			test_atomic_write_loss();
		// Only when asked for: the caller loaded sroce_dmabuf_exp.ko.
		if (groups && want_group(groups, "dmabuf-move")) {
			test_dmabuf_moves();
			test_dmabuf_pinned();
		}
		// Only when asked for: the caller has cut the link.
		if (groups && want_group(groups, "blackhole")) {
			test_peer_gone(3, GONE_BLACKHOLE);
			test_peer_gone(0, GONE_BLACKHOLE);
		}
	}
	close_dev(B);
	close_dev(A);
	return tap::done("sroce_rc_errors");
}
