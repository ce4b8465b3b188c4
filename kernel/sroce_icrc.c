// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the invariant CRC of a RoCE packet (IBTA annex A17.3.3 for
 * RoCE v2; annex A16 for v1, where the GRH takes the IP header's place
 * and there is no UDP header).
 *
 * The ICRC is a CRC-32 (the Ethernet polynomial, reflected) over a
 * pseudo-packet: eight 0xff bytes standing for the masked LRH, the IP
 * header with the fields routers change masked to ones (IPv4: TOS, TTL,
 * header checksum; IPv6: traffic class, flow label, hop limit), the UDP
 * header with its checksum masked, the BTH with its reserved byte (FECN,
 * BECN) masked, the rest of the transport headers, the payload and the
 * pad. It is sent inverted, least significant byte first.
 *
 * The CRC-32 itself has two engines: the kernel's crc32_le() (slice-by-8
 * tables on 6.12) and the crypto API's "crc32", which on x86 is the
 * crc32-pclmul driver (carry-less multiplication, several times faster on
 * a real CPU, and what rdma_rxe uses). Neither is the faster everywhere:
 * under QEMU's TCG, PCLMULQDQ is emulated bit by bit and the tables win by
 * 2x. So module load times both over a packet-sized buffer and keeps the
 * faster, as the kernel's RAID-6 and XOR libraries choose their
 * routines; module parameter icrc_engine=lib|shash forces one, and reads
 * back the one in use.
 *
 * Locking: none. The engine is chosen before any device exists (module
 * init; KUnit, before any device too) and read through a static key.
 */

#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "sroce.h"
#include "sroce_pkt.h"

/* CRC state after the masked LRH: crc32_le(~0, ff x 8). */
static u32 sroce_icrc_seed __read_mostly;

static const char * const sroce_crc_engine_names[] = {
	[SROCE_CRC_AUTO] = "auto",
	[SROCE_CRC_LIB] = "lib",
	[SROCE_CRC_SHASH] = "shash",
};

static enum sroce_crc_engine sroce_crc_engine_asked = SROCE_CRC_AUTO;
static enum sroce_crc_engine sroce_crc_engine_used = SROCE_CRC_LIB;
static struct crypto_shash *sroce_crc_tfm;
static DEFINE_STATIC_KEY_FALSE(sroce_crc_use_shash);

/* Below this many bytes the crypto API's call costs more than it saves. */
#define SROCE_CRC_SHASH_MIN	64
/* Calibration: the payload of one packet at path MTU 4096. */
#define SROCE_CRC_CAL_BYTES	4096
#define SROCE_CRC_CAL_ROUNDS	4
#define SROCE_CRC_CAL_CALLS	8

static int sroce_crc_engine_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(sroce_crc_engine_names, val);

	if (i < 0)
		return -EINVAL;
	sroce_crc_engine_asked = i;
	return 0;
}

static int sroce_crc_engine_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 sroce_crc_engine_names[sroce_crc_engine_used]);
}

static const struct kernel_param_ops sroce_crc_engine_ops = {
	.set = sroce_crc_engine_set,
	.get = sroce_crc_engine_get,
};
module_param_cb(icrc_engine, &sroce_crc_engine_ops, NULL, 0444);
MODULE_PARM_DESC(icrc_engine,
		 "CRC-32 of the ICRC: auto (the faster, timed at load), lib (crc32_le), shash (crypto API \"crc32\")");

static u32 sroce_crc_shash(u32 crc, const void *p, size_t len)
{
	SHASH_DESC_ON_STACK(desc, sroce_crc_tfm);
	u32 *ctx = shash_desc_ctx(desc);

	/* The "crc32" drivers keep the running CRC, uninverted, as a u32. */
	desc->tfm = sroce_crc_tfm;
	*ctx = crc;
	if (unlikely(crypto_shash_update(desc, p, len)))
		return crc32_le(crc, p, len);
	return *ctx;
}

/**
 * sroce_crc32_with - continue a CRC-32 with a given engine
 * @engine: SROCE_CRC_LIB, or SROCE_CRC_SHASH when sroce_crc_have_shash()
 * @crc: the running CRC (crc32_le()'s convention: no inversion inside)
 * @p: the bytes
 * @len: how many
 */
u32 sroce_crc32_with(enum sroce_crc_engine engine, u32 crc, const void *p,
		     size_t len)
{
	if (engine == SROCE_CRC_SHASH && sroce_crc_tfm)
		return sroce_crc_shash(crc, p, len);
	return crc32_le(crc, p, len);
}

/* The running CRC over @len bytes at @p, with the engine in use. */
static u32 sroce_crc32(u32 crc, const void *p, size_t len)
{
	if (static_branch_unlikely(&sroce_crc_use_shash) &&
	    len >= SROCE_CRC_SHASH_MIN)
		return sroce_crc_shash(crc, p, len);
	return crc32_le(crc, p, len);
}

bool sroce_crc_have_shash(void)
{
	return sroce_crc_tfm;
}

enum sroce_crc_engine sroce_crc_engine(void)
{
	return sroce_crc_engine_used;
}

/**
 * sroce_crc_set_engine - use @engine for every ICRC from now on
 * @engine: SROCE_CRC_LIB or SROCE_CRC_SHASH
 *
 * May sleep (it patches the static key). Only while no packet is summed:
 * module init, or KUnit before any device exists.
 */
int sroce_crc_set_engine(enum sroce_crc_engine engine)
{
	if (engine == SROCE_CRC_SHASH && !sroce_crc_tfm)
		return -ENOENT;
	if (engine == SROCE_CRC_SHASH)
		static_branch_enable(&sroce_crc_use_shash);
	else
		static_branch_disable(&sroce_crc_use_shash);
	sroce_crc_engine_used = engine == SROCE_CRC_SHASH ? SROCE_CRC_SHASH :
							    SROCE_CRC_LIB;
	return 0;
}

/* Best time, in ns, of SROCE_CRC_CAL_CALLS sums of @buf with @engine. */
static u64 sroce_crc_time(enum sroce_crc_engine engine, const u8 *buf)
{
	u64 best = U64_MAX;
	u32 crc = ~0U;
	int r, i;

	for (r = 0; r < SROCE_CRC_CAL_ROUNDS; r++) {
		u64 t0 = ktime_get_ns();

		for (i = 0; i < SROCE_CRC_CAL_CALLS; i++)
			crc = sroce_crc32_with(engine, crc, buf,
					       SROCE_CRC_CAL_BYTES);
		best = min(best, ktime_get_ns() - t0);
		cond_resched();
	}
	barrier_data(&crc);
	return best ?: 1;
}

static u64 sroce_crc_mibs(u64 ns)
{
	return div64_u64((u64)SROCE_CRC_CAL_CALLS * SROCE_CRC_CAL_BYTES *
			 NSEC_PER_SEC, ns * SZ_1M);
}

/*
 * Time both engines and keep the faster (the crypto API's only when it
 * gives the same sums). Returns the engine to use.
 */
static enum sroce_crc_engine sroce_crc_calibrate(void)
{
	enum sroce_crc_engine pick = SROCE_CRC_LIB;
	u64 lib_ns, shash_ns;
	unsigned int len;
	u8 *buf;

	buf = kmalloc(SROCE_CRC_CAL_BYTES, GFP_KERNEL);
	if (!buf)
		return SROCE_CRC_LIB;
	get_random_bytes(buf, SROCE_CRC_CAL_BYTES);
	for (len = 0; len <= SROCE_CRC_CAL_BYTES; len += len < 256 ? 1 : 509) {
		if (sroce_crc32_with(SROCE_CRC_SHASH, len, buf, len) !=
		    crc32_le(len, buf, len)) {
			pr_warn("%s: crypto \"crc32\" (%s) disagrees with crc32_le at %u bytes: not used\n",
				SROCE_DRV_NAME,
				crypto_shash_driver_name(sroce_crc_tfm), len);
			goto out;
		}
	}
	lib_ns = sroce_crc_time(SROCE_CRC_LIB, buf);
	shash_ns = sroce_crc_time(SROCE_CRC_SHASH, buf);
	if (shash_ns < lib_ns)
		pick = SROCE_CRC_SHASH;
	pr_info("%s: ICRC engine %s (crc32_le %llu MiB/s, %s %llu MiB/s)\n",
		SROCE_DRV_NAME, sroce_crc_engine_names[pick],
		sroce_crc_mibs(lib_ns), crypto_shash_driver_name(sroce_crc_tfm),
		sroce_crc_mibs(shash_ns));
out:
	kfree(buf);
	return pick;
}

/**
 * sroce_crc_engine_init - choose the CRC engine (module init)
 *
 * Return: 0, or -ENOENT when icrc_engine=shash was asked for and the
 * crypto API has no "crc32".
 */
int sroce_crc_engine_init(void)
{
	enum sroce_crc_engine pick = SROCE_CRC_LIB;
	struct crypto_shash *tfm;

	if (sroce_crc_engine_asked != SROCE_CRC_LIB) {
		tfm = crypto_alloc_shash("crc32", 0, 0);
		if (!IS_ERR(tfm))
			sroce_crc_tfm = tfm;
	}
	if (sroce_crc_engine_asked == SROCE_CRC_SHASH) {
		if (!sroce_crc_tfm) {
			pr_err("%s: icrc_engine=shash, but the crypto API has no \"crc32\"\n",
			       SROCE_DRV_NAME);
			return -ENOENT;
		}
		pick = SROCE_CRC_SHASH;
	} else if (sroce_crc_tfm) {
		pick = sroce_crc_calibrate();
	}
	return sroce_crc_set_engine(pick);
}

void sroce_crc_engine_exit(void)
{
	sroce_crc_set_engine(SROCE_CRC_LIB);
	if (sroce_crc_tfm)
		crypto_free_shash(sroce_crc_tfm);
	sroce_crc_tfm = NULL;
}

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
		return sroce_crc32(crc, skb->data + off, len);

	/*
	 * skb_seq_read() hands out whole blocks (the rest of the linear part
	 * or of a fragment) and does not clip the last one at the upper
	 * bound: clip it here, or a packet whose pad and ICRC share a
	 * fragment would have its own ICRC field summed.
	 */
	skb_prepare_seq_read(skb, off, off + len, &st);
	while (consumed < len && (n = skb_seq_read(consumed, &data, &st))) {
		n = min(n, len - consumed);
		crc = sroce_crc32(crc, data, n);
		consumed += n;
	}
	skb_abort_seq_read(&st);	/* unmaps a fragment left mapped */
	return crc;
}

/**
 * sroce_icrc - compute the ICRC of a packet
 * @skb: the packet; the IP, UDP and transport headers are in its linear
 *	part, the payload anywhere
 * @l3: the IP header (RoCE v2), or the GRH (RoCE v1)
 * @net: RDMA_NETWORK_IPV4 (@l3 is IPv4 without options, then UDP),
 *	RDMA_NETWORK_IPV6 (IPv6, then UDP) or RDMA_NETWORK_ROCE_V1 (a GRH,
 *	whose fields routers change are masked as IPv6's; no UDP)
 * @bth: the transport headers (hdr_len bytes, linear)
 * @hdr_len: bytes of transport headers from the BTH
 * @payload_off: offset of the payload from skb->data
 * @payload_len: payload plus pad bytes
 *
 * Return: the value to put on, or expect from, the wire (little-endian).
 */
u32 sroce_icrc(struct sk_buff *skb, const void *l3,
	       enum rdma_network_type net, const u8 *bth,
	       unsigned int hdr_len, unsigned int payload_off,
	       unsigned int payload_len)
{
	u8 pseudo[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		  SROCE_BTH_BYTES];
	unsigned int l3_len = net == RDMA_NETWORK_IPV4 ? sizeof(struct iphdr) :
							 sizeof(struct ipv6hdr);
	unsigned int l4_len = net == RDMA_NETWORK_ROCE_V1 ? 0 :
							    sizeof(struct udphdr);
	u32 crc;

	/* The UDP header (v2) follows the IP header; the BTH follows. */
	memcpy(pseudo, l3, l3_len + l4_len);
	memcpy(pseudo + l3_len + l4_len, bth, SROCE_BTH_BYTES);
	if (net != RDMA_NETWORK_IPV4) {
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
	if (l4_len)
		((struct udphdr *)(pseudo + l3_len))->check = htons(0xffff);
	/* BTH byte 4: FECN, BECN and reserved bits. */
	pseudo[l3_len + l4_len + 4] = 0xff;

	crc = crc32_le(sroce_icrc_seed, pseudo,
		       l3_len + l4_len + SROCE_BTH_BYTES);
	crc = crc32_le(crc, bth + SROCE_BTH_BYTES, hdr_len - SROCE_BTH_BYTES);
	crc = sroce_crc_skb(crc, skb, payload_off, payload_len);
	return ~crc;
}
