// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: address handles.
 *
 * An AH holds an address vector (struct sroce_av): everything a UD send
 * needs to build its headers (IP/UDP for RoCE v2, Ethernet and GRH for
 * v1). User UD WQEs name their AH
 * by number (struct sroce_create_ah_resp); the requester finds the AV
 * under RCU in sdev->ah_xa. The AV is a separate allocation freed after a
 * grace period, because ib_core frees the ib_ah itself as soon as
 * destroy_ah returns, which may be in atomic context.
 */

#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "sroce.h"

/*
 * Fill @av from @attr. The source GID's type chooses the framing: RoCE v2
 * (IPv4 or IPv6, by the GID) or RoCE v1 (a GRH in an Ethernet frame, to
 * the MAC ib_core resolved into attr->roce.dmac). A device without v1 has
 * no v1 GID for an attribute to name.
 */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	const struct ib_gid_attr *sgid_attr = attr->grh.sgid_attr;
	enum rdma_network_type type;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) || !sgid_attr)
		return -EINVAL;
	if (sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP &&
	    sgid_attr->gid_type != IB_GID_TYPE_ROCE)
		return -EOPNOTSUPP;

	type = rdma_gid_attr_network_type(sgid_attr);
	if (type != RDMA_NETWORK_IPV4 && type != RDMA_NETWORK_IPV6 &&
	    type != RDMA_NETWORK_ROCE_V1)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->network_type = type;
	av->sgid = sgid_attr->gid;
	av->dgid = grh->dgid;
	av->sgid_index = grh->sgid_index;
	/*
	 * IBTA's flow label is 20 bits; UCX passes ~0.  Unmasked, it would
	 * overwrite the IPv6 version (ip6_flow_hdr ORs it into the word).
	 */
	av->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	av->traffic_class = grh->traffic_class;
	av->hop_limit = grh->hop_limit;
	av->sl = rdma_ah_get_sl(attr);
	ether_addr_copy(av->dmac, attr->roce.dmac);
	return 0;
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	struct sroce_create_ah_resp resp = {};
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	/* A user's verb may sleep, and its memory is charged to the user. */
	ah->av = kzalloc(sizeof(*ah->av),
			 udata ? GFP_KERNEL_ACCOUNT : GFP_ATOMIC);
	if (!ah->av)
		return -ENOMEM;
	err = sroce_av_from_attr(ah->av, init_attr->ah_attr);
	if (err)
		goto err_free;
	/* Set before the AV is published: the requester reads it under RCU. */
	ah->av->pdn = to_spd(ibah->pd)->pdn;

	err = xa_alloc_cyclic(&sdev->ah_xa, &ah->ah_num, ah->av,
			      XA_LIMIT(1, SROCE_MAX_AH), &sdev->ah_next,
			      GFP_ATOMIC);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_free;
	}

	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	/* Published: a UD requester may be reading it under RCU. */
	xa_erase(&sdev->ah_xa, ah->ah_num);
	kfree_rcu(ah->av, rcu);
	return err;
err_free:
	kfree(ah->av);
	return err;
}

int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct sroce_av *av = to_sah(ibah)->av;

	memset(attr, 0, sizeof(*attr));
	attr->type = ibah->type;
	rdma_ah_set_grh(attr, &av->dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_port_num(attr, 1);
	ether_addr_copy(attr->roce.dmac, av->dmac);
	return 0;
}

int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);

	/* Atomic callers (kernel ULPs) destroy AHs whose sends completed. */
	if (flags & RDMA_DESTROY_AH_SLEEPABLE)
		sroce_qp_drain_ud_senders(sdev, ibah->pd);
	xa_erase(&sdev->ah_xa, ah->ah_num);
	kfree_rcu(ah->av, rcu);
	return 0;
}
