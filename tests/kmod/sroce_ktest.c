// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_ktest: exercise an sroce device the way kernel ULPs do — through
 * ib_core's kernel verbs (ib_alloc_pd, ib_alloc_cq, ib_create_qp,
 * ib_post_recv, ib_drain_qp, ib_alloc_mr + ib_map_mr_sg) — and report in
 * KTAP lines on the kernel log. Loading fails (-EINVAL) when any check
 * fails, so "insmod" itself is the verdict.
 *
 *   insmod sroce_ktest.ko dev=sroce0
 */

#include <linux/delay.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "sroce0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "sroce device to test");

static int ktest_num, ktest_failed;

static bool ktest_check(bool ok, const char *what)
{
	pr_info("sroce_ktest: %s %d - %s\n", ok ? "ok" : "not ok", ++ktest_num,
		what);
	if (!ok)
		ktest_failed++;
	return ok;
}

struct ktest_recv {
	struct ib_cqe cqe;
	int flushed;
	int other;
};

static void ktest_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ktest_recv *r = container_of(wc->wr_cqe, struct ktest_recv, cqe);

	if (wc->status == IB_WC_WR_FLUSH_ERR && wc->qp && wc->opcode == IB_WC_RECV)
		r->flushed++;
	else
		r->other++;
}

static void ktest_qp(struct ib_device *ibdev, struct ib_pd *pd)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};
	struct ktest_recv r = { .cqe.done = ktest_recv_done };
	struct ib_recv_wr wr = { .wr_cqe = &r.cqe, .num_sge = 1 };
	const struct ib_recv_wr *bad;
	struct ib_sge sge;
	struct ib_qp *qp;
	struct ib_cq *cq;
	void *buf;
	int i, posted = 0;

	cq = ib_alloc_cq(ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	if (!ktest_check(!IS_ERR(cq), "ib_alloc_cq (IB_POLL_DIRECT)"))
		return;
	buf = kzalloc(4096, GFP_KERNEL);
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (!ktest_check(!IS_ERR(qp) && buf, "ib_create_qp (RC)"))
		goto out_cq;
	ktest_check(init.cap.max_recv_wr >= 16, "granted max_recv_wr >= 16");
	ktest_check(!ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				  IB_QP_PORT | IB_QP_ACCESS_FLAGS),
		    "ib_modify_qp RESET -> INIT");

	sge.addr = ib_dma_map_single(ibdev, buf, 4096, DMA_FROM_DEVICE);
	sge.length = 256;
	sge.lkey = pd->local_dma_lkey;
	wr.sg_list = &sge;
	for (i = 0; i < 10; i++)
		posted += !ib_post_recv(qp, &wr, &bad);
	ktest_check(posted == 10, "ib_post_recv x10 in INIT");

	/* Moves the QP to ERR and waits until both queues have drained. */
	ib_drain_qp(qp);
	ktest_check(r.flushed == 10 && !r.other,
		    "ib_drain_qp: the 10 receives flushed through wr_cqe->done");
	ib_dma_unmap_single(ibdev, sge.addr, 4096, DMA_FROM_DEVICE);
	ktest_check(!ib_destroy_qp(qp), "ib_destroy_qp");
out_cq:
	kfree(buf);
	ib_free_cq(cq);
}

static void ktest_frwr(struct ib_pd *pd)
{
	struct scatterlist sg[2];
	struct ib_mr *mr;
	void *a, *b;
	int n;

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 16);
	if (!ktest_check(!IS_ERR(mr), "ib_alloc_mr (MEM_REG, 16 pages)"))
		return;
	a = (void *)__get_free_page(GFP_KERNEL);
	b = (void *)__get_free_page(GFP_KERNEL);
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], a, PAGE_SIZE);
	sg_set_buf(&sg[1], b, PAGE_SIZE);
	n = ib_dma_map_sg(pd->device, sg, 2, DMA_BIDIRECTIONAL);
	ktest_check(n == 2 && ib_map_mr_sg(mr, sg, n, NULL, PAGE_SIZE) == 2 &&
		    mr->length == 2 * PAGE_SIZE,
		    "ib_map_mr_sg maps two pages (length 8 KiB)");
	ib_dma_unmap_sg(pd->device, sg, 2, DMA_BIDIRECTIONAL);
	ktest_check(!ib_dereg_mr(mr), "ib_dereg_mr");
	free_page((unsigned long)a);
	free_page((unsigned long)b);

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 100000);
	ktest_check(IS_ERR(mr) && PTR_ERR(mr) == -EINVAL,
		    "ib_alloc_mr beyond max_fast_reg_page_list_len: EINVAL");
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
}

struct ktest_wc {
	struct ib_cqe cqe;
	int done;
	enum ib_wc_status status;
	u32 byte_len;
};

static void ktest_wc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ktest_wc *w = container_of(wc->wr_cqe, struct ktest_wc, cqe);

	w->done++;
	w->status = wc->status;
	w->byte_len = wc->byte_len;
}

/* The index of port 1's RoCE v2 IPv4 GID, or -1. */
static int ktest_ipv4_gid(struct ib_device *ibdev)
{
	const struct ib_gid_attr *attr;
	int i, found = -1;

	for (i = 0; found < 0 && i < ibdev->port_data[1].immutable.gid_tbl_len;
	     i++) {
		attr = rdma_get_gid_attr(ibdev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw))
			found = i;
		rdma_put_gid_attr(attr);
	}
	return found;
}

/* An RC QP connected to itself (loopback through its own GID). */
static int ktest_self_connect(struct ib_qp *qp, int gid_index, int access)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE | access,
	};
	union ib_gid gid;
	int err;

	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	err = rdma_query_gid(qp->device, 1, gid_index, &gid);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.rq_psn = 100;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 1;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &gid, 0, gid_index, 64, 0);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 100;
	attr.timeout = 14;
	attr.retry_cnt = 3;
	attr.rnr_retry = 3;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * A SEND whose SGE is the lkey of the fast-registration MR that a REG_MR
 * just before it in the same queue registers (iSER's immediate data): the
 * REG_MR executes first, so the SEND's key is valid when it runs.
 */
static void ktest_reg_mr_then_send(struct ib_device *ibdev, struct ib_pd *pd)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ktest_wc sent = { .cqe.done = ktest_wc_done };
	struct ktest_wc recvd = { .cqe.done = ktest_wc_done };
	struct ktest_wc reg = { .cqe.done = ktest_wc_done };
	struct ib_send_wr send = { .wr_cqe = &sent.cqe, .num_sge = 1,
				   .opcode = IB_WR_SEND,
				   .send_flags = IB_SEND_SIGNALED };
	struct ib_reg_wr reg_wr = {
		.wr = { .wr_cqe = &reg.cqe, .opcode = IB_WR_REG_MR,
			.next = &send },
		.access = IB_ACCESS_LOCAL_WRITE,
	};
	struct ib_recv_wr rwr = { .wr_cqe = &recvd.cqe, .num_sge = 1 };
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad;
	struct ib_sge ssge, rsge;
	struct scatterlist sg;
	struct ib_mr *mr = NULL;
	struct ib_qp *qp = NULL;
	struct ib_cq *cq;
	u8 *src, *dst;
	int gid_index, i;

	gid_index = ktest_ipv4_gid(ibdev);
	if (!ktest_check(gid_index >= 0, "a RoCE v2 IPv4 GID on port 1"))
		return;
	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (!ktest_check(!IS_ERR(cq), "ib_alloc_cq for the loopback QP"))
		return;
	src = (u8 *)__get_free_page(GFP_KERNEL);
	dst = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!src || !dst)
		goto out;
	for (i = 0; i < PAGE_SIZE; i++)
		src[i] = i * 7 + 3;
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (!ktest_check(!IS_ERR(qp), "ib_create_qp (RC, for a loopback)")) {
		qp = NULL;
		goto out;
	}
	if (!ktest_check(!ktest_self_connect(qp, gid_index, 0),
			 "RC QP connected to itself (RTS)"))
		goto out;
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(mr)) {
		mr = NULL;
		goto out;
	}
	sg_init_one(&sg, src, PAGE_SIZE);
	if (ib_dma_map_sg(ibdev, &sg, 1, DMA_TO_DEVICE) != 1 ||
	    ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) != 1)
		goto out_unmap;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));

	rsge.addr = ib_dma_map_single(ibdev, dst, PAGE_SIZE, DMA_FROM_DEVICE);
	rsge.length = PAGE_SIZE;
	rsge.lkey = pd->local_dma_lkey;
	rwr.sg_list = &rsge;
	ssge.addr = mr->iova + 512;
	ssge.length = 1024;
	ssge.lkey = mr->lkey;
	send.sg_list = &ssge;
	reg_wr.mr = mr;
	reg_wr.key = mr->rkey;
	if (!ib_post_recv(qp, &rwr, &bad_rwr) &&
	    !ib_post_send(qp, &reg_wr.wr, &bad)) {
		for (i = 0; i < 2000 && !(sent.done && recvd.done); i++) {
			ib_process_cq_direct(cq, 16);
			usleep_range(500, 1000);
		}
	}
	ktest_check(!reg.done && sent.done && sent.status == IB_WC_SUCCESS,
		    "REG_MR then a SEND through the new MR's lkey: the SEND succeeds");
	ktest_check(recvd.done && recvd.status == IB_WC_SUCCESS &&
		    recvd.byte_len == 1024 && !memcmp(dst, src + 512, 1024),
		    "the receive holds the 1 KiB the SEND gathered through the MR");
	ib_dma_unmap_single(ibdev, rsge.addr, PAGE_SIZE, DMA_FROM_DEVICE);
out_unmap:
	ib_dma_unmap_sg(ibdev, &sg, 1, DMA_TO_DEVICE);
out:
	if (qp) {
		ib_drain_qp(qp);
		ib_destroy_qp(qp);
	}
	if (mr)
		ib_dereg_mr(mr);
	free_page((unsigned long)src);
	free_page((unsigned long)dst);
	ib_free_cq(cq);
}

/*
 * IB_WR_ATOMIC_WRITE (6.2; 15, written as a number so that this builds on
 * 6.1 too, where sroce takes it as well): an ib_rdma_wr whose 8 bytes
 * come from its SGE, into a page registered REMOTE_WRITE by REG_MR, on
 * an RC QP connected to itself. The word changes, nothing around it.
 */
static void ktest_atomic_write(struct ib_device *ibdev, struct ib_pd *pd)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ktest_wc reg = { .cqe.done = ktest_wc_done };
	struct ktest_wc aw = { .cqe.done = ktest_wc_done };
	struct ib_rdma_wr awr = {
		.wr = { .wr_cqe = &aw.cqe, .num_sge = 1,
			.opcode = (enum ib_wr_opcode)15,
			.send_flags = IB_SEND_SIGNALED },
	};
	struct ib_reg_wr reg_wr = {
		.wr = { .wr_cqe = &reg.cqe, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED, .next = &awr.wr },
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	static const u64 value = 0x0123456789abcdefULL;
	const struct ib_send_wr *bad;
	struct scatterlist sg;
	struct ib_mr *mr = NULL;
	struct ib_qp *qp = NULL;
	struct ib_sge sge;
	struct ib_cq *cq;
	u8 *page, *ref;
	u64 *src;
	int gid_index, i;

	gid_index = ktest_ipv4_gid(ibdev);
	if (!ktest_check(gid_index >= 0, "a RoCE v2 IPv4 GID on port 1"))
		return;
	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (!ktest_check(!IS_ERR(cq), "ib_alloc_cq for the ATOMIC WRITE QP"))
		return;
	page = (u8 *)__get_free_page(GFP_KERNEL);
	ref = kmalloc(PAGE_SIZE, GFP_KERNEL);
	src = kmalloc(sizeof(*src), GFP_KERNEL);
	if (!page || !ref || !src)
		goto out;
	for (i = 0; i < PAGE_SIZE; i++)
		page[i] = i * 13 + 1;
	memcpy(ref, page, PAGE_SIZE);
	memcpy(ref + 64, &value, sizeof(value));
	*src = value;
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (IS_ERR(qp)) {
		qp = NULL;
		goto out;
	}
	if (ktest_self_connect(qp, gid_index, IB_ACCESS_REMOTE_WRITE))
		goto out;
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(mr)) {
		mr = NULL;
		goto out;
	}
	sg_init_one(&sg, page, PAGE_SIZE);
	if (ib_dma_map_sg(ibdev, &sg, 1, DMA_BIDIRECTIONAL) != 1)
		goto out;
	if (ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) != 1)
		goto out_unmap;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg_wr.mr = mr;
	reg_wr.key = mr->rkey;
	sge.addr = ib_dma_map_single(ibdev, src, sizeof(*src), DMA_TO_DEVICE);
	sge.length = sizeof(*src);
	sge.lkey = pd->local_dma_lkey;
	awr.wr.sg_list = &sge;
	awr.remote_addr = mr->iova + 64;
	awr.rkey = mr->rkey;
	if (!ib_post_send(qp, &reg_wr.wr, &bad)) {
		for (i = 0; i < 2000 && !aw.done; i++) {
			ib_process_cq_direct(cq, 16);
			usleep_range(500, 1000);
		}
	}
	ib_dma_unmap_single(ibdev, sge.addr, sizeof(*src), DMA_TO_DEVICE);
	ktest_check(aw.done && aw.status == IB_WC_SUCCESS && aw.byte_len == 8,
		    "IB_WR_ATOMIC_WRITE (8 bytes from its SGE): success, byte_len 8");
	ktest_check(!memcmp(page, ref, PAGE_SIZE),
		    "the word holds the 8 bytes, the rest of the page unchanged");
out_unmap:
	ib_dma_unmap_sg(ibdev, &sg, 1, DMA_BIDIRECTIONAL);
out:
	ktest_check(aw.done, "ATOMIC WRITE QP set up and completed");
	if (qp) {
		ib_drain_qp(qp);
		ib_destroy_qp(qp);
	}
	if (mr)
		ib_dereg_mr(mr);
	kfree(src);
	kfree(ref);
	free_page((unsigned long)page);
	ib_free_cq(cq);
}

/*
 * XRC from the kernel: a domain (no file), an XRC SRQ the kernel posts
 * to, a target QP through ib_create_qp, and an initiator. No ib_send_wr
 * member carries the remote SRQ, so a kernel initiator cannot send:
 * post_send says so (-EOPNOTSUPP), as it does on a target.
 */
static void ktest_xrc(struct ib_device *ibdev, struct ib_pd *pd)
{
	struct ib_srq_init_attr sinit = {
		.srq_type = IB_SRQT_XRC,
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	struct ib_qp_init_attr tinit = { .qp_type = IB_QPT_XRC_TGT };
	struct ib_qp_init_attr iinit = {
		.qp_type = IB_QPT_XRC_INI,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};
	struct ktest_recv r = { .cqe.done = ktest_recv_done };
	struct ib_recv_wr rwr = { .wr_cqe = &r.cqe, .num_sge = 0 };
	struct ib_send_wr swr = { .opcode = IB_WR_SEND };
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *sbad;
	struct ib_qp *tgt = NULL, *ini = NULL;
	struct ib_xrcd *xrcd;
	struct ib_srq *srq;
	struct ib_cq *cq;
	int i, posted = 0;

	ktest_check(ibdev->attrs.device_cap_flags & IB_DEVICE_XRC,
		    "IB_DEVICE_XRC in device_cap_flags");
	xrcd = ib_alloc_xrcd_user(ibdev, NULL, NULL);
	if (!ktest_check(!IS_ERR(xrcd), "ib_alloc_xrcd_user (a kernel XRC domain)"))
		return;
	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (!ktest_check(!IS_ERR(cq), "ib_alloc_cq for the XRC SRQ"))
		goto out_xrcd;
	sinit.ext.xrc.xrcd = xrcd;
	sinit.ext.cq = cq;
	srq = ib_create_srq(pd, &sinit);
	if (!ktest_check(!IS_ERR(srq) && srq->ext.xrc.srq_num,
			 "ib_create_srq (XRC): a non-zero SRQ number"))
		goto out_cq;
	for (i = 0; i < 8; i++)
		posted += !ib_post_srq_recv(srq, &rwr, &rbad);
	ktest_check(posted == 8, "ib_post_srq_recv x8 on the XRC SRQ");

	tinit.xrcd = xrcd;
	tgt = ib_create_qp(pd, &tinit);
	if (ktest_check(!IS_ERR(tgt), "ib_create_qp (XRC_TGT)")) {
		ktest_check(!ib_modify_qp(tgt, &attr, IB_QP_STATE |
					  IB_QP_PKEY_INDEX | IB_QP_PORT |
					  IB_QP_ACCESS_FLAGS),
			    "XRC_TGT: RESET -> INIT");
		ktest_check(ib_post_send(tgt, &swr, &sbad) == -EOPNOTSUPP &&
			    sbad == &swr, "XRC_TGT: ib_post_send -EOPNOTSUPP");
	} else {
		tgt = NULL;
	}
	iinit.send_cq = cq;
	ini = ib_create_qp(pd, &iinit);
	if (ktest_check(!IS_ERR(ini) && !iinit.cap.max_recv_wr,
			"ib_create_qp (XRC_INI): no receive queue")) {
		ktest_check(!ib_modify_qp(ini, &attr, IB_QP_STATE |
					  IB_QP_PKEY_INDEX | IB_QP_PORT |
					  IB_QP_ACCESS_FLAGS),
			    "XRC_INI: RESET -> INIT");
		ktest_check(ib_post_send(ini, &swr, &sbad) == -EOPNOTSUPP,
			    "XRC_INI: a kernel ib_post_send -EOPNOTSUPP");
		ktest_check(ib_post_recv(ini, &rwr, &rbad) == -EINVAL,
			    "XRC_INI: ib_post_recv -EINVAL");
		ktest_check(!ib_destroy_qp(ini), "ib_destroy_qp (XRC_INI)");
	}
	if (tgt)
		ktest_check(!ib_destroy_qp(tgt), "ib_destroy_qp (XRC_TGT)");
	ib_destroy_srq(srq);
out_cq:
	ib_free_cq(cq);
out_xrcd:
	ktest_check(!ib_dealloc_xrcd_user(xrcd, NULL),
		    "ib_dealloc_xrcd_user once its SRQ and QPs are gone");
}

/*
 * The device is found as a ULP finds devices: an ib_client's add() sees
 * every registered one (during ib_register_client()) and keeps a
 * reference to the one named dev.
 */
static struct ib_device *ktest_dev;

static int ktest_client_add(struct ib_device *ibdev)
{
	if (!ktest_dev && !strcmp(dev_name(&ibdev->dev), dev) &&
	    ib_device_try_get(ibdev))
		ktest_dev = ibdev;
	return -EOPNOTSUPP;	/* no client data: remove() is not called */
}

static struct ib_client ktest_client = {
	.name = "sroce_ktest",
	.add = ktest_client_add,
};

static int __init sroce_ktest_init(void)
{
	struct ib_device *ibdev;
	struct ib_pd *pd;

	if (ib_register_client(&ktest_client))
		return -ENODEV;
	ib_unregister_client(&ktest_client);
	ibdev = ktest_dev;
	if (!ktest_check(ibdev, "find the device"))
		return -ENODEV;
	pd = ib_alloc_pd(ibdev, 0);
	if (ktest_check(!IS_ERR(pd), "ib_alloc_pd (with a local DMA lkey)")) {
		ktest_qp(ibdev, pd);
		ktest_frwr(pd);
		ktest_reg_mr_then_send(ibdev, pd);
		ktest_atomic_write(ibdev, pd);
		ktest_xrc(ibdev, pd);
		ib_dealloc_pd(pd);
	}
	ib_device_put(ibdev);
	pr_info("sroce_ktest: 1..%d\n", ktest_num);
	pr_info("sroce_ktest: %d passed, %d failed\n", ktest_num - ktest_failed,
		ktest_failed);
	return ktest_failed ? -EINVAL : 0;
}

static void __exit sroce_ktest_exit(void)
{
}

module_init(sroce_ktest_init);
module_exit(sroce_ktest_exit);
MODULE_DESCRIPTION("sroce kernel-consumer checks (tests only)");
MODULE_LICENSE("Dual BSD/GPL");
