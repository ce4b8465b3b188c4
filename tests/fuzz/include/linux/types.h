/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Userspace stand-in for the kernel's linux/types.h (tests/fuzz only). */
#ifndef SROCE_FUZZ_LINUX_TYPES_H
#define SROCE_FUZZ_LINUX_TYPES_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef uint32_t __be32;

#define BIT(n) (1UL << (n))

#endif
