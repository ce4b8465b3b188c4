/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ranges.h - which rdma-core releases this provider can be built for, and
 * the private ABI (IBVERBS_PRIVATE_<N>, verbs_register_driver_<N>,
 * libsroce-rdmav<N>.so) each one exports.
 *
 * SROCE_RDMA_CORE is the major release of the libibverbs built against
 * (44 for libibverbs.so.1.14.44.0); provider/Makefile passes it as
 * -DSROCE_RDMA_CORE=N after reading it from the library (see
 * check-libibverbs.sh, which reads SROCE_RDMA_CORE_MIN/_MAX from here).
 *
 * From rdma-core's CMakeLists.txt (IBVERBS_PABI_VERSION) and
 * libibverbs/libibverbs.map.in at each tag:
 *   44-56  IBVERBS_PRIVATE_34   (verbs_qp grows in 45 with ibv_qp_ex.wr_flush;
 *                               ibv_cmd_reg_dmabuf_mr() gains driver in 54)
 *   57-58  IBVERBS_PRIVATE_57   ibv_cmd_get_context() gains fd_arr
 *   59-63  IBVERBS_PRIVATE_59   verbs_context_ops gains alloc_dmah,
 *                               dealloc_dmah, reg_mr_ex; ibv_cmd_create_cq_ex()
 *                               gains prov_attr; 62 adds dm_export_dmabuf_fd
 *                               and query_port_speed under the same name
 *   64     IBVERBS_PRIVATE_64   alloc_buf, free_buf; ibv_cmd_create_qp_ex2()
 *                               gains driver
 *   65     IBVERBS_PRIVATE_65   ten completion-counter ops
 * The layouts themselves are in private_abi.h (declared once, with the
 * parts a range adds under "#if SROCE_RDMA_CORE >= N") and checked against
 * every release's own headers in layouts.h.
 */
#ifndef SROCE_ABI_RANGES_H
#define SROCE_ABI_RANGES_H

#define SROCE_RDMA_CORE_MIN 44
#define SROCE_RDMA_CORE_MAX 65

#ifndef SROCE_RDMA_CORE
#error "SROCE_RDMA_CORE (the rdma-core release to build for) is not set: build with provider/Makefile"
#elif SROCE_RDMA_CORE < SROCE_RDMA_CORE_MIN || SROCE_RDMA_CORE > SROCE_RDMA_CORE_MAX
#error "sroce provider: this rdma-core release is not supported; the provider builds against rdma-core 44-65"
#elif SROCE_RDMA_CORE <= 56
#define SROCE_IBVERBS_PABI 34
#define SROCE_REGISTER_DRIVER verbs_register_driver_34
#elif SROCE_RDMA_CORE <= 58
#define SROCE_IBVERBS_PABI 57
#define SROCE_REGISTER_DRIVER verbs_register_driver_57
#elif SROCE_RDMA_CORE <= 63
#define SROCE_IBVERBS_PABI 59
#define SROCE_REGISTER_DRIVER verbs_register_driver_59
#elif SROCE_RDMA_CORE <= 64
#define SROCE_IBVERBS_PABI 64
#define SROCE_REGISTER_DRIVER verbs_register_driver_64
#else
#define SROCE_IBVERBS_PABI 65
#define SROCE_REGISTER_DRIVER verbs_register_driver_65
#endif

#define SROCE_ABI_STR_(x) #x
#define SROCE_ABI_STR(x) SROCE_ABI_STR_(x)
/* "IBVERBS_PRIVATE_34" */
#define SROCE_IBVERBS_PABI_NAME "IBVERBS_PRIVATE_" SROCE_ABI_STR(SROCE_IBVERBS_PABI)

#endif /* SROCE_ABI_RANGES_H */
