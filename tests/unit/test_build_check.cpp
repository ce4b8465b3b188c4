// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// The build refuses any libibverbs but rdma-core 44's IBVERBS_PRIVATE_34,
// and the built provider cannot be loaded against a libibverbs without
// that symbol version.  Runs provider/Makefile against stand-in libraries
// built by "make unit" (fake_libibverbs.c with different version scripts).
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace {

using sroce_test::contains;
using sroce_test::run;
using sroce_test::run_result;

const char kWant[] =
	"but this provider is written against IBVERBS_PRIVATE_34 (rdma-core 44)";

// make from inside "make unit": do not inherit its jobserver/flags.
run_result make_provider(const std::string &repo, std::vector<std::string> args)
{
	std::vector<std::string> argv = {"make", "--no-print-directory", "-C",
					 repo + "/provider"};
	argv.insert(argv.end(), args.begin(), args.end());
	return run(argv, {{"MAKEFLAGS", ""}, {"MAKELEVEL", ""}, {"MFLAGS", ""}});
}

TEST(BuildCheck, InstalledLibibverbsPasses)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	run_result r = make_provider(repo, {"check-abi"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_FALSE(contains(r.err, "sroce provider:")) << r.err;
}

TEST(BuildCheck, OtherPrivateAbiStopsWithMessage)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(
		repo, {"check-abi", "LIBIBVERBS=" + fakes + "/pabi35/libibverbs.so.1.14.60.0"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, std::string("sroce provider: installed libibverbs provides "
						"private ABI IBVERBS_PRIVATE_35, ") +
					    kWant))
		<< r.err;
}

TEST(BuildCheck, FullBuildStopsBeforeCompiling)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	sroce_test::temp_dir t;
	const std::string bdir = t.path() + "/build/provider";
	run_result r = make_provider(
		repo, {"all", "BUILD_DIR=" + bdir,
		       "LIBIBVERBS=" + fakes + "/pabi35/libibverbs.so.1.14.60.0"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "IBVERBS_PRIVATE_35")) << r.err;
	EXPECT_TRUE(contains(r.err, kWant)) << r.err;
	EXPECT_NE(access((bdir + "/libsroce-rdmav34.so").c_str(), F_OK), 0);
	EXPECT_NE(access((bdir + "/obj/sroce_provider.o").c_str(), F_OK), 0);
	EXPECT_NE(access((t.path() + "/build/tests/sroce_devcheck").c_str(), F_OK), 0);
}

// IBVERBS_PRIVATE_34 was kept from rdma-core 34 to 56 while the provider
// structs changed: the release has to match too.
TEST(BuildCheck, SamePrivateAbiOtherReleaseStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(
		repo, {"check-abi", "LIBIBVERBS=" + fakes + "/pabi34-rel50/libibverbs.so.1.14.50.0"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "provides private ABI IBVERBS_PRIVATE_34 of rdma-core 50")) << r.err;
	EXPECT_TRUE(contains(r.err, kWant)) << r.err;
}

TEST(BuildCheck, NoPrivateAbiStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(repo, {"check-abi", "LIBIBVERBS=" + fakes + "/nover/libibverbs.so.1"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "provides no private ABI")) << r.err;
	EXPECT_TRUE(contains(r.err, kWant)) << r.err;
}

TEST(BuildCheck, MissingLibraryStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	run_result r = make_provider(repo, {"check-abi", "LIBIBVERBS=/nonexistent/libibverbs.so.1"});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "sroce provider: libibverbs not found")) << r.err;
}

// Positive control on a stand-in: the check keys on the symbol version and
// the release, not on the path being the system library.
TEST(BuildCheck, StandInWithRightAbiPasses)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(
		repo, {"check-abi", "LIBIBVERBS=" + fakes + "/pabi34-rel44/libibverbs.so.1.14.44.0"});
	EXPECT_EQ(r.status, 0) << r.err;
}

// The .so's imports are bound to IBVERBS_PRIVATE_34: the dynamic loader
// refuses it next to a libibverbs that lacks that version node.
TEST(ProviderLoad, FailsCleanlyAgainstOtherPrivateAbi)
{
	SROCE_REQUIRE_ENV(bdir, "SROCE_BUILD_DIR");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	SROCE_REQUIRE_ENV(probe, "SROCE_DLOPEN_PROBE");
	const std::string so = bdir + "/libsroce-rdmav34.so";
	run_result r = run({probe, so}, {{"LD_LIBRARY_PATH", fakes + "/pabi35"}});
	EXPECT_EQ(r.status, 1) << r.out << r.err;
	EXPECT_TRUE(contains(r.err, "IBVERBS_PRIVATE_34")) << r.err;
	EXPECT_TRUE(contains(r.err, "not found")) << r.err;

	r = run({probe, so});
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "loaded\n");
}

TEST(ProviderLoad, ImportsAreVersionedAndNothingIsExported)
{
	SROCE_REQUIRE_ENV(bdir, "SROCE_BUILD_DIR");
	run_result r = run({"objdump", "-T", bdir + "/libsroce-rdmav34.so"});
	ASSERT_EQ(r.status, 0) << r.err;
	for (const char *sym : {"verbs_register_driver_34", "_verbs_init_and_alloc_context",
				"verbs_uninit_context", "verbs_set_ops", "ibv_cmd_get_context",
				"ibv_cmd_query_device_any", "ibv_cmd_query_port",
				"ibv_cmd_alloc_pd", "ibv_cmd_dealloc_pd"}) {
		EXPECT_TRUE(contains(r.out, std::string("(IBVERBS_PRIVATE_34) ") + sym))
			<< sym << "\n" << r.out;
	}
	// Only undefined (imported) symbols: no line with a defined section.
	std::istringstream lines(r.out);
	std::string line;
	while (std::getline(lines, line)) {
		if (line.size() < 20 || line.find("*UND*") != std::string::npos)
			continue;
		if (contains(line, " DF ") || contains(line, " DO ") || contains(line, " g "))
			ADD_FAILURE() << "exported: " << line;
	}
}

} // namespace
