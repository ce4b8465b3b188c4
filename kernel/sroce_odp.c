// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: on-demand paging (IB_ACCESS_ON_DEMAND MRs).
 *
 * Nothing is pinned. ib_core's ODP umem tracks the range with an
 * mmu_interval_notifier and faults pages in through hmm_range_fault();
 * sroce keeps its own page table beside it, one entry per page: the
 * struct page and whether it may be written, or nothing. The data path
 * (sroce_mr.c) reads an entry and copies under odp->lock, an irqsave
 * spinlock (the completer places with interrupts off);
 * the notifier's invalidate clears entries under the same lock before it
 * returns, so no byte is read from or written to a page the process no
 * longer maps there.
 *
 * A miss never sleeps where it happens (often a softirq): the caller gets
 * -EAGAIN and a fault request goes to sroce_odp_wq, which faults the range
 * in process context and then, if asked, runs the requester of the QP
 * that waits for it. The responder answers the packet with an RNR NAK
 * meanwhile, as RoCE hardware does, and the peer resends it. A fault that
 * fails (the range is no longer mapped, or is read-only and the access
 * writes) leaves a one-shot BAD mark on the missing pages, so the access
 * that asked for it fails (-EFAULT) instead of missing for ever. An access
 * that missed is redone, even when the pages are back by the time it asks
 * (sroce_odp_refault()): it stopped at the miss.
 *
 * Implicit ODP (ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND)): the MR covers
 * the whole address space; its root umem holds only the mm. Each 2 MiB
 * of it that an access touches gets a child (ib_umem_odp_alloc_child(),
 * its own notifier and page table), created by the fault that first
 * needs it, only where the process has a mapping, and kept until the MR
 * goes. The data path finds a child in odp->children under RCU, which it
 * holds until it unmaps. A fault where nothing is mapped leaves the
 * root's one-shot BAD range instead.
 *
 * A dma-buf MR (sroce_dmabuf.c) keeps a table of this kind too, filled
 * from the exporter's mapping: its faults map the buffer, and the
 * exporter's move_notify, not a notifier, clears it.
 *
 * Locking: umem_odp->umem_mutex (ib_core's: it serialises faults and
 * invalidations) is taken before odp->lock; the data path takes only
 * odp->lock (and RCU for a child). children_lock (a mutex) serialises
 * the creation and removal of children. A fault request holds a
 * reference on its MR and, when it kicks one, on its QP.
 */

#include <linux/hmm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "sroce.h"
#include "sroce_trace.h"

/* An implicit MR's children: 2 MiB each. */
#define SROCE_ODP_CHILD_SHIFT	21
#define SROCE_ODP_CHILD_SIZE	(1ULL << SROCE_ODP_CHILD_SHIFT)

/* Fault requests in flight per MR: more misses wait for those. */
#define SROCE_ODP_MAX_PENDING	16
/* Pages one map_dma_and_lock call faults with the mutex held. */
#define SROCE_ODP_CHUNK		(SZ_1M)

static struct workqueue_struct *sroce_odp_wq;

struct sroce_odp_fault {
	struct work_struct work;
	struct sroce_mr *mr;		/* a reference */
	struct sroce_qp *qp;		/* a reference, or NULL */
	enum sroce_odp_kick kick;	/* what of @qp runs after */
	u64 iova;
	u64 len;
	bool write;
};

static unsigned long sroce_odp_index(const struct sroce_odp *odp, u64 va)
{
	return (va - odp->start) >> PAGE_SHIFT;
}

/* Clear the entries of user range [start, end): under odp->lock. */
static void sroce_odp_clear(struct sroce_odp *odp, u64 start, u64 end)
{
	unsigned long i = sroce_odp_index(odp, start);
	unsigned long last = sroce_odp_index(odp, end - 1);

	for (; i <= last; i++)
		odp->map[i] = 0;
}

static bool sroce_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *umem_odp =
		container_of(mni, struct ib_umem_odp, notifier);
	struct sroce_odp *odp = umem_odp->private;
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;

	mutex_lock(&umem_odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(umem_odp), range->start);
	end = min_t(u64, ib_umem_end(umem_odp), range->end);
	/* private is set under the mutex: NULL means nothing is mapped yet. */
	if (odp && start < end) {
		spin_lock_irq(&odp->lock);
		sroce_odp_clear(odp, start, end);
		spin_unlock_irq(&odp->lock);
		sroce_count(odp->sdev, SROCE_CNT_ODP_INVALIDATIONS, 1);
	}
	if (start < end)
		ib_umem_odp_unmap_dma_pages(umem_odp, start, end);
	mutex_unlock(&umem_odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops sroce_odp_ops = {
	.invalidate = sroce_odp_invalidate,
};

/*
 * A page table for @umem_odp (an explicit MR's umem or a child's), made
 * its private under the umem's mutex (the notifier may run already).
 * On failure @umem_odp is released.
 */
static struct sroce_odp *sroce_odp_table(struct sroce_dev *sdev,
					 struct ib_umem_odp *umem_odp)
{
	struct sroce_odp *odp = kzalloc(sizeof(*odp), GFP_KERNEL_ACCOUNT);
	size_t npages = ib_umem_odp_num_pages(umem_odp);

	if (odp)
		odp->map = kvcalloc(npages, sizeof(*odp->map),
				    GFP_KERNEL_ACCOUNT);
	if (!odp || !odp->map) {
		kfree(odp);
		ib_umem_odp_release(umem_odp);
		return NULL;
	}
	spin_lock_init(&odp->lock);
	odp->sdev = sdev;
	odp->umem = umem_odp;
	odp->start = ib_umem_start(umem_odp);
	odp->npages = npages;
	mutex_lock(&umem_odp->umem_mutex);
	umem_odp->private = odp;
	mutex_unlock(&umem_odp->umem_mutex);
	return odp;
}

/* Unmap, remove the notifier, free; nobody uses @odp any more. */
static void sroce_odp_table_free(struct sroce_odp *odp)
{
	ib_umem_odp_release(odp->umem);
	kvfree(odp->map);
	kfree(odp);
}

/* The whole address space: a root that holds the mm, children later. */
static struct sroce_odp *sroce_odp_implicit(struct sroce_dev *sdev,
					    int access)
{
	struct ib_umem_odp *root;
	struct sroce_odp *odp;

	root = ib_umem_odp_alloc_implicit(&sdev->ibdev, access);
	if (IS_ERR(root))
		return ERR_CAST(root);
	odp = kzalloc(sizeof(*odp), GFP_KERNEL_ACCOUNT);
	if (!odp) {
		ib_umem_odp_release(root);
		return ERR_PTR(-ENOMEM);
	}
	spin_lock_init(&odp->lock);
	odp->sdev = sdev;
	odp->umem = root;
	odp->implicit = true;
	xa_init(&odp->children);
	mutex_init(&odp->children_lock);
	return odp;
}

/**
 * sroce_odp_init - make @mr an ODP MR over user range [@start, +@length),
 *	or (@start 0, @length U64_MAX) over the whole address space
 * @mr: a new USER MR, not yet published
 * @ibdev: the device
 * @start: user address of byte 0
 * @length: bytes
 * @access: IB_ACCESS_*, ON_DEMAND among them
 *
 * Return: 0 or a negative errno.
 */
int sroce_odp_init(struct sroce_mr *mr, struct ib_device *ibdev, u64 start,
		   u64 length, int access)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct ib_umem_odp *umem_odp;
	struct sroce_odp *odp;

	if (!start && length == U64_MAX) {
		odp = sroce_odp_implicit(sdev, access);
		if (IS_ERR(odp))
			return PTR_ERR(odp);
	} else {
		umem_odp = ib_umem_odp_get(ibdev, start, length, access,
					   &sroce_odp_ops);
		if (IS_ERR(umem_odp))
			return PTR_ERR(umem_odp);
		odp = sroce_odp_table(sdev, umem_odp);
		if (!odp)
			return -ENOMEM;
		mr->offset = start - odp->start;
	}
	mr->odp = odp;
	mr->umem = &odp->umem->umem;
	atomic_inc(&sdev->odp_mrs);
	return 0;
}

/* After the data path and every fault request let go of @mr. */
void sroce_odp_release(struct sroce_mr *mr)
{
	struct sroce_odp *odp = mr->odp, *child;
	unsigned long i;

	if (!odp)
		return;
	atomic_dec(&odp->sdev->odp_mrs);
	mr->umem = NULL;
	mr->odp = NULL;
	if (odp->attach) {
		sroce_dmabuf_release(odp);
		return;
	}
	if (!odp->implicit) {
		sroce_odp_table_free(odp);
		return;
	}
	xa_for_each(&odp->children, i, child)
		sroce_odp_table_free(child);
	xa_destroy(&odp->children);
	ib_umem_odp_release(odp->umem);
	kfree(odp);
}

/* Entries of @odp's own table that are present, read unlocked. */
static unsigned long sroce_odp_table_present(const struct sroce_odp *odp)
{
	unsigned long i, n = 0;

	for (i = 0; i < odp->npages; i++) {
		if (READ_ONCE(odp->map[i]) & SROCE_ODP_VALID)
			n++;
		if (!(i & 0xffff))
			cond_resched();
	}
	return n;
}

/**
 * sroce_odp_present - pages of an ODP (or dma-buf) MR that are present
 * @odp: the MR's table; its MR held by the caller (resource details)
 *
 * A snapshot for "rdma resource show mr -dd": faults and invalidations
 * may change it while it is counted. Process context.
 *
 * Return: the number of pages, over all children of an implicit MR.
 */
unsigned long sroce_odp_present(struct sroce_odp *odp)
{
	struct sroce_odp *child;
	unsigned long i, n = 0;

	if (!odp->implicit)
		return sroce_odp_table_present(odp);
	/* Children are only added until the MR goes: RCU-safe to walk. */
	xa_for_each(&odp->children, i, child)
		n += sroce_odp_table_present(child);
	return n;
}

/* Does the owner of implicit @odp map anything at @va? */
static bool sroce_odp_mapped(struct sroce_odp *odp, u64 va)
{
	struct mm_struct *mm = odp->umem->umem.owning_mm;
	bool mapped;

	if (va >= TASK_SIZE_MAX || !mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	mapped = vma_lookup(mm, va);
	mmap_read_unlock(mm);
	mmput(mm);
	return mapped;
}

/*
 * The child of implicit @odp for user address @va, made if there is none
 * (process context): only where something is mapped, so that a peer's
 * rkey cannot make children of the whole address space.
 */
static struct sroce_odp *sroce_odp_child(struct sroce_odp *odp, u64 va)
{
	unsigned long idx = va >> SROCE_ODP_CHILD_SHIFT;
	struct ib_umem_odp *umem_odp;
	struct sroce_odp *child;

	child = xa_load(&odp->children, idx);
	if (child)
		return child;
	if (!sroce_odp_mapped(odp, va))
		return ERR_PTR(-EFAULT);
	mutex_lock(&odp->children_lock);
	child = xa_load(&odp->children, idx);
	if (child)
		goto out;
	umem_odp = ib_umem_odp_alloc_child(odp->umem,
					   va & ~(SROCE_ODP_CHILD_SIZE - 1),
					   SROCE_ODP_CHILD_SIZE,
					   &sroce_odp_ops);
	if (IS_ERR(umem_odp)) {
		child = ERR_CAST(umem_odp);
		goto out;
	}
	child = sroce_odp_table(odp->sdev, umem_odp);
	if (!child) {
		child = ERR_PTR(-ENOMEM);
		goto out;
	}
	/*
	 * Marked before it is published: a lookup on another CPU that finds
	 * it (sroce_odp_map(), under RCU) reads the mark to know it holds
	 * the RCU read lock, and would leak it seeing none.
	 */
	child->child = true;
	if (xa_err(xa_store(&odp->children, idx, child, GFP_KERNEL_ACCOUNT))) {
		sroce_odp_table_free(child);
		child = ERR_PTR(-ENOMEM);
	}
out:
	mutex_unlock(&odp->children_lock);
	return child;
}

/* The user address of @iova in @mr (whose range the caller checked). */
static u64 sroce_odp_va(const struct sroce_mr *mr, u64 iova)
{
	return mr->start + (iova - mr->iova);
}

/*
 * Record the pages of [va, va + len) that map_dma_and_lock just made
 * present; the caller holds umem_mutex. A page is writable here only if
 * it was mapped for writing (@write): ib_core marks exactly those dirty
 * when it unmaps them, so a store through a page mapped for reading
 * could be lost.
 */
static void sroce_odp_fill(struct sroce_odp *odp, u64 va, u64 len, bool write)
{
	unsigned long *pfns = sroce_odp_pfns(odp->umem);
	unsigned long i = sroce_odp_index(odp, va);
	unsigned long last = sroce_odp_index(odp, va + len - 1);

	spin_lock_irq(&odp->lock);
	for (; i <= last; i++) {
		unsigned long pfn = pfns[i];

		if (!(pfn & HMM_PFN_VALID))
			continue;
		odp->map[i] = (unsigned long)hmm_pfn_to_page(pfn) |
			      SROCE_ODP_VALID |
			      (write && (pfn & HMM_PFN_WRITE) ?
			       SROCE_ODP_WRITE : 0);
	}
	spin_unlock_irq(&odp->lock);
}

/* Mark the pages of [va, va + len) that are still missing BAD. */
static void sroce_odp_mark_bad(struct sroce_odp *odp, u64 va, u64 len)
{
	unsigned long i = sroce_odp_index(odp, va);
	unsigned long last = sroce_odp_index(odp, va + len - 1);

	spin_lock_irq(&odp->lock);
	for (; i <= last; i++)
		if (!(odp->map[i] & SROCE_ODP_VALID))
			odp->map[i] = SROCE_ODP_BAD;
	spin_unlock_irq(&odp->lock);
}

static int sroce_odp_fault_table(struct sroce_odp *odp, u64 va, u64 len,
				 bool write, bool fault)
{
	int ret;

	/*
	 * A writable MR's pages are always mapped for writing, as rxe does:
	 * ib_core keeps one access mask per page and a read fault would
	 * take the write bit (and with it the dirty marking) back.
	 */
	write |= odp->umem->umem.writable;
	while (len) {
		u64 n = min_t(u64, len, SROCE_ODP_CHUNK -
			      (va & (SROCE_ODP_CHUNK - 1)));

		ret = ib_umem_odp_map_dma_and_lock(odp->umem, va, n,
						   SROCE_ODP_ACCESS(write),
						   fault);
		if (ret < 0) {
			/* Not mapped, or not writable: the access fails. */
			if (fault && (ret == -EFAULT || ret == -EPERM))
				sroce_odp_mark_bad(odp, va, len);
			return ret;
		}
		/* Without fault, ib_core maps what is writable for writing. */
		sroce_odp_fill(odp, va, n, write || !fault);
		mutex_unlock(&odp->umem->umem_mutex);
		va += n;
		len -= n;
	}
	return 0;
}

/* sroce_odp_fault() without the tracepoint. */
static int sroce_odp_fault_mr(struct sroce_mr *mr, u64 iova, u64 len,
			      bool write, bool fault)
{
	struct sroce_odp *odp = mr->odp, *child;
	u64 va = sroce_odp_va(mr, iova);
	int ret = 0;

	if (odp->attach) {
		/* A dma-buf MR: the whole buffer is mapped at once, or not. */
		ret = sroce_dmabuf_fault(odp);
		if (ret && fault)
			sroce_odp_mark_bad(odp, va, len);
		return ret;
	}
	if (!odp->implicit)
		return sroce_odp_fault_table(odp, va, len, write, fault);
	while (len && !ret) {
		u64 n = min_t(u64, len, SROCE_ODP_CHILD_SIZE -
			      (va & (SROCE_ODP_CHILD_SIZE - 1)));

		child = sroce_odp_child(odp, va);
		if (IS_ERR(child)) {
			ret = PTR_ERR(child);
			if (ret == -EFAULT && fault) {
				/* Nothing mapped: the access that asked fails. */
				spin_lock_irq(&odp->lock);
				odp->bad_start = va;
				odp->bad_end = va + len;
				spin_unlock_irq(&odp->lock);
			}
			return ret;
		}
		ret = sroce_odp_fault_table(child, va, n, write, fault);
		va += n;
		len -= n;
	}
	return ret;
}

/**
 * sroce_odp_fault - fault [@iova, @iova + @len) of @mr in; may sleep
 * @mr: an ODP MR whose range the caller checked
 * @iova: first byte
 * @len: bytes (not 0)
 * @write: the pages must be writable
 * @fault: fault missing pages in (else record only those present)
 *
 * Return: 0 or a negative errno (-EFAULT: not mapped; -EPERM: read-only).
 */
int sroce_odp_fault(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		    bool fault)
{
	/* The clock is read only while the event is on. */
	u64 t0 = trace_sroce_odp_fault_enabled() ? ktime_get_ns() : 0;
	int ret = sroce_odp_fault_mr(mr, iova, len, write, fault);

	trace_sroce_odp_fault(mr, iova, len, write, fault, ret,
			      ktime_get_ns() - t0);
	return ret;
}

static void sroce_odp_fault_work(struct work_struct *work)
{
	struct sroce_odp_fault *f =
		container_of(work, struct sroce_odp_fault, work);
	struct sroce_mr *mr = f->mr;
	struct sroce_dev *sdev = mr->odp->sdev;

	if (sroce_odp_fault(mr, f->iova, f->len, f->write, true))
		sroce_count(sdev, SROCE_CNT_ODP_FAULT_ERRORS, 1);
	else
		sroce_count(sdev, SROCE_CNT_ODP_FAULTS, 1);
	atomic_dec(&mr->odp->pending);
	if (f->qp) {
		if (f->kick == SROCE_ODP_KICK_REQ)
			sroce_task_run(&f->qp->req_task);
		else
			sroce_resp_odp_redeliver(f->qp);
		sroce_qp_put(f->qp);
	}
	sroce_mr_put(mr);
	kfree(f);
}

/**
 * sroce_odp_fault_async - fault [@iova, @iova + @len) of @mr in from the
 *	ODP workqueue, then run what of @qp waits for the pages
 * @mr: an ODP MR, referenced by the caller, whose range the caller checked
 * @iova: first byte
 * @len: bytes (not 0)
 * @write: the pages must be writable
 * @qp: the QP that waits, or NULL
 * @kick: its requester, or its deferred UD receives
 *
 * Any context. When too many faults of @mr are in flight for peers'
 * packets (@qp NULL), or no memory is left, nothing is queued: the access
 * misses again and asks again.
 *
 * Return: true if the fault was queued.
 */
bool sroce_odp_fault_async(struct sroce_mr *mr, u64 iova, u64 len,
			   bool write, struct sroce_qp *qp,
			   enum sroce_odp_kick kick)
{
	struct sroce_odp_fault *f;

	/*
	 * The bound is for misses a peer's packets cause. A requester waits
	 * for its kick and asks once per pass: it always gets its fault.
	 */
	if (atomic_inc_return(&mr->odp->pending) > SROCE_ODP_MAX_PENDING &&
	    !qp)
		goto busy;
	f = kmalloc(sizeof(*f), GFP_ATOMIC);
	if (!f)
		goto busy;
	INIT_WORK(&f->work, sroce_odp_fault_work);
	refcount_inc(&mr->ref);
	f->mr = mr;
	f->qp = qp && sroce_qp_tryget(qp) ? qp : NULL;
	f->kick = kick;
	f->iova = iova;
	f->len = len;
	f->write = write;
	queue_work(sroce_odp_wq, &f->work);
	return true;
busy:
	atomic_dec(&mr->odp->pending);
	/* A requester must hear again: its pass waits for a kick. */
	if (qp && kick == SROCE_ODP_KICK_REQ)
		sroce_task_schedule(&qp->req_task);
	return false;
}

/**
 * sroce_odp_map - the kernel address of @iova in ODP MR @mr, with
 *	odp->lock held when it returns one
 * @mr: an ODP MR whose range the caller checked
 * @iova: the byte
 * @write: the access writes
 * @room: bytes contiguous from there (to the end of its page)
 * @err: -EAGAIN (not present: fault it in) or -EFAULT (a fault failed)
 *	when it returns NULL
 * @held: the page table whose lock is held, and the interrupt state to
 *	give back (for sroce_odp_unmap())
 *
 * Any context, interrupts off included (the completer places under the
 * send queue's irqsave lock): the table's lock is irqsave.
 *
 * Return: the address (release with sroce_odp_unmap()), or NULL.
 */
void *sroce_odp_map(const struct sroce_mr *mr, u64 iova, bool write,
		    u32 *room, int *err, struct sroce_odp_held *held)
{
	struct sroce_odp *odp = mr->odp;
	u64 va = sroce_odp_va(mr, iova);
	unsigned long i, e, flags;

	if (odp->implicit) {
		struct sroce_odp *root = odp;

		rcu_read_lock();
		odp = xa_load(&root->children, va >> SROCE_ODP_CHILD_SHIFT);
		if (!odp) {
			rcu_read_unlock();
			*err = -EAGAIN;
			/* One-shot, as BAD entries are. */
			spin_lock_irqsave(&root->lock, flags);
			if (va >= root->bad_start && va < root->bad_end) {
				root->bad_end = 0;
				*err = -EFAULT;
			}
			spin_unlock_irqrestore(&root->lock, flags);
			return NULL;
		}
	}
	i = sroce_odp_index(odp, va);
	if (WARN_ON_ONCE(i >= odp->npages)) {
		*err = -EFAULT;
		goto miss;
	}
	spin_lock_irqsave(&odp->lock, flags);
	e = odp->map[i];
	if ((e & SROCE_ODP_VALID) && (!write || (e & SROCE_ODP_WRITE))) {
		held->odp = odp;
		held->flags = flags;
		*room = PAGE_SIZE - offset_in_page(va);
		return page_address((struct page *)(e & ~SROCE_ODP_FLAGS)) +
		       offset_in_page(va);
	}
	/* BAD is one-shot: the access after this one faults again. */
	if (e == SROCE_ODP_BAD)
		odp->map[i] = 0;
	spin_unlock_irqrestore(&odp->lock, flags);
	*err = e == SROCE_ODP_BAD ? -EFAULT : -EAGAIN;
miss:
	if (odp->child)
		rcu_read_unlock();
	return NULL;
}

void sroce_odp_unmap(const struct sroce_odp_held *held)
{
	bool child = held->odp->child;

	spin_unlock_irqrestore(&held->odp->lock, held->flags);
	if (child)
		rcu_read_unlock();
}

/**
 * sroce_odp_ensure - are all pages of [@iova, @iova + @len) of @mr
 *	present (writable if @write)? If not, fault them in and run @qp's
 *	requester after
 * @mr: any MR whose range the caller checked (not ODP: always present)
 * @iova: first byte
 * @len: bytes
 * @write: the access writes
 * @qp: the QP that waits, or NULL
 * @kick: what of @qp runs when the pages are there
 *
 * Return: 0, -EAGAIN (a fault is on its way), -ENOMEM (none could be
 * asked for) or -EFAULT (one failed).
 */
int sroce_odp_ensure(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		     struct sroce_qp *qp, enum sroce_odp_kick kick)
{
	u64 pos = iova, end = iova + len;
	int err = 0;

	if (!mr->odp || !len)
		return 0;
	while (pos < end) {
		struct sroce_odp_held held;
		u32 room;

		if (!sroce_odp_map(mr, pos, write, &room, &err, &held))
			break;
		sroce_odp_unmap(&held);
		pos += room;
	}
	if (pos >= end)
		return 0;
	if (err == -EAGAIN &&
	    !sroce_odp_fault_async(mr, pos, end - pos, write, qp, kick))
		err = -ENOMEM;
	return err;
}

/**
 * sroce_odp_refault - an access to [@iova, @iova + @len) of @mr missed a
 *	page (sroce_mr_copy() and the like returned -EAGAIN): fault the
 *	range in and have @qp's @kick run when it is there
 * @mr: an ODP MR whose range the caller checked
 * @iova: the byte the access missed
 * @len: bytes from there that the access needs
 * @write: the access writes
 * @qp: the QP whose @kick redoes the access, or NULL (the peer asks again)
 * @kick: what of @qp runs when the pages are there
 *
 * The access stopped at the page it missed: it is not done, and its
 * caller redoes it whatever this finds. The pages may be back already —
 * another CPU's fault can bring them between the miss and this call — and
 * an access taken as done then would leave bytes unplaced or an atomic
 * unexecuted with a successful answer. So a @qp still gets its kick.
 *
 * Return: -EAGAIN (redo the access after the kick, or when the peer asks
 * again), -ENOMEM (nothing could be asked for) or -EFAULT (a fault failed).
 */
int sroce_odp_refault(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		      struct sroce_qp *qp, enum sroce_odp_kick kick)
{
	int err = sroce_odp_ensure(mr, iova, len, write, qp, kick);

	if (err)
		return err;
	if (qp && !sroce_odp_fault_async(mr, iova, len, write, qp, kick))
		return -ENOMEM;
	return -EAGAIN;
}

/**
 * sroce_advise_mr - ib_device_ops.advise_mr: prefetch ODP MRs' pages
 * @ibpd: the PD the lkeys must be in
 * @advice: PREFETCH (read), PREFETCH_WRITE or PREFETCH_NO_FAULT (record
 *	only what is present)
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH: fault before returning, else
 *	in the background
 * @sg_list: the ranges, by lkey
 * @num_sge: how many
 * @attrs: unused
 *
 * Return: 0, -EINVAL for a key that is not an ODP MR of @ibpd covering
 * its range or an unknown advice, or the fault's error (FLUSH).
 */
int sroce_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	u32 i;
	int err = 0;

	if (advice > IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ||
	    (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH))
		return -EOPNOTSUPP;
	for (i = 0; i < num_sge && !err; i++) {
		struct sroce_mr *mr;

		mr = sroce_mr_get_checked(sdev, ibpd, sg_list[i].lkey,
					  sg_list[i].addr, sg_list[i].length,
					  write ? IB_ACCESS_LOCAL_WRITE : 0);
		if (!mr)
			return -EINVAL;
		if (!mr->odp) {
			err = -EINVAL;
		} else if (!sg_list[i].length) {
			err = 0;
		} else if (flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH || !fault) {
			err = sroce_odp_fault(mr, sg_list[i].addr,
					      sg_list[i].length, write, fault);
			if (fault)
				sroce_count(sdev, SROCE_CNT_ODP_PREFETCHES, 1);
		} else {
			sroce_odp_fault_async(mr, sg_list[i].addr,
					      sg_list[i].length, write, NULL,
					      SROCE_ODP_KICK_REQ);
			sroce_count(sdev, SROCE_CNT_ODP_PREFETCHES, 1);
		}
		sroce_mr_put(mr);
	}
	return err;
}

int sroce_odp_wq_init(void)
{
	sroce_odp_wq = alloc_workqueue("sroce_odp", WQ_UNBOUND | WQ_MEM_RECLAIM,
				       0);
	return sroce_odp_wq ? 0 : -ENOMEM;
}

void sroce_odp_wq_exit(void)
{
	destroy_workqueue(sroce_odp_wq);
}
