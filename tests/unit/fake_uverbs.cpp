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
//     GET_CONTEXT, QUERY_DEVICE, EX_QUERY_DEVICE, QUERY_PORT, ALLOC_PD,
//     DEALLOC_PD, CREATE_COMP_CHANNEL, CREATE_CQ, RESIZE_CQ, DESTROY_CQ,
//     REQ_NOTIFY_CQ, REG_MR, REREG_MR, DEREG_MR, CREATE_AH and DESTROY_AH
//     (ah_num = 0x1000 + handle), QUERY_QP, and XRC: OPEN_XRCD /
//     CLOSE_XRCD (domains shared through an inode, as ib_core does),
//     CREATE_XSRQ (ib_core's XRC SRQ number = 0x5000 + handle, the driver's
//     srqn = handle, so a test sees which one the provider gives out),
//     CREATE_QP of XRC_INI (SQ ring only) and XRC_TGT (in a domain, no
//     udata, no rings), OPEN_QP of a target QP by number, like kernel/sroce_*.c
//     and ib_core do (core structs from <rdma/ib_user_verbs.h>, driver
//     udata from <sroce-abi.h>, the kernel's errnos);
//   - mmap() of that fd at a ring's offset maps the CQ ring (a memfd the
//     fake keeps its own "kernel" mapping of), munmap() is tracked.
//
// Each command is logged to $FAKE_UVERBS_LOG, e.g.
//   GET_CONTEXT in=16 out=24 udata_in=0 udata_out=16 ret=0
//   REG_MR in=40 out=12 udata_in=0 udata_out=0 handle=1 start=0x... ret=0
// so tests can check the exact udata sizes and the fields the provider
// sends.
//
// A test running in the same process drives the kernel side through the
// extern "C" fake_uverbs_* functions at the end (find them with dlsym):
// produce CQEs, read a CQ's indices, corrupt its producer index, count
// live ring mappings.
//
// Knobs (environment, read at each command): FAKE_SROCE_CTX_ABI
// (abi_version in the context response, default SROCE_UVERBS_ABI_VERSION),
// FAKE_PORT_STATE (default 4, ACTIVE), FAKE_ACTIVE_MTU (enum, default 3 =
// 1024), FAKE_GID_TBL_LEN (default 4), FAKE_PD_LIMIT (ALLOC_PD fails with
// ENOMEM beyond this many live PDs, default 1000000), FAKE_CQ_START_INDEX
// (initial prod/cons of a new CQ ring, default 0), FAKE_CQ_BAD_RING
// ("entries", "stride", "length" or "offset": describe the ring wrongly in
// the create/resize response), FAKE_MMAP_FAIL (mmap of a ring fails with
// ENOMEM), FAKE_MODIFY_QP_ERRNO (MODIFY_QP fails with this errno and
// changes nothing), FAKE_SROCE_CTX_FLAGS (SROCE_CTX_F_* in the context
// response, default 0: no ATOMIC WRITE, FLUSH or XRC).
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/netlink.h>
#include <fcntl.h>
#include <unistd.h>

#include <mutex>

#include <rdma/ib_user_ioctl_verbs.h>
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
	unsigned live_cqs;
	unsigned live_mrs;
	uint64_t next_mmap_page;	// mmap offsets handed out, in pages
};

fake_file g_files[kMaxFd];

// The kernel's limits (kernel/sroce.h).
constexpr uint32_t kMaxCqe = (1u << 22) - 1;
constexpr unsigned kMaxCq = 256;	// handles 1..kMaxCq-1
constexpr unsigned kMaxMr = 4096;	// handles 1..kMaxMr-1
constexpr unsigned kMaxRings = 512;
constexpr unsigned kMaxUserMaps = 512;

// A ring the "kernel" allocated (rdma_user_mmap_entry + vmalloc_user).
struct fake_ring {
	bool live;		// still mappable at offset
	int owner_fd;
	uint64_t offset;
	size_t len;
	int memfd;		// the pages
	void *kmap;		// the kernel's view of them
};

struct fake_cq {
	bool live;
	int owner_fd;
	unsigned ring;		// index in g_rings
	uint32_t entries;
	uint32_t prod;		// the kernel's private producer index
	uint32_t cqn;
	unsigned arms, solicited_arms;
};

struct fake_mr {
	bool live;
	int owner_fd;
	uint32_t key;		// lkey == rkey
	uint32_t pd;
	uint64_t start, length, iova;
	uint32_t access;
};

// A mapping the provider made of a ring.
struct user_map {
	bool live;
	void *addr;
	size_t len;
	unsigned ring;
};

// A queue pair (sroce_create_qp): its rings, state and doorbell counts.
constexpr unsigned kMaxQp = 256;	// handles 1..kMaxQp-1
constexpr unsigned kMaxSrq = 64;	// handles 1..kMaxSrq-1
constexpr uint32_t kMaxQpWr = 1u << 14;	// SROCE_MAX_QP_WR
constexpr uint32_t kMaxQpSge = 32;	// SROCE_MAX_SGE
constexpr uint32_t kMaxInline = 256;	// SROCE_MAX_INLINE
constexpr uint32_t IB_QP_STATE_BIT = 1;	// IB_QP_STATE in attr_mask
constexpr uint32_t kQpsReset = 0, kQpsErr = 6;	// enum ib_qp_state
struct fake_qp {
	bool live;
	int owner_fd;
	unsigned sq_ring, rq_ring;	// only with has_sq / has_rq
	bool has_srq;
	bool has_sq;			// not an XRC target
	bool has_rq;			// no SRQ, not XRC
	uint32_t qp_type;		// enum ib_uverbs_qp_type
	unsigned domain;		// XRC target: its domain (g_domains)
	uint32_t sq_entries, sq_stride, rq_entries, rq_stride;
	uint32_t qpn;
	uint32_t state;			// enum ib_uverbs_qp_state value
	unsigned send_db, recv_db;	// POST_SEND / POST_RECV doorbells
};

struct fake_srq {
	bool live;
	int owner_fd;
	unsigned ring;
	uint32_t entries, stride, max_sge, limit;
	bool xrc;
	unsigned domain;		// XRC: its domain (g_domains)
};

// XRC domains: a handle (uobject, per file) names a domain, which several
// handles share when opened through one inode (ib_core's xrcd_tree).
constexpr unsigned kMaxXrcd = 64;	// handles 1..kMaxXrcd-1
constexpr unsigned kMaxDomain = 64;	// domains 1..kMaxDomain-1
constexpr uint32_t kXrcSrqnBase = 0x5000;
constexpr uint32_t kSrqtBasic = 0, kSrqtXrc = 1;	// enum ib_srq_type
struct fake_xrcd {
	bool live;
	int owner_fd;
	unsigned domain;
};
struct fake_domain {
	bool live;
	bool has_inode;
	dev_t dev;
	ino_t ino;
	unsigned handles;		// live fake_xrcd naming it
};

// An address handle (sroce_create_ah): UD send WQEs name it by ah_num.
constexpr unsigned kMaxAh = 64;		// handles 1..kMaxAh-1
constexpr uint32_t kAhNumBase = 0x1000;
struct fake_ah {
	bool live;
	int owner_fd;
	uint32_t pd;
};

std::mutex g_lock;	// the tables below, and every fake command
fake_ring g_rings[kMaxRings];
fake_cq g_cqs[kMaxCq];
fake_mr g_mrs[kMaxMr];
fake_qp g_qps[kMaxQp];
fake_srq g_srqs[kMaxSrq];
fake_ah g_ahs[kMaxAh];
fake_xrcd g_xrcds[kMaxXrcd];
fake_domain g_domains[kMaxDomain];
unsigned g_next_qpn = 16;
user_map g_maps[kMaxUserMaps];
unsigned g_key_gen;
unsigned g_next_cqn = 1;

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
	drv.flags = static_cast<__u32>(env_long("FAKE_SROCE_CTX_FLAGS", 0));
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
	r->max_cqe = kMaxCqe;
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

struct fake_mr;
bool pd_has_mrs(int fd, uint32_t pd);

int do_dealloc_pd(fake_file *f, int fd, const void *req)
{
	auto *cmd = static_cast<const ib_uverbs_dealloc_pd *>(req);
	if (cmd->pd_handle >= sizeof(f->pd_live) || !f->pd_live[cmd->pd_handle])
		return EINVAL;
	if (pd_has_mrs(fd, cmd->pd_handle))
		return EBUSY;	// ib_core: the PD is still in use
	f->pd_live[cmd->pd_handle] = 0;
	f->live_pds--;
	return 0;
}

bool pd_ok(fake_file *f, uint32_t handle)
{
	return handle < sizeof(f->pd_live) && f->pd_live[handle];
}

// ---- rings ---------------------------------------------------------------------

template <class T>
T load_acquire(T *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

template <class T>
void store_release(T *p, T v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

sroce_ring_hdr *ring_hdr(const fake_ring &r)
{
	return static_cast<sroce_ring_hdr *>(r.kmap);
}

sroce_cqe *cq_elem(const fake_cq &cq, uint32_t index)
{
	auto *data = static_cast<unsigned char *>(g_rings[cq.ring].kmap) +
		     SROCE_RING_DATA_OFFSET;
	return reinterpret_cast<sroce_cqe *>(
		data + static_cast<size_t>(index & (cq.entries - 1)) * SROCE_CQE_SIZE);
}

// A zeroed ring of entries CQEs (sroce_queue_init + map_user); -1 if none.
int ring_alloc(fake_file *f, int fd, uint32_t entries, uint32_t stride)
{
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const size_t len = (SROCE_RING_DATA_OFFSET + size_t{entries} * stride + page - 1) &
			   ~(page - 1);
	for (unsigned i = 0; i < kMaxRings; i++) {
		fake_ring &r = g_rings[i];
		if (r.live)
			continue;
		int mfd = memfd_create("fake-sroce-ring", MFD_CLOEXEC);
		if (mfd < 0)
			return -1;
		static auto real_mmap =
			real<void *(*)(void *, size_t, int, int, int, off_t)>("mmap");
		if (ftruncate(mfd, static_cast<off_t>(len)) != 0) {
			static auto real_close = real<int (*)(int)>("close");
			real_close(mfd);
			return -1;
		}
		void *k = real_mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		if (k == MAP_FAILED) {
			static auto real_close = real<int (*)(int)>("close");
			real_close(mfd);
			return -1;
		}
		r = fake_ring{};
		r.live = true;
		r.owner_fd = fd;
		r.offset = ++f->next_mmap_page * page;
		r.len = len;
		r.memfd = mfd;
		r.kmap = k;
		return static_cast<int>(i);
	}
	return -1;
}

// rdma_user_mmap_entry_remove: no new mappings; pages live on in the
// provider's mappings (the memfd is gone, the mapping keeps them).
void ring_free(unsigned i)
{
	fake_ring &r = g_rings[i];
	static auto real_munmap = real<int (*)(void *, size_t)>("munmap");
	static auto real_close = real<int (*)(int)>("close");
	if (r.kmap)
		real_munmap(r.kmap, r.len);
	if (r.memfd > 0)
		real_close(r.memfd);
	r = fake_ring{};
}

// Fill a response's ring description, spoiled as FAKE_CQ_BAD_RING asks.
void ring_info(const fake_ring &r, uint32_t entries, sroce_ring_info *info)
{
	info->mmap_offset = r.offset;
	info->mmap_length = r.len;
	info->entries = entries;
	info->stride = SROCE_CQE_SIZE;
	const char *bad = getenv("FAKE_CQ_BAD_RING");
	if (!bad)
		return;
	if (!strcmp(bad, "entries"))
		info->entries = entries + 1;		// not a power of two
	else if (!strcmp(bad, "stride"))
		info->stride = SROCE_CQE_SIZE / 2;	// smaller than a CQE
	else if (!strcmp(bad, "length"))
		info->mmap_length = SROCE_RING_DATA_OFFSET;	// no elements
	else if (!strcmp(bad, "offset"))
		info->mmap_offset = r.offset + 1;	// not page aligned
}

uint32_t round_up_pow2(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

// ---- completion queues ------------------------------------------------------------

fake_cq *cq_lookup(int fd, uint32_t handle)
{
	if (handle == 0 || handle >= kMaxCq || !g_cqs[handle].live ||
	    g_cqs[handle].owner_fd != fd)
		return nullptr;
	return &g_cqs[handle];
}

int do_create_comp_channel(const void *req, const cmd_sizes &sz, char *detail,
			   size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_comp_channel *>(req);
	int cfd = eventfd(0, EFD_CLOEXEC);
	if (cfd < 0)
		return errno;
	ib_uverbs_create_comp_channel_resp r = {};
	r.fd = static_cast<__u32>(cfd);
	put(cmd->response, &r, sizeof(r), sz.out);
	snprintf(detail, dlen, " fd=%d", cfd);
	return 0;
}

int do_create_cq(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		 char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_cq *>(req);
	snprintf(detail, dlen, " cqe=%u comp_vector=%u comp_channel=%d", cmd->cqe,
		 cmd->comp_vector, cmd->comp_channel);
	// ib_core, then sroce_create_cq()
	if (cmd->comp_vector >= 1)
		return EINVAL;
	if (cmd->cqe < 1 || cmd->cqe > kMaxCqe)
		return EINVAL;
	if (sz.out - sz.core_out < sizeof(sroce_create_cq_resp))
		return EINVAL;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxCq; i++)
		if (!g_cqs[i].live) {
			h = i;
			break;
		}
	if (!h)
		return ENOMEM;
	const uint32_t entries = round_up_pow2(cmd->cqe);
	int ri = ring_alloc(f, fd, entries, SROCE_CQE_SIZE);
	if (ri < 0)
		return ENOMEM;
	fake_cq &cq = g_cqs[h];
	cq = fake_cq{};
	cq.live = true;
	cq.owner_fd = fd;
	cq.ring = static_cast<unsigned>(ri);
	cq.entries = entries;
	cq.cqn = g_next_cqn++;
	cq.prod = static_cast<uint32_t>(env_long("FAKE_CQ_START_INDEX", 0));
	ring_hdr(g_rings[ri])->prod = cq.prod;
	ring_hdr(g_rings[ri])->cons = cq.prod;
	f->live_cqs++;

	ib_uverbs_create_cq_resp core = {};
	core.cq_handle = h;
	core.cqe = entries;
	sroce_create_cq_resp drv = {};
	ring_info(g_rings[ri], entries, &drv.ring);
	drv.cqn = cq.cqn;
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail),
		 " handle=%u entries=%u offset=0x%llx len=%zu", h, entries,
		 static_cast<unsigned long long>(g_rings[ri].offset), g_rings[ri].len);
	return 0;
}

int do_destroy_cq(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		  char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_destroy_cq *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->cq_handle);
	fake_cq *cq = cq_lookup(fd, cmd->cq_handle);
	if (!cq)
		return EINVAL;
	ring_free(cq->ring);
	*cq = fake_cq{};
	f->live_cqs--;
	ib_uverbs_destroy_cq_resp r = {};	// no events were reported
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

int do_req_notify_cq(int fd, const void *req, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_req_notify_cq *>(req);
	snprintf(detail, dlen, " handle=%u solicited=%u", cmd->cq_handle,
		 cmd->solicited_only);
	fake_cq *cq = cq_lookup(fd, cmd->cq_handle);
	if (!cq)
		return EINVAL;
	if (cmd->solicited_only)
		cq->solicited_arms++;
	else
		cq->arms++;
	return 0;
}

// sroce_resize_cq(): the unpolled CQEs move to the start of a new ring.
int do_resize_cq(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		 char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_resize_cq *>(req);
	snprintf(detail, dlen, " handle=%u cqe=%u", cmd->cq_handle, cmd->cqe);
	fake_cq *cq = cq_lookup(fd, cmd->cq_handle);
	if (!cq)
		return EINVAL;
	if (cmd->cqe < 1 || cmd->cqe > kMaxCqe)
		return EINVAL;
	if (sz.out - sz.core_out < sizeof(sroce_resize_cq_resp))
		return EINVAL;
	const uint32_t cons = load_acquire(&ring_hdr(g_rings[cq->ring])->cons);
	const uint32_t used = cq->prod - cons;
	if (used > cq->entries)
		return EINVAL;		// corrupt consumer index
	const uint32_t entries = round_up_pow2(cmd->cqe);
	if (used > cmd->cqe || used > entries)
		return EINVAL;
	int ri = ring_alloc(f, fd, entries, SROCE_CQE_SIZE);
	if (ri < 0)
		return ENOMEM;
	fake_cq nq = *cq;
	nq.ring = static_cast<unsigned>(ri);
	nq.entries = entries;
	nq.prod = used;
	for (uint32_t i = 0; i < used; i++)
		memcpy(cq_elem(nq, i), cq_elem(*cq, cons + i), SROCE_CQE_SIZE);
	store_release(&ring_hdr(g_rings[ri])->prod, used);
	ring_hdr(g_rings[ri])->flags = ring_hdr(g_rings[cq->ring])->flags;
	ring_free(cq->ring);
	*cq = nq;

	ib_uverbs_resize_cq_resp core = {};
	core.cqe = entries;
	sroce_resize_cq_resp drv = {};
	ring_info(g_rings[ri], entries, &drv.ring);
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail),
		 " entries=%u moved=%u offset=0x%llx len=%zu", entries, used,
		 static_cast<unsigned long long>(g_rings[ri].offset), g_rings[ri].len);
	return 0;
}


// ---- queue pairs and SRQs (kernel/sroce_qp.c, sroce_srq.c) ---------------------------

void qp_ring_info(const fake_ring &r, uint32_t entries, uint32_t stride,
		  sroce_ring_info *info)
{
	info->mmap_offset = r.offset;
	info->mmap_length = r.len;
	info->entries = entries;
	info->stride = stride;
}

fake_qp *qp_lookup(int fd, uint32_t handle)
{
	if (handle == 0 || handle >= kMaxQp || !g_qps[handle].live ||
	    g_qps[handle].owner_fd != fd)
		return nullptr;
	return &g_qps[handle];
}

fake_srq *srq_lookup(int fd, uint32_t handle)
{
	if (handle == 0 || handle >= kMaxSrq || !g_srqs[handle].live ||
	    g_srqs[handle].owner_fd != fd)
		return nullptr;
	return &g_srqs[handle];
}

uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

// ---- XRC domains (ib_core: ib_uverbs_open_xrcd / close_xrcd) ------------------------

fake_xrcd *xrcd_lookup(int fd, uint32_t handle)
{
	if (handle == 0 || handle >= kMaxXrcd || !g_xrcds[handle].live ||
	    g_xrcds[handle].owner_fd != fd)
		return nullptr;
	return &g_xrcds[handle];
}

// SRQs and target QPs (created or opened) in a domain, any file's.
bool domain_in_use(unsigned dom)
{
	for (unsigned i = 1; i < kMaxQp; i++)
		if (g_qps[i].live && g_qps[i].qp_type == IB_UVERBS_QPT_XRC_TGT &&
		    g_qps[i].domain == dom)
			return true;
	for (unsigned i = 1; i < kMaxSrq; i++)
		if (g_srqs[i].live && g_srqs[i].xrc && g_srqs[i].domain == dom)
			return true;
	return false;
}

void xrcd_release(fake_xrcd &x)
{
	fake_domain &d = g_domains[x.domain];
	if (--d.handles == 0)
		d = fake_domain{};
	x = fake_xrcd{};
}

// fd -1: a new domain.  Otherwise the domain of that file's inode, made
// with O_CREAT if there is none (EAGAIN without), EINVAL with O_EXCL if
// there is one.
int do_open_xrcd(int fd, const void *req, const cmd_sizes &sz, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_open_xrcd *>(req);
	const int ufd = static_cast<int>(cmd->fd);
	snprintf(detail, dlen, " fd=%d oflags=0x%x", ufd, cmd->oflags);
	unsigned dom = 0;
	struct stat st = {};
	if (ufd != -1) {
		static auto real_fstat = real<int (*)(int, struct stat *)>("fstat");
		if (real_fstat(ufd, &st) != 0)
			return EBADF;
		for (unsigned i = 1; i < kMaxDomain; i++)
			if (g_domains[i].live && g_domains[i].has_inode &&
			    g_domains[i].dev == st.st_dev && g_domains[i].ino == st.st_ino)
				dom = i;
		if (!dom && !(cmd->oflags & O_CREAT))
			return EAGAIN;
		if (dom && (cmd->oflags & O_EXCL))
			return EINVAL;
	}
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxXrcd && !h; i++)
		if (!g_xrcds[i].live)
			h = i;
	if (!dom)
		for (unsigned i = 1; i < kMaxDomain && !dom; i++)
			if (!g_domains[i].live)
				dom = i;
	if (!h || !dom)
		return ENOMEM;
	fake_domain &d = g_domains[dom];
	if (!d.live) {
		d = fake_domain{};
		d.live = true;
		d.has_inode = ufd != -1;
		d.dev = st.st_dev;
		d.ino = st.st_ino;
	}
	d.handles++;
	g_xrcds[h] = fake_xrcd{true, fd, dom};
	ib_uverbs_open_xrcd_resp r = {};
	r.xrcd_handle = h;
	put(cmd->response, &r, sizeof(r), sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " handle=%u domain=%u", h,
		 dom);
	return 0;
}

// The last handle on a domain that SRQs or target QPs still use: EBUSY.
int do_close_xrcd(int fd, const void *req, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_close_xrcd *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->xrcd_handle);
	fake_xrcd *x = xrcd_lookup(fd, cmd->xrcd_handle);
	if (!x)
		return EINVAL;
	if (g_domains[x->domain].handles == 1 && domain_in_use(x->domain))
		return EBUSY;
	xrcd_release(*x);
	return 0;
}

int do_create_qp(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		 char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_qp *>(req);
	snprintf(detail, dlen,
		 " type=%u wr=%u/%u sge=%u/%u inline=%u srq=%u sig_all=%u",
		 cmd->qp_type, cmd->max_send_wr, cmd->max_recv_wr, cmd->max_send_sge,
		 cmd->max_recv_sge, cmd->max_inline_data, cmd->is_srq ? cmd->srq_handle : 0,
		 cmd->sq_sig_all);
	const bool tgt = cmd->qp_type == IB_UVERBS_QPT_XRC_TGT;
	const bool ini = cmd->qp_type == IB_UVERBS_QPT_XRC_INI;
	unsigned dom = 0;
	// ib_uverbs_create_qp: a target's pd_handle is its XRCD's; an
	// initiator's recv CQ and SRQ are not looked at.
	if (tgt) {
		fake_xrcd *x = xrcd_lookup(fd, cmd->pd_handle);
		if (!x)
			return EINVAL;
		dom = x->domain;
	} else if (!pd_ok(f, cmd->pd_handle) || !cq_lookup(fd, cmd->send_cq_handle) ||
		   (!ini && !cq_lookup(fd, cmd->recv_cq_handle))) {
		return EINVAL;
	}
	if (!ini && !tgt && cmd->is_srq && !srq_lookup(fd, cmd->srq_handle))
		return EINVAL;
	if (cmd->qp_type != IB_UVERBS_QPT_RC && cmd->qp_type != IB_UVERBS_QPT_UC &&
	    cmd->qp_type != IB_UVERBS_QPT_UD && !ini && !tgt)
		return EOPNOTSUPP;
	if (!tgt && (cmd->max_send_wr > kMaxQpWr || cmd->max_recv_wr > kMaxQpWr ||
		     cmd->max_send_sge > kMaxQpSge || cmd->max_recv_sge > kMaxQpSge ||
		     cmd->max_inline_data > kMaxInline))
		return EINVAL;
	// A target is made without udata (create_xrc_qp_user): nothing to
	// check, nothing written after the core response.
	if (!tgt && sz.out - sz.core_out < sizeof(sroce_create_qp_resp))
		return EINVAL;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxQp; i++)
		if (!g_qps[i].live) {
			h = i;
			break;
		}
	if (!h)
		return ENOMEM;
	fake_qp q = {};
	q.qp_type = cmd->qp_type;
	q.domain = dom;
	q.has_srq = !ini && !tgt && cmd->is_srq;
	q.has_sq = !tgt;
	q.has_rq = !q.has_srq && !ini && !tgt;
	if (q.has_sq) {
		q.sq_entries = round_up_pow2(max_u32(cmd->max_send_wr, 1));
		q.sq_stride = round_up_pow2(SROCE_SEND_WQE_HDR +
					    max_u32(max_u32(cmd->max_send_sge * 16,
							    cmd->max_inline_data), 16));
		int sr = ring_alloc(f, fd, q.sq_entries, q.sq_stride);
		if (sr < 0)
			return ENOMEM;
		q.sq_ring = static_cast<unsigned>(sr);
	}
	if (q.has_rq) {
		q.rq_entries = round_up_pow2(max_u32(cmd->max_recv_wr, 1));
		q.rq_stride = round_up_pow2(max_u32(SROCE_RECV_WQE_HDR +
						    max_u32(cmd->max_recv_sge, 1) * 16, 64));
		int rr = ring_alloc(f, fd, q.rq_entries, q.rq_stride);
		if (rr < 0) {
			ring_free(q.sq_ring);
			return ENOMEM;
		}
		q.rq_ring = static_cast<unsigned>(rr);
	}
	q.live = true;
	q.owner_fd = fd;
	q.qpn = g_next_qpn++;
	q.state = kQpsReset;
	if (q.has_sq)
		ring_hdr(g_rings[q.sq_ring])->flags = SROCE_RING_F_NEED_KICK;
	g_qps[h] = q;

	ib_uverbs_create_qp_resp core = {};
	core.qp_handle = h;
	core.qpn = q.qpn;
	if (tgt) {
		put(cmd->response, &core, sizeof(core), sz.core_out);
		snprintf(detail + strlen(detail), dlen - strlen(detail),
			 " handle=%u qpn=%u domain=%u", h, q.qpn, dom);
		return 0;
	}
	const uint32_t sq_room = q.sq_stride - SROCE_SEND_WQE_HDR;
	const uint32_t rq_room = q.has_rq ? q.rq_stride - SROCE_RECV_WQE_HDR : 0;
	core.max_send_wr = q.sq_entries;
	core.max_recv_wr = q.has_rq ? q.rq_entries : 0;
	core.max_send_sge = min_u32(sq_room / 16, 255);
	core.max_recv_sge = min_u32(rq_room / 16, kMaxQpSge);
	core.max_inline_data = min_u32(sq_room, kMaxInline);
	sroce_create_qp_resp drv = {};
	qp_ring_info(g_rings[q.sq_ring], q.sq_entries, q.sq_stride, &drv.sq);
	if (q.has_rq)
		qp_ring_info(g_rings[q.rq_ring], q.rq_entries, q.rq_stride, &drv.rq);
	drv.qpn = q.qpn;
	drv.max_inline_data = core.max_inline_data;
	const char *bad = getenv("FAKE_QP_BAD_RING");
	if (bad && !strcmp(bad, "sq_entries"))
		drv.sq.entries = q.sq_entries / 2;	// fewer than max_send_wr
	else if (bad && !strcmp(bad, "rq_stride"))
		drv.rq.stride = 32;
	else if (bad && !strcmp(bad, "inline"))
		drv.max_inline_data = core.max_inline_data + 1;
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail),
		 " handle=%u qpn=%u sq=%u*%u rq=%u*%u", h, q.qpn, q.sq_entries,
		 q.sq_stride, q.rq_entries, q.rq_stride);
	return 0;
}

// ib_uverbs_open_qp + ib_open_qp: a new handle on a live XRC target of
// the domain the XRCD handle names (whichever file created it).
int do_open_qp(int fd, const void *req, const cmd_sizes &sz, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_open_qp *>(req);
	snprintf(detail, dlen, " xrcd=%u qpn=%u type=%u", cmd->pd_handle, cmd->qpn,
		 cmd->qp_type);
	fake_xrcd *x = xrcd_lookup(fd, cmd->pd_handle);
	if (!x || cmd->qp_type != IB_UVERBS_QPT_XRC_TGT)
		return EINVAL;
	unsigned target = 0;
	for (unsigned i = 1; i < kMaxQp && !target; i++)
		if (g_qps[i].live && g_qps[i].qp_type == IB_UVERBS_QPT_XRC_TGT &&
		    g_qps[i].qpn == cmd->qpn && g_qps[i].domain == x->domain)
			target = i;
	if (!target)
		return EINVAL;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxQp && !h; i++)
		if (!g_qps[i].live)
			h = i;
	if (!h)
		return ENOMEM;
	fake_qp q = {};
	q.live = true;
	q.owner_fd = fd;
	q.qp_type = IB_UVERBS_QPT_XRC_TGT;
	q.domain = x->domain;
	q.qpn = cmd->qpn;
	q.state = g_qps[target].state;
	g_qps[h] = q;
	ib_uverbs_create_qp_resp r = {};
	r.qp_handle = h;
	r.qpn = q.qpn;
	put(cmd->response, &r, sizeof(r), sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " handle=%u", h);
	return 0;
}

void qp_release(fake_qp &q)
{
	if (q.has_sq)
		ring_free(q.sq_ring);
	if (q.has_rq)
		ring_free(q.rq_ring);
	q = fake_qp{};
}

int do_destroy_qp(int fd, const void *req, const cmd_sizes &sz, char *detail,
		  size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_destroy_qp *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->qp_handle);
	fake_qp *q = qp_lookup(fd, cmd->qp_handle);
	if (!q)
		return EINVAL;
	qp_release(*q);
	ib_uverbs_destroy_qp_resp r = {};
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

// Only the state: ERR sets ERROR (and NEED_KICK) on the rings, RESET
// clears ERROR - what sroce_qp_flush / sroce_qp_reset_rings do to flags.
int do_modify_qp(int fd, const void *req, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_modify_qp *>(req);
	snprintf(detail, dlen, " handle=%u mask=0x%x state=%u", cmd->qp_handle,
		 cmd->attr_mask, cmd->qp_state);
	fake_qp *q = qp_lookup(fd, cmd->qp_handle);
	if (!q)
		return EINVAL;
	if (long err = env_long("FAKE_MODIFY_QP_ERRNO", 0))
		return static_cast<int>(err);
	if (!(cmd->attr_mask & IB_QP_STATE_BIT))
		return 0;
	if (cmd->qp_state > kQpsErr)
		return EINVAL;
	q->state = cmd->qp_state;
	sroce_ring_hdr *sq = q->has_sq ? ring_hdr(g_rings[q->sq_ring]) : nullptr;
	sroce_ring_hdr *rq = q->has_rq ? ring_hdr(g_rings[q->rq_ring]) : nullptr;
	if (q->state == kQpsErr) {
		if (sq)
			__atomic_or_fetch(&sq->flags,
					  SROCE_RING_F_ERROR | SROCE_RING_F_NEED_KICK,
					  __ATOMIC_SEQ_CST);
		if (rq)
			__atomic_or_fetch(&rq->flags, SROCE_RING_F_ERROR, __ATOMIC_SEQ_CST);
	} else if (q->state == kQpsReset) {
		if (sq)
			__atomic_and_fetch(&sq->flags, ~SROCE_RING_F_ERROR, __ATOMIC_SEQ_CST);
		if (rq)
			__atomic_and_fetch(&rq->flags, ~SROCE_RING_F_ERROR, __ATOMIC_SEQ_CST);
	}
	return 0;
}

// The state and the granted queue sizes (sroce_query_qp).
int do_query_qp(int fd, const void *req, const cmd_sizes &sz, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_query_qp *>(req);
	snprintf(detail, dlen, " handle=%u mask=0x%x", cmd->qp_handle, cmd->attr_mask);
	fake_qp *q = qp_lookup(fd, cmd->qp_handle);
	if (!q)
		return EINVAL;
	ib_uverbs_query_qp_resp r = {};
	r.qp_state = static_cast<__u8>(q->state);
	r.cur_qp_state = r.qp_state;
	r.max_send_wr = q->sq_entries;
	r.max_recv_wr = q->rq_entries;
	put(cmd->response, &r, sizeof(r), sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " state=%u", q->state);
	return 0;
}

// The doorbells: no work request may come with them.
int do_post(int fd, bool send, const void *req, const cmd_sizes &sz, char *detail,
	    size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_post_send *>(req);
	static_assert(sizeof(ib_uverbs_post_send) == sizeof(ib_uverbs_post_recv));
	snprintf(detail, dlen, " handle=%u wr_count=%u sge_count=%u wqe_size=%u",
		 cmd->qp_handle, cmd->wr_count, cmd->sge_count, cmd->wqe_size);
	fake_qp *q = qp_lookup(fd, cmd->qp_handle);
	if (!q)
		return EINVAL;
	if (cmd->wqe_size < (send ? sizeof(ib_uverbs_send_wr) : sizeof(ib_uverbs_recv_wr)))
		return EINVAL;
	if (cmd->wr_count || cmd->sge_count)
		return EOPNOTSUPP;	// the fake takes doorbells only
	if (send)
		q->send_db++;
	else
		q->recv_db++;
	ib_uverbs_post_send_resp r = {};
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

// What CREATE_SRQ and CREATE_XSRQ share (ib_core, then sroce_create_srq):
// the request is checked, the ring made, the response written.  dom is
// the XRC domain of an XRC SRQ, 0 for a basic one.
int srq_create(fake_file *f, int fd, uint32_t pd, uint32_t max_wr, uint32_t max_sge,
	       uint32_t limit, unsigned dom, __u64 response, const cmd_sizes &sz,
	       char *detail, size_t dlen)
{
	if (!pd_ok(f, pd))
		return EINVAL;
	if (!max_wr || max_wr > kMaxQpWr || max_sge > kMaxQpSge || limit > max_wr)
		return EINVAL;
	if (sz.out - sz.core_out < sizeof(sroce_create_srq_resp))
		return EINVAL;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxSrq; i++)
		if (!g_srqs[i].live) {
			h = i;
			break;
		}
	if (!h)
		return ENOMEM;
	fake_srq s = {};
	s.entries = round_up_pow2(max_wr);
	s.stride = round_up_pow2(max_u32(SROCE_RECV_WQE_HDR + max_u32(max_sge, 1) * 16, 64));
	int r = ring_alloc(f, fd, s.entries, s.stride);
	if (r < 0)
		return ENOMEM;
	s.ring = static_cast<unsigned>(r);
	s.live = true;
	s.owner_fd = fd;
	s.max_sge = min_u32((s.stride - SROCE_RECV_WQE_HDR) / 16, kMaxQpSge);
	s.limit = limit;
	s.xrc = dom != 0;
	s.domain = dom;
	g_srqs[h] = s;

	ib_uverbs_create_srq_resp core = {};
	core.srq_handle = h;
	core.max_wr = s.entries;
	core.max_sge = s.max_sge;
	core.srqn = s.xrc ? kXrcSrqnBase + h : h;
	sroce_create_srq_resp drv = {};
	qp_ring_info(g_rings[s.ring], s.entries, s.stride, &drv.rq);
	drv.srqn = h;
	put(response, &core, sizeof(core), sz.core_out);
	put(response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail),
		 " handle=%u srqn=%u rq=%u*%u", h, core.srqn, s.entries, s.stride);
	return 0;
}

int do_create_srq(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		  char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_srq *>(req);
	snprintf(detail, dlen, " max_wr=%u max_sge=%u limit=%u", cmd->max_wr,
		 cmd->max_sge, cmd->srq_limit);
	return srq_create(f, fd, cmd->pd_handle, cmd->max_wr, cmd->max_sge,
			  cmd->srq_limit, 0, cmd->response, sz, detail, dlen);
}

// ib_uverbs_create_xsrq: an XRC SRQ's domain and CQ are looked up (the
// basic type takes neither, tag matching sroce does not have).
int do_create_xsrq(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		   char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_xsrq *>(req);
	snprintf(detail, dlen, " type=%u xrcd=%u cq=%u max_wr=%u max_sge=%u limit=%u",
		 cmd->srq_type, cmd->xrcd_handle, cmd->cq_handle, cmd->max_wr,
		 cmd->max_sge, cmd->srq_limit);
	unsigned dom = 0;
	if (cmd->srq_type == kSrqtXrc) {
		fake_xrcd *x = xrcd_lookup(fd, cmd->xrcd_handle);
		if (!x || !cq_lookup(fd, cmd->cq_handle))
			return EINVAL;
		dom = x->domain;
	} else if (cmd->srq_type != kSrqtBasic) {
		return EOPNOTSUPP;
	}
	return srq_create(f, fd, cmd->pd_handle, cmd->max_wr, cmd->max_sge,
			  cmd->srq_limit, dom, cmd->response, sz, detail, dlen);
}

int do_destroy_srq(int fd, const void *req, const cmd_sizes &sz, char *detail,
		   size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_destroy_srq *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->srq_handle);
	fake_srq *s = srq_lookup(fd, cmd->srq_handle);
	if (!s)
		return EINVAL;
	for (unsigned i = 1; i < kMaxQp; i++)
		if (g_qps[i].live && g_qps[i].owner_fd == fd && g_qps[i].has_srq)
			return EBUSY;
	ring_free(s->ring);
	*s = fake_srq{};
	ib_uverbs_destroy_srq_resp r = {};
	put(cmd->response, &r, sizeof(r), sz.out);
	return 0;
}

// ---- address handles (kernel/sroce_ah.c) ----------------------------------------------

int do_create_ah(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		 char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_create_ah *>(req);
	snprintf(detail, dlen, " pd=%u port=%u global=%u sgid_index=%u", cmd->pd_handle,
		 cmd->attr.port_num, cmd->attr.is_global, cmd->attr.grh.sgid_index);
	if (!pd_ok(f, cmd->pd_handle) || cmd->attr.port_num != 1 || !cmd->attr.is_global)
		return EINVAL;	// RoCE: a GRH is required
	if (sz.out - sz.core_out < sizeof(sroce_create_ah_resp))
		return EINVAL;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxAh; i++)
		if (!g_ahs[i].live) {
			h = i;
			break;
		}
	if (!h)
		return ENOMEM;
	g_ahs[h] = fake_ah{true, fd, cmd->pd_handle};
	ib_uverbs_create_ah_resp core = {};
	core.ah_handle = h;
	sroce_create_ah_resp drv = {};
	drv.ah_num = kAhNumBase + h;
	put(cmd->response, &core, sizeof(core), sz.core_out);
	put(cmd->response + sz.core_out, &drv, sizeof(drv), sz.out - sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " handle=%u ah_num=%u",
		 h, drv.ah_num);
	return 0;
}

int do_destroy_ah(int fd, const void *req, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_destroy_ah *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->ah_handle);
	if (cmd->ah_handle == 0 || cmd->ah_handle >= kMaxAh || !g_ahs[cmd->ah_handle].live ||
	    g_ahs[cmd->ah_handle].owner_fd != fd)
		return EINVAL;
	g_ahs[cmd->ah_handle] = fake_ah{};
	return 0;
}

// ---- memory regions ------------------------------------------------------------------

constexpr uint32_t kAccessLocalWrite = IB_UVERBS_ACCESS_LOCAL_WRITE;
constexpr uint32_t kAccessRemote = IB_UVERBS_ACCESS_REMOTE_WRITE |
				   IB_UVERBS_ACCESS_REMOTE_ATOMIC;
// IB_ACCESS_SUPPORTED of the 6.1 kernel
constexpr uint32_t kAccessSupported = ((IB_UVERBS_ACCESS_HUGETLB << 1) - 1) |
				      IB_UVERBS_ACCESS_OPTIONAL_RANGE;
// SROCE_MR_ACCESS (kernel/sroce_mr.c)
constexpr uint32_t kSroceAccess = IB_UVERBS_ACCESS_LOCAL_WRITE |
				  IB_UVERBS_ACCESS_REMOTE_WRITE |
				  IB_UVERBS_ACCESS_REMOTE_READ |
				  IB_UVERBS_ACCESS_REMOTE_ATOMIC |
				  IB_UVERBS_ACCESS_MW_BIND | IB_UVERBS_ACCESS_HUGETLB |
				  IB_UVERBS_ACCESS_RELAXED_ORDERING;

// enum ib_mr_rereg_flags (kernel-internal; the same bits as
// IBV_REREG_MR_CHANGE_*)
constexpr uint32_t kReregTrans = 1u << 0;
constexpr uint32_t kReregPd = 1u << 1;
constexpr uint32_t kReregAccess = 1u << 2;

// ib_check_mr_access()
int check_access(uint32_t access)
{
	if ((access & kAccessRemote) && !(access & kAccessLocalWrite))
		return EINVAL;
	if (access & ~kAccessSupported)
		return EINVAL;
	if (access & IB_UVERBS_ACCESS_ON_DEMAND)
		return EOPNOTSUPP;
	return 0;
}

// sroce_mr_new_user(): length, overflow, sroce's access set, pinning
// (every page must be mapped: ib_umem_get fails with EFAULT otherwise).
int check_user_region(uint64_t start, uint64_t length, uint64_t iova, uint32_t access)
{
	if (!length)
		return EINVAL;
	if (iova + length < iova || start + length < start)
		return EOVERFLOW;
	if (access & ~kSroceAccess)
		return EOPNOTSUPP;
	const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
	const uint64_t first = start & ~(page - 1);
	const uint64_t last = (start + length - 1) & ~(page - 1);
	unsigned char vec;
	for (uint64_t p = first;; p += page) {
		if (mincore(reinterpret_cast<void *>(p), page, &vec) != 0)
			return EFAULT;
		if (p == last)
			break;
	}
	return 0;
}

bool pd_has_mrs(int fd, uint32_t pd)
{
	for (unsigned i = 1; i < kMaxMr; i++)
		if (g_mrs[i].live && g_mrs[i].owner_fd == fd && g_mrs[i].pd == pd)
			return true;
	return false;
}

uint32_t new_key(unsigned handle)
{
	return (handle << 8) | (++g_key_gen & 0xff);
}

fake_mr *mr_lookup(int fd, uint32_t handle)
{
	if (handle == 0 || handle >= kMaxMr || !g_mrs[handle].live ||
	    g_mrs[handle].owner_fd != fd)
		return nullptr;
	return &g_mrs[handle];
}

int do_reg_mr(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
	      char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_reg_mr *>(req);
	snprintf(detail, dlen, " start=0x%llx length=%llu hca_va=0x%llx pd=%u access=0x%x",
		 static_cast<unsigned long long>(cmd->start),
		 static_cast<unsigned long long>(cmd->length),
		 static_cast<unsigned long long>(cmd->hca_va), cmd->pd_handle,
		 cmd->access_flags);
	// ib_uverbs_reg_mr()
	if ((cmd->start & 0xfff) != (cmd->hca_va & 0xfff))
		return EINVAL;
	if (int err = check_access(cmd->access_flags))
		return err;
	if (!pd_ok(f, cmd->pd_handle))
		return EINVAL;
	// sroce_reg_user_mr()
	if (int err = check_user_region(cmd->start, cmd->length, cmd->hca_va,
					cmd->access_flags))
		return err;
	unsigned h = 0;
	for (unsigned i = 1; i < kMaxMr; i++)
		if (!g_mrs[i].live) {
			h = i;
			break;
		}
	if (!h)
		return ENOMEM;
	fake_mr &m = g_mrs[h];
	m = fake_mr{};
	m.live = true;
	m.owner_fd = fd;
	m.key = new_key(h);
	m.pd = cmd->pd_handle;
	m.start = cmd->start;
	m.length = cmd->length;
	m.iova = cmd->hca_va;
	m.access = cmd->access_flags;
	f->live_mrs++;
	ib_uverbs_reg_mr_resp r = {};
	r.mr_handle = h;
	r.lkey = m.key;
	r.rkey = m.key;
	put(cmd->response, &r, sizeof(r), sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " handle=%u key=0x%x", h,
		 m.key);
	return 0;
}

// ib_uverbs_rereg_mr() + sroce_rereg_user_mr(): the region changed in
// place, same keys, same handle; unchanged attributes come from the old
// region.
int do_rereg_mr(fake_file *f, int fd, const void *req, const cmd_sizes &sz,
		char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_rereg_mr *>(req);
	snprintf(detail, dlen,
		 " handle=%u flags=0x%x start=0x%llx length=%llu hca_va=0x%llx pd=%u access=0x%x",
		 cmd->mr_handle, cmd->flags, static_cast<unsigned long long>(cmd->start),
		 static_cast<unsigned long long>(cmd->length),
		 static_cast<unsigned long long>(cmd->hca_va), cmd->pd_handle,
		 cmd->access_flags);
	const uint32_t supported = kReregTrans | kReregPd | kReregAccess;
	if ((cmd->flags & ~supported) || !cmd->flags)
		return EINVAL;
	if ((cmd->flags & kReregTrans) &&
	    (cmd->start & 0xfff) != (cmd->hca_va & 0xfff))
		return EINVAL;
	fake_mr *m = mr_lookup(fd, cmd->mr_handle);
	if (!m)
		return EINVAL;
	if (cmd->flags & kReregAccess)
		if (int err = check_access(cmd->access_flags))
			return err;
	if ((cmd->flags & kReregPd) && !pd_ok(f, cmd->pd_handle))
		return EINVAL;
	fake_mr n = *m;
	if (cmd->flags & kReregTrans) {
		n.start = cmd->start;
		n.length = cmd->length;
		n.iova = cmd->hca_va;
	}
	if (cmd->flags & kReregAccess)
		n.access = cmd->access_flags;
	if (cmd->flags & kReregPd)
		n.pd = cmd->pd_handle;
	if (int err = check_user_region(n.start, n.length, n.iova, n.access))
		return err;
	*m = n;	// in place: the keys stay
	ib_uverbs_rereg_mr_resp r = {};
	r.lkey = n.key;
	r.rkey = n.key;
	put(cmd->response, &r, sizeof(r), sz.core_out);
	snprintf(detail + strlen(detail), dlen - strlen(detail), " key=0x%x", n.key);
	return 0;
}

int do_dereg_mr(fake_file *f, int fd, const void *req, char *detail, size_t dlen)
{
	auto *cmd = static_cast<const ib_uverbs_dereg_mr *>(req);
	snprintf(detail, dlen, " handle=%u", cmd->mr_handle);
	fake_mr *m = mr_lookup(fd, cmd->mr_handle);
	if (!m)
		return EINVAL;
	*m = fake_mr{};
	f->live_mrs--;
	return 0;
}

// Everything a closed file still owned, as ib_core's cleanup does.
void release_file(int fd)
{
	for (unsigned i = 1; i < kMaxQp; i++)
		if (g_qps[i].live && g_qps[i].owner_fd == fd)
			qp_release(g_qps[i]);
	for (unsigned i = 1; i < kMaxSrq; i++)
		if (g_srqs[i].live && g_srqs[i].owner_fd == fd)
			g_srqs[i] = fake_srq{};
	for (unsigned i = 1; i < kMaxAh; i++)
		if (g_ahs[i].live && g_ahs[i].owner_fd == fd)
			g_ahs[i] = fake_ah{};
	for (unsigned i = 1; i < kMaxXrcd; i++)
		if (g_xrcds[i].live && g_xrcds[i].owner_fd == fd)
			xrcd_release(g_xrcds[i]);
	for (unsigned i = 1; i < kMaxCq; i++)
		if (g_cqs[i].live && g_cqs[i].owner_fd == fd) {
			ring_free(g_cqs[i].ring);
			g_cqs[i] = fake_cq{};
		}
	for (unsigned i = 1; i < kMaxMr; i++)
		if (g_mrs[i].live && g_mrs[i].owner_fd == fd)
			g_mrs[i] = fake_mr{};
	for (unsigned i = 0; i < kMaxRings; i++)
		if (g_rings[i].live && g_rings[i].owner_fd == fd)
			ring_free(i);
}

// One write() on the fake cdev; returns 0 or a positive errno.
int handle_write(fake_file *f, int fd, const void *buf, size_t len)
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
	char detail[256] = "";
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
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		name = "CREATE_COMP_CHANNEL";
		sz.core_in = sizeof(ib_uverbs_create_comp_channel);
		sz.core_out = sizeof(ib_uverbs_create_comp_channel_resp);
		break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
		name = "CREATE_CQ";
		sz.core_in = sizeof(ib_uverbs_create_cq);
		sz.core_out = sizeof(ib_uverbs_create_cq_resp);
		break;
	case IB_USER_VERBS_CMD_RESIZE_CQ:
		name = "RESIZE_CQ";
		sz.core_in = sizeof(ib_uverbs_resize_cq);
		sz.core_out = sizeof(ib_uverbs_resize_cq_resp);
		break;
	case IB_USER_VERBS_CMD_DESTROY_CQ:
		name = "DESTROY_CQ";
		sz.core_in = sizeof(ib_uverbs_destroy_cq);
		sz.core_out = sizeof(ib_uverbs_destroy_cq_resp);
		break;
	case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ:
		name = "REQ_NOTIFY_CQ";
		sz.core_in = sizeof(ib_uverbs_req_notify_cq);
		sz.core_out = 0;
		break;
	case IB_USER_VERBS_CMD_REG_MR:
		name = "REG_MR";
		sz.core_in = sizeof(ib_uverbs_reg_mr);
		sz.core_out = sizeof(ib_uverbs_reg_mr_resp);
		break;
	case IB_USER_VERBS_CMD_REREG_MR:
		name = "REREG_MR";
		sz.core_in = sizeof(ib_uverbs_rereg_mr);
		sz.core_out = sizeof(ib_uverbs_rereg_mr_resp);
		break;
	case IB_USER_VERBS_CMD_DEREG_MR:
		name = "DEREG_MR";
		sz.core_in = sizeof(ib_uverbs_dereg_mr);
		sz.core_out = 0;
		break;
	case IB_USER_VERBS_CMD_CREATE_QP:
		name = "CREATE_QP";
		sz.core_in = sizeof(ib_uverbs_create_qp);
		sz.core_out = sizeof(ib_uverbs_create_qp_resp);
		break;
	case IB_USER_VERBS_CMD_DESTROY_QP:
		name = "DESTROY_QP";
		sz.core_in = sizeof(ib_uverbs_destroy_qp);
		sz.core_out = sizeof(ib_uverbs_destroy_qp_resp);
		break;
	case IB_USER_VERBS_CMD_MODIFY_QP:
		name = "MODIFY_QP";
		sz.core_in = sizeof(ib_uverbs_modify_qp);
		sz.core_out = 0;
		break;
	case IB_USER_VERBS_CMD_POST_SEND:
		name = "POST_SEND";
		sz.core_in = sizeof(ib_uverbs_post_send);
		sz.core_out = sizeof(ib_uverbs_post_send_resp);
		break;
	case IB_USER_VERBS_CMD_POST_RECV:
		name = "POST_RECV";
		sz.core_in = sizeof(ib_uverbs_post_recv);
		sz.core_out = sizeof(ib_uverbs_post_recv_resp);
		break;
	case IB_USER_VERBS_CMD_CREATE_SRQ:
		name = "CREATE_SRQ";
		sz.core_in = sizeof(ib_uverbs_create_srq);
		sz.core_out = sizeof(ib_uverbs_create_srq_resp);
		break;
	case IB_USER_VERBS_CMD_CREATE_XSRQ:
		name = "CREATE_XSRQ";
		sz.core_in = sizeof(ib_uverbs_create_xsrq);
		sz.core_out = sizeof(ib_uverbs_create_srq_resp);
		break;
	case IB_USER_VERBS_CMD_OPEN_XRCD:
		name = "OPEN_XRCD";
		sz.core_in = sizeof(ib_uverbs_open_xrcd);
		sz.core_out = sizeof(ib_uverbs_open_xrcd_resp);
		break;
	case IB_USER_VERBS_CMD_CLOSE_XRCD:
		name = "CLOSE_XRCD";
		sz.core_in = sizeof(ib_uverbs_close_xrcd);
		sz.core_out = 0;
		break;
	case IB_USER_VERBS_CMD_OPEN_QP:
		name = "OPEN_QP";
		sz.core_in = sizeof(ib_uverbs_open_qp);
		sz.core_out = sizeof(ib_uverbs_create_qp_resp);
		break;
	case IB_USER_VERBS_CMD_QUERY_QP:
		name = "QUERY_QP";
		sz.core_in = sizeof(ib_uverbs_query_qp);
		sz.core_out = sizeof(ib_uverbs_query_qp_resp);
		break;
	case IB_USER_VERBS_CMD_DESTROY_SRQ:
		name = "DESTROY_SRQ";
		sz.core_in = sizeof(ib_uverbs_destroy_srq);
		sz.core_out = sizeof(ib_uverbs_destroy_srq_resp);
		break;
	case IB_USER_VERBS_CMD_CREATE_AH:
		name = "CREATE_AH";
		sz.core_in = sizeof(ib_uverbs_create_ah);
		sz.core_out = sizeof(ib_uverbs_create_ah_resp);
		break;
	case IB_USER_VERBS_CMD_DESTROY_AH:
		name = "DESTROY_AH";
		sz.core_in = sizeof(ib_uverbs_destroy_ah);
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
		case IB_USER_VERBS_CMD_DEALLOC_PD:
			ret = do_dealloc_pd(f, fd, req);
			break;
		case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
			ret = do_create_comp_channel(req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CREATE_CQ:
			ret = do_create_cq(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_RESIZE_CQ:
			ret = do_resize_cq(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_DESTROY_CQ:
			ret = do_destroy_cq(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ:
			ret = do_req_notify_cq(fd, req, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_REG_MR:
			ret = do_reg_mr(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_REREG_MR:
			ret = do_rereg_mr(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CREATE_QP:
			ret = do_create_qp(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_DESTROY_QP:
			ret = do_destroy_qp(fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_MODIFY_QP:
			ret = do_modify_qp(fd, req, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_POST_SEND:
		case IB_USER_VERBS_CMD_POST_RECV:
			ret = do_post(fd, hdr->command == IB_USER_VERBS_CMD_POST_SEND, req,
				      sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CREATE_SRQ:
			ret = do_create_srq(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_DESTROY_SRQ:
			ret = do_destroy_srq(fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CREATE_XSRQ:
			ret = do_create_xsrq(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_OPEN_XRCD:
			ret = do_open_xrcd(fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CLOSE_XRCD:
			ret = do_close_xrcd(fd, req, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_OPEN_QP:
			ret = do_open_qp(fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_QUERY_QP:
			ret = do_query_qp(fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_CREATE_AH:
			ret = do_create_ah(f, fd, req, sz, detail, sizeof(detail));
			break;
		case IB_USER_VERBS_CMD_DESTROY_AH:
			ret = do_destroy_ah(fd, req, detail, sizeof(detail));
			break;
		default:
			ret = do_dereg_mr(f, fd, req, detail, sizeof(detail));
			break;
		}
	}
	// PD churn would flood the log: only the first few of each.
	static unsigned logged_pd;
	bool pd_cmd = hdr->command == IB_USER_VERBS_CMD_ALLOC_PD ||
		      hdr->command == IB_USER_VERBS_CMD_DEALLOC_PD;
	if (!pd_cmd || ret || logged_pd++ < 4)
		log_line("%s in=%zu out=%zu udata_in=%zu udata_out=%zu%s ret=%d", name,
			 sz.in, sz.out, sz.in - sz.core_in, sz.out - sz.core_out, detail,
			 ret);
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
		std::lock_guard<std::mutex> guard(g_lock);
		int ret = handle_write(f, fd, buf, len);
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
		std::lock_guard<std::mutex> guard(g_lock);
		log_line("CLOSE uverbs%d context=%d live_pds=%u live_cqs=%u live_mrs=%u",
			 f->devnum, f->has_context ? 1 : 0, f->live_pds, f->live_cqs,
			 f->live_mrs);
		release_file(fd);
		*f = fake_file{};
	}
	return real_close(fd);
}

// mmap() of the command fd: a ring, at exactly its offset and length and
// shared (rdma_user_mmap_entry_get + sroce_mmap).
__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot,
						  int flags, int fd, off_t off)
{
	static auto real_mmap = real<void *(*)(void *, size_t, int, int, int, off_t)>("mmap");
	if (!fake_fd(fd))
		return real_mmap(addr, len, prot, flags, fd, off);

	std::lock_guard<std::mutex> guard(g_lock);
	int err = EINVAL;
	void *ret = MAP_FAILED;
	unsigned i = 0;
	for (; i < kMaxRings; i++)
		if (g_rings[i].live && g_rings[i].owner_fd == fd &&
		    g_rings[i].offset == static_cast<uint64_t>(off))
			break;
	unsigned slot = 0;
	while (slot < kMaxUserMaps && g_maps[slot].live)
		slot++;
	if (i == kMaxRings || len != g_rings[i].len || !(flags & MAP_SHARED))
		err = EINVAL;
	else if (env_long("FAKE_MMAP_FAIL", 0) || slot == kMaxUserMaps)
		err = ENOMEM;
	else {
		ret = real_mmap(addr, len, prot, flags, g_rings[i].memfd, 0);
		err = ret == MAP_FAILED ? errno : 0;
	}
	if (!err)
		g_maps[slot] = user_map{true, ret, len, i};
	log_line("MMAP offset=0x%llx len=%zu prot=0x%x flags=0x%x ret=%d",
		 static_cast<unsigned long long>(off), len, prot, flags, err);
	if (err)
		errno = err;
	return ret;
}

__attribute__((visibility("default"))) void *mmap64(void *addr, size_t len, int prot,
						    int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

__attribute__((visibility("default"))) int munmap(void *addr, size_t len)
{
	static auto real_munmap = real<int (*)(void *, size_t)>("munmap");
	{
		std::lock_guard<std::mutex> guard(g_lock);
		for (user_map &m : g_maps)
			if (m.live && m.addr == addr) {
				log_line("MUNMAP len=%zu%s", len,
					 len == m.len ? "" : " (length differs)");
				m = user_map{};
			}
	}
	return real_munmap(addr, len);
}

// ---- the kernel side, for in-process tests ---------------------------------------

// sroce_cq_post(): produce one 64-byte CQE into the CQ with this handle.
// 0, -ENOSPC when the ring is full, -EINVAL for no such CQ or a consumer
// index that is not within the ring (both: nothing written).
__attribute__((visibility("default"))) int fake_uverbs_cq_push(uint32_t handle,
							       const void *cqe)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxCq || !g_cqs[handle].live)
		return -EINVAL;
	fake_cq &cq = g_cqs[handle];
	sroce_ring_hdr *h = ring_hdr(g_rings[cq.ring]);
	const uint32_t cons = load_acquire(&h->cons);
	const uint32_t used = cq.prod - cons;
	if (used > cq.entries)
		return -EINVAL;
	if (used == cq.entries)
		return -ENOSPC;
	memcpy(cq_elem(cq, cq.prod), cqe, SROCE_CQE_SIZE);
	cq.prod++;
	store_release(&h->prod, cq.prod);
	return 0;
}

// The CQ's indices as the kernel sees them (its prod, the shared cons).
__attribute__((visibility("default"))) int fake_uverbs_cq_state(uint32_t handle,
								uint32_t *prod,
								uint32_t *cons,
								uint32_t *entries)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxCq || !g_cqs[handle].live)
		return -EINVAL;
	const fake_cq &cq = g_cqs[handle];
	*prod = cq.prod;
	*cons = load_acquire(&ring_hdr(g_rings[cq.ring])->cons);
	*entries = cq.entries;
	return 0;
}

// How often REQ_NOTIFY_CQ armed the CQ (next completion, solicited).
__attribute__((visibility("default"))) int fake_uverbs_cq_arms(uint32_t handle,
							       unsigned *next,
							       unsigned *solicited)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxCq || !g_cqs[handle].live)
		return -EINVAL;
	*next = g_cqs[handle].arms;
	*solicited = g_cqs[handle].solicited_arms;
	return 0;
}

// Store a raw value into the shared producer index, as a broken kernel
// would (the fake's own index is left alone).
__attribute__((visibility("default"))) int fake_uverbs_cq_poke_prod(uint32_t handle,
								    uint32_t value)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxCq || !g_cqs[handle].live)
		return -EINVAL;
	store_release(&ring_hdr(g_rings[g_cqs[handle].ring])->prod, value);
	return 0;
}

// Mappings of rings the provider currently holds.
__attribute__((visibility("default"))) int fake_uverbs_live_maps(void)
{
	std::lock_guard<std::mutex> guard(g_lock);
	int n = 0;
	for (const user_map &m : g_maps)
		n += m.live;
	return n;
}

// A QP's ring as the kernel maps it (which: 0 SQ, 1 RQ); tests read and
// write its header and slots directly.  0, or -EINVAL (no such QP/ring).
__attribute__((visibility("default"))) int fake_uverbs_qp_ring(uint32_t handle, int which,
							       void **kmap,
							       uint32_t *entries,
							       uint32_t *stride)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxQp || !g_qps[handle].live)
		return -EINVAL;
	const fake_qp &q = g_qps[handle];
	if (which == 0 && q.has_sq) {
		*kmap = g_rings[q.sq_ring].kmap;
		*entries = q.sq_entries;
		*stride = q.sq_stride;
	} else if (which == 1 && q.has_rq) {
		*kmap = g_rings[q.rq_ring].kmap;
		*entries = q.rq_entries;
		*stride = q.rq_stride;
	} else {
		return -EINVAL;
	}
	return 0;
}

// Doorbells received: POST_SEND and POST_RECV without work requests.
__attribute__((visibility("default"))) int fake_uverbs_qp_doorbells(uint32_t handle,
								    unsigned *send,
								    unsigned *recv)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxQp || !g_qps[handle].live)
		return -EINVAL;
	*send = g_qps[handle].send_db;
	*recv = g_qps[handle].recv_db;
	return 0;
}

__attribute__((visibility("default"))) int fake_uverbs_srq_ring(uint32_t handle, void **kmap,
								uint32_t *entries,
								uint32_t *stride)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (handle == 0 || handle >= kMaxSrq || !g_srqs[handle].live)
		return -EINVAL;
	*kmap = g_rings[g_srqs[handle].ring].kmap;
	*entries = g_srqs[handle].entries;
	*stride = g_srqs[handle].stride;
	return 0;
}

} // extern "C"
