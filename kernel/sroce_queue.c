// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: shared ring memory and its user mappings.
 *
 * A ring is one zeroed vmalloc area: header, then the elements. A ring
 * that userspace maps gets an rdma_user_mmap_entry; from then on the entry
 * owns the memory and frees it in sroce_mmap_free(), which ib_core calls
 * once the entry is removed and no mmap() is using it. Pages already
 * mapped into a process stay valid after that (vm_insert_page holds them).
 *
 * The rings of a user's QPs, SRQs and CQs are charged to the user's memory
 * cgroup (GFP_KERNEL_ACCOUNT): they are up to tens of MiB per object, so
 * without it a process could allocate far past its limit. vmalloc_user()
 * cannot charge, so the area comes from __vmalloc() and mmap inserts its
 * pages one by one, as remap_vmalloc_range() would.
 */

#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"
#include "sroce_compat.h"
#include "sroce_queue.h"

struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *vaddr;
};

size_t sroce_queue_bytes(u32 entries, u32 stride)
{
	return PAGE_ALIGN(SROCE_RING_DATA_OFFSET + (size_t)entries * stride);
}

/**
 * sroce_queue_init - allocate a zeroed ring
 * @q: the queue
 * @entries: element count, a power of two
 * @stride: bytes per element, a power of two of at least 64
 * @gfp: GFP_KERNEL_ACCOUNT for a user's object, else GFP_KERNEL
 */
int sroce_queue_init(struct sroce_queue *q, u32 entries, u32 stride, gfp_t gfp)
{
	if (!is_power_of_2(entries) || !is_power_of_2(stride) || stride < 64)
		return -EINVAL;

	memset(q, 0, sizeof(*q));
	q->size = sroce_queue_bytes(entries, stride);
	/* A size users choose: a refusal is their ENOMEM, not a splat. */
	q->hdr = __vmalloc(q->size, gfp | __GFP_ZERO | __GFP_NOWARN);
	if (!q->hdr)
		return -ENOMEM;
	q->data = (u8 *)q->hdr + SROCE_RING_DATA_OFFSET;
	q->entries = entries;
	q->stride_shift = ilog2(stride);
	return 0;
}

void sroce_queue_free(struct sroce_queue *q)
{
	if (q->mmap)
		rdma_user_mmap_entry_remove(&q->mmap->rdma);
	else
		vfree(q->hdr);
	q->mmap = NULL;
	q->hdr = NULL;
	q->data = NULL;
}

/**
 * sroce_queue_map_user - make @q mappable by the user context @uctx
 * @q: the queue, not yet mapped
 * @uctx: the owning user context
 * @info: filled with what the provider needs to mmap() the ring
 */
int sroce_queue_map_user(struct sroce_queue *q, struct ib_ucontext *uctx,
			 struct sroce_ring_info *info)
{
	struct sroce_mmap_entry *e;
	int err;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	e->vaddr = q->hdr;
	err = rdma_user_mmap_entry_insert(uctx, &e->rdma, q->size);
	if (err) {
		kfree(e);
		return err;
	}
	q->mmap = e;

	info->mmap_offset = rdma_user_mmap_get_offset(&e->rdma);
	info->mmap_length = q->size;
	info->entries = q->entries;
	info->stride = 1U << q->stride_shift;
	return 0;
}

/* Map the vmalloc area at @vaddr into all of @vma, page by page. */
static int sroce_mmap_pages(struct vm_area_struct *vma, void *vaddr)
{
	unsigned long uaddr = vma->vm_start;
	int err;

	while (uaddr < vma->vm_end) {
		err = vm_insert_page(vma, uaddr, vmalloc_to_page(vaddr));
		if (err)
			return err;
		uaddr += PAGE_SIZE;
		vaddr += PAGE_SIZE;
	}
	sroce_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct sroce_mmap_entry *e;
	int err;

	rentry = rdma_user_mmap_entry_get(uctx, vma);
	if (!rentry)
		return -EINVAL;
	e = container_of(rentry, struct sroce_mmap_entry, rdma);

	/* ib_core checked that vma is shared and exactly the entry's size. */
	err = sroce_mmap_pages(vma, e->vaddr);
	rdma_user_mmap_entry_put(rentry);
	return err;
}

void sroce_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct sroce_mmap_entry *e =
		container_of(rentry, struct sroce_mmap_entry, rdma);

	vfree(e->vaddr);
	kfree(e);
}

/**
 * sroce_queue_post_recv - write a kernel ULP's receive WR into @q
 * @q: the RQ or SRQ ring of a kernel QP or SRQ; the caller serialises
 *	producers
 * @max_sge: SGEs a WQE of this ring may carry
 * @wr: the work request
 *
 * Return: 0, -EINVAL for too many SGEs, -ENOMEM when the ring is full.
 */
int sroce_queue_post_recv(struct sroce_queue *q, u32 max_sge,
			  const struct ib_recv_wr *wr)
{
	struct sroce_recv_wqe *wqe;
	struct sroce_sge *sge;
	int i;

	if (wr->num_sge > max_sge)
		return -EINVAL;
	if (sroce_queue_post_room(q) <= 0)
		return -ENOMEM;

	wqe = sroce_queue_post_elem(q);
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	sge = (struct sroce_sge *)((u8 *)wqe + SROCE_RECV_WQE_HDR);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	sroce_queue_post_publish(q, 1);
	return 0;
}
