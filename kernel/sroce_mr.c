// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: memory regions — user MRs (pinned through ib_umem), the kernel
 * DMA MR, fast-registration MRs for kernel ULPs, and the key table.
 *
 * Keys: an lkey/rkey is (index << 8) | variant. The index comes from
 * sdev->key_xa (cyclic, bounded by SROCE_MAX_MR), the variant byte from a
 * device-wide generation counter, so a key that named a freed MR does not
 * name its successor at the same index. lkey == rkey.
 *
 * Lifetime: the data path finds an MR by key under RCU and takes a
 * reference (sroce_mr_get). dereg removes the key first, then waits for
 * the references in flight to drop before it unpins the pages.
 *
 * Lending (zero-copy transmit): sroce_mr_lend() puts the region's pages
 * into an skb as fragments, each with its own page reference, so a packet
 * in flight keeps its pages even after the MR is deregistered and unpinned;
 * the last reference goes when the skb is freed.
 *
 * Re-registration keeps the keys, as hardware does in place: it builds a
 * new MR object with the old one's key and, under mw_lock, puts it in the
 * old one's key_xa slot; ib_core then deregisters the old object, whose
 * references drain as at dereg. A peer holding the rkey goes on using it
 * with the new access, PD or translation; a failed rereg changes nothing.
 *
 * On-demand paging (IB_ACCESS_ON_DEMAND): a USER MR with mr->odp pins
 * nothing; sroce_odp.c keeps its pages. The data access below maps each
 * page through sroce_mr_map(), which for an ODP MR holds the page table's
 * (irqsave) lock until sroce_mr_unmap(), and returns -EAGAIN for a page that is not
 * present: the caller asks for the fault (sroce_odp_ensure()) and tries
 * again later. ODP pages are never lent. A dma-buf MR (sroce_dmabuf.c) is
 * a USER MR with such a table too, filled from the exporter's mapping.
 *
 * Locking: key_xa has its own lock; an MR object is immutable between
 * registration and dereg, except the FRWR page list, which the owner QP's
 * send path serialises, and an ODP MR's page table (sroce_odp.c).
 */

#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "sroce.h"

#define SROCE_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND | IB_ACCESS_HUGETLB | \
			 IB_ACCESS_RELAXED_ORDERING | IB_ACCESS_FLUSH_GLOBAL | \
			 IB_ACCESS_ON_DEMAND)

/* May an MR be registered with @access on @ibdev? */
int sroce_mr_check_access(struct ib_device *ibdev, int access)
{
	int err = ib_check_mr_access(ibdev, access);

	if (err)
		return err;
	if (access & ~SROCE_MR_ACCESS)
		return -EOPNOTSUPP;
	/* An ODP page table has one entry per base page. */
	if ((access & IB_ACCESS_ON_DEMAND) && (access & IB_ACCESS_HUGETLB))
		return -EOPNOTSUPP;
	return 0;
}

/* What a user's MR or window allocates is charged to the user's memcg. */
static gfp_t sroce_mr_gfp(const struct ib_pd *ibpd)
{
	return ibpd->uobject ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
}

/*
 * A new key object of @type. MRs take key indexes 1..SROCE_MAX_MR, memory
 * windows the SROCE_MAX_MW above them, so each count is bounded by its own
 * limit in query_device.
 */
static struct sroce_mr *sroce_mr_alloc(struct ib_pd *ibpd,
				       enum sroce_mr_type type, int access)
{
	struct sroce_mr *mr = kzalloc(sizeof(*mr), sroce_mr_gfp(ibpd));

	if (!mr)
		return NULL;
	mr->type = type;
	mr->access = access;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	return mr;
}

struct sroce_mr *sroce_mr_new(struct ib_pd *ibpd, enum sroce_mr_type type,
			      int access)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	u32 index;
	u8 variant;
	int err;

	mr = sroce_mr_alloc(ibpd, type, access);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	if (type == SROCE_MR_WINDOW)
		err = xa_alloc_cyclic(&sdev->key_xa, &index, mr,
				      XA_LIMIT(SROCE_MAX_MR + 1,
					       SROCE_MAX_MR + SROCE_MAX_MW),
				      &sdev->mw_key_next, GFP_KERNEL);
	else
		err = xa_alloc_cyclic(&sdev->key_xa, &index, mr,
				      XA_LIMIT(1, SROCE_MAX_MR), &sdev->key_next,
				      GFP_KERNEL);
	if (err < 0) {
		kfree(mr);
		return ERR_PTR(err == -EBUSY ? -ENOMEM : err);
	}
	variant = (u8)atomic_inc_return(&sdev->key_gen);
	mr->ibmr.lkey = (index << 8) | variant;
	mr->ibmr.rkey = mr->ibmr.lkey;
	mr->key = mr->ibmr.lkey;
	/*
	 * A fast-registration MR is invalid until its first REG_MR, a window
	 * until its first bind.
	 */
	mr->valid = type != SROCE_MR_FAST && type != SROCE_MR_WINDOW;
	return mr;
}

/* Wait out the data path, then free what the MR owns. Its key is gone. */
void sroce_mr_release(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	sroce_mr_put(mr);
	wait_for_completion(&mr->released);

	sroce_odp_release(mr);
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr->page_list);
	kfree_rcu(mr, rcu);
}

/* Undo sroce_mr_new() and what followed, before anyone saw the key. */
static void sroce_mr_destroy(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	xa_erase(&sdev->key_xa, mr->key >> 8);
	sroce_mr_release(sdev, mr);
}

/**
 * sroce_mr_get - find the MR a key names and take a reference on it
 * @sdev: the device
 * @key: an lkey or rkey
 *
 * Return: the MR (release with sroce_mr_put()), or NULL when the key names
 * no live MR (unknown index, stale variant, being deregistered).
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->key_xa, key >> 8);
	/* valid before key: pairs with the release in sroce_mr_reg_fast() */
	if (mr && (!smp_load_acquire(&mr->valid) || READ_ONCE(mr->key) != key ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/* The FAST MR of @pd at the index of @key, whatever its state and variant. */
static struct sroce_mr *sroce_mr_get_fast(struct sroce_dev *sdev,
					  struct ib_pd *pd, u32 key)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->key_xa, key >> 8);
	if (mr && (mr->type != SROCE_MR_FAST || mr->ibmr.pd != pd ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * sroce_mr_reg_fast - execute an IB_WR_REG_MR
 * @sdev: the device
 * @pd: the PD of the QP that executes it
 * @reg: the new key and access rights
 *
 * The region is what the last ib_map_mr_sg() mapped (ibmr's iova, length
 * and page size, and the page list). The key keeps its index; its variant
 * byte is the consumer's (ib_update_fast_reg_key()).
 *
 * Return: IB_WC_SUCCESS, or the status the WR completes with.
 */
u8 sroce_mr_reg_fast(struct sroce_dev *sdev, struct ib_pd *pd,
		     const struct sroce_reg_mr_wr *reg)
{
	struct sroce_mr *mr = sroce_mr_get_fast(sdev, pd, reg->key);
	u8 status = IB_WC_SUCCESS;

	if (!mr)
		return IB_WC_LOC_PROT_ERR;
	/* Nothing mapped, or a valid MR: invalidate it first. */
	if (reg->access & ~SROCE_MR_ACCESS || !mr->nmapped ||
	    mr->ibmr.length > (u64)mr->nmapped * mr->ibmr.page_size ||
	    READ_ONCE(mr->valid)) {
		status = IB_WC_LOC_PROT_ERR;
		goto out;
	}
	mr->access = reg->access;
	mr->iova = mr->ibmr.iova;
	mr->length = mr->ibmr.length;
	WRITE_ONCE(mr->key, reg->key);
	/* The region and key before valid: pairs with sroce_mr_get(). */
	smp_store_release(&mr->valid, true);
out:
	sroce_mr_put(mr);
	return status;
}

/**
 * sroce_mr_invalidate - invalidate the FAST MR @key names (LOCAL_INV, or a
 *	SEND_WITH_INV received)
 * @sdev: the device
 * @pd: the PD of the QP the request came through
 * @key: the MR's current key
 *
 * Invalidating an MR that is already invalid succeeds.
 *
 * Return: 0, or -EINVAL when @key names no FAST MR of @pd.
 */
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 key)
{
	struct sroce_mr *mr = sroce_mr_get_fast(sdev, pd, key);
	int err = 0;

	if (!mr)
		return -EINVAL;
	if (READ_ONCE(mr->key) == key)
		WRITE_ONCE(mr->valid, false);
	else
		err = -EINVAL;
	sroce_mr_put(mr);
	return err;
}

void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/* Does [addr, addr + len) lie inside the region @mr names? */
bool sroce_mr_covers(const struct sroce_mr *mr, u64 addr, u64 len)
{
	if (addr + len < addr)
		return false;
	if (mr->type == SROCE_MR_DMA)
		return true;
	return addr >= mr->iova && addr + len <= mr->iova + mr->length;
}

/**
 * sroce_mr_allows - may an access in @pd to [@iova, @iova + @len) needing
 *	@access use @mr?
 * @mr: the region
 * @pd: the PD the access is made in
 * @iova: first byte
 * @len: bytes
 * @access: IB_ACCESS_* every one of which the MR must grant (0: local read)
 */
bool sroce_mr_allows(const struct sroce_mr *mr, const struct ib_pd *pd,
		     u64 iova, u64 len, int access)
{
	return mr->ibmr.pd == pd && (mr->access & access) == access &&
	       sroce_mr_covers(mr, iova, len);
}

struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_mr *mr;
	int err;

	err = sroce_mr_check_access(ibpd->device, access);
	if (err)
		return ERR_PTR(err);
	mr = sroce_mr_new(ibpd, SROCE_MR_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->iova = 0;
	mr->length = U64_MAX;
	return &mr->ibmr;
}

/* Pin [start, start + length) and record its pages in order. */
static int sroce_mr_pin(struct sroce_mr *mr, struct ib_device *ibdev,
			u64 start, u64 length, int access)
{
	struct sg_page_iter iter;
	struct ib_umem *umem;
	size_t n = 0;

	umem = ib_umem_get_va(ibdev, start, length, access);
	if (IS_ERR(umem))
		return PTR_ERR(umem);

	mr->npages = ib_umem_num_pages(umem);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
	if (!mr->pages) {
		ib_umem_release(umem);
		return -ENOMEM;
	}
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (WARN_ON_ONCE(n >= mr->npages))
			break;
		mr->pages[n++] = sg_page_iter_page(&iter);
	}
	mr->umem = umem;
	mr->offset = ib_umem_offset(umem);
	return 0;
}

static int sroce_mr_check_user(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 iova, int access)
{
	if (!length)
		return -EINVAL;
	if (iova + length < iova || start + length < start)
		return -EOVERFLOW;
	return sroce_mr_check_access(ibpd->device, access);
}

/* Pin the user region of a new USER MR and describe it. */
static int sroce_mr_fill_user(struct sroce_mr *mr, struct ib_pd *ibpd,
			      u64 start, u64 length, u64 iova, int access)
{
	int err;

	if (access & IB_ACCESS_ON_DEMAND)
		err = sroce_odp_init(mr, ibpd->device, start, length, access);
	else
		err = sroce_mr_pin(mr, ibpd->device, start, length, access);

	if (err)
		return err;
	mr->start = start;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	return 0;
}

static struct sroce_mr *sroce_mr_new_user(struct ib_pd *ibpd, u64 start,
					  u64 length, u64 iova, int access)
{
	struct sroce_mr *mr;
	int err;

	err = sroce_mr_check_user(ibpd, start, length, iova, access);
	if (err)
		return ERR_PTR(err);
	mr = sroce_mr_new(ibpd, SROCE_MR_USER, access);
	if (IS_ERR(mr))
		return mr;
	err = sroce_mr_fill_user(mr, ibpd, start, length, iova, access);
	if (err) {
		sroce_mr_destroy(to_sdev(ibpd->device), mr);
		return ERR_PTR(err);
	}
	return mr;
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_dmah *dmah,
				struct ib_udata *udata)
{
	struct sroce_mr *mr;

	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	mr = sroce_mr_new_user(ibpd, start, length, iova, access);

	return IS_ERR(mr) ? ERR_CAST(mr) : &mr->ibmr;
}

/*
 * A dma-buf MR: bytes [@offset, +@length) of the buffer, named @iova on
 * the wire. It is never on demand in the user's sense (its pages are the
 * exporter's), so IB_ACCESS_ON_DEMAND is refused.
 */
struct ib_mr *sroce_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd, int access,
				       struct ib_dmah *dmah,
				       struct uverbs_attr_bundle *attrs)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	if (access & IB_ACCESS_ON_DEMAND)
		return ERR_PTR(-EINVAL);
	err = sroce_mr_check_user(ibpd, offset, length, iova, access);
	if (err)
		return ERR_PTR(err);
	mr = sroce_mr_new(ibpd, SROCE_MR_USER, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	err = sroce_dmabuf_init_mr(mr, sdev, offset, length, fd);
	if (err) {
		sroce_mr_destroy(sdev, mr);
		return ERR_PTR(err);
	}
	mr->start = offset;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	return &mr->ibmr;
}

/*
 * Put @mr, which carries @old's key, in @old's key slot, unless windows
 * are bound to @old. @old is marked dying first, under mw_lock, so no
 * bind takes it; the slot is swapped after, outside mw_lock (the key
 * table's lock is never taken under it). From then on lookups of the key
 * find @mr; ib_core deregisters @old. ib_core serialises rereg and dereg
 * of one MR, so the slot still holds @old.
 */
static int sroce_mr_replace(struct sroce_dev *sdev, struct sroce_mr *old,
			    struct sroce_mr *mr)
{
	void *prev;
	int err = 0;

	spin_lock_bh(&sdev->mw_lock);
	if (old->nwindows || old->dying)
		err = -EBUSY;
	else
		old->dying = true;
	spin_unlock_bh(&sdev->mw_lock);
	if (err)
		return err;

	prev = xa_cmpxchg(&sdev->key_xa, old->key >> 8, old, mr, GFP_KERNEL);
	if (prev == old)
		return 0;
	spin_lock_bh(&sdev->mw_lock);
	old->dying = false;
	spin_unlock_bh(&sdev->mw_lock);
	return xa_is_err(prev) ? xa_err(prev) : -EINVAL;
}

/*
 * Re-registration in place: a new MR object from the old one's attributes
 * and the changed ones, with the old one's keys, swapped into its key
 * slot (see the top of this file).
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *old = to_smr(ibmr);
	struct sroce_mr *mr;
	int err;

	if (flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (old->type != SROCE_MR_USER)
		return ERR_PTR(-EINVAL);
	/* Its buffer is the exporter's: nothing to re-register it from. */
	if (old->odp && old->odp->attach)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->start;
		length = old->length;
		iova = old->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	err = sroce_mr_check_user(ibpd, start, length, iova, access);
	if (err)
		return ERR_PTR(err);

	mr = sroce_mr_alloc(ibpd, SROCE_MR_USER, access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = sroce_mr_fill_user(mr, ibpd, start, length, iova, access);
	if (err)
		goto err_free;
	/* What the data path compares, set before the key is live. */
	mr->ibmr.device = ibpd->device;
	mr->ibmr.pd = ibpd;
	mr->ibmr.lkey = old->ibmr.lkey;
	mr->ibmr.rkey = old->ibmr.rkey;
	mr->key = old->key;
	mr->valid = true;
	err = sroce_mr_replace(sdev, old, mr);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	/* Never published: no reference but our own. */
	sroce_mr_release(sdev, mr);
	return ERR_PTR(err);
}

struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FRPL_LEN)
		return ERR_PTR(-EINVAL);

	mr = sroce_mr_new(ibpd, SROCE_MR_FAST, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->page_list = kcalloc(max_num_sg, sizeof(*mr->page_list),
				GFP_KERNEL);
	if (!mr->page_list) {
		sroce_mr_destroy(to_sdev(ibpd->device), mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->max_pages = max_num_sg;
	return &mr->ibmr;
}

static int sroce_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->nmapped >= mr->max_pages)
		return -ENOMEM;
	mr->page_list[mr->nmapped++] = addr;
	return 0;
}

int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);

	mr->nmapped = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset,
			      sroce_mr_set_page);
}

/* Memory windows bound to the MR keep it: EBUSY (as rdma_rxe's EINVAL). */
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *mr = to_smr(ibmr);

	if (!sroce_mr_unhook(sdev, mr))
		return -EBUSY;
	sroce_mr_release(sdev, mr);
	return 0;
}

/* Resource details ("rdma resource show mr -dd") ------------------- */

static const char *const sroce_mr_type_name[] = {
	[SROCE_MR_USER] = "user", [SROCE_MR_DMA] = "dma",
	[SROCE_MR_FAST] = "fast", [SROCE_MR_WINDOW] = "window",
};

/*
 * ib_device_ops.fill_res_mr_entry. ib_core holds the MR (dereg waits), so
 * its fields are there; those a REG_MR or a bind change are read once,
 * unlocked: a snapshot. Keys and addresses are not repeated here: ib_core
 * shows them to CAP_NET_ADMIN only.
 */
int sroce_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_odp *odp = mr->odp;
	const struct sroce_res_field f[] = {
		SROCE_RES_S("type", sroce_mr_type_name[mr->type]),
		SROCE_RES("valid", U32, READ_ONCE(mr->valid)),
		SROCE_RES("access", HEX32, mr->access),
		SROCE_RES("pinned_pages", U64, mr->pages ? mr->npages : 0),
		SROCE_RES("mapped_pages", U32, READ_ONCE(mr->nmapped)),
		SROCE_RES("max_pages", U32, mr->max_pages),
		SROCE_RES("odp", U32, odp && !odp->attach),
		SROCE_RES("implicit", U32, odp && odp->implicit),
		SROCE_RES("dmabuf", U32, odp && odp->attach),
		SROCE_RES("dmabuf_pinned", U32, odp && odp->pinned),
		SROCE_RES("present_pages", U64, odp ? sroce_odp_present(odp) : 0),
		SROCE_RES("faults_pending", U32,
			  odp ? atomic_read(&odp->pending) : 0),
		SROCE_RES("windows", U32, READ_ONCE(mr->nwindows)),
	};

	return sroce_res_put(msg, f, ARRAY_SIZE(f));
}

/* Data access ------------------------------------------------------- */

/*
 * The kernel address of the byte of @mr at @iova and how many bytes from
 * there are contiguous (to the end of its page). The caller checked the
 * range with sroce_mr_covers().
 */
static void *sroce_mr_addr(const struct sroce_mr *mr, u64 iova, u32 *room)
{
	u64 pos, idx;
	u32 shift;

	switch (mr->type) {
	case SROCE_MR_DMA:
		*room = U32_MAX;
		return (void *)(uintptr_t)iova;
	case SROCE_MR_USER:
		pos = iova - mr->iova + mr->offset;
		idx = pos >> PAGE_SHIFT;
		if (WARN_ON_ONCE(idx >= mr->npages))
			return NULL;
		*room = PAGE_SIZE - (pos & ~PAGE_MASK);
		return page_address(mr->pages[idx]) + (pos & ~PAGE_MASK);
	case SROCE_MR_FAST:
		shift = ilog2(mr->ibmr.page_size);
		idx = (iova >> shift) - (mr->iova >> shift);
		if (WARN_ON_ONCE(idx >= mr->nmapped))
			return NULL;
		*room = mr->ibmr.page_size - (iova & (mr->ibmr.page_size - 1));
		return (void *)(uintptr_t)(mr->page_list[idx] +
					   (iova & (mr->ibmr.page_size - 1)));
	case SROCE_MR_WINDOW:	/* never: sroce_mr_get_remote() resolves it */
		break;
	}
	return NULL;
}

/*
 * Map the byte of @mr at @iova for an access (a write if @write): its
 * kernel address and the contiguous bytes from there, until
 * sroce_mr_unmap(). NULL with *@err = -EAGAIN for an ODP page that is not
 * present (writable), else -EFAULT.
 */
static void *sroce_mr_map(const struct sroce_mr *mr, u64 iova, bool write,
			  u32 *room, int *err, struct sroce_odp_held *held)
{
	held->odp = NULL;
	if (mr->odp)
		return sroce_odp_map(mr, iova, write, room, err, held);
	*err = -EFAULT;
	return sroce_mr_addr(mr, iova, room);
}

static void sroce_mr_unmap(const struct sroce_odp_held *held)
{
	if (held->odp)
		sroce_odp_unmap(held);
}

/**
 * sroce_mr_copy - copy between @mr at @iova and a kernel buffer
 * @mr: a region whose range the caller checked
 * @iova: first byte in the region
 * @buf: the kernel buffer
 * @len: bytes
 * @to_mr: direction
 *
 * Return: 0, -EAGAIN (an ODP page to fault in; bytes before it may have
 * been copied) or -EFAULT if the region's backing is gone.
 */
int sroce_mr_copy(const struct sroce_mr *mr, u64 iova, void *buf, u32 len,
		  bool to_mr)
{
	while (len) {
		struct sroce_odp_held held;
		u32 room, n;
		int err;
		void *addr = sroce_mr_map(mr, iova, to_mr, &room, &err, &held);

		if (!addr)
			return err;
		n = min(len, room);
		if (to_mr)
			memcpy(addr, buf, n);
		else
			memcpy(buf, addr, n);
		sroce_mr_unmap(&held);
		buf += n;
		iova += n;
		len -= n;
	}
	return 0;
}

/**
 * sroce_mr_copy_skb - copy @len bytes of @skb from @off into @mr at @iova
 * @mr: a region whose range the caller checked
 * @iova: first byte in the region
 * @skb: the packet (any layout)
 * @off: offset in @skb
 * @len: bytes
 *
 * Return: 0, -EAGAIN (an ODP page to fault in) or -EFAULT.
 */
int sroce_mr_copy_skb(const struct sroce_mr *mr, u64 iova,
		      const struct sk_buff *skb, u32 off, u32 len)
{
	while (len) {
		struct sroce_odp_held held;
		u32 room, n;
		int err;
		void *addr = sroce_mr_map(mr, iova, true, &room, &err, &held);

		if (!addr)
			return err;
		n = min(len, room);
		err = skb_copy_bits(skb, off, addr, n);
		sroce_mr_unmap(&held);
		if (err)
			return -EFAULT;
		off += n;
		iova += n;
		len -= n;
	}
	return 0;
}

/**
 * sroce_mr_lend - append @len bytes of @mr at @iova to @skb as page
 *	fragments instead of copying them
 * @mr: a region whose range the caller checked
 * @iova: first byte in the region
 * @skb: a packet being built: its linear part holds the headers
 * @len: bytes
 *
 * Each new fragment holds a reference on its page; a chunk that continues
 * the previous fragment in the same page extends it. One fragment slot is
 * left for the pad and ICRC (sroce_skb_put_tail()). The pages stay the
 * owner's, who may write them while the packet is queued (an application
 * reusing a buffer early, a peer's RDMA WRITE into the same MR), so the
 * skb says its fragments are shared: whatever in the stack would write
 * into them or needs them stable (in-place decryption, checksumming,
 * software segmentation) copies them first.
 *
 * Return: 0; -EMSGSIZE when @skb runs out of fragment slots or
 * -EOPNOTSUPP when this memory cannot be lent (not in the direct map, a
 * slab page, or ODP pages, which an invalidation must be able to take
 * back at once): the caller frees @skb and copies instead; -EFAULT when
 * the region's backing is gone.
 */
int sroce_mr_lend(const struct sroce_mr *mr, u64 iova, struct sk_buff *skb,
		  u32 len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);

	if (mr->odp)
		return -EOPNOTSUPP;

	while (len) {
		u32 room, off, n;
		struct page *page;
		void *addr = sroce_mr_addr(mr, iova, &room);

		if (!addr)
			return -EFAULT;
		if (!virt_addr_valid(addr))
			return -EOPNOTSUPP;
		page = virt_to_page(addr);
		if (!sendpage_ok(page))
			return -EOPNOTSUPP;
		off = offset_in_page(addr);
		n = min3(len, room, (u32)PAGE_SIZE - off);
		if (sh->nr_frags &&
		    skb_can_coalesce(skb, sh->nr_frags, page, off)) {
			skb_frag_size_add(&sh->frags[sh->nr_frags - 1], n);
		} else {
			if (sh->nr_frags >= MAX_SKB_FRAGS - 1)
				return -EMSGSIZE;
			get_page(page);
			skb_fill_page_desc(skb, sh->nr_frags, page, off, n);
		}
		skb->len += n;
		skb->data_len += n;
		skb->truesize += n;
		sh->flags |= SKBFL_SHARED_FRAG;
		iova += n;
		len -= n;
	}
	return 0;
}

/**
 * sroce_mr_atomic - execute an 8-byte atomic on @mr at @iova
 * @mr: a region whose range the caller checked; @iova is 8-byte aligned
 * @iova: the target
 * @cmp_swap: compare-and-swap (else fetch-and-add)
 * @compare: CMP_SWAP's compare value
 * @swap_add: CMP_SWAP's swap value or FETCH_ADD's addend
 * @orig: the value before the operation
 *
 * The CPU's atomics make this atomic against every other sroce atomic and
 * against the local CPU's own accesses to the same memory.
 *
 * Return: 0, -EAGAIN (an ODP page to fault in; nothing done) or -EFAULT.
 */
int sroce_mr_atomic(const struct sroce_mr *mr, u64 iova, bool cmp_swap,
		    u64 compare, u64 swap_add, u64 *orig)
{
	struct sroce_odp_held held;
	u32 room;
	int err;
	atomic64_t *p = sroce_mr_map(mr, iova, true, &room, &err, &held);

	if (!p)
		return err;
	err = 0;
	if (room < sizeof(u64))
		err = -EFAULT;
	else if (cmp_swap)
		*orig = atomic64_cmpxchg(p, compare, swap_add);
	else
		*orig = atomic64_fetch_add(swap_add, p);
	sroce_mr_unmap(&held);
	return err;
}

/**
 * sroce_mr_atomic_write - store 8 bytes at @iova in one store (IBTA 1.5
 *	ATOMIC WRITE), after everything placed before it
 * @mr: a region whose range the caller checked
 * @iova: an 8-byte aligned address in it
 * @value: the bytes, as they came
 *
 * Return: 0, -EINVAL if the word is not aligned in memory (an MR whose
 * iova and address differ in their low bits), -EAGAIN (an ODP page to
 * fault in; nothing stored) or -EFAULT if it is gone.
 */
int sroce_mr_atomic_write(const struct sroce_mr *mr, u64 iova, u64 value)
{
	struct sroce_odp_held held;
	u32 room;
	int err;
	u64 *p = sroce_mr_map(mr, iova, true, &room, &err, &held);

	if (!p)
		return err;
	err = 0;
	if (room < sizeof(u64))
		err = -EFAULT;
	else if ((uintptr_t)p & 7)
		err = -EINVAL;
	else	/* Ordered after the placements before it; one 8-byte store. */
		smp_store_release(p, value);
	sroce_mr_unmap(&held);
	return err;
}

/**
 * sroce_mr_get_checked - find the MR @key names, for an access to
 *	[@iova, @iova + @len) needing @access, in @pd
 * @sdev: the device
 * @pd: the PD the access is made in
 * @key: an lkey or rkey
 * @iova: first byte
 * @len: bytes
 * @access: IB_ACCESS_* every one of which the MR must grant (0: local read)
 *
 * Return: the MR with a reference (sroce_mr_put()), or NULL.
 */
struct sroce_mr *sroce_mr_get_checked(struct sroce_dev *sdev,
				      struct ib_pd *pd, u32 key, u64 iova,
				      u64 len, int access)
{
	struct sroce_mr *mr = sroce_mr_get(sdev, key);

	if (!mr)
		return NULL;
	/* A window's key is an rkey only: sroce_mr_get_remote(). */
	if (mr->type == SROCE_MR_WINDOW ||
	    !sroce_mr_allows(mr, pd, iova, len, access)) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}
