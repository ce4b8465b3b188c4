// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_objects - create and destroy verbs objects through libibverbs and
// check every errno the spec gives for bad arguments. Prints TAP.
//
//   sroce_objects -d sroce0 [-g GID_INDEX] [-n LOOPS] [-s cq,mr,mw,srq,ah]
//   (-s: only these sections; default all)
//
// Covers PDs, CQs (sizes, resize, notify, completion channels), MRs
// (access-flag rules, zero length, bad addresses, key rotation, rereg),
// memory windows (both types, max_mw), SRQs (sizes, limit, query) and AHs (RoCE v2 GIDs). QPs: sroce_qp. Each create/destroy loop runs LOOPS times (default
// 1000); the caller checks with "rdma resource" that nothing is left.
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include <infiniband/verbs.h>

#include "tap.hpp"
#include "verbs_util.hpp"

namespace {

// Expect a create call to fail with @want: returns true when it did.
template <typename T> bool fails_with(T *obj, int want, int got_errno)
{
	return !obj && got_errno == want;
}

void check_cq(ibv_context *ctx, const ibv_device_attr &da, long loops)
{
	long bad = 0;

	for (long i = 0; i < loops; i++) {
		ibv_cq *cq = ibv_create_cq(ctx, 1 + (i % 257), nullptr, nullptr, 0);
		if (!cq || ibv_destroy_cq(cq))
			bad++;
	}
	tap::check(bad == 0, "%ld x create/destroy CQ (1..257 entries): %ld failures", loops, bad);

	ibv_cq *cq = ibv_create_cq(ctx, 100, nullptr, nullptr, 0);
	tap::check(cq && cq->cqe >= 100, "CQ of 100 entries holds at least 100 (cqe %d)",
		   cq ? cq->cqe : -1);
	if (cq) {
		ibv_wc wc[4];
		tap::check(ibv_poll_cq(cq, 4, wc) == 0, "poll of an empty CQ returns 0");
		tap::check(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq(next)");
		tap::check(ibv_req_notify_cq(cq, 1) == 0, "req_notify_cq(solicited)");
		int r = ibv_resize_cq(cq, 1000);
		tap::check(r == 0 && cq->cqe >= 1000, "resize 100 -> 1000 (ret %d, cqe %d)", r, cq->cqe);
		tap::check(ibv_poll_cq(cq, 4, wc) == 0, "poll after resize returns 0");
		r = ibv_resize_cq(cq, 10);
		tap::check(r == 0 && cq->cqe >= 10, "resize 1000 -> 10 (ret %d, cqe %d)", r, cq->cqe);
		r = ibv_resize_cq(cq, da.max_cqe + 1);
		tap::check(r == EINVAL, "resize beyond max_cqe: EINVAL (got %d)", r);
		tap::check(ibv_destroy_cq(cq) == 0, "destroy CQ");
	}

	// libfabric's rxm sizes its MSG CQ as (rx + tx) x FI_UNIVERSE_SIZE:
	// (128 + 128) x 1024.  Hardware takes it (mlx5: 2^22 - 1 entries).
	cq = ibv_create_cq(ctx, 262144, nullptr, nullptr, 0);
	tap::check(cq && cq->cqe >= 262144, "CQ of 262144 entries, libfabric rxm's (cqe %d, errno %d)",
		   cq ? cq->cqe : -1, cq ? 0 : errno);
	if (cq)
		ibv_destroy_cq(cq);

	errno = 0;
	cq = ibv_create_cq(ctx, da.max_cqe + 1, nullptr, nullptr, 0);
	tap::check(fails_with(cq, EINVAL, errno), "CQ beyond max_cqe (%d): EINVAL (errno %d)",
		   da.max_cqe + 1, errno);
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(ctx, 0, nullptr, nullptr, 0);
	tap::check(fails_with(cq, EINVAL, errno), "CQ of 0 entries: EINVAL (errno %d)", errno);
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(ctx, 10, nullptr, nullptr, ctx->num_comp_vectors);
	tap::check(fails_with(cq, EINVAL, errno), "CQ on comp_vector %d (of %d): EINVAL (errno %d)",
		   ctx->num_comp_vectors, ctx->num_comp_vectors, errno);
	if (cq)
		ibv_destroy_cq(cq);

	ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 16, nullptr, ch, 0) : nullptr;
	tap::check(ch && cq, "CQ on a completion channel");
	if (cq) {
		tap::check(ibv_req_notify_cq(cq, 0) == 0, "arm the CQ");
		tap::check(ibv_destroy_cq(cq) == 0, "destroy it");
	}
	if (ch)
		tap::check(ibv_destroy_comp_channel(ch) == 0, "destroy the channel");
}

void check_mr(ibv_pd *pd, long loops)
{
	const size_t len = 1 << 20;
	char *buf = static_cast<char *>(aligned_alloc(4096, len));
	memset(buf, 0x5a, len);

	struct {
		int access;
		int want;	// 0 = success
		const char *what;
	} cases[] = {
		{0, 0, "no access (local read)"},
		{IBV_ACCESS_LOCAL_WRITE, 0, "LOCAL_WRITE"},
		{IBV_ACCESS_REMOTE_READ, 0, "REMOTE_READ"},
		{IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, "LOCAL_WRITE|REMOTE_WRITE"},
		{IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 0, "LOCAL_WRITE|REMOTE_ATOMIC"},
		{IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND, 0, "every access flag"},
		{IBV_ACCESS_REMOTE_WRITE, EINVAL, "REMOTE_WRITE without LOCAL_WRITE"},
		{IBV_ACCESS_REMOTE_ATOMIC, EINVAL, "REMOTE_ATOMIC without LOCAL_WRITE"},
	};
	for (auto &c : cases) {
		errno = 0;
		ibv_mr *mr = ibv_reg_mr(pd, buf, len, c.access);
		if (!c.want)
			tap::check(mr && mr->lkey == mr->rkey && mr->length == len,
				   "reg_mr %s (errno %d)", c.what, mr ? 0 : errno);
		else
			tap::check(fails_with(mr, c.want, errno), "reg_mr %s: %s (errno %d)", c.what,
				   strerror(c.want), errno);
		if (mr)
			ibv_dereg_mr(mr);
	}

	errno = 0;
	ibv_mr *mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	tap::check(fails_with(mr, EINVAL, errno), "reg_mr of 0 bytes: EINVAL (errno %d)", errno);
	if (mr)
		ibv_dereg_mr(mr);

	void *hole = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 1 << 16);
	errno = 0;
	mr = ibv_reg_mr(pd, hole, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	tap::check(fails_with(mr, EFAULT, errno), "reg_mr of unmapped memory: EFAULT (errno %d)",
		   errno);
	if (mr)
		ibv_dereg_mr(mr);

	// The same buffer registered again gets a different key.
	ibv_mr *a = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	uint32_t key_a = a ? a->lkey : 0;
	if (a)
		ibv_dereg_mr(a);
	ibv_mr *b = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	tap::check(a && b && b->lkey != key_a, "re-registration gets a new key (0x%x -> 0x%x)",
		   key_a, b ? b->lkey : 0);

	// Rereg changes the region in place: the keys stay (a peer holding
	// the rkey goes on using it), as on hardware; a failed one changes
	// nothing.
	if (b) {
		const uint32_t before = b->lkey;
		int r = ibv_rereg_mr(b, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		tap::check(r == 0 && b->lkey == before && b->rkey == before,
			   "rereg_mr CHANGE_ACCESS keeps the keys (ret %d, 0x%x -> 0x%x/0x%x)", r,
			   before, b->lkey, b->rkey);
		r = ibv_rereg_mr(b, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf + 4096, 8192, 0);
		tap::check(r == 0 && b->length == 8192 && b->addr == buf + 4096 &&
				   b->lkey == before && b->rkey == before,
			   "rereg_mr CHANGE_TRANSLATION keeps the keys (ret %d, 0x%x -> 0x%x/0x%x)",
			   r, before, b->lkey, b->rkey);
		r = ibv_rereg_mr(b, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
				 IBV_ACCESS_REMOTE_WRITE);
		tap::check(r != 0 && b->lkey == before && b->length == 8192,
			   "rereg_mr to REMOTE_WRITE without LOCAL_WRITE fails, MR unchanged "
			   "(ret %d)", r);
		tap::check(ibv_dereg_mr(b) == 0, "dereg_mr after rereg");
	}

	long bad = 0;
	for (long i = 0; i < loops; i++) {
		size_t l = 1 + (i * 4099) % len;
		ibv_mr *m = ibv_reg_mr(pd, buf + (i % 4096) % (len - l + 1), l,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!m || ibv_dereg_mr(m))
			bad++;
	}
	tap::check(bad == 0, "%ld x reg/dereg MR (odd sizes and offsets): %ld failures", loops, bad);
	free(buf);
}

// Memory windows: both types in a loop, a bad type, and max_mw enforced
// (what the transport does with them: sroce_rc_errors -o mw).
void check_mw(ibv_pd *pd, const ibv_device_attr &da, long loops)
{
	long bad = 0;
	for (long i = 0; i < loops; i++) {
		ibv_mw *m = ibv_alloc_mw(pd, i & 1 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		if (!m || ibv_dealloc_mw(m))
			bad++;
	}
	tap::check(bad == 0, "%ld x alloc/dealloc MW (types 1 and 2): %ld failures", loops, bad);
	errno = 0;
	ibv_mw *m = ibv_alloc_mw(pd, static_cast<ibv_mw_type>(3));
	tap::check(fails_with(m, EINVAL, errno), "alloc_mw of type 3: EINVAL (%s)",
		   strerror(errno));
	if (m)
		ibv_dealloc_mw(m);

	std::vector<ibv_mw *> all;
	all.reserve(static_cast<size_t>(da.max_mw) + 1);
	int err = 0;
	while (all.size() <= static_cast<size_t>(da.max_mw)) {
		m = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		if (!m) {
			err = errno;
			break;
		}
		all.push_back(m);
	}
	tap::check(da.max_mw > 0 && all.size() == static_cast<size_t>(da.max_mw) &&
			   err == ENOMEM,
		   "max_mw %d enforced: %zu windows, then %s", da.max_mw, all.size(),
		   strerror(err));
	long undone = 0;
	for (ibv_mw *w : all)
		undone += ibv_dealloc_mw(w) != 0;
	tap::check(undone == 0, "dealloc all %zu windows: %ld failures", all.size(), undone);
}

void check_srq(ibv_pd *pd, const ibv_device_attr &da, long loops)
{
	long bad = 0;
	for (long i = 0; i < loops; i++) {
		ibv_srq_init_attr a = {};
		a.attr.max_wr = 1 + i % 500;
		a.attr.max_sge = 1 + i % 4;
		ibv_srq *srq = ibv_create_srq(pd, &a);
		if (!srq || ibv_destroy_srq(srq))
			bad++;
	}
	tap::check(bad == 0, "%ld x create/destroy SRQ: %ld failures", loops, bad);

	ibv_srq_init_attr a = {};
	a.attr.max_wr = 100;
	a.attr.max_sge = 2;
	ibv_srq *srq = ibv_create_srq(pd, &a);
	if (tap::check(srq && a.attr.max_wr >= 100 && a.attr.max_sge >= 2,
		       "SRQ of 100 WRs, 2 SGEs (granted %u, %u)", a.attr.max_wr, a.attr.max_sge)) {
		ibv_srq_attr sa = {};
		sa.srq_limit = 10;
		tap::check(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "arm srq_limit 10");
		sa = {};
		tap::check(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 10 && sa.max_wr >= 100,
			   "query_srq: limit %u, max_wr %u", sa.srq_limit, sa.max_wr);
		sa.max_wr = 1000;
		tap::check(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EINVAL,
			   "resizing an SRQ: EINVAL (not offered)");
		sa.srq_limit = 100000;
		tap::check(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == EINVAL,
			   "srq_limit beyond max_wr: EINVAL");
		tap::check(ibv_destroy_srq(srq) == 0, "destroy SRQ");
	}
	a = {};
	a.attr.max_wr = da.max_srq_wr + 1;
	a.attr.max_sge = 1;
	errno = 0;
	srq = ibv_create_srq(pd, &a);
	tap::check(fails_with(srq, EINVAL, errno), "SRQ beyond max_srq_wr: EINVAL (errno %d)", errno);
	if (srq)
		ibv_destroy_srq(srq);
	a = {};
	a.attr.max_wr = 16;
	a.attr.max_sge = da.max_srq_sge + 1;
	errno = 0;
	srq = ibv_create_srq(pd, &a);
	tap::check(fails_with(srq, EINVAL, errno), "SRQ beyond max_srq_sge: EINVAL (errno %d)",
		   errno);
	if (srq)
		ibv_destroy_srq(srq);
}

void check_ah(ibv_context *ctx, ibv_pd *pd, int gid_index, long loops)
{
	ibv_ah_attr a = {};
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = gid_index;
	a.grh.hop_limit = 64;
	ibv_query_gid(ctx, 1, gid_index, &a.grh.dgid);

	long bad = 0;
	for (long i = 0; i < loops; i++) {
		ibv_ah *ah = ibv_create_ah(pd, &a);
		if (!ah || ibv_destroy_ah(ah))
			bad++;
	}
	tap::check(bad == 0, "%ld x create/destroy AH (RoCE v2, GID %d): %ld failures", loops,
		   gid_index, bad);

	ibv_ah_attr no_grh = a;
	no_grh.is_global = 0;
	errno = 0;
	ibv_ah *ah = ibv_create_ah(pd, &no_grh);
	tap::check(!ah, "AH without a GRH on RoCE fails (errno %d)", errno);
	if (ah)
		ibv_destroy_ah(ah);
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = nullptr;
	long loops = 1000;
	int gid_index = 1;
	const char *sections = "cq,mr,mw,srq,ah";
	int c;

	while ((c = getopt(argc, argv, "d:g:n:s:")) != -1) {
		if (c == 's')
			sections = optarg;
		else if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			gid_index = atoi(optarg);
		else if (c == 'n')
			loops = strtol(optarg, nullptr, 0);
		else
			return 2;
	}
	if (!dev) {
		fprintf(stderr, "usage: sroce_objects -d DEV [-g GID_INDEX] [-n LOOPS] [-s SECTIONS]\n");
		return 2;
	}

	ibv_context *ctx = open_device_by_name(dev);
	if (!tap::check(ctx, "open %s", dev))
		return tap::done("sroce_objects");
	ibv_device_attr da = {};
	tap::check(ibv_query_device(ctx, &da) == 0, "query_device");
	ibv_pd *pd = ibv_alloc_pd(ctx);
	if (tap::check(pd, "alloc_pd")) {
		auto want = [&](const char *name) { return strstr(sections, name) != nullptr; };
		if (want("cq"))
			check_cq(ctx, da, loops);
		if (want("mr"))
			check_mr(pd, loops);
		if (want("mw"))
			check_mw(pd, da, loops);
		if (want("srq"))
			check_srq(pd, da, loops);
		if (want("ah"))
			check_ah(ctx, pd, gid_index, loops);
		tap::check(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	}
	tap::check(ibv_close_device(ctx) == 0, "close device");
	return tap::done("sroce_objects");
}
