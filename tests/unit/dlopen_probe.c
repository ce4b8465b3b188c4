/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dlopen_probe LIB: dlopen(LIB, RTLD_NOW) the way libibverbs loads a
 * provider; prints "loaded" or dlerror() and exits 0 or 1.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dlopen_probe LIB\n");
		return 2;
	}
	if (!dlopen(argv[1], RTLD_NOW)) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	return 0;
}
