// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_dmabuf_exp: a dynamic dma-buf exporter that moves its buffers on
 * demand, for the tests of sroce's dma-buf MRs (ibv_reg_dmabuf_mr()). It
 * is test-only: nothing else exports a dma-buf whose pages move while an
 * importer has it mapped, and the tests must prove that sroce follows a
 * move (drops the old pages at move_notify, maps the new ones at its next
 * access) and never touches the old pages again.
 *
 * /dev/sroce_dmabuf_exp (root only) takes the ioctls of
 * sroce_dmabuf_exp.h: CREATE a buffer (an fd to register as an MR), WRITE
 * and READ it from the CPU, MOVE it, read its counters (INFO). A test
 * registers the buffer, moves it between RDMA operations and checks that
 * the data lands in (and comes from) the new pages, and that INFO's
 * stale_writes stays 0: a MOVE fills the pages it leaves with
 * SROCE_DMABUF_EXP_POISON and keeps them allocated until the buffer is
 * released, so a late write is counted (and a late read returns poison,
 * not someone else's memory).
 *
 * Pins: the core pins a buffer for each mapping of an importer that cannot
 * follow a move (pin() before map_dma_buf(), unpin() after
 * unmap_dma_buf()): a static importer's (dma_buf_attach()), always, and,
 * on kernels built without CONFIG_DMABUF_MOVE_NOTIFY (Debian's, up to
 * 6.x; 7.x has no such option and no such pin), a dynamic importer's. This
 * module counts pin() and map_dma_buf() per kind of attachment and
 * subtracts those pins: INFO's pins are the importers' own dma_buf_pin().
 * MOVE refuses (-EBUSY) while there is one, or while a static importer has
 * the buffer mapped; a dynamic importer's mere mapping never stops it, as
 * on a kernel that has move notification.
 *
 * A MOVE tells the importers first and waits for their fences, then
 * copies and poisons: an importer may use the old pages until its
 * move_notify returns (or its fences signal), never after.
 *
 * Locking: a buffer's reservation lock (dmabuf->resv) guards everything of
 * it that changes: its pages, its old pages, its counters. The dma-buf
 * core holds it around pin, unpin, map_dma_buf and unmap_dma_buf (this
 * exporter is dynamic) and move_notify; the ioctls take it themselves,
 * and never copy from or to user memory while holding it (a fault takes
 * mmap_lock, which dma-resv orders before the reservation lock).
 */

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "sroce_dmabuf_exp.h"

/*
 * 7.x renamed move_notify to invalidate_mappings and dropped
 * CONFIG_DMABUF_MOVE_NOTIFY: the core no longer pins for a dynamic
 * importer's mappings.
 */
#ifdef SROCE_HAVE_DMA_BUF_INVALIDATE_MAPPINGS
#define exp_move_notify		dma_buf_invalidate_mappings
#define EXP_PIN_ON_DYNAMIC_MAP	false
#else
#define exp_move_notify		dma_buf_move_notify
#define EXP_PIN_ON_DYNAMIC_MAP	(!IS_ENABLED(CONFIG_DMABUF_MOVE_NOTIFY))
#endif

/* How long a MOVE waits for the importers' fences before -ETIMEDOUT. */
#define EXP_FENCE_TIMEOUT	(10 * HZ)

/* The pages a buffer is in, or was in before a MOVE. */
struct exp_pages {
	struct list_head node;		/* in exp_buf.old, once moved from */
	unsigned long npages;
	struct page *pages[];
};

/* A buffer: dmabuf->priv. */
struct exp_buf {
	struct exp_pages *cur;		/* its pages now */
	struct list_head old;		/* the poisoned ones, until release */
	unsigned long npages;
	u64 moves;
	/* pin() and map_dma_buf() in effect, by attachment kind */
	unsigned int dynamic_pins;
	unsigned int dynamic_maps;
	unsigned int static_maps;
};

static void exp_pages_free(struct exp_pages *set)
{
	unsigned long i;

	for (i = 0; i < set->npages; i++)
		__free_page(set->pages[i]);
	kvfree(set);
}

static struct exp_pages *exp_pages_alloc(unsigned long npages)
{
	struct exp_pages *set;

	set = kvzalloc(struct_size(set, pages, npages), GFP_KERNEL_ACCOUNT);
	if (!set)
		return NULL;
	INIT_LIST_HEAD(&set->node);
	for (; set->npages < npages; set->npages++) {
		set->pages[set->npages] =
			alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!set->pages[set->npages]) {
			exp_pages_free(set);
			return NULL;
		}
		cond_resched();
	}
	return set;
}

/* dma_buf_pin() by importers, in effect; under the resv lock. */
static unsigned int exp_importer_pins(struct exp_buf *buf)
{
	unsigned int core = EXP_PIN_ON_DYNAMIC_MAP ? buf->dynamic_maps : 0;

	if (WARN_ON_ONCE(buf->dynamic_pins < core))
		return 0;
	return buf->dynamic_pins - core;
}

/* Old pages that hold anything but poison; under the resv lock. */
static u64 exp_stale_pages(struct exp_buf *buf)
{
	struct exp_pages *set;
	unsigned long i;
	u64 stale = 0;

	list_for_each_entry(set, &buf->old, node) {
		for (i = 0; i < set->npages; i++) {
			void *addr = kmap_local_page(set->pages[i]);

			if (memchr_inv(addr, SROCE_DMABUF_EXP_POISON, PAGE_SIZE))
				stale++;
			kunmap_local(addr);
		}
		cond_resched();
	}
	return stale;
}

/*
 * pin and unpin: nothing to do (the pages are always where the CPU and
 * any device can reach them); counted, to tell MOVE whether it may run.
 * A static attachment's pins are the core's, one per mapping.
 */
static int exp_pin(struct dma_buf_attachment *attach)
{
	struct exp_buf *buf = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (attach->importer_ops)
		buf->dynamic_pins++;
	return 0;
}

static void exp_unpin(struct dma_buf_attachment *attach)
{
	struct exp_buf *buf = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (attach->importer_ops && !WARN_ON_ONCE(!buf->dynamic_pins))
		buf->dynamic_pins--;
}

static struct sg_table *exp_map(struct dma_buf_attachment *attach,
				enum dma_data_direction dir)
{
	struct exp_buf *buf = attach->dmabuf->priv;
	struct sg_table *sgt;
	int err;

	dma_resv_assert_held(attach->dmabuf->resv);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table_from_pages(sgt, buf->cur->pages, buf->npages, 0,
					buf->npages << PAGE_SHIFT, GFP_KERNEL);
	if (err)
		goto err_free;
	err = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (err)
		goto err_table;
	if (attach->importer_ops)
		buf->dynamic_maps++;
	else
		buf->static_maps++;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void exp_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
		      enum dma_data_direction dir)
{
	struct exp_buf *buf = attach->dmabuf->priv;
	unsigned int *maps = attach->importer_ops ? &buf->dynamic_maps :
						    &buf->static_maps;

	dma_resv_assert_held(attach->dmabuf->resv);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
	if (!WARN_ON_ONCE(!*maps))
		(*maps)--;
}

static void exp_buf_free(struct exp_buf *buf)
{
	struct exp_pages *set, *next;

	list_for_each_entry_safe(set, next, &buf->old, node)
		exp_pages_free(set);
	exp_pages_free(buf->cur);
	kfree(buf);
}

/* The last reference is gone: no attachment, no mapping is left. */
static void exp_release(struct dma_buf *dmabuf)
{
	struct exp_buf *buf = dmabuf->priv;

	WARN_ON(buf->dynamic_pins || buf->dynamic_maps || buf->static_maps);
	exp_buf_free(buf);
}

static const struct dma_buf_ops exp_dmabuf_ops = {
	.pin = exp_pin,
	.unpin = exp_unpin,
	.map_dma_buf = exp_map,
	.unmap_dma_buf = exp_unmap,
	.release = exp_release,
};

/* The buffer @fd refers to, if this module exported it. */
static struct dma_buf *exp_get(int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	if (dmabuf->ops != &exp_dmabuf_ops) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

static long exp_create(struct sroce_dmabuf_exp_create __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct sroce_dmabuf_exp_create arg;
	struct dma_buf *dmabuf;
	struct exp_buf *buf;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad || !arg.size || arg.size > SROCE_DMABUF_EXP_MAX_SIZE ||
	    arg.size & ~PAGE_MASK)
		return -EINVAL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	INIT_LIST_HEAD(&buf->old);
	buf->npages = arg.size >> PAGE_SHIFT;
	buf->cur = exp_pages_alloc(buf->npages);
	if (!buf->cur) {
		kfree(buf);
		return -ENOMEM;
	}
	info.ops = &exp_dmabuf_ops;
	info.size = arg.size;
	info.flags = O_RDWR;
	info.priv = buf;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		exp_buf_free(buf);
		return PTR_ERR(dmabuf);
	}
	/* From here the dma-buf owns buf: dma_buf_put() frees both. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	arg.fd = fd;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

/*
 * WRITE and READ, a page at a time: each page's copy runs under the resv
 * lock, through a bounce page copied from or to user memory outside it. A
 * MOVE may come between two pages, never inside one, and carries every
 * byte written before it.
 */
static long exp_rw(struct sroce_dmabuf_exp_rw __user *uarg, bool write)
{
	struct sroce_dmabuf_exp_rw arg;
	struct dma_buf *dmabuf;
	struct exp_buf *buf;
	char __user *ubuf;
	u64 done = 0;
	char *bounce;
	long err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	dmabuf = exp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;
	if (arg.len > dmabuf->size || arg.offset > dmabuf->size - arg.len) {
		err = -EINVAL;
		goto out_put;
	}
	bounce = (char *)__get_free_page(GFP_KERNEL);
	if (!bounce) {
		err = -ENOMEM;
		goto out_put;
	}
	ubuf = u64_to_user_ptr(arg.addr);
	while (done < arg.len) {
		u64 pos = arg.offset + done;
		size_t off = pos & ~PAGE_MASK;
		size_t n = min_t(u64, arg.len - done, PAGE_SIZE - off);
		struct page *page;

		if (write && copy_from_user(bounce, ubuf + done, n)) {
			err = -EFAULT;
			break;
		}
		err = dma_resv_lock_interruptible(dmabuf->resv, NULL);
		if (err)
			break;
		page = buf->cur->pages[pos >> PAGE_SHIFT];
		if (write)
			memcpy_to_page(page, off, bounce, n);
		else
			memcpy_from_page(bounce, page, off, n);
		dma_resv_unlock(dmabuf->resv);
		if (!write && copy_to_user(ubuf + done, bounce, n)) {
			err = -EFAULT;
			break;
		}
		done += n;
		cond_resched();
	}
	free_page((unsigned long)bounce);
out_put:
	dma_buf_put(dmabuf);
	return err;
}

static long exp_move(struct sroce_dmabuf_exp_move __user *uarg)
{
	struct sroce_dmabuf_exp_move arg;
	struct exp_pages *new, *old;
	struct dma_buf *dmabuf;
	struct exp_buf *buf;
	unsigned long i;
	long err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	dmabuf = exp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;
	new = exp_pages_alloc(buf->npages);
	if (!new) {
		err = -ENOMEM;
		goto out_put;
	}
	err = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (err)
		goto out_free;
	if (exp_importer_pins(buf) || buf->static_maps) {
		err = -EBUSY;
		goto out_unlock;
	}
	/* Importers let go of the old pages, now or when their fences signal. */
	exp_move_notify(dmabuf);
	err = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_BOOKKEEP, true,
				    EXP_FENCE_TIMEOUT);
	if (err <= 0) {
		err = err ?: -ETIMEDOUT;
		goto out_unlock;
	}
	err = 0;
	old = buf->cur;
	for (i = 0; i < buf->npages; i++) {
		copy_highpage(new->pages[i], old->pages[i]);
		memset_page(old->pages[i], 0, SROCE_DMABUF_EXP_POISON, PAGE_SIZE);
		cond_resched();
	}
	list_add_tail(&old->node, &buf->old);
	buf->cur = new;
	new = NULL;
	arg.moves = ++buf->moves;
out_unlock:
	dma_resv_unlock(dmabuf->resv);
out_free:
	if (new)
		exp_pages_free(new);
out_put:
	dma_buf_put(dmabuf);
	if (!err && copy_to_user(uarg, &arg, sizeof(arg)))
		err = -EFAULT;
	return err;
}

static long exp_info(struct sroce_dmabuf_exp_info __user *uarg)
{
	struct sroce_dmabuf_exp_info arg;
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct exp_buf *buf;
	long err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	dmabuf = exp_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;
	err = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (err)
		goto out_put;
	arg.attachments = 0;
	list_for_each_entry(attach, &dmabuf->attachments, node)
		arg.attachments++;
	arg.maps = buf->dynamic_maps + buf->static_maps;
	arg.pins = exp_importer_pins(buf);
	arg.moves = buf->moves;
	arg.stale_writes = exp_stale_pages(buf);
	dma_resv_unlock(dmabuf->resv);
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		err = -EFAULT;
out_put:
	dma_buf_put(dmabuf);
	return err;
}

static long exp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case SROCE_DMABUF_EXP_CREATE:
		return exp_create(uarg);
	case SROCE_DMABUF_EXP_WRITE:
		return exp_rw(uarg, true);
	case SROCE_DMABUF_EXP_READ:
		return exp_rw(uarg, false);
	case SROCE_DMABUF_EXP_MOVE:
		return exp_move(uarg);
	case SROCE_DMABUF_EXP_INFO:
		return exp_info(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations exp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = exp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice exp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "sroce_dmabuf_exp",
	.fops = &exp_fops,
	.mode = 0600,
};

module_misc_device(exp_misc);

#ifdef SROCE_HAVE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
MODULE_DESCRIPTION("sroce tests: a dma-buf exporter that moves its buffers");
MODULE_LICENSE("Dual BSD/GPL");
