// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The latency floor of the guest: two threads, pinned to CPU 0 and CPU 1,
// bounce a counter through one shared cache line for SECONDS (default 2)
// after a short warm-up. No system call, no kernel code: what is left is
// the two vCPUs' polling, their interrupts (the tick) and the host's
// scheduling of the vCPU threads. A round trip over 20 us is a stall.
// Prints
//
//   pingpong: N round trips in SECS s, typical MEDIAN p99 P99 us;
//   S stalls (> 20 us), S_PER_S per s, each typical SMED p90 SP90 max SMAX us
//
// (the percentiles of the first million round trips). With stalls
// arriving at S_PER_S per second, a round trip of T us meets one with a
// probability of about S_PER_S * T / 1e6: once that passes 1 %, a latency
// test's p99 is a stall, whatever the RDMA device does.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

namespace {

alignas(64) std::atomic<unsigned long> ball{0};

double now_us()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

bool pin(std::thread::native_handle_type t, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set) == 0;
}

// The far side: answer every odd value with the next even one, until
// the process ends.
void bouncer()
{
	for (unsigned long want = 1;; want += 2) {
		while (ball.load(std::memory_order_acquire) != want)
			;
		ball.store(want + 1, std::memory_order_release);
	}
}

double percentile(const std::vector<double> &sorted, double p)
{
	auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size()));
	return sorted[std::min(i, sorted.size() - 1)];
}

} // namespace

int main(int argc, char **argv)
{
	const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
	constexpr unsigned long warm_up = 1000;
	constexpr std::size_t kept = 1000000;
	constexpr double stall_us = 20.0;

	if (seconds <= 0 || std::thread::hardware_concurrency() < 2) {
		std::fprintf(stderr, "pingpong: needs SECONDS > 0 and two CPUs\n");
		return 2;
	}
	std::vector<double> rtt;
	std::vector<double> stalls;
	rtt.reserve(kept);
	stalls.reserve(1 << 16);
	std::thread far(bouncer);
	const bool pinned = pin(far.native_handle(), 1) && pin(pthread_self(), 0);

	// The bouncer never returns: detached, it ends with the process.
	far.detach();
	if (!pinned) {
		std::fprintf(stderr, "pingpong: cannot pin to CPUs 0 and 1\n");
		return 1;
	}
	double start = now_us();
	double end = start + seconds * 1e6, t1 = start;
	unsigned long r;

	for (r = 0; t1 < end; r++) {
		const unsigned long serve = 2 * r + 1;
		const double t0 = t1;

		ball.store(serve, std::memory_order_release);
		while (ball.load(std::memory_order_acquire) != serve + 1)
			;
		t1 = now_us();
		if (r < warm_up) {
			start = t1;
			end = t1 + seconds * 1e6;
			continue;
		}
		if (rtt.size() < kept)
			rtt.push_back(t1 - t0);
		if (t1 - t0 > stall_us && stalls.size() < stalls.capacity())
			stalls.push_back(t1 - t0);
	}
	const double secs = (t1 - start) / 1e6;

	std::sort(rtt.begin(), rtt.end());
	std::sort(stalls.begin(), stalls.end());
	std::printf("pingpong: %lu round trips in %.2f s, typical %.2f p99 %.2f us; "
		    "%zu stalls (> %.0f us), %.0f per s, each typical %.0f p90 %.0f max %.0f us\n",
		    r - warm_up, secs, percentile(rtt, 0.5), percentile(rtt, 0.99),
		    stalls.size(), stall_us, static_cast<double>(stalls.size()) / secs,
		    stalls.empty() ? 0.0 : percentile(stalls, 0.5),
		    stalls.empty() ? 0.0 : percentile(stalls, 0.9),
		    stalls.empty() ? 0.0 : stalls.back());
	return 0;
}
