// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_devcheck - check an sroce RDMA device end to end through libibverbs
// and print TAP ("ok N - ..." / "not ok N - ...", diagnostics on "# " lines).
//
//   sroce_devcheck -d sroce0 --mtu 1500 -4 192.0.2.1 -6 2001:db8::1
//                  [--expect-state active|down] [-p PORT] [-n PD_ITERATIONS]
//   sroce_devcheck --not-ours -d rxe0
//                  (passes when the sroce provider does NOT drive rxe0)
//
// Exit status: 0 when every check passed, 1 when any failed, 2 on usage
// errors or when the device cannot be opened at all.
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <infiniband/verbs.h>

// Only for "which provider claimed the device": verbs_device::ops->name.
#include "abi/private_abi.h"

namespace {

int g_num = 0;
int g_failed = 0;

__attribute__((format(printf, 2, 3))) bool tap(bool ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s %d - ", ok ? "ok" : "not ok", ++g_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		g_failed++;
	fflush(stdout);
	return ok;
}

__attribute__((format(printf, 1, 2))) void skip(const char *fmt, ...)
{
	va_list ap;
	printf("ok %d - ", ++g_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP\n");
}

__attribute__((format(printf, 1, 2))) void diag(const char *fmt, ...)
{
	va_list ap;
	printf("#   ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

int finish()
{
	printf("1..%d\n", g_num);
	printf("sroce_devcheck: %d passed, %d failed\n", g_num - g_failed,
	       g_failed);
	return g_failed ? 1 : 0;
}

[[noreturn]] void bail(const char *why)
{
	printf("Bail out! %s\n", why);
	finish();
	exit(2);
}

const char *port_state_str(int s)
{
	switch (s) {
	case IBV_PORT_NOP: return "NOP";
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	}
	return "?";
}

int mtu_bytes(int m)
{
	return (m >= IBV_MTU_256 && m <= IBV_MTU_4096) ? 128 << m : 0;
}

const char *link_layer_str(int l)
{
	switch (l) {
	case IBV_LINK_LAYER_UNSPECIFIED: return "unspecified";
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	}
	return "?";
}

const char *gid_type_str(unsigned t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCEv1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCEv2";
	}
	return "?";
}

// The active MTU the kernel's RoCE code derives from a netdev MTU
// (iboe_get_mtu(): minus GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 +
// ICRC 4 = 96 bytes, then the largest IB MTU that fits).
int expected_ib_mtu(int netdev_mtu)
{
	int room = netdev_mtu - 96;
	for (int m = IBV_MTU_4096; m >= IBV_MTU_256; m--)
		if (room >= mtu_bytes(m))
			return m;
	return 0;
}

std::string gid_str(const union ibv_gid &gid)
{
	char buf[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf)))
		return "?";
	return buf;
}

struct expected_gid {
	std::string text;	// as given on the command line
	union ibv_gid gid;	// RoCE v2 GID it must appear as
};

void usage(FILE *f)
{
	fprintf(f,
		"usage: sroce_devcheck -d DEV [options]\n"
		"  -d, --device DEV          RDMA device name (required)\n"
		"  -p, --port N              port to check (default 1)\n"
		"  -m, --mtu N               netdev MTU; checks active_mtu (1500 -> 1024, 9000 -> 4096)\n"
		"      --expect-active-mtu B expected active MTU in bytes instead of --mtu\n"
		"      --expect-state S      active (default) or down\n"
		"  -4 A.B.C.D                expect RoCE v2 GID ::ffff:A.B.C.D (repeatable)\n"
		"  -6 ADDR                   expect RoCE v2 GID ADDR (repeatable)\n"
		"  -n, --pd-iterations N     ibv_alloc_pd/ibv_dealloc_pd rounds (default 1000)\n"
		"      --not-ours            only check that DEV exists and the sroce provider\n"
		"                            does not drive it (another provider or none does)\n");
}

// All non-empty GID entries of the port, through ibv_query_gid_table and,
// if that is refused, ibv_query_gid_ex index by index.
std::vector<ibv_gid_entry> read_gids(ibv_context *ctx, int port, int tbl_len,
				     std::string &how)
{
	std::vector<ibv_gid_entry> out;
	size_t max = 0;
	ibv_device_attr_ex dattr = {};
	if (!ibv_query_device_ex(ctx, nullptr, &dattr))
		max = static_cast<size_t>(tbl_len > 0 ? tbl_len : 1) *
		      (dattr.orig_attr.phys_port_cnt ? dattr.orig_attr.phys_port_cnt : 1);
	if (max == 0)
		max = 256;
	std::vector<ibv_gid_entry> all(max);
	ssize_t n = ibv_query_gid_table(ctx, all.data(), all.size(), 0);
	if (n >= 0) {
		how = "ibv_query_gid_table returned " + std::to_string(n) + " entries";
		for (ssize_t i = 0; i < n; i++)
			if (static_cast<int>(all[i].port_num) == port)
				out.push_back(all[i]);
		return out;
	}
	how = std::string("ibv_query_gid_table failed (") + strerror(static_cast<int>(-n)) +
	      "), used ibv_query_gid_ex";
	for (int i = 0; i < tbl_len; i++) {
		ibv_gid_entry e = {};
		int ret = ibv_query_gid_ex(ctx, port, i, &e, 0);
		if (ret == 0)
			out.push_back(e);
		else if (ret != ENODATA)
			diag("ibv_query_gid_ex(port %d, index %d): %s", port, i,
			     strerror(ret));
	}
	return out;
}

// --not-ours: DEV exists (libibverbs lists it, or at least sysfs has it)
// and is not driven by the sroce provider.
int check_not_ours(ibv_device **list, ibv_device *dev, const char *devname,
		   const std::string &names)
{
	diag("devices: [%s]", names.c_str());
	const char *prov = nullptr;
	if (dev) {
		const verbs_device_ops *ops = verbs_get_device(dev)->ops;
		prov = ops && ops->name ? ops->name : "(none)";
		tap(true, "ibv_get_device_list lists %s", devname);
		diag("ibdev_path: %s, node_guid %016llx", dev->ibdev_path,
		     static_cast<unsigned long long>(be64toh(ibv_get_device_guid(dev))));
	} else {
		// Unclaimed devices are not listed: look for it in sysfs.
		const char *root = getenv("SYSFS_PATH");
		std::string path = std::string(root && *root ? root : "/sys") +
				   "/class/infiniband/" + devname;
		struct stat st;
		bool exists = stat(path.c_str(), &st) == 0;
		tap(exists, "%s exists (%s; no provider claimed it)", devname, path.c_str());
	}
	if (prov)
		tap(strcmp(prov, "sroce") != 0,
		    "%s is not driven by provider \"sroce\" (driven by \"%s\")", devname, prov);
	else
		tap(true, "%s is not driven by provider \"sroce\" (no provider)", devname);
	ibv_free_device_list(list);
	return finish();
}

} // namespace

int main(int argc, char **argv)
{
	const char *devname = nullptr;
	int port = 1;
	int netdev_mtu = 0;
	int expect_mtu_bytes = 0;
	int expect_state = IBV_PORT_ACTIVE;
	long pd_iterations = 1000;
	std::vector<expected_gid> want_v4, want_v6;

	bool not_ours = false;
	enum { OPT_STATE = 256, OPT_ACTIVE_MTU, OPT_NOT_OURS };
	static const struct option longopts[] = {
		{"device", required_argument, nullptr, 'd'},
		{"port", required_argument, nullptr, 'p'},
		{"mtu", required_argument, nullptr, 'm'},
		{"expect-active-mtu", required_argument, nullptr, OPT_ACTIVE_MTU},
		{"expect-state", required_argument, nullptr, OPT_STATE},
		{"pd-iterations", required_argument, nullptr, 'n'},
		{"not-ours", no_argument, nullptr, OPT_NOT_OURS},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "d:p:m:4:6:n:h", longopts, nullptr)) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			netdev_mtu = atoi(optarg);
			break;
		case OPT_ACTIVE_MTU:
			expect_mtu_bytes = atoi(optarg);
			break;
		case OPT_STATE:
			if (!strcmp(optarg, "active"))
				expect_state = IBV_PORT_ACTIVE;
			else if (!strcmp(optarg, "down"))
				expect_state = IBV_PORT_DOWN;
			else {
				fprintf(stderr, "--expect-state: active or down, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			pd_iterations = atol(optarg);
			break;
		case OPT_NOT_OURS:
			not_ours = true;
			break;
		case '4': {
			expected_gid e = {optarg, {}};
			struct in_addr a;
			if (inet_pton(AF_INET, optarg, &a) != 1) {
				fprintf(stderr, "-4: not an IPv4 address: %s\n", optarg);
				return 2;
			}
			// IPv4-mapped IPv6: ::ffff:A.B.C.D
			e.gid.raw[10] = 0xff;
			e.gid.raw[11] = 0xff;
			memcpy(&e.gid.raw[12], &a, 4);
			want_v4.push_back(e);
			break;
		}
		case '6': {
			expected_gid e = {optarg, {}};
			if (inet_pton(AF_INET6, optarg, e.gid.raw) != 1) {
				fprintf(stderr, "-6: not an IPv6 address: %s\n", optarg);
				return 2;
			}
			want_v6.push_back(e);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!devname || optind != argc || port < 1 || port > 255) {
		usage(stderr);
		return 2;
	}

	// 1. The device is listed.
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	if (!list) {
		tap(false, "ibv_get_device_list: %s", strerror(errno));
		bail("no device list");
	}
	ibv_device *dev = nullptr;
	std::string names;
	for (int i = 0; i < num; i++) {
		names += (i ? " " : "") + std::string(ibv_get_device_name(list[i]));
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			dev = list[i];
	}
	if (not_ours)
		return check_not_ours(list, dev, devname, names);
	if (!tap(dev != nullptr, "ibv_get_device_list lists %s", devname)) {
		diag("devices: [%s] (%d)", names.c_str(), num);
		diag("a device missing here has no claiming provider: try IBV_SHOW_WARNINGS=1");
		ibv_free_device_list(list);
		bail("device not found");
	}
	diag("devices: [%s]", names.c_str());

	// 2. ... and the sroce provider claimed it.
	const verbs_device_ops *ops = verbs_get_device(dev)->ops;
	const char *prov = ops && ops->name ? ops->name : "(none)";
	tap(!strcmp(prov, "sroce"), "%s is driven by provider \"sroce\" (got \"%s\")",
	    devname, prov);
	diag("uverbs: %s, ibdev_path: %s, node_type: %s, transport: %s",
	     dev->dev_name, dev->ibdev_path, ibv_node_type_str(dev->node_type),
	     dev->transport_type == IBV_TRANSPORT_IB ? "IB" : "other");

	// 3. The context opens (alloc_context / get_context + driver udata).
	ibv_context *ctx = ibv_open_device(dev);
	if (!tap(ctx != nullptr, "ibv_open_device(%s)", devname)) {
		diag("errno %d: %s", errno, strerror(errno));
		ibv_free_device_list(list);
		bail("cannot open device");
	}

	// 4-5. Device attributes.
	ibv_device_attr_ex da = {};
	int ret = ibv_query_device_ex(ctx, nullptr, &da);
	if (tap(ret == 0, "ibv_query_device_ex")) {
		const ibv_device_attr &a = da.orig_attr;
		diag("fw_ver %s node_guid %016llx vendor_id 0x%x part_id %u hw_ver %u",
		     a.fw_ver, static_cast<unsigned long long>(be64toh(a.node_guid)),
		     a.vendor_id, a.vendor_part_id, a.hw_ver);
		diag("max_qp %d max_qp_wr %d max_sge %d max_cq %d max_cqe %d max_mr %d max_pd %d",
		     a.max_qp, a.max_qp_wr, a.max_sge, a.max_cq, a.max_cqe, a.max_mr, a.max_pd);
		diag("max_mr_size %llu page_size_cap 0x%llx phys_port_cnt %u max_ah %d max_srq %d",
		     static_cast<unsigned long long>(a.max_mr_size),
		     static_cast<unsigned long long>(a.page_size_cap), a.phys_port_cnt,
		     a.max_ah, a.max_srq);
		diag("device_cap_flags 0x%x device_cap_flags_ex 0x%llx phys_port_cnt_ex %u",
		     a.device_cap_flags,
		     static_cast<unsigned long long>(da.device_cap_flags_ex),
		     da.phys_port_cnt_ex);
		bool limits = a.max_qp > 0 && a.max_qp_wr > 0 && a.max_sge > 0 &&
			      a.max_cq > 0 && a.max_cqe > 0 && a.max_mr > 0 &&
			      a.max_pd > 0 && a.max_mr_size > 0 && a.phys_port_cnt > 0;
		tap(limits, "device limits are nonzero (max_qp/qp_wr/sge/cq/cqe/mr/pd/mr_size/ports)");
		if (a.phys_port_cnt && port > a.phys_port_cnt)
			diag("port %d > phys_port_cnt %u", port, a.phys_port_cnt);
	} else {
		diag("ibv_query_device_ex: %d (%s)", ret, strerror(ret));
		tap(false, "device limits are nonzero (no attributes)");
	}

	// 6-9. Port attributes.
	ibv_port_attr pa = {};
	ret = ibv_query_port(ctx, static_cast<uint8_t>(port), &pa);
	int gid_tbl_len = 0;
	if (tap(ret == 0, "ibv_query_port(port %d)", port)) {
		gid_tbl_len = pa.gid_tbl_len;
		diag("state %s(%d) phys_state %u max_mtu %d active_mtu %d (%d bytes) link_layer %s(%u)",
		     port_state_str(pa.state), pa.state, pa.phys_state, mtu_bytes(pa.max_mtu),
		     pa.active_mtu, mtu_bytes(pa.active_mtu), link_layer_str(pa.link_layer),
		     pa.link_layer);
		diag("gid_tbl_len %d pkey_tbl_len %u port_cap_flags 0x%x max_msg_sz %u active_width %u active_speed %u",
		     pa.gid_tbl_len, pa.pkey_tbl_len, pa.port_cap_flags, pa.max_msg_sz,
		     pa.active_width, pa.active_speed);
		tap(pa.state == expect_state, "port state is %s (got %s)",
		    port_state_str(expect_state), port_state_str(pa.state));
		int want = 0;
		if (expect_mtu_bytes)
			for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
				if (mtu_bytes(m) == expect_mtu_bytes)
					want = m;
		if (!want && netdev_mtu)
			want = expected_ib_mtu(netdev_mtu);
		if (want)
			tap(pa.active_mtu == want,
			    "active_mtu is %d bytes (enum %d) for netdev MTU %d (got %d bytes, enum %d)",
			    mtu_bytes(want), want, netdev_mtu, mtu_bytes(pa.active_mtu), pa.active_mtu);
		else if (netdev_mtu || expect_mtu_bytes)
			tap(false, "no IB MTU fits netdev MTU %d / %d bytes", netdev_mtu,
			    expect_mtu_bytes);
		else
			skip("active_mtu (no --mtu given)");
		tap(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer is Ethernet (got %s)",
		    link_layer_str(pa.link_layer));
	} else {
		diag("ibv_query_port: %d (%s)", ret, strerror(ret));
	}

	// 10-. GIDs: RoCE v2 entries for the expected addresses.
	if (want_v4.empty() && want_v6.empty()) {
		skip("RoCE v2 GID for an IPv4 address (no -4 given)");
		skip("RoCE v2 GID for an IPv6 address (no -6 given)");
	} else {
		std::string how;
		std::vector<ibv_gid_entry> gids = read_gids(ctx, port, gid_tbl_len, how);
		diag("%s; port %d has %zu GIDs:", how.c_str(), port, gids.size());
		for (const ibv_gid_entry &e : gids) {
			char ifname[IF_NAMESIZE] = "-";
			if (e.ndev_ifindex)
				if_indextoname(e.ndev_ifindex, ifname);
			diag("  [%u] %-6s %-40s ndev %s(%u)", e.gid_index,
			     gid_type_str(e.gid_type), gid_str(e.gid).c_str(), ifname,
			     e.ndev_ifindex);
		}
		auto check = [&](const expected_gid &w, const char *fam) {
			const ibv_gid_entry *hit = nullptr;
			for (const ibv_gid_entry &e : gids)
				if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
				    !memcmp(e.gid.raw, w.gid.raw, sizeof(w.gid.raw)))
					hit = &e;
			if (hit)
				tap(true, "RoCE v2 GID %s for %s %s at index %u",
				    gid_str(w.gid).c_str(), fam, w.text.c_str(), hit->gid_index);
			else
				tap(false, "RoCE v2 GID %s for %s %s (not in the table above)",
				    gid_str(w.gid).c_str(), fam, w.text.c_str());
		};
		for (const expected_gid &w : want_v4)
			check(w, "IPv4");
		for (const expected_gid &w : want_v6)
			check(w, "IPv6");
		// Both ways of reading the table agree: ibv_query_gid_table
		// (one ioctl) and ibv_query_gid_ex for each of its entries.
		tap(how.rfind("ibv_query_gid_table returned", 0) == 0,
		    "ibv_query_gid_table: %s", how.c_str());
		size_t agree = 0;
		for (const ibv_gid_entry &e : gids) {
			ibv_gid_entry x = {};
			int ret = ibv_query_gid_ex(ctx, port, e.gid_index, &x, 0);
			if (ret)
				diag("ibv_query_gid_ex(port %d, index %u): %s", port,
				     e.gid_index, strerror(ret));
			else if (memcmp(x.gid.raw, e.gid.raw, sizeof(x.gid.raw)) ||
				 x.gid_type != e.gid_type || x.port_num != e.port_num ||
				 x.ndev_ifindex != e.ndev_ifindex || x.gid_index != e.gid_index)
				diag("ibv_query_gid_ex(port %d, index %u): %s %s ndev %u differs",
				     port, e.gid_index, gid_type_str(x.gid_type),
				     gid_str(x.gid).c_str(), x.ndev_ifindex);
			else
				agree++;
		}
		tap(!gids.empty() && agree == gids.size(),
		    "ibv_query_gid_ex agrees with the table on %zu of %zu entries",
		    agree, gids.size());
	}

	// PD churn.
	long done = 0;
	int err = 0;
	const char *stage = "";
	for (; done < pd_iterations; done++) {
		ibv_pd *pd = ibv_alloc_pd(ctx);
		if (!pd) {
			err = errno;
			stage = "ibv_alloc_pd";
			break;
		}
		int r = ibv_dealloc_pd(pd);
		if (r) {
			err = r;
			stage = "ibv_dealloc_pd";
			break;
		}
	}
	if (!tap(done == pd_iterations, "ibv_alloc_pd/ibv_dealloc_pd x%ld", pd_iterations))
		diag("%s failed at round %ld: %s", stage, done, strerror(err));

	ret = ibv_close_device(ctx);
	tap(ret == 0, "ibv_close_device");
	ibv_free_device_list(list);
	return finish();
}
