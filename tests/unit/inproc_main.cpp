// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// main() of the in-process tests (see inproc.hpp): needs fake_uverbs in
// LD_PRELOAD and SROCE_BUILD_DIR (the provider) - "make unit" sets both.
// Builds a fake sysfs tree with one sroce device, sroce0, points
// libibverbs at it and at the built provider, then runs the tests.
#include <dlfcn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "inproc.hpp"
#include "test_util.hpp"

namespace inproc {

fake_api fake;
std::string g_log_path;

size_t log_size()
{
	struct stat st;
	return stat(g_log_path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

std::string read_log_from(size_t offset)
{
	std::string all = sroce_test::read_file(g_log_path);
	return offset < all.size() ? all.substr(offset) : "";
}

void Verbs::SetUp()
{
	log_mark_ = log_size();
	maps_at_start_ = fake.live_maps();
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	ASSERT_TRUE(list) << strerror(errno);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "sroce0"))
			ctx_ = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	ASSERT_TRUE(ctx_) << "cannot open sroce0: " << strerror(errno);
	pd_ = ibv_alloc_pd(ctx_);
	ASSERT_TRUE(pd_) << strerror(errno);
}

void Verbs::TearDown()
{
	if (pd_) {
		EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
	}
	if (ctx_) {
		EXPECT_EQ(ibv_close_device(ctx_), 0);
	}
	// Everything the test made was destroyed and unmapped.
	EXPECT_EQ(fake.live_maps(), maps_at_start_);
	EXPECT_TRUE(contains(log(), "live_pds=0 live_cqs=0 live_mrs=0")) << log();
}

} // namespace inproc

namespace {

template <class F>
bool resolve(F &fn, const char *name)
{
	fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
	return fn != nullptr;
}

void write_sysfs(const std::string &sys)
{
	using sroce_test::write_file;
	const std::string uv = sys + "/class/infiniband_verbs/uverbs0";
	write_file(sys + "/class/infiniband_verbs/abi_version", "6\n");
	write_file(uv + "/ibdev", "sroce0\n");
	write_file(uv + "/dev", "231:192\n");
	write_file(uv + "/abi_version", std::to_string(SROCE_UVERBS_ABI_VERSION) + "\n");
	const std::string ib = sys + "/class/infiniband/sroce0";
	write_file(ib + "/node_type", "1: CA\n");
	write_file(ib + "/node_guid", "0200:0000:0000:00ab\n");
	write_file(ib + "/" SROCE_SYSFS_ABI_ATTR,
		   std::to_string(SROCE_UVERBS_ABI_VERSION) + "\n");
	const std::string p = ib + "/ports/1/";
	write_file(p + "gids/0", "fe80:0000:0000:0000:0000:00ff:fe00:0001\n");
	write_file(p + "gid_attrs/types/0", "RoCE v2\n");
	write_file(p + "gid_attrs/ndevs/0", "lo\n");
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);

	using inproc::fake;
	if (!resolve(fake.cq_push, "fake_uverbs_cq_push") ||
	    !resolve(fake.cq_state, "fake_uverbs_cq_state") ||
	    !resolve(fake.cq_arms, "fake_uverbs_cq_arms") ||
	    !resolve(fake.cq_poke_prod, "fake_uverbs_cq_poke_prod") ||
	    !resolve(fake.live_maps, "fake_uverbs_live_maps") ||
	    !resolve(fake.qp_ring, "fake_uverbs_qp_ring") ||
	    !resolve(fake.qp_doorbells, "fake_uverbs_qp_doorbells") ||
	    !resolve(fake.srq_ring, "fake_uverbs_srq_ring")) {
		fprintf(stderr, "sroce_unit_inproc: fake_uverbs is not preloaded "
				"(run through 'make unit', or LD_PRELOAD=.../libfake_uverbs.so)\n");
		return 2;
	}
	const char *bdir = getenv("SROCE_BUILD_DIR");
	if (!bdir || !*bdir) {
		fprintf(stderr, "sroce_unit_inproc: SROCE_BUILD_DIR not set\n");
		return 2;
	}

	sroce_test::temp_dir tmp;
	if (tmp.path().empty())
		return 2;
	write_sysfs(tmp.path() + "/sys");
	inproc::g_log_path = tmp.path() + "/uverbs.log";
	setenv("SYSFS_PATH", (tmp.path() + "/sys").c_str(), 1);
	setenv("RDMAV_DRIVERS", (std::string(bdir) + "/libsroce").c_str(), 1);
	setenv("FAKE_UVERBS_LOG", inproc::g_log_path.c_str(), 1);
	setenv("IBV_SHOW_WARNINGS", "1", 1);
	// Children (none expected) must not inherit the fake.
	unsetenv("LD_PRELOAD");

	int ret = RUN_ALL_TESTS();
	const ::testing::UnitTest &u = *::testing::UnitTest::GetInstance();
	printf("sroce_unit_inproc: %d passed, %d failed, %d skipped\n",
	       u.successful_test_count(), u.failed_test_count(),
	       u.skipped_test_count());
	return ret;
}
