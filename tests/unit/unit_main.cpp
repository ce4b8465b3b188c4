// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// GoogleTest main for the sroce provider unit tests; ends with a plain
// "sroce_unit: N passed, N failed, N skipped" line after gtest's summary.
#include <stdio.h>

#include <gtest/gtest.h>

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	int ret = RUN_ALL_TESTS();
	const ::testing::UnitTest &u = *::testing::UnitTest::GetInstance();
	printf("sroce_unit: %d passed, %d failed, %d skipped\n",
	       u.successful_test_count(), u.failed_test_count(),
	       u.skipped_test_count());
	return ret;
}
