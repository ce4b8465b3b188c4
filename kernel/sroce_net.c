// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the network side — one pair of RoCEv2 UDP sockets (IPv4 and
 * IPv6, port 4791) per network namespace, shared by the sroce devices
 * whose netdevs live there, and one global packet handler for RoCE v1
 * (ethertype 0x8915); receive (parse, ICRC, QP lookup, hand to the
 * responder or completer) and transmit (route, UDP/IP headers, ICRC; for
 * v1 the GRH and Ethernet header to the resolved MAC).
 *
 * Receive runs in the UDP socket's softirq, or for a stream's bursts in
 * a worker on another CPU ("Receive steering"); transmit in whatever
 * context the sending engine runs (both may run anywhere, neither sleeps).
 *
 * Keeping the sockets in the netdev's own namespace is what lets sroce
 * work inside any namespace and sit beside rdma_rxe, which binds 4791 in
 * init_net only.
 *
 * Locking and lifetime:
 *  - sn->lock (mutex) guards sn->users, sn->dead and the sockets. The
 *    sockets are opened by the first device of a namespace and released
 *    by the last one.
 *  - sn->devs maps ifindex -> sroce_dev; the receive path reads it under
 *    RCU (UDP delivery runs inside rcu_read_lock). A device is erased and
 *    an RCU grace period passes before the device is torn down.
 *  - A namespace being dismantled has its devices unregistered by ib_core
 *    work that may still be running when our pernet exit is called, so
 *    the exit waits until the last device has let go of the sockets.
 *  - A device's steering queues (struct sroce_rxq): each queue's lock
 *    guards its busy flag and CPU; detach unpublishes the device, waits a
 *    grace period, then stops their work before the device lets go of
 *    its sockets.
 *  - Loopback deliveries waiting in a CPU's queue (struct sroce_lo_cpu)
 *    name their device by namespace and ifindex; detach waits until no
 *    queue holds one of a device that is gone (sroce_lo_flush()).
 */

#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/module.h>
#include <linux/udp.h>
#include <linux/unaligned.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

struct sroce_netns {
	struct mutex lock;		/* users, dead, sock4, sock6 */
	unsigned int users;
	unsigned int detaching;		/* devices still in sroce_net_detach() */
	bool dead;
	struct socket *sock4;
	struct socket *sock6;
	struct xarray devs;
	wait_queue_head_t idle_wq;	/* pernet exit: no users, none detaching */
};

static unsigned int sroce_net_id __read_mostly;

/*
 * Loopback. A packet to an address of this host goes straight to the
 * receive path of the device that owns it, in the sender's context, and
 * what it sets off there may send again: the responder's ACK, the next
 * request of the QP that ACK woke (sroce_comp_rcv() runs its requester),
 * and so on, to local destinations too. Run inside one another, a chain
 * of QPs, each answering to the next (any process can wire one: the
 * destination QPN is the application's choice), would nest without bound
 * and overrun the kernel stack. So a CPU delivers one loopback packet at
 * a time: one that comes while another is being delivered there (depth)
 * waits in the CPU's queue, and the outermost delivery takes the queue
 * in order after its own, up to SROCE_LO_BUDGET packets; a worker takes
 * what is left, so the sender's call is bounded too.
 *
 * All of it runs with bottom halves off (sroce_net_xmit()) and under RCU;
 * a CPU's queue is only appended to by that CPU, but its worker may run
 * elsewhere (CPU hotplug), hence the locked queue operations.
 */
#define SROCE_LO_BUDGET		64
#define SROCE_LO_QUEUE_MAX	4096

struct sroce_lo_cpu {
	struct sk_buff_head queue;
	struct work_struct work;
	unsigned int depth;		/* deliveries running on this CPU */
};

/* Where a queued loopback packet goes (skb->cb), and in which framing. */
struct sroce_lo_cb {
	struct sroce_netns *sn;
	int ifindex;
	bool v1;		/* skb->data at the GRH, else at UDP */
};

static DEFINE_PER_CPU(struct sroce_lo_cpu, sroce_lo);

/* Receive ------------------------------------------------------------ */

static void sroce_rcv_drop(struct sroce_dev *sdev, struct sk_buff *skb,
			   enum sroce_counter why)
{
	sroce_count(sdev, why, 1);
	kfree_skb(skb);
}

/* Dropped once parsed: the tracepoint names the packet. */
static void sroce_rcv_drop_pkt(struct sroce_dev *sdev, struct sk_buff *skb,
			       const struct sroce_pkt *pkt,
			       enum sroce_counter why)
{
	trace_sroce_rx_drop(sdev, pkt, why);
	sroce_rcv_drop(sdev, skb, why);
}

/*
 * The IP header of a received packet, if it is one sroce takes: IPv4
 * without options, or IPv6 with UDP as the next header (no extension
 * headers), so that the ICRC's masked pseudo-header is well defined.
 */
static const void *sroce_rcv_l3(struct sk_buff *skb, bool *ipv6)
{
	const struct iphdr *iph = ip_hdr(skb);

	if (iph->version == 4) {
		*ipv6 = false;
		return iph->ihl == 5 ? iph : NULL;
	}
	if (iph->version == 6 && ipv6_hdr(skb)->nexthdr == IPPROTO_UDP) {
		*ipv6 = true;
		return ipv6_hdr(skb);
	}
	return NULL;
}

/*
 * rdma_rxe (6.2 on, 7.2 still) seals a FLUSH with an ICRC that covers
 * its transport headers twice: as IBTA says, then once more unmasked in
 * place of the payload a FLUSH has none of (rxe's opcode table gives
 * FLUSH no payload offset, so its "payload" starts at the BTH). It drops
 * a FLUSH sealed as IBTA says, and its own fail IBTA's check. sroce takes
 * a FLUSH sealed either way (those sealed as rxe does counted as
 * rx_flush_rxe_icrc and so marked for the responder, which learns the
 * peer's way from them) and seals its own the way the peer takes
 * (sroce_req_flush_icrc(), SROCE_XMIT_RXE_FLUSH_ICRC). Only a FLUSH,
 * which carries no payload, is ever taken so.
 */
static bool sroce_rcv_icrc_ok(struct sroce_dev *sdev, struct sk_buff *skb,
			      unsigned int bth_off, unsigned int len,
			      enum rdma_network_type net, unsigned int hdr_len,
			      struct sroce_pkt *pkt)
{
	const void *l3 = skb_network_header(skb);
	const u8 *bth = skb->data + bth_off;
	__le32 wire, *wirep;
	u32 icrc;

	pkt->rxe_flush_icrc = false;
	wirep = skb_header_pointer(skb, bth_off + len - SROCE_ICRC_BYTES,
				   sizeof(wire), &wire);
	if (!wirep)
		return false;
	icrc = le32_to_cpu(*wirep);
	if (icrc == sroce_icrc(skb, l3, net, bth, hdr_len, bth_off + hdr_len,
			       pkt->paylen + pkt->pad))
		return true;
	if (pkt->opcode != SROCE_OP_FLUSH || pkt->paylen || pkt->pad ||
	    icrc != sroce_icrc(skb, l3, net, bth, hdr_len, bth_off, hdr_len))
		return false;
	pkt->rxe_flush_icrc = true;
	sroce_count(sdev, SROCE_CNT_RX_RXE_FLUSH_ICRC, 1);
	return true;
}

/*
 * From the BTH on, both framings are one: parse and check the transport
 * headers (at @bth_off from skb->data, @len bytes up to the ICRC's end)
 * up to the point where a QP takes the packet: ICRC, P_Key, QPN. The
 * network header is the IP header (v2) or the GRH (v1), which the ICRC
 * covers as @net says.
 */
static void sroce_rcv_bth(struct sroce_dev *sdev, struct sk_buff *skb,
			  unsigned int bth_off, unsigned int len,
			  enum rdma_network_type net)
{
	struct sroce_pkt pkt;
	unsigned int hdr_len;
	struct sroce_qp *qp;

	hdr_len = sroce_opcode_table[skb->data[bth_off]].hdr_len;
	if (!hdr_len || !pskb_may_pull(skb, bth_off + hdr_len))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	if (sroce_hdr_parse(skb->data + bth_off, len, &pkt))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);

	if (!sroce_rcv_icrc_ok(sdev, skb, bth_off, len, net, hdr_len, &pkt))
		return sroce_rcv_drop_pkt(sdev, skb, &pkt,
					  SROCE_CNT_RX_DROP_ICRC);
	pkt.payload_off = bth_off + hdr_len;
	pkt.net_type = net;

	if ((pkt.pkey & 0x7fff) != 0x7fff)
		return sroce_rcv_drop_pkt(sdev, skb, &pkt,
					  SROCE_CNT_RX_DROP_MALFORMED);

	/* A CNP names a QP of ours, never a multicast group. */
	if ((pkt.mask & SROCE_M_CNP) && pkt.dqpn == SROCE_MCAST_QPN)
		return sroce_rcv_drop_pkt(sdev, skb, &pkt,
					  SROCE_CNT_RX_DROP_MALFORMED);
	if (pkt.dqpn == SROCE_MCAST_QPN) {
		if (!sroce_mcast_rcv(sdev, skb, &pkt))
			return sroce_rcv_drop_pkt(sdev, skb, &pkt,
						  SROCE_CNT_RX_DROP_NO_QP);
		consume_skb(skb);
		return;
	}
	qp = sroce_qp_get(sdev, pkt.dqpn);
	if (!qp)
		return sroce_rcv_drop_pkt(sdev, skb, &pkt,
					  SROCE_CNT_RX_DROP_NO_QP);
	if (!(pkt.info->valid_qpt & BIT(qp->ibqp.qp_type))) {
		sroce_qp_put(qp);
		return sroce_rcv_drop_pkt(sdev, skb, &pkt,
					  SROCE_CNT_RX_DROP_MALFORMED);
	}
	if (pkt.mask & SROCE_M_CNP) {
		sroce_cc_cnp_rcv(qp);
		sroce_qp_put(qp);
		consume_skb(skb);
		return;
	}
	sroce_cc_rcv(qp, skb, &pkt);
	/*
	 * From here an XRC packet is its RC operation (the table gives
	 * both the same meaning); pkt.mask keeps SROCE_M_XRCETH.
	 */
	if ((pkt.opcode & SROCE_TRANSPORT_MASK) == SROCE_TRANSPORT_XRC) {
		pkt.opcode &= SROCE_OP_MASK;
		pkt.info = &sroce_opcode_table[pkt.opcode];
	}

	if (pkt.mask & SROCE_M_REQ)
		sroce_resp_rcv(qp, skb, &pkt);
	else
		sroce_comp_rcv(qp, skb, &pkt);
	sroce_qp_put(qp);
	consume_skb(skb);
}

/*
 * RoCE v2: one datagram, skb->data at its UDP header (the IP header is
 * the network header).
 */
static void sroce_rcv(struct sroce_dev *sdev, struct sk_buff *skb)
{
	const unsigned int udp = sizeof(struct udphdr);
	unsigned int ulen;
	bool ipv6;

	if (!pskb_may_pull(skb, udp + SROCE_BTH_BYTES))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	ulen = ntohs(udp_hdr(skb)->len);
	if (ulen < udp + SROCE_BTH_BYTES + SROCE_ICRC_BYTES ||
	    ulen > skb->len || pskb_trim(skb, ulen))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	if (!sroce_rcv_l3(skb, &ipv6))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	sroce_rcv_bth(sdev, skb, udp, ulen - udp,
		      ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4);
}

/*
 * RoCE v1: one frame's payload, skb->data at its GRH (IP version 6, next
 * header 0x1B, payload length from the BTH to the end of the ICRC). What
 * follows the ICRC (an Ethernet frame's padding) is trimmed off.
 */
static void sroce_rcv_v1(struct sroce_dev *sdev, struct sk_buff *skb)
{
	const unsigned int grh = sizeof(struct ipv6hdr);
	const struct ipv6hdr *ip6h;
	unsigned int plen;

	if (!pskb_may_pull(skb, grh + SROCE_BTH_BYTES))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	plen = ntohs(ip6h->payload_len);
	if (ip6h->version != 6 || ip6h->nexthdr != SROCE_GRH_NEXT_HDR ||
	    plen < SROCE_BTH_BYTES + SROCE_ICRC_BYTES ||
	    grh + plen > skb->len || pskb_trim(skb, grh + plen))
		return sroce_rcv_drop(sdev, skb, SROCE_CNT_RX_DROP_MALFORMED);
	sroce_rcv_bth(sdev, skb, grh, plen, RDMA_NETWORK_ROCE_V1);
}

/*
 * Receive steering. On a software path the sender's CPU also runs the
 * receiving end: veth hands a burst to its peer in the sender's
 * local_bh_enable(), and the whole receive side (ICRC check, responder,
 * the copy into the MR, the ACK, the peer's completer) runs in that
 * softirq, beside the requester that sends. A stream's burst (a GSO
 * packet, which reaches sroce whole: sroce_udp_open() accepts GSO)
 * therefore goes to a worker on a CPU beside this one where no sroce
 * worker runs (a stream's application busy-polls there at most), and the
 * two halves of the transfer run in parallel. The CPU counts as taken
 * while the queue is busy, so a second stream's bursts stay where they
 * arrive rather than pile onto it. One hand-off per busy spell of a queue,
 * not per packet, which cost more than the second CPU gave.
 *
 * Order: a device has a queue per group of destination QPs. While one is
 * busy (its work queued or running), every packet for its QPs joins it,
 * single ones too, so a QP's packets are taken in the order they came.
 * A packet for an idle queue that is no stream's burst is taken here, as
 * before: a ping-pong's requests and ACKs keep the shortest path, and so
 * do its messages of a few packets. A burst is a stream's if it came in
 * the softirq of a CPU where a sroce worker runs (a stream's requester or
 * responder sends from one; a ping-pong from its application's system
 * call) and has at least SROCE_RXQ_MIN_BURST packets (a closed loop of
 * 4 KiB READs is answered to a worker too, in bursts of four).
 */
static bool sroce_rx_steer = true;
module_param_named(rx_steer, sroce_rx_steer, bool, 0644);
MODULE_PARM_DESC(rx_steer,
		 "Receive bursts on a CPU beside the one whose softirq took them (default on)");

#define SROCE_RXQ_MIN_BURST	8	/* packets: a smaller burst stays */
#define SROCE_RXQ_MAX		2048	/* packets queued per device */
#define SROCE_RXQ_BUDGET	256	/* packets per run of the work */

/* Take one RoCE v2 datagram, skb->data at its UDP header. */
static void sroce_rcv_one(struct sroce_dev *sdev, struct sk_buff *skb)
{
	sroce_count(sdev, SROCE_CNT_RX_PACKETS, 1);
	sroce_count(sdev, SROCE_CNT_RX_BYTES, skb->len);
	sroce_rcv(sdev, skb);
}

/*
 * The datagrams of a GSO packet, each at its UDP header, as the UDP
 * layer splits them for a socket that does not take GSO
 * (udp_queue_rcv_skb()); NULL if it could not (counted there).
 */
static struct sk_buff *sroce_rcv_segment(struct sock *sk, struct sk_buff *skb)
{
	struct sk_buff *segs, *seg;

	__skb_push(skb, -skb_mac_offset(skb));
	segs = udp_rcv_segment(sk, skb, sk->sk_family == AF_INET);
	for (seg = segs; seg; seg = seg->next) {
		__skb_pull(seg, skb_transport_offset(seg));
		udp_post_segment_fix_csum(seg);
	}
	return segs;
}

static void sroce_rxq_work(struct work_struct *work)
{
	struct sroce_rxq *q = container_of(work, struct sroce_rxq, work);
	struct sroce_dev *sdev = q->sdev;
	unsigned int done = 0;
	struct sk_buff_head batch;
	struct sk_buff *skb;
	atomic_t *in_rx;

	__skb_queue_head_init(&batch);
	for (;;) {
		spin_lock_bh(&q->queue.lock);
		skb_queue_splice_init(&q->queue, &batch);
		if (skb_queue_empty(&batch)) {
			WRITE_ONCE(q->busy, false);
			sroce_task_cpu_give(q->cpu);
			spin_unlock_bh(&q->queue.lock);
			return;
		}
		spin_unlock_bh(&q->queue.lock);

		local_bh_disable();
		in_rx = sroce_task_rx_enter();
		rcu_read_lock();
		while ((skb = __skb_dequeue(&batch))) {
			sroce_rcv_one(sdev, skb);
			done++;
		}
		rcu_read_unlock();
		local_bh_enable();
		sroce_task_rx_exit(in_rx);
		if (done >= SROCE_RXQ_BUDGET) {
			/*
			 * Still busy: what comes meanwhile queues behind. Queued
			 * again here, other work of this CPU's pool goes first.
			 */
			sroce_task_work_on(raw_smp_processor_id(), work);
			return;
		}
	}
}

/*
 * Queue the datagrams @segs (a list, each at its UDP header, all for one
 * QP) for their queue's worker if that queue is busy or may start now;
 * false if they are to be taken here. @burst: they came as one GSO packet
 * of a stream's size.
 */
static bool sroce_rxq_add(struct sroce_dev *sdev, struct sk_buff *segs,
			  bool burst)
{
	unsigned int n = 0, dropped = 0;
	struct sk_buff *skb, *next;
	struct sroce_rxq *q;
	u8 bth[8], *p;

	/* A burst is one QP's; a packet too short goes to queue 0. */
	p = skb_header_pointer(segs, sizeof(struct udphdr), sizeof(bth), bth);
	q = &sdev->rxq[p ? p[7] % SROCE_RXQS : 0];

	/*
	 * A ping-pong's packet for an idle queue takes no lock. Its QP's
	 * earlier packets came before it on this flow's receiving CPU, so
	 * a busy flag it does not see yet is another flow's.
	 */
	if (!burst && !READ_ONCE(q->busy))
		return false;
	spin_lock(&q->queue.lock);
	if (!q->busy) {
		int cpu = -1;

		/* A stream's: it came in a sroce worker's softirq. */
		if (burst && READ_ONCE(sroce_rx_steer) &&
		    sroce_task_cpu_busy())
			cpu = sroce_task_cpu_take();
		if (cpu < 0) {
			spin_unlock(&q->queue.lock);
			return false;
		}
		WRITE_ONCE(q->busy, true);
		q->cpu = cpu;
		sroce_task_work_on(cpu, &q->work);
	}
	skb_list_walk_safe(segs, skb, next) {
		skb_mark_not_on_list(skb);
		if (skb_queue_len(&q->queue) >= SROCE_RXQ_MAX) {
			kfree_skb(skb);
			dropped++;
			continue;
		}
		__skb_queue_tail(&q->queue, skb);
		n++;
	}
	spin_unlock(&q->queue.lock);
	sroce_count(sdev, SROCE_CNT_RX_STEERED, n);
	if (dropped)
		sroce_count(sdev, SROCE_CNT_RX_STEER_DROPS, dropped);
	return true;
}

static int sroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct sroce_netns *sn = rcu_dereference_sk_user_data(sk);
	struct sroce_dev *sdev = NULL;
	struct sk_buff *next;
	bool burst;

	if (sn && skb->dev)
		sdev = xa_load(&sn->devs, skb->dev->ifindex);
	if (!sdev) {
		kfree_skb(skb);
		return 0;
	}

	burst = skb_is_gso(skb) &&
		skb_shinfo(skb)->gso_segs >= SROCE_RXQ_MIN_BURST;
	if (skb_is_gso(skb)) {
		skb = sroce_rcv_segment(sk, skb);
		if (!skb)
			return 0;
	} else {
		skb_mark_not_on_list(skb);
	}
	if (sroce_rxq_add(sdev, skb, burst))
		return 0;
	skb_list_walk_safe(skb, skb, next) {
		skb_mark_not_on_list(skb);
		sroce_rcv_one(sdev, skb);
	}
	return 0;
}

static void sroce_rxq_init(struct sroce_dev *sdev)
{
	int i;

	for (i = 0; i < SROCE_RXQS; i++) {
		struct sroce_rxq *q = &sdev->rxq[i];

		skb_queue_head_init(&q->queue);
		INIT_WORK(&q->work, sroce_rxq_work);
		q->sdev = sdev;
		q->busy = false;
	}
}

/* No receiver queues for the device any more (an RCU grace period ago). */
static void sroce_rxq_exit(struct sroce_dev *sdev)
{
	int i;

	for (i = 0; i < SROCE_RXQS; i++) {
		struct sroce_rxq *q = &sdev->rxq[i];

		cancel_work_sync(&q->work);
		skb_queue_purge(&q->queue);
		if (q->busy)
			sroce_task_cpu_give(q->cpu);
		q->busy = false;
	}
}

/* Transmit ----------------------------------------------------------- */

/**
 * sroce_skb_alloc - a packet buffer for @len bytes of transport headers,
 *	payload, pad and ICRC, with room in front for UDP, IP and link headers
 * @sdev: the sending device
 * @len: bytes from the BTH to the end of the ICRC
 *
 * Return: the skb with data at the BTH and @len bytes put, or NULL.
 */
struct sk_buff *sroce_skb_alloc(struct sroce_dev *sdev, unsigned int len)
{
	unsigned int head = LL_RESERVED_SPACE(sdev->ndev) +
			    sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sk_buff *skb = alloc_skb(head + len, GFP_ATOMIC);

	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	skb_put(skb, len);
	return skb;
}

/**
 * sroce_skb_put_tail - end a packet whose payload is page fragments
 *	(sroce_mr_lend()) with a fragment for its pad and ICRC
 * @skb: the packet; a fragment slot is free
 * @pad: pad bytes (0-3), sent as zeros
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_skb_put_tail(struct sk_buff *skb, unsigned int pad)
{
	unsigned int n = pad + SROCE_ICRC_BYTES;
	struct page *head;
	void *tail;

	tail = netdev_alloc_frag(n);
	if (!tail)
		return -ENOMEM;
	memset(tail, 0, n);
	head = virt_to_head_page(tail);
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, head,
			   tail - page_address(head), n);
	skb->len += n;
	skb->data_len += n;
	skb->truesize += n;
	return 0;
}

/*
 * The ICRC of a packet about to go, its transport headers at @bth_off
 * from skb->data: IBTA's, or with SROCE_XMIT_RXE_FLUSH_ICRC (a FLUSH, no
 * payload) rdma_rxe's, whose "payload" is the headers once more.
 */
static u32 sroce_icrc_seal(struct sk_buff *skb, const void *l3,
			   enum rdma_network_type net, unsigned int bth_off,
			   unsigned int hdr_len, unsigned int payload,
			   unsigned int flags)
{
	const u8 *bth = skb->data + bth_off;

	if (flags & SROCE_XMIT_RXE_FLUSH_ICRC)
		return sroce_icrc(skb, l3, net, bth, hdr_len, bth_off, hdr_len);
	return sroce_icrc(skb, l3, net, bth, hdr_len, bth_off + hdr_len,
			  payload);
}

/* Where the ICRC goes: the last four bytes, linear or in the tail frag. */
static void *sroce_skb_icrc(struct sk_buff *skb)
{
	const skb_frag_t *last;

	if (!skb->data_len)
		return skb_tail_pointer(skb) - SROCE_ICRC_BYTES;
	last = &skb_shinfo(skb)->frags[skb_shinfo(skb)->nr_frags - 1];
	return skb_frag_address(last) + skb_frag_size(last) - SROCE_ICRC_BYTES;
}

static __be32 sroce_gid_ip4(const union ib_gid *gid)
{
	__be32 addr;

	memcpy(&addr, gid->raw + 12, sizeof(addr));
	return addr;
}

static struct dst_entry *sroce_route4(struct sroce_dev *sdev,
				      const struct sroce_av *av,
				      struct dst_cache *cache)
{
	__be32 saddr = sroce_gid_ip4(&av->sgid);
	struct flowi4 fl = {
		.flowi4_oif = sdev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = saddr,
		.daddr = sroce_gid_ip4(&av->dgid),
	};
	struct rtable *rt;

	if (cache) {
		rt = dst_cache_get_ip4(cache, &saddr);
		if (rt)
			return &rt->dst;
	}
	rt = ip_route_output_key(dev_net(sdev->ndev), &fl);
	if (IS_ERR(rt))
		return ERR_CAST(rt);
	if (cache)
		dst_cache_set_ip4(cache, &rt->dst, fl.saddr);
	return &rt->dst;
}

static struct dst_entry *sroce_route6(struct sroce_dev *sdev,
				      const struct sroce_av *av,
				      struct dst_cache *cache)
{
#if IS_ENABLED(CONFIG_IPV6)
	struct in6_addr saddr;
	struct flowi6 fl6 = {
		.flowi6_oif = sdev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct socket *sock = sdev->netns->sock6;
	struct dst_entry *dst;

	memcpy(&saddr, av->sgid.raw, sizeof(saddr));
	if (cache) {
		dst = dst_cache_get_ip6(cache, &saddr);
		if (dst)
			return dst;
	}
	if (!sock)
		return ERR_PTR(-EAFNOSUPPORT);
	fl6.saddr = saddr;
	memcpy(&fl6.daddr, av->dgid.raw, sizeof(fl6.daddr));
	dst = sroce_ip6_dst_lookup_flow(dev_net(sdev->ndev), sock->sk, &fl6,
					NULL);
	if (IS_ERR(dst))
		return dst;
	if (dst->error) {
		int err = dst->error;

		dst_release(dst);
		return ERR_PTR(err);
	}
	if (cache)
		dst_cache_set_ip6(cache, dst, &fl6.saddr);
	return dst;
#else
	return ERR_PTR(-EAFNOSUPPORT);
#endif
}

static void sroce_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *uh;

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = htons(sport);
	uh->dest = htons(SROCE_ROCE_V2_PORT);
	uh->len = htons(skb->len);
	/* Zero: the ICRC protects the datagram (as rdma_rxe and NICs do). */
	uh->check = 0;
}

static void sroce_push_ip4(struct sk_buff *skb, const struct sroce_av *av,
			   u8 tos)
{
	struct iphdr *iph;

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = tos;
	iph->tot_len = htons(skb->len);
	/* DF with ID 0 (RFC 6864): the ICRC covers the ID, so it is fixed. */
	iph->id = 0;
	iph->frag_off = htons(IP_DF);
	iph->ttl = av->hop_limit ?: 64;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = sroce_gid_ip4(&av->sgid);
	iph->daddr = sroce_gid_ip4(&av->dgid);
	iph->check = 0;
	skb->protocol = htons(ETH_P_IP);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
}

static void sroce_push_ip6(struct sk_buff *skb, const struct sroce_av *av,
			   u8 tclass)
{
	struct ipv6hdr *ip6h;

	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, tclass, htonl(av->flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->hop_limit ?: 64;
	memcpy(&ip6h->saddr, av->sgid.raw, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, av->dgid.raw, sizeof(ip6h->daddr));
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
}

/* Does @sdev hold @gid (a RoCE v2 GID) in its GID table? */
static bool sroce_has_gid(struct sroce_dev *sdev, const union ib_gid *gid)
{
	const struct ib_gid_attr *attr;

	attr = rdma_find_gid_by_port(&sdev->ibdev, gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, 1, NULL);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/* The sroce device of @sdev's namespace that owns @gid (RCU held). */
static struct sroce_dev *sroce_gid_owner(struct sroce_dev *sdev,
					 const union ib_gid *gid)
{
	struct sroce_dev *other;
	unsigned long ifindex;

	if (sroce_has_gid(sdev, gid))
		return sdev;
	xa_for_each(&sdev->netns->devs, ifindex, other)
		if (other != sdev && sroce_has_gid(other, gid))
			return other;
	return NULL;
}

/* Hand a queued loopback packet to its device, if that is still there. */
static void sroce_lo_deliver(struct sk_buff *skb)
{
	const struct sroce_lo_cb *cb = (const void *)skb->cb;
	struct sroce_dev *peer = xa_load(&cb->sn->devs, cb->ifindex);
	bool v1 = cb->v1;

	if (!peer) {
		kfree_skb(skb);
		return;
	}
	skb->dev = peer->ndev;
	memset(skb->cb, 0, sizeof(skb->cb));
	sroce_count(peer, SROCE_CNT_RX_PACKETS, 1);
	sroce_count(peer, SROCE_CNT_RX_BYTES, skb->len);
	if (v1)
		sroce_rcv_v1(peer, skb);
	else
		sroce_rcv(peer, skb);
}

/* Deliver up to @budget packets of @q, in order. BHs off, RCU held. */
static void sroce_lo_run(struct sroce_lo_cpu *q, unsigned int budget)
{
	struct sk_buff *skb;

	while (budget-- && (skb = skb_dequeue(&q->queue)))
		sroce_lo_deliver(skb);
}

/*
 * The outermost delivery on this CPU ends (BHs off): what it left in the
 * queue goes to the CPU's worker.
 */
static void sroce_lo_leave(struct sroce_lo_cpu *lo)
{
	lo->depth--;
	if (!lo->depth && !skb_queue_empty_lockless(&lo->queue))
		queue_work_on(smp_processor_id(), system_highpri_wq, &lo->work);
}

static void sroce_lo_work(struct work_struct *work)
{
	struct sroce_lo_cpu *home = container_of(work, struct sroce_lo_cpu,
						 work);

	while (!skb_queue_empty_lockless(&home->queue)) {
		struct sroce_lo_cpu *lo;

		local_bh_disable();
		rcu_read_lock();
		lo = this_cpu_ptr(&sroce_lo);
		lo->depth++;
		sroce_lo_run(home, SROCE_LO_BUDGET);
		sroce_lo_leave(lo);
		rcu_read_unlock();
		local_bh_enable();
		cond_resched();
	}
}

/*
 * No loopback packet of a device detached before this call is still
 * queued or being delivered when it returns. May sleep.
 */
static void sroce_lo_flush(void)
{
	int cpu;

	/* Senders that found the device have queued what they will. */
	synchronize_rcu();
	for_each_possible_cpu(cpu)
		flush_work(&per_cpu_ptr(&sroce_lo, cpu)->work);
	/* A delivery that took one off a queue meanwhile runs under RCU. */
	synchronize_rcu();
}

static void sroce_lo_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct sroce_lo_cpu *lo = per_cpu_ptr(&sroce_lo, cpu);

		skb_queue_head_init(&lo->queue);
		INIT_WORK(&lo->work, sroce_lo_work);
		lo->depth = 0;
	}
}

/* Module exit: every device is gone, so is every queued packet's. */
static void sroce_lo_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct sroce_lo_cpu *lo = per_cpu_ptr(&sroce_lo, cpu);

		cancel_work_sync(&lo->work);
		skb_queue_purge(&lo->queue);
	}
}

/*
 * The sroce device of @sdev's namespace, itself included, whose netdev
 * has @mac (RCU held): a RoCE v1 frame to it never leaves the host.
 */
static struct sroce_dev *sroce_mac_owner(struct sroce_dev *sdev,
					 const u8 *mac)
{
	struct sroce_dev *other;
	unsigned long ifindex;

	if (ether_addr_equal(sdev->ndev->dev_addr, mac))
		return sdev;
	xa_for_each(&sdev->netns->devs, ifindex, other)
		if (other->roce_v1 && ether_addr_equal(other->ndev->dev_addr,
						       mac))
			return other;
	return NULL;
}

/*
 * The destination is an address of this host: hand the sealed packet to
 * the receive path of the device that owns it, as if it had arrived —
 * no netdev, no loopback device (whose packets name no sroce device) —
 * now, or after the delivery already running on this CPU (see above).
 * @v1: a RoCE v1 frame (data at its GRH), for the device with the
 * destination MAC; else a v2 datagram for the device with the GID.
 */
static int sroce_net_loopback(struct sroce_dev *sdev, const struct sroce_av *av,
			      struct sk_buff *skb, bool v1)
{
	struct sroce_lo_cpu *lo = this_cpu_ptr(&sroce_lo);
	struct sroce_lo_cb *cb = (void *)skb->cb;
	unsigned int bytes = skb->len;
	struct sroce_dev *peer;

	rcu_read_lock();
	peer = v1 ? sroce_mac_owner(sdev, av->dmac) :
		    sroce_gid_owner(sdev, &av->dgid);
	if (!peer || skb_queue_len(&lo->queue) >= SROCE_LO_QUEUE_MAX) {
		rcu_read_unlock();
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, 1);
		kfree_skb(skb);
		return peer ? -ENOBUFS : -EHOSTUNREACH;
	}
	skb_dst_drop(skb);
	skb->dev = NULL;
	skb->pkt_type = PACKET_HOST;
	if (!v1)
		__skb_pull(skb, skb_transport_offset(skb));
	sroce_count(sdev, SROCE_CNT_TX_PACKETS, 1);
	sroce_count(sdev, SROCE_CNT_TX_BYTES, bytes);
	/* The sender's: peer's may be going (its netns is cleared then). */
	cb->sn = sdev->netns;
	cb->ifindex = peer->ifindex;
	cb->v1 = v1;
	skb_queue_tail(&lo->queue, skb);
	if (!lo->depth) {
		lo->depth++;
		sroce_lo_run(lo, SROCE_LO_BUDGET);
		sroce_lo_leave(lo);
	} else {
		sroce_count(sdev, SROCE_CNT_LO_DEFERRED, 1);
	}
	rcu_read_unlock();
	return 0;
}

/*
 * Route @skb (transport headers, payload and pad from skb->data, room for
 * the ICRC at its end), put UDP and IP headers on it and seal it with its
 * ICRC. BHs off (the route cache is per CPU). On return skb->data is at
 * the IP header and the packet carries its route.
 */
static int sroce_net_seal(struct sroce_dev *sdev, const struct sroce_av *av,
			  struct dst_cache *cache, struct sk_buff *skb,
			  unsigned int hdr_len, u16 sport, unsigned int flags)
{
	bool ipv6 = av->network_type == RDMA_NETWORK_IPV6;
	u8 tos = sroce_cc_tos(sdev, av->traffic_class);
	unsigned int l3_len, payload;
	struct dst_entry *dst;

	dst = ipv6 ? sroce_route6(sdev, av, cache) :
		     sroce_route4(sdev, av, cache);
	if (IS_ERR(dst))
		return PTR_ERR(dst);

	payload = skb->len - hdr_len - SROCE_ICRC_BYTES;
	sroce_push_udp(skb, sport);
	if (ipv6)
		sroce_push_ip6(skb, av, tos);
	else
		sroce_push_ip4(skb, av, tos);
	l3_len = skb_transport_offset(skb);
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->ip_summed = CHECKSUM_NONE;

	put_unaligned_le32(sroce_icrc_seal(skb, skb_network_header(skb),
					   ipv6 ? RDMA_NETWORK_IPV6 :
						  RDMA_NETWORK_IPV4,
					   l3_len + sizeof(struct udphdr),
					   hdr_len, payload, flags),
			   sroce_skb_icrc(skb));
	return 0;
}

/* Hand sealed packets (one, or a burst) to the IP stack. BHs off. */
static int sroce_net_send(struct sroce_dev *sdev, struct sk_buff *skb,
			  bool ipv6, unsigned int npkts, unsigned int bytes)
{
	struct net *net = dev_net(sdev->ndev);
	int err;

	if (ipv6)
		err = ip6_local_out(net, NULL, skb);
	else
		err = ip_local_out(net, NULL, skb);
	err = net_xmit_eval(err);
	if (err) {
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, npkts);
	} else {
		sroce_count(sdev, SROCE_CNT_TX_PACKETS, npkts);
		sroce_count(sdev, SROCE_CNT_TX_BYTES, bytes);
	}
	return err;
}

/*
 * Bursts. The IP stack's cost is per packet (route, output, qdisc, the
 * device, and on the receiving host the input path up to UDP); on a
 * software path it dwarfs the copy and the CRC of a packet's payload. So,
 * as TCP does with GSO, an engine that sends several packets of one QP
 * in a row chains them behind the first and sends them as one
 * "fraglist" UDP GSO packet: the stack walks its way once, and the
 * packets are split apart where they must be — by the device if it can
 * (veth hands the whole burst to its peer), by software GSO before a
 * device that cannot, and by the receiving UDP socket otherwise.
 *
 * Each packet of a burst is an ordinary RoCEv2 packet, built and sealed
 * as if sent alone: fraglist segmentation only hands each packet back its
 * own IP and UDP lengths, which the ICRC covers, and keeps the IPv4 ID at
 * 0 (SKB_GSO_TCP_FIXEDID: the ICRC covers the ID too, and DF is set). The
 * first packet must be the largest (its UDP payload is the GSO size the
 * stack checks against the MTU), and the total fits in 64 KiB. While a
 * packet tap listens on the way out, packets go one at a time
 * (sroce_tx_tapped(), counted in tx_tapped_packets).
 */
static unsigned int sroce_tx_burst_max = 32;
module_param_named(tx_burst, sroce_tx_burst_max, uint, 0644);
MODULE_PARM_DESC(tx_burst,
		 "packets of one QP sent through the IP stack as one GSO burst (0 or 1: one at a time; default 32, at most 64)");

#define SROCE_BURST_MAX_PKTS	64
#define SROCE_BURST_MAX_BYTES	(60 * 1024)

static unsigned int sroce_udp_payload(const struct sk_buff *skb)
{
	return skb->len - skb_transport_offset(skb) - sizeof(struct udphdr);
}

/* May @skb (sealed, data at its IP header) join @b behind its head? */
static bool sroce_burst_fits(const struct sroce_tx_burst *b,
			     const struct sk_buff *skb, bool ipv6)
{
	unsigned int max = min_t(unsigned int, READ_ONCE(sroce_tx_burst_max),
				 SROCE_BURST_MAX_PKTS);

	return b->npkts < max && b->ipv6 == ipv6 &&
	       skb_dst(skb) == skb_dst(b->head) &&
	       sroce_udp_payload(skb) <= b->seg_len &&
	       b->head->len + sroce_udp_payload(skb) <= SROCE_BURST_MAX_BYTES;
}

/*
 * Does a packet tap (tcpdump, a packet socket) listen where @dev sends:
 * on @dev, on every device, or on the peer of a device pair (veth), whose
 * receive side hands the tap the burst as it came? A tap sees a burst as
 * one frame, and dissectors decode only its first packet; users capture
 * to debug, so while one listens every packet goes out on its own.
 */
static bool sroce_tx_tapped(struct net_device *dev)
{
	struct net_device *peer = NULL;
	bool tapped;

	if (dev_nit_active(dev))
		return true;
	if (!dev->netdev_ops->ndo_get_peer_dev)
		return false;
	rcu_read_lock();
	peer = dev->netdev_ops->ndo_get_peer_dev(dev);
	tapped = peer && dev_nit_active(peer);
	rcu_read_unlock();
	return tapped;
}

static void sroce_burst_add(struct sroce_tx_burst *b, struct sk_buff *skb,
			    bool ipv6, unsigned int bytes)
{
	struct sk_buff *head = b->head;

	if (!head) {
		b->head = skb;
		b->last = NULL;
		b->npkts = 1;
		b->bytes = bytes;
		b->ipv6 = ipv6;
		b->seg_len = sroce_udp_payload(skb);
		return;
	}
	/* Behind the head a packet is its UDP payload; its headers stay. */
	skb_dst_drop(skb);
	/* The burst as a whole carries lent pages if any of its packets do. */
	skb_shinfo(head)->flags |= skb_shinfo(skb)->flags & SKBFL_SHARED_FRAG;
	__skb_pull(skb, skb_transport_offset(skb) + sizeof(struct udphdr));
	if (b->last)
		b->last->next = skb;
	else
		skb_shinfo(head)->frag_list = skb;
	b->last = skb;
	head->len += skb->len;
	head->data_len += skb->len;
	head->truesize += skb->truesize;
	b->npkts++;
	b->bytes += bytes;
}

/**
 * sroce_net_flush - send the packets a burst holds
 * @b: the burst (may be empty); empty afterwards
 */
void sroce_net_flush(struct sroce_tx_burst *b)
{
	struct sk_buff *head = b->head;

	if (!head)
		return;
	if (b->npkts > 1) {
		struct skb_shared_info *sh = skb_shinfo(head);

		/* The whole burst's length; each packet gets its own back. */
		udp_hdr(head)->len = htons(head->len -
					   skb_transport_offset(head));
		/*
		 * The tunnel bit lets the burst reach a receiving sroce whole:
		 * the UDP layer splits GSO packets without it for every
		 * encapsulation socket (udp_unexpected_gso()). With
		 * skb->encapsulation clear, software GSO splits the burst as
		 * the plain fraglist it is, and a socket that takes no GSO
		 * (rdma_rxe's) gets it split as before.
		 */
		sh->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST |
			       SKB_GSO_UDP_TUNNEL;
		if (!b->ipv6)
			sh->gso_type |= SKB_GSO_TCP_FIXEDID;
		sh->gso_size = b->seg_len;
		sh->gso_segs = b->npkts;
		/* On output the same as CHECKSUM_NONE: nothing to sum. */
		head->ip_summed = CHECKSUM_UNNECESSARY;
		sroce_count(b->sdev, SROCE_CNT_TX_BURSTS, 1);
	}
	local_bh_disable();
	sroce_net_send(b->sdev, head, b->ipv6, b->npkts, b->bytes);
	local_bh_enable();
	b->head = NULL;
	b->last = NULL;
	b->npkts = 0;
}

/* RoCE v1 ------------------------------------------------------------ */

/*
 * The GRH (IBTA 8.3) in front of the transport headers: IP version 6,
 * next header 0x1B, the payload length from the BTH to the end of the
 * ICRC, the AV's traffic class, flow label, hop limit and GIDs.
 */
static void sroce_push_grh(struct sk_buff *skb, const struct sroce_av *av)
{
	struct ipv6hdr *grh;

	__skb_push(skb, sizeof(*grh));
	skb_reset_network_header(skb);
	grh = ipv6_hdr(skb);
	ip6_flow_hdr(grh, av->traffic_class, htonl(av->flow_label));
	grh->payload_len = htons(skb->len - sizeof(*grh));
	grh->nexthdr = SROCE_GRH_NEXT_HDR;
	grh->hop_limit = av->hop_limit ?: 64;
	memcpy(&grh->saddr, av->sgid.raw, sizeof(grh->saddr));
	memcpy(&grh->daddr, av->dgid.raw, sizeof(grh->daddr));
	skb->protocol = htons(ETH_P_IBOE);
}

/*
 * Send a RoCE v1 frame: GRH and ICRC, then to a device of this host
 * (sroce_net_loopback()) or, in an Ethernet header (ethertype 0x8915) to
 * the MAC ib_core resolved into the AV, out of the netdev. No IP stack
 * and no bursts: each frame goes alone, after what @b holds. BHs off.
 */
static int sroce_net_xmit_v1(struct sroce_dev *sdev, const struct sroce_av *av,
			     struct sk_buff *skb, unsigned int hdr_len,
			     unsigned int flags, struct sroce_tx_burst *b)
{
	const unsigned int grh = sizeof(struct ipv6hdr);
	unsigned int payload = skb->len - hdr_len - SROCE_ICRC_BYTES;
	unsigned int bytes = skb->len;
	struct net_device *ndev = sdev->ndev;
	int err;

	if (b && b->head) {
		local_bh_enable();
		sroce_net_flush(b);
		local_bh_disable();
	}
	sroce_push_grh(skb, av);
	skb->ip_summed = CHECKSUM_NONE;
	put_unaligned_le32(sroce_icrc_seal(skb, skb->data, RDMA_NETWORK_ROCE_V1,
					   grh, hdr_len, payload, flags),
			   sroce_skb_icrc(skb));

	if (!is_multicast_ether_addr(av->dmac)) {
		struct sroce_dev *peer;

		rcu_read_lock();
		peer = sroce_mac_owner(sdev, av->dmac);
		rcu_read_unlock();
		if (peer)
			return sroce_net_loopback(sdev, av, skb, true);
	}

	skb->dev = ndev;
	if (dev_hard_header(skb, ndev, ETH_P_IBOE, av->dmac, NULL,
			    skb->len) < 0) {
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, 1);
		kfree_skb(skb);
		return -EINVAL;
	}
	/* net_xmit_eval() evaluates its argument twice. */
	err = dev_queue_xmit(skb);
	err = net_xmit_eval(err);
	if (err) {
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, 1);
	} else {
		sroce_count(sdev, SROCE_CNT_TX_PACKETS, 1);
		sroce_count(sdev, SROCE_CNT_TX_BYTES, bytes);
	}
	return err;
}

/*
 * Receive: every frame of ethertype 0x8915 in any namespace comes here
 * (packet handlers are global); only those on an sroce device that
 * speaks v1, addressed to it, go on.
 */
static int sroce_v1_recv(struct sk_buff *skb, struct net_device *dev,
			 struct packet_type *pt, struct net_device *orig_dev)
{
	struct sroce_netns *sn = net_generic(dev_net(dev), sroce_net_id);
	struct sroce_dev *sdev = xa_load(&sn->devs, dev->ifindex);

	if (!sdev || !sdev->roce_v1 || skb->pkt_type == PACKET_OTHERHOST) {
		kfree_skb(skb);
		return NET_RX_DROP;
	}
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	sroce_count(sdev, SROCE_CNT_RX_PACKETS, 1);
	sroce_count(sdev, SROCE_CNT_RX_BYTES, skb->len);
	sroce_rcv_v1(sdev, skb);
	return NET_RX_SUCCESS;
}

static struct packet_type sroce_v1_ptype __read_mostly = {
	.type = cpu_to_be16(ETH_P_IBOE),
	.func = sroce_v1_recv,
};

/**
 * sroce_net_xmit - seal a packet and send it, now or as part of a burst
 * @sdev: the sending device
 * @av: where it goes
 * @cache: the route cache of the sender (a QP), or NULL
 * @skb: from sroce_skb_alloc(), transport headers, payload and pad
 *	written, room for the ICRC at its end (linear, or the tail fragment
 *	of sroce_skb_put_tail()); consumed
 * @hdr_len: bytes of transport headers
 * @sport: UDP source port (the flow's entropy)
 * @flags: SROCE_XMIT_RXE_FLUSH_ICRC (a FLUSH to a peer that takes it
 *	sealed as rdma_rxe seals it: see sroce_rcv_icrc_ok()), or 0
 * @b: the sender's burst (every packet in it for the same @av and
 *	@sdev), sent by sroce_net_flush(); NULL to send at once
 *
 * Return: 0 or a negative errno (the packet is gone either way: a lost
 * packet is the transport's to recover).
 */
int sroce_net_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
		   struct dst_cache *cache, struct sk_buff *skb,
		   unsigned int hdr_len, u16 sport, unsigned int flags,
		   struct sroce_tx_burst *b)
{
	bool ipv6 = av->network_type == RDMA_NETWORK_IPV6;
	unsigned int bytes = skb->len;
	int err;

	local_bh_disable();
	if (av->network_type == RDMA_NETWORK_ROCE_V1) {
		err = sroce_net_xmit_v1(sdev, av, skb, hdr_len, flags, b);
		local_bh_enable();
		return err;
	}
	err = sroce_net_seal(sdev, av, cache, skb, hdr_len, sport, flags);
	if (err) {
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, 1);
		local_bh_enable();
		kfree_skb(skb);
		return err;
	}
	if (skb_dst(skb)->dev->flags & IFF_LOOPBACK) {
		err = sroce_net_loopback(sdev, av, skb, false);
	} else if (b && READ_ONCE(sroce_tx_burst_max) > 1 &&
		   !sroce_tx_tapped(skb_dst(skb)->dev)) {
		if (b->head && !sroce_burst_fits(b, skb, ipv6)) {
			local_bh_enable();
			sroce_net_flush(b);
			local_bh_disable();
		}
		b->sdev = sdev;
		sroce_burst_add(b, skb, ipv6, bytes);
		err = 0;
	} else {
		if (b && b->head) {
			/* A tap came: what the burst holds goes first. */
			local_bh_enable();
			sroce_net_flush(b);
			local_bh_disable();
		}
		if (b && READ_ONCE(sroce_tx_burst_max) > 1)
			sroce_count(sdev, SROCE_CNT_TX_TAPPED, 1);
		err = sroce_net_send(sdev, skb, ipv6, 1, bytes);
	}
	local_bh_enable();
	return err;
}

static struct socket *sroce_udp_open(struct net *net, struct sroce_netns *sn,
				     bool ipv6)
{
	struct udp_port_cfg udp_cfg = {
		.local_udp_port = htons(SROCE_ROCE_V2_PORT),
	};
	struct udp_tunnel_sock_cfg tnl_cfg = {
		.sk_user_data = sn,
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_recv,
	};
	struct socket *sock;
	int err;

	if (ipv6) {
		udp_cfg.family = AF_INET6;
		udp_cfg.ipv6_v6only = 1;
	} else {
		udp_cfg.family = AF_INET;
	}

	err = udp_sock_create(net, &udp_cfg, &sock);
	if (err)
		return ERR_PTR(err);
	sroce_setup_udp_tunnel_sock(net, sock, &tnl_cfg);
	/* Bursts come whole: see "Receive steering". */
	udp_allow_gso(sock->sk);
	return sock;
}

static void sroce_udp_close(struct sroce_netns *sn)
{
	if (sn->sock6)
		sroce_udp_tunnel_sock_release(sn->sock6);
	if (sn->sock4)
		sroce_udp_tunnel_sock_release(sn->sock4);
	sn->sock4 = NULL;
	sn->sock6 = NULL;
}

static int sroce_udp_open_all(struct net *net, struct sroce_netns *sn)
{
	struct socket *sock;

	sock = sroce_udp_open(net, sn, false);
	if (IS_ERR(sock)) {
		if (PTR_ERR(sock) == -EADDRINUSE)
			pr_err("%s: UDP port %u is already bound in this network namespace (rdma_rxe?)\n",
			       SROCE_DRV_NAME, SROCE_ROCE_V2_PORT);
		return PTR_ERR(sock);
	}
	sn->sock4 = sock;

	if (!IS_ENABLED(CONFIG_IPV6))
		return 0;
	sock = sroce_udp_open(net, sn, true);
	if (IS_ERR(sock)) {
		/* A namespace without IPv6 still carries RoCEv2 over IPv4. */
		if (PTR_ERR(sock) == -EAFNOSUPPORT)
			return 0;
		if (PTR_ERR(sock) == -EADDRINUSE)
			pr_err("%s: UDP port %u (IPv6) is already bound in this network namespace (rdma_rxe?)\n",
			       SROCE_DRV_NAME, SROCE_ROCE_V2_PORT);
		sroce_udp_close(sn);
		return PTR_ERR(sock);
	}
	sn->sock6 = sock;
	return 0;
}

/**
 * sroce_net_attach - give @sdev the RoCEv2 sockets of its netdev's namespace
 * @sdev: a device being created; sdev->ndev is held
 *
 * Return: 0, -EADDRINUSE if another user holds port 4791 there, or
 * -ENODEV if the namespace is being dismantled.
 */
int sroce_net_attach(struct sroce_dev *sdev)
{
	struct net *net = dev_net(sdev->ndev);
	struct sroce_netns *sn = net_generic(net, sroce_net_id);
	int err = 0;

	mutex_lock(&sn->lock);
	if (sn->dead) {
		err = -ENODEV;
		goto out;
	}
	if (!sn->users) {
		err = sroce_udp_open_all(net, sn);
		if (err)
			goto out;
	}
	sroce_rxq_init(sdev);
	err = xa_insert(&sn->devs, sdev->ifindex, sdev, GFP_KERNEL);
	if (err) {
		if (!sn->users)
			sroce_udp_close(sn);
		goto out;
	}
	sn->users++;
	sdev->netns = sn;
out:
	mutex_unlock(&sn->lock);
	return err;
}

/* Undo sroce_net_attach(); safe on a device that never attached. */
void sroce_net_detach(struct sroce_dev *sdev)
{
	struct sroce_netns *sn = sdev->netns;

	if (!sn)
		return;

	mutex_lock(&sn->lock);
	xa_erase(&sn->devs, sdev->ifindex);
	mutex_unlock(&sn->lock);
	/*
	 * Receivers that found sdev have queued what they will; its queues'
	 * work, which sends (ACKs), ends while sdev->netns is still set.
	 */
	synchronize_rcu();
	sroce_rxq_exit(sdev);

	mutex_lock(&sn->lock);
	if (!--sn->users)
		sroce_udp_close(sn);
	sn->detaching++;
	sdev->netns = NULL;
	mutex_unlock(&sn->lock);

	/*
	 * Let receivers that found sdev in sn->devs finish with it, and let
	 * no loopback packet for it (which names sn) outlive this: only then
	 * may the namespace's exit free sn.
	 */
	sroce_lo_flush();
	mutex_lock(&sn->lock);
	sn->detaching--;
	wake_up_all(&sn->idle_wq);
	mutex_unlock(&sn->lock);
}

static int __net_init sroce_netns_init(struct net *net)
{
	struct sroce_netns *sn = net_generic(net, sroce_net_id);

	mutex_init(&sn->lock);
	xa_init(&sn->devs);
	init_waitqueue_head(&sn->idle_wq);
	return 0;
}

static void __net_exit sroce_netns_exit(struct net *net)
{
	struct sroce_netns *sn = net_generic(net, sroce_net_id);

	mutex_lock(&sn->lock);
	sn->dead = true;
	mutex_unlock(&sn->lock);

	/*
	 * The netdevs are gone; their devices' unregistration may not be.
	 * Taking the lock after the wait fences the last detach.
	 */
	wait_event(sn->idle_wq,
		   !READ_ONCE(sn->users) && !READ_ONCE(sn->detaching));
	mutex_lock(&sn->lock);
	mutex_unlock(&sn->lock);
	WARN_ON(sn->sock4 || sn->sock6);
	xa_destroy(&sn->devs);
	mutex_destroy(&sn->lock);
}

static struct pernet_operations sroce_net_ops = {
	.init = sroce_netns_init,
	.exit = sroce_netns_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_netns),
};

int sroce_net_init(void)
{
	int err;

	sroce_lo_init();
	err = register_pernet_subsys(&sroce_net_ops);
	if (err)
		return err;
	dev_add_pack(&sroce_v1_ptype);
	return 0;
}

void sroce_net_exit(void)
{
	/* Waits for the handlers running (synchronize_net()). */
	dev_remove_pack(&sroce_v1_ptype);
	unregister_pernet_subsys(&sroce_net_ops);
	sroce_lo_exit();
}
