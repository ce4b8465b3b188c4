// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The memcpy ceiling of "make bench": one thread copies a 64 MiB buffer
// into another, over and over, for SECONDS (default 2) after one warm-up
// copy, and prints
//
//   memcpy: BYTES bytes in SECS s, MIBS MiB/s, CPU CPU_SECS s
//
// (MiB/s like perftest's "MB/sec"; CPU is this process's user + system
// time over the timed copies).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

double cpu_seconds()
{
	timespec ts{};
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

} // namespace

int main(int argc, char **argv)
{
	constexpr std::size_t size = 64UL << 20;
	const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
	std::vector<unsigned char> src(size), dst(size);

	for (std::size_t i = 0; i < size; i++)
		src[i] = static_cast<unsigned char>(i * 131);
	std::memcpy(dst.data(), src.data(), size); // warm-up: fault every page in

	using clock = std::chrono::steady_clock;
	const auto t0 = clock::now();
	const double c0 = cpu_seconds();
	std::size_t bytes = 0;
	double elapsed = 0;
	do {
		std::memcpy(dst.data(), src.data(), size);
		// Keep the copy observable so it is not optimised away.
		src[bytes % size] ^= dst[(bytes + 1) % size];
		bytes += size;
		elapsed = std::chrono::duration<double>(clock::now() - t0).count();
	} while (elapsed < seconds);
	const double cpu = cpu_seconds() - c0;

	std::printf("memcpy: %zu bytes in %.3f s, %.1f MiB/s, CPU %.3f s\n", bytes, elapsed,
		    static_cast<double>(bytes) / elapsed / 1048576.0, cpu);
	return 0;
}
