// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_uverbs_fuzz - hostile userspace at the system-call level: random
// uverbs commands written straight to /dev/infiniband/uverbsN, past any
// provider. Handles are mostly live ones (so the commands reach sroce's
// own verbs), sometimes stale or random; every number is drawn from values
// that break code (0, 1, ~0, powers of two and their neighbours, random);
// driver udata has random sizes; some commands get a corrupted header or a
// bad response pointer. The rings the kernel maps are mmap'd with right and
// wrong offsets and lengths and filled with garbage, then doorbells rung.
// A guided path walks QPs through INIT, RTR and RTS with sane attributes
// now and then, so the data path sees the garbage too.
//
// The kernel must answer every command with success or an errno from the
// set uverbs and sroce document; anything else, a crash, or a hang is a
// failure. Prints TAP: per-command outcome counts, the errno histogram,
// and the checks. The caller checks the kernel log and that every object
// is gone once the file is closed.
//
//   sroce_uverbs_fuzz -d sroce0 [-n OPS] [-s SEED] [-g GID_INDEX]
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <rdma/ib_user_verbs.h>

#include "tap.hpp"

namespace {

std::mt19937_64 rng;

uint64_t rnd(uint64_t n) { return n ? rng() % n : 0; }
bool chance(unsigned pct) { return rnd(100) < pct; }

// A value chosen to hit edges: 0, 1, all-ones, powers of two and their
// neighbours, small numbers, or anything.
uint64_t edgy(unsigned bits)
{
	uint64_t mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
	uint64_t p = 1ULL << rnd(bits);

	switch (rnd(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return mask;
	case 3: return p & mask;
	case 4: return (p - 1) & mask;
	case 5: return (p + 1) & mask;
	case 6: return rnd(64);
	default: return rng() & mask;
	}
}

// Live handles of one kind; a pick is sometimes stale or random.
struct pool {
	std::vector<uint32_t> live;
	std::vector<uint32_t> dead;

	uint32_t pick()
	{
		if (!live.empty() && chance(85))
			return live[rnd(live.size())];
		if (!dead.empty() && chance(50))
			return dead[rnd(dead.size())];
		return (uint32_t)edgy(32);
	}
	void add(uint32_t h) { live.push_back(h); }
	void drop(uint32_t h)
	{
		for (size_t i = 0; i < live.size(); i++)
			if (live[i] == h) {
				live[i] = live.back();
				live.pop_back();
				dead.push_back(h);
				return;
			}
	}
};

// A core response followed by room for the driver's part (the core
// structs end in flexible arrays, so no struct can hold both).
template <class Core, size_t Drv> struct resp_buf {
	alignas(8) uint8_t b[sizeof(Core) + Drv] = {};

	Core core() const
	{
		Core c;

		memcpy(&c, b, sizeof(c));
		return c;
	}
	const uint8_t *drv() const { return b + sizeof(Core); }
};

struct mapping_info {
	uint64_t offset;
	uint64_t length;
};

// ib_qp_attr_mask bits (ib_verbs.h; the uverbs ABI carries them as is).
enum : uint32_t {
	M_STATE = 1 << 0, M_ACCESS = 1 << 3, M_PKEY = 1 << 4, M_PORT = 1 << 5,
	M_QKEY = 1 << 6, M_AV = 1 << 7, M_MTU = 1 << 8, M_TIMEOUT = 1 << 9,
	M_RETRY = 1 << 10, M_RNR_RETRY = 1 << 11, M_RQ_PSN = 1 << 12,
	M_RD_ATOMIC = 1 << 13, M_MIN_RNR = 1 << 15, M_SQ_PSN = 1 << 16,
	M_DEST_RD_ATOMIC = 1 << 17, M_DEST_QPN = 1 << 20,
};

enum : uint8_t { QPT_RC = 2, QPT_UC = 3, QPT_UD = 4 };

struct fuzzer {
	int fd = -1;
	int gid_index = 1;
	pool pd, cq, qp, mr, srq, ah, mw;
	std::map<uint32_t, int> qp_state;	// guided QPs: last state reached
	std::map<uint32_t, uint8_t> qp_type;	// and their types
	std::vector<mapping_info> maps;		// rings the kernel offered
	std::vector<uint8_t> mem;		// memory for MRs and SGEs
	std::map<std::string, std::map<int, unsigned>> outcomes;
	unsigned unexpected = 0, rts = 0, maps_ok = 0, maps_refused = 0;

	int cmd(const char *name, uint32_t command, const void *body,
		size_t body_len, void *resp, size_t resp_len);
	void note(const char *name, int err);

	void alloc_pd();
	void dealloc_pd();
	void reg_mr();
	void rereg_mr();
	void dereg_mr();
	void alloc_mw();
	void dealloc_mw();
	void create_cq();
	void resize_cq();
	void destroy_cq();
	void poll_cq();
	void notify_cq();
	void create_qp();
	void modify_qp_random();
	void modify_qp_guided();
	void query_qp();
	void destroy_qp();
	void post_send();
	void post_recv();
	void create_srq();
	void modify_srq();
	void destroy_srq();
	void create_ah();
	void destroy_ah();
	void query_misc();
	void ring_garbage();
	void step();
};

// Errnos a uverbs command may legitimately fail with.
bool expected_errno(int e)
{
	switch (e) {
	case EINVAL: case EFAULT: case ENOMEM: case EOPNOTSUPP: case ENOENT:
	case EBUSY: case ENOSYS: case EPERM: case EACCES: case ERANGE:
	case E2BIG: case ENOSPC: case EAGAIN: case EBADF: case ENODEV:
	case EEXIST: case EMSGSIZE: case ENOBUFS: case EOVERFLOW:
	case EADDRNOTAVAIL: case ENETUNREACH: case EHOSTUNREACH:
	case EPROTONOSUPPORT:
	case ENODATA:	// ib_core: an empty GID table entry
		return true;
	default:
		return false;
	}
}

void fuzzer::note(const char *name, int err)
{
	outcomes[name][err]++;
	if (err && !expected_errno(err)) {
		unexpected++;
		tap::diag("%s: unexpected errno %d (%s)", name, err, strerror(err));
	}
}

// One legacy uverbs command: header, the command's body, then driver udata
// of a random size (zeros or garbage). The response buffer gets room for
// the core response and a random amount of driver data. Sometimes the
// header's word counts or the response pointer are wrong on purpose.
int fuzzer::cmd(const char *name, uint32_t command, const void *body,
		size_t body_len, void *resp, size_t resp_len)
{
	static uint8_t respbuf[8192];
	size_t udata_in = chance(70) ? 0 : 8 * rnd(16);
	size_t udata_out = chance(20) ? 8 * rnd(32) : 1024;
	std::vector<uint8_t> in(sizeof(ib_uverbs_cmd_hdr) + body_len + udata_in);
	auto *hdr = reinterpret_cast<ib_uverbs_cmd_hdr *>(in.data());
	size_t out_len = resp_len + udata_out;
	ssize_t n;
	int err;

	memcpy(in.data() + sizeof(*hdr), body, body_len);
	for (size_t i = 0; i < udata_in; i++)
		in[sizeof(*hdr) + body_len + i] = chance(50) ? 0 : (uint8_t)rng();
	if (out_len > sizeof(respbuf))
		out_len = sizeof(respbuf);
	memset(respbuf, 0, sizeof(respbuf));
	// Every legacy command with a response starts with its pointer.
	if (resp_len) {
		uint64_t p = (uintptr_t)respbuf;

		if (chance(3))
			p = chance(50) ? 0 : edgy(64);
		memcpy(in.data() + sizeof(*hdr), &p, sizeof(p));
	}
	hdr->command = command;
	hdr->in_words = (uint16_t)(in.size() / 4);
	hdr->out_words = (uint16_t)(out_len / 4);
	if (chance(3)) {
		hdr->in_words = (uint16_t)edgy(16);
		hdr->out_words = (uint16_t)edgy(16);
	}
	if (chance(1))
		hdr->command = (uint32_t)edgy(32);
	// Truncate the write itself now and then.
	size_t len = chance(2) ? rnd(in.size() + 1) : in.size();

	n = write(fd, in.data(), len);
	err = n < 0 ? errno : 0;
	note(name, err);
	if (!err && resp)
		memcpy(resp, respbuf, resp_len);
	return err;
}

void fuzzer::alloc_pd()
{
	ib_uverbs_alloc_pd c = {};
	ib_uverbs_alloc_pd_resp r = {};

	if (!cmd("alloc_pd", IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(c), &r, sizeof(r)))
		pd.add(r.pd_handle);
}

void fuzzer::dealloc_pd()
{
	ib_uverbs_dealloc_pd c = {};

	c.pd_handle = pd.pick();
	if (!cmd("dealloc_pd", IB_USER_VERBS_CMD_DEALLOC_PD, &c, sizeof(c), nullptr, 0))
		pd.drop(c.pd_handle);
}

void fuzzer::reg_mr()
{
	ib_uverbs_reg_mr c = {};
	ib_uverbs_reg_mr_resp r = {};
	uint64_t base = (uintptr_t)mem.data();

	c.start = chance(80) ? base + rnd(mem.size() / 2) : edgy(64);
	c.length = chance(80) ? 1 + rnd(mem.size() / 2) : edgy(64);
	c.hca_va = chance(70) ? c.start : edgy(64);
	c.pd_handle = pd.pick();
	c.access_flags = (uint32_t)(chance(70) ? rnd(16) : edgy(32));
	if (!cmd("reg_mr", IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), &r, sizeof(r)))
		mr.add(r.mr_handle);
}

void fuzzer::rereg_mr()
{
	ib_uverbs_rereg_mr c = {};
	ib_uverbs_rereg_mr_resp r = {};
	uint64_t base = (uintptr_t)mem.data();

	c.mr_handle = mr.pick();
	c.flags = (uint32_t)(chance(80) ? rnd(8) : edgy(32));
	c.start = chance(80) ? base + rnd(mem.size() / 2) : edgy(64);
	c.length = chance(80) ? 1 + rnd(mem.size() / 2) : edgy(64);
	c.hca_va = c.start;
	c.pd_handle = pd.pick();
	c.access_flags = (uint32_t)(chance(70) ? rnd(16) : edgy(32));
	cmd("rereg_mr", IB_USER_VERBS_CMD_REREG_MR, &c, sizeof(c), &r, sizeof(r));
}

void fuzzer::dereg_mr()
{
	ib_uverbs_dereg_mr c = {};

	c.mr_handle = mr.pick();
	if (!cmd("dereg_mr", IB_USER_VERBS_CMD_DEREG_MR, &c, sizeof(c), nullptr, 0))
		mr.drop(c.mr_handle);
}

void fuzzer::alloc_mw()
{
	ib_uverbs_alloc_mw c = {};
	ib_uverbs_alloc_mw_resp r = {};

	c.pd_handle = pd.pick();
	c.mw_type = (uint8_t)(chance(80) ? 1 + rnd(2) : edgy(8));
	if (!cmd("alloc_mw", IB_USER_VERBS_CMD_ALLOC_MW, &c, sizeof(c), &r, sizeof(r)))
		mw.add(r.mw_handle);
}

void fuzzer::dealloc_mw()
{
	ib_uverbs_dealloc_mw c = {};

	c.mw_handle = mw.pick();
	if (!cmd("dealloc_mw", IB_USER_VERBS_CMD_DEALLOC_MW, &c, sizeof(c), nullptr, 0))
		mw.drop(c.mw_handle);
}

// The driver part of a create response: ring infos (offset, length).
void remember_rings(std::vector<mapping_info> &maps, const uint8_t *drv, int n)
{
	for (int i = 0; i < n; i++) {
		mapping_info m;

		memcpy(&m.offset, drv + 24 * i, 8);
		memcpy(&m.length, drv + 24 * i + 8, 8);
		if (m.length && maps.size() < 256)
			maps.push_back(m);
	}
}

// A CQ size at the edges.  A valid size above 2^16 entries costs up to
// 256 MiB of kernel memory (max_cqe is 2^22 - 1, 64-byte CQEs) in a 2 GiB
// guest: such a draw becomes a size just past the limit instead, which the
// kernel must refuse.  tests/tools/sroce_objects.cpp creates the big ones.
uint32_t edgy_cqe()
{
	uint64_t v = edgy(32);

	if (v > (1u << 16) && v < (1u << 22))
		v = (1u << 22) + (v & 0xff);
	return (uint32_t)v;
}

void fuzzer::create_cq()
{
	ib_uverbs_create_cq c = {};
	resp_buf<ib_uverbs_create_cq_resp, 64> r;

	c.user_handle = rng();
	c.cqe = chance(80) ? 1 + (uint32_t)rnd(256) : edgy_cqe();
	c.comp_vector = (uint32_t)(chance(90) ? 0 : edgy(32));
	c.comp_channel = -1;
	if (!cmd("create_cq", IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), r.b, sizeof(r.b))) {
		cq.add(r.core().cq_handle);
		remember_rings(maps, r.drv(), 1);
	}
}

void fuzzer::resize_cq()
{
	ib_uverbs_resize_cq c = {};
	resp_buf<ib_uverbs_resize_cq_resp, 64> r;

	c.cq_handle = cq.pick();
	c.cqe = chance(80) ? 1 + (uint32_t)rnd(512) : edgy_cqe();
	if (!cmd("resize_cq", IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), r.b, sizeof(r.b)))
		remember_rings(maps, r.drv(), 1);
}

void fuzzer::destroy_cq()
{
	ib_uverbs_destroy_cq c = {};
	ib_uverbs_destroy_cq_resp r = {};

	c.cq_handle = cq.pick();
	if (!cmd("destroy_cq", IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof(c), &r, sizeof(r)))
		cq.drop(c.cq_handle);
}

void fuzzer::poll_cq()
{
	ib_uverbs_poll_cq c = {};
	resp_buf<ib_uverbs_poll_cq_resp, 16 * sizeof(ib_uverbs_wc)> r;

	c.cq_handle = cq.pick();
	c.ne = (uint32_t)(chance(80) ? rnd(17) : edgy(32));
	if (c.ne > 16 && chance(90))
		c.ne = 16;
	cmd("poll_cq", IB_USER_VERBS_CMD_POLL_CQ, &c, sizeof(c), r.b, sizeof(r.b));
}

void fuzzer::notify_cq()
{
	ib_uverbs_req_notify_cq c = {};

	c.cq_handle = cq.pick();
	c.solicited_only = (uint32_t)(chance(90) ? rnd(2) : edgy(32));
	cmd("req_notify_cq", IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(c), nullptr, 0);
}

void fuzzer::create_qp()
{
	static const uint8_t types[] = { 2, 3, 4, 1, 0, 8, 9, 10, 255 };	// RC UC UD SMI ...
	ib_uverbs_create_qp c = {};
	resp_buf<ib_uverbs_create_qp_resp, 96> r;

	c.user_handle = rng();
	c.pd_handle = pd.pick();
	c.send_cq_handle = cq.pick();
	c.recv_cq_handle = chance(80) ? c.send_cq_handle : cq.pick();
	c.is_srq = chance(20);
	c.srq_handle = c.is_srq ? srq.pick() : 0;
	c.max_send_wr = (uint32_t)(chance(80) ? 1 + rnd(64) : edgy(32));
	c.max_recv_wr = (uint32_t)(chance(80) ? 1 + rnd(64) : edgy(32));
	c.max_send_sge = (uint32_t)(chance(80) ? 1 + rnd(4) : edgy(32));
	c.max_recv_sge = (uint32_t)(chance(80) ? 1 + rnd(4) : edgy(32));
	c.max_inline_data = (uint32_t)(chance(80) ? rnd(128) : edgy(32));
	c.sq_sig_all = (uint8_t)rnd(2);
	c.qp_type = chance(85) ? types[rnd(3)] : types[rnd(sizeof(types))];
	if (!cmd("create_qp", IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), r.b, sizeof(r.b))) {
		qp.add(r.core().qp_handle);
		qp_state[r.core().qp_handle] = 0;
		qp_type[r.core().qp_handle] = c.qp_type;
		remember_rings(maps, r.drv(), 2);
	}
}

void fill_dest(ib_uverbs_qp_dest &d, int gid_index, bool sane)
{
	d.dgid[10] = 0xff;
	d.dgid[11] = 0xff;
	d.dgid[12] = 10;
	d.dgid[13] = 77;
	d.dgid[15] = 2;
	if (!sane)
		for (auto &b : d.dgid)
			b = chance(70) ? b : (uint8_t)rng();
	d.sgid_index = (uint8_t)(sane ? gid_index : edgy(8));
	d.hop_limit = (uint8_t)(sane ? 64 : edgy(8));
	d.traffic_class = (uint8_t)(sane ? 0 : edgy(8));
	d.flow_label = (uint32_t)(sane ? 0 : edgy(32));
	d.dlid = (uint16_t)(sane ? 0 : edgy(16));
	d.sl = (uint8_t)(sane ? 0 : edgy(8));
	d.is_global = sane ? 1 : (uint8_t)rnd(3);
	d.port_num = (uint8_t)(sane ? 1 : edgy(8));
}

void fuzzer::modify_qp_random()
{
	ib_uverbs_modify_qp c = {};

	c.qp_handle = qp.pick();
	c.attr_mask = (uint32_t)(chance(70) ? rng() & 0x1fffff : edgy(32));
	c.qp_state = (uint8_t)(chance(80) ? rnd(7) : edgy(8));
	c.cur_qp_state = (uint8_t)(chance(80) ? rnd(7) : edgy(8));
	c.path_mtu = (uint8_t)(chance(80) ? 1 + rnd(5) : edgy(8));
	c.qkey = (uint32_t)edgy(32);
	c.rq_psn = (uint32_t)edgy(32);
	c.sq_psn = (uint32_t)edgy(32);
	c.dest_qp_num = (uint32_t)edgy(32);
	c.qp_access_flags = (uint32_t)edgy(32);
	c.pkey_index = (uint16_t)edgy(16);
	c.alt_pkey_index = (uint16_t)edgy(16);
	c.max_rd_atomic = (uint8_t)edgy(8);
	c.max_dest_rd_atomic = (uint8_t)edgy(8);
	c.min_rnr_timer = (uint8_t)edgy(8);
	c.port_num = (uint8_t)(chance(80) ? 1 : edgy(8));
	c.timeout = (uint8_t)edgy(8);
	c.retry_cnt = (uint8_t)edgy(8);
	c.rnr_retry = (uint8_t)edgy(8);
	c.alt_port_num = (uint8_t)edgy(8);
	c.alt_timeout = (uint8_t)edgy(8);
	c.en_sqd_async_notify = (uint8_t)edgy(8);
	fill_dest(c.dest, gid_index, chance(50));
	fill_dest(c.alt_dest, gid_index, chance(50));
	cmd("modify_qp", IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(c), nullptr, 0);
}

// Walk a live QP one state on (RESET -> INIT -> RTR -> RTS) with sane
// attributes, so that posts and garbage rings meet a QP that sends.
void fuzzer::modify_qp_guided()
{
	ib_uverbs_modify_qp c = {};
	uint32_t h;
	int next;

	if (qp.live.empty())
		return;
	h = qp.live[rnd(qp.live.size())];
	next = qp_state[h] + 1;
	if (next > 3)
		return;
	c.qp_handle = h;
	c.qp_state = (uint8_t)next;
	c.port_num = 1;
	c.qp_access_flags = 0xf;
	c.qkey = 0x11111111;
	c.path_mtu = 3;
	c.dest_qp_num = 0x11 + (uint32_t)rnd(64);
	c.rq_psn = (uint32_t)rnd(1 << 24);
	c.sq_psn = (uint32_t)rnd(1 << 24);
	c.max_dest_rd_atomic = 1;
	c.max_rd_atomic = 1;
	c.min_rnr_timer = 1;
	c.timeout = 10;
	c.retry_cnt = 1;
	c.rnr_retry = 1;
	fill_dest(c.dest, gid_index, true);
	// The attributes each transition requires, per type (IBTA 11.2.4.2).
	switch (qp_type[h] * 4 + next) {
	case QPT_RC * 4 + 1: c.attr_mask = M_STATE | M_PKEY | M_PORT | M_ACCESS; break;
	case QPT_UC * 4 + 1: c.attr_mask = M_STATE | M_PKEY | M_PORT | M_ACCESS; break;
	case QPT_UD * 4 + 1: c.attr_mask = M_STATE | M_PKEY | M_PORT | M_QKEY; break;
	case QPT_RC * 4 + 2:
		c.attr_mask = M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN |
			      M_DEST_RD_ATOMIC | M_MIN_RNR;
		break;
	case QPT_UC * 4 + 2:
		c.attr_mask = M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN;
		break;
	case QPT_UD * 4 + 2: c.attr_mask = M_STATE; break;
	case QPT_RC * 4 + 3:
		c.attr_mask = M_STATE | M_TIMEOUT | M_RETRY | M_RNR_RETRY |
			      M_SQ_PSN | M_RD_ATOMIC;
		break;
	default: c.attr_mask = M_STATE | M_SQ_PSN; break;	// UC, UD to RTS
	}
	if (cmd("modify_qp_guided", IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(c), nullptr, 0))
		return;
	qp_state[h] = next;
	if (next == 3)
		rts++;
}

void fuzzer::query_qp()
{
	ib_uverbs_query_qp c = {};
	ib_uverbs_query_qp_resp r = {};

	c.qp_handle = qp.pick();
	c.attr_mask = (uint32_t)edgy(32);
	cmd("query_qp", IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(c), &r, sizeof(r));
}

void fuzzer::destroy_qp()
{
	ib_uverbs_destroy_qp c = {};
	ib_uverbs_destroy_qp_resp r = {};

	c.qp_handle = qp.pick();
	if (!cmd("destroy_qp", IB_USER_VERBS_CMD_DESTROY_QP, &c, sizeof(c), &r, sizeof(r))) {
		qp.drop(c.qp_handle);
		qp_state.erase(c.qp_handle);
		qp_type.erase(c.qp_handle);
	}
}

// Kernel-parsed work requests (the doorbell path of a user QP): random
// counts, opcodes, SGE lists and a wqe_size that may lie.
void fuzzer::post_send()
{
	unsigned nwr = (unsigned)rnd(4), nsge = (unsigned)rnd(5);
	size_t wr_bytes = nwr * sizeof(ib_uverbs_send_wr) + nsge * sizeof(ib_uverbs_sge);
	std::vector<uint8_t> body(sizeof(ib_uverbs_post_send) + wr_bytes);
	auto *c = reinterpret_cast<ib_uverbs_post_send *>(body.data());
	ib_uverbs_post_send_resp r = {};
	unsigned sges_left = nsge;

	c->qp_handle = qp.pick();
	c->wr_count = chance(90) ? nwr : (uint32_t)edgy(32);
	c->sge_count = chance(90) ? nsge : (uint32_t)edgy(32);
	c->wqe_size = chance(90) ? sizeof(ib_uverbs_send_wr) : (uint32_t)edgy(16);
	for (unsigned i = 0; i < nwr; i++) {
		auto *wr = reinterpret_cast<ib_uverbs_send_wr *>(
			body.data() + sizeof(*c) + i * sizeof(ib_uverbs_send_wr));
		unsigned k = i + 1 == nwr ? sges_left : (unsigned)rnd(sges_left + 1);

		wr->wr_id = rng();
		wr->num_sge = chance(90) ? k : (uint32_t)edgy(32);
		sges_left -= k;
		wr->opcode = (uint32_t)(chance(80) ? rnd(16) : edgy(32));
		wr->send_flags = (uint32_t)(chance(80) ? rnd(32) : edgy(32));
		wr->ex.imm_data = (uint32_t)rng();
		wr->wr.rdma.remote_addr = edgy(64);
		wr->wr.rdma.rkey = (uint32_t)edgy(32);
	}
	for (unsigned i = 0; i < nsge; i++) {
		auto *s = reinterpret_cast<ib_uverbs_sge *>(body.data() + sizeof(*c) +
			nwr * sizeof(ib_uverbs_send_wr) + i * sizeof(ib_uverbs_sge));

		s->addr = chance(70) ? (uintptr_t)mem.data() + rnd(mem.size()) : edgy(64);
		s->length = (uint32_t)(chance(70) ? rnd(4096) : edgy(32));
		s->lkey = (uint32_t)edgy(32);
	}
	cmd("post_send", IB_USER_VERBS_CMD_POST_SEND, body.data(), body.size(), &r, sizeof(r));
}

void fuzzer::post_recv()
{
	unsigned nwr = (unsigned)rnd(4), nsge = (unsigned)rnd(5);
	bool to_srq = chance(30);
	size_t hdr_len = to_srq ? sizeof(ib_uverbs_post_srq_recv) : sizeof(ib_uverbs_post_recv);
	std::vector<uint8_t> body(hdr_len + nwr * sizeof(ib_uverbs_recv_wr) +
				  nsge * sizeof(ib_uverbs_sge));
	ib_uverbs_post_recv_resp r = {};
	unsigned sges_left = nsge;

	// post_recv and post_srq_recv share their layout but for the handle.
	auto *c = reinterpret_cast<ib_uverbs_post_recv *>(body.data());
	c->qp_handle = to_srq ? srq.pick() : qp.pick();
	c->wr_count = chance(90) ? nwr : (uint32_t)edgy(32);
	c->sge_count = chance(90) ? nsge : (uint32_t)edgy(32);
	c->wqe_size = chance(90) ? sizeof(ib_uverbs_recv_wr) : (uint32_t)edgy(16);
	for (unsigned i = 0; i < nwr; i++) {
		auto *wr = reinterpret_cast<ib_uverbs_recv_wr *>(
			body.data() + hdr_len + i * sizeof(ib_uverbs_recv_wr));
		unsigned k = i + 1 == nwr ? sges_left : (unsigned)rnd(sges_left + 1);

		wr->wr_id = rng();
		wr->num_sge = chance(90) ? k : (uint32_t)edgy(32);
		sges_left -= k;
	}
	for (unsigned i = 0; i < nsge; i++) {
		auto *s = reinterpret_cast<ib_uverbs_sge *>(body.data() + hdr_len +
			nwr * sizeof(ib_uverbs_recv_wr) + i * sizeof(ib_uverbs_sge));

		s->addr = chance(70) ? (uintptr_t)mem.data() + rnd(mem.size()) : edgy(64);
		s->length = (uint32_t)(chance(70) ? rnd(4096) : edgy(32));
		s->lkey = (uint32_t)edgy(32);
	}
	if (to_srq)
		cmd("post_srq_recv", IB_USER_VERBS_CMD_POST_SRQ_RECV, body.data(),
		    body.size(), &r, sizeof(r));
	else
		cmd("post_recv", IB_USER_VERBS_CMD_POST_RECV, body.data(),
		    body.size(), &r, sizeof(r));
}

void fuzzer::create_srq()
{
	ib_uverbs_create_srq c = {};
	resp_buf<ib_uverbs_create_srq_resp, 64> r;

	c.user_handle = rng();
	c.pd_handle = pd.pick();
	c.max_wr = (uint32_t)(chance(80) ? 1 + rnd(128) : edgy(32));
	c.max_sge = (uint32_t)(chance(80) ? 1 + rnd(4) : edgy(32));
	c.srq_limit = (uint32_t)(chance(80) ? rnd(16) : edgy(32));
	if (!cmd("create_srq", IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), r.b, sizeof(r.b))) {
		srq.add(r.core().srq_handle);
		remember_rings(maps, r.drv(), 1);
	}
}

void fuzzer::modify_srq()
{
	ib_uverbs_modify_srq c = {};

	c.srq_handle = srq.pick();
	c.attr_mask = (uint32_t)(chance(80) ? rnd(4) : edgy(32));
	c.max_wr = (uint32_t)edgy(32);
	c.srq_limit = (uint32_t)(chance(60) ? rnd(64) : edgy(32));
	cmd("modify_srq", IB_USER_VERBS_CMD_MODIFY_SRQ, &c, sizeof(c), nullptr, 0);
}

void fuzzer::destroy_srq()
{
	ib_uverbs_destroy_srq c = {};
	ib_uverbs_destroy_srq_resp r = {};

	c.srq_handle = srq.pick();
	if (!cmd("destroy_srq", IB_USER_VERBS_CMD_DESTROY_SRQ, &c, sizeof(c), &r, sizeof(r)))
		srq.drop(c.srq_handle);
}

void fuzzer::create_ah()
{
	ib_uverbs_create_ah c = {};
	resp_buf<ib_uverbs_create_ah_resp, 32> r;
	bool sane = chance(50);

	c.user_handle = rng();
	c.pd_handle = pd.pick();
	c.attr.grh.dgid[10] = 0xff;
	c.attr.grh.dgid[11] = 0xff;
	c.attr.grh.dgid[12] = 10;
	c.attr.grh.dgid[13] = 77;
	c.attr.grh.dgid[15] = 2;
	c.attr.grh.sgid_index = (uint8_t)(sane ? gid_index : edgy(8));
	c.attr.grh.hop_limit = (uint8_t)(sane ? 64 : edgy(8));
	c.attr.grh.traffic_class = (uint8_t)edgy(8);
	c.attr.grh.flow_label = (uint32_t)edgy(32);
	c.attr.is_global = sane ? 1 : (uint8_t)rnd(3);
	c.attr.port_num = (uint8_t)(sane ? 1 : edgy(8));
	c.attr.sl = (uint8_t)edgy(8);
	c.attr.dlid = (uint16_t)edgy(16);
	if (!sane)
		for (auto &b : c.attr.grh.dgid)
			b = chance(70) ? b : (uint8_t)rng();
	if (!cmd("create_ah", IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(c), r.b, sizeof(r.b)))
		ah.add(r.core().ah_handle);
}

void fuzzer::destroy_ah()
{
	ib_uverbs_destroy_ah c = {};

	c.ah_handle = ah.pick();
	if (!cmd("destroy_ah", IB_USER_VERBS_CMD_DESTROY_AH, &c, sizeof(c), nullptr, 0))
		ah.drop(c.ah_handle);
}

void fuzzer::query_misc()
{
	if (chance(50)) {
		ib_uverbs_query_device c = {};
		ib_uverbs_query_device_resp r = {};

		cmd("query_device", IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof(c), &r, sizeof(r));
	} else {
		ib_uverbs_query_port c = {};
		ib_uverbs_query_port_resp r = {};

		c.port_num = (uint8_t)(chance(70) ? 1 : edgy(8));
		cmd("query_port", IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof(c), &r, sizeof(r));
	}
}

// mmap a ring the kernel offered (or a wrong offset or length), scribble
// on it, unmap. A refused mapping is fine; a crash or hang is not.
void fuzzer::ring_garbage()
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off, len;
	void *p;

	if (!maps.empty() && chance(85)) {
		const mapping_info &m = maps[rnd(maps.size())];

		off = m.offset;
		len = m.length;
		if (chance(15))
			len += page * (1 + rnd(4));
		if (chance(10))
			off += page;
	} else {
		off = edgy(48) & ~(uint64_t)(page - 1);
		len = page * (1 + rnd(8));
	}
	p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED) {
		maps_refused++;
		outcomes["mmap"][errno]++;
		return;
	}
	maps_ok++;
	outcomes["mmap"][0]++;
	// Header words (prod, cons, flags) and elements: garbage.
	auto *w = static_cast<uint32_t *>(p);
	size_t words = len / 4;

	for (int i = 0; i < 16; i++) {
		size_t at = chance(50) ? 16 * rnd(3) : rnd(words);

		w[at] = (uint32_t)edgy(32);
	}
	munmap(p, len);
	// Ring a doorbell (a POST_SEND without WRs) on some QP.
	ib_uverbs_post_send c = {};
	ib_uverbs_post_send_resp r = {};

	c.qp_handle = qp.pick();
	c.wqe_size = sizeof(ib_uverbs_send_wr);
	cmd("doorbell", IB_USER_VERBS_CMD_POST_SEND, &c, sizeof(c), &r, sizeof(r));
}

void fuzzer::step()
{
	switch (rnd(30)) {
	case 0: case 1: alloc_pd(); break;
	case 2: dealloc_pd(); break;
	case 3: case 4: reg_mr(); break;
	case 5: rereg_mr(); break;
	case 6: dereg_mr(); break;
	case 7: alloc_mw(); break;
	case 8: dealloc_mw(); break;
	case 9: case 10: create_cq(); break;
	case 11: resize_cq(); break;
	case 12: destroy_cq(); break;
	case 13: poll_cq(); break;
	case 14: notify_cq(); break;
	case 15: case 16: create_qp(); break;
	case 17: modify_qp_random(); break;
	case 18: case 19: modify_qp_guided(); break;
	case 20: query_qp(); break;
	case 21: destroy_qp(); break;
	case 22: case 23: post_send(); break;
	case 24: post_recv(); break;
	case 25: create_srq(); break;
	case 26: chance(50) ? modify_srq() : destroy_srq(); break;
	case 27: chance(60) ? create_ah() : destroy_ah(); break;
	case 28: query_misc(); break;
	default: ring_garbage(); break;
	}
}

// /dev/infiniband/uverbsN of DEV, from /sys/class/infiniband_verbs.
std::string uverbs_path(const char *dev)
{
	for (int i = 0; i < 64; i++) {
		char path[128], name[64] = {};
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/uverbs%d/ibdev", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
		if (!strcmp(name, dev))
			return "/dev/infiniband/uverbs" + std::to_string(i);
	}
	return "";
}

int get_context(int fd)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_get_context body;
	} c = {};
	uint8_t resp[256] = {};

	c.hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.body.response = (uintptr_t)resp;
	return write(fd, &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : errno;
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = "sroce0";
	unsigned long ops = 20000, seed = 1;
	fuzzer fz;
	std::string path;
	int opt, err;

	while ((opt = getopt(argc, argv, "d:n:s:g:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': ops = strtoul(optarg, nullptr, 0); break;
		case 's': seed = strtoul(optarg, nullptr, 0); break;
		case 'g': fz.gid_index = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s -d DEV [-n OPS] [-s SEED] [-g GID_INDEX]\n", argv[0]);
			return 2;
		}
	}
	rng.seed(seed);
	fz.mem.assign(1 << 20, 0x5a);
	path = uverbs_path(dev);
	if (!tap::check(!path.empty(), "%s has a uverbs node (%s)", dev, path.c_str()))
		return tap::done("sroce_uverbs_fuzz");
	fz.fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
	if (!tap::check(fz.fd >= 0, "open %s", path.c_str()))
		return tap::done("sroce_uverbs_fuzz");
	err = get_context(fz.fd);
	if (!tap::check(!err, "GET_CONTEXT (%s)", strerror(err)))
		return tap::done("sroce_uverbs_fuzz");

	for (unsigned long i = 0; i < ops; i++)
		fz.step();

	unsigned long ok = 0, failed = 0;
	for (auto &[name, hist] : fz.outcomes) {
		std::string line;

		for (auto &[e, n] : hist) {
			line += " " + std::string(e ? strerrorname_np(e) ? strerrorname_np(e) : "?" : "ok") +
				"=" + std::to_string(n);
			(e ? failed : ok) += n;
		}
		tap::diag("%-16s%s", name.c_str(), line.c_str());
	}
	tap::diag("seed %lu: %lu commands, %lu succeeded, %lu refused; %u QPs reached RTS; "
		  "%u ring mappings made, %u refused; live at the end: pd %zu cq %zu qp %zu "
		  "mr %zu srq %zu ah %zu mw %zu", seed, ok + failed, ok, failed, fz.rts,
		  fz.maps_ok, fz.maps_refused, fz.pd.live.size(), fz.cq.live.size(),
		  fz.qp.live.size(), fz.mr.live.size(), fz.srq.live.size(),
		  fz.ah.live.size(), fz.mw.live.size());
	tap::check(fz.unexpected == 0, "every refusal had a documented errno (%u did not)",
		   fz.unexpected);
	tap::check(ok >= ops / 10, "commands reached the driver: %lu of %lu succeeded", ok,
		   ok + failed);
	tap::check(fz.rts > 0, "QPs reached RTS and met the garbage (%u)", fz.rts);
	tap::check(fz.maps_ok > 0, "rings were mapped and scribbled on (%u)", fz.maps_ok);
	// Closing the file destroys whatever is left, in the kernel's order.
	tap::check(close(fz.fd) == 0, "close: the kernel cleans up what is left");
	return tap::done("sroce_uverbs_fuzz");
}
