// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// verbs.cpp - verbs objects: device/port queries, protection domains,
// memory regions.  (CQs are in cq.cpp.)

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sroce.hpp"

namespace sroce {

int query_device_ex(struct ibv_context *ibctx,
		    const struct ibv_query_device_ex_input *input,
		    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);

	int ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
					   &resp_size);
	if (ret)
		return ret;

	// uverbs carries fw_ver as a number; show it the way rxe/siw do.
	const uint64_t fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", static_cast<unsigned>((fw >> 32) & 0xffff),
		 static_cast<unsigned>((fw >> 16) & 0xffff),
		 static_cast<unsigned>(fw & 0xffff));
	return 0;
}

int query_port(struct ibv_context *ibctx, uint8_t port_num,
	       struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port_num, port_attr, &cmd, sizeof(cmd));
}

struct ibv_pd *alloc_pd(struct ibv_context *ibctx)
{
	auto *p = static_cast<pd *>(calloc(1, sizeof(pd)));
	if (!p)
		return nullptr;

	struct ibv_alloc_pd cmd = {};
	alloc_pd_resp resp = {};
	int ret = ibv_cmd_alloc_pd(ibctx, &p->ibv_pd, &cmd, sizeof(cmd),
				   resp.core(), sizeof(resp));
	if (ret) {
		free(p);
		errno = ret;
		return nullptr;
	}
	p->pdn = resp.drv.pdn;
	return &p->ibv_pd;
}

int dealloc_pd(struct ibv_pd *ibpd)
{
	int ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	free(to_spd(ibpd));
	return 0;
}

// ---- memory regions ------------------------------------------------------------
//
// The kernel pins and keys the region; there is no driver data either
// way.  ibv_cmd_reg_mr fills handle, lkey, rkey, mr_type and access;
// ibv_reg_mr() then sets pd, addr and length.

struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
		      uint64_t hca_va, int access)
{
	auto *m = static_cast<mr *>(calloc(1, sizeof(mr)));
	if (!m)
		return nullptr;

	struct ibv_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	int ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, &m->vmr,
				 &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(m);
		errno = ret;
		return nullptr;
	}
	return &m->vmr.ibv_mr;
}

// A dma-buf region is all kernel work too (sroce_dmabuf.c attaches to the
// exporter's buffer); its keys work like any MR's, so nothing else here
// changes.  mr_type = IBV_MR_TYPE_DMABUF_MR makes ibv_rereg_mr() refuse it
// and ibv_dereg_mr() skip the fork bookkeeping of a plain MR.
struct ibv_mr *reg_dmabuf_mr(struct ibv_pd *ibpd, uint64_t offset, size_t length,
			     uint64_t iova, int fd, int access)
{
	auto *m = static_cast<mr *>(calloc(1, sizeof(mr)));
	if (!m)
		return nullptr;

	int ret = sroce_cmd_reg_dmabuf_mr(ibpd, offset, length, iova, fd, access,
					  &m->vmr);
	if (ret) {
		free(m);
		errno = ret;
		return nullptr;
	}
	return &m->vmr.ibv_mr;
}

// The kernel builds a new region and answers with its keys (the handle
// stays); ibv_cmd_rereg_mr stores them, ibv_rereg_mr() updates pd, addr
// and length.  The IOVA of a new translation is its address, as for
// ibv_reg_mr().  On failure the region is unchanged.
int rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibpd, void *addr,
	     size_t length, int access)
{
	struct ibv_rereg_mr cmd = {};
	struct ib_uverbs_rereg_mr_resp resp = {};
	int ret = ibv_cmd_rereg_mr(vmr, static_cast<uint32_t>(flags), addr, length,
				   reinterpret_cast<uintptr_t>(addr), access, ibpd,
				   &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return ret;
	}
	// ibv_dereg_mr() reads the access flags back (IBV_ACCESS_ON_DEMAND).
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

// ibv_advise_mr on ODP regions: the kernel checks the keys and faults the
// ranges in (IBV_ADVISE_MR_FLAG_FLUSH: before it returns).
int advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
	      struct ibv_sge *sg_list, uint32_t num_sge)
{
	return ibv_cmd_advise_mr(ibpd, advice, flags, sg_list, num_sge);
}

int dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(to_smr(vmr));
	return 0;
}

// Memory windows. The kernel executes binds, in order with the QP's other
// work requests; its rkey checks see through a bound window to its MR.
struct ibv_mw *alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	auto *mw = static_cast<struct ibv_mw *>(calloc(1, sizeof(struct ibv_mw)));
	if (!mw)
		return nullptr;

	struct ibv_alloc_mw cmd = {};
	struct ib_uverbs_alloc_mw_resp resp = {};
	int ret = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
				   sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return nullptr;
	}
	return mw;
}

int dealloc_mw(struct ibv_mw *ibmw)
{
	int ret = ibv_cmd_dealloc_mw(ibmw);
	if (ret)
		return ret;
	free(ibmw);
	return 0;
}

// ibv_bind_mw() (type 1 windows; libibverbs checked the type and the MR's
// PD): a BIND_MW work request with the window's next key, which becomes
// the window's rkey once posted, as the verb promises.
int bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw,
	    struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {};
	struct ibv_send_wr *bad = nullptr;

	if (ibqp->qp_type != IBV_QPT_RC && ibqp->qp_type != IBV_QPT_UC)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = ibmw;
	wr.bind_mw.rkey = ibv_inc_rkey(ibmw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	int ret = post_send(ibqp, &wr, &bad);
	if (ret)
		return ret;
	ibmw->rkey = wr.bind_mw.rkey;
	return 0;
}

} // namespace sroce
