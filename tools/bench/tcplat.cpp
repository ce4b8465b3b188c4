// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// TCP's request/response latency, the figure an RDMA latency test is put
// against (what qperf's tcp_lat measures, with the percentiles qperf does
// not give): one connection, Nagle off, a SIZE-byte message each way per
// round trip, the client timing every round trip after a warm-up.
//
//   sroce_tcplat -s PORT                        serve one client, echo
//   sroce_tcplat -c ADDR PORT [SIZE [ITERS]]    SIZE 8, ITERS 10000
//
// The client prints, as perftest's latency tests do, half a round trip:
//
//   tcplat: N round trips of SIZE B in SECS s, one way typical MEDIAN p99 P99 max MAX us
//
// Either side gives up after 10 s without a byte (exit 1, a message on
// stderr); bad arguments exit 2.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

constexpr int idle_limit_s = 10;
constexpr unsigned long warm_up = 100;
constexpr std::size_t max_size = 1 << 20;

double now_us()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Nagle off (each message leaves at once) and a receive limit, so that a
// dead peer ends the run instead of hanging it.
bool tune(int fd)
{
	const int one = 1;
	const timeval limit{idle_limit_s, 0};

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0 &&
	       setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) == 0;
}

// All of len bytes through op (read or write), or false (an error, the
// receive limit or the peer's end).
template <typename Buf, typename Op>
bool all(int fd, Buf *buf, std::size_t len, Op op)
{
	while (len) {
		const ssize_t n = op(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= static_cast<std::size_t>(n);
	}
	return true;
}

bool read_all(int fd, char *buf, std::size_t len)
{
	return all(fd, buf, len, ::read);
}

bool write_all(int fd, const char *buf, std::size_t len)
{
	return all(fd, buf, len, ::write);
}

double percentile(const std::vector<double> &sorted, double p)
{
	auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size()));
	return sorted[std::min(i, sorted.size() - 1)];
}

bool parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end = nullptr;

	errno = 0;
	const unsigned long v = std::strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

// The server: the client sends SIZE first (4 bytes, network order), then
// every message it sends comes back until it closes.
int serve(unsigned long port)
{
	const int one = 1;
	sockaddr_in6 addr{};
	int lfd = socket(AF_INET6, SOCK_STREAM, 0);

	if (lfd < 0) {
		std::perror("tcplat: socket");
		return 1;
	}
	addr.sin6_family = AF_INET6;
	addr.sin6_port = htons(static_cast<uint16_t>(port));
	addr.sin6_addr = in6addr_any;
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) ||
	    listen(lfd, 1)) {
		std::perror("tcplat: bind/listen");
		close(lfd);
		return 1;
	}
	const int fd = accept(lfd, nullptr, nullptr);
	close(lfd);
	if (fd < 0 || !tune(fd)) {
		std::perror("tcplat: accept");
		if (fd >= 0)
			close(fd);
		return 1;
	}
	uint32_t wire = 0;
	if (!read_all(fd, reinterpret_cast<char *>(&wire), sizeof(wire)) ||
	    ntohl(wire) == 0 || ntohl(wire) > max_size) {
		std::fprintf(stderr, "tcplat: no valid message size from the client\n");
		close(fd);
		return 1;
	}
	std::vector<char> buf(ntohl(wire));
	unsigned long echoed = 0;
	while (read_all(fd, buf.data(), buf.size())) {
		if (!write_all(fd, buf.data(), buf.size())) {
			std::perror("tcplat: write");
			close(fd);
			return 1;
		}
		echoed++;
	}
	close(fd);
	std::printf("tcplat: served %lu round trips of %zu B\n", echoed, buf.size());
	return 0;
}

int drive(const char *host, const char *port, unsigned long size, unsigned long iters)
{
	addrinfo hints{}, *res = nullptr;

	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) || !res) {
		std::fprintf(stderr, "tcplat: cannot resolve %s port %s\n", host, port);
		return 2;
	}
	const int fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) || !tune(fd)) {
		std::perror("tcplat: connect");
		freeaddrinfo(res);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	freeaddrinfo(res);

	const uint32_t wire = htonl(static_cast<uint32_t>(size));
	std::vector<char> out(size, 'r'), in(size);
	std::vector<double> rtt;
	rtt.reserve(iters);
	if (!write_all(fd, reinterpret_cast<const char *>(&wire), sizeof(wire))) {
		std::perror("tcplat: write");
		close(fd);
		return 1;
	}
	double start = now_us();
	for (unsigned long i = 0; i < warm_up + iters; i++) {
		const double t0 = now_us();

		if (i == warm_up)
			start = t0;
		out[0] = static_cast<char>(i);
		if (!write_all(fd, out.data(), size) || !read_all(fd, in.data(), size)) {
			std::fprintf(stderr, "tcplat: round trip %lu: %s\n", i,
				     errno ? std::strerror(errno) : "the server closed");
			close(fd);
			return 1;
		}
		if (in != out) {
			std::fprintf(stderr, "tcplat: round trip %lu came back changed\n", i);
			close(fd);
			return 1;
		}
		if (i >= warm_up)
			rtt.push_back(now_us() - t0);
	}
	const double secs = (now_us() - start) / 1e6;
	close(fd);

	std::sort(rtt.begin(), rtt.end());
	std::printf("tcplat: %lu round trips of %lu B in %.2f s, one way typical %.2f p99 %.2f max %.2f us\n",
		    iters, size, secs, percentile(rtt, 0.5) / 2, percentile(rtt, 0.99) / 2,
		    rtt.back() / 2);
	return 0;
}

int usage()
{
	std::fprintf(stderr, "usage: sroce_tcplat -s PORT | -c ADDR PORT [SIZE [ITERS]]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	unsigned long port = 0, size = 8, iters = 10000;

	if (argc == 3 && !std::strcmp(argv[1], "-s"))
		return parse_num(argv[2], 1, 65535, &port) ? serve(port) : usage();
	if (argc < 4 || argc > 6 || std::strcmp(argv[1], "-c") ||
	    !parse_num(argv[3], 1, 65535, &port) ||
	    (argc > 4 && !parse_num(argv[4], 1, max_size, &size)) ||
	    (argc > 5 && !parse_num(argv[5], 1, 100000000, &iters)))
		return usage();
	return drive(argv[2], argv[3], size, iters);
}
