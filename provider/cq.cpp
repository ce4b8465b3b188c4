// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// cq.cpp - completion queues: create (ibv_create_cq, ibv_create_cq_ex),
// destroy, resize, arm, and the two ways of polling the ring the kernel
// fills - ibv_poll_cq and the ibv_cq_ex start/next/end_poll iterator.
//
// The poll paths make no system call and allocate nothing: they take the
// CQ's spinlock, read CQEs through consumer_ring (ring.hpp) and
// cqe.hpp's readers, and release the slots with one store of the
// consumer index.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <type_traits>

#include "cqe.hpp"
#include "ring.hpp"
#include "sroce.hpp"

namespace sroce {

static_assert(std::is_standard_layout_v<cq>,
	      "struct cq is reached from ibv_cq/ibv_cq_ex by a cast");

const struct sroce_cqe kNoCqe = {};

// ---- the ring mapping --------------------------------------------------------

// Map and attach the ring a create/resize response describes.  The ring
// must hold at least min_entries CQEs (what was asked for, and what
// libibverbs now reports in ibv_cq.cqe).  Returns 0 or an errno value;
// on failure nothing stays mapped and the ring is left detached.
static int attach_ring(cq *c, struct ibv_context *ibctx,
		       const struct sroce_ring_info &info, uint64_t min_entries)
{
	const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

	c->ring = consumer_ring();
	c->map = nullptr;
	c->map_len = 0;

	// Everything mmap() and the ring will use, checked before use: a
	// kernel that describes a ring we cannot index safely gets EPROTO.
	if (!ring_geometry_ok(info.entries, info.stride, info.mmap_length,
			      sizeof(struct sroce_cqe)) ||
	    info.entries < min_entries || info.mmap_length > SIZE_MAX ||
	    info.mmap_offset % page != 0 || info.mmap_offset > INT64_MAX)
		return EPROTO;

	void *map = mmap(nullptr, static_cast<size_t>(info.mmap_length),
			 PROT_READ | PROT_WRITE, MAP_SHARED, ibctx->cmd_fd,
			 static_cast<off_t>(info.mmap_offset));
	if (map == MAP_FAILED)
		return errno ? errno : ENOMEM;
	if (!c->ring.attach(map, info.mmap_length, info.entries, info.stride)) {
		munmap(map, static_cast<size_t>(info.mmap_length));
		return EPROTO;
	}
	c->map = map;
	c->map_len = static_cast<size_t>(info.mmap_length);
	return 0;
}

static cq *alloc_cq()
{
	void *mem = calloc(1, sizeof(cq));
	if (!mem)
		return nullptr;
	cq *c = new (mem) cq();
	c->cur = &kNoCqe;
	pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
	return c;
}

static void free_cq(cq *c)
{
	pthread_spin_destroy(&c->lock);
	c->~cq();
	free(c);
}

// After the kernel created the CQ: map its ring, or undo the creation.
static bool finish_create(cq *c, struct ibv_context *ibctx,
			  const struct sroce_create_cq_resp &drv, int cqe)
{
	const int64_t want = cqe > c->vcq.cq.cqe ? cqe : c->vcq.cq.cqe;
	int ret = attach_ring(c, ibctx, drv.ring,
			      want > 0 ? static_cast<uint64_t>(want) : 0);
	if (ret) {
		__verbs_log(verbs_get_ctx(ibctx), VERBS_LOG_ERR,
			    "sroce: %s: cannot map the ring of CQ %u: %s\n",
			    ibctx->device->name, drv.cqn, strerror(ret));
		ibv_cmd_destroy_cq(&c->vcq.cq);
		free_cq(c);
		errno = ret;
		return false;
	}
	c->cqn = drv.cqn;
	return true;
}

// ---- ibv_poll_cq -----------------------------------------------------------------

int poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	cq *c = to_scq(ibcq);

	pthread_spin_lock(&c->lock);
	if (__builtin_expect(!c->ring.attached(), 0)) {
		// Only after a resize whose new ring could not be mapped.
		pthread_spin_unlock(&c->lock);
		return -1;
	}
	uint32_t n = c->ring.available();
	if (num_entries <= 0)
		n = 0;
	else if (n > static_cast<uint32_t>(num_entries))
		n = static_cast<uint32_t>(num_entries);
	for (uint32_t i = 0; i < n; i++)
		decode_cqe(static_cast<const struct sroce_cqe *>(c->ring.elem(i)),
			   &wc[i]);
	if (n)
		c->ring.consume(n);
	pthread_spin_unlock(&c->lock);
	return static_cast<int>(n);
}

// ---- the ibv_cq_ex iterator ---------------------------------------------------
//
// ibv_create_cq_ex(3): start_poll returns 0 with a current completion, or
// an error (ENOENT: CQ empty) after which end_poll must not be called - so
// the lock is only kept on success.  next_poll returns 0 or an error
// (ENOENT) and end_poll is called either way, so the lock stays held
// until end_poll.  The current CQE is consumed when the iterator moves
// past it: by next_poll, or by end_poll if it is still current.  (rxe in
// rdma-core 44 unlocks in next_poll on ENOENT and again in end_poll, and
// advances past prod in end_poll; here a consumed CQE is never current,
// so nothing is consumed twice or unlocked twice.)
//
// cq::poller names the thread whose batch holds the lock.  next_poll and
// end_poll from any other thread - or from this one after its start_poll
// failed - find no batch of their own: next_poll returns EINVAL, end_poll
// returns, neither touches the lock, the ring or the current CQE.  So the
// forbidden end_poll after a failed start_poll is harmless too, even
// while another thread is polling.

// pthread_self() is never 0, so 0 means "no batch".
static_assert(std::is_integral_v<pthread_t> || std::is_pointer_v<pthread_t>,
	      "cq::poller is compared and stored as a scalar");

static inline pthread_t poller_of(const cq *c)
{
	return std::atomic_ref<pthread_t>(const_cast<cq *>(c)->poller)
		.load(std::memory_order_relaxed);
}

static inline void set_poller(cq *c, pthread_t t)
{
	std::atomic_ref<pthread_t>(c->poller).store(t, std::memory_order_relaxed);
}

// Does the calling thread hold this CQ's batch?
static inline bool in_own_batch(const cq *c)
{
	return pthread_equal(poller_of(c), pthread_self());
}

static inline void set_current(cq *c)
{
	const auto *e = static_cast<const struct sroce_cqe *>(c->ring.elem(0));
	c->cur = e;
	c->vcq.cq_ex.wr_id = cqe_wr_id(e);
	c->vcq.cq_ex.status = cqe_status(e);
}

static inline void consume_current(cq *c)
{
	if (c->cur != &kNoCqe) {
		c->ring.consume(1);
		c->cur = &kNoCqe;
	}
}

static int cq_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	cq *c = to_scq(ibcq);

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&c->lock);
	if (__builtin_expect(!c->ring.attached(), 0)) {
		pthread_spin_unlock(&c->lock);
		return EIO;
	}
	if (!c->ring.available()) {
		pthread_spin_unlock(&c->lock);
		return ENOENT;
	}
	set_current(c);
	set_poller(c, pthread_self());
	return 0;
}

static int cq_next_poll(struct ibv_cq_ex *ibcq)
{
	cq *c = to_scq(ibcq);

	if (__builtin_expect(!in_own_batch(c), 0))
		return EINVAL;
	consume_current(c);
	if (!c->ring.available())
		return ENOENT;
	set_current(c);
	return 0;
}

static void cq_end_poll(struct ibv_cq_ex *ibcq)
{
	cq *c = to_scq(ibcq);

	if (__builtin_expect(!in_own_batch(c), 0))
		return;
	consume_current(c);
	set_poller(c, pthread_t{});
	pthread_spin_unlock(&c->lock);
}

static enum ibv_wc_opcode cq_read_opcode(struct ibv_cq_ex *ibcq)
{
	return cqe_opcode(to_scq(ibcq)->cur);
}

static uint32_t cq_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return cqe_vendor_err(to_scq(ibcq)->cur);
}

static uint32_t cq_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return cqe_byte_len(to_scq(ibcq)->cur);
}

// Also ibv_wc_read_invalidated_rkey(): the same union, raw.
static __be32 cq_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return cqe_imm_data(to_scq(ibcq)->cur);
}

static uint32_t cq_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return cqe_qp_num(to_scq(ibcq)->cur);
}

static uint32_t cq_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return cqe_src_qp(to_scq(ibcq)->cur);
}

static unsigned int cq_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return cqe_wc_flags(to_scq(ibcq)->cur);
}

static uint32_t cq_read_slid(struct ibv_cq_ex *ibcq)
{
	return cqe_slid(to_scq(ibcq)->cur);
}

static uint8_t cq_read_sl(struct ibv_cq_ex *ibcq)
{
	return cqe_sl(to_scq(ibcq)->cur);
}

static uint8_t cq_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return cqe_dlid_path_bits(to_scq(ibcq)->cur);
}

// ---- create / destroy / resize / arm -------------------------------------------

struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel, int comp_vector)
{
	cq *c = alloc_cq();
	if (!c)
		return nullptr;

	struct ibv_create_cq cmd = {};
	create_cq_resp resp = {};
	int ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector,
				    &c->vcq.cq, &cmd, sizeof(cmd), resp.core(),
				    sizeof(resp));
	if (ret) {
		free_cq(c);
		errno = ret;
		return nullptr;
	}
	if (!finish_create(c, ibctx, resp.drv, cqe))
		return nullptr;
	return &c->vcq.cq;
}

struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr)
{
	// No parent domains, no completion timestamps, CVLAN, flow tags or
	// tag matching, and the kernel does not take IGNORE_OVERRUN.
	// SINGLE_THREADED is only a hint: the lock stays.
	if ((attr->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS}) ||
	    (attr->wc_flags & ~kSupportedWcFlags) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED}))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}

	cq *c = alloc_cq();
	if (!c)
		return nullptr;

	struct ibv_create_cq_ex cmd = {};
	create_cq_ex_resp resp = {};
	int ret = sroce_cmd_create_cq_ex(ibctx, attr, &c->vcq, &cmd, sizeof(cmd),
				       resp.core(), sizeof(resp), 0);
	if (ret) {
		free_cq(c);
		errno = ret;
		return nullptr;
	}
	if (!finish_create(c, ibctx, resp.drv, attr->cqe))
		return nullptr;

	// Every reader a CQE can answer is installed, asked for or not.
	struct ibv_cq_ex *ex = &c->vcq.cq_ex;
	ex->start_poll = cq_start_poll;
	ex->next_poll = cq_next_poll;
	ex->end_poll = cq_end_poll;
	ex->read_opcode = cq_read_opcode;
	ex->read_vendor_err = cq_read_vendor_err;
	ex->read_wc_flags = cq_read_wc_flags;
	ex->read_byte_len = cq_read_byte_len;
	ex->read_imm_data = cq_read_imm_data;
	ex->read_qp_num = cq_read_qp_num;
	ex->read_src_qp = cq_read_src_qp;
	ex->read_slid = cq_read_slid;
	ex->read_sl = cq_read_sl;
	ex->read_dlid_path_bits = cq_read_dlid_path_bits;
	return ex;
}

int destroy_cq(struct ibv_cq *ibcq)
{
	cq *c = to_scq(ibcq);

	int ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	if (c->map)
		munmap(c->map, c->map_len);
	free_cq(c);
	return 0;
}

// Arming goes through the kernel: REQ_NOTIFY_CQ on the command fd.
int req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

// The kernel moves the unpolled CQEs (from our consumer index on) to the
// start of a new ring and answers with its mapping.  The lock is held
// across the command so that no poller consumes from the old ring after
// the kernel read our index, and until the new ring is attached.  If the
// command fails the old ring stays; if the new ring cannot be mapped the
// CQ is left without one (poll_cq returns -1, start_poll EIO).
int resize_cq(struct ibv_cq *ibcq, int cqe)
{
	cq *c = to_scq(ibcq);
	struct ibv_resize_cq cmd = {};
	resize_cq_resp resp = {};

	pthread_spin_lock(&c->lock);
	int ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), resp.core(),
				    sizeof(resp));
	if (ret) {
		pthread_spin_unlock(&c->lock);
		return ret;
	}

	void *old_map = c->map;
	const size_t old_len = c->map_len;
	const int64_t want = cqe > ibcq->cqe ? cqe : ibcq->cqe;
	ret = attach_ring(c, ibcq->context, resp.drv.ring,
			  want > 0 ? static_cast<uint64_t>(want) : 0);
	if (old_map)
		munmap(old_map, old_len);
	pthread_spin_unlock(&c->lock);

	if (ret)
		__verbs_log(verbs_get_ctx(ibcq->context), VERBS_LOG_ERR,
			    "sroce: %s: cannot map the resized ring of CQ %u: %s\n",
			    ibcq->context->device->name, c->cqn, strerror(ret));
	return ret;
}

} // namespace sroce
