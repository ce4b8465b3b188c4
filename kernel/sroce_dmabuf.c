// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: dma-buf MRs (ibv_reg_dmabuf_mr(), ib_device_ops.reg_user_mr_dmabuf).
 *
 * sroce moves bytes with the CPU, so it needs the kernel address of each
 * page of the buffer, where a NIC needs bus addresses. It attaches to the
 * dma-buf as sroce_dma_dev: a device of its own with a 64-bit DMA mask, on
 * no bus and behind no IOMMU, for which the exporter's DMA mapping is the
 * direct one, so dma_to_phys() of each mapped address gives the page.
 * Where that mapping would bounce (swiotlb forced, as in confidential
 * guests) sroce refuses dma-buf MRs; it never asks for peer-to-peer, so
 * exporters place the buffer in system memory for it, and a mapped address
 * that is not ordinary RAM fails the registration.
 *
 * The MR keeps the page table of an ODP MR (struct sroce_odp, sroce_odp.c),
 * filled from the exporter's scatterlist instead of by hmm_range_fault():
 * the data path, its misses, the RNR NAKs and the fault work are those of
 * ODP. sroce attaches as a dynamic importer. When the exporter moves the
 * buffer, its move_notify clears the table and gives the mapping back; the
 * next access misses, and its fault (process context, sroce_odp_fault())
 * maps the attachment again, waits for the exporter's kernel fences (the
 * move's copy) and refills the table. With the module parameter dmabuf_pin
 * set, an MR pins its buffer at registration instead (dma_buf_pin()): the
 * exporter may not move it and no access ever misses.
 *
 * Locking: the buffer's reservation lock (dma_resv, a ww_mutex) serialises
 * mapping, unmapping and move_notify, and guards odp->sgt; odp->lock (the
 * table's irqsave spinlock) guards the entries against the data path, as
 * for every ODP MR. The reservation lock is taken first, never under
 * odp->lock.
 */

#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/swiotlb.h>

#include "sroce.h"

SROCE_IMPORT_NS_DMA_BUF;

static bool dmabuf_pin;
module_param(dmabuf_pin, bool, 0644);
MODULE_PARM_DESC(dmabuf_pin,
		 "pin the buffers of dma-buf MRs registered from now on, instead of following the exporter's moves (default N)");

/* What sroce attaches to dma-bufs as; NULL when its mapping would bounce. */
static struct device *sroce_dma_dev;

/* Clear the table, then give the mapping back; under the resv lock. */
static void sroce_dmabuf_unmap(struct sroce_odp *odp)
{
	if (!odp->sgt)
		return;
	spin_lock_irq(&odp->lock);
	memset(odp->map, 0, odp->npages * sizeof(*odp->map));
	spin_unlock_irq(&odp->lock);
	dma_buf_unmap_attachment(odp->attach, odp->sgt, DMA_BIDIRECTIONAL);
	odp->sgt = NULL;
}

/* The exporter moves the buffer (its resv lock held): forget the pages. */
static void sroce_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct sroce_odp *odp = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	sroce_dmabuf_unmap(odp);
	sroce_count(odp->sdev, SROCE_CNT_DMABUF_MOVES, 1);
}

static const struct dma_buf_attach_ops sroce_dmabuf_ops = {
	.allow_peer2peer = false,
	SROCE_DMABUF_OPS_MOVE_NOTIFY(sroce_dmabuf_move_notify),
};

/* The page at DMA address @dma of sroce_dma_dev, if it is ordinary RAM. */
static struct page *sroce_dmabuf_page(dma_addr_t dma)
{
	unsigned long pfn = PHYS_PFN(dma_to_phys(sroce_dma_dev, dma));
	struct page *page;

	if (!pfn_valid(pfn))
		return NULL;
	page = pfn_to_page(pfn);
	return is_zone_device_page(page) ? NULL : page;
}

/*
 * Walk the pages @sgt maps and, with @fill (odp->lock held), enter those
 * of the MR in its table. Without @fill only check them: every segment
 * whole pages of RAM, the buffer at least as long as the table.
 */
static int sroce_dmabuf_walk(struct sroce_odp *odp, struct sg_table *sgt,
			     bool fill)
{
	u64 end = odp->start + ((u64)odp->npages << PAGE_SHIFT);
	struct scatterlist *sg;
	u64 pos = 0;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t dma = sg_dma_address(sg);
		u64 len = sg_dma_len(sg);

		if (!PAGE_ALIGNED(dma) || !PAGE_ALIGNED(len))
			return -EINVAL;
		for (; len && pos < end; len -= PAGE_SIZE, dma += PAGE_SIZE,
		     pos += PAGE_SIZE) {
			struct page *page;

			if (pos < odp->start)
				continue;
			page = sroce_dmabuf_page(dma);
			if (!page)
				return -EOPNOTSUPP;
			if (fill)
				odp->map[(pos - odp->start) >> PAGE_SHIFT] =
					(unsigned long)page | SROCE_ODP_VALID |
					SROCE_ODP_WRITE;
		}
	}
	return pos < end ? -EINVAL : 0;
}

/**
 * sroce_dmabuf_fault - map dma-buf MR table @odp's buffer and fill the
 *	table, unless it is mapped already; may sleep
 * @odp: the table of a dma-buf MR
 *
 * Return: 0 or a negative errno (the exporter's, or -EINVAL/-EOPNOTSUPP
 * for a mapping sroce cannot reach with the CPU).
 */
int sroce_dmabuf_fault(struct sroce_odp *odp)
{
	struct dma_resv *resv = odp->attach->dmabuf->resv;
	struct sg_table *sgt;
	long wait;
	int err = 0;

	dma_resv_lock(resv, NULL);
	if (odp->sgt)
		goto out;
	sgt = dma_buf_map_attachment(odp->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		err = PTR_ERR(sgt);
		goto out;
	}
	/* A move's copy may still run: the pages are ours after its fences. */
	wait = dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, false,
				     MAX_SCHEDULE_TIMEOUT);
	err = wait < 0 ? wait : sroce_dmabuf_walk(odp, sgt, false);
	if (err) {
		dma_buf_unmap_attachment(odp->attach, sgt, DMA_BIDIRECTIONAL);
		goto out;
	}
	spin_lock_irq(&odp->lock);
	sroce_dmabuf_walk(odp, sgt, true);
	spin_unlock_irq(&odp->lock);
	odp->sgt = sgt;
out:
	dma_resv_unlock(resv);
	return err;
}

static struct sroce_odp *sroce_dmabuf_table(struct sroce_dev *sdev,
					    u64 offset, u64 length)
{
	struct sroce_odp *odp = kzalloc(sizeof(*odp), GFP_KERNEL_ACCOUNT);

	if (!odp)
		return NULL;
	odp->start = offset & PAGE_MASK;
	odp->npages = (PAGE_ALIGN(offset + length) - odp->start) >> PAGE_SHIFT;
	odp->map = kvcalloc(odp->npages, sizeof(*odp->map), GFP_KERNEL_ACCOUNT);
	if (!odp->map) {
		kfree(odp);
		return NULL;
	}
	spin_lock_init(&odp->lock);
	odp->sdev = sdev;
	return odp;
}

/* Pin the buffer for good, if the module parameter asks for it. */
static int sroce_dmabuf_pin(struct sroce_odp *odp)
{
	struct dma_resv *resv = odp->attach->dmabuf->resv;
	int err;

	if (!READ_ONCE(dmabuf_pin))
		return 0;
	dma_resv_lock(resv, NULL);
	err = dma_buf_pin(odp->attach);
	dma_resv_unlock(resv);
	odp->pinned = !err;
	return err;
}

/**
 * sroce_dmabuf_init_mr - make @mr a dma-buf MR over bytes [@offset,
 *	+@length) of the dma-buf @fd refers to, mapped now
 * @mr: a new USER MR, not yet published
 * @sdev: its device
 * @offset: first byte in the buffer
 * @length: bytes (not 0; @offset + @length does not wrap)
 * @fd: the dma-buf's file descriptor
 *
 * Return: 0 or a negative errno (-EINVAL: not a dma-buf, or too short;
 * -EOPNOTSUPP: a buffer or a system sroce cannot reach with the CPU).
 */
int sroce_dmabuf_init_mr(struct sroce_mr *mr, struct sroce_dev *sdev,
			 u64 offset, u64 length, int fd)
{
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct sroce_odp *odp;
	int err;

	if (!sroce_dma_dev)
		return -EOPNOTSUPP;
	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	err = -EINVAL;
	if (offset + length > dmabuf->size)
		goto err_put;
	err = -ENOMEM;
	odp = sroce_dmabuf_table(sdev, offset, length);
	if (!odp)
		goto err_put;
	attach = dma_buf_dynamic_attach(dmabuf, sroce_dma_dev, &sroce_dmabuf_ops,
					odp);
	if (IS_ERR(attach)) {
		err = PTR_ERR(attach);
		goto err_free;
	}
	odp->attach = attach;
	err = sroce_dmabuf_pin(odp);
	if (!err)
		err = sroce_dmabuf_fault(odp);
	if (err)
		goto err_detach;
	mr->odp = odp;
	mr->umem = NULL;
	mr->offset = offset - odp->start;
	atomic_inc(&sdev->odp_mrs);
	return 0;

err_detach:
	if (odp->pinned) {
		dma_resv_lock(dmabuf->resv, NULL);
		dma_buf_unpin(attach);
		dma_resv_unlock(dmabuf->resv);
	}
	dma_buf_detach(dmabuf, attach);
err_free:
	kvfree(odp->map);
	kfree(odp);
err_put:
	dma_buf_put(dmabuf);
	return err;
}

/* After the data path and every fault request let go of the MR. */
void sroce_dmabuf_release(struct sroce_odp *odp)
{
	struct dma_buf *dmabuf = odp->attach->dmabuf;

	dma_resv_lock(dmabuf->resv, NULL);
	sroce_dmabuf_unmap(odp);
	if (odp->pinned)
		dma_buf_unpin(odp->attach);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, odp->attach);
	dma_buf_put(dmabuf);
	kvfree(odp->map);
	kfree(odp);
}

static void sroce_dma_dev_release(struct device *dev)
{
	kfree(dev);
}

/*
 * sroce_dma_dev: initialised, never added (nothing binds to it, and it
 * needs no place in sysfs); dma-direct with all of memory addressable,
 * unless every mapping would bounce.
 */
int sroce_dmabuf_init(void)
{
	struct device *dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	int err;

	if (!dev)
		return -ENOMEM;
	device_initialize(dev);
	dev->release = sroce_dma_dev_release;
	err = dev_set_name(dev, "%s-dma", SROCE_DRV_NAME);
	if (!err)
		err = dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (!err && is_swiotlb_force_bounce(dev)) {
		pr_info("%s: DMA mappings bounce here: no dma-buf MRs\n",
			SROCE_DRV_NAME);
		put_device(dev);
		return 0;
	}
	if (err) {
		put_device(dev);
		return err;
	}
	sroce_dma_dev = dev;
	return 0;
}

void sroce_dmabuf_exit(void)
{
	if (sroce_dma_dev)
		put_device(sroce_dma_dev);
	sroce_dma_dev = NULL;
}
