// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// The provider inside the real libibverbs 44, on a fake sysfs tree with
// fake_uverbs.cpp (LD_PRELOAD) standing in for the kernel's uverbs char
// device.  Exercises registration, device matching, get_context with our
// udata, query_device_ex, query_port, the GID sysfs fallback, PD churn and
// tests/tools/sroce_devcheck itself (including its failure reports).
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <sroce-abi.h>

namespace {

using sroce_test::contains;
using sroce_test::read_file;
using sroce_test::run;
using sroce_test::run_result;
using sroce_test::write_file;

struct fake_dev {
	std::string ibdev;		// sysfs name
	int uverbs;			// uverbsN
	int uverbs_abi;			// class/infiniband_verbs/uverbsN/abi_version
	std::string sroce_abi;		// sroce_abi_version contents; "" = absent
};

// GID table of every fake device's port 1 (index: gid, type, ndev).
const char *const kGids[][3] = {
	{"fe80:0000:0000:0000:0000:00ff:fe00:0001", "IB/RoCE v1", "lo"},
	{"fe80:0000:0000:0000:0000:00ff:fe00:0001", "RoCE v2", "lo"},
	{"0000:0000:0000:0000:0000:ffff:c000:0201", "RoCE v2", "lo"},	// 192.0.2.1
	{"2001:0db8:0000:0000:0000:0000:0000:0001", "RoCE v2", "lo"},	// 2001:db8::1
};

class FakeKernel : public ::testing::Test {
protected:
	void SetUp() override
	{
		repo_ = sroce_test::env_path("SROCE_REPO_ROOT");
		bdir_ = sroce_test::env_path("SROCE_BUILD_DIR");
		devcheck_ = sroce_test::env_path("SROCE_DEVCHECK");
		shim_ = sroce_test::env_path("SROCE_FAKE_UVERBS");
		if (bdir_.empty() || devcheck_.empty() || shim_.empty())
			GTEST_SKIP() << "run through 'make unit'";
		ASSERT_FALSE(tmp_.path().empty());
		sys_ = tmp_.path() + "/sys";
		log_ = tmp_.path() + "/uverbs.log";
	}

	void add(const fake_dev &d, int gid_tbl_len = 4)
	{
		const std::string uv = sys_ + "/class/infiniband_verbs/uverbs" +
				       std::to_string(d.uverbs);
		write_file(sys_ + "/class/infiniband_verbs/abi_version", "6\n");
		write_file(uv + "/ibdev", d.ibdev + "\n");
		write_file(uv + "/dev", "231:" + std::to_string(192 + d.uverbs) + "\n");
		write_file(uv + "/abi_version", std::to_string(d.uverbs_abi) + "\n");
		const std::string ib = sys_ + "/class/infiniband/" + d.ibdev;
		write_file(ib + "/node_type", "1: CA\n");
		write_file(ib + "/node_guid", "0200:0000:0000:00ab\n");
		if (!d.sroce_abi.empty())
			write_file(ib + "/" SROCE_SYSFS_ABI_ATTR, d.sroce_abi);
		for (int i = 0; i < gid_tbl_len; i++) {
			const std::string p = ib + "/ports/1/";
			const std::string idx = std::to_string(i);
			if (i < 4) {
				write_file(p + "gids/" + idx, std::string(kGids[i][0]) + "\n");
				write_file(p + "gid_attrs/types/" + idx, std::string(kGids[i][1]) + "\n");
				write_file(p + "gid_attrs/ndevs/" + idx, std::string(kGids[i][2]) + "\n");
			} else {
				write_file(p + "gids/" + idx,
					   "0000:0000:0000:0000:0000:0000:0000:0000\n");
				write_file(p + "gid_attrs/types/" + idx, "IB/RoCE v1\n");
			}
		}
	}

	std::map<std::string, std::string> env(std::map<std::string, std::string> extra = {})
	{
		std::map<std::string, std::string> e = {
			{"SYSFS_PATH", sys_},
			{"LD_PRELOAD", shim_},
			{"RDMAV_DRIVERS", bdir_ + "/libsroce"},
			{"FAKE_UVERBS_LOG", log_},
			{"IBV_SHOW_WARNINGS", "1"},
		};
		for (auto &[k, v] : extra)
			e[k] = v;
		return e;
	}

	run_result devcheck(std::vector<std::string> args,
			    std::map<std::string, std::string> extra = {})
	{
		args.insert(args.begin(), devcheck_);
		return run(args, env(extra));
	}

	sroce_test::temp_dir tmp_;
	std::string repo_, bdir_, devcheck_, shim_, sys_, log_;
};

const std::string kAbi = std::to_string(SROCE_UVERBS_ABI_VERSION) + "\n";
const int kUverbsAbi = SROCE_UVERBS_ABI_VERSION;

TEST_F(FakeKernel, DevcheckPassesOnHealthyDevice)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0", "--mtu", "1500", "-4", "192.0.2.1",
				 "-6", "2001:db8::1", "--expect-state", "active"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_FALSE(contains(r.out, "not ok")) << r.out;
	EXPECT_TRUE(contains(r.out, "ok 2 - sroce0 is driven by provider \"sroce\"")) << r.out;
	EXPECT_TRUE(contains(r.out, "RoCE v2 GID ::ffff:192.0.2.1 for IPv4 192.0.2.1 at index 2"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "RoCE v2 GID 2001:db8::1 for IPv6 2001:db8::1 at index 3"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "ibv_alloc_pd/ibv_dealloc_pd x1000")) << r.out;
	EXPECT_TRUE(contains(r.out, "fw_ver 1.2.3")) << r.out;	// query_device_ex
	EXPECT_TRUE(contains(r.out, "sroce_devcheck: 15 passed, 0 failed")) << r.out;
	// libibverbs loaded us without complaint
	EXPECT_FALSE(contains(r.err, "Warning")) << r.err;
	EXPECT_FALSE(contains(r.err, "couldn't load driver")) << r.err;
}

// What the kernel saw: exact udata sizes of the commands with driver data,
// every PD released, the context closed.
TEST_F(FakeKernel, KernelSeesExpectedUdata)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0", "-n", "3"});
	ASSERT_EQ(r.status, 0) << r.out << r.err;
	const std::string log = read_file(log_);
	const std::string ctx_out = std::to_string(sizeof(struct sroce_alloc_ucontext_resp));
	const std::string pd_out = std::to_string(sizeof(struct sroce_alloc_pd_resp));
	EXPECT_TRUE(contains(log, "GET_CONTEXT in=8 out=" + std::to_string(8 + 16) +
					  " udata_in=0 udata_out=" + ctx_out + " ret=0"))
		<< log;
	EXPECT_TRUE(contains(log, "ALLOC_PD in=8 out=12 udata_in=0 udata_out=" + pd_out + " ret=0"))
		<< log;
	EXPECT_TRUE(contains(log, "DEALLOC_PD in=4 out=0 udata_in=0 udata_out=0 ret=0")) << log;
	EXPECT_TRUE(contains(log, "QUERY_PORT in=16 out=40 udata_in=0 udata_out=0 ret=0")) << log;
	EXPECT_TRUE(contains(log, "EX_QUERY_DEVICE")) << log;
	EXPECT_TRUE(contains(log, "CLOSE uverbs0 context=1 live_pds=0")) << log;
	EXPECT_FALSE(contains(log, "ret=9")) << log;	// no EBADF/ENOSYS style failures
}

TEST_F(FakeKernel, IbvDevicesListsDeviceWithoutWarnings)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = run({"ibv_devices"}, env());
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_TRUE(contains(r.out, "sroce0")) << r.out;
	EXPECT_EQ(r.err, "");
}

// tests/tools/sroce_objects (CQs and MRs with the spec's errnos) against
// the fake kernel, which answers like kernel/sroce_cq.c and sroce_mr.c.
TEST_F(FakeKernel, SroceObjectsPasses)
{
	SROCE_REQUIRE_ENV(objects, "SROCE_OBJECTS");
	add({"sroce0", 0, kUverbsAbi, kAbi});
	// The fake kernel answers CQ and MR commands; SRQs and AHs are
	// checked on the real kernel in the VM.
	run_result r = run({objects, "-d", "sroce0", "-n", "50", "-s", "cq,mr"}, env());
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_TRUE(contains(r.out, "sroce_objects: 39 passed, 0 failed")) << r.out;
	EXPECT_EQ(r.err, "");
	const std::string log = read_file(log_);
	EXPECT_TRUE(contains(log, "CLOSE uverbs0 context=1 live_pds=0 live_cqs=0 live_mrs=0"))
		<< log;
	EXPECT_FALSE(contains(log, "(length differs)")) << log;
}

// ... and its checks fail when the kernel misbehaves: here every ring
// mapping fails, so no CQ can be created.
TEST_F(FakeKernel, SroceObjectsReportsCqFailures)
{
	SROCE_REQUIRE_ENV(objects, "SROCE_OBJECTS");
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = run({objects, "-d", "sroce0", "-n", "5", "-s", "cq,mr"},
			   env({{"FAKE_MMAP_FAIL", "1"}}));
	EXPECT_EQ(r.status, 1) << r.out << r.err;
	EXPECT_TRUE(contains(r.out, "not ok 4 - 5 x create/destroy CQ (1..257 entries): 5 failures"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "not ok 5 - CQ of 100 entries holds at least 100 (cqe -1)"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "not ok 6 - CQ of 262144 entries, libfabric rxm's (cqe -1, errno 12)"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "not ok 10 - CQ on a completion channel")) << r.out;
	// the MR half does not depend on rings
	EXPECT_TRUE(contains(r.out, "ok 27 - 5 x reg/dereg MR (odd sizes and offsets): 0 failures"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "sroce_objects: 25 passed, 4 failed")) << r.out;
}

// Never claim what is not ours: rxe0 (claimed by the rxe provider by its
// name), a renamed device without the attribute, an sroce device with an
// ABI we do not speak.
TEST_F(FakeKernel, ClaimsOnlySroceDevices)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	add({"rxe0", 1, 2, ""});
	add({"sroce1", 2, kUverbsAbi, ""});
	add({"mydev", 3, kUverbsAbi, kAbi});	// any name the user picked
	add({"sroce9", 4, kUverbsAbi, std::to_string(SROCE_UVERBS_ABI_VERSION + 1) + "\n"});

	// rxe0 goes to the rxe provider (ibverbs-providers), or to nobody.
	run_result r = devcheck({"-d", "rxe0", "-n", "1"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.out, "not ok 2 - rxe0 is driven by provider \"sroce\" (got \"rxe\")") ||
		    contains(r.out, "not ok 1 - ibv_get_device_list lists rxe0"))
		<< r.out;

	r = devcheck({"-d", "mydev", "-n", "1"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;

	r = devcheck({"-d", "sroce1", "-n", "1"});
	EXPECT_EQ(r.status, 2);
	EXPECT_TRUE(contains(r.out, "not ok 1 - ibv_get_device_list lists sroce1")) << r.out;
	EXPECT_TRUE(contains(r.err, "no userspace device-specific driver found for sroce1")) << r.err;

	r = devcheck({"-d", "sroce9", "-n", "1"});
	EXPECT_EQ(r.status, 2);
	EXPECT_TRUE(contains(r.err, "sroce: Warning: device sroce9 speaks sroce ABI " +
					    std::to_string(SROCE_UVERBS_ABI_VERSION + 1)))
		<< r.err;
}

// sroce_devcheck --not-ours (the VM suite's "we do not claim rxe0").
TEST_F(FakeKernel, DevcheckNotOurs)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	add({"rxe0", 1, 2, ""});
	add({"other0", 2, kUverbsAbi, ""});

	run_result r = devcheck({"--not-ours", "-d", "rxe0"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_TRUE(contains(r.out, "ok 2 - rxe0 is not driven by provider \"sroce\"")) << r.out;

	r = devcheck({"--not-ours", "-d", "other0"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_TRUE(contains(r.out, "(no provider)")) << r.out;

	r = devcheck({"--not-ours", "-d", "sroce0"});
	EXPECT_EQ(r.status, 1) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 2 - sroce0 is not driven by provider \"sroce\" "
				    "(driven by \"sroce\")"))
		<< r.out;

	r = devcheck({"--not-ours", "-d", "nosuch0"});
	EXPECT_EQ(r.status, 1) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 1 - nosuch0 exists")) << r.out;
}

// The uverbs abi_version is checked by libibverbs against
// match_{min,max}_abi_version.
TEST_F(FakeKernel, UverbsAbiMismatchIsRefused)
{
	add({"sroce0", 0, kUverbsAbi + 1, kAbi});
	run_result r = devcheck({"-d", "sroce0", "-n", "1"});
	EXPECT_EQ(r.status, 2);
	EXPECT_TRUE(contains(r.err, "Driver sroce does not support the kernel ABI of " +
					    std::to_string(kUverbsAbi + 1)))
		<< r.err;
}

// A kernel whose context response carries another ABI version (or none):
// the context is refused with EPROTO and the kernel context released.
TEST_F(FakeKernel, ContextAbiMismatchFailsOpen)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0"}, {{"FAKE_SROCE_CTX_ABI", "0"}});
	EXPECT_EQ(r.status, 2);
	EXPECT_TRUE(contains(r.out, "not ok 3 - ibv_open_device(sroce0)")) << r.out;
	EXPECT_TRUE(contains(r.out, "Protocol error")) << r.out;
	EXPECT_TRUE(contains(r.err, "kernel context ABI 0, provider expects")) << r.err;
	EXPECT_TRUE(contains(read_file(log_), "CLOSE uverbs0 context=1 live_pds=0"));
}

// devcheck's own checks must be able to fail, with the real values shown.
TEST_F(FakeKernel, DevcheckReportsWrongStateMtuAndGids)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0", "--mtu", "9000", "-4", "198.51.100.7",
				 "-6", "2001:db8::99", "-n", "10"},
				{{"FAKE_PORT_STATE", "1"}});
	EXPECT_EQ(r.status, 1) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 7 - port state is ACTIVE (got DOWN)")) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 8 - active_mtu is 4096 bytes (enum 5) for netdev MTU 9000 "
				    "(got 1024 bytes, enum 3)"))
		<< r.out;
	EXPECT_TRUE(contains(r.out, "not ok 10 - RoCE v2 GID ::ffff:198.51.100.7 for IPv4")) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 11 - RoCE v2 GID 2001:db8::99 for IPv6")) << r.out;
	EXPECT_TRUE(contains(r.out, "::ffff:192.0.2.1")) << r.out;	// the table is listed
	EXPECT_TRUE(contains(r.out, "sroce_devcheck: 11 passed, 4 failed")) << r.out;
}

TEST_F(FakeKernel, DevcheckDownPortAndJumboMtu)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0", "--mtu", "9000", "--expect-state", "down",
				 "-n", "10"},
				{{"FAKE_PORT_STATE", "1"}, {"FAKE_ACTIVE_MTU", "5"}});
	EXPECT_EQ(r.status, 0) << r.out;
	EXPECT_TRUE(contains(r.out, "# SKIP")) << r.out;	// no -4/-6 given
}

TEST_F(FakeKernel, DevcheckReportsPdFailure)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "sroce0", "-n", "5"}, {{"FAKE_PD_LIMIT", "0"}});
	EXPECT_EQ(r.status, 1) << r.out;
	EXPECT_TRUE(contains(r.out, "not ok 12 - ibv_alloc_pd/ibv_dealloc_pd x5")) << r.out;
	EXPECT_TRUE(contains(r.out, "ibv_alloc_pd failed at round 0: Cannot allocate memory"))
		<< r.out;
}

TEST_F(FakeKernel, MissingDeviceBailsOut)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	run_result r = devcheck({"-d", "nosuchdev"});
	EXPECT_EQ(r.status, 2);
	EXPECT_TRUE(contains(r.out, "not ok 1 - ibv_get_device_list lists nosuchdev")) << r.out;
	EXPECT_TRUE(contains(r.out, "devices: [sroce0]")) << r.out;
	EXPECT_TRUE(contains(r.out, "Bail out!")) << r.out;
}

// Loaded into a libibverbs whose file name says another rdma-core release
// (same IBVERBS_PRIVATE_34 name, different private structs), the provider
// stays unregistered instead of using the wrong function tables.
TEST_F(FakeKernel, RefusesToRegisterUnderOtherRelease)
{
	add({"sroce0", 0, kUverbsAbi, kAbi});
	const std::string lib = sroce_test::env_path("SROCE_LIBIBVERBS");
	ASSERT_FALSE(lib.empty());
	const std::string dir = tmp_.path() + "/lib";
	sroce_test::mkdirs(dir);
	ASSERT_EQ(run({"cp", lib, dir + "/libibverbs.so.1.14.50.0"}).status, 0);
	ASSERT_EQ(run({"ln", "-s", "libibverbs.so.1.14.50.0", dir + "/libibverbs.so.1"}).status, 0);
	run_result r = devcheck({"-d", "sroce0", "-n", "1"}, {{"LD_LIBRARY_PATH", dir}});
	EXPECT_EQ(r.status, 2) << r.out << r.err;
	EXPECT_TRUE(contains(r.err, "is rdma-core 50; this provider is built for rdma-core 44"))
		<< r.err;
	EXPECT_TRUE(contains(r.err, "no userspace device-specific driver found for sroce0")) << r.err;
}

} // namespace
