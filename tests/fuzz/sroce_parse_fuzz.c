// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target over sroce's receive-side parser: kernel/sroce_opcode.c
 * compiled in userspace (tests/fuzz/include stands in for the kernel
 * headers it uses), fed what sroce_rcv() hands it: the bytes of a UDP
 * datagram from the BTH to the end of the ICRC.
 *
 * For every input the parser accepts, what sroce_rcv() and the transport
 * rely on must hold: the opcode is one of the table's, the lengths add up
 * to the datagram, the pad is 0-3, there is no payload on an opcode without
 * one, and building the parsed headers again gives the same bytes (but for
 * the ones the parser ignores: MigReq, reserved bits, FECN/BECN). Any
 * violation aborts, and AddressSanitizer catches any read out of bounds.
 *
 *   make fuzz-parse; build/fuzz/sroce_parse_fuzz -max_total_time=60
 */
#include <stdio.h>
#include <stdlib.h>

#include "sroce_pkt.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			abort();					\
		}							\
	} while (0)

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	u8 again[SROCE_MAX_HDR_BYTES + SROCE_AETH_BYTES + SROCE_ATMACK_BYTES];
	const struct sroce_opcode_info *info;
	struct sroce_pkt pkt;
	unsigned int hdr_len, i;
	u8 *copy;

	if (size > 65535)
		return 0;
	/* An exact-size heap copy: ASan sees any read past its end. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&pkt, 0, sizeof(pkt));
	if (sroce_hdr_parse(copy, size, &pkt)) {
		free(copy);
		return 0;
	}

	info = &sroce_opcode_table[copy[0]];
	hdr_len = info->hdr_len;
	CHECK(info->mask && pkt.info == info && pkt.mask == info->mask);
	CHECK(pkt.opcode == copy[0]);
	CHECK(hdr_len >= SROCE_BTH_BYTES && hdr_len <= sizeof(again));
	CHECK(pkt.payload_off == hdr_len);
	CHECK(pkt.pad <= 3);
	CHECK((size_t)hdr_len + pkt.paylen + pkt.pad + SROCE_ICRC_BYTES ==
	      size);
	CHECK(!pkt.paylen || (info->mask & SROCE_M_PAYLOAD));
	CHECK(pkt.dqpn <= SROCE_BTH_QPN_MASK && pkt.psn <= SROCE_PSN_MASK);
	CHECK(!(copy[1] & SROCE_BTH_TVER_MASK));
	/* Exactly one of request and response, or a CNP (neither). */
	if (info->mask & SROCE_M_CNP)
		CHECK(info->mask == SROCE_M_CNP && !pkt.paylen);
	else
		CHECK(!(info->mask & SROCE_M_REQ) !=
		      !(info->mask & SROCE_M_RESP));

	/* What the transport derives from it stays in range. */
	CHECK(sroce_psn_diff(pkt.psn, pkt.dqpn) >= -(1 << 23) &&
	      sroce_psn_diff(pkt.psn, pkt.dqpn) < (1 << 23));
	CHECK(sroce_psn_classify(pkt.psn, pkt.psn) == SROCE_PSN_EXPECTED);
	CHECK(sroce_pad(pkt.paylen) <= 3);

	/* Build the parsed headers again: the same bytes but ignored bits. */
	sroce_hdr_build(again, &pkt);
	CHECK(again[0] == copy[0]);
	CHECK((again[1] & ~SROCE_BTH_MIG) == (copy[1] & ~SROCE_BTH_MIG));
	CHECK(!memcmp(again + 2, copy + 2, 2));
	CHECK(!memcmp(again + 5, copy + 5, 3));
	CHECK((again[8] & 0x80) == (copy[8] & 0x80));
	CHECK(!memcmp(again + 9, copy + 9, 3));
	for (i = SROCE_BTH_BYTES; i < hdr_len; i++) {
		/* A CNP's 16 bytes are reserved: ignored on receive. */
		if (info->mask & SROCE_M_CNP)
			break;
		/* The DETH's source QPN has a reserved top byte. */
		if ((info->mask & SROCE_M_DETH) && i == SROCE_BTH_BYTES + 4)
			continue;
		/* So has the XRCETH (XRC requests: right after the BTH). */
		if ((info->mask & SROCE_M_XRCETH) && i == SROCE_BTH_BYTES) {
			CHECK(again[i] == 0);
			continue;
		}
		/* The FETH (FLUSH): only placement and selectivity count. */
		if ((info->mask & SROCE_M_FETH) &&
		    i < SROCE_BTH_BYTES + SROCE_FETH_BYTES) {
			if (i == SROCE_BTH_BYTES + SROCE_FETH_BYTES - 1)
				CHECK(again[i] == (copy[i] & 0x3f));
			else
				CHECK(again[i] == 0);
			continue;
		}
		CHECK(again[i] == copy[i]);
	}
	free(copy);
	return 0;
}
