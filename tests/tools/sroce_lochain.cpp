// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_lochain - a chain of RC QPs on one device, all talking to their
// own device (loopback), armed so that one doorbell runs the whole chain:
// the test for unbounded kernel-stack recursion on the loopback path.
//
//   sroce_lochain -d sroce0 -g GID_INDEX [-n LINKS] [-t TIMEOUT] [-s SEED]
//                 [-w WAIT_S]
//
// Why it nests. A packet to a GID of the sending device is handed by
// sroce_net_xmit() -> sroce_net_loopback() straight to sroce_rcv(), in the
// sender's context. A request lands in sroce_resp_rcv(), which queues an
// ACK (the request asked for one) and runs the responder's transmit task
// inline (sroce_task_run() claims an idle task and runs it right there);
// sroce_resp_tx_pass() sends the ACK to the QP named by the responder's
// dest_qpn, again through sroce_net_loopback(), into sroce_comp_rcv() of
// that QP, which retires what the ACK covers and then runs *that* QP's
// requester inline (sroce_task_run(&qp->req_task)); sroce_req_pass()
// fetches the next WQE from its ring and sends it to its own dest, and so
// on. dest_qpn is whatever the application set at RTR, so one process can
// line up distinct QPs, each link adding a few kernel stack frames.
//
// The chain. QPs R_0..R_{N+1} (requesters) and P_0..P_{N+1} (responders),
// every path to the device's own RoCE v2 GID; base PSN b (random):
//   R_j: dest P_j, sq_psn b + j;
//   P_j: dest R_{j+1}, rq_psn b + j + 1 (j <= N); P_{N+1} stays in INIT.
// Arming:
//  1. R_j in RTS, P_j in INIT. WQE#1 of every R_j (an 8-byte signaled
//     RDMA WRITE) is posted with ibv_post_send(): it goes out with PSN
//     b + j and P_j, in INIT, drops it (rx_drop_qp_state rises by N + 2).
//     Each R_j now has PSN b + j outstanding and its requester is idle
//     (NEED_KICK set on its SQ).
//  2. P_0..P_N move to RTR (rq_psn b + j + 1, dest R_{j+1}).
//  3. WQE#2 of R_1..R_N (8-byte signaled RDMA WRITE of a per-link value to
//     P_j's buffer) is stored in the mmap'd SQ slot and the producer index
//     published with a release store, with no doorbell: those requesters
//     stay idle, the WQEs unsent (checked: no buffer changes).
//  4. WQE#2 of R_0 is posted with ibv_post_send(): its doorbell runs R_0's
//     requester in the system call. R_0 sends PSN b + 1, which P_0 expects:
//     P_0 executes it and ACKs PSN b + 1 to R_1, whose outstanding WQE#1
//     has exactly that PSN (inside sroce_psn_in_resp_window: una = b + 1,
//     max_psn = b + 2). R_1's completer completes WQE#1 and runs R_1's
//     requester, which fetches WQE#2 (PSN b + 2) and sends it to P_1,
//     whose ACK goes to R_2 ... and P_N's ACK completes WQE#1 of the spare
//     R_{N+1}, whose requester finds its SQ empty: the end. Each WQE#2 is
//     the only WQE its requester fetched, so its packet carries AckReq
//     (sroce_req_followed() is false), and RDMA WRITE needs no receive
//     WQE or credit. On a module that recurses, all of this is one call
//     chain inside R_0's post: N + 1 request/ACK round trips deep.
// Checks: every P_j (j <= N) holds R_j's WQE#2 value and nothing else
// changed (WQE#1s never landed, the spare's buffer is untouched); R_1..R_{N+1}
// each completed WQE#1 exactly once, successfully, and nothing else
// completed; the device's counters moved by exactly what the chain sends
// (3N + 4 packets, N + 1 ACKs, N + 2 drops, no retransmission, NAK or
// error); then every R_j goes to ERR and the WQEs still outstanding (both
// of R_0's, WQE#2 of R_1..R_N, whose ACKs went down the chain) flush,
// exactly once each.
//
// No timer may take part: WQE#1's retransmission timer runs from its post
// until the chain reaches its requester, and a resend would run that
// requester early (WQE#2 is in its ring), splitting the chain. Arming 256
// links takes about 0.5 s in the Debian test guest, several times that
// under KASAN, so the timeout (-t, default 22: 17 s) is far longer; the
// counters check that nothing was retransmitted.
//
// On a kernel that nests without bound, 64 links overflow the kernel
// stack (with CONFIG_VMAP_STACK the guest dies of a stack-guard fault). A
// fixed kernel must still complete every link, in order, losing nothing.
// Prints TAP.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include <infiniband/verbs.h>

#include "sroce.hpp"	// the provider's own QP: where its SQ ring is mapped
#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr uint32_t kPsnMask = 0xffffff;
constexpr size_t kSlot = 64;		// destination bytes per link
constexpr size_t kWqe1Off = 16;		// where a WQE#1 would land in a slot
constexpr unsigned char kPattern = 0xa5;

struct env {
	const char *dev = nullptr;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *dst_mr = nullptr;	// responders' buffer (REMOTE_WRITE)
	ibv_mr *src_mr = nullptr;	// requesters' payloads
	unsigned char *dst = nullptr;
	uint64_t *src = nullptr;	// [2 * j] WQE#1, [2 * j + 1] WQE#2
	int gid_index = 1;
	ibv_gid gid = {};
	int n = 64;			// links: R_0..R_N send, R_{N+1} is the spare
	int timeout = 22;
	int wait_s = 60;
	uint32_t base = 0;		// PSN b
	std::vector<ibv_qp *> r, p;	// N + 2 each
};

uint64_t wrid(int wqe, int j)
{
	return (static_cast<uint64_t>(wqe) << 32) | static_cast<uint32_t>(j);
}

uint32_t psn(const env &e, int k)
{
	return (e.base + static_cast<uint32_t>(k)) & kPsnMask;
}

uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

double now_ms()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// One hw counter of port 1, or -1.
long long counter(const env &e, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", e.dev,
		 name);
	FILE *f = fopen(path, "r");
	long long v = -1;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

const char *const kCounters[] = {
	"tx_packets", "rx_packets", "acks_sent", "rx_drop_qp_state",
	"tx_errors", "rx_drop_no_qp", "rx_drop_malformed", "rx_drop_icrc",
	"rx_drop_out_of_sequence", "retransmit_timeouts", "retransmitted_packets",
	"seq_nak_sent", "seq_nak_received", "rnr_nak_sent", "rnr_nak_received",
	"error_nak_sent", "error_nak_received", "duplicate_requests",
	"retry_exceeded", "stale_responses", "bad_wqe", "bad_ring_index",
};
constexpr int kNumCounters = sizeof(kCounters) / sizeof(kCounters[0]);

int counter_index(const char *name)
{
	for (int i = 0; i < kNumCounters; i++)
		if (!strcmp(kCounters[i], name))
			return i;
	return 0;
}

struct snapshot {
	long long v[kNumCounters];
};

// ib_core caches the counters for 10 ms: wait that out, then read.
snapshot read_counters(const env &e)
{
	snapshot s;
	usleep(30000);
	for (int i = 0; i < kNumCounters; i++)
		s.v[i] = counter(e, kCounters[i]);
	return s;
}

ibv_qp *create_qp(env &e, uint32_t send_wr)
{
	ibv_qp_init_attr ia = {};
	ia.send_cq = e.cq;
	ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = send_wr;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(e.pd, &ia);
}

int to_init(ibv_qp *qp, int access)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS);
}

int to_rtr(const env &e, ibv_qp *qp, uint32_t dest, uint32_t rq_psn)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = e.gid;
	a.ah_attr.grh.sgid_index = e.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int to_rts(const env &e, ibv_qp *qp, uint32_t sq_psn)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = static_cast<uint8_t>(e.timeout);
	a.retry_cnt = 3;
	a.rnr_retry = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

uint64_t dst_addr(const env &e, int j, size_t off)
{
	return reinterpret_cast<uintptr_t>(e.dst + static_cast<size_t>(j) * kSlot + off);
}

// An 8-byte signaled RDMA WRITE of src[k] to P_j's slot at @off.
int post_write(env &e, int j, int wqe, size_t off)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(&e.src[2 * j + wqe - 1]), 8, e.src_mr->lkey};
	ibv_send_wr wr = {};
	ibv_send_wr *bad = nullptr;
	wr.wr_id = wrid(wqe, j);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = dst_addr(e, j, off);
	wr.wr.rdma.rkey = e.dst_mr->rkey;
	return ibv_post_send(e.r[j], &wr, &bad);
}

// WQE#2 of R_j written into its SQ ring and published, no doorbell: what
// ibv_post_send() stores, without the system call.
bool publish_wqe2(env &e, int j)
{
	auto *q = reinterpret_cast<sroce::qp *>(e.r[j]);
	bool ok = false;

	pthread_spin_lock(&q->sq_lock);
	if (q->sq.attached() && q->sq.free_slots() > 0 &&
	    q->sq.stride() >= SROCE_SEND_WQE_HDR + sizeof(sroce_sge)) {
		auto *slot = static_cast<unsigned char *>(q->sq.slot(0));
		sroce_send_wqe w = {};
		sroce_sge sge = {reinterpret_cast<uintptr_t>(&e.src[2 * j + 1]), 8,
				 e.src_mr->lkey};
		memset(slot, 0, q->sq.stride());
		w.wr_id = wrid(2, j);
		w.opcode = SROCE_WR_RDMA_WRITE;
		w.num_sge = 1;
		w.flags = SROCE_WQE_F_SIGNALED;
		w.wr.rdma.remote_addr = dst_addr(e, j, 0);
		w.wr.rdma.rkey = e.dst_mr->rkey;
		memcpy(slot, &w, sizeof(w));
		memcpy(slot + SROCE_SEND_WQE_HDR, &sge, sizeof(sge));
		q->sq.publish(1);	// release store of prod
		ok = true;
	}
	pthread_spin_unlock(&q->sq_lock);
	return ok;
}

bool sq_needs_kick(ibv_qp *qp)
{
	auto *q = reinterpret_cast<sroce::qp *>(qp);
	return q->sq.flags() & SROCE_RING_F_NEED_KICK;
}

// Index j of the requester with @qpn, or -1.
int requester_of(const env &e, uint32_t qpn)
{
	for (size_t j = 0; j < e.r.size(); j++)
		if (e.r[j] && e.r[j]->qp_num == qpn)
			return static_cast<int>(j);
	return -1;
}

// Is every byte of P_j's slot as expected (@wqe2: holds R_j's value)?
bool slot_ok(const env &e, int j, bool wqe2, size_t *bad_off)
{
	const unsigned char *s = e.dst + static_cast<size_t>(j) * kSlot;
	unsigned char want[kSlot];
	memset(want, kPattern, sizeof(want));
	if (wqe2)
		memcpy(want, &e.src[2 * j + 1], 8);
	for (size_t i = 0; i < kSlot; i++) {
		if (s[i] != want[i]) {
			*bad_off = i;
			return false;
		}
	}
	return true;
}

struct wc_tally {
	std::vector<int> ok1;		// successful WQE#1 completions per R_j
	int unexpected = 0;		// anything else
	int total = 0;
};

void tally(env &e, wc_tally &t, const ibv_wc &wc)
{
	int j = requester_of(e, wc.qp_num);
	t.total++;
	if (j >= 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE &&
	    wc.wr_id == wrid(1, j)) {
		t.ok1[j]++;
		return;
	}
	if (t.unexpected++ < 5)
		tap::diag("unexpected completion: qp %u (R_%d) wr_id %#" PRIx64 " status %s opcode %d",
			  wc.qp_num, j, wc.wr_id,
			  ibv_wc_status_str(wc.status), wc.opcode);
}

void check_counters(const env &e, const snapshot &before, const snapshot &after)
{
	long long want_pkts = 3LL * e.n + 4;	// N + 2 WQE#1, N + 1 WQE#2, N + 1 ACKs
	bool ok = true;
	for (int i = 0; i < kNumCounters; i++) {
		long long d = after.v[i] - before.v[i];
		long long want = 0;
		const char *c = kCounters[i];
		if (!strcmp(c, "tx_packets") || !strcmp(c, "rx_packets"))
			want = want_pkts;
		else if (!strcmp(c, "acks_sent"))
			want = e.n + 1;
		else if (!strcmp(c, "rx_drop_qp_state"))
			want = e.n + 2;
		if (before.v[i] < 0 || after.v[i] < 0 || d != want) {
			tap::diag("counter %s moved by %lld, expected %lld", c, d, want);
			ok = false;
		}
	}
	tap::check(ok, "counters: %lld packets each way, %d ACKs, %d drops in INIT, "
		   "no retransmission, NAK, duplicate or error", want_pkts, e.n + 1, e.n + 2);
}

// Move every R_j to ERR: the WQEs still outstanding flush, once each.
void check_flush(env &e)
{
	int n = static_cast<int>(e.r.size());
	std::vector<int> want(n, 0), got1(n, 0), got2(n, 0);
	int bad = 0, moved = 0, expected = 0;

	for (int j = 0; j < n; j++) {
		ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_ERR;
		moved += ibv_modify_qp(e.r[j], &a, IBV_QP_STATE) == 0;
	}
	tap::check(moved == n, "%d of %d requesters moved to ERR", moved, n);
	// R_0: WQE#1 and WQE#2; R_1..R_N: WQE#2; R_{N+1}: none.
	expected = 2 + (n - 2);
	int seen = 0;
	double deadline = now_ms() + 1000.0 * e.wait_s;
	while (seen < expected && now_ms() < deadline) {
		ibv_wc wc[32];
		int k = ibv_poll_cq(e.cq, 32, wc);
		if (k < 0)
			break;
		if (k == 0) {
			usleep(1000);
			continue;
		}
		for (int i = 0; i < k; i++) {
			int j = requester_of(e, wc[i].qp_num);
			seen++;
			if (j < 0 || wc[i].status != IBV_WC_WR_FLUSH_ERR) {
				bad++;
				continue;
			}
			if (wc[i].wr_id == wrid(1, j) && j == 0)
				got1[j]++;
			else if (wc[i].wr_id == wrid(2, j) && j <= n - 2)
				got2[j]++;
			else
				bad++;
		}
	}
	// Nothing more may come.
	for (int i = 0; i < 20; i++) {
		ibv_wc wc;
		if (ibv_poll_cq(e.cq, 1, &wc) == 1) {
			seen++;
			bad++;
		}
		usleep(5000);
	}
	bool ok = bad == 0 && seen == expected && got1[0] == 1;
	for (int j = 0; j <= n - 2; j++)
		ok = ok && got2[j] == 1;
	tap::check(ok, "the %d outstanding WQEs flushed once each (%d flush completions, %d wrong)",
		   expected, seen, bad);
}

void run(env &e)
{
	const int n = e.n, nq = e.n + 2;
	size_t dst_len = static_cast<size_t>(nq) * kSlot;

	e.dst = static_cast<unsigned char *>(aligned_alloc(4096, (dst_len + 4095) & ~size_t{4095}));
	e.src = static_cast<uint64_t *>(calloc(2 * nq, sizeof(uint64_t)));
	if (!tap::check(e.dst && e.src, "buffers"))
		return;
	memset(e.dst, kPattern, dst_len);
	for (int j = 0; j < nq; j++) {
		e.src[2 * j] = splitmix(e.base * 4099u + 2u * j);
		e.src[2 * j + 1] = splitmix(e.base * 4099u + 2u * j + 1);
	}
	e.dst_mr = ibv_reg_mr(e.pd, e.dst, dst_len,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	e.src_mr = ibv_reg_mr(e.pd, e.src, 2 * nq * sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE);
	if (!tap::check(e.dst_mr && e.src_mr, "MRs"))
		return;

	int created = 0;
	for (int j = 0; j < nq; j++) {
		e.r.push_back(create_qp(e, 4));
		e.p.push_back(create_qp(e, 1));
		created += (e.r.back() != nullptr) + (e.p.back() != nullptr);
	}
	if (!tap::check(created == 2 * nq, "%d of %d RC QPs created", created, 2 * nq))
		return;

	// Requesters to RTS (dest P_j, sq_psn b + j), responders to INIT.
	int ready = 0;
	for (int j = 0; j < nq; j++) {
		ready += !to_init(e.r[j], 0) &&
			 !to_rtr(e, e.r[j], e.p[j]->qp_num, psn(e, 0x800000)) &&
			 !to_rts(e, e.r[j], psn(e, j));
		ready += !to_init(e.p[j], IBV_ACCESS_REMOTE_WRITE);
	}
	if (!tap::check(ready == 2 * nq, "R_0..R_%d in RTS, P_0..P_%d in INIT (PSN base %#x)",
			n + 1, n + 1, e.base))
		return;

	// 1. WQE#1 everywhere, dropped by the responders in INIT.
	snapshot before = read_counters(e);
	double t_arm = now_ms();
	int posted = 0;
	for (int j = 0; j < nq; j++)
		posted += post_write(e, j, 1, kWqe1Off) == 0;
	if (!tap::check(posted == nq, "WQE#1 posted on %d of %d requesters", posted, nq))
		return;
	long long drops0 = before.v[counter_index("rx_drop_qp_state")], drops = 0;
	double deadline = now_ms() + 1000.0 * e.wait_s;
	do {
		usleep(20000);
		drops = counter(e, "rx_drop_qp_state") - drops0;
	} while (drops < nq && now_ms() < deadline);
	ibv_wc wc;
	int early = ibv_poll_cq(e.cq, 1, &wc);
	if (!tap::check(drops == nq && early == 0,
			"the %d WQE#1s were dropped by the responders in INIT (%lld), none completed",
			nq, drops))
		return;
	int idle = 0;
	for (int j = 0; j < nq; j++)
		idle += sq_needs_kick(e.r[j]);
	tap::check(idle == nq, "every requester idle with PSN b + j outstanding "
		   "(NEED_KICK on %d of %d SQs)", idle, nq);

	// 2. Responders to RTR: P_j expects b + j + 1 and answers R_{j+1}.
	ready = 0;
	for (int j = 0; j <= n; j++)
		ready += !to_rtr(e, e.p[j], e.r[j + 1]->qp_num, psn(e, j + 1));
	if (!tap::check(ready == n + 1, "P_0..P_%d in RTR, P_j answering R_{j+1}", n))
		return;

	// 3. WQE#2 of R_1..R_N into their rings, no doorbell.
	int pub = 0;
	for (int j = 1; j <= n; j++)
		pub += publish_wqe2(e, j);
	usleep(50000);
	int untouched = 0;
	for (int j = 0; j < nq; j++) {
		size_t off;
		untouched += slot_ok(e, j, false, &off);
	}
	if (!tap::check(pub == n && untouched == nq,
			"WQE#2 of R_1..R_%d written to their SQ rings without a doorbell, "
			"unsent (%d published, %d of %d buffers untouched)",
			n, pub, untouched, nq))
		return;
	double armed_ms = now_ms() - t_arm;

	// 4. The one doorbell: WQE#2 of R_0.
	double t0 = now_ms();
	int rc = post_write(e, 0, 2, 0);
	double post_ms = now_ms() - t0;
	if (!tap::check(rc == 0, "WQE#2 posted on R_0 (ibv_post_send %d)", rc))
		return;

	wc_tally t;
	t.ok1.assign(nq, 0);
	int in_post = -1;
	deadline = now_ms() + 1000.0 * e.wait_s;
	int done = 0;
	while (now_ms() < deadline) {
		ibv_wc wcs[32];
		int k = ibv_poll_cq(e.cq, 32, wcs);
		if (k < 0)
			break;
		if (in_post < 0)
			in_post = k;
		for (int i = 0; i < k; i++)
			tally(e, t, wcs[i]);
		done = 0;
		for (int j = 1; j < nq; j++)
			done += t.ok1[j] > 0;
		if (done == n + 1)
			break;
		if (k == 0)
			usleep(1000);
	}
	double chain_ms = now_ms() - t0;
	// Anything more that arrives is wrong.
	for (int i = 0; i < 20; i++) {
		ibv_wc extra;
		if (ibv_poll_cq(e.cq, 1, &extra) == 1)
			tally(e, t, extra);
		usleep(5000);
	}
	tap::diag("armed in %.0f ms; ibv_post_send of R_0 took %.1f ms, %d completions "
		  "were there when it returned; all in after %.1f ms",
		  armed_ms, post_ms, in_post, chain_ms);
	bool once = t.unexpected == 0;
	for (int j = 1; j < nq; j++)
		once = once && t.ok1[j] == 1;
	tap::check(done == n + 1 && once,
		   "R_1..R_%d each completed WQE#1 exactly once, successfully "
		   "(%d of %d, %d completions, %d unexpected)",
		   n + 1, done, n + 1, t.total, t.unexpected);

	std::atomic_thread_fence(std::memory_order_acquire);
	int good = 0, first_bad = -1;
	size_t bad_off = 0;
	for (int j = 0; j < nq; j++) {
		size_t off;
		if (slot_ok(e, j, j <= n, &off)) {
			good++;
		} else if (first_bad < 0) {
			first_bad = j;
			bad_off = off;
		}
	}
	if (first_bad >= 0) {
		const unsigned char *s = e.dst + static_cast<size_t>(first_bad) * kSlot;
		uint64_t got;
		memcpy(&got, s, 8);
		tap::diag("P_%d: byte %zu differs; first 8 bytes %#" PRIx64 ", expected %#" PRIx64,
			  first_bad, bad_off, got,
			  first_bad <= n ? e.src[2 * first_bad + 1] : UINT64_C(0xa5a5a5a5a5a5a5a5));
	}
	tap::check(good == nq,
		   "every P_j holds R_j's WQE#2 value, nothing else changed (%d of %d buffers)",
		   good, nq);

	check_counters(e, before, read_counters(e));
	check_flush(e);
}

} // namespace

int main(int argc, char **argv)
{
	env e;
	unsigned long seed = static_cast<unsigned long>(time(nullptr)) ^ getpid();
	int c;

	while ((c = getopt(argc, argv, "d:g:n:t:s:w:")) != -1) {
		switch (c) {
		case 'd': e.dev = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		case 'n': e.n = atoi(optarg); break;
		case 't': e.timeout = atoi(optarg); break;
		case 's': seed = strtoul(optarg, nullptr, 0); break;
		case 'w': e.wait_s = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!e.dev || e.n < 1 || e.n > 4000 || e.timeout < 1 || e.timeout > 31)
		return 2;
	e.base = static_cast<uint32_t>(splitmix(seed)) & kPsnMask;
	tap::diag("%s: chain of %d links, seed %lu, PSN base %#x, timeout %d", e.dev, e.n, seed,
		  e.base, e.timeout);

	e.ctx = open_device_by_name(e.dev);
	if (!tap::check(e.ctx, "open %s", e.dev))
		return tap::done("sroce_lochain");
	bool gid = ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid) == 0;
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 4 * (e.n + 2) + 64, nullptr, nullptr, 0);
	if (tap::check(gid && e.pd && e.cq, "GID %d, PD and CQ", e.gid_index))
		run(e);

	int destroyed = 0, total = 0;
	for (auto *q : e.r)
		if (q) {
			total++;
			destroyed += ibv_destroy_qp(q) == 0;
		}
	for (auto *q : e.p)
		if (q) {
			total++;
			destroyed += ibv_destroy_qp(q) == 0;
		}
	bool freed = destroyed == total;
	if (e.dst_mr)
		freed &= ibv_dereg_mr(e.dst_mr) == 0;
	if (e.src_mr)
		freed &= ibv_dereg_mr(e.src_mr) == 0;
	if (e.cq)
		freed &= ibv_destroy_cq(e.cq) == 0;
	if (e.pd)
		freed &= ibv_dealloc_pd(e.pd) == 0;
	tap::check(freed, "%d QPs, MRs, CQ and PD destroyed", destroyed);
	if (e.ctx)
		ibv_close_device(e.ctx);
	free(e.dst);
	free(e.src);
	return tap::done("sroce_lochain");
}
