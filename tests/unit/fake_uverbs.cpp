// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// fake_uverbs.cpp - LD_PRELOAD stand-in for the sroce kernel module's
// uverbs character device, for tests on hosts that cannot load the module.
//
// With SYSFS_PATH pointing at a fake sysfs tree (class/infiniband_verbs/...,
// class/infiniband/<dev>/...), this library makes libibverbs 44 run its
// real code paths against it:
//   - socket(AF_NETLINK, ..., NETLINK_RDMA) fails, so libibverbs falls back
//     to sysfs for device discovery (as on kernels without RDMA netlink);
//   - stat()/open()/fstat() of /dev/infiniband/uverbsN succeed with a
//     character device numbered 231:(192+N), matching the fake "dev" files;
//   - ioctl() on that fd fails with ENOTTY (no ioctl() uverbs), so every
//     command goes through the write() ABI, which this file implements for
//     GET_CONTEXT, QUERY_DEVICE, EX_QUERY_DEVICE, QUERY_PORT, ALLOC_PD and
//     DEALLOC_PD like the kernel does (core structs from <rdma/
//     ib_user_verbs.h>, driver udata from <sroce-abi.h>).
//
// Each command is logged to $FAKE_UVERBS_LOG, e.g.
//   GET_CONTEXT in=16 out=24 udata_in=0 udata_out=16 ret=0
// so tests can check the exact udata sizes the provider sends.
//
// Knobs (environment): FAKE_SROCE_CTX_ABI (abi_version in the context
// response, default SROCE_UVERBS_ABI_VERSION), FAKE_PORT_STATE (default 4,
// ACTIVE), FAKE_ACTIVE_MTU (enum, default 3 = 1024), FAKE_GID_TBL_LEN
// (default 4), FAKE_PD_LIMIT (ALLOC_PD fails with ENOMEM beyond this many
// live PDs, default 1000000).
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/netlink.h>
#include <fcntl.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <sroce-abi.h>

namespace {

constexpr const char kDevPrefix[] = "/dev/infiniband/uverbs";
constexpr unsigned kUverbsMajor = 231;
constexpr unsigned kUverbsMinorBase = 192;
constexpr int kMaxFd = 1024;

struct fake_file {
	bool open;
	int devnum;
	bool has_context;
	unsigned live_pds;
	unsigned next_handle;
	unsigned char pd_live[1024];	// by handle
};

fake_file g_files[kMaxFd];

template <class F>
F real(const char *name)
{
	return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, nullptr, 0) : def;
}

__attribute__((format(printf, 1, 2))) void log_line(const char *fmt, ...)
{
	const char *path = getenv("FAKE_UVERBS_LOG");
	if (!path || !*path)
		return;
	static auto real_open = real<int (*)(const char *, int, ...)>("open");
	int fd = real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n > static_cast<int>(sizeof(buf)) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	static auto real_write = real<ssize_t (*)(int, const void *, size_t)>("write");
	ssize_t w = real_write(fd, buf, n);
	(void)w;
	static auto real_close = real<int (*)(int)>("close");
	real_close(fd);
}

// "/dev/infiniband/uverbsN" -> N, else -1.
int fake_devnum(const char *path)
{
	if (!path || strncmp(path, kDevPrefix, sizeof(kDevPrefix) - 1) != 0)
		return -1;
	const char *p = path + sizeof(kDevPrefix) - 1;
	if (*p < '0' || *p > '9')
		return -1;
	int n = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		n = n * 10 + (*p - '0');
	return *p ? -1 : n;
}

fake_file *fake_fd(int fd)
{
	if (fd < 0 || fd >= kMaxFd || !g_files[fd].open)
		return nullptr;
	return &g_files[fd];
}

void fill_chr_stat(struct stat *st, int devnum)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_rdev = makedev(kUverbsMajor, kUverbsMinorBase + devnum);
	st->st_nlink = 1;
	st->st_blksize = 4096;
}

// Copy a response the way ib_copy_to_udata(min(len, size)) does.
void put(__u64 user_ptr, const void *src, size_t src_len, size_t room)
{
	if (user_ptr && room)
		memcpy(reinterpret_cast<void *>(user_ptr), src,
		       src_len < room ? src_len : room);
}

struct cmd_sizes {
	size_t in, out;		// total request / response bytes (write())
	size_t core_in, core_out;
};

int do_get_context(fake_file *f, const void *req, const cmd_sizes &sz)
{
	if (f->has_context)
		return EINVAL;	// one ucontext per open file
	auto *cmd = static_cast<const ib_uverbs_get_context *>(req);
	ib_uverbs_get_context_resp core = {};
	sroce_alloc_ucontext_resp drv = {};
	int afd = eventfd(0, EFD_CLOEXEC);
	if (afd < 0)
		return errno;
	core.async_fd = static_cast<__u32>(afd);
	core.num_comp_vectors = 1;
	drv.abi_version = static_cast<__u32>(
		env_long("FAKE_SROCE_CTX_ABI", SROCE_UVERBS_ABI_VERSION));
	drv.flags = 0;
	drv.max_inline_data = 64;
	// core part, then the driver part limited to the udata length
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	f->has_context = true;
	return 0;
}

void fill_device_resp(ib_uverbs_query_device_resp *r)
{
	r->fw_ver = (1ull << 32) | (2ull << 16) | 3;
	r->node_guid = htobe64(0x02000000000000abull);
	r->sys_image_guid = r->node_guid;
	r->max_mr_size = ~0ull;
	r->page_size_cap = 0xfffff000;
	r->vendor_id = 0xffffff;
	r->vendor_part_id = 1;
	r->hw_ver = 1;
	r->max_qp = 1024;
	r->max_qp_wr = 4096;
	r->max_sge = 16;
	r->max_sge_rd = 16;
	r->max_cq = 1024;
	r->max_cqe = 65536;
	r->max_mr = 4096;
	r->max_pd = 1024;
	r->max_qp_rd_atom = 16;
	r->max_qp_init_rd_atom = 16;
	r->max_ah = 1024;
	r->max_srq = 0;
	r->max_pkeys = 1;
	r->local_ca_ack_delay = 15;
	r->phys_port_cnt = 1;
}

int do_query_device(const void *req, const cmd_sizes &sz)
{
	auto *cmd = static_cast<const ib_uverbs_query_device *>(req);
	ib_uverbs_query_device_resp r = {};
	fill_device_resp(&r);
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

int do_ex_query_device(__u64 response, const cmd_sizes &sz)
{
	ib_uverbs_ex_query_device_resp r = {};
	fill_device_resp(&r.base);
	size_t n = sz.core_out < sizeof(r) ? sz.core_out : sizeof(r);
	r.response_length = static_cast<__u32>(n);
	put(response, &r, sizeof(r), n);
	return 0;
}

int do_query_port(const void *req, const cmd_sizes &sz)
{
	auto *cmd = static_cast<const ib_uverbs_query_port *>(req);
	if (cmd->port_num != 1)
		return EINVAL;
	ib_uverbs_query_port_resp r = {};
	r.state = static_cast<__u8>(env_long("FAKE_PORT_STATE", 4));
	r.max_mtu = 5;
	r.active_mtu = static_cast<__u8>(env_long("FAKE_ACTIVE_MTU", 3));
	r.gid_tbl_len = static_cast<__u32>(env_long("FAKE_GID_TBL_LEN", 4));
	r.port_cap_flags = (1u << 16) | (1u << 26);	// CM_SUP | IP_BASED_GIDS
	r.max_msg_sz = 1u << 31;
	r.pkey_tbl_len = 1;
	r.active_width = 1;
	r.active_speed = 32;
	r.phys_state = r.state == 4 ? 5 : 3;
	r.link_layer = 2;	// IB_LINK_LAYER_ETHERNET
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

int do_alloc_pd(fake_file *f, const void *req, const cmd_sizes &sz)
{
	auto *cmd = static_cast<const ib_uverbs_alloc_pd *>(req);
	if (!f->has_context)
		return EINVAL;
	if (f->live_pds >= env_long("FAKE_PD_LIMIT", 1000000))
		return ENOMEM;
	unsigned h = 0;
	for (unsigned i = 0; i < sizeof(f->pd_live); i++) {
		unsigned c = (f->next_handle + i) % sizeof(f->pd_live);
		if (!f->pd_live[c]) {
			h = c;
			break;
		}
	}
	if (f->pd_live[h])
		return ENOMEM;
	f->pd_live[h] = 1;
	f->live_pds++;
	f->next_handle = h + 1;
	ib_uverbs_alloc_pd_resp core = {};
	core.pd_handle = h;
	sroce_alloc_pd_resp drv = {};
	drv.pdn = 0x100 + h;
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	return 0;
}

int do_dealloc_pd(fake_file *f, const void *req)
{
	auto *cmd = static_cast<const ib_uverbs_dealloc_pd *>(req);
	if (cmd->pd_handle >= sizeof(f->pd_live) || !f->pd_live[cmd->pd_handle])
		return EINVAL;
	f->pd_live[cmd->pd_handle] = 0;
	f->live_pds--;
	return 0;
}

// One write() on the fake cdev; returns 0 or a positive errno.
int handle_write(fake_file *f, const void *buf, size_t len)
{
	if (len < sizeof(ib_uverbs_cmd_hdr))
		return EINVAL;
	auto *hdr = static_cast<const ib_uverbs_cmd_hdr *>(buf);
	const char *p = static_cast<const char *>(buf);
	cmd_sizes sz = {};
	int ret;

	if (hdr->command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		auto *ex = reinterpret_cast<const ib_uverbs_ex_cmd_hdr *>(p + sizeof(*hdr));
		size_t hlen = sizeof(*hdr) + sizeof(*ex);
		if (len < hlen)
			return EINVAL;
		sz.core_in = hdr->in_words * 8u;
		sz.core_out = hdr->out_words * 8u;
		sz.in = sz.core_in + ex->provider_in_words * 8u;
		sz.out = sz.core_out + ex->provider_out_words * 8u;
		if (len != hlen + sz.in)
			return EINVAL;
		unsigned cmd = hdr->command & ~IB_USER_VERBS_CMD_FLAG_EXTENDED;
		if (cmd == IB_USER_VERBS_EX_CMD_QUERY_DEVICE &&
		    sz.core_in >= sizeof(ib_uverbs_ex_query_device)) {
			ret = do_ex_query_device(ex->response, sz);
			log_line("EX_QUERY_DEVICE in=%zu out=%zu udata_in=%zu udata_out=%zu ret=%d",
				 sz.in, sz.out, sz.in - sz.core_in, sz.out - sz.core_out, ret);
		} else {
			ret = EOPNOTSUPP;
			log_line("EX_CMD_%u ret=%d", cmd, ret);
		}
		return ret;
	}

	if (len != hdr->in_words * 4u)
		return EINVAL;
	sz.in = len - sizeof(*hdr);
	sz.out = hdr->out_words * 4u;
	const void *req = p + sizeof(*hdr);
	const char *name;
	switch (hdr->command) {
	case IB_USER_VERBS_CMD_GET_CONTEXT:
		name = "GET_CONTEXT";
		sz.core_in = sizeof(ib_uverbs_get_context);
		sz.core_out = sizeof(ib_uverbs_get_context_resp);
		break;
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
		name = "QUERY_DEVICE";
		sz.core_in = sizeof(ib_uverbs_query_device);
		sz.core_out = sizeof(ib_uverbs_query_device_resp);
		break;
	case IB_USER_VERBS_CMD_QUERY_PORT:
		name = "QUERY_PORT";
		sz.core_in = sizeof(ib_uverbs_query_port);
		sz.core_out = sizeof(ib_uverbs_query_port_resp);
		break;
	case IB_USER_VERBS_CMD_ALLOC_PD:
		name = "ALLOC_PD";
		sz.core_in = sizeof(ib_uverbs_alloc_pd);
		sz.core_out = sizeof(ib_uverbs_alloc_pd_resp);
		break;
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		name = "DEALLOC_PD";
		sz.core_in = sizeof(ib_uverbs_dealloc_pd);
		sz.core_out = 0;
		break;
	default:
		log_line("CMD_%u ret=%d", hdr->command, EOPNOTSUPP);
		return EOPNOTSUPP;
	}
	if (sz.in < sz.core_in)
		ret = EINVAL;
	else if (sz.out < sz.core_out)
		ret = ENOSPC;
	else if (hdr->command != IB_USER_VERBS_CMD_GET_CONTEXT && !f->has_context)
		ret = EINVAL;
	else {
		switch (hdr->command) {
		case IB_USER_VERBS_CMD_GET_CONTEXT:
			ret = do_get_context(f, req, sz);
			break;
		case IB_USER_VERBS_CMD_QUERY_DEVICE:
			ret = do_query_device(req, sz);
			break;
		case IB_USER_VERBS_CMD_QUERY_PORT:
			ret = do_query_port(req, sz);
			break;
		case IB_USER_VERBS_CMD_ALLOC_PD:
			ret = do_alloc_pd(f, req, sz);
			break;
		default:
			ret = do_dealloc_pd(f, req);
			break;
		}
	}
	// PD churn would flood the log: only the first few of each.
	static unsigned logged_pd;
	bool pd_cmd = hdr->command == IB_USER_VERBS_CMD_ALLOC_PD ||
		      hdr->command == IB_USER_VERBS_CMD_DEALLOC_PD;
	if (!pd_cmd || ret || logged_pd++ < 4)
		log_line("%s in=%zu out=%zu udata_in=%zu udata_out=%zu ret=%d", name,
			 sz.in, sz.out, sz.in - sz.core_in, sz.out - sz.core_out, ret);
	return ret;
}

int open_fake(int devnum, int flags)
{
	static auto real_open = real<int (*)(const char *, int, ...)>("open");
	int fd = real_open("/dev/null", O_RDWR | (flags & O_CLOEXEC));
	if (fd < 0)
		return fd;
	if (fd >= kMaxFd) {
		static auto real_close = real<int (*)(int)>("close");
		real_close(fd);
		errno = EMFILE;
		return -1;
	}
	g_files[fd] = fake_file{};
	g_files[fd].open = true;
	g_files[fd].devnum = devnum;
	g_files[fd].next_handle = 1;
	log_line("OPEN uverbs%d", devnum);
	return fd;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int socket(int domain, int type, int protocol)
{
	static auto real_socket = real<int (*)(int, int, int)>("socket");
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return real_socket(domain, type, protocol);
}

__attribute__((visibility("default"))) int stat(const char *path, struct stat *st)
{
	static auto real_stat = real<int (*)(const char *, struct stat *)>("stat");
	int n = fake_devnum(path);
	if (n >= 0) {
		fill_chr_stat(st, n);
		return 0;
	}
	return real_stat(path, st);
}

__attribute__((visibility("default"))) int fstat(int fd, struct stat *st)
{
	static auto real_fstat = real<int (*)(int, struct stat *)>("fstat");
	if (fake_file *f = fake_fd(fd)) {
		fill_chr_stat(st, f->devnum);
		return 0;
	}
	return real_fstat(fd, st);
}

__attribute__((visibility("default"))) int open(const char *path, int flags, ...)
{
	static auto real_open = real<int (*)(const char *, int, ...)>("open");
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	int n = fake_devnum(path);
	if (n >= 0)
		return open_fake(n, flags);
	return real_open(path, flags, mode);
}

__attribute__((visibility("default"))) int open64(const char *path, int flags, ...)
{
	static auto real_open64 = real<int (*)(const char *, int, ...)>("open64");
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	int n = fake_devnum(path);
	if (n >= 0)
		return open_fake(n, flags);
	return real_open64(path, flags, mode);
}

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...)
{
	static auto real_ioctl = real<int (*)(int, unsigned long, ...)>("ioctl");
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (fake_fd(fd)) {
		errno = ENOTTY;	// no ioctl() uverbs: libibverbs uses write()
		return -1;
	}
	return real_ioctl(fd, request, arg);
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void *buf, size_t len)
{
	static auto real_write = real<ssize_t (*)(int, const void *, size_t)>("write");
	if (fake_file *f = fake_fd(fd)) {
		int ret = handle_write(f, buf, len);
		if (ret) {
			errno = ret;
			return -1;
		}
		return static_cast<ssize_t>(len);
	}
	return real_write(fd, buf, len);
}

__attribute__((visibility("default"))) int close(int fd)
{
	static auto real_close = real<int (*)(int)>("close");
	if (fake_file *f = fake_fd(fd)) {
		log_line("CLOSE uverbs%d context=%d live_pds=%u", f->devnum,
			 f->has_context ? 1 : 0, f->live_pds);
		*f = fake_file{};
	}
	return real_close(fd);
}

} // extern "C"
