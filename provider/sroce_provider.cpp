// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_provider.cpp - registration with libibverbs, device matching,
// device and context lifetime.

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sroce.hpp"

namespace sroce {

// ---- device matching -------------------------------------------------------

match_result match_sysfs(const char *ibdev_path, uint32_t driver_id,
			 uint32_t min_abi, uint32_t max_abi, uint32_t *abi_out)
{
	*abi_out = 0;

	// The kernel module registers with RDMA_DRIVER_UNKNOWN; a device with
	// a driver id belongs to the provider that owns that id.
	if (driver_id != RDMA_DRIVER_UNKNOWN)
		return match_result::foreign_driver;

	char path[IBV_SYSFS_PATH_MAX + sizeof("/" SROCE_SYSFS_ABI_ATTR)];
	int n = snprintf(path, sizeof(path), "%s/%s", ibdev_path,
			 SROCE_SYSFS_ABI_ATTR);
	if (n < 0 || static_cast<size_t>(n) >= sizeof(path))
		return match_result::no_attr;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return match_result::no_attr;
	char buf[32];
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return match_result::bad_value;
	buf[len] = '\0';

	// Strictly "<decimal>" with an optional trailing newline.
	uint64_t v = 0;
	ssize_t i = 0;
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		v = v * 10 + static_cast<uint64_t>(buf[i] - '0');
		if (v > UINT32_MAX)
			return match_result::bad_value;
	}
	if (i == 0 || (i < len && !(buf[i] == '\n' && i + 1 == len)))
		return match_result::bad_value;

	*abi_out = static_cast<uint32_t>(v);
	if (v < min_abi || v > max_abi)
		return match_result::unsupported;
	return match_result::claimed;
}

int rdma_core_release_from_path(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;

	// libibverbs.so.1.<minor>.<release>.<patch>: the minor grows with the
	// public API (14 in rdma-core 44, 18 in 65), the release is rdma-core's.
	static const char prefix[] = "libibverbs.so.1.";
	if (strncmp(base, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	const char *p = base + sizeof(prefix) - 1;
	int digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
		;
	if (digits == 0 || *p != '.')
		return -1;
	p++;
	int release = 0;
	digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
		release = release * 10 + (*p - '0');
	if (digits == 0 || *p != '.')
		return -1;
	return release;
}

// ---- device ops --------------------------------------------------------------

static bool sroce_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	uint32_t abi = 0;

	switch (match_sysfs(sysfs_dev->ibdev_path, sysfs_dev->driver_id,
			    kAbiVersion, kAbiVersion, &abi)) {
	case match_result::claimed:
		return true;
	case match_result::bad_value:
		fprintf(stderr,
			"sroce: Warning: %s/" SROCE_SYSFS_ABI_ATTR
			" is not a decimal ABI version; device not claimed\n",
			sysfs_dev->ibdev_path);
		return false;
	case match_result::unsupported:
		fprintf(stderr,
			"sroce: Warning: device %s speaks sroce ABI %u, this provider supports %u to %u; device not claimed\n",
			sysfs_dev->ibdev_name, abi, kAbiVersion, kAbiVersion);
		return false;
	case match_result::no_attr:
	case match_result::foreign_driver:
		break;
	}
	return false;
}

static struct verbs_device *sroce_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	auto *dev = static_cast<device *>(calloc(1, sizeof(device)));
	if (!dev)
		return nullptr;
	dev->abi_version = sysfs_dev->abi_ver;
	return &dev->ibv_dev;
}

static void sroce_uninit_device(struct verbs_device *vdev)
{
	free(to_sdev(&vdev->device));
}

// ---- context -----------------------------------------------------------------

static void sroce_free_context(struct ibv_context *ibctx)
{
	context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

// Everything not set stays NULL and libibverbs answers for it itself
// (EOPNOTSUPP / ENOSYS).  Built in a constexpr function so the table is
// constant-initialized and still names only what we implement.  The XRC
// entry points are offered only where the kernel has XRC
// (SROCE_CTX_F_XRC); create_qp_ex and create_srq_ex refuse the XRC types
// themselves otherwise.
static constexpr struct verbs_context_ops make_ctx_ops(bool xrc)
{
	struct verbs_context_ops ops = {};

	ops.alloc_mw = alloc_mw;
	ops.alloc_pd = alloc_pd;
	// Multicast is all kernel work (sroce_mcast.c): the plain commands.
	ops.advise_mr = advise_mr;
	ops.attach_mcast = ibv_cmd_attach_mcast;
	ops.bind_mw = bind_mw;
	ops.create_ah = create_ah;
	ops.create_cq = create_cq;
	ops.create_cq_ex = create_cq_ex;
	ops.create_qp = create_qp;
	ops.create_qp_ex = create_qp_ex;
	ops.create_srq = create_srq;
	ops.create_srq_ex = create_srq_ex;
	ops.dealloc_mw = dealloc_mw;
	ops.dealloc_pd = dealloc_pd;
	ops.dereg_mr = dereg_mr;
	ops.destroy_ah = destroy_ah;
	ops.destroy_cq = destroy_cq;
	ops.destroy_qp = destroy_qp;
	ops.destroy_srq = destroy_srq;
	ops.detach_mcast = ibv_cmd_detach_mcast;
	ops.modify_qp = modify_qp;
	ops.modify_srq = modify_srq;
	ops.post_recv = post_recv;
	ops.post_send = post_send;
	ops.post_srq_recv = post_srq_recv;
	ops.query_qp = query_qp;
	ops.query_srq = query_srq;
	ops.free_context = sroce_free_context;
	ops.poll_cq = poll_cq;
	ops.query_device_ex = query_device_ex;
	ops.query_port = query_port;
	ops.reg_dmabuf_mr = reg_dmabuf_mr;
	ops.reg_mr = reg_mr;
	ops.req_notify_cq = req_notify_cq;
	ops.rereg_mr = rereg_mr;
	ops.resize_cq = resize_cq;
	if (xrc) {
		ops.close_xrcd = close_xrcd;
		ops.get_srq_num = get_srq_num;
		ops.open_qp = open_qp;
		ops.open_xrcd = open_xrcd;
	}
	return ops;
}
static constinit const struct verbs_context_ops sroce_ctx_ops = make_ctx_ops(false);
static constinit const struct verbs_context_ops sroce_ctx_ops_xrc = make_ctx_ops(true);

static struct verbs_context *sroce_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd, void *)
{
	context *ctx = nullptr;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return nullptr;

	struct ibv_get_context cmd = {};
	get_context_resp resp = {};
	int ret = sroce_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				      resp.core(), sizeof(resp));
	if (ret) {
		__verbs_log(&ctx->ibv_ctx, VERBS_LOG_ERR,
			    "sroce: %s: get_context failed: %s\n", ibdev->name,
			    strerror(ret));
		goto err;
	}

	// A kernel that wrote no (or a different) driver response leaves 0.
	if (resp.drv.abi_version != kAbiVersion) {
		fprintf(stderr,
			"sroce: %s: kernel context ABI %u, provider expects %u\n",
			ibdev->name, resp.drv.abi_version, kAbiVersion);
		ret = EPROTO;
		goto err;
	}

	ctx->abi_version = resp.drv.abi_version;
	ctx->flags = resp.drv.flags;
	ctx->max_inline_data = resp.drv.max_inline_data;

	verbs_set_ops(&ctx->ibv_ctx, (ctx->flags & SROCE_CTX_F_XRC) ? &sroce_ctx_ops_xrc
								   : &sroce_ctx_ops);
	return &ctx->ibv_ctx;

err:
	// Closes cmd_fd, which releases the kernel ucontext if one was made.
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return nullptr;
}

// libibverbs walks every provider's match table, without a NULL check,
// when it meets a device with a known driver_id (rxe0, mlx5_0, ...): the
// table must exist even though it is empty.
static const struct verbs_match_ent sroce_match_table[] = {
	{},	// VERBS_MATCH_SENTINEL
};

static const struct verbs_device_ops sroce_dev_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_table = sroce_match_table,	// empty: sroce_match_device decides
	.static_providers = nullptr,
	.match_device = sroce_match_device,
	.alloc_context = sroce_alloc_context,
	.import_context = nullptr,
	.alloc_device = sroce_alloc_device,
	.uninit_device = sroce_uninit_device,
};

// ---- registration --------------------------------------------------------------

// One private ABI name covers several releases whose private structs
// differ (IBVERBS_PRIVATE_34: 34..56, IBVERBS_PRIVATE_59: 59..63; see
// abi/private_abi.h), so the symbol version alone cannot stop us from
// being loaded into an incompatible libibverbs.  If the library we are
// bound to names its release and it is not the one we were built for,
// stay unregistered: libibverbs then reports the device as having no
// driver instead of calling through mismatched function tables.  (A
// libibverbs of another private ABI name never gets this far: the dynamic
// loader refuses our IBVERBS_PRIVATE_<N> imports, and libibverbs prints
// "couldn't load driver".)
static bool libibverbs_release_ok()
{
	Dl_info info = {};
	if (!dladdr(reinterpret_cast<void *>(&SROCE_REGISTER_DRIVER), &info) ||
	    !info.dli_fname)
		return true;	// cannot tell; the symbol version matched

	char *real = realpath(info.dli_fname, nullptr);
	int release = rdma_core_release_from_path(real ? real : info.dli_fname);
	if (release >= 0 && release != SROCE_RDMA_CORE) {
		fprintf(stderr,
			"sroce: libibverbs %s is rdma-core %d; this provider is built for rdma-core %d (" SROCE_IBVERBS_PABI_NAME " layout of that release), not registering\n",
			real ? real : info.dli_fname, release, SROCE_RDMA_CORE);
		free(real);
		return false;
	}
	free(real);
	return true;
}

__attribute__((constructor)) static void sroce_register_driver()
{
	if (libibverbs_release_ok())
		SROCE_REGISTER_DRIVER(&sroce_dev_ops);
}

} // namespace sroce
