// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce: RoCE v2 congestion control — ECN marking, the notification point
 * (a CE-marked packet is answered with a CNP) and the reaction point
 * (DCQCN: a CNP cuts the QP's rate, timers and a byte counter raise it
 * again), and the pacer that holds the requester to that rate.
 *
 * DCQCN (Zhu et al., SIGCOMM 2015), as RoCE NICs run it, with their
 * parameter names. Per QP: the current rate Rc, the target rate Rt and
 * the congestion estimate alpha (1024 = 1).
 *  - A CNP, at most once per rp_rate_reduce_monitor_period: Rt := Rc (every
 *    time with rp_clamp_tgt_rate, else only if the rate rose since the
 *    last cut), Rc := Rc * (1 - alpha / 2) (a cut of at most
 *    rp_min_dec_fac percent, never below rp_min_rate), the increase
 *    counters start over. Every CNP counts for alpha.
 *  - alpha, once per rp_dce_tcp_rtt: alpha := alpha * g + (1 - g) if a CNP
 *    came in that period, else alpha * g (g = rp_dce_tcp_g / 1024). It is
 *    brought up to date lazily, when it is used, not by a timer.
 *  - Increase events, every rp_time_reset (a timer) and every
 *    rp_byte_reset bytes sent (a counter): with T and BC the events of
 *    each kind since the last cut and F = rp_threshold, fast recovery
 *    (max(T, BC) < F: Rc := (Rt + Rc) / 2), additive increase (Rt +=
 *    rp_ai_rate, then the same) or hyper increase (min(T, BC) > F: Rt +=
 *    i * rp_hai_rate, i = min(T, BC) - F). A QP that sends less than
 *    half its target gets fast recovery only: its target is held; after
 *    512 timer periods without a cut, it is unlimited again.
 *  - When Rc is back at the maximum (rp_max_rate, or the netdev's link
 *    speed), the QP is unlimited again: the pacer is out of the path.
 *
 * Rc is what the QP sends. Hardware's QPs send at their rate, line rate
 * while unlimited; sroce's send what the CPU and their window make of it,
 * often far below a veth's or a NIC's nominal speed and below the rate
 * they are allowed. So a cut starts from the rate the QP was measured to
 * send over its last 64 KiB and half a millisecond or more, when that is
 * lower than Rc (the first CNP of an unlimited QP: unless
 * rp_rate_to_set_on_first_cnp is set). A cut of a rate the QP does not
 * reach would change nothing.
 *
 * The pacer is a token bucket in bytes on the wire (headers included),
 * at most SROCE_CC_BURST_NS of the rate deep; the requester asks it
 * before each packet, the responder before each READ response (a READ's
 * data is the responder's to send), and, when it is empty, the task
 * stops its pass and arms pace_timer, which runs both again — no busy
 * wait, and the SQ's NEED_KICK stays clear, so the application posts
 * without system calls as while streaming. An unlimited QP pays one
 * READ_ONCE and an add.
 *
 * The notification point: a CE-marked packet to a connected QP (RC, UC,
 * XRC) is answered with a CNP to its peer QP, at most one per QP per
 * np_min_time_between_cnps, with DSCP np_cnp_dscp and priority
 * np_cnp_prio. A UD QP answers each sender (the datagram's source
 * address and DETH's source QP, when its Q_Key is the QP's) at most once
 * per np_min_time_between_cnps, from a small table of senders by hash;
 * a UD QP that gets CNPs is paced like any other (RoCE NICs run DCQCN
 * on UD QPs too), one rate for all its destinations. Not QP1.
 *
 * Parameters are per device (port 1's sysfs group "cc"), read without
 * locks on the data path: a change applies from the next packet or event.
 *
 * Locking: qp->cc.lock (spinlock, irqsave) guards the rate state and the
 * bucket; the unlimited fast path reads cc.limited without it. Only the
 * requester's task adds to tx_bytes and only the responder's transmit
 * task to resp_tx_bytes (each one at a time; read with READ_ONCE); the
 * rate stamps are taken under cc.lock. A connected QP's CNP stamp is
 * claimed with cmpxchg, a UD QP's senders' stamps under cc.lock.
 * Nothing else is held while cc.lock is: it is innermost.
 */

#include <linux/hash.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/rtnetlink.h>
#include <linux/ethtool.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <rdma/ib_sysfs.h>

#include "sroce.h"
#include "sroce_pkt.h"
#include "sroce_trace.h"

/* How deep the bucket is, in time at the current rate. */
#define SROCE_CC_BURST_NS	(2 * NSEC_PER_MSEC)
/* ... and never less than this many full packets. */
#define SROCE_CC_BURST_PKTS	4
/*
 * What a QP sends is measured between stamps at least this many bytes
 * and this long apart (the last two, so over one to two such spans).
 */
#define SROCE_CC_SAMPLE_BYTES	(64U << 10)
#define SROCE_CC_SAMPLE_NS	(500 * NSEC_PER_USEC)
/* A target more than this many times what the QP sends is not raised. */
#define SROCE_CC_UNUSED_DIV	2
/* ... and after this many increase timer periods with no cut, unlimited. */
#define SROCE_CC_QUIET_EVENTS	512
/* The fewest packets a window lets a limited QP have in flight. */
#define SROCE_CC_WINDOW_PKTS	4
/* Bytes on the wire besides the BTH onward: Ethernet, IP, UDP. */
#define SROCE_CC_WIRE_V4	(ETH_HLEN + 20 + 8)
#define SROCE_CC_WIRE_V6	(ETH_HLEN + 40 + 8)
#define SROCE_CC_ALPHA_ONE	1024U
/* Past this many idle alpha periods, alpha has decayed to nothing. */
#define SROCE_CC_ALPHA_MAX_STEPS 4096

#define KBPS_PER_MBPS		1000U

/* Defaults: those of RoCE NICs, where they have them (see design.rst). */
static const struct sroce_cc_params sroce_cc_defaults = {
	.enable = 1,
	.np_enable = 1,
	.rp_enable = 1,
	.ecn = INET_ECN_ECT_0,
	.np_min_time_between_cnps = 4,
	.np_cnp_dscp = 48,
	.np_cnp_prio = 6,
	.rp_max_rate = 0,
	.rp_min_rate = 1,
	.rp_ai_rate = 5,
	.rp_hai_rate = 50,
	.rp_time_reset = 300,
	.rp_byte_reset = 32767,
	.rp_threshold = 1,
	.rp_rate_reduce_monitor_period = 4,
	.rp_initial_alpha_value = 1023,
	.rp_dce_tcp_g = 1019,
	.rp_dce_tcp_rtt = 55,
	.rp_clamp_tgt_rate = 0,
	.rp_min_dec_fac = 50,
	.rp_rate_to_set_on_first_cnp = 0,
	.rp_window_us = 1000,
};

void sroce_cc_dev_init(struct sroce_dev *sdev)
{
	sdev->cc = sroce_cc_defaults;
}

#define CC_PARAM(p)	READ_ONCE(sdev->cc.p)

static bool sroce_cc_np_on(const struct sroce_dev *sdev)
{
	return CC_PARAM(enable) && CC_PARAM(np_enable);
}

static bool sroce_cc_rp_on(const struct sroce_dev *sdev)
{
	return CC_PARAM(enable) && CC_PARAM(rp_enable);
}

/**
 * sroce_cc_tos - the IP TOS byte (IPv6 traffic class) of a RoCE v2 packet
 * @sdev: the sending device
 * @tclass: the traffic class the address vector asks for
 *
 * Its DSCP bits are the application's; its ECN bits are the device's
 * choice (ECT(0) by default) while congestion control is on, else what
 * the application gave.
 */
u8 sroce_cc_tos(const struct sroce_dev *sdev, u8 tclass)
{
	if (!CC_PARAM(enable))
		return tclass;
	return (tclass & ~INET_ECN_MASK) | (CC_PARAM(ecn) & INET_ECN_MASK);
}

/* The netdev's link speed in Mb/s, 0 if it has none. May sleep. */
static u32 sroce_cc_link_mbps(struct sroce_dev *sdev)
{
	struct ethtool_link_ksettings ks = {};
	int err;

	rtnl_lock();
	err = __ethtool_get_link_ksettings(sdev->ndev, &ks);
	rtnl_unlock();
	if (err || ks.base.speed == SPEED_UNKNOWN)
		return 0;
	return ks.base.speed;
}

/* The rate an unlimited QP may reach, in kb/s. */
static u32 sroce_cc_max_kbps(const struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 mbps = CC_PARAM(rp_max_rate) ?: READ_ONCE(qp->cc.link_mbps);

	/* No speed known (a virtual device may have none): 100 Gb/s. */
	if (!mbps)
		mbps = 100000;
	return min_t(u64, (u64)mbps * KBPS_PER_MBPS, U32_MAX);
}

/* Bytes at @kbps in @ns. */
static u64 sroce_cc_bytes_in(u32 kbps, u64 ns)
{
	return div_u64(ns * kbps, 8 * USEC_PER_SEC);
}

/* Nanoseconds @bytes take at @kbps (> 0). */
static u64 sroce_cc_ns_for(u32 kbps, u64 bytes)
{
	return div_u64(bytes * 8 * USEC_PER_SEC, kbps);
}

/* The pacer's bucket depth at the current rate. */
static s64 sroce_cc_depth(const struct sroce_qp *qp)
{
	u64 pkts = SROCE_CC_BURST_PKTS * (u64)(qp->mtu + 128);

	return max(sroce_cc_bytes_in(qp->cc.rc_kbps, SROCE_CC_BURST_NS), pkts);
}

/*
 * The window of a limited QP at @kbps: what that rate sends in
 * rp_window_us, in packets of the path MTU (at least WINDOW_PKTS);
 * 0 (none of its own) while it is unlimited or the parameter is 0.
 */
static u32 sroce_cc_window_for(const struct sroce_qp *qp, u32 kbps)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 us = CC_PARAM(rp_window_us);
	u64 pkts;

	if (!us || !qp->cc.limited)
		return 0;
	pkts = div_u64(sroce_cc_bytes_in(kbps, us * NSEC_PER_USEC),
		       qp->mtu + SROCE_CC_WIRE_V6);
	return clamp_t(u64, pkts, SROCE_CC_WINDOW_PKTS, U16_MAX);
}

static void sroce_cc_set_rate(struct sroce_qp *qp, u32 rc, u32 rt)
{
	struct sroce_cc_qp *cc = &qp->cc;

	cc->rc_kbps = rc;
	cc->rt_kbps = rt;
	WRITE_ONCE(cc->window, sroce_cc_window_for(qp, rc));
	trace_sroce_cc_rate(qp, rc, rt, cc->alpha, cc->limited);
}

/*
 * Bring alpha up to @now: it decays once per rp_dce_tcp_rtt with no CNP.
 * Returns how many whole periods passed. Under cc.lock.
 */
static u64 sroce_cc_alpha_age(struct sroce_qp *qp, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 period = (u64)max(CC_PARAM(rp_dce_tcp_rtt), 1U) * NSEC_PER_USEC;
	u32 g = min(CC_PARAM(rp_dce_tcp_g), SROCE_CC_ALPHA_ONE);
	struct sroce_cc_qp *cc = &qp->cc;
	u64 n, i;

	n = div64_u64(now - cc->alpha_ns, period);
	if (!n)
		return 0;
	cc->alpha_ns += n * period;
	/* The period of the last CNP is not an idle one. */
	i = cc->cnp_in_period ? 1 : 0;
	if (n >= SROCE_CC_ALPHA_MAX_STEPS) {
		cc->alpha = 0;
	} else {
		for (; i < n && cc->alpha; i++)
			cc->alpha = cc->alpha * g / SROCE_CC_ALPHA_ONE;
	}
	cc->cnp_in_period = false;
	return n;
}

/* A CNP counts for alpha (once per period). Under cc.lock. */
static void sroce_cc_alpha_cnp(struct sroce_qp *qp, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 g = min(CC_PARAM(rp_dce_tcp_g), SROCE_CC_ALPHA_ONE);
	struct sroce_cc_qp *cc = &qp->cc;

	sroce_cc_alpha_age(qp, now);
	if (cc->cnp_in_period)
		return;
	cc->alpha = cc->alpha * g / SROCE_CC_ALPHA_ONE +
		    (SROCE_CC_ALPHA_ONE - g);
	cc->alpha = min(cc->alpha, SROCE_CC_ALPHA_ONE);
	cc->cnp_in_period = true;
}

static void sroce_cc_arm_increase(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 ns = (u64)max(CC_PARAM(rp_time_reset), 1U) * NSEC_PER_USEC;

	hrtimer_start(&qp->cc.inc_timer, ns_to_ktime(ns), HRTIMER_MODE_REL_SOFT);
}

/* Back at the maximum: the pacer steps aside. Under cc.lock. */
static void sroce_cc_unlimit(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;

	WRITE_ONCE(cc->limited, false);
	cc->t_count = 0;
	cc->bc_count = 0;
	cc->bc_bytes = 0;
	sroce_cc_set_rate(qp, cc->max_kbps, cc->max_kbps);
}

/* What the QP has sent: its requester's packets and its READ responses. */
static u64 sroce_cc_tx_total(const struct sroce_cc_qp *cc)
{
	return READ_ONCE(cc->tx_bytes) + READ_ONCE(cc->resp_tx_bytes);
}

/*
 * What the QP sent lately, in kb/s (0 if too little to tell): since the
 * older of the last two stamps, or since its first packet. Under cc.lock.
 */
static u32 sroce_cc_measured_kbps(const struct sroce_qp *qp, u64 now)
{
	const struct sroce_cc_qp *cc = &qp->cc;
	u64 tx = sroce_cc_tx_total(cc);
	u64 since = cc->sample_ns[0] ?: cc->first_ns;
	u64 bytes = tx - cc->sample_bytes[0];

	if (!since || now <= since || bytes < SROCE_CC_SAMPLE_BYTES / 4)
		return 0;
	return min_t(u64, div64_u64(bytes * 8 * USEC_PER_SEC, now - since),
		     U32_MAX);
}

/*
 * Whether the QP sends less than 1/SROCE_CC_UNUSED_DIV of its target rate.
 * Hardware's QPs send at their rate; a software QP's may send far less (its
 * window under a queue's delay, the CPU), and raising a target it does not
 * use only lets it burst far past its share later: measured here, targets of
 * 1-2.6 Gb/s on QPs sending 20-100 Mb/s through a 100 Mb/s bottleneck, and
 * the QP highest above its share took twice the others' goodput. So such a
 * target is held (as TCP holds the window of a flow it limits itself, RFC
 * 7661); the current rate still recovers towards it. Too little sent to
 * tell counts as used.
 */
static bool sroce_cc_target_unused(const struct sroce_qp *qp)
{
	u32 sent = sroce_cc_measured_kbps(qp, ktime_get_ns());

	return sent && qp->cc.rt_kbps / SROCE_CC_UNUSED_DIV > sent;
}

/* One increase event (the timer's or the byte counter's). Under cc.lock. */
static void sroce_cc_increase(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 f = CC_PARAM(rp_threshold);
	struct sroce_cc_qp *cc = &qp->cc;
	u64 rt = cc->rt_kbps;
	u32 lo = min(cc->t_count, cc->bc_count);
	u32 hi = max(cc->t_count, cc->bc_count);
	u64 rc;

	if (!cc->limited)
		return;
	/*
	 * Below F events of both kinds: fast recovery, towards Rt (and so
	 * while the QP does not use its target). A QP that does not use its
	 * target and was not cut for SROCE_CC_QUIET_EVENTS periods would
	 * never climb back to the maximum: the congestion is past, and it
	 * is unlimited again as hyper increase would have made it.
	 */
	if (sroce_cc_target_unused(qp)) {
		if (cc->t_count >= SROCE_CC_QUIET_EVENTS) {
			sroce_cc_unlimit(qp);
			return;
		}
	} else {
		if (lo > f)
			rt += (u64)(lo - f) * CC_PARAM(rp_hai_rate) *
			      KBPS_PER_MBPS;
		else if (hi >= f)
			rt += (u64)CC_PARAM(rp_ai_rate) * KBPS_PER_MBPS;
	}
	rt = min_t(u64, rt, cc->max_kbps);
	rc = (rt + cc->rc_kbps) / 2;
	cc->increased = true;
	/* Within 1 Mb/s of the maximum is the maximum. */
	if (rc + KBPS_PER_MBPS >= cc->max_kbps) {
		sroce_cc_unlimit(qp);
		return;
	}
	sroce_cc_set_rate(qp, rc, rt);
}

static enum hrtimer_restart sroce_cc_inc_timer(struct hrtimer *t)
{
	struct sroce_qp *qp = container_of(t, struct sroce_qp, cc.inc_timer);
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;
	bool again;

	spin_lock_irqsave(&cc->lock, flags);
	if (cc->limited) {
		cc->t_count++;
		sroce_cc_increase(qp);
	}
	again = cc->limited;
	spin_unlock_irqrestore(&cc->lock, flags);
	if (again)
		sroce_cc_arm_increase(qp);
	return HRTIMER_NORESTART;
}

/* The bucket has tokens again: the requester's and the READ responses' turn. */
static enum hrtimer_restart sroce_cc_pace_timer(struct hrtimer *t)
{
	struct sroce_qp *qp = container_of(t, struct sroce_qp, cc.pace_timer);

	sroce_task_run(&qp->req_task);
	if (sroce_qp_reliable_resp(qp))
		sroce_task_run(&qp->resp_task);
	return HRTIMER_NORESTART;
}

/* The first cut of an unlimited QP: from where does it start. */
static void sroce_cc_limit(struct sroce_qp *qp, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_cc_qp *cc = &qp->cc;
	u32 first = CC_PARAM(rp_rate_to_set_on_first_cnp) * KBPS_PER_MBPS;
	u32 rc;

	cc->max_kbps = sroce_cc_max_kbps(qp);
	rc = first ?: sroce_cc_measured_kbps(qp, now);
	if (!rc || rc > cc->max_kbps)
		rc = cc->max_kbps;
	WRITE_ONCE(cc->limited, true);
	sroce_cc_set_rate(qp, rc, rc);
	cc->tokens = 0;
	cc->tokens_ns = now;
	cc->increased = true;
}

/* Under cc.lock: the cut of one CNP. */
static void sroce_cc_reduce(struct sroce_qp *qp, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 max_cut = min(CC_PARAM(rp_min_dec_fac), 100U) *
		      SROCE_CC_ALPHA_ONE / 100;
	u64 min_rate = (u64)max(CC_PARAM(rp_min_rate), 1U) * KBPS_PER_MBPS;
	struct sroce_cc_qp *cc = &qp->cc;
	u32 cut = min(cc->alpha / 2, max_cut);
	u64 rc;

	if (!cc->limited)
		sroce_cc_limit(qp, now);
	/*
	 * The current rate is what the QP sends: hardware's sends at its
	 * rate, a software QP may send far less than it is allowed (the CPU,
	 * its window), and a cut of a rate it does not reach changes nothing.
	 * (Cuts from Rc alone were tried: a QP whose first cut started from
	 * a measure taken while a queue filled climbed back to a rate it
	 * never sent, unpaced, and the queue overflowed.)
	 */
	rc = sroce_cc_measured_kbps(qp, now);
	if (rc && rc < cc->rc_kbps)
		cc->rc_kbps = rc;
	if (CC_PARAM(rp_clamp_tgt_rate) || cc->increased)
		cc->rt_kbps = cc->rc_kbps;
	rc = (u64)cc->rc_kbps * (SROCE_CC_ALPHA_ONE - cut) / SROCE_CC_ALPHA_ONE;
	rc = clamp_t(u64, rc, min_t(u64, min_rate, cc->max_kbps), cc->max_kbps);
	sroce_cc_set_rate(qp, rc, cc->rt_kbps);
	cc->increased = false;
	cc->t_count = 0;
	cc->bc_count = 0;
	cc->bc_bytes = 0;
	cc->reduce_ns = now;
}

/**
 * sroce_cc_cnp_rcv - the reaction point: a CNP for @qp arrived
 * @qp: the QP it names (referenced by the caller)
 */
void sroce_cc_cnp_rcv(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 period = (u64)CC_PARAM(rp_rate_reduce_monitor_period) *
		     NSEC_PER_USEC;
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;
	bool arm = false;
	u64 now;

	if (!sroce_cc_rp_on(sdev) || qp->ibqp.qp_type == IB_QPT_GSI ||
	    qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		sroce_count(sdev, SROCE_CNT_RP_CNP_IGNORED, 1);
		return;
	}
	sroce_count(sdev, SROCE_CNT_RP_CNP_HANDLED, 1);
	now = ktime_get_ns();
	spin_lock_irqsave(&cc->lock, flags);
	if (!cc->limited) {
		cc->alpha = min(CC_PARAM(rp_initial_alpha_value),
				SROCE_CC_ALPHA_ONE);
		cc->alpha_ns = now;
		cc->cnp_in_period = false;
	}
	sroce_cc_alpha_cnp(qp, now);
	if (!cc->limited || now - cc->reduce_ns >= period) {
		sroce_cc_reduce(qp, now);
		arm = true;
	}
	spin_unlock_irqrestore(&cc->lock, flags);
	trace_sroce_cnp_rcvd(qp, arm);
	if (arm)
		sroce_cc_arm_increase(qp);
}

/*
 * Count a packet's bytes towards the measured rate, in @own (the sending
 * task's counter: it is its only writer); a new stamp when the last is
 * SAMPLE_BYTES and SAMPLE_NS behind (one clock read per 64 KiB at most,
 * while the time has not come).
 */
static void sroce_cc_count(struct sroce_qp *qp, u64 *own, u32 bytes)
{
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;
	u64 tx, now;

	WRITE_ONCE(*own, *own + bytes);
	tx = sroce_cc_tx_total(cc);
	if (likely(tx - cc->sample_bytes[1] < SROCE_CC_SAMPLE_BYTES &&
		   cc->first_ns))
		return;
	now = ktime_get_ns();
	spin_lock_irqsave(&cc->lock, flags);
	if (!cc->first_ns) {
		cc->first_ns = now;
	} else if (now - cc->sample_ns[1] >= SROCE_CC_SAMPLE_NS) {
		cc->sample_bytes[0] = cc->sample_bytes[1];
		cc->sample_ns[0] = cc->sample_ns[1];
		cc->sample_bytes[1] = tx;
		cc->sample_ns[1] = now;
	}
	spin_unlock_irqrestore(&cc->lock, flags);
}

/* Bytes a packet of @paylen (BTH onward: @hdr_len, pad, ICRC) takes. */
static u32 sroce_cc_wire_bytes(const struct sroce_qp *qp, u32 hdr_len,
			       u32 paylen)
{
	u32 l3 = qp->attr.av.network_type == RDMA_NETWORK_IPV6 ?
		 SROCE_CC_WIRE_V6 : SROCE_CC_WIRE_V4;

	return l3 + hdr_len + paylen + sroce_pad(paylen) + SROCE_ICRC_BYTES;
}

/**
 * sroce_cc_may_send - may the requester (or the responder, a READ
 *	response) send a packet now?
 * @qp: the sending QP (in its requester or responder transmit task)
 *
 * Unlimited QPs always may. A limited one may while its bucket holds
 * tokens; the packet's bytes are taken when it is sent
 * (sroce_cc_sent(), sroce_cc_resp_sent()). When it may not, pace_timer
 * runs both tasks when it may.
 *
 * Return: true to send it.
 */
bool sroce_cc_may_send(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;
	u64 now, wait = 0;
	s64 depth;

	if (likely(!READ_ONCE(cc->limited)))
		return true;
	now = ktime_get_ns();
	spin_lock_irqsave(&cc->lock, flags);
	if (cc->limited) {
		depth = sroce_cc_depth(qp);
		cc->tokens += sroce_cc_bytes_in(cc->rc_kbps,
						now - cc->tokens_ns);
		cc->tokens = min(cc->tokens, depth);
		cc->tokens_ns = now;
		if (cc->tokens <= 0)
			wait = sroce_cc_ns_for(cc->rc_kbps, 1 - cc->tokens);
	}
	spin_unlock_irqrestore(&cc->lock, flags);
	if (!wait)
		return true;
	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RP_PACED, 1);
	hrtimer_start(&cc->pace_timer, ns_to_ktime(max_t(u64, wait, 1000)),
		      HRTIMER_MODE_REL_SOFT);
	return false;
}

/* Count @bytes sent (in @own) and take them from the bucket. */
static bool sroce_cc_take(struct sroce_qp *qp, u64 *own, u32 bytes)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_cc_qp *cc = &qp->cc;
	u32 reset = CC_PARAM(rp_byte_reset);
	unsigned long flags;
	bool empty;

	sroce_cc_count(qp, own, bytes);
	if (likely(!READ_ONCE(cc->limited)))
		return false;
	spin_lock_irqsave(&cc->lock, flags);
	cc->tokens -= bytes;
	empty = cc->tokens <= 0;
	cc->bc_bytes += bytes;
	if (reset && cc->bc_bytes >= reset) {
		cc->bc_bytes = 0;
		cc->bc_count++;
		sroce_cc_increase(qp);
	}
	spin_unlock_irqrestore(&cc->lock, flags);
	return empty;
}

/**
 * sroce_cc_sent - account a packet the requester sent
 * @qp: the sending QP (in its requester task)
 * @hdr_len: transport header bytes of the packet
 * @paylen: its payload bytes
 *
 * Return: true if the bucket is empty after it (the packet should ask for
 * an acknowledgment: the next one may wait).
 */
bool sroce_cc_sent(struct sroce_qp *qp, u32 hdr_len, u32 paylen)
{
	return sroce_cc_take(qp, &qp->cc.tx_bytes,
			     sroce_cc_wire_bytes(qp, hdr_len, paylen));
}

/**
 * sroce_cc_resp_sent - account a READ response the responder sent
 * @qp: the sending QP (in its responder's transmit task)
 * @hdr_len: transport header bytes of the packet
 * @paylen: its payload bytes
 *
 * Hardware paces everything a QP sends; a READ's data goes out as the
 * responder's answers, and they take the QP's tokens as its requests do.
 */
void sroce_cc_resp_sent(struct sroce_qp *qp, u32 hdr_len, u32 paylen)
{
	sroce_cc_take(qp, &qp->cc.resp_tx_bytes,
		      sroce_cc_wire_bytes(qp, hdr_len, paylen));
}

/**
 * sroce_cc_res - a QP's rate state for its resource details
 * @qp: the QP
 * @r: its rate (Rc) and target (Rt) in kb/s, 0 while the QP is not
 *     rate-limited; DCQCN's alpha (1024 = 1) as of its last update; its
 *     window in PSNs, 0 while it has none of its own
 */
void sroce_cc_res(struct sroce_qp *qp, struct sroce_cc_res *r)
{
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;

	spin_lock_irqsave(&cc->lock, flags);
	r->rate = cc->limited ? cc->rc_kbps : 0;
	r->target = cc->limited ? cc->rt_kbps : 0;
	r->alpha = cc->alpha;
	r->window = cc->window;
	spin_unlock_irqrestore(&cc->lock, flags);
}

/* Notification point ------------------------------------------------ */

static bool sroce_cc_claim_cnp(struct sroce_qp *qp, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 gap = (u64)CC_PARAM(np_min_time_between_cnps) * NSEC_PER_USEC;
	u64 last = READ_ONCE(qp->cc.cnp_ns);

	if (last && now - last < gap)
		return false;
	return cmpxchg64(&qp->cc.cnp_ns, last, now) == last;
}

/*
 * A CNP to @av's QP @dqpn: BTH (BECN, P_Key 0xffff, PSN 0), 16 zeros.
 * @cache: the route cache of the path (a connected QP's), or NULL;
 * @sport: the flow's UDP source port.
 */
static void sroce_cc_send_cnp(struct sroce_qp *qp, struct sroce_av *av,
			      struct dst_cache *cache, u32 dqpn, u16 sport)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	const unsigned int hdr_len = SROCE_BTH_BYTES + SROCE_CNP_BYTES;
	struct sroce_pkt pkt = {
		.opcode = SROCE_OP_CNP,
		.pkey = SROCE_DEFAULT_PKEY_FULL,
		.dqpn = dqpn,
		.becn = true,
	};
	struct sk_buff *skb;

	skb = sroce_skb_alloc(sdev, hdr_len + SROCE_ICRC_BYTES);
	if (!skb) {
		sroce_count(sdev, SROCE_CNT_TX_ERRORS, 1);
		return;
	}
	memset(skb->data, 0, hdr_len + SROCE_ICRC_BYTES);
	sroce_hdr_build(skb->data, &pkt);
	skb->priority = CC_PARAM(np_cnp_prio);
	av->traffic_class = (CC_PARAM(np_cnp_dscp) & 0x3f) << 2;
	if (!sroce_net_xmit(sdev, av, cache, skb, hdr_len, sport, 0, NULL)) {
		sroce_count(sdev, SROCE_CNT_NP_CNP_SENT, 1);
		trace_sroce_cnp_sent(qp, dqpn);
	}
}

/* Was @skb (a RoCE v2 datagram, network header set) marked CE? */
static bool sroce_cc_skb_ce(const struct sk_buff *skb, u8 net_type)
{
	u8 ds;

	if (net_type == RDMA_NETWORK_IPV4)
		ds = ip_hdr(skb)->tos;
	else if (net_type == RDMA_NETWORK_IPV6)
		ds = ipv6_get_dsfield(ipv6_hdr(skb));
	else
		return false;	/* RoCE v1 has no IP header to mark */
	return INET_ECN_is_ce(ds);
}

/*
 * May a UD QP answer the sender @key now: it has had no CNP from @qp for
 * np_min_time_between_cnps? Senders share a slot by hash; one that takes
 * another's slot gets its CNP (a CNP too many, not one too few).
 */
static bool sroce_cc_claim_ud_cnp(struct sroce_qp *qp, u64 key, u64 now)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u64 gap = (u64)CC_PARAM(np_min_time_between_cnps) * NSEC_PER_USEC;
	struct sroce_cc_ud_peer *peer;
	unsigned long flags;
	bool claim;

	peer = &qp->cc.ud_peers[hash_64(key, ilog2(SROCE_CC_UD_PEERS))];
	spin_lock_irqsave(&qp->cc.lock, flags);
	claim = peer->key != key || !peer->cnp_ns || now - peer->cnp_ns >= gap;
	if (claim) {
		peer->key = key;
		peer->cnp_ns = now;
	}
	spin_unlock_irqrestore(&qp->cc.lock, flags);
	return claim;
}

/*
 * The way back to a UD datagram's sender (its source address, from our
 * address it was sent to) and the key of that sender (address and QPN).
 */
static u64 sroce_cc_ud_peer(const struct sk_buff *skb,
			    const struct sroce_pkt *pkt, struct sroce_av *av)
{
	memset(av, 0, sizeof(*av));
	av->network_type = pkt->net_type;
	if (pkt->net_type == RDMA_NETWORK_IPV4) {
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr,
				       (struct in6_addr *)av->dgid.raw);
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)av->sgid.raw);
	} else {
		memcpy(av->dgid.raw, &ipv6_hdr(skb)->saddr, sizeof(av->dgid));
		memcpy(av->sgid.raw, &ipv6_hdr(skb)->daddr, sizeof(av->sgid));
	}
	return (u64)jhash(av->dgid.raw, sizeof(av->dgid), 0) << 24 |
	       pkt->sqpn;
}

/*
 * A UD QP answers each sender of its own Q_Key (DETH's source QP, at the
 * datagram's source address) with at most one CNP a gap; never QP1.
 */
static void sroce_cc_rcv_ud(struct sroce_qp *qp, const struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	enum ib_qp_state state;
	struct sroce_av av;
	u64 key;
	u32 qkey;

	spin_lock_bh(&qp->state_lock);
	state = qp->state;
	qkey = qp->attr.qkey;
	spin_unlock_bh(&qp->state_lock);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS && state != IB_QPS_SQD)
		return;
	if (pkt->qkey != qkey)
		return;
	key = sroce_cc_ud_peer(skb, pkt, &av);
	if (!sroce_cc_claim_ud_cnp(qp, key, ktime_get_ns()))
		return;
	sroce_cc_send_cnp(qp, &av, NULL, pkt->sqpn,
			  rdma_get_udp_sport(0, qp->qpn, pkt->sqpn));
}

/**
 * sroce_cc_rcv - the notification point's look at a received packet
 * @qp: the QP it is for (referenced by the caller)
 * @skb: the packet
 * @pkt: its parsed headers
 *
 * A CE-marked packet is counted and answered with a CNP: for a connected
 * QP, to its peer, at most one per np_min_time_between_cnps; for a UD
 * QP, to the datagram's sender, at most one per sender and gap.
 */
void sroce_cc_rcv(struct sroce_qp *qp, const struct sk_buff *skb,
		  const struct sroce_pkt *pkt)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_qp_state state;
	struct sroce_av av;
	u32 dqpn;

	if (!sroce_cc_skb_ce(skb, pkt->net_type))
		return;
	sroce_count(sdev, SROCE_CNT_NP_ECN_MARKED, 1);
	if (!sroce_cc_np_on(sdev))
		return;
	if (qp->ibqp.qp_type == IB_QPT_UD)
		return sroce_cc_rcv_ud(qp, skb, pkt);
	if (!sroce_qp_connected(qp))
		return;
	if (!sroce_cc_claim_cnp(qp, ktime_get_ns()))
		return;
	spin_lock_bh(&qp->state_lock);
	state = qp->state;
	av = qp->attr.av;
	dqpn = qp->attr.dest_qpn;
	spin_unlock_bh(&qp->state_lock);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS && state != IB_QPS_SQD)
		return;
	sroce_cc_send_cnp(qp, &av, &qp->dst_cache, dqpn, qp->src_port);
}

/* QP life ------------------------------------------------------------ */

void sroce_cc_qp_init(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;

	spin_lock_init(&cc->lock);
	hrtimer_setup(&cc->inc_timer, sroce_cc_inc_timer, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_SOFT);
	hrtimer_setup(&cc->pace_timer, sroce_cc_pace_timer, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_SOFT);
}

/*
 * The move to RTR (process context): the link speed the maximum rate
 * defaults to. A QP starts unlimited.
 */
void sroce_cc_qp_start(struct sroce_qp *qp)
{
	WRITE_ONCE(qp->cc.link_mbps,
		   sroce_cc_link_mbps(to_sdev(qp->ibqp.device)));
}

/* Timers stopped, rate state as new (RESET, destroy). May sleep. */
void sroce_cc_qp_stop(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	unsigned long flags;

	hrtimer_cancel(&cc->pace_timer);
	hrtimer_cancel(&cc->inc_timer);
	spin_lock_irqsave(&cc->lock, flags);
	memset_after(cc, 0, link_mbps);
	spin_unlock_irqrestore(&cc->lock, flags);
}

/* Parameters (sysfs: /sys/class/infiniband/DEV/ports/1/cc/) --------- */

struct sroce_cc_attr {
	struct ib_port_attribute attr;
	size_t offset;			/* in struct sroce_cc_params */
	u32 max;
};

static u32 *sroce_cc_param(struct ib_device *ibdev, struct ib_port_attribute *a)
{
	struct sroce_cc_attr *ca = container_of(a, struct sroce_cc_attr, attr);

	return (u32 *)((u8 *)&to_sdev(ibdev)->cc + ca->offset);
}

static ssize_t sroce_cc_show(struct ib_device *ibdev, u32 port,
			     struct ib_port_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*sroce_cc_param(ibdev, a)));
}

static ssize_t sroce_cc_store(struct ib_device *ibdev, u32 port,
			      struct ib_port_attribute *a, const char *buf,
			      size_t count)
{
	struct sroce_cc_attr *ca = container_of(a, struct sroce_cc_attr, attr);
	u32 val;
	int err;

	err = kstrtou32(buf, 0, &val);
	if (err)
		return err;
	if (val > ca->max)
		return -ERANGE;
	WRITE_ONCE(*sroce_cc_param(ibdev, a), val);
	return count;
}

#define CC_ATTR(_name, _max)						\
	static struct sroce_cc_attr sroce_cc_attr_##_name = {		\
		.attr = __ATTR(_name, 0644, sroce_cc_show, sroce_cc_store), \
		.offset = offsetof(struct sroce_cc_params, _name),	\
		.max = (_max),						\
	}

/* Rates in Mb/s up to 400 Gb/s; times in microseconds up to 10 s. */
#define CC_MAX_MBPS	400000
#define CC_MAX_USEC	(10 * USEC_PER_SEC)

CC_ATTR(enable, 1);
CC_ATTR(np_enable, 1);
CC_ATTR(rp_enable, 1);
CC_ATTR(ecn, INET_ECN_MASK);
CC_ATTR(np_min_time_between_cnps, CC_MAX_USEC);
CC_ATTR(np_cnp_dscp, 63);
CC_ATTR(np_cnp_prio, 7);
CC_ATTR(rp_max_rate, CC_MAX_MBPS);
CC_ATTR(rp_min_rate, CC_MAX_MBPS);
CC_ATTR(rp_ai_rate, CC_MAX_MBPS);
CC_ATTR(rp_hai_rate, CC_MAX_MBPS);
CC_ATTR(rp_time_reset, CC_MAX_USEC);
CC_ATTR(rp_byte_reset, U32_MAX);
CC_ATTR(rp_threshold, 31);
CC_ATTR(rp_rate_reduce_monitor_period, CC_MAX_USEC);
CC_ATTR(rp_initial_alpha_value, SROCE_CC_ALPHA_ONE - 1);
CC_ATTR(rp_dce_tcp_g, SROCE_CC_ALPHA_ONE - 1);
CC_ATTR(rp_dce_tcp_rtt, CC_MAX_USEC);
CC_ATTR(rp_clamp_tgt_rate, 1);
CC_ATTR(rp_min_dec_fac, 100);
CC_ATTR(rp_rate_to_set_on_first_cnp, CC_MAX_MBPS);
CC_ATTR(rp_window_us, CC_MAX_USEC);

static struct attribute *sroce_cc_attrs[] = {
	&sroce_cc_attr_enable.attr.attr,
	&sroce_cc_attr_np_enable.attr.attr,
	&sroce_cc_attr_rp_enable.attr.attr,
	&sroce_cc_attr_ecn.attr.attr,
	&sroce_cc_attr_np_min_time_between_cnps.attr.attr,
	&sroce_cc_attr_np_cnp_dscp.attr.attr,
	&sroce_cc_attr_np_cnp_prio.attr.attr,
	&sroce_cc_attr_rp_max_rate.attr.attr,
	&sroce_cc_attr_rp_min_rate.attr.attr,
	&sroce_cc_attr_rp_ai_rate.attr.attr,
	&sroce_cc_attr_rp_hai_rate.attr.attr,
	&sroce_cc_attr_rp_time_reset.attr.attr,
	&sroce_cc_attr_rp_byte_reset.attr.attr,
	&sroce_cc_attr_rp_threshold.attr.attr,
	&sroce_cc_attr_rp_rate_reduce_monitor_period.attr.attr,
	&sroce_cc_attr_rp_initial_alpha_value.attr.attr,
	&sroce_cc_attr_rp_dce_tcp_g.attr.attr,
	&sroce_cc_attr_rp_dce_tcp_rtt.attr.attr,
	&sroce_cc_attr_rp_clamp_tgt_rate.attr.attr,
	&sroce_cc_attr_rp_min_dec_fac.attr.attr,
	&sroce_cc_attr_rp_rate_to_set_on_first_cnp.attr.attr,
	&sroce_cc_attr_rp_window_us.attr.attr,
	NULL,
};

static const struct attribute_group sroce_cc_group = {
	.name = "cc",
	.attrs = sroce_cc_attrs,
};

const struct attribute_group *sroce_cc_port_groups[] = {
	&sroce_cc_group,
	NULL,
};
