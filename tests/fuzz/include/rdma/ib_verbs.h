/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Userspace stand-in for rdma/ib_verbs.h: what sroce_pkt.h names. */
#ifndef SROCE_FUZZ_RDMA_IB_VERBS_H
#define SROCE_FUZZ_RDMA_IB_VERBS_H

enum ib_qp_type {
	IB_QPT_SMI,
	IB_QPT_GSI,
	IB_QPT_RC,
	IB_QPT_UC,
	IB_QPT_UD,
	/* The kernel's values: the uverbs ABI's (XRC_INI 9, XRC_TGT 10). */
	IB_QPT_XRC_INI = 9,
	IB_QPT_XRC_TGT = 10,
};

enum ib_wc_status {
	IB_WC_SUCCESS,
	IB_WC_LOC_LEN_ERR,
	IB_WC_LOC_QP_OP_ERR,
	IB_WC_LOC_EEC_OP_ERR,
	IB_WC_LOC_PROT_ERR,
	IB_WC_WR_FLUSH_ERR,
	IB_WC_MW_BIND_ERR,
	IB_WC_BAD_RESP_ERR,
	IB_WC_LOC_ACCESS_ERR,
	IB_WC_REM_INV_REQ_ERR,
	IB_WC_REM_ACCESS_ERR,
	IB_WC_REM_OP_ERR,
};

#endif
