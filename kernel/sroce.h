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
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>

#include "sroce-abi.h"
#include "sroce_compat.h"
#include "sroce_queue.h"
#include "sroce_task.h"

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
/* As mlx5: libfabric's rxm asks for 2^18 (its universe size 1024 x 256). */
#define SROCE_MAX_CQE		((1U << 22) - 1)
#define SROCE_MAX_MR		(1U << 18)
#define SROCE_MAX_SRQ		(1U << 12)
#define SROCE_MAX_SRQ_WR	(1U << 14)
#define SROCE_MAX_XRCD		(1U << 16)
#define SROCE_MAX_RD_ATOM	128
#define SROCE_MAX_AH		(1U << 15)
#define SROCE_MAX_MW		(1U << 16)
#define SROCE_MAX_INLINE	256
#define SROCE_MAX_FRPL_LEN	512
#define SROCE_MAX_MCAST_GRP	256
#define SROCE_MAX_MCAST_QP_ATTACH 64
#define SROCE_MAX_MCAST_TOTAL_ATTACH (SROCE_MAX_MCAST_GRP * \
				      SROCE_MAX_MCAST_QP_ATTACH)
#define SROCE_MCAST_HASH_SIZE	64	/* power of 2 */
#define SROCE_MCAST_QPN		0xffffff	/* BTH DestQP of multicast */

/*
 * Counters, exported as hw_counters ("rdma statistic"): the device's, and
 * those of QPs bound to an rdma_counter (sroce_qp_count(), sroce_dev.c).
 */
enum sroce_counter {
	SROCE_CNT_RX_PACKETS,
	SROCE_CNT_RX_BYTES,
	SROCE_CNT_RX_DROP_NO_QP,
	SROCE_CNT_PORT_EVENTS,
	SROCE_CNT_DOORBELLS,
	SROCE_CNT_LINGER_PICKUPS,	/* WQEs found without a doorbell */
	SROCE_CNT_STREAM_DOORBELLS,	/* doorbells that went to a worker */
	SROCE_CNT_BAD_WQE,
	SROCE_CNT_BAD_RING,
	SROCE_CNT_RX_DROP_MALFORMED,	/* headers, lengths, opcode, P_Key */
	SROCE_CNT_RX_DROP_ICRC,
	SROCE_CNT_RX_DROP_STATE,	/* QP not in a state to take it */
	SROCE_CNT_TX_PACKETS,
	SROCE_CNT_TX_BYTES,
	SROCE_CNT_TX_ERRORS,		/* no route, no memory */
	SROCE_CNT_RETRANSMIT_TIMEOUTS,
	SROCE_CNT_RETRANSMIT_PACKETS,
	SROCE_CNT_SEQ_NAK_SENT,
	SROCE_CNT_SEQ_NAK_RCVD,
	SROCE_CNT_RNR_NAK_SENT,
	SROCE_CNT_RNR_NAK_RCVD,
	SROCE_CNT_ERR_NAK_SENT,		/* invalid request, access, op error */
	SROCE_CNT_ERR_NAK_RCVD,
	SROCE_CNT_DUP_REQUESTS,
	SROCE_CNT_ACKS_SENT,
	SROCE_CNT_RETRY_EXCEEDED,
	SROCE_CNT_RESP_DROP,		/* stale or out-of-window responses */
	SROCE_CNT_TX_LENT,		/* packets sent with lent MR pages */
	SROCE_CNT_RX_DROP_SEQ,		/* requests beyond the expected PSN */
	SROCE_CNT_TX_BURSTS,		/* GSO bursts of several packets */
	SROCE_CNT_TX_TAPPED,		/* ... sent singly: a packet tap listened */
	SROCE_CNT_LO_DEFERRED,		/* loopback packets queued behind one */
	SROCE_CNT_ODP_FAULTS,		/* ODP fault requests resolved */
	SROCE_CNT_ODP_FAULT_ERRORS,	/* ... that found no (writable) page */
	SROCE_CNT_ODP_INVALIDATIONS,	/* notifier invalidations of ODP MRs */
	SROCE_CNT_ODP_PREFETCHES,	/* advise_mr prefetch ranges */
	SROCE_CNT_ODP_RNR_NAK_SENT,	/* RNR NAKs while a page faulted in */
	SROCE_CNT_ODP_REQ_WAITS,	/* requester passes waiting for one */
	SROCE_CNT_ODP_RX_DROPS,		/* UC/UD packets dropped waiting for one */
	SROCE_CNT_ODP_RX_DEFERRED,	/* UD datagrams held for one */
	SROCE_CNT_DMABUF_MOVES,		/* exporters' move_notify of dma-buf MRs */
	SROCE_CNT_NP_ECN_MARKED,	/* CE-marked packets received */
	SROCE_CNT_NP_CNP_SENT,		/* CNPs sent for them */
	SROCE_CNT_RP_CNP_HANDLED,	/* CNPs that a QP's rate reacted to */
	SROCE_CNT_RP_CNP_IGNORED,	/* CNPs with reaction off or no sender */
	SROCE_CNT_RP_PACED,		/* requester passes held by the pacer */
	SROCE_CNT_RX_REORDER_HELD,	/* RC requests held past a gap */
	SROCE_CNT_RX_REORDER_TIMEOUTS,	/* gaps that stayed: a sequence NAK */
	SROCE_CNT_RX_RXE_FLUSH_ICRC,	/* FLUSHes sealed as rdma_rxe seals them */
	SROCE_CNT_TX_RXE_FLUSH_ICRC,	/* ... and sent so (sroce_net.c) */
	SROCE_CNT_DEV_WINDOW_WAITS,	/* requester passes the device held */
	SROCE_CNT_RX_STEERED,		/* packets received on another CPU */
	SROCE_CNT_RX_STEER_DROPS,	/* ... dropped with its queue full */
	SROCE_NUM_COUNTERS,
};

struct sroce_counters {
	u64 val[SROCE_NUM_COUNTERS];
};

struct sroce_netns;
struct sroce_pkt;

/*
 * Congestion control parameters of a device (sroce_cc.c; sysfs
 * ports/1/cc/). Units: rates Mb/s, times microseconds, alpha and g in
 * 1/1024. Read with READ_ONCE on the data path.
 */
struct sroce_cc_params {
	u32 enable;			/* ECN marking, NP and RP at all */
	u32 np_enable;
	u32 rp_enable;
	u32 ecn;			/* INET_ECN_*: the data packets' ECN */
	u32 np_min_time_between_cnps;
	u32 np_cnp_dscp;
	u32 np_cnp_prio;
	u32 rp_max_rate;		/* 0: the link's speed */
	u32 rp_min_rate;
	u32 rp_ai_rate;
	u32 rp_hai_rate;
	u32 rp_time_reset;
	u32 rp_byte_reset;		/* bytes; 0: no byte counter */
	u32 rp_threshold;
	u32 rp_rate_reduce_monitor_period;
	u32 rp_initial_alpha_value;
	u32 rp_dce_tcp_g;
	u32 rp_dce_tcp_rtt;
	u32 rp_clamp_tgt_rate;
	u32 rp_min_dec_fac;		/* percent */
	u32 rp_rate_to_set_on_first_cnp;
	u32 rp_window_us;		/* sroce's: in-flight bound, 0: none */
};

/*
 * Bursts received on a CPU beside the one whose softirq took them
 * (sroce_net.c, "Receive steering"), a queue per group of destination
 * QPs. The queue's lock guards busy.
 */
#define SROCE_RXQS	16

struct sroce_rxq {
	struct sroce_dev *sdev;
	struct sk_buff_head queue;
	struct work_struct work;
	bool busy;		/* work queued or running: every packet queues */
	int cpu;		/* ... taken for it (sroce_task_cpu_take()) */
};

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
	bool roce_v1;			/* v1 GIDs and framing beside v2 */
	struct sroce_netns *netns;	/* UDP sockets of ndev's namespace */
	struct sroce_rxq rxq[SROCE_RXQS];

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
	u32 mw_key_next;		/* windows: above SROCE_MAX_MR */
	atomic_t key_gen;		/* variant byte of the next key */
	atomic64_t qp_serial;		/* sroce_qp.serial of the last QP */
	atomic_t odp_mrs;		/* ODP and dma-buf MRs (can miss) */
	atomic_t nxrcd;			/* XRC domains (sroce_pd.c) */
	/* RC PSNs unacknowledged, as its QPs last counted (sroce_req.c) */
	atomic_t tx_inflight;
	spinlock_t mw_lock;		/* window state (sroce_mw.c) */

	/* Multicast groups and their QPs (see sroce_mcast.c). */
	struct mutex mcast_lock;
	struct hlist_head mcast_hash[SROCE_MCAST_HASH_SIZE];
	u32 mcast_ngrp;
	u32 mcast_nattach;

	struct sroce_counters __percpu *counters;
	struct sroce_cc_params cc;
	/* Per-QP counters (sroce_dev.c): id -> struct sroce_qpc */
	struct xarray qpc_xa;
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/*
 * An XRC domain: what its SRQs and target QPs share. ib_core counts its
 * users and shares it between processes (by file); sroce only compares
 * the pointer, so the object needs nothing of its own.
 */
struct sroce_xrcd {
	struct ib_xrcd ibxrcd;
};

struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* see sroce_cq.c */
	struct sroce_queue queue;	/* CQEs: the kernel produces */
	u32 cqn;
	u8 notify;			/* armed: IB_CQ_NEXT_COMP/SOLICITED */
	bool is_user;
	bool overflow;			/* full once: in error for good */
	bool gone;			/* destroyed: the ring is freed */
	u64 lost;			/* completions refused since */
};

/* Address vector: where a UD datagram (or an RC/UC QP's path) goes. */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 network_type;		/* RDMA_NETWORK_IPV4, _IPV6, _ROCE_V1 */
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
	SROCE_MR_WINDOW,		/* a memory window's key (sroce_mw.c) */
};

/*
 * IB_WR_REG_MR in a kernel QP's send ring: a send WQE opcode userspace
 * cannot post (the requester refuses it on user QPs). Its operands sit in
 * the WQE's wr union as struct sroce_reg_mr_wr.
 */
#define SROCE_WR_REG_MR		IB_WR_REG_MR

struct sroce_reg_mr_wr {
	u32 key;			/* the MR's lkey == rkey from now on */
	u32 access;			/* IB_ACCESS_* */
};

/* Page table entries: a struct page pointer and these low bits. */
#define SROCE_ODP_VALID		0x1UL
#define SROCE_ODP_WRITE		0x2UL
#define SROCE_ODP_BAD		0x4UL	/* alone: the last fault failed */
#define SROCE_ODP_FLAGS		0x7UL

/*
 * An ODP MR's page table (see sroce_odp.c); an implicit MR's root has
 * children instead, one page table per 2 MiB. A dma-buf MR has one too,
 * filled from the exporter's mapping (sroce_dmabuf.c): it has no umem.
 */
struct sroce_odp {
	struct sroce_dev *sdev;
	struct ib_umem_odp *umem;
	u64 start;			/* user address of map[0]'s page */
	size_t npages;
	unsigned long *map;		/* page | SROCE_ODP_* bits, or 0 */
	spinlock_t lock;		/* map and the data path's copies (irq) */
	atomic_t pending;		/* fault requests in flight */
	bool child;			/* of an implicit MR: found under RCU */
	bool implicit;			/* the root of an implicit MR: */
	struct xarray children;		/* va >> 21 -> struct sroce_odp */
	struct mutex children_lock;	/* creation of children */
	u64 bad_start, bad_end;		/* nothing mapped (one-shot, lock) */
	struct dma_buf_attachment *attach;	/* a dma-buf MR's, or NULL */
	struct sg_table *sgt;		/* its mapping or NULL (resv lock) */
	bool pinned;			/* dma_buf_pin()ned at registration */
};

struct sroce_mr {
	struct ib_mr ibmr;
	enum sroce_mr_type type;
	int access;			/* IB_ACCESS_* */
	u64 start;			/* user address of byte 0 (USER) */
	u64 iova;			/* address the MR is named by */
	u64 length;
	struct ib_umem *umem;
	struct sroce_odp *odp;		/* USER, ON_DEMAND: no pages pinned */
	struct page **pages;		/* USER: npages pinned pages */
	size_t npages;
	unsigned int offset;		/* of byte 0 in pages[0] */
	u64 *page_list;			/* FAST: mapped page addresses */
	u32 max_pages;
	u32 nmapped;
	/*
	 * The key the data path accepts and whether the MR may be used at
	 * all. Fixed for USER and DMA MRs; a FAST MR starts invalid, and
	 * REG_MR (new key, valid) and local or remote invalidation (invalid)
	 * change them, so ib_update_fast_reg_key() on ibmr takes effect when
	 * the REG_MR that carries the new key executes.
	 */
	u32 key;
	bool valid;
	/*
	 * Memory windows, under sdev->mw_lock (see sroce_mw.c). A WINDOW
	 * names [iova, iova + length) of @parent, which it holds a reference
	 * on while bound; an MR counts the windows bound to it and cannot be
	 * deregistered while any are.
	 */
	struct sroce_mr *parent;	/* WINDOW: the MR it is bound to */
	u64 bound_qp;			/* WINDOW type 2: serial of its QP */
	u8 mw_type;			/* WINDOW: IB_MW_TYPE_1 or _2 */
	u32 nwindows;			/* USER/FAST: windows bound to it */
	bool dying;			/* USER/FAST: being deregistered */
	refcount_t ref;			/* data path users + 1 */
	struct completion released;
	struct rcu_head rcu;
};

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

/* A memory window: ib_core's object and the key object it binds. */
struct sroce_mw {
	struct ib_mw ibmw;
	struct sroce_mr *win;		/* type SROCE_MR_WINDOW */
};

static inline struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

struct sroce_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* see sroce_srq.c */
	spinlock_t post_lock;
	struct sroce_queue rq;		/* receive WQEs: the user produces */
	u32 srqn;
	u32 max_sge;
	u32 limit;			/* armed limit, 0 = disarmed */
	bool is_user;			/* userspace produces into rq */
	/*
	 * XRC SRQs: the domain, the CQ its receives complete on, and what
	 * lets the receive path hold one it found by number (srq_xa, under
	 * RCU): ib_core frees the SRQ as soon as destroy_srq returns.
	 */
	struct ib_xrcd *xrcd;
	struct sroce_cq *cq;
	refcount_t ref;			/* packets holding it + 1 */
	struct completion released;
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

/*
 * Send side, per SQ slot, kernel-private: what the requester decided
 * about the WQE it copied from the slot (sroce_req.c, sroce_comp.c).
 */
struct sroce_send_meta {
	u32 first_psn;
	u32 last_psn;			/* READ: of the last response */
	u32 length;			/* payload bytes */
	u32 resp_off;			/* READ: response bytes placed */
	u8 status;			/* IB_WC_*: failed before the wire */
	u8 done;			/* completes when it reaches the head */
	u8 rd_atomic;			/* READ or atomic */
	u8 await_replay;		/* READ re-requested: ignore gaps */
};

/* A doorbell this soon after the requester went idle starts a stream. */
#define SROCE_REQ_BURST_NS	(20 * NSEC_PER_USEC)
/*
 * RC payloads from this size up go out as the MR's own pages (skb frags),
 * not copies: below it a copy costs less than the page references and the
 * extra fragment for pad and ICRC.
 */
#define SROCE_LEND_MIN_BYTES	512
extern bool sroce_zero_copy_tx;		/* module parameter zero_copy_tx */

/* Requester state: owned by the requester task, no lock. */
struct sroce_req {
	u32 fetched;			/* WQEs copied and checked */
	u32 index;			/* next WQE to transmit */
	u32 offset;			/* bytes of it already sent */
	u32 psn;			/* next PSN */
	u32 sent;			/* WQEs published (= comp.sent) */
	u32 resend_until;		/* PSNs before this are resends */
	u32 sent_psn;			/* one past the highest PSN sent */
	u32 noack;			/* packets since the last AckReq */
	int direct_left;		/* doorbells may send till idle */
	u32 ssn;			/* of the last message started (RC) */
	u32 lsn;			/* comp's credit limit, at sync */
	bool credits_unlimited;		/* ... and whether there is one */
	bool stopped;			/* an error WQE was reached */
	bool odp_wait;			/* stopped for an ODP fault of its own */
	bool probing;			/* a timeout's probe: one request */
	u32 probe_psn;			/* ... the one at this PSN */
	u32 undo_index;			/* where the probe's rewind came */
	u32 undo_offset;		/* from: resumed when the answer */
	u32 undo_psn;			/* shows the timeout was spurious */
	bool streaming;			/* doorbells come back to back */
	u64 idle_ns;			/* when it last asked for a kick */
	u64 linger_ns;			/* when it found the SQ empty */
	/* Doorbells' (any thread, unlocked: a hint): resp.requests then. */
	u32 doorbell_heard;
};

/*
 * After a retransmission timeout the requester resends one request, the
 * oldest unacknowledged, with AckReq, and waits for its answer rather
 * than resending the whole window: a peer that is slow, not deaf, would
 * otherwise find a window of duplicates queued in front of each new
 * request, and every further timeout adds another (go-back-N collapse).
 */
enum sroce_probe_state {
	SROCE_PROBE_NONE,
	SROCE_PROBE_WANTED,		/* the timer rewound: probe */
	SROCE_PROBE_ANSWERED,		/* progress since: resume */
};

/*
 * Why the completer asks the requester to go back (comp.rewind_why, the
 * tracepoint sroce_req_rewind shows it).
 */
enum sroce_rewind_why {
	SROCE_REWIND_TIMEOUT,		/* the retransmission timer */
	SROCE_REWIND_SEQ_NAK,		/* the responder saw a gap */
	SROCE_REWIND_RNR_NAK,		/* no receive WQE (or page) there yet */
	SROCE_REWIND_LOST_RESPONSE,	/* an ACK past a READ/atomic's answer */
	SROCE_REWIND_READ_GAP,		/* a READ response missing */
	SROCE_REWIND_ODP,		/* a response's pages were not there */
	SROCE_REWIND_PROBE_PAST,	/* acknowledged past a timeout's probe */
	SROCE_REWIND_RESUME,		/* forward: the timeout was spurious */
};

/* Completer state shared with the requester (under qp->sq_lock). */
struct sroce_comp {
	u32 sent;			/* WQEs started: [cons, sent) */
	u32 max_psn;			/* one past the last PSN handed out */
	u32 una;			/* oldest unacknowledged PSN */
	u32 rd_atomic;			/* READs/atomics in flight */
	u32 lsn;			/* credit limit: last SSN with a WQE */
	bool credits_unlimited;		/* the responder does not count */
	u8 retry_left;
	u8 rnr_left;
	bool rewind;			/* requester goes back to: */
	u8 rewind_why;			/* SROCE_REWIND_*: the last reason */
	u8 probe;			/* SROCE_PROBE_*: after a timeout */
	bool error;			/* an error completion was posted */
	u32 rewind_index;
	u32 rewind_psn;
	u64 rnr_until;			/* ktime ns: RNR NAK back-off, 0 = none */
};

/* A READ or atomic the responder executed: replayed for duplicates. */
struct sroce_resp_res {
	u8 type;			/* 0 (free), SROCE_RTX_READ, _ATOMIC */
	u8 opcode;			/* the request's: duplicates match it */
	u32 first_psn;
	u32 last_psn;
	u64 va;
	u32 rkey;
	u32 length;
	u64 orig;			/* atomic: the value returned */
	u32 xrc_srqn;			/* XRC: whose PD the READ is under */
};

/* What the responder's transmit task sends, in order. */
struct sroce_resp_tx {
	u8 type;			/* SROCE_RTX_* */
	u8 syndrome;			/* ACK/NAK */
	u16 res;			/* READ/atomic: resource index */
	u32 psn;			/* ACK/NAK: its PSN; READ: next */
	u32 msn;
	u32 off;			/* READ: bytes already sent */
};

enum sroce_rtx_type {
	SROCE_RTX_ACK = 1,
	SROCE_RTX_READ,
	SROCE_RTX_ATOMIC,
};

enum sroce_resp_msg {
	SROCE_RESP_IDLE,		/* between messages */
	SROCE_RESP_SEND,		/* a multi-packet SEND is arriving */
	SROCE_RESP_WRITE,		/* a multi-packet WRITE is arriving */
	SROCE_RESP_DROP,		/* UC: rest of a broken message */
	SROCE_RESP_FAILED,		/* a request failed: take no more */
};

/* Responder state (under qp->resp_lock). */
struct sroce_resp {
	u32 requests;			/* request packets taken (a hint) */
	u32 psn;			/* expected PSN */
	u32 msn;
	enum sroce_resp_msg msg;
	u8 msg_class;			/* SROCE_M_SEND / _WRITE in progress */
	bool nak_sent;			/* sequence NAK sent for psn */
	/* the receive WQE a SEND fills */
	bool have_rwqe;
	u64 wr_id;
	u32 num_sge;
	struct sroce_sge *sge;		/* max_recv_sge (or the SRQ's) */
	u32 offset;			/* bytes received */
	/* the WRITE being placed */
	u64 va;
	u32 rkey;
	u32 resid;
	u32 write_len;
	/* READ/atomic resources and the transmit queue */
	struct sroce_resp_res *res;
	u32 nres;
	u32 res_next;
	struct sroce_resp_tx *txq;
	u32 txq_size;
	u32 tx_head;			/* next to send */
	u32 tx_tail;			/* next free */
	/* UD datagrams waiting for an ODP page, in arrival order */
	struct list_head odp_pending;
	u32 odp_npending;
	/* RC requests that arrived past a missing one, in PSN order */
	struct list_head held;
	u32 nheld;
	struct hrtimer held_timer;	/* when the gap counts as a loss */
	/*
	 * XRC target: the SRQ the packet being handled names (held while
	 * it is handled, else NULL), and the one of the message under way
	 * or of the receive WQE loaded.
	 */
	struct sroce_srq *xrc_srq;
	u32 xrc_srqn;
};

/* A UD QP's notification point: the last CNP to each of its senders. */
#define SROCE_CC_UD_PEERS	8

struct sroce_cc_ud_peer {
	u64 key;			/* source address hash << 24 | QPN */
	u64 cnp_ns;
};

/*
 * A QP's congestion control state (sroce_cc.c): DCQCN's rates and alpha,
 * the pacer's bucket, the notification point's last CNP. Everything
 * after link_mbps starts over at RESET.
 */
struct sroce_cc_qp {
	spinlock_t lock;
	struct hrtimer inc_timer;	/* DCQCN's rate-increase timer */
	struct hrtimer pace_timer;	/* runs the requester when it may */
	u32 link_mbps;			/* the netdev's speed at RTR */
	bool limited;			/* paced: rc_kbps below max_kbps */
	bool increased;			/* rate rose since the last cut */
	bool cnp_in_period;		/* alpha's current period had a CNP */
	u32 rc_kbps;			/* current rate */
	u32 rt_kbps;			/* target rate */
	u32 max_kbps;
	u32 alpha;			/* 1024 = 1 */
	u32 t_count;			/* increase events since the cut */
	u32 bc_count;
	u32 bc_bytes;			/* bytes towards the next BC event */
	u64 alpha_ns;
	u64 reduce_ns;			/* last cut */
	s64 tokens;			/* bytes the pacer may send */
	u64 tokens_ns;
	u64 tx_bytes;			/* sent by the requester */
	u64 resp_tx_bytes;		/* READ responses sent */
	u64 first_ns;			/* the first packet's time */
	u64 sample_bytes[2];		/* the last two stamps */
	u64 sample_ns[2];
	u64 cnp_ns;			/* NP: last CNP sent (cmpxchg) */
	u32 window;			/* PSNs in flight while limited, 0: any */
	/* NP of a UD QP, by sender (a hash slot each; under lock) */
	struct sroce_cc_ud_peer ud_peers[SROCE_CC_UD_PEERS];
};

struct sroce_qp {
	struct ib_qp ibqp;
	u64 serial;			/* never reused, unlike the QPN */
	spinlock_t state_lock;		/* see sroce_qp.c for the locks */
	spinlock_t sq_lock;
	spinlock_t rq_lock;
	spinlock_t post_lock;
	spinlock_t resp_lock;
	enum ib_qp_state state;
	struct sroce_qp_attr attr;
	struct sroce_queue sq;		/* send WQEs: the user produces */
	struct sroce_queue rq;		/* receive WQEs */
	u8 *sq_copy;			/* private WQE copies, SQ geometry */
	struct sroce_send_meta *sq_meta;
	struct sroce_cq *scq;
	struct sroce_cq *rcq;
	struct sroce_srq *srq;		/* receives come from here if set */
	struct ib_xrcd *xrcd;		/* XRC target: its domain */
	u32 qpn;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline;
	u32 mtu;			/* path MTU in bytes */
	u16 src_port;			/* UDP source port of the flow */
	bool sig_all;
	bool is_user;
	bool sq_flushed;		/* under sq_lock */
	bool rq_flushed;		/* under rq_lock */
	bool mcast_used;		/* ever attached to a group */
	/*
	 * The peer seals FLUSH as rdma_rxe does (sroce_net.c): learned from
	 * its FLUSHes, or tried after a FLUSH timed out. Written by the
	 * responder and the requester, READ_ONCE/WRITE_ONCE: a hint.
	 */
	bool flush_rxe_icrc;
	u32 mcast_attached;		/* groups now (under mcast_lock) */

	struct sroce_task req_task;
	struct sroce_task resp_task;
	struct sroce_req req;
	/* Its share of sdev->tx_inflight (sroce_req_count_inflight()). */
	atomic_t tx_counted;
	struct sroce_comp comp;
	struct sroce_resp resp;
	struct timer_list retrans_timer;
	struct hrtimer rnr_timer;	/* the RNR back-off is sub-jiffy */
	struct dst_cache dst_cache;
	struct sroce_cc_qp cc;

	struct sroce_qp_handle *handle;	/* what qp_xa maps the QPN to */
	/*
	 * The counters of the rdma_counter the QP is bound to ("rdma
	 * statistic qp bind"), or NULL: see sroce_qp_count().
	 */
	struct sroce_counters __percpu *counters;
};

/*
 * The receive path finds a QP by number through its handle, not the QP
 * itself: ib_core frees the QP as soon as destroy_qp (or a failed
 * create_qp) returns, with no grace period, while a lookup that loaded
 * the pointer just before may still be about to try for a reference. The
 * handle holds the reference count and outlives the QP by a grace period.
 */
struct sroce_qp_handle {
	struct sroce_qp *qp;
	refcount_t ref;			/* lookups from the wire + 1 */
	struct completion released;
	struct rcu_head rcu;
};

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

/* A requester that is acknowledged: RC, and XRC's initiator. */
static inline bool sroce_qp_reliable_req(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI;
}

/* A responder that acknowledges: RC, and XRC's target. */
static inline bool sroce_qp_reliable_resp(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/* Connected to one peer QP by a path (RC, UC, both XRC halves). */
static inline bool sroce_qp_connected(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type != IB_QPT_UD && qp->ibqp.qp_type != IB_QPT_GSI;
}

/* A receive ring of its own: not with an SRQ, not an XRC QP. */
static inline bool sroce_qp_has_rq(const struct sroce_qp *qp)
{
	return !qp->srq && qp->ibqp.qp_type != IB_QPT_XRC_INI &&
	       qp->ibqp.qp_type != IB_QPT_XRC_TGT;
}

/*
 * The PD the responder checks keys against: an XRC target's is that of
 * the SRQ the request names (IBTA annex A14), held in resp.xrc_srq while
 * the request is handled. Under resp_lock.
 */
static inline struct ib_pd *sroce_resp_pd(const struct sroce_qp *qp)
{
	return qp->resp.xrc_srq ? qp->resp.xrc_srq->ibsrq.pd : qp->ibqp.pd;
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

/*
 * Count an event of @qp: in the rdma_counter the QP is bound to, else in
 * the device's counters. ib_core adds bound counters (and those released)
 * to the device's for the port's totals, so each event goes to one only.
 * Unbinding waits for a grace period (sroce_dev.c) before the counter can
 * be read for the last time and freed.
 */
static inline void sroce_qp_count(struct sroce_qp *qp, enum sroce_counter c,
				  u64 n)
{
	struct sroce_counters __percpu *pc;

	rcu_read_lock();
	pc = READ_ONCE(qp->counters);
	if (!pc)
		pc = to_sdev(qp->ibqp.device)->counters;
	this_cpu_add(pc->val[c], n);
	rcu_read_unlock();
}

/* sroce_main.c */
struct sroce_dev *sroce_dev_get_by_netdev(struct net_device *ndev);
int sroce_dev_list_add(struct sroce_dev *sdev);
void sroce_dev_list_del(struct sroce_dev *sdev);

/*
 * One driver detail of a resource ("rdma resource show qp|cq|mr -dd"):
 * see sroce_res_put().
 */
enum sroce_res_kind {
	SROCE_RES_U32,
	SROCE_RES_HEX32,
	SROCE_RES_U64,
	SROCE_RES_HEX64,
	SROCE_RES_STR,
};

struct sroce_res_field {
	const char *name;
	enum sroce_res_kind kind;
	u64 val;
	const char *str;		/* SROCE_RES_STR */
};

#define SROCE_RES(n, k, v)	{ .name = (n), .kind = SROCE_RES_##k, .val = (v) }
#define SROCE_RES_S(n, s)	{ .name = (n), .kind = SROCE_RES_STR, .str = (s) }

/* sroce_dev.c */
int sroce_dev_create(const char *ibdev_name, struct net_device *ndev);
int sroce_res_put(struct sk_buff *msg, const struct sroce_res_field *f,
		  unsigned int n);
void sroce_dev_port_update(struct sroce_dev *sdev);
void sroce_dev_mtu_update(struct sroce_dev *sdev);
enum ib_mtu sroce_mtu_from_netdev(unsigned int ndev_mtu);

/* sroce_pd.c */
int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* sroce_ah.c */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);

/* sroce_mw.c */
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);
u8 sroce_mw_bind(struct sroce_qp *qp, const struct sroce_send_wqe *wqe);
int sroce_key_invalidate(struct sroce_qp *qp, u32 key, bool remote);
struct sroce_mr *sroce_mr_get_remote_whole(struct sroce_qp *qp, u32 rkey,
					   int access);
struct sroce_mr *sroce_mr_get_remote(struct sroce_qp *qp, u32 rkey, u64 iova,
				     u64 len, int access);
bool sroce_mr_unhook(struct sroce_dev *sdev, struct sroce_mr *mr);

/* sroce_mr.c */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
/* sroce_reg_user_mr(): in sroce_compat.h */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int sroce_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key);
void sroce_mr_put(struct sroce_mr *mr);
u8 sroce_mr_reg_fast(struct sroce_dev *sdev, struct ib_pd *pd,
		     const struct sroce_reg_mr_wr *reg);
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 key);
struct sroce_mr *sroce_mr_new(struct ib_pd *ibpd, enum sroce_mr_type type,
			      int access);
void sroce_mr_release(struct sroce_dev *sdev, struct sroce_mr *mr);
bool sroce_mr_covers(const struct sroce_mr *mr, u64 addr, u64 len);
bool sroce_mr_allows(const struct sroce_mr *mr, const struct ib_pd *pd,
		     u64 iova, u64 len, int access);
int sroce_mr_check_access(struct ib_device *ibdev, int access);
struct sroce_mr *sroce_mr_get_checked(struct sroce_dev *sdev,
				      struct ib_pd *pd, u32 key, u64 iova,
				      u64 len, int access);
int sroce_mr_copy(const struct sroce_mr *mr, u64 iova, void *buf, u32 len,
		  bool to_mr);
int sroce_mr_lend(const struct sroce_mr *mr, u64 iova, struct sk_buff *skb,
		  u32 len);
int sroce_mr_copy_skb(const struct sroce_mr *mr, u64 iova,
		      const struct sk_buff *skb, u32 off, u32 len);
int sroce_mr_atomic_write(const struct sroce_mr *mr, u64 iova, u64 value);
int sroce_mr_atomic(const struct sroce_mr *mr, u64 iova, bool cmp_swap,
		    u64 compare, u64 swap_add, u64 *orig);

/* sroce_odp.c */
int sroce_odp_init(struct sroce_mr *mr, struct ib_device *ibdev, u64 start,
		   u64 length, int access);
void sroce_odp_release(struct sroce_mr *mr);
unsigned long sroce_odp_present(struct sroce_odp *odp);
int sroce_odp_fault(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		    bool fault);
/* What of the QP that waited runs when a fault is done. */
enum sroce_odp_kick {
	SROCE_ODP_KICK_REQ,		/* its requester */
	SROCE_ODP_KICK_RESP,		/* its deferred UD receives */
};

bool sroce_odp_fault_async(struct sroce_mr *mr, u64 iova, u64 len,
			   bool write, struct sroce_qp *qp,
			   enum sroce_odp_kick kick);
/* A page of an ODP MR mapped by sroce_odp_map(): its table is locked. */
struct sroce_odp_held {
	struct sroce_odp *odp;
	unsigned long flags;
};

void *sroce_odp_map(const struct sroce_mr *mr, u64 iova, bool write,
		    u32 *room, int *err, struct sroce_odp_held *held);
void sroce_odp_unmap(const struct sroce_odp_held *held);
int sroce_odp_ensure(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		     struct sroce_qp *qp, enum sroce_odp_kick kick);
int sroce_odp_refault(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		      struct sroce_qp *qp, enum sroce_odp_kick kick);
int sroce_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
int sroce_odp_wq_init(void);
void sroce_odp_wq_exit(void);

/* sroce_dmabuf.c */
int sroce_dmabuf_init_mr(struct sroce_mr *mr, struct sroce_dev *sdev,
			 u64 offset, u64 length, int fd);
int sroce_dmabuf_fault(struct sroce_odp *odp);
void sroce_dmabuf_release(struct sroce_odp *odp);
int sroce_dmabuf_init(void);
void sroce_dmabuf_exit(void);

/* sroce_mcast.c */
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *ibgid, u16 lid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *ibgid, u16 lid);
void sroce_mcast_qp_destroy(struct sroce_qp *qp);
int sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		    struct sroce_pkt *pkt);
void sroce_mcast_init(struct sroce_dev *sdev);
void sroce_mcast_cleanup(struct sroce_dev *sdev);

/* sroce_cq.c */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
/* sroce_resize_cq(): in sroce_compat.h */
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited);
int sroce_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);

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
int sroce_srq_take(struct sroce_srq *srq, u64 *wr_id, struct sroce_sge *sge,
		   u32 *num_sge);
void sroce_srq_limit_event(struct sroce_srq *srq);
struct sroce_srq *sroce_srq_get_xrc(struct sroce_dev *sdev, u32 srqn);
void sroce_srq_put(struct sroce_srq *srq);

/* sroce_qp.c */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void sroce_qp_error(struct sroce_qp *qp, bool fatal);
void sroce_qp_drain_ud_senders(struct sroce_dev *sdev, struct ib_pd *pd);
struct ib_qp *sroce_qp_lookup_ib(struct sroce_dev *sdev, u32 qpn);
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
bool sroce_qp_tryget(struct sroce_qp *qp);
void sroce_qp_put(struct sroce_qp *qp);
enum ib_qp_state sroce_qp_state(struct sroce_qp *qp);
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type);
void sroce_qp_retire_send(struct sroce_qp *qp, u8 status);
u8 sroce_wc_opcode(u8 wr_opcode);

/* sroce_req.c */
void sroce_req_init(struct sroce_qp *qp);
void sroce_req_start(struct sroce_qp *qp);
bool sroce_req_pass(struct sroce_task *task);
bool sroce_req_drained(struct sroce_qp *qp);
void sroce_req_uncount(struct sroce_qp *qp);

/* sroce_comp.c */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    struct sroce_pkt *pkt);
void sroce_comp_retrans_timer(struct timer_list *t);
enum hrtimer_restart sroce_comp_rnr_timer(struct hrtimer *t);
bool sroce_comp_retire(struct sroce_qp *qp);
void sroce_comp_arm_timer(struct sroce_qp *qp);

/* sroce_resp.c */
int sroce_resp_init(struct sroce_qp *qp, u32 max_sge, gfp_t gfp);
void sroce_resp_free(struct sroce_qp *qp);
int sroce_resp_set_rd_atomic(struct sroce_qp *qp, u32 n);
void sroce_resp_reset(struct sroce_qp *qp);
void sroce_resp_odp_redeliver(struct sroce_qp *qp);
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    struct sroce_pkt *pkt);
bool sroce_resp_tx_pass(struct sroce_task *task);
bool sroce_resp_msg_in_order(enum sroce_resp_msg msg, u32 mask);

/* sroce_queue.c */
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *rentry);

/* sroce_icrc.c */
enum sroce_crc_engine {
	SROCE_CRC_AUTO,		/* module parameter only: time both */
	SROCE_CRC_LIB,		/* crc32_le() */
	SROCE_CRC_SHASH,	/* the crypto API's "crc32" */
};

void sroce_icrc_init(void);
int sroce_crc_engine_init(void);
void sroce_crc_engine_exit(void);
int sroce_crc_set_engine(enum sroce_crc_engine engine);
enum sroce_crc_engine sroce_crc_engine(void);
bool sroce_crc_have_shash(void);
u32 sroce_crc32_with(enum sroce_crc_engine engine, u32 crc, const void *p,
		     size_t len);
u32 sroce_icrc(struct sk_buff *skb, const void *l3,
	       enum rdma_network_type net, const u8 *bth,
	       unsigned int hdr_len, unsigned int payload_off,
	       unsigned int payload_len);

/* sroce_cc.c */
extern const struct attribute_group *sroce_cc_port_groups[];
void sroce_cc_dev_init(struct sroce_dev *sdev);
u8 sroce_cc_tos(const struct sroce_dev *sdev, u8 tclass);
void sroce_cc_rcv(struct sroce_qp *qp, const struct sk_buff *skb,
		  const struct sroce_pkt *pkt);
void sroce_cc_cnp_rcv(struct sroce_qp *qp);
bool sroce_cc_may_send(struct sroce_qp *qp);
bool sroce_cc_sent(struct sroce_qp *qp, u32 hdr_len, u32 paylen);
void sroce_cc_resp_sent(struct sroce_qp *qp, u32 hdr_len, u32 paylen);

/* PSNs a rate-limited QP may have unacknowledged; 0: no bound of its own. */
static inline u32 sroce_cc_window(const struct sroce_qp *qp)
{
	return READ_ONCE(qp->cc.window);
}

struct sroce_cc_res {
	u32 rate, target, alpha, window;
};

void sroce_cc_res(struct sroce_qp *qp, struct sroce_cc_res *r);
void sroce_cc_qp_init(struct sroce_qp *qp);
void sroce_cc_qp_start(struct sroce_qp *qp);
void sroce_cc_qp_stop(struct sroce_qp *qp);

/* sroce_net.c */
struct sk_buff *sroce_skb_alloc(struct sroce_dev *sdev, unsigned int len);
int sroce_skb_put_tail(struct sk_buff *skb, unsigned int pad);
/*
 * Packets of one sender (a QP's requester or responder pass) on their way
 * out together: see sroce_net.c. Zeroed before its first use.
 */
struct sroce_tx_burst {
	struct sk_buff *head;		/* the first packet, routed */
	struct sk_buff *last;		/* the last one chained behind it */
	struct sroce_dev *sdev;
	unsigned int npkts;
	unsigned int bytes;		/* from the BTHs on, for tx_bytes */
	unsigned int seg_len;		/* UDP payload of the head */
	bool ipv6;
};

/* sroce_net_xmit()'s flags */
#define SROCE_XMIT_RXE_FLUSH_ICRC	BIT(0)	/* a FLUSH sealed as rxe does */

int sroce_net_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
		   struct dst_cache *cache, struct sk_buff *skb,
		   unsigned int hdr_len, u16 sport, unsigned int flags,
		   struct sroce_tx_burst *b);
void sroce_net_flush(struct sroce_tx_burst *b);
int sroce_net_init(void);
void sroce_net_exit(void);
int sroce_net_attach(struct sroce_dev *sdev);
void sroce_net_detach(struct sroce_dev *sdev);

#endif /* SROCE_H */
