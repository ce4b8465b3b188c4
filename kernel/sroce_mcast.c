// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: multicast for UD QPs (ibv_attach_mcast / ibv_detach_mcast).
 *
 * A RoCE v2 multicast group is an IP multicast address: the MGID is the
 * IPv6 group, or an IPv4 group in IPv4-mapped form (::ffff:224.x.y.z).
 * Each device keeps a table of the groups its QPs joined (struct
 * sroce_mcg), each with the list of attached QPs (struct sroce_mca).
 * Attaching joins the group on the netdev at the IP level (IGMP/MLD,
 * which also adds the Ethernet multicast address to the netdev's filter)
 * so that the IP stack hands the group's datagrams to our UDP socket; a
 * packet for destination QP 0xFFFFFF whose destination address is a
 * group is delivered to every QP attached to it.
 *
 * Limits (query_device): SROCE_MAX_MCAST_GRP groups per device,
 * SROCE_MAX_MCAST_QP_ATTACH QPs per group, and their product in total.
 *
 * Locking and lifetime:
 *  - sdev->mcast_lock (mutex) guards the table, the lists and the
 *    counts for writers (attach, detach, QP destroy). It is taken
 *    before RTNL, which the IP-level join needs; nothing that holds
 *    RTNL takes it.
 *  - The receive path walks the table and the lists under RCU; groups
 *    and attachments are freed after a grace period.
 *  - An attachment names its QP without a reference. A QP that was ever
 *    attached waits for a grace period in destroy (after its last
 *    attachment is gone) before its memory can go, so a reader that saw
 *    the attachment can still try for a reference (sroce_qp_tryget()).
 */

#include <linux/if_ether.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/jhash.h>
#include <linux/rculist.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <net/ipv6.h>

#include "sroce.h"
#include "sroce_pkt.h"

/* A multicast group of one device. */
struct sroce_mcg {
	struct hlist_node node;		/* in sdev->mcast_hash */
	union ib_gid mgid;
	struct list_head qps;		/* of sroce_mca */
	u32 nattach;
	struct rcu_head rcu;
};

/* One QP attached to one group. */
struct sroce_mca {
	struct list_head node;		/* in mcg->qps */
	struct sroce_qp *qp;
	struct rcu_head rcu;
};

static u32 sroce_mcast_hash(const union ib_gid *mgid)
{
	return jhash(mgid->raw, sizeof(mgid->raw), 0) &
	       (SROCE_MCAST_HASH_SIZE - 1);
}

/* Under mcast_lock or RCU. */
static struct sroce_mcg *sroce_mcg_find(struct sroce_dev *sdev,
					const union ib_gid *mgid)
{
	struct sroce_mcg *mcg;

	hlist_for_each_entry_rcu(mcg, &sdev->mcast_hash[sroce_mcast_hash(mgid)],
				 node, lockdep_is_held(&sdev->mcast_lock))
		if (!memcmp(mcg->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return mcg;
	return NULL;
}

/*
 * Join (@join) or leave the IP multicast group of @mgid on the netdev.
 * The IP layer counts joins, so a group rdma_cm joined too is left only
 * when both have left.
 */
static void sroce_mcast_ip(struct sroce_dev *sdev, const union ib_gid *mgid,
			   bool join)
{
	const struct in6_addr *a6 = (const struct in6_addr *)mgid->raw;
	struct in_device *in_dev;
	__be32 a4;

	rtnl_lock();
	if (ipv6_addr_v4mapped(a6)) {
		a4 = a6->s6_addr32[3];
		in_dev = __in_dev_get_rtnl(sdev->ndev);
		if (in_dev) {
			if (join)
				ip_mc_inc_group(in_dev, a4);
			else
				ip_mc_dec_group(in_dev, a4);
		}
	} else if (IS_ENABLED(CONFIG_IPV6)) {
		if (join)
			ipv6_dev_mc_inc(sdev->ndev, a6);
		else
			ipv6_dev_mc_dec(sdev->ndev, a6);
	}
	rtnl_unlock();
}

/* A user's attachments are charged to the user's memory cgroup. */
static gfp_t sroce_mcast_gfp(const struct sroce_qp *qp)
{
	return qp->is_user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
}

static bool sroce_mgid_valid(const union ib_gid *mgid)
{
	const struct in6_addr *a6 = (const struct in6_addr *)mgid->raw;

	if (ipv6_addr_v4mapped(a6))
		return ipv4_is_multicast(a6->s6_addr32[3]);
	return ipv6_addr_is_multicast(a6);
}

/**
 * sroce_attach_mcast - attach a UD QP to the multicast group @ibgid
 * @ibqp: the QP
 * @ibgid: the MGID (an IPv6 or IPv4-mapped multicast address)
 * @lid: ignored (RoCE)
 *
 * Return: 0 (also when already attached), -EINVAL for a QP that is not
 * UD or a GID that is not multicast, -ENOMEM when a limit is reached.
 */
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *ibgid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcg *mcg, *new_mcg = NULL;
	struct sroce_mca *mca;
	int err;

	if (ibqp->qp_type != IB_QPT_UD || !sroce_mgid_valid(ibgid))
		return -EINVAL;

	mca = kzalloc(sizeof(*mca), sroce_mcast_gfp(qp));
	if (!mca)
		return -ENOMEM;
	mca->qp = qp;

	mutex_lock(&sdev->mcast_lock);
	mcg = sroce_mcg_find(sdev, ibgid);
	if (mcg) {
		struct sroce_mca *old;

		list_for_each_entry(old, &mcg->qps, node) {
			if (old->qp == qp) {
				err = 0;
				goto err_unlock;
			}
		}
		if (mcg->nattach >= SROCE_MAX_MCAST_QP_ATTACH) {
			err = -ENOMEM;
			goto err_unlock;
		}
	} else {
		if (sdev->mcast_ngrp >= SROCE_MAX_MCAST_GRP) {
			err = -ENOMEM;
			goto err_unlock;
		}
		new_mcg = kzalloc(sizeof(*new_mcg), sroce_mcast_gfp(qp));
		if (!new_mcg) {
			err = -ENOMEM;
			goto err_unlock;
		}
		new_mcg->mgid = *ibgid;
		INIT_LIST_HEAD(&new_mcg->qps);
		mcg = new_mcg;
	}
	if (sdev->mcast_nattach >= SROCE_MAX_MCAST_TOTAL_ATTACH) {
		err = -ENOMEM;
		goto err_free_mcg;
	}

	if (new_mcg) {
		sroce_mcast_ip(sdev, ibgid, true);
		hlist_add_head_rcu(&new_mcg->node,
				   &sdev->mcast_hash[sroce_mcast_hash(ibgid)]);
		sdev->mcast_ngrp++;
	}
	list_add_tail_rcu(&mca->node, &mcg->qps);
	mcg->nattach++;
	sdev->mcast_nattach++;
	qp->mcast_attached++;
	WRITE_ONCE(qp->mcast_used, true);
	mutex_unlock(&sdev->mcast_lock);
	return 0;

err_free_mcg:
	kfree(new_mcg);
err_unlock:
	mutex_unlock(&sdev->mcast_lock);
	kfree(mca);
	return err;
}

/* Remove @mca from @mcg, and @mcg when it empties. Under mcast_lock. */
static void sroce_mca_del(struct sroce_dev *sdev, struct sroce_mcg *mcg,
			  struct sroce_mca *mca)
{
	list_del_rcu(&mca->node);
	mca->qp->mcast_attached--;
	kfree_rcu(mca, rcu);
	sdev->mcast_nattach--;
	if (--mcg->nattach)
		return;
	hlist_del_rcu(&mcg->node);
	sdev->mcast_ngrp--;
	sroce_mcast_ip(sdev, &mcg->mgid, false);
	kfree_rcu(mcg, rcu);
}

/**
 * sroce_detach_mcast - detach a QP from the multicast group @ibgid
 * @ibqp: the QP
 * @ibgid: the MGID
 * @lid: ignored (RoCE)
 *
 * Return: 0, or -EINVAL when @ibqp is not attached to @ibgid.
 */
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *ibgid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcg *mcg;
	struct sroce_mca *mca;
	int err = -EINVAL;

	mutex_lock(&sdev->mcast_lock);
	mcg = sroce_mcg_find(sdev, ibgid);
	if (mcg) {
		list_for_each_entry(mca, &mcg->qps, node) {
			if (mca->qp == qp) {
				sroce_mca_del(sdev, mcg, mca);
				err = 0;
				break;
			}
		}
	}
	mutex_unlock(&sdev->mcast_lock);
	return err;
}

/**
 * sroce_mcast_qp_destroy - detach @qp from every group before it goes
 * @qp: a QP being destroyed, no longer reachable by number
 *
 * Waits for a grace period if the QP was ever attached, so that no
 * receive path still looks at it through an attachment.
 */
void sroce_mcast_qp_destroy(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mca *mca, *tmp;
	struct sroce_mcg *mcg;
	struct hlist_node *next;
	unsigned int i;

	if (!READ_ONCE(qp->mcast_used))
		return;
	mutex_lock(&sdev->mcast_lock);
	for (i = 0; i < SROCE_MCAST_HASH_SIZE && qp->mcast_attached; i++) {
		hlist_for_each_entry_safe(mcg, next, &sdev->mcast_hash[i],
					  node) {
			list_for_each_entry_safe(mca, tmp, &mcg->qps, node) {
				if (mca->qp == qp) {
					sroce_mca_del(sdev, mcg, mca);
					break;
				}
			}
		}
	}
	mutex_unlock(&sdev->mcast_lock);
	synchronize_rcu();
}

/**
 * sroce_mcast_rcv - deliver a packet for QP 0xFFFFFF to its group
 * @sdev: the receiving device
 * @skb: the packet (not consumed)
 * @pkt: its parsed and checked headers
 *
 * Called from the receive path (softirq). Each attached UD QP gets the
 * packet as if it were addressed to it.
 *
 * Return: the number of QPs it was delivered to (0: no such group).
 */
int sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		    struct sroce_pkt *pkt)
{
	const struct iphdr *iph = ip_hdr(skb);
	struct sroce_mcg *mcg;
	struct sroce_mca *mca;
	union ib_gid mgid;
	int n = 0;

	if (!(pkt->info->valid_qpt & BIT(IB_QPT_UD)))
		return 0;
	if (iph->version == 4) {
		if (!ipv4_is_multicast(iph->daddr))
			return 0;
		ipv6_addr_set_v4mapped(iph->daddr, (struct in6_addr *)mgid.raw);
	} else {
		/* An IPv6 header, or a v1 GRH (whose MGID may be v4-mapped). */
		const struct in6_addr *daddr = &ipv6_hdr(skb)->daddr;

		if (!ipv6_addr_is_multicast(daddr) &&
		    !(pkt->net_type == RDMA_NETWORK_ROCE_V1 &&
		      ipv6_addr_v4mapped(daddr) &&
		      ipv4_is_multicast(daddr->s6_addr32[3])))
			return 0;
		memcpy(mgid.raw, daddr, sizeof(mgid.raw));
	}

	rcu_read_lock();
	mcg = sroce_mcg_find(sdev, &mgid);
	if (mcg) {
		list_for_each_entry_rcu(mca, &mcg->qps, node) {
			struct sroce_qp *qp = mca->qp;

			if (!sroce_qp_tryget(qp))
				continue;
			sroce_resp_rcv(qp, skb, pkt);
			sroce_qp_put(qp);
			n++;
		}
	}
	rcu_read_unlock();
	return n;
}

void sroce_mcast_init(struct sroce_dev *sdev)
{
	unsigned int i;

	mutex_init(&sdev->mcast_lock);
	for (i = 0; i < SROCE_MCAST_HASH_SIZE; i++)
		INIT_HLIST_HEAD(&sdev->mcast_hash[i]);
}

/* At dealloc: every QP is gone, and with it every attachment. */
void sroce_mcast_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(sdev->mcast_ngrp || sdev->mcast_nattach);
	mutex_destroy(&sdev->mcast_lock);
}
