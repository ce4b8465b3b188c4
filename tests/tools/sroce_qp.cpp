// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_qp - queue pair objects through libibverbs: capabilities and their
// limits, every legal IBTA state transition and a set of illegal ones,
// ibv_query_qp returning what was set, posting by state (send WRs from
// RTS on, receive WRs from INIT on, both in ERR; ibv_post_* and ibv_wr_*),
// and flushing on the move to ERR.  Prints TAP.
//
//   sroce_qp -d sroce0 [-g GID_INDEX] [-n LOOPS]
//
// The QP is connected to itself (its own GID and QPN), which is all the
// state machine needs; only the posting check sends packets (to itself).
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "sroce.hpp"	// the provider's own QP: where its rings are mapped
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

int to_rts(ibv_qp *qp, int drop_mask = 0, uint32_t sq_psn = 0x654321)
{
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
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

// ---- posting by state ------------------------------------------------------------

// A ring's producer index as the kernel reads it, in the mapping the
// provider made (sroce.hpp's qp: sq_map / rq_map).
uint32_t ring_prod(void *map)
{
	return __atomic_load_n(&static_cast<sroce_ring_hdr *>(map)->prod, __ATOMIC_ACQUIRE);
}

uint32_t sq_prod(ibv_qp *qp)
{
	return ring_prod(reinterpret_cast<sroce::qp *>(qp)->sq_map);
}

uint32_t rq_prod(ibv_qp *qp)
{
	return ring_prod(reinterpret_cast<sroce::qp *>(qp)->rq_map);
}

constexpr uint32_t kPostLen = 32;

ibv_sge post_sge(env &e, uint64_t wr_id)
{
	return {reinterpret_cast<uintptr_t>(e.buf) + 0x8000 + 64 * (wr_id % 256), kPostLen,
		e.mr->lkey};
}

// ibv_post_send of two signalled SENDs, wr_id and wr_id + 1; *bad_first
// says whether *bad_wr named the first.
int post_two_sends(env &e, ibv_qp *qp, uint64_t wr_id, bool *bad_first)
{
	ibv_sge sge[2] = {post_sge(e, wr_id), post_sge(e, wr_id + 1)};
	ibv_send_wr w[2] = {};
	for (int i = 0; i < 2; i++) {
		w[i].wr_id = wr_id + i;
		w[i].sg_list = &sge[i];
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_SEND;
		w[i].send_flags = IBV_SEND_SIGNALED;
	}
	w[0].next = &w[1];
	ibv_send_wr *bad = nullptr;
	int r = ibv_post_send(qp, w, &bad);
	*bad_first = bad == &w[0];
	return r;
}

// One signalled SEND through ibv_wr_*: ibv_wr_complete's answer.
int wr_one_send(env &e, ibv_qp_ex *x, uint64_t wr_id)
{
	ibv_sge sge = post_sge(e, wr_id);
	ibv_wr_start(x);
	x->wr_id = wr_id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, sge.lkey, sge.addr, sge.length);
	return ibv_wr_complete(x);
}

int post_one_recv(env &e, ibv_qp *qp, uint64_t wr_id, bool *bad_first)
{
	ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf) + 0xc000 + 64 * (wr_id % 64), 64,
		       e.mr->lkey};
	ibv_recv_wr w = {};
	w.wr_id = wr_id;
	w.sg_list = &sge;
	w.num_sge = 1;
	ibv_recv_wr *bad = nullptr;
	int r = ibv_post_recv(qp, &w, &bad);
	*bad_first = bad == &w;
	return r;
}

// Poll until `n` completions are in `got` (or about 10 s passed).
void collect(ibv_cq *cq, std::vector<ibv_wc> &got, size_t n, int rounds = 100000)
{
	for (int i = 0; i < rounds && got.size() < n; i++) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, 16, wc);
		for (int j = 0; j < k; j++)
			got.push_back(wc[j]);
		if (k == 0)
			usleep(100);
	}
}

std::string wc_list(const std::vector<ibv_wc> &v, size_t from = 0)
{
	std::string s;
	for (size_t i = from; i < v.size(); i++)
		s += std::to_string(v[i].wr_id) + ":" + std::to_string(v[i].status) + " ";
	return s;
}

// Exactly the wr_ids `want` (in any order) in got[from..], each with
// `status` (and, for receives that succeeded, kPostLen bytes).
bool completed_as(const std::vector<ibv_wc> &got, size_t from, std::set<uint64_t> want,
		  ibv_wc_status status)
{
	if (got.size() - from != want.size())
		return false;
	for (size_t i = from; i < got.size(); i++) {
		const ibv_wc &wc = got[i];
		if (!want.erase(wc.wr_id) || wc.status != status)
			return false;
		if (status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV) && wc.byte_len != kPostLen)
			return false;
	}
	return want.empty();
}

// One RC ibv_qp_ex connected to itself, on a CQ of its own, through RESET,
// INIT, RTR (sends refused through both APIs: EINVAL, *bad_wr the first
// WR, SQ prod unmoved; receives refused in RESET only), RTS (the sends
// go and land in the receives posted before) and ERR (everything taken
// and flushed).  No refused WR may ever complete.
void check_post_states(env &e)
{
	ibv_cq *cq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	ibv_qp_init_attr_ex a = {};
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = e.pd;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	ibv_qp *qp = cq ? ibv_create_qp_ex(e.ctx, &a) : nullptr;
	ibv_qp_ex *x = qp ? ibv_qp_to_qp_ex(qp) : nullptr;
	if (!tap::check(x && state_of(qp) == IBV_QPS_RESET,
			"post: RC ibv_qp_ex (SEND) on its own CQ, in RESET")) {
		if (qp)
			ibv_destroy_qp(qp);
		if (cq)
			ibv_destroy_cq(cq);
		return;
	}

	std::vector<ibv_wc> got;
	const std::set<uint64_t> refused = {1, 2, 3, 101, 11, 12, 13, 21, 22, 23};
	struct {
		ibv_qp_state state;
		const char *name;
		uint64_t id;
	} before_rts[] = {{IBV_QPS_RESET, "RESET", 1},
			  {IBV_QPS_INIT, "INIT", 11},
			  {IBV_QPS_RTR, "RTR", 21}};
	for (const auto &st : before_rts) {
		if (st.state == IBV_QPS_INIT)
			tap::check(to_init(e, qp) == 0, "post: RESET -> INIT");
		else if (st.state == IBV_QPS_RTR)
			tap::check(to_rtr(e, qp) == 0, "post: INIT -> RTR");
		bool bad_first = false;
		uint32_t p0 = sq_prod(qp);
		int r = post_two_sends(e, qp, st.id, &bad_first);
		uint32_t p1 = sq_prod(qp);
		tap::check(r == EINVAL && bad_first && p1 == p0,
			   "post %s: ibv_post_send is EINVAL at the first WR, SQ prod unmoved "
			   "(ret %d, bad_wr first %d, prod %u -> %u)",
			   st.name, r, bad_first, p0, p1);
		r = wr_one_send(e, x, st.id + 2);
		p0 = p1;
		p1 = sq_prod(qp);
		tap::check(r == EINVAL && p1 == p0,
			   "post %s: ibv_wr_complete is EINVAL, SQ prod unmoved (ret %d, prod %u -> %u)",
			   st.name, r, p0, p1);
		p0 = rq_prod(qp);
		r = post_one_recv(e, qp, 100 + st.id, &bad_first);
		p1 = rq_prod(qp);
		if (st.state == IBV_QPS_RESET)
			tap::check(r == EINVAL && bad_first && p1 == p0,
				   "post RESET: ibv_post_recv is EINVAL at the first WR, RQ prod "
				   "unmoved (ret %d, bad_wr first %d, prod %u -> %u)",
				   r, bad_first, p0, p1);
		else
			tap::check(r == 0 && p1 == p0 + 1,
				   "post %s: ibv_post_recv accepted (ret %d, RQ prod %u -> %u)",
				   st.name, r, p0, p1);
	}
	collect(cq, got, 1, 1000);	// nothing may complete yet
	tap::check(got.empty(), "post: no completion before RTS (%zu: %s)", got.size(),
		   wc_list(got).c_str());

	// RTS: the sends go to this QP itself and take the receives of INIT,
	// RTR and the one posted here, in order.
	bool bad_first = false;
	int r = to_rts(qp, 0, 0x123456);
	tap::check(r == 0, "post: RTR -> RTS (sq_psn = rq_psn)");
	uint32_t p0 = rq_prod(qp);
	int rr = post_one_recv(e, qp, 131, &bad_first);
	rr |= post_one_recv(e, qp, 132, &bad_first);
	tap::check(rr == 0 && rq_prod(qp) == p0 + 2, "post RTS: ibv_post_recv x2 accepted");
	p0 = sq_prod(qp);
	r = post_two_sends(e, qp, 31, &bad_first);
	uint32_t p1 = sq_prod(qp);
	tap::check(r == 0 && p1 == p0 + 2,
		   "post RTS: ibv_post_send of 2 WRs accepted (ret %d, SQ prod %u -> %u)", r, p0,
		   p1);
	r = wr_one_send(e, x, 33);
	p0 = p1;
	p1 = sq_prod(qp);
	tap::check(r == 0 && p1 == p0 + 1,
		   "post RTS: ibv_wr_complete accepted (ret %d, SQ prod %u -> %u)", r, p0, p1);
	size_t from = got.size();
	collect(cq, got, from + 6);
	collect(cq, got, from + 7, 1000);	// and nothing more
	tap::check(completed_as(got, from, {31, 32, 33, 111, 121, 131}, IBV_WC_SUCCESS),
		   "post RTS: the 3 sends and the receives of INIT, RTR, RTS complete "
		   "successfully (%s)",
		   wc_list(got, from).c_str());

	// ERR: the receive left over is flushed; new posts are taken and
	// flushed at once.
	tap::check(to_state(qp, IBV_QPS_ERR) == 0, "post: RTS -> ERR");
	p0 = sq_prod(qp);
	r = post_two_sends(e, qp, 41, &bad_first);
	r |= wr_one_send(e, x, 43);
	rr = post_one_recv(e, qp, 141, &bad_first);
	p1 = sq_prod(qp);
	tap::check(r == 0 && rr == 0 && p1 == p0 + 3,
		   "post ERR: ibv_post_send, ibv_wr_complete, ibv_post_recv accepted (SQ prod "
		   "%u -> %u)",
		   p0, p1);
	from = got.size();
	collect(cq, got, from + 5);
	collect(cq, got, from + 6, 1000);
	tap::check(completed_as(got, from, {132, 41, 42, 43, 141}, IBV_WC_WR_FLUSH_ERR),
		   "post ERR: the left-over receive and everything posted in ERR flushed (%s)",
		   wc_list(got, from).c_str());

	int late = 0;
	for (const ibv_wc &wc : got)
		late += refused.count(wc.wr_id) != 0;
	tap::check(late == 0, "post: none of the refused WRs ever completed (%d did)", late);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
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
		check_post_states(e);
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
