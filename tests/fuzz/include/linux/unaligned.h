/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Userspace stand-in for linux/unaligned.h, big-endian accessors only. */
#ifndef SROCE_FUZZ_LINUX_UNALIGNED_H
#define SROCE_FUZZ_LINUX_UNALIGNED_H

#include <linux/types.h>

static inline u16 get_unaligned_be16(const void *p)
{
	const u8 *b = p;

	return (u16)(b[0] << 8 | b[1]);
}

static inline u32 get_unaligned_be32(const void *p)
{
	return (u32)get_unaligned_be16(p) << 16 |
	       get_unaligned_be16((const u8 *)p + 2);
}

static inline u64 get_unaligned_be64(const void *p)
{
	return (u64)get_unaligned_be32(p) << 32 |
	       get_unaligned_be32((const u8 *)p + 4);
}

static inline void put_unaligned_be16(u16 v, void *p)
{
	u8 *b = p;

	b[0] = v >> 8;
	b[1] = v;
}

static inline void put_unaligned_be32(u32 v, void *p)
{
	put_unaligned_be16(v >> 16, p);
	put_unaligned_be16(v, (u8 *)p + 2);
}

static inline void put_unaligned_be64(u64 v, void *p)
{
	put_unaligned_be32(v >> 32, p);
	put_unaligned_be32(v, (u8 *)p + 4);
}

#endif
