/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * sroce_dmabuf_exp: the ioctls of the test-only dma-buf exporter
 * (tests/kmod/sroce_dmabuf_exp.c) on /dev/sroce_dmabuf_exp. Included by
 * the module and by the test programs (C or C++): only <linux/types.h> and
 * <linux/ioctl.h>, fixed layouts, every padding field must be zero.
 *
 * Errors (errno): EINVAL for a bad argument, a nonzero pad, or an fd that
 * is a dma-buf of another exporter; EBADF for an fd that is not open;
 * EFAULT for bad user memory; EBUSY for MOVE on a buffer that may not
 * move; EINTR when a signal came while waiting for the buffer's lock.
 */
#ifndef SROCE_DMABUF_EXP_H
#define SROCE_DMABUF_EXP_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SROCE_DMABUF_EXP_DEV		"/dev/sroce_dmabuf_exp"
#define SROCE_DMABUF_EXP_MAX_SIZE	(64ULL << 20)
/* What a MOVE leaves in every byte of the pages the buffer moved from. */
#define SROCE_DMABUF_EXP_POISON		0x6b

/*
 * CREATE: a new dma-buf of @size bytes (a multiple of the page size, one
 * page to SROCE_DMABUF_EXP_MAX_SIZE), zeroed; @fd is returned, open
 * O_RDWR and close-on-exec. The buffer lives until its last fd and every
 * importer's reference are gone.
 */
struct sroce_dmabuf_exp_create {
	__u64 size;		/* in */
	__s32 fd;		/* out */
	__u32 pad;
};

/*
 * WRITE, READ: copy @len bytes between the buffer @fd at @offset and user
 * memory at @addr, through the pages the buffer is in now.
 */
struct sroce_dmabuf_exp_rw {
	__s32 fd;
	__u32 pad;
	__u64 offset;
	__u64 len;
	__u64 addr;		/* a user pointer */
};

/*
 * MOVE: move the buffer @fd to new pages, its contents copied: its
 * importers are told (move_notify / invalidate_mappings) and must map it
 * again; the old pages are filled with SROCE_DMABUF_EXP_POISON and kept,
 * still allocated, until the buffer is released. EBUSY while an importer
 * has it pinned (dma_buf_pin()), or a static importer (one that cannot be
 * told) has it mapped. @moves: the buffer's moves so far, this one
 * included.
 */
struct sroce_dmabuf_exp_move {
	__s32 fd;
	__u32 pad;
	__u64 moves;		/* out */
};

/* INFO: the buffer @fd now. */
struct sroce_dmabuf_exp_info {
	__s32 fd;
	__u32 pad;
	__u64 attachments;	/* importers attached */
	__u64 maps;		/* mappings (map_dma_buf) not yet unmapped */
	__u64 pins;		/* dma_buf_pin() by importers, not yet unpinned */
	__u64 moves;		/* MOVEs done */
	__u64 stale_writes;	/* old pages no longer all poison */
};

#define SROCE_DMABUF_EXP_CREATE	_IOWR('S', 1, struct sroce_dmabuf_exp_create)
#define SROCE_DMABUF_EXP_WRITE	_IOW('S', 2, struct sroce_dmabuf_exp_rw)
#define SROCE_DMABUF_EXP_READ	_IOW('S', 3, struct sroce_dmabuf_exp_rw)
#define SROCE_DMABUF_EXP_MOVE	_IOWR('S', 4, struct sroce_dmabuf_exp_move)
#define SROCE_DMABUF_EXP_INFO	_IOWR('S', 5, struct sroce_dmabuf_exp_info)

#endif /* SROCE_DMABUF_EXP_H */
