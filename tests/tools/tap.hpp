// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// Minimal TAP output for the C++ test tools: "ok N - ...", "not ok N - ...",
// diagnostics on "# " lines, a plan at the end.
#pragma once

#include <stdarg.h>
#include <stdio.h>

namespace tap {

inline int num;
inline int failed;

__attribute__((format(printf, 2, 3))) inline bool check(bool ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s %d - ", ok ? "ok" : "not ok", ++num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failed++;
	return ok;
}

__attribute__((format(printf, 1, 2))) inline void diag(const char *fmt, ...)
{
	va_list ap;
	fputs("#   ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

// Prints the plan and a summary line; the exit status for main().
inline int done(const char *tool)
{
	printf("1..%d\n%s: %d passed, %d failed\n", num, tool, num - failed, failed);
	return failed ? 1 : 0;
}

} // namespace tap
