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
#include "sroce_queue.h"

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
	SROCE_CNT_DOORBELLS,
	SROCE_CNT_BAD_WQE,
	SROCE_CNT_BAD_RING,
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
	struct xarray cq_xa;		/* cqn -> sroce_cq, bounds SROCE_MAX_CQ */
	u32 cq_next;
	struct xarray qp_xa;		/* qpn -> sroce_qp, bounds SROCE_MAX_QP */
	u32 qp_next;
	struct xarray srq_xa;		/* srqn -> sroce_srq */
	u32 srq_next;
	struct xarray ah_xa;		/* ah_num -> sroce_av (RCU readers) */
	u32 ah_next;
	struct xarray key_xa;		/* key >> 8 -> sroce_mr (RCU readers) */
	u32 key_next;
	atomic_t key_gen;		/* variant byte of the next key */

	struct sroce_counters __percpu *counters;
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* see sroce_cq.c */
	struct sroce_queue queue;	/* CQEs: the kernel produces */
	u32 cqn;
	u8 notify;			/* armed: IB_CQ_NEXT_COMP/SOLICITED */
	bool is_user;
	bool overflow;			/* full once: in error for good */
};

/* Address vector: where a UD datagram (or an RC/UC QP's path) goes. */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 network_type;		/* RDMA_NETWORK_IPV4 / _IPV6 */
	u8 sgid_index;
	u8 traffic_class;
	u8 hop_limit;
	u8 sl;
	u32 flow_label;
	u32 pdn;			/* the AH's PD: UD sends must match */
	struct rcu_head rcu;
};

struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_av *av;
	u32 ah_num;
};

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

enum sroce_mr_type {
	SROCE_MR_USER,			/* pinned user pages */
	SROCE_MR_DMA,			/* all kernel memory (get_dma_mr) */
	SROCE_MR_FAST,			/* fast registration (alloc_mr) */
};

struct sroce_mr {
	struct ib_mr ibmr;
	enum sroce_mr_type type;
	int access;			/* IB_ACCESS_* */
	u64 start;			/* user address of byte 0 (USER) */
	u64 iova;			/* address the MR is named by */
	u64 length;
	struct ib_umem *umem;
	struct page **pages;		/* USER: npages pinned pages */
	size_t npages;
	unsigned int offset;		/* of byte 0 in pages[0] */
	u64 *page_list;			/* FAST: mapped page addresses */
	u32 max_pages;
	u32 nmapped;
	refcount_t ref;			/* data path users + 1 */
	struct completion released;
	struct rcu_head rcu;
};

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

struct sroce_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* see sroce_srq.c */
	spinlock_t post_lock;
	struct sroce_queue rq;		/* receive WQEs: the user produces */
	u32 srqn;
	u32 max_sge;
	u32 limit;			/* armed limit, 0 = disarmed */
};

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

/* What modify_qp sets (under qp->state_lock). */
struct sroce_qp_attr {
	struct sroce_av av;
	u32 qkey;
	u32 dest_qpn;
	u32 sq_psn;
	u32 rq_psn;
	int access;
	u16 pkey_index;
	u8 path_mtu;			/* enum ib_mtu */
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 en_sqd_async_notify;
};

struct sroce_qp {
	struct ib_qp ibqp;
	spinlock_t state_lock;		/* see sroce_qp.c for the locks */
	spinlock_t sq_lock;
	spinlock_t rq_lock;
	spinlock_t post_lock;
	enum ib_qp_state state;
	struct sroce_qp_attr attr;
	struct sroce_queue sq;		/* send WQEs: the user produces */
	struct sroce_queue rq;		/* receive WQEs */
	u32 sq_checked;			/* SQ WQEs validated: [cons, checked) */
	struct sroce_cq *scq;
	struct sroce_cq *rcq;
	struct sroce_srq *srq;		/* receives come from here if set */
	u32 qpn;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline;
	bool sig_all;
	bool is_user;
};

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

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

/* sroce_ah.c */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);

/* sroce_mr.c */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key);
void sroce_mr_put(struct sroce_mr *mr);
bool sroce_mr_covers(const struct sroce_mr *mr, u64 addr, u64 len);

/* sroce_cq.c */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited);

/* sroce_srq.c */
int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
bool sroce_srq_consumed(struct sroce_srq *srq, u32 left);
void sroce_srq_limit_event(struct sroce_srq *srq);

/* sroce_qp.c */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void sroce_qp_error(struct sroce_qp *qp, bool fatal);
struct ib_qp *sroce_qp_lookup_ib(struct sroce_dev *sdev, u32 qpn);

/* sroce_queue.c */
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *rentry);

/* sroce_net.c */
int sroce_net_init(void);
void sroce_net_exit(void);
int sroce_net_attach(struct sroce_dev *sdev);
void sroce_net_detach(struct sroce_dev *sdev);

#endif /* SROCE_H */
