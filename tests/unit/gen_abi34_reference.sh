#!/bin/sh
# gen_abi34_reference.sh RDMA_CORE_GIT_DIR [TAG] > tests/unit/abi34_reference.inc
#
# Compiles rdma-core's own provider headers (libibverbs/driver.h,
# kern-abi.h, ...) at TAG (default v44.0) with the C compiler and prints the
# size/alignment of every struct and the offset/size of every member that
# provider/abi34.h re-declares, the enum values, and (gcc -aux-info) the
# prototype of every function it declares.  test_abi34.cpp compares
# abi34.h against this output, so abi34.h is checked against what the
# compiler makes of the real headers, not against our reading of them.
#
# Only needed when abi34.h grows; needs a git clone (bare is fine) of
# https://github.com/linux-rdma/rdma-core, python3 and gcc.
set -eu
git_dir=${1:?usage: $0 RDMA_CORE_GIT_DIR [TAG]}
tag=${2:-v44.0}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git -C "$git_dir" archive "$tag" libibverbs ccan util kernel-headers buildlib |
	tar -x -C "$tmp"
src=$tmp
inc=$tmp/inc
mkdir -p "$inc/infiniband" "$inc/kernel-abi" "$inc/rdma"
for f in "$src"/libibverbs/*.h; do ln -s "$f" "$inc/infiniband/"; done
for f in "$src"/kernel-headers/rdma/*.h; do ln -s "$f" "$inc/rdma/"; done
ln -s "$src/kernel-headers/linux" "$inc/linux"
ln -s "$src/ccan" "$inc/ccan"
ln -s "$src/util" "$inc/util"
python3 "$src/buildlib/make_abi_structs.py" "$src/kernel-headers/rdma/ib_user_verbs.h" \
	"$inc/kernel-abi/ib_user_verbs.h"
pabi=$(git -C "$git_dir" show "$tag:CMakeLists.txt" |
	sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")/\1/p')
cat > "$inc/config.h" <<EOF
#define HAVE_STATEMENT_EXPR 1
#define HAVE_BUILTIN_TYPES_COMPATIBLE_P 1
#define HAVE_TYPEOF 1
#define HAVE_ISBLANK 1
#define HAVE_BUILTIN_CLZ 1
#define HAVE_BUILTIN_CLZL 1
#define STREAM_CLOEXEC "e"
#define RDMA_CDEV_DIR "/dev/infiniband"
#define IBVERBS_PABI_VERSION $pabi
#define HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1
#define SIZEOF_LONG 8
#define VERBS_IOCTL_ONLY 0
#define VERBS_WRITE_ONLY 0
EOF

ops_members=$(sed -n '/^struct verbs_context_ops {/,/^};/p' "$src/libibverbs/driver.h" |
	grep -o '(\*[A-Za-z0-9_]*)' | tr -d '(*)')

{
	cat <<'EOF'
#include <stdio.h>
#include <stddef.h>
#include <infiniband/driver.h>
#define S(t) printf("SROCE_ABI_SIZE(%s, %zu, %zu)\n", #t, sizeof(struct t), _Alignof(struct t));
#define F(t, f) printf("SROCE_ABI_FIELD(%s, %s, %zu, %zu)\n", #t, #f, offsetof(struct t, f), sizeof(((struct t *)0)->f));
#define C(c) printf("SROCE_ABI_CONST(%s, %lld)\n", #c, (long long)(c));
int main(void)
{
EOF
	echo 'S(list_node) F(list_node, next) F(list_node, prev)'
	echo 'S(verbs_match_ent)'
	for f in driver_data u u.modalias u.driver_id vendor device kind; do echo "F(verbs_match_ent, $f)"; done
	echo 'S(verbs_sysfs_dev)'
	for f in entry provider_data match flags sysfs_name sysfs_cdev ibdev_name ibdev_path \
		modalias node_guid driver_id node_type ibdev_idx num_ports abi_ver time_created; do
		echo "F(verbs_sysfs_dev, $f)"
	done
	echo 'S(verbs_device_ops)'
	for f in name match_min_abi_version match_max_abi_version match_table static_providers \
		match_device alloc_context import_context alloc_device uninit_device; do
		echo "F(verbs_device_ops, $f)"
	done
	echo 'S(verbs_device)'
	for f in device ops refcount entry sysfs core_support; do echo "F(verbs_device, $f)"; done
	echo 'S(verbs_context_ops)'
	for f in $ops_members; do echo "F(verbs_context_ops, $f)"; done
	echo 'S(ibv_get_context) F(ibv_get_context, hdr) F(ibv_get_context, response)'
	echo 'S(ibv_query_port) F(ibv_query_port, hdr) F(ibv_query_port, response)'
	echo 'F(ibv_query_port, port_num) F(ibv_query_port, reserved)'
	echo 'S(ibv_alloc_pd) F(ibv_alloc_pd, hdr) F(ibv_alloc_pd, response)'
	echo 'S(ib_uverbs_get_context_resp) S(ib_uverbs_alloc_pd_resp)'
	echo 'S(ib_uverbs_query_port_resp) S(ib_uverbs_query_device_resp)'
	echo 'S(verbs_context)'
	# driver.h verbs objects
	echo 'S(verbs_xrcd) F(verbs_xrcd, xrcd) F(verbs_xrcd, comp_mask) F(verbs_xrcd, handle)'
	echo 'S(verbs_srq)'
	for f in srq srq_type xrcd cq srq_num; do echo "F(verbs_srq, $f)"; done
	echo 'S(verbs_mr) F(verbs_mr, ibv_mr) F(verbs_mr, mr_type) F(verbs_mr, access)'
	echo 'S(verbs_qp) F(verbs_qp, qp) F(verbs_qp, qp_ex) F(verbs_qp, comp_mask) F(verbs_qp, xrcd)'
	echo 'S(verbs_cq) F(verbs_cq, cq) F(verbs_cq, cq_ex)'
	# kern-abi.h command buffers: "struct field field ..."
	while read -r t fields; do
		echo "S($t)"
		for f in $fields; do echo "F($t, $f)"; done
	done <<'CMDS'
ibv_alloc_mw hdr response pd_handle mw_type reserved
ibv_create_cq hdr response user_handle cqe comp_vector comp_channel reserved
ibv_resize_cq hdr response cq_handle cqe
ibv_reg_mr hdr response start length hca_va pd_handle access_flags
ibv_rereg_mr hdr response mr_handle flags start length hca_va pd_handle access_flags
ibv_create_qp hdr response user_handle pd_handle send_cq_handle recv_cq_handle srq_handle max_send_wr max_recv_wr max_send_sge max_recv_sge max_inline_data sq_sig_all qp_type is_srq reserved
ibv_query_qp hdr response qp_handle attr_mask
ibv_modify_qp hdr dest alt_dest qp_handle attr_mask qkey rq_psn sq_psn dest_qp_num qp_access_flags pkey_index alt_pkey_index qp_state cur_qp_state path_mtu path_mig_state en_sqd_async_notify max_rd_atomic max_dest_rd_atomic min_rnr_timer port_num timeout retry_cnt rnr_retry alt_port_num alt_timeout reserved
ibv_create_srq hdr response user_handle pd_handle max_wr max_sge srq_limit
ibv_create_xsrq hdr response user_handle srq_type pd_handle max_wr max_sge srq_limit max_num_tags xrcd_handle cq_handle
ibv_modify_srq hdr srq_handle attr_mask max_wr srq_limit
ibv_query_srq hdr response srq_handle reserved
ibv_post_send hdr response qp_handle wr_count sge_count wqe_size
ibv_post_recv hdr response qp_handle wr_count sge_count wqe_size
ibv_post_srq_recv hdr response srq_handle wr_count sge_count wqe_size
ex_hdr hdr ex_hdr
ibv_create_cq_ex hdr user_handle cqe comp_vector comp_channel comp_mask flags reserved
ibv_create_qp_ex hdr user_handle pd_handle send_cq_handle recv_cq_handle srq_handle max_send_wr max_recv_wr max_send_sge max_recv_sge max_inline_data sq_sig_all qp_type is_srq reserved comp_mask create_flags rwq_ind_tbl_handle source_qpn
ibv_modify_qp_ex hdr base rate_limit reserved
CMDS
	# kernel responses the provider hands to the helpers (the installed
	# linux-libc-dev header against rdma-core's copy)
	for t in ib_uverbs_create_cq_resp ib_uverbs_ex_create_cq_resp ib_uverbs_resize_cq_resp \
		ib_uverbs_reg_mr_resp ib_uverbs_rereg_mr_resp ib_uverbs_alloc_mw_resp \
		ib_uverbs_create_qp_resp ib_uverbs_ex_create_qp_resp ib_uverbs_ex_modify_qp_resp \
		ib_uverbs_create_srq_resp ib_uverbs_create_ah_resp ib_uverbs_post_send_resp \
		ib_uverbs_post_recv_resp ib_uverbs_post_srq_recv_resp ib_uverbs_qp_dest \
		ib_uverbs_modify_qp ib_uverbs_destroy_cq_resp ib_uverbs_send_wr ib_uverbs_recv_wr; do
		echo "S($t)"
	done
	for c in VERBS_LOG_LEVEL_NONE VERBS_LOG_ERR VERBS_LOG_WARN VERBS_LOG_INFO VERBS_LOG_DEBUG \
		VERBS_MATCH_SENTINEL VERBS_MATCH_PCI VERBS_MATCH_MODALIAS VERBS_MATCH_DRIVER_ID \
		VSYSFS_READ_MODALIAS VSYSFS_READ_NODE_GUID IBVERBS_PABI_VERSION RDMA_DRIVER_UNKNOWN \
		VERBS_XRCD_HANDLE VERBS_XRCD_RESERVED CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX \
		VERBS_QP_XRCD VERBS_QP_EX IBV_MR_TYPE_MR IBV_MR_TYPE_NULL_MR \
		IBV_MR_TYPE_IMPORTED_MR IBV_MR_TYPE_DMABUF_MR; do
		echo "C($c)"
	done
	echo 'return 0; }'
} > "$tmp/ref.c"

# Every function provider/abi34.h declares.  -aux-info prints each
# prototype the way the compiler understood it (parameter names dropped,
# spacing normalised); test_abi34.cpp compares them with the same output
# for abi34.h, so a wrong parameter type fails there too.
protos='verbs_register_driver_34 __verbs_log _verbs_init_and_alloc_context
	verbs_uninit_context verbs_set_ops verbs_init_cq
	ibv_cmd_get_context ibv_cmd_query_device_any ibv_cmd_query_port
	ibv_cmd_alloc_pd ibv_cmd_dealloc_pd
	ibv_cmd_reg_mr ibv_cmd_rereg_mr ibv_cmd_dereg_mr ibv_cmd_alloc_mw ibv_cmd_dealloc_mw
	ibv_cmd_create_cq ibv_cmd_create_cq_ex ibv_cmd_poll_cq ibv_cmd_req_notify_cq
	ibv_cmd_resize_cq ibv_cmd_destroy_cq
	ibv_cmd_create_srq ibv_cmd_create_srq_ex ibv_cmd_modify_srq ibv_cmd_query_srq
	ibv_cmd_destroy_srq
	ibv_cmd_create_qp ibv_cmd_create_qp_ex ibv_cmd_create_qp_ex2 ibv_cmd_query_qp
	ibv_cmd_modify_qp ibv_cmd_modify_qp_ex ibv_cmd_destroy_qp
	ibv_cmd_post_send ibv_cmd_post_recv ibv_cmd_post_srq_recv
	ibv_cmd_attach_mcast ibv_cmd_detach_mcast ibv_cmd_create_ah ibv_cmd_destroy_ah'

"$CC" -std=gnu11 -I"$inc" -include config.h -aux-info "$tmp/aux.txt" -o "$tmp/ref" "$tmp/ref.c"
echo "/* Generated by tests/unit/gen_abi34_reference.sh from rdma-core $tag"
echo " * ($(git -C "$git_dir" rev-parse "$tag^{commit}")), $("$CC" --version | head -n1),"
echo " * $(uname -m).  Do not edit. */"
"$tmp/ref"
for fn in $protos; do
	line=$(sed -n "s@^/\* [^ ]*:NC \*/ \(extern .*[ *]$fn (.*);\)\$@\1@p" "$tmp/aux.txt")
	if [ -z "$line" ] || [ "$(printf '%s\n' "$line" | wc -l)" -ne 1 ]; then
		echo "gen_abi34_reference.sh: no single prototype of $fn in rdma-core $tag" >&2
		exit 1
	fi
	printf 'SROCE_ABI_PROTO(%s, "%s")\n' "$fn" "$line"
done
