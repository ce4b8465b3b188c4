/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: software RDMA over Converged Ethernet (RoCEv2).
 *
 * Types shared by the files of the module. Each file owns one role and
 * states its locking rules at its top; this header only declares.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "sroce-abi.h"

#define SROCE_DRV_NAME		"sroce"
#define SROCE_LINK_TYPE		"sroce"
#define SROCE_ROCE_V2_PORT	4791

/*
 * Device limits. query_device reports exactly these and every object
 * constructor enforces them, so a consumer that trusts query_device never
 * meets a surprise.
 */
#define SROCE_MAX_PD		(1U << 16)
#define SROCE_MAX_GID_TBL	1024
#define SROCE_MAX_PKEYS		1
#define SROCE_DEFAULT_PKEY	0xffff
#define SROCE_VENDOR_ID		0xffffff
#define SROCE_LOCAL_CA_ACK_DELAY 15
/* Objects and queues that later issues bring; reported as limits now. */
#define SROCE_MAX_QP		(1U << 14)
#define SROCE_MAX_QP_WR		(1U << 14)
#define SROCE_MAX_SGE		32
#define SROCE_MAX_CQ		(1U << 14)
#define SROCE_MAX_CQE		((1U << 16) - 1)
#define SROCE_MAX_MR		(1U << 18)
#define SROCE_MAX_SRQ		(1U << 12)
#define SROCE_MAX_SRQ_WR	(1U << 14)
#define SROCE_MAX_RD_ATOM	128
#define SROCE_MAX_AH		(1U << 15)
#define SROCE_MAX_MW		(1U << 16)
#define SROCE_MAX_INLINE	256
#define SROCE_MAX_FRPL_LEN	512
#define SROCE_MAX_MCAST_GRP	256
#define SROCE_MAX_MCAST_QP_ATTACH 64

/* Device-wide counters, exported as hw_counters ("rdma statistic"). */
enum sroce_counter {
	SROCE_CNT_RX_PACKETS,
	SROCE_CNT_RX_BYTES,
	SROCE_CNT_RX_DROP_NO_QP,
	SROCE_CNT_PORT_EVENTS,
	SROCE_NUM_COUNTERS,
};

struct sroce_counters {
	u64 val[SROCE_NUM_COUNTERS];
};

struct sroce_netns;

struct sroce_dev {
	struct ib_device ibdev;		/* must stay first: ib_alloc_device */

	/*
	 * The netdev this device rides on. Held (netdev_tracker) from
	 * creation to dealloc; read without locks on the data path because
	 * it never changes while the device exists.
	 */
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	int ifindex;
	struct sroce_netns *netns;	/* UDP sockets of ndev's namespace */

	struct list_head list;		/* on sroce_dev_list, under its mutex */

	/* Port state as last reported to ib_core (under port_lock). */
	spinlock_t port_lock;
	enum ib_port_state port_state;
	enum ib_mtu active_mtu;

	struct xarray pd_xa;		/* pdn -> sroce_pd, bounds SROCE_MAX_PD */
	u32 pd_next;

	struct sroce_counters __percpu *counters;
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline void sroce_count(struct sroce_dev *sdev, enum sroce_counter c,
			       u64 n)
{
	this_cpu_add(sdev->counters->val[c], n);
}

/* sroce_main.c */
struct sroce_dev *sroce_dev_get_by_netdev(struct net_device *ndev);
int sroce_dev_list_add(struct sroce_dev *sdev);
void sroce_dev_list_del(struct sroce_dev *sdev);

/* sroce_dev.c */
int sroce_dev_create(const char *ibdev_name, struct net_device *ndev);
void sroce_dev_port_update(struct sroce_dev *sdev);
void sroce_dev_mtu_update(struct sroce_dev *sdev);
enum ib_mtu sroce_mtu_from_netdev(unsigned int ndev_mtu);

/* sroce_pd.c */
int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* sroce_net.c */
int sroce_net_init(void);
void sroce_net_exit(void);
int sroce_net_attach(struct sroce_dev *sdev);
void sroce_net_detach(struct sroce_dev *sdev);

#endif /* SROCE_H */
