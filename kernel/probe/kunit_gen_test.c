// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Probe (kernel/Kbuild, never linked): a KUnit parameter generator is
 * passed the test it generates for (7.x), not only the previous value.
 */
#include <kunit/test.h>

static const void *probe_gen(struct kunit *test, const void *prev,
			     char *desc)
{
	return NULL;
}

static void probe_case(struct kunit *test)
{
}

struct kunit_case probe_cases[] = {
	KUNIT_CASE_PARAM(probe_case, probe_gen),
	{}
};
