// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): MODULE_IMPORT_NS() takes the
 * namespace as an identifier (before 6.13), not as a string literal.
 */
#include <linux/module.h>

MODULE_IMPORT_NS(DMA_BUF);
