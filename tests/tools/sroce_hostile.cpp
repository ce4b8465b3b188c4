// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_hostile - a "hostile provider": write garbage into a QP's mmap'd
// send ring (indices beyond the ring, num_sge 255, lengths near 2^32,
// unknown opcodes, huge inline lengths, random bytes) and ring the kernel's
// doorbell directly. Each time the kernel must put that QP in error with an
// error completion or an async event, and a second QP on the same device
// must keep working. Prints TAP. The caller checks the kernel log and the
// bad_wqe / bad_ring_index counters.
//
//   sroce_hostile -d sroce0 [-g GID_INDEX] [-r RANDOM_ROUNDS]
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <random>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "sroce.hpp"	// the provider's own QP: where its rings are mapped
#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

struct env {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	char *buf = nullptr;
	int gid_index = 1;
	ibv_gid gid = {};
};

ibv_qp *rts_qp(env &e)
{
	ibv_qp_init_attr ia = {};
	ia.send_cq = e.cq;
	ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	ibv_qp *qp = ibv_create_qp(e.pd, &ia);
	if (!qp)
		return nullptr;

	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = e.gid;
	a.ah_attr.grh.sgid_index = e.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	r |= ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	r |= ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC);
	if (r) {
		ibv_destroy_qp(qp);
		return nullptr;
	}
	return qp;
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

sroce_ring_hdr *sq_hdr(ibv_qp *qp)
{
	return static_cast<sroce_ring_hdr *>(reinterpret_cast<sroce::qp *>(qp)->sq_map);
}

ibv_qp_state state_of(ibv_qp *qp)
{
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	return a.qp_state;
}

// Poll until one completion of @qp with @status arrives (or time out).
bool saw_completion(env &e, ibv_qp *qp, int status)
{
	for (int spins = 0; spins < 200000; spins++) {
		ibv_wc wc;
		int n = ibv_poll_cq(e.cq, 1, &wc);
		if (n == 1 && wc.qp_num == qp->qp_num && wc.status == status)
			return true;
	}
	return false;
}

void drain_cq(env &e)
{
	ibv_wc wc[16];
	while (ibv_poll_cq(e.cq, 16, wc) > 0)
		;
}

bool saw_async(env &e, ibv_qp *qp, ibv_event_type type)
{
	pollfd p = {e.ctx->async_fd, POLLIN, 0};
	while (poll(&p, 1, 2000) == 1) {
		ibv_async_event ev;
		if (ibv_get_async_event(e.ctx, &ev))
			return false;
		bool hit = ev.event_type == type && ev.element.qp == qp;
		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	}
	return false;
}

// Write one hand-made WQE at the producer index and publish it.
void publish_wqe(ibv_qp *qp, const sroce_send_wqe &w, const sroce_sge *sge, int nsge)
{
	sroce_ring_hdr *h = sq_hdr(qp);
	auto *q = reinterpret_cast<sroce::qp *>(qp);
	uint32_t entries = q->sq.entries(), stride = q->sq.stride();
	unsigned char *slot = reinterpret_cast<unsigned char *>(h) + SROCE_RING_DATA_OFFSET +
			      static_cast<size_t>(h->prod & (entries - 1)) * stride;
	memcpy(slot, &w, sizeof(w));
	for (int i = 0; i < nsge && SROCE_SEND_WQE_HDR + (i + 1) * sizeof(sroce_sge) <= stride; i++)
		memcpy(slot + SROCE_SEND_WQE_HDR + i * sizeof(sroce_sge), &sge[i], sizeof(sge[i]));
	__atomic_store_n(&h->prod, h->prod + 1, __ATOMIC_RELEASE);
}

struct wqe_case {
	const char *what;
	int status;	// expected error completion
	void (*make)(sroce_send_wqe &w, sroce_sge *sge, const env &e);
};

const wqe_case wqe_cases[] = {
	{"num_sge = 255", IBV_WC_LOC_LEN_ERR,
	 [](sroce_send_wqe &w, sroce_sge *, const env &) { w.num_sge = 255; }},
	{"unknown opcode 0x77", IBV_WC_LOC_QP_OP_ERR,
	 [](sroce_send_wqe &w, sroce_sge *, const env &) { w.opcode = 0x77; }},
	{"length near 2^32 in a valid MR", IBV_WC_LOC_PROT_ERR,
	 [](sroce_send_wqe &, sroce_sge *sge, const env &e) {
		 sge[0].length = 0xffffff00u;
		 sge[0].lkey = e.mr->lkey;
	 }},
	{"unknown lkey", IBV_WC_LOC_PROT_ERR,
	 [](sroce_send_wqe &, sroce_sge *sge, const env &e) { sge[0].lkey = e.mr->lkey ^ 0x5a5a00; }},
	{"inline_len 0xfffffff0", IBV_WC_LOC_LEN_ERR,
	 [](sroce_send_wqe &w, sroce_sge *, const env &) {
		 w.flags |= SROCE_WQE_F_INLINE;
		 w.inline_len = 0xfffffff0u;
		 w.num_sge = 0;
	 }},
	{"unknown flag bits", IBV_WC_LOC_QP_OP_ERR,
	 [](sroce_send_wqe &w, sroce_sge *, const env &) { w.flags = 0xff00; }},
};

void check_bad_wqes(env &e)
{
	for (auto &c : wqe_cases) {
		ibv_qp *qp = rts_qp(e);
		if (!tap::check(qp, "%s: QP in RTS", c.what))
			continue;
		sroce_send_wqe w = {};
		w.wr_id = 0xbad;
		w.opcode = SROCE_WR_SEND;
		w.num_sge = 1;
		w.flags = SROCE_WQE_F_SIGNALED;
		sroce_sge sge[2] = {{reinterpret_cast<uintptr_t>(e.buf), 64, e.mr->lkey}, {}};
		c.make(w, sge, e);
		publish_wqe(qp, w, sge, 2);
		int r = ring_doorbell(qp);
		tap::check(r == 0, "%s: doorbell accepted (errno %d)", c.what, r);
		tap::check(saw_completion(e, qp, c.status), "%s: completes with %s", c.what,
			   ibv_wc_status_str(static_cast<ibv_wc_status>(c.status)));
		tap::check(state_of(qp) == IBV_QPS_ERR, "%s: QP moved to ERR", c.what);
		drain_cq(e);
		ibv_destroy_qp(qp);
	}
}

void check_bad_index(env &e)
{
	ibv_qp *qp = rts_qp(e);
	if (!tap::check(qp, "bad prod: QP in RTS"))
		return;
	sroce_ring_hdr *h = sq_hdr(qp);
	__atomic_store_n(&h->prod, h->cons + 5 * reinterpret_cast<sroce::qp *>(qp)->sq.entries(),
			 __ATOMIC_RELEASE);
	tap::check(ring_doorbell(qp) == 0, "bad prod: doorbell accepted");
	tap::check(saw_async(e, qp, IBV_EVENT_QP_FATAL), "bad prod: IBV_EVENT_QP_FATAL");
	tap::check(state_of(qp) == IBV_QPS_ERR, "bad prod: QP moved to ERR");
	drain_cq(e);
	ibv_destroy_qp(qp);
}

// Random bytes in every slot and a random prod within the ring: whatever
// the kernel decides, it must stay healthy (the caller checks its log).
void check_random(env &e, int rounds)
{
	std::mt19937 rng(12345);
	int errs = 0, alive = 0;
	for (int i = 0; i < rounds; i++) {
		ibv_qp *qp = rts_qp(e);
		if (!qp) {
			errs++;
			continue;
		}
		auto *q = reinterpret_cast<sroce::qp *>(qp);
		sroce_ring_hdr *h = sq_hdr(qp);
		size_t bytes = static_cast<size_t>(q->sq.entries()) * q->sq.stride();
		auto *data = reinterpret_cast<unsigned char *>(h) + SROCE_RING_DATA_OFFSET;
		for (size_t b = 0; b < bytes; b++)
			data[b] = static_cast<unsigned char>(rng());
		__atomic_store_n(&h->prod, h->cons + rng() % (q->sq.entries() + 1), __ATOMIC_RELEASE);
		ring_doorbell(qp);
		alive += state_of(qp) != IBV_QPS_ERR;
		drain_cq(e);
		ibv_destroy_qp(qp);
	}
	tap::check(errs == 0, "%d rounds of random send rings (%d QPs survived, the rest in ERR)",
		   rounds, alive);
}

// A uverbs POST_RECV / POST_SRQ_RECV carrying work requests, straight to
// the kernel: userspace owns the producer side of its rings, so the kernel
// must refuse them (EINVAL) and write nothing into the ring - before, it
// posted them into a user SRQ's ring as a second producer, trusting the
// consumer index userspace can write.
int post_recv_cmd(ibv_context *ctx, uint32_t command, uint32_t handle, const env &e)
{
	// The command ends in a flexible array: header, body, WR, SGE laid out
	// by hand.
	alignas(8) uint8_t req[sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_recv) +
			       sizeof(ib_uverbs_recv_wr) + sizeof(ib_uverbs_sge)] = {};
	ib_uverbs_post_recv_resp resp = {};
	ib_uverbs_cmd_hdr hdr = {};
	ib_uverbs_post_recv cmd = {};
	ib_uverbs_recv_wr wr = {};
	ib_uverbs_sge sge = {};

	hdr.command = command;
	hdr.in_words = sizeof(req) / 4;
	hdr.out_words = sizeof(resp) / 4;
	cmd.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.qp_handle = handle;	// the SRQ's, for POST_SRQ_RECV
	cmd.wr_count = 1;
	cmd.sge_count = 1;
	cmd.wqe_size = sizeof(ib_uverbs_recv_wr);
	wr.wr_id = 0x5eed;
	wr.num_sge = 1;
	sge.addr = reinterpret_cast<uintptr_t>(e.buf);
	sge.length = 64;
	sge.lkey = e.mr->lkey;
	uint8_t *p = req;
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	memcpy(p, &cmd, sizeof(cmd));
	p += sizeof(cmd);
	memcpy(p, &wr, sizeof(wr));
	p += sizeof(wr);
	memcpy(p, &sge, sizeof(sge));
	ssize_t n = write(ctx->cmd_fd, req, sizeof(req));
	return n == static_cast<ssize_t>(sizeof(req)) ? 0 : errno;
}

void check_kernel_posts(env &e)
{
	ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	ibv_srq *srq = ibv_create_srq(e.pd, &sa);
	if (!tap::check(srq, "user SRQ created"))
		return;
	auto *h = static_cast<sroce_ring_hdr *>(reinterpret_cast<sroce::srq *>(srq)->map);
	uint32_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	int r = post_recv_cmd(e.ctx, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq->handle, e);
	uint32_t now = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	tap::check(r == EINVAL && now == prod,
		   "POST_SRQ_RECV with a WR on a user SRQ: EINVAL (%s), ring untouched (prod %u -> %u)",
		   strerror(r), prod, now);
	// A consumer index far ahead: a kernel producer trusting it would
	// think the ring had room anywhere.
	__atomic_store_n(&h->cons, now + 12345, __ATOMIC_RELEASE);
	r = post_recv_cmd(e.ctx, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq->handle, e);
	tap::check(r == EINVAL && __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE) == now,
		   "... also with its consumer index rewritten (%s)", strerror(r));
	__atomic_store_n(&h->cons, now, __ATOMIC_RELEASE);
	ibv_destroy_srq(srq);

	ibv_qp *qp = rts_qp(e);
	if (!tap::check(qp, "QP for POST_RECV"))
		return;
	auto *q = reinterpret_cast<sroce::qp *>(qp);
	auto *rh = static_cast<sroce_ring_hdr *>(q->rq_map);
	prod = __atomic_load_n(&rh->prod, __ATOMIC_ACQUIRE);
	r = post_recv_cmd(e.ctx, IB_USER_VERBS_CMD_POST_RECV, qp->handle, e);
	tap::check(r == EINVAL && __atomic_load_n(&rh->prod, __ATOMIC_ACQUIRE) == prod,
		   "POST_RECV with a WR on a user QP: EINVAL, ring untouched (%s)", strerror(r));
	ibv_destroy_qp(qp);
}

// A well-behaved QP beside the hostile ones: posts, flushes, completes.
void check_bystander(env &e, ibv_qp *qp)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 32, e.mr->lkey};
	ibv_send_wr wr = {};
	ibv_send_wr *bad;
	wr.wr_id = 777;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	tap::check(state_of(qp) == IBV_QPS_RTS, "bystander QP still in RTS");
	tap::check(ibv_post_send(qp, &wr, &bad) == 0, "bystander QP posts a valid send");
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	tap::check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0 &&
			   saw_completion(e, qp, IBV_WC_WR_FLUSH_ERR),
		   "bystander QP flushes its send on ERR");
}

} // namespace

int main(int argc, char **argv)
{
	env e;
	const char *dev = nullptr;
	int rounds = 200, c;

	while ((c = getopt(argc, argv, "d:g:r:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			e.gid_index = atoi(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (!dev)
		return 2;

	e.ctx = open_device_by_name(dev);
	if (!tap::check(e.ctx, "open %s", dev))
		return tap::done("sroce_hostile");
	ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid);
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 4096, nullptr, nullptr, 0);
	e.buf = static_cast<char *>(calloc(1, 1 << 16));
	e.mr = e.pd ? ibv_reg_mr(e.pd, e.buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE) : nullptr;
	if (tap::check(e.pd && e.cq && e.mr, "PD, CQ and MR")) {
		ibv_qp *bystander = rts_qp(e);
		tap::check(bystander, "bystander QP in RTS");
		check_bad_wqes(e);
		check_bad_index(e);
		check_random(e, rounds);
		check_kernel_posts(e);
		if (bystander) {
			check_bystander(e, bystander);
			ibv_destroy_qp(bystander);
		}
		ibv_dereg_mr(e.mr);
		ibv_destroy_cq(e.cq);
		ibv_dealloc_pd(e.pd);
	}
	ibv_close_device(e.ctx);
	return tap::done("sroce_hostile");
}
