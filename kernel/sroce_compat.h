/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce: the one place where kernel versions differ.
 *
 * Role files call the API of the newest kernel sroce supports; what an
 * older kernel lacks is provided here under that name (or a sroce_ name
 * where the new API cannot be reproduced exactly). Nothing else in the
 * module tests what the kernel has. SROCE_HAVE_* come from kernel/Kbuild,
 * which looks for each API in the headers being built against (a test
 * compile of kernel/probe/NAME.c where a signature changed). Headers that
 * moved are in kernel/compat/ under their new name. sroce.h includes this
 * file.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_counter.h>
#include <rdma/uverbs_ioctl.h>
#ifdef SROCE_HAVE_IPV6_STUBS
#include <net/ipv6_stubs.h>
#endif

/* vm_flags became write-protected (vm_flags_set()) in 6.3. */
static inline void sroce_vm_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
#ifdef SROCE_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/* del_timer*() became timer_delete*() (6.2; del_timer*() gone in 6.15). */
#ifndef SROCE_HAVE_TIMER_DELETE
static inline int timer_delete(struct timer_list *timer)
{
	return del_timer(timer);
}

static inline int timer_delete_sync(struct timer_list *timer)
{
	return del_timer_sync(timer);
}
#endif

/* from_timer() became timer_container_of() (6.16). */
#ifndef timer_container_of
#define timer_container_of(var, timer, field) from_timer(var, timer, field)
#endif

/*
 * A workqueue says whether it is per-CPU (WQ_PERCPU, 6.17, backported to
 * 6.12) or unbound; 7.x warns when it says neither. Per-CPU was the default.
 */
#ifndef SROCE_HAVE_WQ_PERCPU
#define WQ_PERCPU 0
#endif

/* hrtimer_init() + ->function became hrtimer_setup() (6.13). */
#ifndef SROCE_HAVE_HRTIMER_SETUP
static inline void
hrtimer_setup(struct hrtimer *timer,
	      enum hrtimer_restart (*function)(struct hrtimer *),
	      clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* ib_umem_get() became ib_umem_get_va() (7.x), same arguments. */
#ifndef SROCE_HAVE_IB_UMEM_GET_VA
static inline struct ib_umem *ib_umem_get_va(struct ib_device *device,
					     unsigned long addr, size_t size,
					     int access)
{
	return ib_umem_get(device, addr, size, access);
}
#endif

/*
 * An IPv6 route lookup: through ipv6_stub where the kernel has one (IPv6
 * could be a module), directly where IPv6 is always built in (7.x).
 */
static inline struct dst_entry *
sroce_ip6_dst_lookup_flow(struct net *net, const struct sock *sk,
			  struct flowi6 *fl6, const struct in6_addr *final_dst)
{
#ifdef SROCE_HAVE_IPV6_STUBS
	return ipv6_stub->ipv6_dst_lookup_flow(net, sk, fl6, final_dst);
#else
	return ip6_dst_lookup_flow(net, sk, fl6, final_dst);
#endif
}

/*
 * UDP tunnel sockets are set up and released by their struct sock (7.x),
 * by their struct socket before.
 */
static inline void sroce_setup_udp_tunnel_sock(struct net *net,
					       struct socket *sock,
					       struct udp_tunnel_sock_cfg *cfg)
{
#ifdef SROCE_HAVE_UDP_TUNNEL_SK
	setup_udp_tunnel_sock(net, sock->sk, cfg);
#else
	setup_udp_tunnel_sock(net, sock, cfg);
#endif
}

static inline void sroce_udp_tunnel_sock_release(struct socket *sock)
{
#ifdef SROCE_HAVE_UDP_TUNNEL_SK
	udp_tunnel_sock_release(sock->sk);
#else
	udp_tunnel_sock_release(sock);
#endif
}

/*
 * ib_device_ops.create_cq's last argument: the uverbs attribute bundle
 * since 6.11, the ib_udata in it before. sroce_create_cq() takes a
 * struct sroce_create_cq_arg * and gets its udata (NULL for a kernel
 * caller) from sroce_create_cq_udata().
 */
#ifdef SROCE_HAVE_CREATE_CQ_ATTRS
#define sroce_create_cq_arg uverbs_attr_bundle
static inline struct ib_udata *
sroce_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define sroce_create_cq_arg ib_udata
static inline struct ib_udata *sroce_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * Verbs whose ib_device_ops entry differs by kernel. The sroce functions
 * have the newest form (declared here, before the adapters); the ops
 * table sets them with SROCE_OPS_*.
 */
struct ib_dmah;

/* reg_user_mr gained a DMA handle (6.17), which sroce refuses. */
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_dmah *dmah,
				struct ib_udata *udata);
#ifdef SROCE_HAVE_REG_USER_MR_DMAH
#define SROCE_OPS_REG_USER_MR .reg_user_mr = sroce_reg_user_mr
#else
static inline struct ib_mr *
sroce_reg_user_mr_nodmah(struct ib_pd *ibpd, u64 start, u64 length, u64 iova,
			 int access, struct ib_udata *udata)
{
	return sroce_reg_user_mr(ibpd, start, length, iova, access, NULL,
				 udata);
}

#define SROCE_OPS_REG_USER_MR .reg_user_mr = sroce_reg_user_mr_nodmah
#endif

/*
 * reg_user_mr_dmabuf took the udata until 6.10, then the uverbs attribute
 * bundle, and a DMA handle before it with reg_user_mr (6.17).
 */
struct ib_mr *sroce_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd, int access,
				       struct ib_dmah *dmah,
				       struct uverbs_attr_bundle *attrs);
#if defined(SROCE_HAVE_REG_USER_MR_DMAH)
#define SROCE_OPS_REG_USER_MR_DMABUF \
	.reg_user_mr_dmabuf = sroce_reg_user_mr_dmabuf
#elif defined(SROCE_HAVE_REG_USER_MR_DMABUF_ATTRS)
static inline struct ib_mr *
sroce_reg_user_mr_dmabuf_nodmah(struct ib_pd *ibpd, u64 offset, u64 length,
				u64 iova, int fd, int access,
				struct uverbs_attr_bundle *attrs)
{
	return sroce_reg_user_mr_dmabuf(ibpd, offset, length, iova, fd, access,
					NULL, attrs);
}

#define SROCE_OPS_REG_USER_MR_DMABUF \
	.reg_user_mr_dmabuf = sroce_reg_user_mr_dmabuf_nodmah
#else
static inline struct ib_mr *
sroce_reg_user_mr_dmabuf_udata(struct ib_pd *ibpd, u64 offset, u64 length,
			       u64 iova, int fd, int access,
			       struct ib_udata *udata)
{
	return sroce_reg_user_mr_dmabuf(ibpd, offset, length, iova, fd, access,
					NULL, NULL);
}

#define SROCE_OPS_REG_USER_MR_DMABUF \
	.reg_user_mr_dmabuf = sroce_reg_user_mr_dmabuf_udata
#endif

/* resize_cq(int cqe) became the user-only resize_user_cq(unsigned int) (7.1). */
int sroce_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
		    struct ib_udata *udata);
#ifdef SROCE_HAVE_RESIZE_USER_CQ
#define SROCE_OPS_RESIZE_CQ .resize_user_cq = sroce_resize_cq
#else
static inline int sroce_resize_cq_int(struct ib_cq *ibcq, int cqe,
				      struct ib_udata *udata)
{
	return cqe < 0 ? -EINVAL : sroce_resize_cq(ibcq, cqe, udata);
}

#define SROCE_OPS_RESIZE_CQ .resize_cq = sroce_resize_cq_int
#endif

/* Binding a QP to an rdma_counter and back names the port (7.x). */
int sroce_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp,
			  u32 port);
int sroce_counter_unbind_qp(struct ib_qp *ibqp, u32 port);
#ifdef SROCE_HAVE_COUNTER_BIND_PORT
#define SROCE_OPS_COUNTER_BIND \
	.counter_bind_qp = sroce_counter_bind_qp, \
	.counter_unbind_qp = sroce_counter_unbind_qp
#else
static inline int sroce_counter_bind_qp_1(struct rdma_counter *counter,
					  struct ib_qp *ibqp)
{
	return sroce_counter_bind_qp(counter, ibqp, 1);
}

static inline int sroce_counter_unbind_qp_1(struct ib_qp *ibqp)
{
	return sroce_counter_unbind_qp(ibqp, 1);
}

#define SROCE_OPS_COUNTER_BIND \
	.counter_bind_qp = sroce_counter_bind_qp_1, \
	.counter_unbind_qp = sroce_counter_unbind_qp_1
#endif

/*
 * RDMA FLUSH and ATOMIC WRITE (IBTA 1.5) came to ib_core in 6.2: the MR and
 * QP access bit, the device caps, the completion opcodes and a kernel
 * ULP's work request. Before, ib_core refuses the access bit, so no MR
 * can be flushed (the cap stays 0 and sroce says it cannot flush), and
 * no kernel ULP can ask for either. User atomic writes need none of it.
 */
#ifndef SROCE_HAVE_IB_FLUSH
#define IB_ACCESS_FLUSH_GLOBAL		0
#define IB_ACCESS_FLUSH_PERSISTENT	0
#define IB_DEVICE_FLUSH_GLOBAL		0ULL
#define IB_DEVICE_FLUSH_PERSISTENT	0ULL
#define IB_DEVICE_ATOMIC_WRITE		(1ULL << 40)	/* uverbs' value */
#define IB_WC_FLUSH			8
#define IB_WC_ATOMIC_WRITE		9
#endif

/*
 * dma-buf's symbols are in the DMA_BUF namespace, named by a string since
 * 6.13; the importer's callback move_notify became invalidate_mappings
 * (7.x).
 */
#ifdef SROCE_HAVE_IMPORT_NS_IDENT
#define SROCE_IMPORT_NS_DMA_BUF		MODULE_IMPORT_NS(DMA_BUF)
#else
#define SROCE_IMPORT_NS_DMA_BUF		MODULE_IMPORT_NS("DMA_BUF")
#endif
#ifdef SROCE_HAVE_DMABUF_INVALIDATE_MAPPINGS
#define SROCE_DMABUF_OPS_MOVE_NOTIFY(fn)	.invalidate_mappings = (fn)
#else
#define SROCE_DMABUF_OPS_MOVE_NOTIFY(fn)	.move_notify = (fn)
#endif

/*
 * An ODP umem's hmm pfns (valid and writable bits included) and the
 * access mask map_dma_and_lock takes: 6.16 moved the array into a struct
 * hmm_dma_map and asks for HMM_PFN_WRITE instead of ODP_*_ALLOWED_BIT.
 */
#ifdef SROCE_HAVE_ODP_HMM_MAP
#define sroce_odp_pfns(umem_odp)	((umem_odp)->map.pfn_list)
#define SROCE_ODP_ACCESS(write)		((write) ? HMM_PFN_WRITE : 0)
#else
#define sroce_odp_pfns(umem_odp)	((umem_odp)->pfn_list)
#define SROCE_ODP_ACCESS(write)		(ODP_READ_ALLOWED_BIT | \
					 ((write) ? ODP_WRITE_ALLOWED_BIT : 0))
#endif

/*
 * A KUnit parameter generator (a test of the module's, built when
 * CONFIG_KUNIT is set) is passed the test it generates for since 7.x;
 * before, only the previous value and the description to fill.
 */
struct kunit;
#ifdef SROCE_HAVE_KUNIT_GEN_TEST
#define SROCE_KUNIT_GEN(name) \
	const void *name(struct kunit *test, const void *prev, char *desc)
#else
#define SROCE_KUNIT_GEN(name) \
	const void *name(const void *prev, char *desc)
#endif

#endif /* SROCE_COMPAT_H */
