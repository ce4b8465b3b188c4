// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: the ib_device — creation, attributes, port state, counters,
 * the user context, and the netlink side of resource details (each
 * object's file takes its own snapshot: sroce_res_put()).
 *
 * Locking:
 *  - sdev->port_lock (spinlock) guards port_state and active_mtu. Writers
 *    run under RTNL (netdev notifier) or before registration; readers are
 *    query_port and the data path.
 *  - Everything else in struct sroce_dev is set before ib_register_device()
 *    and read-only until sroce_dealloc_driver().
 *  - Per-QP counters: ib_core serialises binding, unbinding and reading a
 *    counter (its counter->lock); qpc_xa has its own lock; the data path
 *    counts through qp->counters under RCU (sroce_qp_count()).
 */

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/restrack.h>

#include "sroce.h"

/*
 * The RDMA MTU a RoCEv2 packet can use on a netdev of @ndev_mtu bytes:
 * the largest IB MTU that fits with the IP/UDP/BTH/extension/ICRC
 * headers (ib_core's iboe_get_mtu()), capped at 4096.
 */
enum ib_mtu sroce_mtu_from_netdev(unsigned int ndev_mtu)
{
	enum ib_mtu mtu = iboe_get_mtu(ndev_mtu);

	return mtu ? min_t(enum ib_mtu, mtu, IB_MTU_4096) : IB_MTU_256;
}

static enum ib_port_state sroce_netdev_port_state(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;
}

static void sroce_dispatch_port_event(struct sroce_dev *sdev,
				      enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
	sroce_count(sdev, SROCE_CNT_PORT_EVENTS, 1);
}

/* Follow the netdev's carrier: called under RTNL on UP/DOWN/CHANGE. */
void sroce_dev_port_update(struct sroce_dev *sdev)
{
	enum ib_port_state state = sroce_netdev_port_state(sdev->ndev);
	bool changed;

	spin_lock_bh(&sdev->port_lock);
	changed = sdev->port_state != state;
	sdev->port_state = state;
	spin_unlock_bh(&sdev->port_lock);

	if (!changed)
		return;
	pr_debug("%s: port 1 %s\n", dev_name(&sdev->ibdev.dev),
		 state == IB_PORT_ACTIVE ? "active" : "down");
	sroce_dispatch_port_event(sdev, state == IB_PORT_ACTIVE ?
				  IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

void sroce_dev_mtu_update(struct sroce_dev *sdev)
{
	enum ib_mtu mtu = sroce_mtu_from_netdev(READ_ONCE(sdev->ndev->mtu));

	spin_lock_bh(&sdev->port_lock);
	sdev->active_mtu = mtu;
	spin_unlock_bh(&sdev->port_lock);
}

/*
 * On-demand paging (sroce_odp.c) on RC and UD, explicit and implicit
 * (one MR over the whole address space): the requester, the completer
 * and the responder fault pages in; an RC responder answers a packet
 * that waits for one with an RNR NAK, a UD QP holds the datagram until
 * the page is there. UC drops it: not announced.
 */
static void sroce_odp_caps(struct ib_odp_caps *caps)
{
	caps->general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	caps->per_transport_caps.rc_odp_caps = IB_ODP_SUPPORT_SEND |
					       IB_ODP_SUPPORT_RECV |
					       IB_ODP_SUPPORT_WRITE |
					       IB_ODP_SUPPORT_READ |
					       IB_ODP_SUPPORT_ATOMIC |
					       IB_ODP_SUPPORT_SRQ_RECV;
	caps->per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND |
					       IB_ODP_SUPPORT_RECV |
					       IB_ODP_SUPPORT_SRQ_RECV;
}

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	/* ib_core's own query (registration) has no udata since 7.x */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 0;
	attr->sys_image_guid = sdev->ibdev.node_guid;
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = SROCE_VENDOR_ID;
	attr->vendor_part_id = 0;
	attr->hw_ver = 0;
	attr->max_qp = SROCE_MAX_QP;
	attr->max_qp_wr = SROCE_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_ATOMIC_WRITE |
				 IB_DEVICE_FLUSH_GLOBAL |
				 IB_DEVICE_XRC;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING;
	sroce_odp_caps(&attr->odp_caps);
	attr->max_send_sge = SROCE_MAX_SGE;
	attr->max_recv_sge = SROCE_MAX_SGE;
	attr->max_sge_rd = SROCE_MAX_SGE;
	attr->max_cq = SROCE_MAX_CQ;
	attr->max_cqe = SROCE_MAX_CQE;
	attr->max_mr = SROCE_MAX_MR;
	attr->max_pd = SROCE_MAX_PD;
	attr->max_qp_rd_atom = SROCE_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = SROCE_MAX_RD_ATOM;
	attr->max_res_rd_atom = SROCE_MAX_RD_ATOM * SROCE_MAX_QP;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_mw = SROCE_MAX_MW;	/* sroce_mr_new() enforces it */
	/* sroce_mcast.c enforces these. */
	attr->max_mcast_grp = SROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SROCE_MAX_MCAST_TOTAL_ATTACH;
	attr->max_ah = SROCE_MAX_AH;
	attr->max_srq = SROCE_MAX_SRQ;
	attr->max_srq_wr = SROCE_MAX_SRQ_WR;
	attr->max_srq_sge = SROCE_MAX_SGE;
	attr->max_fast_reg_page_list_len = SROCE_MAX_FRPL_LEN;
	attr->max_pkeys = SROCE_MAX_PKEYS;
	attr->local_ca_ack_delay = SROCE_LOCAL_CA_ACK_DELAY;
	return 0;
}

static int sroce_query_port(struct ib_device *ibdev, u32 port_num,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	/* ib_core zeroes *attr and checks port_num against phys_port_cnt. */
	spin_lock_bh(&sdev->port_lock);
	attr->state = sdev->port_state;
	attr->active_mtu = sdev->active_mtu;
	spin_unlock_bh(&sdev->port_lock);

	attr->max_mtu = IB_MTU_4096;
	attr->gid_tbl_len = SROCE_MAX_GID_TBL;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = 1U << 31;
	attr->pkey_tbl_len = SROCE_MAX_PKEYS;
	attr->max_vl_num = 1;

	if (attr->state == IB_PORT_ACTIVE)
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	else if (netif_running(sdev->ndev))
		attr->phys_state = IB_PORT_PHYS_STATE_POLLING;
	else
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;

	/*
	 * The speed is the netdev's; while the netdev is going away it cannot
	 * be read, and the port is reported with a nominal 1 Gb/s then.
	 */
	if (ib_get_eth_speed(ibdev, port_num, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			    u16 *pkey)
{
	if (index >= SROCE_MAX_PKEYS)
		return -EINVAL;
	*pkey = SROCE_DEFAULT_PKEY;
	return 0;
}

static int sroce_modify_device(struct ib_device *ibdev, int mask,
			       struct ib_device_modify *attr)
{
	if (mask & ~(IB_DEVICE_MODIFY_SYS_IMAGE_GUID |
		     IB_DEVICE_MODIFY_NODE_DESC))
		return -EOPNOTSUPP;

	/* sys_image_guid is reported from node_guid; only the description. */
	if (mask & IB_DEVICE_MODIFY_SYS_IMAGE_GUID)
		return -EOPNOTSUPP;
	if (mask & IB_DEVICE_MODIFY_NODE_DESC)
		memcpy(ibdev->node_desc, attr->node_desc,
		       sizeof(ibdev->node_desc));
	return 0;
}

/*
 * RoCE v1 beside v2. With it, ib_core fills the GID table with a v1 and a
 * v2 entry for each address (index 0 v1 fe80::, 1 v2 fe80::, then a pair
 * per address, as on hardware RoCE NICs), and the GID a QP or AH names
 * chooses its framing. Off by default: the v2 IPv4 GID then keeps index
 * 1, as on rdma_rxe, which scripts and guides assume. Read when a device
 * is created (ib_core reads the port's capabilities once).
 */
static bool sroce_roce_v1;
module_param_named(roce_v1, sroce_roce_v1, bool, 0644);
MODULE_PARM_DESC(roce_v1,
		 "devices created from now on speak RoCE v1 (ethertype 0x8915) beside v2, with v1 GIDs in their tables (default: off, v2 only)");

static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				    struct ib_port_immutable *immutable)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	immutable->pkey_tbl_len = SROCE_MAX_PKEYS;
	immutable->gid_tbl_len = SROCE_MAX_GID_TBL;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	if (sdev->roce_v1)
		immutable->core_cap_flags |= RDMA_CORE_PORT_IBA_ROCE;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u", SROCE_UVERBS_ABI_VERSION);
}

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_alloc_ucontext_resp resp = {
		.abi_version = SROCE_UVERBS_ABI_VERSION,
		/* FLUSH needs MRs ib_core lets have flush access (6.2). */
		.flags = SROCE_CTX_F_ATOMIC_WRITE | SROCE_CTX_F_XRC |
			 (IB_ACCESS_FLUSH_GLOBAL ? SROCE_CTX_F_FLUSH : 0),
		.max_inline_data = SROCE_MAX_INLINE,
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The device goes away (rdma link delete, its netdev deleted, rmmod) while
 * a process still has it open. By the time this runs ib_core has destroyed
 * the context's objects through our usual destroy verbs and replaced the
 * process's ring mappings with zero pages, so it keeps no pointer into our
 * memory; it gets IB_EVENT_DEVICE_FATAL and EIO from then on. We hold
 * nothing else per context. Having this op is what lets the unregistration
 * finish without waiting for every such process to exit.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/* Counters ---------------------------------------------------------- */

static const struct rdma_stat_desc sroce_counter_descs[] = {
	[SROCE_CNT_RX_PACKETS] = { .name = "rx_packets" },
	[SROCE_CNT_RX_BYTES] = { .name = "rx_bytes" },
	[SROCE_CNT_RX_DROP_NO_QP] = { .name = "rx_drop_no_qp" },
	[SROCE_CNT_PORT_EVENTS] = { .name = "port_events" },
	[SROCE_CNT_DOORBELLS] = { .name = "doorbells" },
	[SROCE_CNT_LINGER_PICKUPS] = { .name = "linger_pickups" },
	[SROCE_CNT_STREAM_DOORBELLS] = { .name = "stream_doorbells" },
	[SROCE_CNT_BAD_WQE] = { .name = "bad_wqe" },
	[SROCE_CNT_BAD_RING] = { .name = "bad_ring_index" },
	[SROCE_CNT_RX_DROP_MALFORMED] = { .name = "rx_drop_malformed" },
	[SROCE_CNT_RX_DROP_ICRC] = { .name = "rx_drop_icrc" },
	[SROCE_CNT_RX_DROP_STATE] = { .name = "rx_drop_qp_state" },
	[SROCE_CNT_TX_PACKETS] = { .name = "tx_packets" },
	[SROCE_CNT_TX_BYTES] = { .name = "tx_bytes" },
	[SROCE_CNT_TX_ERRORS] = { .name = "tx_errors" },
	[SROCE_CNT_RETRANSMIT_TIMEOUTS] = { .name = "retransmit_timeouts" },
	[SROCE_CNT_RETRANSMIT_PACKETS] = { .name = "retransmitted_packets" },
	[SROCE_CNT_SEQ_NAK_SENT] = { .name = "seq_nak_sent" },
	[SROCE_CNT_SEQ_NAK_RCVD] = { .name = "seq_nak_received" },
	[SROCE_CNT_RNR_NAK_SENT] = { .name = "rnr_nak_sent" },
	[SROCE_CNT_RNR_NAK_RCVD] = { .name = "rnr_nak_received" },
	[SROCE_CNT_ERR_NAK_SENT] = { .name = "error_nak_sent" },
	[SROCE_CNT_ERR_NAK_RCVD] = { .name = "error_nak_received" },
	[SROCE_CNT_DUP_REQUESTS] = { .name = "duplicate_requests" },
	[SROCE_CNT_ACKS_SENT] = { .name = "acks_sent" },
	[SROCE_CNT_RETRY_EXCEEDED] = { .name = "retry_exceeded" },
	[SROCE_CNT_RESP_DROP] = { .name = "stale_responses" },
	[SROCE_CNT_TX_LENT] = { .name = "tx_zero_copy_packets" },
	[SROCE_CNT_RX_DROP_SEQ] = { .name = "rx_drop_out_of_sequence" },
	[SROCE_CNT_TX_BURSTS] = { .name = "tx_bursts" },
	[SROCE_CNT_TX_TAPPED] = { .name = "tx_tapped_packets" },
	[SROCE_CNT_LO_DEFERRED] = { .name = "loopback_deferred" },
	[SROCE_CNT_ODP_FAULTS] = { .name = "odp_page_faults" },
	[SROCE_CNT_ODP_FAULT_ERRORS] = { .name = "odp_page_fault_errors" },
	[SROCE_CNT_ODP_INVALIDATIONS] = { .name = "odp_invalidations" },
	[SROCE_CNT_ODP_PREFETCHES] = { .name = "odp_prefetches" },
	[SROCE_CNT_ODP_RNR_NAK_SENT] = { .name = "odp_rnr_nak_sent" },
	[SROCE_CNT_ODP_REQ_WAITS] = { .name = "odp_requester_waits" },
	[SROCE_CNT_ODP_RX_DROPS] = { .name = "odp_rx_drops" },
	[SROCE_CNT_ODP_RX_DEFERRED] = { .name = "odp_rx_deferred" },
	[SROCE_CNT_DMABUF_MOVES] = { .name = "dmabuf_moves" },
	/* Congestion control: the names RoCE NICs give them. */
	[SROCE_CNT_NP_ECN_MARKED] = { .name = "np_ecn_marked_roce_packets" },
	[SROCE_CNT_NP_CNP_SENT] = { .name = "np_cnp_sent" },
	[SROCE_CNT_RP_CNP_HANDLED] = { .name = "rp_cnp_handled" },
	[SROCE_CNT_RP_CNP_IGNORED] = { .name = "rp_cnp_ignored" },
	[SROCE_CNT_RP_PACED] = { .name = "rp_paced_waits" },
	[SROCE_CNT_RX_REORDER_HELD] = { .name = "rx_reorder_held" },
	[SROCE_CNT_RX_REORDER_TIMEOUTS] = { .name = "rx_reorder_timeouts" },
	[SROCE_CNT_RX_RXE_FLUSH_ICRC] = { .name = "rx_flush_rxe_icrc" },
	[SROCE_CNT_TX_RXE_FLUSH_ICRC] = { .name = "tx_flush_rxe_icrc" },
	[SROCE_CNT_DEV_WINDOW_WAITS] = { .name = "dev_window_waits" },
	[SROCE_CNT_RX_STEERED] = { .name = "rx_steered_packets" },
	[SROCE_CNT_RX_STEER_DROPS] = { .name = "rx_steer_drops" },
};

static_assert(ARRAY_SIZE(sroce_counter_descs) == SROCE_NUM_COUNTERS);

static struct rdma_hw_stats *
sroce_alloc_hw_port_stats(struct ib_device *ibdev, u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_counter_descs,
					  SROCE_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* @value[] := the sum over CPUs of @counters. */
static void sroce_counters_sum(struct sroce_counters __percpu *counters,
			       u64 *value)
{
	int cpu, c;

	for (c = 0; c < SROCE_NUM_COUNTERS; c++)
		value[c] = 0;
	for_each_possible_cpu(cpu) {
		struct sroce_counters *pc = per_cpu_ptr(counters, cpu);

		for (c = 0; c < SROCE_NUM_COUNTERS; c++)
			value[c] += READ_ONCE(pc->val[c]);
	}
}

/*
 * The device's counters: events of QPs bound to an rdma_counter are not in
 * them (sroce_qp_count()); ib_core adds those for the port's totals.
 */
static int sroce_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port_num,
			      int index)
{
	sroce_counters_sum(to_sdev(ibdev)->counters, stats->value);
	return SROCE_NUM_COUNTERS;
}

/*
 * Per-QP counters ("rdma statistic qp set|bind"). ib_core's rdma_counter
 * groups QPs (by hand, or automatically by type or process); sroce gives
 * each one its own counters, which the bound QPs count in instead of the
 * device's. A counter has the device's layout (ib_core sums them by
 * index); it shows the events a QP's own paths count, the rest (packets
 * and drops before a QP is known, ODP faults of MRs) stay the device's.
 */
#define SROCE_QP_COUNTERS (BIT_ULL(SROCE_CNT_RX_DROP_STATE) | \
			   BIT_ULL(SROCE_CNT_DOORBELLS) | \
			   BIT_ULL(SROCE_CNT_LINGER_PICKUPS) | \
			   BIT_ULL(SROCE_CNT_STREAM_DOORBELLS) | \
			   BIT_ULL(SROCE_CNT_BAD_WQE) | \
			   BIT_ULL(SROCE_CNT_BAD_RING) | \
			   BIT_ULL(SROCE_CNT_RETRANSMIT_TIMEOUTS) | \
			   BIT_ULL(SROCE_CNT_RETRANSMIT_PACKETS) | \
			   BIT_ULL(SROCE_CNT_SEQ_NAK_SENT) | \
			   BIT_ULL(SROCE_CNT_SEQ_NAK_RCVD) | \
			   BIT_ULL(SROCE_CNT_RNR_NAK_SENT) | \
			   BIT_ULL(SROCE_CNT_RNR_NAK_RCVD) | \
			   BIT_ULL(SROCE_CNT_ERR_NAK_SENT) | \
			   BIT_ULL(SROCE_CNT_ERR_NAK_RCVD) | \
			   BIT_ULL(SROCE_CNT_DUP_REQUESTS) | \
			   BIT_ULL(SROCE_CNT_ACKS_SENT) | \
			   BIT_ULL(SROCE_CNT_RETRY_EXCEEDED) | \
			   BIT_ULL(SROCE_CNT_RESP_DROP) | \
			   BIT_ULL(SROCE_CNT_TX_LENT) | \
			   BIT_ULL(SROCE_CNT_RX_DROP_SEQ) | \
			   BIT_ULL(SROCE_CNT_RX_REORDER_HELD) | \
			   BIT_ULL(SROCE_CNT_RX_REORDER_TIMEOUTS) | \
			   BIT_ULL(SROCE_CNT_ODP_RNR_NAK_SENT) | \
			   BIT_ULL(SROCE_CNT_ODP_REQ_WAITS) | \
			   BIT_ULL(SROCE_CNT_DEV_WINDOW_WAITS) | \
			   BIT_ULL(SROCE_CNT_ODP_RX_DROPS) | \
			   BIT_ULL(SROCE_CNT_ODP_RX_DEFERRED))

static_assert(SROCE_NUM_COUNTERS <= 64);

/* A counter's own counters, by counter->id (qpc_xa). */
struct sroce_qpc {
	struct sroce_counters __percpu *pc;
};

static struct rdma_hw_stats *
sroce_counter_alloc_stats(struct rdma_counter *counter)
{
	struct rdma_hw_stats *stats;
	int c;

	stats = rdma_alloc_hw_stats_struct(sroce_counter_descs,
					   SROCE_NUM_COUNTERS,
					   RDMA_HW_STATS_DEFAULT_LIFESPAN);
	if (!stats)
		return NULL;
	/* Not shown per QP; still summed into the port's totals. */
	for (c = 0; c < SROCE_NUM_COUNTERS; c++)
		if (!(SROCE_QP_COUNTERS & BIT_ULL(c)))
			set_bit(c, stats->is_disabled);
	return stats;
}

/* A counter's first QP: its counters, and the id ib_core lists it by. */
static int sroce_counter_new(struct sroce_dev *sdev,
			     struct rdma_counter *counter)
{
	struct sroce_qpc *qpc = kzalloc(sizeof(*qpc), GFP_KERNEL);
	int err = -ENOMEM;

	if (qpc)
		qpc->pc = alloc_percpu(struct sroce_counters);
	if (qpc && qpc->pc)
		err = xa_alloc(&sdev->qpc_xa, &counter->id, qpc,
			       XA_LIMIT(1, SROCE_MAX_QP), GFP_KERNEL);
	if (err) {
		if (qpc)
			free_percpu(qpc->pc);
		kfree(qpc);
		return err == -EBUSY ? -ENOMEM : err;
	}
	return 0;
}

int sroce_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp,
			  u32 port)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qpc *qpc;
	int err;

	if (!counter->id) {
		err = sroce_counter_new(sdev, counter);
		if (err)
			return err;
	}
	qpc = xa_load(&sdev->qpc_xa, counter->id);
	if (WARN_ON_ONCE(!qpc))
		return -EINVAL;
	/* Zeroed (alloc_percpu) before the data path can count in it. */
	smp_store_release(&to_sqp(ibqp)->counters, qpc->pc);
	ibqp->counter = counter;
	return 0;
}

int sroce_counter_unbind_qp(struct ib_qp *ibqp, u32 port)
{
	WRITE_ONCE(to_sqp(ibqp)->counters, NULL);
	/*
	 * Events on their way into the counter get there before ib_core
	 * reads it for the last time (when its last QP goes) and frees it.
	 */
	synchronize_rcu();
	ibqp->counter = NULL;
	return 0;
}

static int sroce_counter_update_stats(struct rdma_counter *counter)
{
	struct sroce_qpc *qpc = xa_load(&to_sdev(counter->device)->qpc_xa,
					counter->id);

	if (qpc)
		sroce_counters_sum(qpc->pc, counter->stats->value);
	return 0;
}

/* Its QPs are unbound: nothing counts in it any more. */
static int sroce_counter_dealloc(struct rdma_counter *counter)
{
	struct sroce_qpc *qpc;

	if (!counter->id)
		return 0;
	qpc = xa_erase(&to_sdev(counter->device)->qpc_xa, counter->id);
	if (qpc) {
		free_percpu(qpc->pc);
		kfree(qpc);
	}
	return 0;
}

/* Resource details ---------------------------------------------------- */

static int sroce_res_put_one(struct sk_buff *msg,
			     const struct sroce_res_field *f)
{
	switch (f->kind) {
	case SROCE_RES_U32:
		return rdma_nl_put_driver_u32(msg, f->name, f->val);
	case SROCE_RES_HEX32:
		return rdma_nl_put_driver_u32_hex(msg, f->name, f->val);
	case SROCE_RES_U64:
		return rdma_nl_put_driver_u64(msg, f->name, f->val);
	case SROCE_RES_HEX64:
		return rdma_nl_put_driver_u64_hex(msg, f->name, f->val);
	default:
		return rdma_nl_put_driver_string(msg, f->name, f->str);
	}
}

/**
 * sroce_res_put - add @n driver details to a resource's netlink entry
 * @msg: the entry ib_core is filling (fill_res_*_entry)
 * @f: the details, as "rdma resource show ... -dd" prints them, in order
 * @n: how many
 *
 * The QP, CQ and MR files take a snapshot of their object into @f first:
 * nothing here runs under their locks.
 *
 * Return: 0 or -EMSGSIZE (ib_core then continues in another message).
 */
int sroce_res_put(struct sk_buff *msg, const struct sroce_res_field *f,
		  unsigned int n)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	unsigned int i;

	if (!table)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (sroce_res_put_one(msg, &f[i])) {
			nla_nest_cancel(msg, table);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, table);
	return 0;
}

/* sysfs --------------------------------------------------------------- */

static ssize_t sroce_abi_version_show(struct device *device,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", SROCE_UVERBS_ABI_VERSION);
}
static DEVICE_ATTR_RO(sroce_abi_version);

static ssize_t netdev_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	struct sroce_dev *sdev = rdma_device_to_drv_device(device,
							   struct sroce_dev,
							   ibdev);

	return sysfs_emit(buf, "%s\n", netdev_name(sdev->ndev));
}
static DEVICE_ATTR_RO(netdev);

/* RC PSNs in flight as the device's window sees them (sroce_req.c). */
static ssize_t tx_inflight_show(struct device *device,
				struct device_attribute *attr, char *buf)
{
	struct sroce_dev *sdev = rdma_device_to_drv_device(device,
							   struct sroce_dev,
							   ibdev);

	return sysfs_emit(buf, "%d\n", atomic_read(&sdev->tx_inflight));
}
static DEVICE_ATTR_RO(tx_inflight);

static struct attribute *sroce_dev_attrs[] = {
	&dev_attr_sroce_abi_version.attr,
	&dev_attr_netdev.attr,
	&dev_attr_tx_inflight.attr,
	NULL,
};

static const struct attribute_group sroce_dev_attr_group = {
	.attrs = sroce_dev_attrs,
};

/* Life cycle ---------------------------------------------------------- */

/*
 * Undo sroce_dev_create(). Called by ib_core at the end of unregistration,
 * and by ib_dealloc_device() when creation fails before registration, so
 * it copes with a partly built device.
 */
static void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	sroce_net_detach(sdev);
	WARN_ON(!xa_empty(&sdev->pd_xa));
	WARN_ON(!xa_empty(&sdev->cq_xa));
	WARN_ON(!xa_empty(&sdev->key_xa));
	WARN_ON(!xa_empty(&sdev->ah_xa));
	WARN_ON(!xa_empty(&sdev->qp_xa));
	WARN_ON(!xa_empty(&sdev->srq_xa));
	WARN_ON(!xa_empty(&sdev->qpc_xa));
	xa_destroy(&sdev->pd_xa);
	xa_destroy(&sdev->cq_xa);
	xa_destroy(&sdev->key_xa);
	xa_destroy(&sdev->ah_xa);
	xa_destroy(&sdev->qp_xa);
	xa_destroy(&sdev->srq_xa);
	xa_destroy(&sdev->qpc_xa);
	sroce_mcast_cleanup(sdev);
	free_percpu(sdev->counters);
	netdev_put(sdev->ndev, &sdev->ndev_tracker);
	sroce_dev_list_del(sdev);
}

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SROCE_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.advise_mr = sroce_advise_mr,
	.alloc_mr = sroce_alloc_mr,
	.alloc_mw = sroce_alloc_mw,
	.alloc_pd = sroce_alloc_pd,
	.alloc_ucontext = sroce_alloc_ucontext,
	.alloc_xrcd = sroce_alloc_xrcd,
	.attach_mcast = sroce_attach_mcast,
	.counter_alloc_stats = sroce_counter_alloc_stats,
	.counter_dealloc = sroce_counter_dealloc,
	.counter_update_stats = sroce_counter_update_stats,
	.create_ah = sroce_create_ah,
	.create_cq = sroce_create_cq,
	.create_qp = sroce_create_qp,
	.create_srq = sroce_create_srq,
	.create_user_ah = sroce_create_ah,
	.dealloc_driver = sroce_dealloc_driver,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.dealloc_xrcd = sroce_dealloc_xrcd,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.detach_mcast = sroce_detach_mcast,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.device_group = &sroce_dev_attr_group,
	.fill_res_cq_entry = sroce_fill_res_cq_entry,
	.fill_res_mr_entry = sroce_fill_res_mr_entry,
	.fill_res_qp_entry = sroce_fill_res_qp_entry,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.get_dma_mr = sroce_get_dma_mr,
	.get_hw_stats = sroce_get_hw_stats,
	.get_link_layer = sroce_get_link_layer,
	.get_port_immutable = sroce_get_port_immutable,
	.map_mr_sg = sroce_map_mr_sg,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,
	.modify_device = sroce_modify_device,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.port_groups = sroce_cc_port_groups,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_ah = sroce_query_ah,
	.query_device = sroce_query_device,
	.query_pkey = sroce_query_pkey,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	.req_notify_cq = sroce_req_notify_cq,
	.rereg_user_mr = sroce_rereg_user_mr,
	/* their form differs by kernel (sroce_compat.h) */
	SROCE_OPS_REG_USER_MR,
	SROCE_OPS_REG_USER_MR_DMABUF,
	SROCE_OPS_RESIZE_CQ,
	SROCE_OPS_COUNTER_BIND,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};

static void sroce_dev_init_ib(struct sroce_dev *sdev)
{
	struct ib_device *ibdev = &sdev->ibdev;
	struct net_device *ndev = sdev->ndev;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "sroce", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    ndev->dev_addr);
	ib_set_device_ops(ibdev, &sroce_dev_ops);
	/*
	 * Commands ib_core leaves off by default: arming a CQ, and the post
	 * commands a provider uses as its doorbell (with no work requests).
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV);
}

/**
 * sroce_dev_create - create and register an sroce device on @ndev
 * @ibdev_name: name asked for by "rdma link add"
 * @ndev: the netdev, referenced by the caller for the whole call
 *
 * Return: 0, or -EEXIST when @ndev already has an sroce device,
 * -EADDRINUSE when UDP port 4791 is taken in @ndev's namespace, or
 * another errno from ib_core.
 */
int sroce_dev_create(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	int err;

	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev)
		return -ENOMEM;

	/*
	 * From here on ib_dealloc_device() unwinds through dealloc_driver,
	 * so the ops go in first and everything it undoes is valid.
	 */
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	sroce_dev_init_ib(sdev);
	sdev->ifindex = ndev->ifindex;
	sdev->roce_v1 = READ_ONCE(sroce_roce_v1);
	INIT_LIST_HEAD(&sdev->list);
	spin_lock_init(&sdev->port_lock);
	xa_init_flags(&sdev->pd_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->cq_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->key_xa, XA_FLAGS_ALLOC);
	spin_lock_init(&sdev->mw_lock);
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->srq_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->qpc_xa, XA_FLAGS_ALLOC);
	sroce_mcast_init(sdev);
	sroce_cc_dev_init(sdev);
	sdev->counters = alloc_percpu(struct sroce_counters);
	if (!sdev->counters) {
		err = -ENOMEM;
		goto err_dealloc;
	}

	err = sroce_dev_list_add(sdev);
	if (err) {
		pr_err("%s: netdev %s already has an sroce device\n",
		       SROCE_DRV_NAME, ndev->name);
		goto err_dealloc;
	}

	sdev->port_state = sroce_netdev_port_state(ndev);
	sdev->active_mtu = sroce_mtu_from_netdev(READ_ONCE(ndev->mtu));

	err = ib_device_set_netdev(&sdev->ibdev, ndev, 1);
	if (err)
		goto err_dealloc;

	err = sroce_net_attach(sdev);
	if (err)
		goto err_dealloc;

	err = ib_register_device(&sdev->ibdev, ibdev_name, NULL);
	if (err) {
		pr_err("%s: registering %s on %s failed: %d\n", SROCE_DRV_NAME,
		       ibdev_name, ndev->name, err);
		goto err_dealloc;
	}

	/*
	 * Catch a carrier or MTU change that raced with registration. Once
	 * registered the device can be unregistered (and freed) at any time,
	 * so touch it only under a registration reference.
	 */
	if (ib_device_try_get(&sdev->ibdev)) {
		rtnl_lock();
		sroce_dev_port_update(sdev);
		sroce_dev_mtu_update(sdev);
		rtnl_unlock();
		ib_device_put(&sdev->ibdev);
	}
	return 0;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return err;
}
