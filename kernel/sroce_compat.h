/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: the one place where kernel versions differ.
 *
 * Role files call the API of the newest kernel sroce supports; what an
 * older kernel lacks is provided here under that name (or a sroce_ name
 * where the new API cannot be reproduced exactly). Nothing else in the
 * module tests what the kernel has. SROCE_HAVE_* come from kernel/Kbuild,
 * which looks for each API in the headers being built against.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/mm.h>

/* vm_flags became write-protected (vm_flags_set()) in 6.3. */
static inline void sroce_vm_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
#ifdef SROCE_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* SROCE_COMPAT_H */
