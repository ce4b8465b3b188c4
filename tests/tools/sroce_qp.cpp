// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_qp - queue pair objects through libibverbs: capabilities and their
// limits, every legal IBTA state transition and a set of illegal ones,
// ibv_query_qp returning what was set, and flushing on the move to ERR.
// Prints TAP.
//
//   sroce_qp -d sroce0 [-g GID_INDEX] [-n LOOPS]
//
// The QP is connected to itself (its own GID and QPN), which is all the
// state machine needs; no packet has to flow.
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <infiniband/verbs.h>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

struct env {
	ibv_context *ctx = nullptr;
	ibv_device_attr da = {};
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	char *buf = nullptr;
	int gid_index = 1;
	ibv_gid gid = {};
};

ibv_qp *make_qp(env &e, ibv_qp_type type, uint32_t wr = 128, uint32_t sge = 2,
		uint32_t inl = 64)
{
	ibv_qp_init_attr a = {};
	a.send_cq = e.cq;
	a.recv_cq = e.cq;
	a.qp_type = type;
	a.cap.max_send_wr = wr;
	a.cap.max_recv_wr = wr;
	a.cap.max_send_sge = sge;
	a.cap.max_recv_sge = sge;
	a.cap.max_inline_data = inl;
	return ibv_create_qp(e.pd, &a);
}

int to_init(env &e, ibv_qp *qp, int extra_mask = 0)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a.qkey = 0x11111111;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	(void)e;
	return ibv_modify_qp(qp, &a, mask | extra_mask);
}

int to_rtr(env &e, ibv_qp *qp, int drop_mask = 0)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.rq_psn = 0x123456;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = e.gid;
		a.ah_attr.grh.sgid_index = e.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	return ibv_modify_qp(qp, &a, mask & ~drop_mask);
}

int to_rts(ibv_qp *qp, int drop_mask = 0)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x654321;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask & ~drop_mask);
}

int to_state(ibv_qp *qp, ibv_qp_state s)
{
	ibv_qp_attr a = {};
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

ibv_qp_state state_of(ibv_qp *qp)
{
	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return static_cast<ibv_qp_state>(-1);
	return a.qp_state;
}

void check_caps(env &e)
{
	ibv_qp *qp = make_qp(e, IBV_QPT_RC, 100, 3, 60);
	if (tap::check(qp, "create RC QP (100 WRs, 3 SGEs, 60 B inline)")) {
		ibv_qp_attr a = {};
		ibv_qp_init_attr ia = {};
		int r = ibv_query_qp(qp, &a, IBV_QP_CAP, &ia);
		tap::check(r == 0 && ia.cap.max_send_wr >= 100 && ia.cap.max_recv_wr >= 100 &&
				   ia.cap.max_send_sge >= 3 && ia.cap.max_recv_sge >= 3 &&
				   ia.cap.max_inline_data >= 60,
			   "granted caps cover the request (wr %u/%u sge %u/%u inline %u)",
			   ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge,
			   ia.cap.max_recv_sge, ia.cap.max_inline_data);
		tap::check(state_of(qp) == IBV_QPS_RESET, "a new QP is in RESET");
		ibv_destroy_qp(qp);
	}

	struct {
		uint32_t wr, sge, inl;
		const char *what;
	} bad[] = {
		{static_cast<uint32_t>(e.da.max_qp_wr) + 1, 1, 0, "max_qp_wr + 1"},
		{16, static_cast<uint32_t>(e.da.max_sge) + 1, 0, "max_sge + 1"},
		{16, 1, 1U << 20, "1 MiB of inline data"},
	};
	for (auto &b : bad) {
		errno = 0;
		qp = make_qp(e, IBV_QPT_RC, b.wr, b.sge, b.inl);
		tap::check(!qp && errno == EINVAL, "QP with %s: EINVAL (errno %d)", b.what, errno);
		if (qp)
			ibv_destroy_qp(qp);
	}
}

void check_states(env &e, ibv_qp_type type, const char *name)
{
	ibv_qp *qp = make_qp(e, type);
	if (!tap::check(qp, "%s: create", name))
		return;

	tap::check(to_state(qp, IBV_QPS_RTR) == EINVAL, "%s: RESET -> RTR is illegal (EINVAL)", name);
	tap::check(to_state(qp, IBV_QPS_INIT) == EINVAL,
		   "%s: RESET -> INIT without its required attributes: EINVAL", name);
	tap::check(to_init(e, qp) == 0 && state_of(qp) == IBV_QPS_INIT, "%s: RESET -> INIT", name);
	tap::check(to_init(e, qp) == 0, "%s: INIT -> INIT", name);
	if (type != IBV_QPT_UD)
		tap::check(to_rtr(e, qp, IBV_QP_DEST_QPN) == EINVAL,
			   "%s: INIT -> RTR without DEST_QPN: EINVAL", name);
	tap::check(to_rts(qp) == EINVAL, "%s: INIT -> RTS is illegal (EINVAL)", name);
	tap::check(to_rtr(e, qp) == 0 && state_of(qp) == IBV_QPS_RTR, "%s: INIT -> RTR", name);
	tap::check(to_rts(qp) == 0 && state_of(qp) == IBV_QPS_RTS, "%s: RTR -> RTS", name);

	ibv_qp_attr a = {};
	ibv_qp_init_attr ia = {};
	int r = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
				       IBV_QP_DEST_QPN | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT,
			     &ia);
	if (type == IBV_QPT_RC)
		tap::check(r == 0 && a.sq_psn == 0x654321 && a.rq_psn == 0x123456 &&
				   a.dest_qp_num == qp->qp_num && a.path_mtu == IBV_MTU_1024 &&
				   a.timeout == 14 && a.max_rd_atomic == 4 &&
				   a.max_dest_rd_atomic == 4 && a.min_rnr_timer == 12 &&
				   a.retry_cnt == 7 && a.rnr_retry == 7,
			   "%s: query_qp returns what was set (sq_psn 0x%x rq_psn 0x%x dest %u)",
			   name, a.sq_psn, a.rq_psn, a.dest_qp_num);
	else
		tap::check(r == 0 && a.sq_psn == 0x654321, "%s: query_qp sq_psn 0x%x", name,
			   a.sq_psn);

	tap::check(to_state(qp, IBV_QPS_SQD) == 0 && state_of(qp) == IBV_QPS_SQD, "%s: RTS -> SQD",
		   name);
	tap::check(to_state(qp, IBV_QPS_RTS) == 0 && state_of(qp) == IBV_QPS_RTS, "%s: SQD -> RTS",
		   name);
	tap::check(to_state(qp, IBV_QPS_RTR) == EINVAL, "%s: RTS -> RTR is illegal (EINVAL)", name);
	tap::check(to_state(qp, IBV_QPS_ERR) == 0 && state_of(qp) == IBV_QPS_ERR, "%s: RTS -> ERR",
		   name);
	tap::check(to_state(qp, IBV_QPS_RTS) == EINVAL, "%s: ERR -> RTS is illegal (EINVAL)", name);
	tap::check(to_state(qp, IBV_QPS_RESET) == 0 && state_of(qp) == IBV_QPS_RESET,
		   "%s: ERR -> RESET", name);
	tap::check(to_init(e, qp) == 0 && to_state(qp, IBV_QPS_ERR) == 0, "%s: INIT -> ERR", name);
	tap::check(ibv_destroy_qp(qp) == 0, "%s: destroy", name);
}

// 100 sends and 100 receives outstanding, then ERR: 200 flush completions,
// each queue's in posting order.
void check_flush(env &e)
{
	ibv_qp *qp = make_qp(e, IBV_QPT_RC, 128);
	if (!tap::check(qp && !to_init(e, qp) && !to_rtr(e, qp), "flush: QP in RTR")) {
		if (qp)
			ibv_destroy_qp(qp);
		return;
	}

	int bad = 0;
	for (int i = 0; i < 100; i++) {
		ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf) + 64 * i, 64, e.mr->lkey};
		ibv_recv_wr rwr = {};
		ibv_recv_wr *bad_rwr;
		rwr.wr_id = 1000 + i;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		bad += !!ibv_post_recv(qp, &rwr, &bad_rwr);
	}
	tap::check(bad == 0, "flush: 100 receives posted");
	// Sends stay queued: RTS with no peer that could answer is fine, and
	// the transport takes them only when it runs; move to RTS after posting.
	tap::check(to_rts(qp) == 0, "flush: RTR -> RTS");
	bad = 0;
	for (int i = 0; i < 100; i++) {
		ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf) + 64 * i, 64, e.mr->lkey};
		ibv_send_wr swr = {};
		ibv_send_wr *bad_swr;
		swr.wr_id = i;
		swr.sg_list = &sge;
		swr.num_sge = 1;
		swr.opcode = IBV_WR_SEND;
		swr.send_flags = (i % 3) ? 0 : IBV_SEND_SIGNALED;
		bad += !!ibv_post_send(qp, &swr, &bad_swr);
	}
	tap::check(bad == 0, "flush: 100 sends posted (a third signalled)");
	tap::check(to_state(qp, IBV_QPS_ERR) == 0, "flush: -> ERR");

	std::vector<ibv_wc> got;
	for (int spins = 0; spins < 100000 && got.size() < 201; spins++) {
		ibv_wc wc[32];
		int n = ibv_poll_cq(e.cq, 32, wc);
		for (int i = 0; i < n; i++)
			got.push_back(wc[i]);
		if (n == 0 && got.size() >= 200)
			break;
	}
	int sends = 0, recvs = 0, order_bad = 0, status_bad = 0;
	uint64_t next_send = 0, next_recv = 1000;
	for (auto &wc : got) {
		if (wc.status != IBV_WC_WR_FLUSH_ERR || wc.qp_num != qp->qp_num)
			status_bad++;
		if (wc.wr_id >= 1000) {
			recvs++;
			order_bad += wc.wr_id != next_recv++;
		} else {
			sends++;
			order_bad += wc.wr_id != next_send++;
		}
	}
	tap::check(got.size() == 200 && sends == 100 && recvs == 100,
		   "flush: exactly 200 completions (%zu: %d sends, %d receives)", got.size(), sends,
		   recvs);
	tap::check(status_bad == 0, "flush: all IBV_WC_WR_FLUSH_ERR on this QP (%d others)",
		   status_bad);
	tap::check(order_bad == 0, "flush: each queue in posting order (%d out of order)",
		   order_bad);

	// Posting in ERR completes at once with a flush.
	ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 8, e.mr->lkey};
	ibv_send_wr swr = {};
	ibv_send_wr *bad_swr;
	swr.wr_id = 4242;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	int r = ibv_post_send(qp, &swr, &bad_swr);
	ibv_wc wc = {};
	int n = 0;
	for (int spins = 0; spins < 100000 && n == 0; spins++)
		n = ibv_poll_cq(e.cq, 1, &wc);
	tap::check(r == 0 && n == 1 && wc.wr_id == 4242 && wc.status == IBV_WC_WR_FLUSH_ERR,
		   "flush: a send posted in ERR is flushed (ret %d, n %d, status %d)", r, n,
		   wc.status);
	ibv_destroy_qp(qp);
}

// A CQ on a completion channel, armed, gets its event when the flush of a
// receive lands in it; an overfull CQ raises IBV_EVENT_CQ_ERR.
void check_cq_events(env &e)
{
	ibv_comp_channel *ch = ibv_create_comp_channel(e.ctx);
	ibv_cq *cq = ch ? ibv_create_cq(e.ctx, 4, nullptr, ch, 0) : nullptr;
	ibv_qp_init_attr ia = {};
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ibv_qp *qp = cq ? ibv_create_qp(e.pd, &ia) : nullptr;
	if (!tap::check(qp && !to_init(e, qp), "channel: QP on a CQ with a completion channel"))
		goto out;
	{
		ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 64, e.mr->lkey};
		ibv_recv_wr rwr = {};
		ibv_recv_wr *bad;
		rwr.wr_id = 99;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		tap::check(ibv_post_recv(qp, &rwr, &bad) == 0 && ibv_req_notify_cq(cq, 0) == 0,
			   "channel: receive posted, CQ armed");
		tap::check(to_state(qp, IBV_QPS_ERR) == 0, "channel: -> ERR");
		pollfd p = {ch->fd, POLLIN, 0};
		ibv_cq *ev_cq = nullptr;
		void *ev_ctx = nullptr;
		bool got = poll(&p, 1, 5000) == 1 && ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0;
		tap::check(got && ev_cq == cq, "channel: ibv_get_cq_event delivers the CQ's event");
		if (got)
			ibv_ack_cq_events(cq, 1);
		ibv_wc wc = {};
		tap::check(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 99 &&
				   wc.status == IBV_WC_WR_FLUSH_ERR,
			   "channel: the flushed receive is in the CQ");
	}
	ibv_destroy_qp(qp);
	qp = nullptr;

	// Overflow: a CQ of 4 entries under a QP with 8 receives outstanding.
	ia.cap.max_recv_wr = 8;
	qp = ibv_create_qp(e.pd, &ia);
	if (tap::check(qp && !to_init(e, qp), "overflow: QP with 8 receives on a 4-entry CQ")) {
		for (int i = 0; i < 8; i++) {
			ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 64, e.mr->lkey};
			ibv_recv_wr rwr = {};
			ibv_recv_wr *bad;
			rwr.wr_id = i;
			rwr.sg_list = &sge;
			rwr.num_sge = 1;
			ibv_post_recv(qp, &rwr, &bad);
		}
		to_state(qp, IBV_QPS_ERR);
		bool cq_err = false;
		pollfd p = {e.ctx->async_fd, POLLIN, 0};
		while (!cq_err && poll(&p, 1, 5000) == 1) {
			ibv_async_event ev;
			if (ibv_get_async_event(e.ctx, &ev))
				break;
			cq_err = ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq;
			ibv_ack_async_event(&ev);
		}
		tap::check(cq_err, "overflow: IBV_EVENT_CQ_ERR on the overfull CQ");
	}
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
}

void check_loop(env &e, long loops)
{
	long bad = 0;
	for (long i = 0; i < loops; i++) {
		ibv_qp_type t = (i % 3 == 0) ? IBV_QPT_RC : (i % 3 == 1) ? IBV_QPT_UC : IBV_QPT_UD;
		ibv_qp *qp = make_qp(e, t, 1 + i % 64, 1 + i % 4, i % 128);
		if (!qp || to_init(e, qp) || ibv_destroy_qp(qp))
			bad++;
	}
	tap::check(bad == 0, "%ld x create/INIT/destroy QP (RC, UC, UD): %ld failures", loops, bad);
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = nullptr;
	long loops = 1000;
	env e;
	int c;

	while ((c = getopt(argc, argv, "d:g:n:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			e.gid_index = atoi(optarg);
		else if (c == 'n')
			loops = strtol(optarg, nullptr, 0);
		else
			return 2;
	}
	if (!dev) {
		fprintf(stderr, "usage: sroce_qp -d DEV [-g GID_INDEX] [-n LOOPS]\n");
		return 2;
	}
	e.ctx = open_device_by_name(dev);
	if (!tap::check(e.ctx, "open %s", dev))
		return tap::done("sroce_qp");
	ibv_query_device(e.ctx, &e.da);
	ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid);
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 1024, nullptr, nullptr, 0);
	e.buf = static_cast<char *>(calloc(1, 1 << 16));
	e.mr = e.pd ? ibv_reg_mr(e.pd, e.buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE) : nullptr;
	if (tap::check(e.pd && e.cq && e.mr, "PD, CQ and MR")) {
		check_caps(e);
		check_states(e, IBV_QPT_RC, "RC");
		check_states(e, IBV_QPT_UC, "UC");
		check_states(e, IBV_QPT_UD, "UD");
		check_flush(e);
		check_cq_events(e);
		check_loop(e, loops);
	}
	if (e.mr)
		ibv_dereg_mr(e.mr);
	if (e.cq)
		ibv_destroy_cq(e.cq);
	if (e.pd)
		ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	return tap::done("sroce_qp");
}
