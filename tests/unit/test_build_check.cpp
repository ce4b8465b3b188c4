// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// The build selects the rdma-core release of the libibverbs it finds
// (44-65) and refuses one it cannot tell, one outside that range or one
// that does not export that release's private ABI; the built provider
// cannot be loaded against a libibverbs without its symbol version.  Runs
// provider/Makefile against stand-in libraries built by "make unit"
// (fake_libibverbs.c with different file names and version scripts).
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace {

using sroce_test::contains;
using sroce_test::run;
using sroce_test::run_result;

const char kRange[] = "the sroce provider builds against rdma-core 44-65";

// make from inside "make unit": do not inherit its jobserver/flags.
run_result make_provider(const std::string &repo, std::vector<std::string> args)
{
	std::vector<std::string> argv = {"make", "--no-print-directory", "-C",
					 repo + "/provider"};
	argv.insert(argv.end(), args.begin(), args.end());
	return run(argv, {{"MAKEFLAGS", ""}, {"MAKELEVEL", ""}, {"MFLAGS", ""}});
}

std::string fake(const std::string &fakes, const std::string &rel)
{
	return "LIBIBVERBS=" + fakes + "/" + rel;
}

TEST(BuildCheck, InstalledLibibverbsPasses)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	run_result r = make_provider(repo, {"check-abi"});
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_FALSE(contains(r.err, "sroce provider:")) << r.err;
	EXPECT_TRUE(contains(r.out, "sroce provider: building for rdma-core 44, IBVERBS_PRIVATE_34"))
		<< r.out;
}

// Release 60 must export IBVERBS_PRIVATE_59; a library that says 60 but
// exports another private ABI is refused.
TEST(BuildCheck, OtherPrivateAbiStopsWithMessage)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(
		repo, {"check-abi", fake(fakes, "pabi35-rel60/libibverbs.so.1.15.60.0")});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "sroce provider: installed libibverbs provides private ABI "
				    "IBVERBS_PRIVATE_35, but rdma-core 60 ("))
		<< r.err;
	EXPECT_TRUE(contains(r.err, "exports its providers' ABI as IBVERBS_PRIVATE_59 "
				    "(verbs_register_driver_59)"))
		<< r.err;
}

TEST(BuildCheck, FullBuildStopsBeforeCompiling)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	sroce_test::temp_dir t;
	const std::string bdir = t.path() + "/build/provider";
	run_result r = make_provider(
		repo, {"all", "BUILD_DIR=" + bdir, fake(fakes, "pabi35-rel60/libibverbs.so.1.15.60.0")});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "IBVERBS_PRIVATE_35")) << r.err;
	EXPECT_TRUE(contains(r.err, "IBVERBS_PRIVATE_59")) << r.err;
	EXPECT_NE(access((bdir + "/obj/sroce_provider.o").c_str(), F_OK), 0);
	EXPECT_NE(access((t.path() + "/build/tests/sroce_devcheck").c_str(), F_OK), 0);
	run_result ls = run({"ls", bdir});
	EXPECT_FALSE(contains(ls.out, ".so")) << ls.out;
}

// Outside 44-65 the build stops with the supported range, before compiling.
TEST(BuildCheck, ReleaseOutsideRangeStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	for (const char *lib : {"pabi66-rel66/libibverbs.so.1.19.66.0",
				"pabi34-rel43/libibverbs.so.1.14.43.0"}) {
		sroce_test::temp_dir t;
		const std::string bdir = t.path() + "/build/provider";
		run_result r = make_provider(repo, {"all", "BUILD_DIR=" + bdir, fake(fakes, lib)});
		EXPECT_NE(r.status, 0) << lib;
		const std::string rel = std::string(lib).substr(std::string(lib).find("rel") + 3, 2);
		EXPECT_TRUE(contains(r.err, "sroce provider: installed libibverbs is rdma-core " + rel +
						    " ("))
			<< r.err;
		EXPECT_TRUE(contains(r.err, std::string("which is not supported: ") + kRange)) << r.err;
		EXPECT_NE(access((bdir + "/obj/sroce_provider.o").c_str(), F_OK), 0) << lib;
	}
}

// IBVERBS_PRIVATE_34 was kept from rdma-core 34 to 56 while the structs
// changed: a libibverbs that says 50 selects release 50, and the installed
// (44) public headers then fail the build-time layout checks (verbs_qp
// grew with ibv_qp_ex in 45) - headers and library must be one release.
TEST(BuildCheck, HeadersOfAnotherReleaseFailTheLayoutChecks)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(
		repo, {"check-abi", fake(fakes, "pabi34-rel50/libibverbs.so.1.14.50.0")});
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_TRUE(contains(r.out, "building for rdma-core 50, IBVERBS_PRIVATE_34")) << r.out;

	sroce_test::temp_dir t;
	const std::string bdir = t.path() + "/build/provider";
	r = make_provider(repo, {bdir + "/obj/sroce_provider.o", "BUILD_DIR=" + bdir,
				 fake(fakes, "pabi34-rel50/libibverbs.so.1.14.50.0")});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "static assertion failed: struct verbs_qp: size/alignment "
				    "differs from rdma-core 50's"))
		<< r.err;
	EXPECT_NE(access((bdir + "/obj/sroce_provider.o").c_str(), F_OK), 0);
}

TEST(BuildCheck, NoPrivateAbiStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(repo, {"check-abi", fake(fakes, "nover/libibverbs.so.1")});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "provides no private ABI")) << r.err;
	EXPECT_TRUE(contains(r.err, kRange)) << r.err;
}

// A library whose name (and pkg-config) does not say its release cannot be
// told apart from the other releases of the same private ABI name.
TEST(BuildCheck, UnknownReleaseStops)
{
	SROCE_REQUIRE_ENV(repo, "SROCE_REPO_ROOT");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	run_result r = make_provider(repo, {"check-abi", fake(fakes, "pabi34-norel/libibverbs.so.1")});
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(contains(r.err, "provides private ABI IBVERBS_PRIVATE_34, but its rdma-core "
				    "release cannot be told"))
		<< r.err;
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
		repo, {"check-abi", fake(fakes, "pabi34-rel44/libibverbs.so.1.14.44.0")});
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_TRUE(contains(r.out, "building for rdma-core 44, IBVERBS_PRIVATE_34")) << r.out;
}

// The .so's imports are bound to IBVERBS_PRIVATE_<N>: the dynamic loader
// refuses it next to a libibverbs that lacks that version node.
TEST(ProviderLoad, FailsCleanlyAgainstOtherPrivateAbi)
{
	SROCE_REQUIRE_ENV(so, "SROCE_PROVIDER_SO");
	SROCE_REQUIRE_ENV(pabi, "SROCE_PABI");
	SROCE_REQUIRE_ENV(fakes, "SROCE_FAKELIB_DIR");
	SROCE_REQUIRE_ENV(probe, "SROCE_DLOPEN_PROBE");
	run_result r = run({probe, so}, {{"LD_LIBRARY_PATH", fakes + "/pabi35-rel60"}});
	EXPECT_EQ(r.status, 1) << r.out << r.err;
	EXPECT_TRUE(contains(r.err, "IBVERBS_PRIVATE_" + pabi)) << r.err;
	EXPECT_TRUE(contains(r.err, "not found")) << r.err;

	r = run({probe, so});
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "loaded\n");
}

TEST(ProviderLoad, ImportsAreVersionedAndNothingIsExported)
{
	SROCE_REQUIRE_ENV(so, "SROCE_PROVIDER_SO");
	SROCE_REQUIRE_ENV(pabi, "SROCE_PABI");
	EXPECT_TRUE(contains(so, "/libsroce-rdmav" + pabi + ".so")) << so;
	run_result r = run({"objdump", "-T", so});
	ASSERT_EQ(r.status, 0) << r.err;
	for (const std::string &sym : {"verbs_register_driver_" + pabi,
				      std::string("_verbs_init_and_alloc_context"),
				      std::string("verbs_uninit_context"), std::string("verbs_set_ops"),
				      std::string("ibv_cmd_get_context"),
				      std::string("ibv_cmd_query_device_any"),
				      std::string("ibv_cmd_query_port"), std::string("ibv_cmd_alloc_pd"),
				      std::string("ibv_cmd_dealloc_pd")}) {
		EXPECT_TRUE(contains(r.out, "(IBVERBS_PRIVATE_" + pabi + ") " + sym))
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
