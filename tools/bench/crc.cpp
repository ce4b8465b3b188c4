// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What the ICRC costs per byte on this CPU (in the bench: the TCG guest).
// Every RoCEv2 packet is summed twice, once to seal it and once to check
// it, with CRC-32 (the Ethernet polynomial, reflected), which no x86
// instruction computes directly (SSE 4.2's crc32 is CRC-32C). Three ways:
//
//   table    one 256-entry table lookup per byte
//   slice8   eight bytes per step through eight tables: what the kernel's
//            crc32_le() does (CONFIG_CRC32_SLICEBY8, Debian's setting)
//   pclmul   carry-less multiplication folding 64 bytes per step: what
//            the crc32-pclmul crypto driver does ("crc32" shash)
//
// and memcpy beside them, each over buffers of one packet's payload
// (default 1024 and 4096 bytes: the IB MTUs of Ethernet MTU 1500 and
// 9000), for SECONDS each. Prints one line per method and size:
//
//   crc: METHOD SIZE B: MIBS MiB/s, NS_PER_PKT ns per packet
//
// Every method is first checked against the bytewise reference on random
// buffers of every length up to 600 bytes and at odd offsets; a mismatch
// ends the program with status 1.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <immintrin.h>

namespace {

constexpr std::uint32_t poly = 0xEDB88320U; // CRC-32, reflected

struct Tables {
	std::uint32_t t[8][256];

	Tables()
	{
		for (std::uint32_t i = 0; i < 256; i++) {
			std::uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ ((c & 1) ? poly : 0);
			t[0][i] = c;
		}
		for (int s = 1; s < 8; s++)
			for (std::uint32_t i = 0; i < 256; i++)
				t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
	}
};

const Tables tables;

// The convention of the kernel's crc32_le(): no inversion inside.
std::uint32_t crc_table(std::uint32_t crc, const std::uint8_t *p, std::size_t len)
{
	while (len--)
		crc = (crc >> 8) ^ tables.t[0][(crc ^ *p++) & 0xff];
	return crc;
}

std::uint32_t crc_slice8(std::uint32_t crc, const std::uint8_t *p, std::size_t len)
{
	const auto &t = tables.t;

	while (len >= 8) {
		std::uint32_t lo, hi;

		std::memcpy(&lo, p, 4);
		std::memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	return crc_table(crc, p, len);
}

// Folding constants for the reflected CRC-32 (x^n mod P, bit-reflected,
// shifted left by one): fold 512 bits (k1, k2), fold 128 bits (k3, k4),
// 64 -> 32 bits (k5), Barrett reduction (P' and mu).
constexpr long long k1 = 0x154442bd4LL, k2 = 0x1c6e41596LL;
constexpr long long k3 = 0x1751997d0LL, k4 = 0x0ccaa009eLL;
constexpr long long k5 = 0x163cd6124LL;
constexpr long long p_ref = 0x1db710641LL, mu = 0x1f7011641LL;

__attribute__((target("pclmul,sse4.1"))) __m128i fold(__m128i x, __m128i k, __m128i next)
{
	const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

__attribute__((target("pclmul,sse4.1"))) std::uint32_t
crc_pclmul(std::uint32_t crc, const std::uint8_t *p, std::size_t len)
{
	if (len < 64)
		return crc_slice8(crc, p, len);

	auto load = [](const std::uint8_t *q) {
		return _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
	};
	const __m128i k12 = _mm_set_epi64x(k2, k1);
	const __m128i k34 = _mm_set_epi64x(k4, k3);
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	std::size_t n = len & ~std::size_t{15};
	const std::size_t rest = len - n;

	__m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
	__m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);

	p += 64;
	n -= 64;
	for (; n >= 64; p += 64, n -= 64) {
		x1 = fold(x1, k12, load(p));
		x2 = fold(x2, k12, load(p + 16));
		x3 = fold(x3, k12, load(p + 32));
		x4 = fold(x4, k12, load(p + 48));
	}
	x1 = fold(x1, k34, x2);
	x1 = fold(x1, k34, x3);
	x1 = fold(x1, k34, x4);
	for (; n >= 16; p += 16, n -= 16)
		x1 = fold(x1, k34, load(p));

	// 128 -> 64 bits: the low half times k4, added to the high half.
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k34, x1, 0x01));
	// 64 -> 32 bits.
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 4),
			   _mm_clmulepi64_si128(_mm_and_si128(x1, mask32),
						_mm_set_epi64x(0, k5), 0x00));
	// Barrett reduction to the 32-bit remainder.
	const __m128i pmu = _mm_set_epi64x(mu, p_ref);
	__m128i t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), pmu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), pmu, 0x00);
	crc = static_cast<std::uint32_t>(_mm_extract_epi32(_mm_xor_si128(x1, t), 1));
	return crc_table(crc, p, rest);
}

using CrcFn = std::uint32_t (*)(std::uint32_t, const std::uint8_t *, std::size_t);

struct Method {
	const char *name;
	CrcFn fn;
};

bool self_check(const Method &m)
{
	std::mt19937 rng(4791);
	std::vector<std::uint8_t> buf(700);

	for (auto &b : buf)
		b = static_cast<std::uint8_t>(rng());
	for (std::size_t off = 0; off < 8; off += 3)
		for (std::size_t len = 0; len <= 600; len++) {
			const std::uint32_t seed = static_cast<std::uint32_t>(rng());
			const std::uint32_t want = crc_table(seed, buf.data() + off, len);
			const std::uint32_t got = m.fn(seed, buf.data() + off, len);
			if (want != got) {
				std::fprintf(stderr, "crc: %s is wrong at length %zu offset %zu: %08x, want %08x\n",
					     m.name, len, off, got, want);
				return false;
			}
		}
	// The check value of CRC-32 ("123456789" -> cbf43926).
	const auto *nine = reinterpret_cast<const std::uint8_t *>("123456789");
	if (~m.fn(~0U, nine, 9) != 0xcbf43926U) {
		std::fprintf(stderr, "crc: %s fails the CRC-32 check value\n", m.name);
		return false;
	}
	return true;
}

void run(const char *name, std::size_t size, double seconds, std::uint32_t (*one)(std::size_t))
{
	using clock = std::chrono::steady_clock;
	const auto t0 = clock::now();
	std::size_t bytes = 0, packets = 0;
	std::uint32_t sink = 0;
	double elapsed = 0;

	do {
		for (int i = 0; i < 64; i++)
			sink ^= one(size);
		packets += 64;
		bytes += 64 * size;
		elapsed = std::chrono::duration<double>(clock::now() - t0).count();
	} while (elapsed < seconds);
	std::printf("crc: %-7s %5zu B: %8.1f MiB/s, %9.0f ns per packet%s\n", name, size,
		    static_cast<double>(bytes) / elapsed / 1048576.0,
		    elapsed * 1e9 / static_cast<double>(packets), sink == 0x12345678 ? " " : "");
}

std::vector<std::uint8_t> src(1 << 16), dst(1 << 16);
CrcFn current;

std::uint32_t one_crc(std::size_t size)
{
	return current(~0U, src.data(), size);
}

std::uint32_t one_memcpy(std::size_t size)
{
	std::memcpy(dst.data(), src.data(), size);
	src[size / 2] ^= dst[size / 3];
	return dst[size - 1];
}

} // namespace

int main(int argc, char **argv)
{
	const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
	std::vector<std::size_t> sizes;

	for (int i = 2; i < argc; i++)
		sizes.push_back(std::strtoul(argv[i], nullptr, 0));
	if (sizes.empty())
		sizes = {1024, 4096};
	for (auto s : sizes)
		if (s == 0 || s > src.size()) {
			std::fprintf(stderr, "usage: %s [SECONDS [SIZE...]] (1 <= SIZE <= %zu)\n",
				     argv[0], src.size());
			return 2;
		}

	const bool have_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	std::vector<Method> methods = {{"table", crc_table}, {"slice8", crc_slice8}};
	if (have_pclmul)
		methods.push_back({"pclmul", crc_pclmul});
	else
		std::printf("crc: no PCLMULQDQ on this CPU: pclmul not measured\n");

	for (const auto &m : methods)
		if (!self_check(m))
			return 1;
	for (std::size_t i = 0; i < src.size(); i++)
		src[i] = static_cast<std::uint8_t>(i * 131);

	for (auto size : sizes) {
		for (const auto &m : methods) {
			current = m.fn;
			run(m.name, size, seconds, one_crc);
		}
		run("memcpy", size, seconds, one_memcpy);
	}
	return 0;
}
