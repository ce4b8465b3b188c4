/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Userspace stand-in (tests/fuzz only): the parser needs no skb. */
#ifndef SROCE_FUZZ_LINUX_SKBUFF_H
#define SROCE_FUZZ_LINUX_SKBUFF_H
struct sk_buff;
#endif
