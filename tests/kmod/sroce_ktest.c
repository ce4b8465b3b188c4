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

#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
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

static int __init sroce_ktest_init(void)
{
	struct ib_device *ibdev;
	struct ib_pd *pd;

	ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!ktest_check(ibdev, "find the device"))
		return -ENODEV;
	pd = ib_alloc_pd(ibdev, 0);
	if (ktest_check(!IS_ERR(pd), "ib_alloc_pd (with a local DMA lkey)")) {
		ktest_qp(ibdev, pd);
		ktest_frwr(pd);
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
