// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sroce_mcast: UD multicast through the verbs alone (no rdma_cm), one
// process on two devices: a sender on device A, receivers on device B.
//
//   sroce_mcast -a DEV_A -A GID_INDEX_A -b DEV_B -B GID_INDEX_B [-m GROUP]
//
// Checks: the multicast limits of query_device; datagrams to QP 0xFFFFFF
// and the group reach every attached QP of B (payload and GRH checked),
// not the unattached one; a detached QP gets nothing more; detaching
// twice, attaching an RC QP or a unicast GID fail with EINVAL; the
// per-group and per-device limits are enforced (ENOMEM one past them);
// sends posted back to back and then left, the AH and the QP destroyed
// at once (as mckey does), all arrive.
// Run it in B's network namespace: it also checks that attaching joins
// the group at the IP level there (/proc/net/igmp) and the last detach
// leaves it.
// TAP on stdout; exit 0 when every check passed.

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kMcastQpn = 0xffffff;
constexpr int kMsgs = 5;
constexpr int kBurst = 16;	// step 6, one send buffer each
constexpr size_t kBuf = 40 + 256;

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	char *buf = nullptr;
	size_t buf_len = 0;
	ibv_mr *mr = nullptr;
	int gid_index = 0;
};

ibv_qp *ud_qp(side &s, ibv_qp_type type = IBV_QPT_UD)
{
	ibv_qp_init_attr init = {};
	init.send_cq = init.recv_cq = s.cq;
	init.qp_type = type;
	init.cap.max_send_wr = init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	init.sq_sig_all = 1;
	ibv_qp *qp = ibv_create_qp(s.pd, &init);
	if (!qp || type != IBV_QPT_UD)
		return qp;
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = kQkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		goto err;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto err;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto err;
	return qp;
err:
	ibv_destroy_qp(qp);
	return nullptr;
}

// Receive buffers: slot i of the MR for receive i of a QP (kBuf each).
bool post_recvs(side &s, ibv_qp *qp, size_t first_slot, int n)
{
	for (int i = 0; i < n; i++) {
		ibv_sge sge = {};
		sge.addr = reinterpret_cast<uintptr_t>(s.buf + (first_slot + i) * kBuf);
		sge.length = kBuf;
		sge.lkey = s.mr->lkey;
		ibv_recv_wr wr = {}, *bad;
		wr.wr_id = first_slot + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp, &wr, &bad))
			return false;
	}
	return true;
}

// Poll @cq for up to @ms milliseconds, appending what arrives.
void poll_for(ibv_cq *cq, std::vector<ibv_wc> &out, size_t want, int ms)
{
	timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ibv_wc wc[16];
		int n = ibv_poll_cq(cq, 16, wc);
		for (int i = 0; i < n; i++)
			out.push_back(wc[i]);
		if (out.size() >= want && want)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return;
		if (!n)
			usleep(1000);
	}
}

// Post datagram @i "mcast <tag> <i>" (64 bytes from slot @i of @s's
// buffer) to the group through @ah.
bool post_group_send(side &s, ibv_qp *qp, ibv_ah *ah, int tag, int i)
{
	char *p = s.buf + i * kBuf;
	snprintf(p, kBuf, "mcast %d %d", tag, i);
	ibv_sge sge = {};
	sge.addr = reinterpret_cast<uintptr_t>(p);
	sge.length = 64;
	sge.lkey = s.mr->lkey;
	ibv_send_wr wr = {}, *bad;
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = kMcastQpn;
	wr.wr.ud.remote_qkey = kQkey;
	return ibv_post_send(qp, &wr, &bad) == 0;
}

// Send @n datagrams "mcast <tag> <i>" to the group through @ah.
bool send_group(side &s, ibv_qp *qp, ibv_ah *ah, int tag, int n)
{
	std::vector<ibv_wc> wcs;
	for (int i = 0; i < n; i++) {
		if (!post_group_send(s, qp, ah, tag, i))
			return false;
		// One at a time: UD has no flow control and the receivers
		// share one softirq with the sender on a veth pair.
		wcs.clear();
		poll_for(s.cq, wcs, 1, 5000);
		if (wcs.size() != 1 || wcs[0].status != IBV_WC_SUCCESS)
			return false;
	}
	return true;
}

// The receives of @qpn in @wcs carry tag @tag, messages 0..n-1 in
// order, and a GRH whose destination is the group.
bool got_all(side &b, const std::vector<ibv_wc> &wcs, uint32_t qpn, int tag,
	     int n, const ibv_gid &mgid)
{
	int seen = 0;
	for (const ibv_wc &wc : wcs) {
		if (wc.qp_num != qpn)
			continue;
		const char *p = b.buf + wc.wr_id * kBuf;
		char want[64];
		snprintf(want, sizeof(want), "mcast %d %d", tag, seen);
		// The GRH area holds an IPv6 header or a RoCE v1 GRH (version
		// 6, destination GID at offset 24), or 20 bytes of zero and
		// an IPv4 header (destination address at offset 16 of it).
		bool grh6 = (static_cast<uint8_t>(p[0]) >> 4) == 6;
		bool grh_ok = (wc.wc_flags & IBV_WC_GRH) &&
			      (grh6 ? !memcmp(p + 24, mgid.raw, 16) :
				      !memcmp(p + 20 + 16, mgid.raw + 12, 4));
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 40 + 64 ||
		    strcmp(p + 40, want) || !grh_ok) {
			tap::diag("QP %u: status %d len %u flags 0x%x data '%.20s' want '%s'",
				  qpn, wc.status, wc.byte_len, wc.wc_flags, p + 40, want);
			return false;
		}
		seen++;
	}
	if (seen != n)
		tap::diag("QP %u: %d datagrams, want %d", qpn, seen, n);
	return seen == n;
}

// /proc/net/igmp of our namespace lists @grp (on any interface).
bool igmp_has(in_addr grp)
{
	char want[16], line[256];
	bool found = false;
	snprintf(want, sizeof(want), "%08X", grp.s_addr);
	FILE *f = fopen("/proc/net/igmp", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != nullptr;
	fclose(f);
	return found;
}

size_t count_qp(const std::vector<ibv_wc> &wcs, uint32_t qpn)
{
	size_t n = 0;
	for (const ibv_wc &wc : wcs)
		n += wc.qp_num == qpn;
	return n;
}

// Is @name a sroce device (not, say, rdma_rxe)?
bool is_sroce(const char *name)
{
	std::string f = std::string("/sys/class/infiniband/") + name + "/sroce_abi_version";
	return access(f.c_str(), F_OK) == 0;
}

bool open_side(side &s, const char *name, int gid_index, size_t slots)
{
	s.ctx = open_device_by_name(name);
	if (!s.ctx)
		return false;
	s.gid_index = gid_index;
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 4096, nullptr, nullptr, 0);
	s.buf_len = slots * kBuf;
	s.buf = static_cast<char *>(calloc(slots, kBuf));
	if (!s.pd || !s.cq || !s.buf)
		return false;
	s.mr = ibv_reg_mr(s.pd, s.buf, s.buf_len, IBV_ACCESS_LOCAL_WRITE);
	return s.mr != nullptr;
}

// Step 6, mckey's teardown: sends posted back to back and not waited for,
// then at once the AH and the QP destroyed. A NIC has every one of them
// on the wire; so must we. @r0 has 4 receives left and takes 12 more in
// the slots of the unattached receiver (which gets nothing).
void teardown_burst(side &A, side &B, ibv_qp *r0, ibv_ah_attr &aa, const ibv_gid &mgid)
{
	post_recvs(B, r0, 30, kBurst - 4);
	ibv_qp *snd = ud_qp(A);
	ibv_ah *ah = ibv_create_ah(A.pd, &aa);
	int posted = 0;
	for (; snd && ah && posted < kBurst; posted++)
		if (!post_group_send(A, snd, ah, 4, posted))
			break;
	int ah_err = ah ? ibv_destroy_ah(ah) : -1;
	int qp_err = snd ? ibv_destroy_qp(snd) : -1;
	std::vector<ibv_wc> wcs;
	poll_for(B.cq, wcs, kBurst, 5000);
	poll_for(B.cq, wcs, 0, 300);
	tap::check(posted == kBurst && !ah_err && !qp_err &&
			   got_all(B, wcs, r0->qp_num, 4, kBurst, mgid),
		   "%d sends posted back to back, then the AH and the QP destroyed at once: "
		   "all arrive, in order (%d posted, %zu received)",
		   kBurst, posted, wcs.size());
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev_a = nullptr, *dev_b = nullptr;
	const char *group = "239.9.9.9";
	int gid_a = -1, gid_b = -1, c;

	while ((c = getopt(argc, argv, "a:A:b:B:m:")) != -1) {
		switch (c) {
		case 'a': dev_a = optarg; break;
		case 'A': gid_a = atoi(optarg); break;
		case 'b': dev_b = optarg; break;
		case 'B': gid_b = atoi(optarg); break;
		case 'm': group = optarg; break;
		default:
			fprintf(stderr, "usage: %s -a DEV -A GIDX -b DEV -B GIDX [-m GROUP]\n",
				argv[0]);
			return 2;
		}
	}
	in_addr grp;
	if (!dev_a || !dev_b || gid_a < 0 || gid_b < 0 || inet_pton(AF_INET, group, &grp) != 1) {
		fprintf(stderr, "sroce_mcast: -a, -A, -b, -B and an IPv4 group are needed\n");
		return 2;
	}
	ibv_gid mgid = {};
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(mgid.raw + 12, &grp, 4);

	side A, B;
	if (!open_side(A, dev_a, gid_a, kBurst) || !open_side(B, dev_b, gid_b, 3 * 3 * kMsgs)) {
		fprintf(stderr, "sroce_mcast: cannot set up %s / %s\n", dev_a, dev_b);
		return 2;
	}

	// 1. Limits.
	ibv_device_attr da = {};
	ibv_query_device(B.ctx, &da);
	tap::check(da.max_mcast_grp == 256 && da.max_mcast_qp_attach == 64 &&
			   da.max_total_mcast_qp_attach == 256 * 64,
		   "query_device: max_mcast_grp %d, max_mcast_qp_attach %d, max_total %d",
		   da.max_mcast_grp, da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);

	// 2. Three receivers on B, two attached; a sender on A.
	ibv_qp *r[3], *snd = ud_qp(A);
	for (ibv_qp *&q : r)
		q = ud_qp(B);
	if (!snd || !r[0] || !r[1] || !r[2]) {
		fprintf(stderr, "sroce_mcast: UD QPs: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < 3; i++)
		post_recvs(B, r[i], i * 3 * kMsgs, 3 * kMsgs);
	int e0 = ibv_attach_mcast(r[0], &mgid, 0);
	int e1 = ibv_attach_mcast(r[1], &mgid, 0);
	tap::check(!e0 && !e1, "attach two UD QPs to %s (%s / %s)", group, strerror(e0),
		   strerror(e1));
	tap::check(!ibv_attach_mcast(r[0], &mgid, 0), "attaching again is a no-op");
	tap::check(igmp_has(grp), "the netdev joined %s (/proc/net/igmp)", group);

	ibv_ah_attr aa = {};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = mgid;
	aa.grh.sgid_index = gid_a;
	aa.grh.hop_limit = 1;
	ibv_ah *ah = ibv_create_ah(A.pd, &aa);
	tap::check(ah != nullptr, "an AH for the group (%s)", ah ? "ok" : strerror(errno));
	if (!ah)
		return tap::done("sroce_mcast");

	std::vector<ibv_wc> wcs;
	bool sent = send_group(A, snd, ah, 1, kMsgs);
	poll_for(B.cq, wcs, 2 * kMsgs, 5000);
	poll_for(B.cq, wcs, 0, 300);	// anything more that comes
	tap::check(sent && got_all(B, wcs, r[0]->qp_num, 1, kMsgs, mgid) &&
			   got_all(B, wcs, r[1]->qp_num, 1, kMsgs, mgid),
		   "%d datagrams to QP 0xFFFFFF reach both attached QPs, GRH and data right",
		   kMsgs);
	tap::check(count_qp(wcs, r[2]->qp_num) == 0, "the unattached QP gets none");

	// 3. Detach one.
	int d = ibv_detach_mcast(r[1], &mgid, 0);
	tap::check(!d, "detach one QP (%s)", strerror(d));
	wcs.clear();
	sent = send_group(A, snd, ah, 2, kMsgs);
	poll_for(B.cq, wcs, kMsgs, 5000);
	poll_for(B.cq, wcs, 0, 300);
	tap::check(sent && got_all(B, wcs, r[0]->qp_num, 2, kMsgs, mgid) &&
			   count_qp(wcs, r[1]->qp_num) == 0 && count_qp(wcs, r[2]->qp_num) == 0,
		   "after detach only the attached QP receives");

	// 4. Errors.
	d = ibv_detach_mcast(r[1], &mgid, 0);
	tap::check(d == EINVAL, "detaching again: EINVAL (%s)", strerror(d));
	ibv_qp *rc = ud_qp(B, IBV_QPT_RC);
	d = rc ? ibv_attach_mcast(rc, &mgid, 0) : -1;
	tap::check(d == EINVAL, "attaching an RC QP: EINVAL (%s)", strerror(d));
	ibv_gid uni = {};
	ibv_query_gid(B.ctx, 1, gid_b, &uni);
	d = ibv_attach_mcast(r[2], &uni, 0);
	tap::check(d == EINVAL, "attaching to a unicast GID: EINVAL (%s)", strerror(d));

	// 5. Limits: 64 QPs per group (r[0] is one), 256 groups per device.
	std::vector<ibv_qp *> many;
	int attached = 1, err = 0;
	while (attached < 64) {
		ibv_qp *q = ud_qp(B);
		if (!q)
			break;
		many.push_back(q);
		err = ibv_attach_mcast(q, &mgid, 0);
		if (err)
			break;
		attached++;
	}
	ibv_qp *extra = ud_qp(B);
	int over = extra ? ibv_attach_mcast(extra, &mgid, 0) : -1;
	tap::check(attached == 64 && over == ENOMEM,
		   "64 QPs attach to one group, the 65th gets ENOMEM (%d, %s)", attached,
		   strerror(over));
	ibv_gid g = mgid;
	int groups = 1;		// the group above
	for (int i = 0; groups < 256; i++, groups++) {
		g.raw[13] = mgid.raw[13] ^ 0x80;	/* not the group's /16 */
		g.raw[14] = 1 + i / 250;
		g.raw[15] = 1 + i % 250;
		err = ibv_attach_mcast(extra, &g, 0);
		if (err)
			break;
	}
	g.raw[13] = mgid.raw[13] ^ 0x80;
	g.raw[14] = 200;
	g.raw[15] = 200;
	over = ibv_attach_mcast(extra, &g, 0);
	tap::check(groups == 256 && over == ENOMEM,
		   "256 groups, the 257th gets ENOMEM (%d, %s)", groups, strerror(over));
	// ib_core refuses to destroy a user QP still attached (EBUSY); the
	// process exit detaches them itself. Detach, then destroy.
	int busy = ibv_destroy_qp(extra);
	tap::check(busy == EBUSY, "destroying an attached QP: EBUSY (%s)", strerror(busy));
	int derr = 0;
	for (ibv_qp *q : many)
		derr |= ibv_detach_mcast(q, &mgid, 0) | ibv_destroy_qp(q);
	g = mgid;
	for (int i = 0; i < 255; i++) {
		g.raw[13] = mgid.raw[13] ^ 0x80;	/* not the group's /16 */
		g.raw[14] = 1 + i / 250;
		g.raw[15] = 1 + i % 250;
		derr |= ibv_detach_mcast(extra, &g, 0);
	}
	derr |= ibv_destroy_qp(extra);
	tap::check(!derr, "detach and destroy QPs attached to 1..255 groups");

	// r[0] still attached: one more round reaches it alone.
	wcs.clear();
	sent = send_group(A, snd, ah, 3, 1);
	poll_for(B.cq, wcs, 1, 5000);
	tap::check(sent && count_qp(wcs, r[0]->qp_num) == 1,
		   "the group still works for the QP left");
	// 6. mckey's teardown (a sroce sender only: what another does with
	// an AH destroyed under its posted sends is its own business; rdma_rxe
	// looks the AH up when it sends, as sroce did).
	if (is_sroce(dev_a))
		teardown_burst(A, B, r[0], aa, mgid);
	else
		tap::diag("step 6 (sends, then AH and QP destroyed) needs a sroce sender: %s is not",
			  dev_a);

	d = ibv_detach_mcast(r[0], &mgid, 0);
	tap::check(!d && !igmp_has(grp), "the last detach leaves %s (%s)", group,
		   strerror(d));
	ibv_destroy_ah(ah);
	if (rc)
		ibv_destroy_qp(rc);
	for (ibv_qp *q : r)
		ibv_destroy_qp(q);
	ibv_destroy_qp(snd);
	return tap::done("sroce_mcast");
}
