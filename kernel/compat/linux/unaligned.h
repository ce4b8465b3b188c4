/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce compat (kernel/Kbuild puts this directory on the include path only
 * when the kernel has no <linux/unaligned.h>, which moved from asm/ in 6.12).
 */
#ifndef SROCE_COMPAT_LINUX_UNALIGNED_H
#define SROCE_COMPAT_LINUX_UNALIGNED_H

#include <asm/unaligned.h>

#endif
