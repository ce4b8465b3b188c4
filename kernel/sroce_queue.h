/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: the shared ring (SQ, RQ, SRQ, CQ), kernel side.
 *
 * Layout and index rules are in uapi/sroce-abi.h. The kernel keeps private
 * copies of both indices (q->prod, q->cons). The index it owns it only
 * writes; the index the other side owns it reads from the shared header
 * and accepts only when it is consistent with the private copies: it may
 * move forward from the value accepted last, and by at most what the ring
 * has room for, never backwards. So a corrupt header can make a queue look
 * broken, but it can neither send the kernel outside the ring nor hand it
 * a slot again that it already took (an element fetched, a completion
 * written and not yet consumed).
 *
 * Rings of kernel QPs, SRQs and CQs use the same code: there both sides
 * are the kernel and the checks simply always pass.
 *
 * Which private copy belongs to whom:
 *  - SQ, RQ, SRQ (the kernel consumes): prod and cons are the consumer
 *    side's. A kernel ULP that posts to them has its own pair, post_prod
 *    and post_cons (sroce_queue_post_*()), because it posts under another
 *    lock than the consumer's and at the same time.
 *  - CQ (the kernel produces): prod and cons are the producer's; a kernel
 *    consumer (ib_poll_cq) works on them under the same lock.
 *
 * Locking: none here. Each ring has one producer and one consumer context;
 * the owning object serialises each side (e.g. the QP's post lock for a
 * kernel SQ producer, its send lock for the SQ consumer).
 */
#ifndef SROCE_QUEUE_H
#define SROCE_QUEUE_H

#include <linux/log2.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "sroce-abi.h"

struct sroce_mmap_entry;

struct sroce_queue {
	struct sroce_ring_hdr *hdr;	/* vmalloc_user(), maybe user-mapped */
	u8 *data;			/* first element */
	u32 entries;			/* power of two */
	u32 stride_shift;		/* log2(bytes per element) */
	u32 prod;			/* private copies of the indices */
	u32 cons;
	u32 post_prod;			/* a kernel producer's (see above) */
	u32 post_cons;
	size_t size;			/* bytes mapped: header + elements */
	/* Set when user-mapped; the entry then owns the memory. */
	struct sroce_mmap_entry *mmap;
};

int sroce_queue_init(struct sroce_queue *q, u32 entries, u32 stride, gfp_t gfp);
void sroce_queue_free(struct sroce_queue *q);
int sroce_queue_map_user(struct sroce_queue *q, struct ib_ucontext *uctx,
			 struct sroce_ring_info *info);
size_t sroce_queue_bytes(u32 entries, u32 stride);
int sroce_queue_post_recv(struct sroce_queue *q, u32 max_sge,
			  const struct ib_recv_wr *wr);

static inline u32 sroce_queue_mask(const struct sroce_queue *q)
{
	return q->entries - 1;
}

static inline void *sroce_queue_elem(const struct sroce_queue *q, u32 index)
{
	return q->data + ((size_t)(index & sroce_queue_mask(q)) <<
			  q->stride_shift);
}

/* Elements waiting between the private cons and prod. */
static inline u32 sroce_queue_count(const struct sroce_queue *q)
{
	return q->prod - q->cons;
}

static inline bool sroce_queue_empty(const struct sroce_queue *q)
{
	return q->prod == q->cons;
}

static inline bool sroce_queue_full(const struct sroce_queue *q)
{
	return sroce_queue_count(q) >= q->entries;
}

/*
 * Consumer: pick up what the producer published. Returns the number of
 * elements available, or -EINVAL when the shared producer index is not
 * between the one accepted last and a full ring beyond the private
 * consumer index (a corrupt queue: the private copies stay as they were).
 */
static inline int sroce_queue_refresh_prod(struct sroce_queue *q)
{
	/* Pairs with the producer's release: elements before index. */
	u32 prod = smp_load_acquire(&q->hdr->prod);
	u32 avail = prod - q->cons;

	if (avail > q->entries || avail < q->prod - q->cons)
		return -EINVAL;
	q->prod = prod;
	return avail;
}

static inline void *sroce_queue_consumer_elem(const struct sroce_queue *q)
{
	return sroce_queue_elem(q, q->cons);
}

static inline void sroce_queue_consumer_advance(struct sroce_queue *q, u32 n)
{
	q->cons += n;
	/* Our reads of the elements happen before the producer reuses them. */
	smp_store_release(&q->hdr->cons, q->cons);
}

/*
 * Producer: pick up what the consumer released. Returns the free slots,
 * or -EINVAL when the shared consumer index is not between the one
 * accepted last and the private producer index.
 */
static inline int sroce_queue_refresh_cons(struct sroce_queue *q)
{
	/* Pairs with the consumer's release: its reads are done. */
	u32 cons = smp_load_acquire(&q->hdr->cons);
	u32 used = q->prod - cons;

	if (used > q->entries || used > q->prod - q->cons)
		return -EINVAL;
	q->cons = cons;
	return q->entries - used;
}

/*
 * A kernel producer of an SQ, RQ or SRQ: the free slots (or -EINVAL, as
 * sroce_queue_refresh_cons()), the slot to fill, and the publish.
 */
static inline int sroce_queue_post_room(struct sroce_queue *q)
{
	/* Pairs with the consumer's release: its reads are done. */
	u32 cons = smp_load_acquire(&q->hdr->cons);
	u32 used = q->post_prod - cons;

	if (used > q->entries || used > q->post_prod - q->post_cons)
		return -EINVAL;
	q->post_cons = cons;
	return q->entries - used;
}

static inline void *sroce_queue_post_elem(const struct sroce_queue *q)
{
	return sroce_queue_elem(q, q->post_prod);
}

static inline void sroce_queue_post_publish(struct sroce_queue *q, u32 n)
{
	q->post_prod += n;
	/* The elements are written before the consumer sees the index. */
	smp_store_release(&q->hdr->prod, q->post_prod);
}

/*
 * Every index starts over at the producer's, the ring empty: after a
 * reset, wherever userspace left it (an empty ring is valid at any index).
 * Nothing may produce into or consume from the ring meanwhile.
 */
static inline void sroce_queue_resync(struct sroce_queue *q)
{
	q->prod = READ_ONCE(q->hdr->prod);
	q->cons = q->prod;
	q->post_prod = q->prod;
	q->post_cons = q->prod;
	/* Nothing is consumed now: the ring is empty for the producer. */
	smp_store_release(&q->hdr->cons, q->cons);
}

static inline void *sroce_queue_producer_elem(const struct sroce_queue *q)
{
	return sroce_queue_elem(q, q->prod);
}

static inline void sroce_queue_producer_publish(struct sroce_queue *q, u32 n)
{
	q->prod += n;
	/* The elements are written before the consumer sees the index. */
	smp_store_release(&q->hdr->prod, q->prod);
}

/*
 * The flags word has several kernel writers (the requester's NEED_KICK,
 * the flush's ERROR), so it changes only through atomic read-modify-write.
 */
static inline void sroce_queue_set_flags(struct sroce_queue *q, u32 flags)
{
	if ((READ_ONCE(q->hdr->flags) & flags) != flags)
		atomic_or(flags, (atomic_t *)&q->hdr->flags);
}

static inline void sroce_queue_clear_flags(struct sroce_queue *q, u32 flags)
{
	if (READ_ONCE(q->hdr->flags) & flags)
		atomic_andnot(flags, (atomic_t *)&q->hdr->flags);
}

#endif /* SROCE_QUEUE_H */
