// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_race - drive the other side of a race window that
// tests/kmod/sroce_race.ko holds open, and check that sroce won it.
//
//   sroce_race SCENARIO -d DEV_A -g GID_A -D DEV_B -G GID_B
//
// DEV_A (the device under test) and DEV_B (its peer) are sroce devices on
// the two ends of a veth pair; one process drives both. The module is
// loaded with the same scenario; this tool arms it (a write to
// /sys/module/sroce_race/parameters/armed), starts the side that runs
// into the window on one CPU, waits until the module reports it spinning
// there (parameters/hits), and runs the other side on the other CPU.
// What the kernel must get right shows as data, counters and errnos here,
// and as a clean kernel log (KASAN on the debug kernel) for the runner:
//
//   lookup   a packet's QP lookup stalls between finding the QP and
//            taking its reference while the QP is destroyed: the packet
//            must find no QP (rx_drop_no_qp), nothing freed may be touched.
//   publish  a create_qp whose response cannot be written fails after the
//            QP's number was published, while a packet for that number
//            holds the QP: create fails with EFAULT, the packet is dropped
//            (rx_drop_qp_state), the QP is freed only after it.
//   cq_flag  a full CQ's overflow stalls before it sets the ring's error
//            flag while the CQ is resized: the flag must land in the ring
//            the CQ has (the new one), and nothing freed is written.
//   odp_atomic  a FETCH_ADD to an untouched ODP word finds the page
//            missing; its fault completes while the responder stalls, so
//            the page is back when the responder looks again: the atomic
//            must still be executed once (asked again), never answered
//            without being executed. Then a CMP_SWAP on the same word.
//   odp_write   a prefetch's fault is held, a WRITE into the same
//            untouched ODP pages misses and stalls while the fault
//            completes: the WRITE must place every byte before it
//            completes, never be taken as placed with the page back.
//
// Prints TAP.
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "sroce.hpp"	// the provider's CQ: where its ring is mapped
#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

const char *kParams = "/sys/module/sroce_race/parameters/";

int read_param(const char *name)
{
	std::string path = std::string(kParams) + name;
	FILE *f = fopen(path.c_str(), "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

bool write_param(const char *name, int v)
{
	std::string path = std::string(kParams) + name;
	FILE *f = fopen(path.c_str(), "w");

	if (!f)
		return false;
	fprintf(f, "%d\n", v);
	return fclose(f) == 0;
}

// Wait until the module has begun @n delays (up to 10 s).
bool wait_hits(int n)
{
	for (int i = 0; i < 1000; i++) {
		if (read_param("hits") >= n)
			return true;
		usleep(10000);
	}
	return false;
}

uint64_t counter(const char *dev, const char *name)
{
	char path[256];
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev,
		 name);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct side {
	const char *name = nullptr;
	int gid_index = 1;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	char *buf = nullptr;
	ibv_gid gid = {};
};

bool open_side(side &s)
{
	s.ctx = open_device_by_name(s.name);
	if (!s.ctx)
		return false;
	if (ibv_query_gid(s.ctx, 1, s.gid_index, &s.gid))
		return false;
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 256, nullptr, nullptr, 0);
	s.buf = static_cast<char *>(aligned_alloc(4096, 1 << 16));
	if (!s.pd || !s.cq || !s.buf)
		return false;
	memset(s.buf, 0x5a, 1 << 16);
	s.mr = ibv_reg_mr(s.pd, s.buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	return s.mr != nullptr;
}

ibv_qp *make_qp(side &s, ibv_cq *scq, ibv_cq *rcq)
{
	ibv_qp_init_attr ia = {};

	ia.send_cq = scq ? scq : s.cq;
	ia.recv_cq = rcq ? rcq : s.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(s.pd, &ia);
}

// RESET -> RTS towards @dest_qpn at @dgid (retry_cnt 1: a peer that is
// gone is given up on quickly).
bool connect_qp(side &s, ibv_qp *qp, uint32_t dest_qpn, const ibv_gid &dgid,
		int access = IBV_ACCESS_REMOTE_WRITE, int rnr_retry = 1)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = s.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 1;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	return !ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC);
}

int post_recv(side &s, ibv_qp *qp, uint64_t wr_id)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(s.buf) + 32768, 1024, s.mr->lkey};
	ibv_recv_wr wr = {}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

int post_send(side &s, ibv_qp *qp, uint64_t wr_id)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(s.buf), 64, s.mr->lkey};
	ibv_send_wr wr = {}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(qp, &wr, &bad);
}

// Completions on @cq until @n arrive or 5 s pass; returns how many.
int drain(ibv_cq *cq, int n, ibv_wc *out = nullptr)
{
	int got = 0;

	for (int spins = 0; got < n && spins < 5000; spins++) {
		ibv_wc wc;
		int r = ibv_poll_cq(cq, 1, &wc);
		if (r == 1) {
			if (out)
				out[got] = wc;
			got++;
		} else {
			usleep(1000);
		}
	}
	return got;
}

// ---- lookup ----------------------------------------------------------------

void scenario_lookup(side &a, side &b)
{
	ibv_qp *x = make_qp(a, nullptr, nullptr), *y = make_qp(b, nullptr, nullptr);

	if (!tap::check(x && y && connect_qp(a, x, y->qp_num, b.gid) &&
				connect_qp(b, y, x->qp_num, a.gid),
			"lookup: QP %u (%s) and QP %u (%s) connected", x ? x->qp_num : 0, a.name,
			y ? y->qp_num : 0, b.name))
		return;
	post_recv(a, x, 1);
	uint64_t no_qp0 = counter(a.name, "rx_drop_no_qp");

	write_param("armed", 1);
	int sent = -1;
	// The SEND's packet reaches a.name's receive path on this CPU (veth
	// delivers in the sender's softirq) and stalls in the QP lookup.
	std::thread sender([&] {
		pin(0);
		sent = post_send(b, y, 7);
	});
	pin(1);
	bool in_window = wait_hits(1);
	tap::check(in_window, "lookup: the packet's QP lookup stalls in the window");
	uint32_t xqpn = x->qp_num;
	int destroyed = ibv_destroy_qp(x);
	tap::check(destroyed == 0, "lookup: QP %u destroyed meanwhile (%d)", xqpn, destroyed);
	sender.join();
	tap::check(sent == 0, "lookup: the SEND was posted (%d)", sent);
	usleep(200000);
	uint64_t no_qp = counter(a.name, "rx_drop_no_qp") - no_qp0;
	tap::check(no_qp >= 1, "lookup: the packet found no QP (rx_drop_no_qp +%llu)",
		   (unsigned long long)no_qp);
	drain(b.cq, 1);
	ibv_destroy_qp(y);
}

// ---- publish ---------------------------------------------------------------

// ib_uverbs_create_qp with a response buffer the kernel cannot write.
int create_qp_unwritable_response(side &s, void *ro_page)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_create_qp cmd;
	} req = {};

	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = (sizeof(ib_uverbs_create_qp_resp) + 256) / 4;
	req.cmd.response = reinterpret_cast<uintptr_t>(ro_page);
	req.cmd.user_handle = 0x1234;
	req.cmd.pd_handle = s.pd->handle;
	req.cmd.send_cq_handle = s.cq->handle;
	req.cmd.recv_cq_handle = s.cq->handle;
	req.cmd.max_send_wr = 4;
	req.cmd.max_recv_wr = 4;
	req.cmd.max_send_sge = 1;
	req.cmd.max_recv_sge = 1;
	req.cmd.qp_type = IBV_QPT_RC;
	ssize_t n = write(s.ctx->cmd_fd, &req, sizeof(req));
	return n == static_cast<ssize_t>(sizeof(req)) ? 0 : errno;
}

void scenario_publish(side &a, side &b)
{
	// QP numbers are handed out in turn: the next one is the probe's + 1.
	ibv_qp *probe = make_qp(a, nullptr, nullptr);
	ibv_qp *y = make_qp(b, nullptr, nullptr);

	if (!tap::check(probe && y, "publish: QPs created"))
		return;
	uint32_t next = probe->qp_num + 1;
	ibv_destroy_qp(probe);
	if (!tap::check(connect_qp(b, y, next, a.gid),
			"publish: QP %u on %s sends to QP %u, not yet created", y->qp_num, b.name,
			next))
		return;
	void *ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t state0 = counter(a.name, "rx_drop_qp_state");

	write_param("armed", 2);
	int created = -1;
	// Stalls once the QP number is published, then fails to answer.
	std::thread creator([&] {
		pin(0);
		created = create_qp_unwritable_response(a, ro);
	});
	pin(1);
	tap::check(wait_hits(1), "publish: create_qp stalls with QP %u published", next);
	// The packet finds the new QP and stalls holding it.
	int sent = post_send(b, y, 9);
	creator.join();
	tap::check(read_param("hits") == 2, "publish: the packet held the QP in the window (%d)",
		   read_param("hits"));
	tap::check(sent == 0, "publish: the SEND was posted (%d)", sent);
	tap::check(created == EFAULT, "publish: create_qp failed with EFAULT (%s)",
		   strerror(created));
	uint64_t dropped = counter(a.name, "rx_drop_qp_state") - state0;
	tap::check(dropped >= 1, "publish: the packet was dropped at the QP in RESET (+%llu)",
		   (unsigned long long)dropped);
	// The number is free again and the device still works.
	ibv_qp *again = make_qp(a, nullptr, nullptr);
	tap::check(again != nullptr, "publish: a QP can be created afterwards");
	if (again)
		ibv_destroy_qp(again);
	munmap(ro, 4096);
	drain(b.cq, 1);
	ibv_destroy_qp(y);
}

// ---- cq_flag -------------------------------------------------------------

void scenario_cq_flag(side &a, side &b)
{
	// A one-entry send CQ: the second completion finds it full.
	ibv_cq *tiny = ibv_create_cq(a.ctx, 1, nullptr, nullptr, 0);
	ibv_qp *x = tiny ? make_qp(a, tiny, nullptr) : nullptr;
	ibv_qp *y = make_qp(b, nullptr, nullptr);

	if (!tap::check(tiny && tiny->cqe == 1 && x && y &&
				connect_qp(a, x, y->qp_num, b.gid) &&
				connect_qp(b, y, x->qp_num, a.gid),
			"cq_flag: QPs connected, send CQ of %d entry", tiny ? tiny->cqe : 0))
		return;
	for (int i = 0; i < 4; i++)
		post_recv(b, y, 100 + i);

	write_param("armed", 1);
	int posted = -1;
	// The two SENDs' ACKs come back on this CPU; the second completion
	// overflows the CQ and stalls before the error flag is set.
	std::thread sender([&] {
		pin(0);
		ibv_sge sge = {reinterpret_cast<uintptr_t>(a.buf), 64, a.mr->lkey};
		ibv_send_wr wr[2] = {}, *bad;
		for (int i = 0; i < 2; i++) {
			wr[i].wr_id = 1 + i;
			wr[i].sg_list = &sge;
			wr[i].num_sge = 1;
			wr[i].opcode = IBV_WR_SEND;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].next = i ? nullptr : &wr[1];
		}
		posted = ibv_post_send(x, wr, &bad);
	});
	pin(1);
	tap::check(wait_hits(1), "cq_flag: the overflow stalls before setting the error flag");
	// The provider maps the new ring and unmaps the old one.
	int resized = ibv_resize_cq(tiny, 64);
	sender.join();
	tap::check(posted == 0, "cq_flag: two SENDs posted (%d)", posted);
	tap::check(resized == 0 && tiny->cqe >= 64, "cq_flag: resize to %d entries (%d)", tiny->cqe,
		   resized);
	auto *q = reinterpret_cast<sroce::cq *>(tiny);
	const auto *hdr = static_cast<const sroce_ring_hdr *>(q->map);
	uint32_t flags = hdr ? __atomic_load_n(&hdr->flags, __ATOMIC_ACQUIRE) : 0;
	tap::check(flags & SROCE_RING_F_ERROR,
		   "cq_flag: the CQ's ring (the new one) is marked in error (flags 0x%x)", flags);
	ibv_wc wc[4];
	int n = 0;
	for (int spins = 0; spins < 100 && n < 4; spins++) {
		int r = ibv_poll_cq(tiny, 4 - n, wc + n);
		if (r > 0)
			n += r;
		else
			usleep(1000);
	}
	tap::check(n == 1 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS,
		   "cq_flag: the one completion that fit was kept (%d, wr_id %llu)", n,
		   n ? (unsigned long long)wc[0].wr_id : 0ULL);
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	ibv_destroy_cq(tiny);
	drain(b.cq, 8);
}

// ---- odp_atomic, odp_write ------------------------------------------------

// An ODP MR on @len bytes of fresh anonymous memory (no page behind it).
struct odp_region {
	uint8_t *mem = nullptr;
	size_t len = 0;
	ibv_mr *mr = nullptr;
};

bool odp_make(side &s, odp_region &r, size_t len)
{
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return false;
	r.mem = static_cast<uint8_t *>(m);
	r.len = len;
	r.mr = ibv_reg_mr(s.pd, r.mem, len,
			  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	return r.mr != nullptr;
}

void odp_free(odp_region &r)
{
	if (r.mr)
		ibv_dereg_mr(r.mr);
	if (r.mem)
		munmap(r.mem, r.len);
}

// A connected pair for the ODP scenarios: @b's QP takes WRITEs and
// atomics, both sides wait out RNR NAKs (an ODP miss answers with one).
bool odp_pair(side &a, side &b, ibv_qp *&x, ibv_qp *&y)
{
	const int all = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;

	x = make_qp(a, nullptr, nullptr);
	y = make_qp(b, nullptr, nullptr);
	return x && y && connect_qp(a, x, y->qp_num, b.gid, all, 7) &&
	       connect_qp(b, y, x->qp_num, a.gid, all, 7);
}

// One atomic from @x into @word at offset 64; its original value, or ~0.
uint64_t odp_atomic(side &a, ibv_qp *x, const odp_region &word, bool cmp_swap, uint64_t compare,
		    uint64_t swap_add, int &status)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(a.buf) + 4096, 8, a.mr->lkey};
	ibv_send_wr wr = {}, *bad;
	ibv_wc wc = {};
	uint64_t orig = ~0ULL;

	memset(a.buf + 4096, 0xee, 8);
	wr.wr_id = cmp_swap ? 2 : 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = cmp_swap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(word.mem) + 64;
	wr.wr.atomic.rkey = word.mr->rkey;
	wr.wr.atomic.compare_add = cmp_swap ? compare : swap_add;
	wr.wr.atomic.swap = swap_add;
	status = ibv_post_send(x, &wr, &bad) ? -1 : (drain(a.cq, 1, &wc) == 1 ? wc.status : -2);
	if (status == IBV_WC_SUCCESS)
		memcpy(&orig, a.buf + 4096, 8);
	return orig;
}

void scenario_odp_atomic(side &a, side &b)
{
	odp_region word;
	ibv_qp *x = nullptr, *y = nullptr;

	if (!tap::check(odp_make(b, word, 4096) && odp_pair(a, b, x, y),
			"odp_atomic: an ODP MR on an untouched page of %s, QPs connected", b.name)) {
		odp_free(word);
		return;
	}
	write_param("armed", 1);
	int st = -1;
	uint64_t orig = ~0ULL;
	std::thread requester([&] {
		pin(0);
		orig = odp_atomic(a, x, word, false, 0, 5, st);
	});
	pin(1);
	tap::check(wait_hits(1), "odp_atomic: the responder stalls with the page missing");
	requester.join();
	uint64_t w;
	memcpy(&w, word.mem + 64, 8);
	tap::check(st == IBV_WC_SUCCESS && orig == 0 && w == 5,
		   "odp_atomic: FETCH_ADD(5) on the untouched word: status %d (0), returned %llu "
		   "(0), word %llu (5): executed once",
		   st, (unsigned long long)orig, (unsigned long long)w);
	orig = odp_atomic(a, x, word, true, 5, 77, st);
	memcpy(&w, word.mem + 64, 8);
	tap::check(st == IBV_WC_SUCCESS && orig == 5 && w == 77,
		   "odp_atomic: then CMP_SWAP(5 -> 77): status %d (0), returned %llu (5), word "
		   "%llu (77)",
		   st, (unsigned long long)orig, (unsigned long long)w);
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	odp_free(word);
}

void scenario_odp_write(side &a, side &b)
{
	const uint32_t len = 1024;	// one packet at path MTU 1024
	odp_region tgt;
	ibv_qp *x = nullptr, *y = nullptr;

	if (!tap::check(odp_make(b, tgt, 2 * 4096) && odp_pair(a, b, x, y),
			"odp_write: an ODP MR on two untouched pages of %s, QPs connected", b.name)) {
		odp_free(tgt);
		return;
	}
	for (uint32_t i = 0; i < len; i++)
		a.buf[i] = static_cast<char>(i * 7 + 3);
	write_param("armed", 2);
	// A prefetch in the background: its fault stalls at its start.
	ibv_sge ps = {reinterpret_cast<uintptr_t>(tgt.mem), 2 * 4096, tgt.mr->lkey};
	int adv = ibv_advise_mr(b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &ps, 1);
	tap::check(adv == 0, "odp_write: ibv_advise_mr(PREFETCH_WRITE) queued (%s)", strerror(adv));
	tap::check(wait_hits(1), "odp_write: the prefetch's fault stalls at its start (CPU %d)",
		   read_param("cpu"));
	// The WRITE misses the page, stalls, the fault completes meanwhile.
	ibv_sge sge = {reinterpret_cast<uintptr_t>(a.buf), len, a.mr->lkey};
	ibv_send_wr wr = {}, *bad;
	ibv_wc wc = {};
	wr.wr_id = 3;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(tgt.mem) + 100;
	wr.wr.rdma.rkey = tgt.mr->rkey;
	int st = -1;
	// Not on the CPU the fault spins on (a kprobe's delay holds it).
	int stalled = read_param("cpu");
	std::thread requester([&] {
		pin(stalled == 0 ? 1 : 0);
		st = ibv_post_send(x, &wr, &bad) ? -1 : (drain(a.cq, 1, &wc) == 1 ? wc.status : -2);
	});
	requester.join();
	tap::check(read_param("hits") == 2, "odp_write: the WRITE's copy missed and stalled (%d)",
		   read_param("hits"));
	uint32_t bad_at = len;
	for (uint32_t i = 0; i < len && bad_at == len; i++)
		if (tgt.mem[100 + i] != static_cast<uint8_t>(i * 7 + 3))
			bad_at = i;
	tap::check(st == IBV_WC_SUCCESS && bad_at == len,
		   "odp_write: WRITE of %u bytes: status %d (0), every byte placed (first wrong "
		   "at %d of %u)",
		   len, st, bad_at == len ? -1 : static_cast<int>(bad_at), len);
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	odp_free(tgt);
}

} // namespace

int main(int argc, char **argv)
{
	side a, b;
	int c;

	if (argc < 2)
		return 2;
	std::string scenario = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "d:g:D:G:")) != -1) {
		switch (c) {
		case 'd': a.name = optarg; break;
		case 'g': a.gid_index = atoi(optarg); break;
		case 'D': b.name = optarg; break;
		case 'G': b.gid_index = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!a.name || !b.name)
		return 2;
	if (!tap::check(read_param("hits") == 0, "sroce_race.ko loaded, nothing hit yet") ||
	    !tap::check(open_side(a) && open_side(b), "open %s and %s", a.name, b.name))
		return tap::done("sroce_race");
	if (scenario == "lookup")
		scenario_lookup(a, b);
	else if (scenario == "publish")
		scenario_publish(a, b);
	else if (scenario == "cq_flag")
		scenario_cq_flag(a, b);
	else if (scenario == "odp_atomic")
		scenario_odp_atomic(a, b);
	else if (scenario == "odp_write")
		scenario_odp_write(a, b);
	else
		tap::check(false, "unknown scenario %s", scenario.c_str());
	write_param("armed", 0);
	for (side *s : {&a, &b}) {
		ibv_dereg_mr(s->mr);
		ibv_destroy_cq(s->cq);
		ibv_dealloc_pd(s->pd);
		ibv_close_device(s->ctx);
		free(s->buf);
	}
	return tap::done("sroce_race");
}
