// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_scale - many RC QPs between two processes: connection scale and
// incast, with every message checked.
//
//   server:  sroce_scale -s [-d DEV] [-p PORT] [--srq [--srq-depth N]]
//                        [--stall N] [-w SECONDS]
//   client:  sroce_scale -c HOST [-d DEV] [-p PORT] [-n QPS] [-k MSGS]
//                        [--size B] [--depth D] [-w SECONDS]
//
// The client opens QPS RC QPs, the server as many (or, with --srq, as many
// QPs all receiving through one shared receive queue: QPS senders into one
// receiver, the incast case; the SRQ has N buffers, default 4096, each
// reposted once used: fewer than the client keeps in flight make RNR
// NAKs and retries; --stall N makes sure of it: every N messages the
// receiver stops until its device has sent an RNR NAK).  They exchange QPN/PSN lists, GIDs and an rkey
// over TCP and connect QP i to QP i.  Then:
//   1. on every QP the client writes one SIZE-byte block into slot i of the
//      server's MR (RDMA WRITE) and sends MSGS messages (SEND); at most D
//      sends are in flight over the whole device, spread round-robin;
//   2. the server checks each receive: status, the QP it came in on, the
//      sequence (in order per QP, none missing, none twice), and every byte
//      of the payload, which is a stream keyed by (QP, seq, direction); after
//      the last one it checks every WRITE slot;
//   3. the server sends MSGS messages back on every QP, checked the same way
//      by the client;
//   4. both sides destroy everything, the QPs first.
// Output: TAP, last line "scale: N QPs, M messages, E errors".  Exit 1 on
// any error, or when nothing arrives for -w seconds.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr uint32_t MAGIC = 0x53434c31; // "SCL1"
constexpr uint32_t DIR_TO_SERVER = 1, DIR_TO_CLIENT = 2;
constexpr uint32_t HDR = 12;           // idx, seq, dir at the start of a message
constexpr uint32_t CQE_CAP = 65535;    // enough for any depth this test runs

struct options {
	bool server = false;
	const char *host = nullptr;
	const char *dev = nullptr;
	const char *port = "18620";
	int gid_index = -1;
	uint32_t nqp = 64;
	uint32_t msgs = 4;
	uint32_t size = 256;
	uint32_t depth = 512;
	bool srq = false;
	uint32_t srq_depth = 4096; // at most this many SRQ buffers
	uint32_t stall = 0;        // receiver: run dry every this many
	int wait_s = 120;
};

// What each side tells the other, followed by nqp {qpn, psn} pairs.
struct hello {
	uint32_t magic;
	uint32_t nqp;
	uint32_t msgs;
	uint32_t size;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
	uint32_t mtu;
};

struct qp_ends {
	uint32_t qpn;
	uint32_t psn;
};

struct state {
	options o;
	int sock = -1;
	ibv_context *ctx = nullptr;
	ibv_port_attr port = {};
	int gid_index = 0;
	ibv_gid gid = {};
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *scq = nullptr, *rcq = nullptr;
	ibv_srq *srq = nullptr;
	std::vector<ibv_qp *> qps;
	std::unordered_map<uint32_t, uint32_t> qp_index; // qpn -> i
	// send: nqp*msgs slots + nqp write blocks; recv: slots; wblk: WRITE target
	uint8_t *sbuf = nullptr, *rbuf = nullptr, *wblk = nullptr;
	size_t sbuf_len = 0, rbuf_len = 0, wblk_len = 0;
	ibv_mr *smr = nullptr, *rmr = nullptr, *wmr = nullptr;
	uint32_t recv_slots = 0;
	std::vector<uint32_t> next_seq; // per QP, the next expected message
	hello peer = {};
	std::vector<qp_ends> peer_qps;
	int errors = 0;
};

state S;

double now_s()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void fatal(const char *fmt, ...)
{
	va_list ap;
	printf("not ok %d - ", ++tap::num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n1..%d\nscale: %u QPs, 0 messages, %d errors (fatal)\n", tap::num, S.o.nqp,
	       S.errors + 1);
	fflush(stdout);
	exit(1);
}

__attribute__((format(printf, 1, 2))) void mismatch(const char *fmt, ...)
{
	// The first few are enough to see the pattern.
	if (++S.errors > 20)
		return;
	va_list ap;
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

uint8_t pattern(uint32_t idx, uint32_t seq, uint32_t dir, uint32_t j)
{
	uint64_t x = ((uint64_t)idx << 40) ^ ((uint64_t)seq << 20) ^ ((uint64_t)dir << 60) ^ j;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint8_t)x;
}

void fill(uint8_t *p, uint32_t len, uint32_t idx, uint32_t seq, uint32_t dir)
{
	memcpy(p, &idx, 4);
	memcpy(p + 4, &seq, 4);
	memcpy(p + 8, &dir, 4);
	for (uint32_t j = HDR; j < len; j++)
		p[j] = pattern(idx, seq, dir, j);
}

// Checks one message that arrived on QP @idx; true when it is the next one.
bool check_msg(const uint8_t *p, uint32_t len, uint32_t idx, uint32_t dir)
{
	uint32_t m_idx, m_seq, m_dir;
	if (len != S.o.size) {
		mismatch("QP %u: byte_len %u, want %u", idx, len, S.o.size);
		return false;
	}
	memcpy(&m_idx, p, 4);
	memcpy(&m_seq, p + 4, 4);
	memcpy(&m_dir, p + 8, 4);
	if (m_idx != idx || m_dir != dir) {
		mismatch("QP %u: message of QP %u direction %u arrived here", idx, m_idx, m_dir);
		return false;
	}
	if (m_seq != S.next_seq[idx]) {
		mismatch("QP %u: message %u arrived, want %u (lost, doubled or reordered)", idx,
			 m_seq, S.next_seq[idx]);
		return false;
	}
	for (uint32_t j = HDR; j < len; j++) {
		if (p[j] != pattern(idx, m_seq, dir, j)) {
			mismatch("QP %u message %u: byte %u is 0x%02x, want 0x%02x", idx, m_seq, j,
				 p[j], pattern(idx, m_seq, dir, j));
			return false;
		}
	}
	S.next_seq[idx]++;
	return true;
}

// ---- TCP side channel ---------------------------------------------------

void xfer(bool out, void *buf, size_t len)
{
	uint8_t *p = static_cast<uint8_t *>(buf);
	while (len) {
		pollfd f = {S.sock, (short)(out ? POLLOUT : POLLIN), 0};
		if (poll(&f, 1, S.o.wait_s * 1000) <= 0)
			fatal("the peer sent nothing for %d s", S.o.wait_s);
		ssize_t n = out ? send(S.sock, p, len, MSG_NOSIGNAL) : recv(S.sock, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			fatal("the peer closed the connection (it failed or died)");
		if (n < 0)
			fatal("TCP %s: %s", out ? "send" : "recv", strerror(errno));
		p += n;
		len -= n;
	}
}

int tcp_server(const char *port)
{
	addrinfo hints = {}, *res;
	hints.ai_flags = AI_PASSIVE;
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(nullptr, port, &hints, &res))
		fatal("getaddrinfo port %s", port);
	int fd = socket(res->ai_family, res->ai_socktype, 0), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 1))
		fatal("cannot listen on TCP port %s: %s", port, strerror(errno));
	freeaddrinfo(res);
	pollfd f = {fd, POLLIN, 0};
	if (poll(&f, 1, 4 * S.o.wait_s * 1000) <= 0)
		fatal("no client connected within %d s", 4 * S.o.wait_s);
	int c = accept(fd, nullptr, nullptr);
	if (c < 0)
		fatal("accept: %s", strerror(errno));
	close(fd);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

int tcp_client(const char *host, const char *port)
{
	addrinfo hints = {}, *res;
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	int e = getaddrinfo(host, port, &hints, &res);
	if (e)
		fatal("%s: %s", host, gai_strerror(e));
	double end = now_s() + S.o.wait_s;
	int fd = -1, one = 1;
	while (now_s() < end) {
		fd = socket(res->ai_family, res->ai_socktype, 0);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		fatal("cannot connect to %s port %s within %d s", host, port, S.o.wait_s);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

// ---- verbs ----------------------------------------------------------------

void open_dev()
{
	if (S.o.dev) {
		S.ctx = open_device_by_name(S.o.dev);
	} else {
		int n = 0;
		ibv_device **l = ibv_get_device_list(&n);
		if (l && n)
			S.ctx = ibv_open_device(l[0]);
		if (l)
			ibv_free_device_list(l);
	}
	if (!S.ctx)
		fatal("cannot open RDMA device %s", S.o.dev ? S.o.dev : "(first)");
	if (ibv_query_port(S.ctx, 1, &S.port))
		fatal("ibv_query_port: %s", strerror(errno));
	S.gid_index = S.o.gid_index;
	for (int i = 0; i < S.port.gid_tbl_len && S.gid_index < 0; i++) {
		ibv_gid_entry e;
		static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (!ibv_query_gid_ex(S.ctx, 1, i, &e, 0) && e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4map, 12))
			S.gid_index = i;
	}
	if (S.gid_index < 0)
		fatal("no RoCE v2 GID of an IPv4 address on port 1");
	if (ibv_query_gid(S.ctx, 1, S.gid_index, &S.gid))
		fatal("ibv_query_gid %d: %s", S.gid_index, strerror(errno));
}

uint8_t *alloc_region(size_t len)
{
	void *p = nullptr;
	if (posix_memalign(&p, 4096, len ? len : 4096))
		fatal("cannot allocate %zu bytes", len);
	memset(p, 0, len);
	return static_cast<uint8_t *>(p);
}

ibv_mr *reg(uint8_t *p, size_t len, int access)
{
	ibv_mr *mr = ibv_reg_mr(S.pd, p, len ? len : 4096, access);
	if (!mr)
		fatal("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
	return mr;
}

void post_recv_slot(uint32_t slot, ibv_qp *qp)
{
	ibv_sge sge = {(uintptr_t)(S.rbuf + (size_t)slot * S.o.size), S.o.size, S.rmr->lkey};
	ibv_recv_wr wr = {}, *bad;
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int r = qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_srq_recv(S.srq, &wr, &bad);
	if (r)
		fatal("post %s receive: %s", qp ? "QP" : "SRQ", strerror(r));
}

// PD, channel, CQs, buffers, QPs (INIT), receives.
void create_resources()
{
	const uint32_t n = S.o.nqp, k = S.o.msgs, sz = S.o.size;
	bool srq = S.o.server && S.o.srq;
	S.pd = ibv_alloc_pd(S.ctx);
	S.ch = ibv_create_comp_channel(S.ctx);
	if (!S.pd || !S.ch)
		fatal("PD / completion channel: %s", strerror(errno));
	fcntl(S.ch->fd, F_SETFL, fcntl(S.ch->fd, F_GETFL) | O_NONBLOCK);

	S.recv_slots = srq ? std::min(S.o.srq_depth, n * k) : n * k;
	S.sbuf_len = (size_t)n * k * sz;
	S.rbuf_len = (size_t)S.recv_slots * sz;
	S.wblk_len = (size_t)n * sz;
	S.sbuf = alloc_region(S.sbuf_len + S.wblk_len); // messages, then WRITE blocks
	S.rbuf = alloc_region(S.rbuf_len);
	S.wblk = alloc_region(S.wblk_len);
	S.smr = reg(S.sbuf, S.sbuf_len + S.wblk_len, IBV_ACCESS_LOCAL_WRITE);
	S.rmr = reg(S.rbuf, S.rbuf_len, IBV_ACCESS_LOCAL_WRITE);
	S.wmr = reg(S.wblk, S.wblk_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	int scqe = (int)std::min<uint32_t>(S.o.depth + 64, CQE_CAP);
	int rcqe = (int)std::min<uint32_t>(S.recv_slots + 64, CQE_CAP);
	S.scq = ibv_create_cq(S.ctx, scqe, nullptr, S.ch, 0);
	S.rcq = ibv_create_cq(S.ctx, rcqe, nullptr, S.ch, 0);
	if (!S.scq || !S.rcq)
		fatal("ibv_create_cq(%d, %d): %s", scqe, rcqe, strerror(errno));
	if (srq) {
		ibv_srq_init_attr sa = {};
		sa.attr.max_wr = S.recv_slots;
		sa.attr.max_sge = 1;
		S.srq = ibv_create_srq(S.pd, &sa);
		if (!S.srq)
			fatal("ibv_create_srq(%u): %s", S.recv_slots, strerror(errno));
	}

	S.qps.resize(n);
	S.next_seq.assign(n, 0);
	double t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		ibv_qp_init_attr ia = {};
		ia.send_cq = S.scq;
		ia.recv_cq = S.rcq;
		ia.srq = S.srq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = k + 2;
		ia.cap.max_recv_wr = srq ? 0 : k;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		S.qps[i] = ibv_create_qp(S.pd, &ia);
		if (!S.qps[i])
			fatal("ibv_create_qp number %u of %u: %s", i + 1, n, strerror(errno));
		S.qp_index[S.qps[i]->qp_num] = i;
		ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (ibv_modify_qp(S.qps[i], &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
			fatal("QP %u to INIT: %s", i, strerror(errno));
	}
	for (uint32_t s = 0; s < S.recv_slots; s++)
		post_recv_slot(s, srq ? nullptr : S.qps[s / k]);
	tap::check(true, "%u RC QPs created%s, %u receives posted (%.1f s)", n,
		   srq ? " on one SRQ" : "", S.recv_slots, now_s() - t0);
}

void connect_qps()
{
	double t0 = now_s();
	uint32_t mtu = std::min(S.peer.mtu, 128u << S.port.active_mtu);
	for (uint32_t i = 0; i < S.o.nqp; i++) {
		ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = mtu_enum(mtu);
		a.dest_qp_num = S.peer_qps[i].qpn;
		a.rq_psn = S.peer_qps[i].psn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, S.peer.gid, 16);
		a.ah_attr.grh.sgid_index = S.gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		if (ibv_modify_qp(S.qps[i], &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
			fatal("QP %u to RTR: %s", i, strerror(errno));
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = (S.qps[i]->qp_num * 7919u) & 0xffffff;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(S.qps[i], &a,
				  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_MAX_QP_RD_ATOMIC))
			fatal("QP %u to RTS: %s", i, strerror(errno));
	}
	tap::check(true, "%u QPs connected to the peer's (RTR, RTS: %.1f s)", S.o.nqp,
		   now_s() - t0);
}

void exchange()
{
	hello me = {};
	me.magic = MAGIC;
	me.nqp = S.o.nqp;
	me.msgs = S.o.msgs;
	me.size = S.o.size;
	memcpy(me.gid, S.gid.raw, 16);
	me.addr = (uintptr_t)S.wblk;
	me.rkey = S.wmr->rkey;
	me.mtu = 128u << S.port.active_mtu;
	std::vector<qp_ends> mine(S.o.nqp);
	for (uint32_t i = 0; i < S.o.nqp; i++)
		mine[i] = {S.qps[i]->qp_num, (S.qps[i]->qp_num * 7919u) & 0xffffff};
	xfer(true, &me, sizeof(me));
	xfer(true, mine.data(), mine.size() * sizeof(qp_ends));
	xfer(false, &S.peer, sizeof(S.peer));
	if (S.peer.magic != MAGIC || S.peer.nqp != S.o.nqp)
		fatal("bad hello from the peer (magic %#x, %u QPs)", S.peer.magic, S.peer.nqp);
	S.peer_qps.resize(S.o.nqp);
	xfer(false, S.peer_qps.data(), S.peer_qps.size() * sizeof(qp_ends));
}

// Waits for a completion on @cq: true when one may be there.
bool wait_cq(ibv_cq *cq, double deadline)
{
	// One may land before the notify is armed: the wait is short and the
	// caller polls again either way.
	if (ibv_req_notify_cq(cq, 0))
		fatal("ibv_req_notify_cq: %s", strerror(errno));
	int left = (int)((deadline - now_s()) * 1000);
	if (left <= 0)
		return false;
	pollfd f = {S.ch->fd, POLLIN, 0};
	if (poll(&f, 1, std::min(left, 200)) > 0) {
		ibv_cq *ev;
		void *ctx;
		while (!ibv_get_cq_event(S.ch, &ev, &ctx))
			ibv_ack_cq_events(ev, 1);
	}
	return true;
}

// Sends: on every QP a WRITE of block i (when @with_write) then MSGS SENDs,
// round-robin over the QPs, at most DEPTH in flight; every completion checked.
void send_all(uint32_t dir, bool with_write)
{
	const uint32_t n = S.o.nqp, k = S.o.msgs, sz = S.o.size;
	const uint32_t per_qp = k + (with_write ? 1 : 0);
	const uint64_t total = (uint64_t)n * per_qp;
	std::vector<uint32_t> posted(n, 0);
	uint64_t nposted = 0, ndone = 0, bad = 0;
	uint32_t inflight = 0, rr = 0;
	double deadline = now_s() + S.o.wait_s;

	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t s = 0; s < k; s++)
			fill(S.sbuf + ((size_t)i * k + s) * sz, sz, i, s, dir);
		if (with_write)
			fill(S.sbuf + S.sbuf_len + (size_t)i * sz, sz, i, 0xffff, dir);
	}
	while (ndone < total) {
		while (nposted < total && inflight < S.o.depth) {
			while (posted[rr] == per_qp)
				rr = (rr + 1) % n;
			uint32_t i = rr, step = posted[i];
			rr = (rr + 1) % n;
			ibv_sge sge = {0, sz, S.smr->lkey};
			ibv_send_wr wr = {}, *badwr;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (with_write && step == 0) {
				sge.addr = (uintptr_t)(S.sbuf + S.sbuf_len + (size_t)i * sz);
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = S.peer.addr + (uint64_t)i * sz;
				wr.wr.rdma.rkey = S.peer.rkey;
			} else {
				uint32_t s = step - (with_write ? 1 : 0);
				sge.addr = (uintptr_t)(S.sbuf + ((size_t)i * k + s) * sz);
				wr.opcode = IBV_WR_SEND;
			}
			wr.wr_id = ((uint64_t)i << 32) | step;
			int r = ibv_post_send(S.qps[i], &wr, &badwr);
			if (r)
				fatal("ibv_post_send on QP %u: %s", i, strerror(r));
			posted[i]++;
			nposted++;
			inflight++;
		}
		ibv_wc wc[64];
		int got = ibv_poll_cq(S.scq, 64, wc);
		if (got < 0)
			fatal("ibv_poll_cq: %d", got);
		for (int j = 0; j < got; j++) {
			uint32_t i = wc[j].wr_id >> 32;
			if (wc[j].status != IBV_WC_SUCCESS || i >= n ||
			    S.qps[i]->qp_num != wc[j].qp_num) {
				if (bad++ < 10)
					mismatch("send completion on QP %u: %s (qp_num %#x)", i,
						 ibv_wc_status_str(wc[j].status), wc[j].qp_num);
			}
		}
		ndone += got;
		inflight -= got;
		if (got)
			deadline = now_s() + S.o.wait_s;
		else if (!wait_cq(S.scq, deadline))
			fatal("%llu of %llu sends completed, then nothing for %d s",
			      (unsigned long long)ndone, (unsigned long long)total, S.o.wait_s);
	}
	tap::check(!bad, "%llu %s completed with success on %u QPs",
		   (unsigned long long)total, with_write ? "WRITEs and SENDs" : "SENDs", n);
}

// The device's hw counter @name, or -1 (not an sroce device). Inside
// "ip netns exec" /sys is the namespace's own, where ib_core shows a
// compat copy of the device without hw_counters: init's view of /sys
// (through PID 1's root) has them.
long long hw_counter(const char *name)
{
	for (const char *root : {"", "/proc/1/root"}) {
		char path[256];
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/1/hw_counters/%s",
			 root, ibv_get_device_name(S.ctx->device), name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		long long v = -1;
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
		return v;
	}
	return -1;
}

// --stall: stop taking messages until this device has sent an RNR NAK
// (its receive buffers ran out; at most 30 s, and 50 ms on a device
// without that counter), however fast or slow the senders are: on the
// debug kernel 64 senders may take several seconds to fill 128 buffers.
void stall_until_rnr()
{
	long long before = hw_counter("rnr_nak_sent");
	double end = now_s() + (before < 0 ? 0.05 : 30.0);
	do
		usleep(10000);
	while (now_s() < end && (before < 0 || hw_counter("rnr_nak_sent") <= before));
}

// Receives MSGS messages on every QP, each checked; reposts SRQ buffers.
void recv_all(uint32_t dir)
{
	const uint32_t n = S.o.nqp, k = S.o.msgs;
	const uint64_t total = (uint64_t)n * k;
	uint64_t got_total = 0, ok = 0;
	double t0 = now_s(), deadline = t0 + S.o.wait_s;

	while (got_total < total) {
		ibv_wc wc[64];
		int got = ibv_poll_cq(S.rcq, 64, wc);
		if (got < 0)
			fatal("ibv_poll_cq: %d", got);
		for (int j = 0; j < got; j++) {
			auto it = S.qp_index.find(wc[j].qp_num);
			uint32_t slot = (uint32_t)wc[j].wr_id;
			if (wc[j].status != IBV_WC_SUCCESS || it == S.qp_index.end() ||
			    slot >= S.recv_slots || wc[j].opcode != IBV_WC_RECV) {
				mismatch("receive completion: %s, qp_num %#x, wr_id %u",
					 ibv_wc_status_str(wc[j].status), wc[j].qp_num, slot);
				continue;
			}
			if (!S.srq && slot / k != it->second)
				mismatch("QP %u completed QP %u's receive %u", it->second, slot / k,
					 slot);
			else if (check_msg(S.rbuf + (size_t)slot * S.o.size, wc[j].byte_len,
					   it->second, dir))
				ok++;
			if (S.srq)
				post_recv_slot(slot, nullptr);
		}
		// A receiver that falls behind now and then (--stall): its
		// buffers run out while the senders keep going.
		if (S.o.stall && got &&
		    (got_total + got) / S.o.stall != got_total / S.o.stall)
			stall_until_rnr();
		got_total += got;
		if (got)
			deadline = now_s() + S.o.wait_s;
		else if (!wait_cq(S.rcq, deadline))
			fatal("%llu of %llu messages arrived, then nothing for %d s",
			      (unsigned long long)got_total, (unsigned long long)total, S.o.wait_s);
	}
	uint32_t short_qps = 0;
	for (uint32_t i = 0; i < n; i++)
		short_qps += S.next_seq[i] != k;
	double dt = now_s() - t0;
	tap::check(ok == total && !short_qps,
		   "%llu of %llu messages in order and intact, %u per QP on all %u QPs%s "
		   "(%.1f s, %.0f msg/s)",
		   (unsigned long long)ok, (unsigned long long)total, k, n,
		   S.srq ? " through one SRQ" : "", dt, dt > 0 ? total / dt : 0.0);
}

void check_writes(uint32_t dir)
{
	uint32_t bad = 0;
	for (uint32_t i = 0; i < S.o.nqp; i++) {
		const uint8_t *p = S.wblk + (size_t)i * S.o.size;
		uint32_t idx, seq, d;
		memcpy(&idx, p, 4);
		memcpy(&seq, p + 4, 4);
		memcpy(&d, p + 8, 4);
		bool good = idx == i && seq == 0xffff && d == dir;
		for (uint32_t j = HDR; good && j < S.o.size; j++)
			good = p[j] == pattern(i, 0xffff, dir, j);
		if (!good && bad++ < 10)
			mismatch("WRITE block of QP %u is wrong (header %u/%#x/%u)", i, idx, seq, d);
	}
	tap::check(!bad, "%u RDMA WRITE blocks intact, one per QP", S.o.nqp);
}

void destroy_all()
{
	double t0 = now_s();
	int fails = 0;
	for (ibv_qp *qp : S.qps)
		fails += !!ibv_destroy_qp(qp);
	if (S.srq)
		fails += !!ibv_destroy_srq(S.srq);
	fails += !!ibv_destroy_cq(S.scq) + !!ibv_destroy_cq(S.rcq);
	fails += !!ibv_dereg_mr(S.smr) + !!ibv_dereg_mr(S.rmr) + !!ibv_dereg_mr(S.wmr);
	fails += !!ibv_destroy_comp_channel(S.ch) + !!ibv_dealloc_pd(S.pd);
	fails += !!ibv_close_device(S.ctx);
	tap::check(!fails, "%u QPs and the rest destroyed (%.1f s), %d failures", S.o.nqp,
		   now_s() - t0, fails);
}

void usage()
{
	fprintf(stderr,
		"usage: sroce_scale -s [-d DEV] [-g GID] [-p PORT] [--srq [--srq-depth N]]\n"
		"                   [--stall N] [-w S]\n"
		"       sroce_scale -c HOST [-d DEV] [-g GID] [-p PORT] [-n QPS] [-k MSGS]\n"
		"                   [--size B] [--depth D] [-w S]\n");
	exit(2);
}

void parse(int argc, char **argv)
{
	static const option longs[] = {
		{"srq", no_argument, nullptr, 'S'},
		{"size", required_argument, nullptr, 'z'},
		{"depth", required_argument, nullptr, 'D'},
		{"srq-depth", required_argument, nullptr, 'Q'},
		{"stall", required_argument, nullptr, 'T'},
		{}};
	int c;
	while ((c = getopt_long(argc, argv, "sc:d:g:p:n:k:w:", longs, nullptr)) != -1) {
		switch (c) {
		case 's': S.o.server = true; break;
		case 'c': S.o.host = optarg; break;
		case 'd': S.o.dev = optarg; break;
		case 'g': S.o.gid_index = atoi(optarg); break;
		case 'p': S.o.port = optarg; break;
		case 'n': S.o.nqp = strtoul(optarg, nullptr, 0); break;
		case 'k': S.o.msgs = strtoul(optarg, nullptr, 0); break;
		case 'z': S.o.size = strtoul(optarg, nullptr, 0); break;
		case 'D': S.o.depth = strtoul(optarg, nullptr, 0); break;
		case 'S': S.o.srq = true; break;
		case 'Q': S.o.srq_depth = strtoul(optarg, nullptr, 0); break;
		case 'T': S.o.stall = strtoul(optarg, nullptr, 0); break;
		case 'w': S.o.wait_s = atoi(optarg); break;
		default: usage();
		}
	}
	if (S.o.server == !!S.o.host || !S.o.nqp || !S.o.msgs || S.o.size < HDR ||
	    !S.o.depth || !S.o.srq_depth || S.o.wait_s <= 0)
		usage();
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	parse(argc, argv);
	open_dev();
	if (S.o.server) {
		S.sock = tcp_server(S.o.port);
		// The client chooses the shape; the server follows it.
		hello h;
		if (recv(S.sock, &h, sizeof(h), MSG_PEEK | MSG_WAITALL) != (ssize_t)sizeof(h) ||
		    h.magic != MAGIC || !h.nqp || !h.msgs || h.size < HDR)
			fatal("bad hello from the client");
		S.o.nqp = h.nqp;
		S.o.msgs = h.msgs;
		S.o.size = h.size;
	} else {
		S.sock = tcp_client(S.o.host, S.o.port);
	}
	printf("# %s: %u QPs, %u messages of %u bytes each way per QP%s\n",
	       S.o.server ? "server" : "client", S.o.nqp, S.o.msgs, S.o.size,
	       S.o.srq ? ", receives on one SRQ" : "");
	create_resources();
	exchange();
	connect_qps();
	uint32_t ready = MAGIC, peer_ready = 0;
	xfer(true, &ready, 4); // both sides in RTS with receives posted
	xfer(false, &peer_ready, 4);
	if (S.o.server) {
		recv_all(DIR_TO_SERVER);
		check_writes(DIR_TO_SERVER);
		send_all(DIR_TO_CLIENT, false);
	} else {
		send_all(DIR_TO_SERVER, true);
		recv_all(DIR_TO_CLIENT);
	}
	int32_t mine = S.errors + tap::failed, theirs = 0;
	xfer(true, &mine, 4);
	xfer(false, &theirs, 4);
	tap::check(!theirs, "the peer reports %d errors", theirs);
	destroy_all();
	close(S.sock);
	int rc = tap::done("sroce_scale");
	printf("scale: %u QPs, %llu messages, %d errors\n", S.o.nqp,
	       (unsigned long long)S.o.nqp * S.o.msgs * 2, S.errors + tap::failed);
	return rc;
}
