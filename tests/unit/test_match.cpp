// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Device matching (sroce::match_sysfs) and the libibverbs release parser.
#include <gtest/gtest.h>

#include "sroce.hpp"
#include "test_util.hpp"

namespace {

using sroce::match_result;
using sroce_test::temp_dir;
using sroce_test::write_file;

constexpr uint32_t V = SROCE_UVERBS_ABI_VERSION;

struct match_case {
	const char *content;	// nullptr: attribute file absent
	uint32_t driver_id;
	match_result want;
	uint32_t want_abi;
};

void PrintTo(const match_case &c, std::ostream *os)
{
	*os << "{content \"" << (c.content ? c.content : "(absent)") << "\", driver_id "
	    << c.driver_id << "}";
}

class MatchSysfs : public ::testing::TestWithParam<match_case> {};

TEST_P(MatchSysfs, Decides)
{
	const match_case &c = GetParam();
	temp_dir t;
	ASSERT_FALSE(t.path().empty());
	std::string dev = t.path() + "/class/infiniband/dev0";
	write_file(dev + "/node_type", "1: CA\n");
	if (c.content)
		write_file(dev + "/" SROCE_SYSFS_ABI_ATTR, c.content);
	uint32_t abi = 12345;
	EXPECT_EQ(sroce::match_sysfs(dev.c_str(), c.driver_id, V, V, &abi), c.want)
		<< "content '" << (c.content ? c.content : "(absent)") << "'";
	EXPECT_EQ(abi, c.want_abi);
}

const std::string kV = std::to_string(V);
const std::string kVnl = kV + "\n";
const std::string kVnext = std::to_string(V + 1) + "\n";

INSTANTIATE_TEST_SUITE_P(
	Cases, MatchSysfs,
	::testing::Values(
		match_case{kVnl.c_str(), RDMA_DRIVER_UNKNOWN, match_result::claimed, V},
		match_case{kV.c_str(), RDMA_DRIVER_UNKNOWN, match_result::claimed, V},
		match_case{nullptr, RDMA_DRIVER_UNKNOWN, match_result::no_attr, 0},
		// rxe/mlx5 and friends: the kernel gives them a driver id
		match_case{kVnl.c_str(), RDMA_DRIVER_RXE, match_result::foreign_driver, 0},
		match_case{nullptr, RDMA_DRIVER_MLX5, match_result::foreign_driver, 0},
		match_case{kVnext.c_str(), RDMA_DRIVER_UNKNOWN, match_result::unsupported, V + 1},
		match_case{"0\n", RDMA_DRIVER_UNKNOWN, match_result::unsupported, 0},
		match_case{"", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"abc\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"1 \n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"1\n\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"-1\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"0x1\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0},
		match_case{"99999999999\n", RDMA_DRIVER_UNKNOWN, match_result::bad_value, 0}));

TEST(MatchSysfsPath, MissingDeviceDirectory)
{
	uint32_t abi = 7;
	EXPECT_EQ(sroce::match_sysfs("/nonexistent/class/infiniband/x",
				     RDMA_DRIVER_UNKNOWN, V, V, &abi),
		  match_result::no_attr);
	EXPECT_EQ(abi, 0u);
}

TEST(MatchSysfsPath, RangeIsInclusive)
{
	temp_dir t;
	std::string dev = t.path() + "/d";
	write_file(dev + "/" SROCE_SYSFS_ABI_ATTR, "5\n");
	uint32_t abi = 0;
	EXPECT_EQ(sroce::match_sysfs(dev.c_str(), 0, 5, 5, &abi), match_result::claimed);
	EXPECT_EQ(sroce::match_sysfs(dev.c_str(), 0, 3, 5, &abi), match_result::claimed);
	EXPECT_EQ(sroce::match_sysfs(dev.c_str(), 0, 6, 9, &abi), match_result::unsupported);
	EXPECT_EQ(sroce::match_sysfs(dev.c_str(), 0, 1, 4, &abi), match_result::unsupported);
}

TEST(ReleaseFromPath, Parses)
{
	EXPECT_EQ(sroce::rdma_core_release_from_path(
			  "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"), 44);
	EXPECT_EQ(sroce::rdma_core_release_from_path("libibverbs.so.1.14.50.1"), 50);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.14.44.0.debug"), 44);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1"), -1);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.14.44"), -1);
	// the minor follows the public API: 1.15 in 59, 1.18 in 65
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.15.59.0"), 59);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.18.65.0"), 65);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.18"), -1);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1..65.0"), -1);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/x/libibverbs.so.1.x.65.0"), -1);
	EXPECT_EQ(sroce::rdma_core_release_from_path("/lib/libibverbs.so.1.14.44.0/other.so"), -1);
	EXPECT_EQ(sroce::rdma_core_release_from_path(""), -1);
}

} // namespace
