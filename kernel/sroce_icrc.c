// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the invariant CRC of a RoCEv2 packet (IBTA annex A17.3.3).
 *
 * The ICRC is a CRC-32 (the Ethernet polynomial, reflected) over a
 * pseudo-packet: eight 0xff bytes standing for the masked LRH, the IP
 * header with the fields routers change masked to ones (IPv4: TOS, TTL,
 * header checksum; IPv6: traffic class, flow label, hop limit), the UDP
 * header with its checksum masked, the BTH with its reserved byte (FECN,
 * BECN) masked, the rest of the transport headers, the payload and the
 * pad. It is sent inverted, least significant byte first.
 *
 * No locking: pure computation over the caller's skb.
 */

#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "sroce.h"
#include "sroce_pkt.h"

/* CRC state after the masked LRH: crc32_le(~0, ff x 8). */
static u32 sroce_icrc_seed __read_mostly;

void sroce_icrc_init(void)
{
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };

	sroce_icrc_seed = crc32_le(~0U, lrh, sizeof(lrh));
}

/* Continue @crc over @len bytes of @skb from @off (any skb layout). */
static u32 sroce_crc_skb(u32 crc, struct sk_buff *skb, unsigned int off,
			 unsigned int len)
{
	struct skb_seq_state st;
	unsigned int consumed = 0;
	const u8 *data;
	unsigned int n;

	if (!len)
		return crc;
	if (off + len <= skb_headlen(skb))
		return crc32_le(crc, skb->data + off, len);

	/*
	 * skb_seq_read() hands out whole blocks (the rest of the linear part
	 * or of a fragment) and does not clip the last one at the upper
	 * bound: clip it here, or a packet whose pad and ICRC share a
	 * fragment would have its own ICRC field summed.
	 */
	skb_prepare_seq_read(skb, off, off + len, &st);
	while (consumed < len && (n = skb_seq_read(consumed, &data, &st))) {
		n = min(n, len - consumed);
		crc = crc32_le(crc, data, n);
		consumed += n;
	}
	skb_abort_seq_read(&st);	/* unmaps a fragment left mapped */
	return crc;
}

/**
 * sroce_icrc - compute the ICRC of a packet
 * @skb: the packet; the IP, UDP and transport headers are in its linear
 *	part, the payload anywhere
 * @l3: the IP header
 * @ipv6: @l3 is an IPv6 header (else IPv4 without options)
 * @bth: the transport headers (hdr_len bytes, linear)
 * @hdr_len: bytes of transport headers from the BTH
 * @payload_off: offset of the payload from skb->data
 * @payload_len: payload plus pad bytes
 *
 * Return: the value to put on, or expect from, the wire (little-endian).
 */
u32 sroce_icrc(struct sk_buff *skb, const void *l3, bool ipv6, const u8 *bth,
	       unsigned int hdr_len, unsigned int payload_off,
	       unsigned int payload_len)
{
	u8 pseudo[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		  SROCE_BTH_BYTES];
	unsigned int l3_len = ipv6 ? sizeof(struct ipv6hdr) :
				     sizeof(struct iphdr);
	struct udphdr *udph = (struct udphdr *)(pseudo + l3_len);
	u32 crc;

	/* The UDP header follows the IP header; the BTH follows UDP. */
	memcpy(pseudo, l3, l3_len + sizeof(struct udphdr));
	memcpy(pseudo + l3_len + sizeof(struct udphdr), bth, SROCE_BTH_BYTES);
	if (ipv6) {
		struct ipv6hdr *ip6h = (struct ipv6hdr *)pseudo;

		ip6h->priority = 0xf;
		memset(ip6h->flow_lbl, 0xff, sizeof(ip6h->flow_lbl));
		ip6h->hop_limit = 0xff;
	} else {
		struct iphdr *iph = (struct iphdr *)pseudo;

		iph->tos = 0xff;
		iph->ttl = 0xff;
		iph->check = htons(0xffff);
	}
	udph->check = htons(0xffff);
	/* BTH byte 4: FECN, BECN and reserved bits. */
	pseudo[l3_len + sizeof(struct udphdr) + 4] = 0xff;

	crc = crc32_le(sroce_icrc_seed, pseudo,
		       l3_len + sizeof(struct udphdr) + SROCE_BTH_BYTES);
	crc = crc32_le(crc, bth + SROCE_BTH_BYTES, hdr_len - SROCE_BTH_BYTES);
	crc = sroce_crc_skb(crc, skb, payload_off, payload_len);
	return ~crc;
}
