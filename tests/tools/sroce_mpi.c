// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
//
// sroce_mpi - an MPI program that checks every byte it moves: what a user
// of Open MPI over UCX (or any other MPI transport) runs to trust a
// fabric, and what the bench times.
//
//   mpirun -np N sroce_mpi [--max-size B] [--iters N] [--inject]
//                                                          (check, N >= 2)
//   mpirun -np 2 sroce_mpi --bench [--seconds S]           (measure)
//
// Check mode, in order (rank 0 prints one line per part, then a total):
//   pingpong   rank 0 <-> rank 1, sizes 1 B .. --max-size (4 MiB): powers
//              of two, and each +-1; both directions, --iters round trips
//              each, the data keyed by (size, iteration, direction) so a
//              stale, misplaced or duplicated byte differs; the receive
//              buffer is poisoned before every receive.
//   allreduce  MPI_SUM of int64 vectors of 1 .. 1 Mi elements, each rank
//              contributing values from its rank and the index: every
//              element is compared with the closed form.
//   alltoall   every rank sends a distinct block to every rank (1 B ..
//              256 KiB blocks): every byte checked at the receiver.
//   rma        MPI_Put and MPI_Get through a window of 4 MiB with fences
//              and with passive-target lock/unlock: each rank writes its
//              keyed pattern into its right neighbour's window and reads
//              its left neighbour's; every byte checked.
// Output: "mpi: <part>: <n> checks, <bytes> bytes verified, <e> errors",
// then "mpi: N checks, B bytes verified, E errors" (rank 0); exit status 1
// on any error, on every rank.  --inject flips one byte after one receive
// (4097 B, rank 1): the run must then report one error and fail.
//
// Bench mode (two ranks): 8-byte ping-pong half round-trip latency (µs,
// median of 5 runs) and 1 MiB ping-pong bandwidth (MiB/s, median of 5),
// printed as "mpi-bench: lat_us X bw_mibs Y".
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static size_t max_size = 4u << 20;
static int iters = 4;
static int inject;	// --inject: flip one received byte, to see a check fail

struct tally {
	unsigned long checks, errors;
	unsigned long long bytes;
};

// The byte at offset i of message (a, b, c): a cheap mix no two keys share.
static uint8_t pattern(uint32_t a, uint32_t b, uint32_t c, size_t i)
{
	uint64_t x = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)b << 32 ^ c;

	x ^= i * 0xD6E8FEB86659FD93ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ x >> 8);
}

static void fill(uint8_t *p, size_t n, uint32_t a, uint32_t b, uint32_t c)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(a, b, c, i);
}

// Compare; report the first bad byte of a message, count once.
static void verify(struct tally *t, const char *what, const uint8_t *p,
		   size_t n, uint32_t a, uint32_t b, uint32_t c)
{
	t->checks++;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != pattern(a, b, c, i)) {
			if (t->errors++ < 8)
				fprintf(stderr,
					"rank %d: %s key (%u,%u,%u): byte %zu of %zu is 0x%02x, want 0x%02x\n",
					rank, what, a, b, c, i, n, p[i],
					pattern(a, b, c, i));
			return;
		}
	}
	t->bytes += n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

static size_t next_size(size_t s)
{
	// 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, ...: powers of two and each +-1.
	size_t p = 1;

	while (p <= s)
		p <<= 1;
	if (s + 1 < p) {
		// s is a power of two (or 1 below one): go to s + 1, then p - 1.
		if ((s & (s - 1)) == 0)
			return s + 1;
		return p - 1;
	}
	return p;
}

static void part_pingpong(struct tally *t)
{
	uint8_t *buf = xmalloc(max_size);
	uint32_t size_key;

	if (rank > 1)
		return free(buf);
	for (size_t s = 1; s <= max_size; s = next_size(s)) {
		size_key = (uint32_t)s;
		for (int it = 0; it < iters; it++) {
			if (rank == 0) {
				fill(buf, s, size_key, it, 0);
				MPI_Send(buf, (int)s, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
				memset(buf, 0xA5, s);
				MPI_Recv(buf, (int)s, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				verify(t, "pingpong back", buf, s, size_key, it, 1);
			} else {
				memset(buf, 0x5A, s);
				MPI_Recv(buf, (int)s, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (inject && s == 4097 && it == 0)
					buf[s / 2] ^= 0x10;
				verify(t, "pingpong", buf, s, size_key, it, 0);
				fill(buf, s, size_key, it, 1);
				MPI_Send(buf, (int)s, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
			}
		}
	}
	free(buf);
}

static void part_allreduce(struct tally *t)
{
	const size_t max_n = (max_size / 4) < (1u << 20) ? max_size / 4 : 1u << 20;
	int64_t *in = xmalloc(max_n * sizeof(*in));
	int64_t *out = xmalloc(max_n * sizeof(*out));

	for (size_t n = 1; n <= max_n; n *= 4) {
		for (size_t i = 0; i < n; i++)
			in[i] = (int64_t)(rank + 1) * (int64_t)(i + 7);
		memset(out, 0xEE, n * sizeof(*out));
		MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		// sum over r of (r + 1) * (i + 7) = (i + 7) * N (N + 1) / 2
		const int64_t ranks_sum = (int64_t)nranks * (nranks + 1) / 2;
		size_t bad = n;

		for (size_t i = 0; i < n && bad == n; i++)
			if (out[i] != (int64_t)(i + 7) * ranks_sum)
				bad = i;
		t->checks++;
		if (bad != n) {
			if (t->errors++ < 8)
				fprintf(stderr,
					"rank %d: allreduce of %zu: element %zu is %lld, want %lld\n",
					rank, n, bad, (long long)out[bad],
					(long long)((int64_t)(bad + 7) * ranks_sum));
		} else {
			t->bytes += n * sizeof(*out);
		}
	}
	free(in);
	free(out);
}

static void part_alltoall(struct tally *t)
{
	const size_t max_block = 256u << 10;
	uint8_t *snd = xmalloc(max_block * nranks);
	uint8_t *rcv = xmalloc(max_block * nranks);

	for (size_t b = 1; b <= max_block; b *= 8) {
		for (int d = 0; d < nranks; d++)
			fill(snd + d * b, b, (uint32_t)b, rank, d);
		memset(rcv, 0x3C, b * nranks);
		MPI_Alltoall(snd, (int)b, MPI_BYTE, rcv, (int)b, MPI_BYTE,
			     MPI_COMM_WORLD);
		// Block s came from rank s, which keyed it (b, s, me).
		for (int s = 0; s < nranks; s++)
			verify(t, "alltoall", rcv + s * b, b, (uint32_t)b, s, rank);
	}
	free(snd);
	free(rcv);
}

static void part_rma(struct tally *t)
{
	const size_t win_size = max_size;
	const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	uint8_t *base, *local = xmalloc(win_size);
	MPI_Win win;

	MPI_Win_allocate((MPI_Aint)win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
			 &base, &win);
	for (size_t s = 1; s <= win_size; s *= 16) {
		// Active target: put into the right neighbour, fence, check
		// what the left one put here.
		memset(base, 0x11, win_size);
		MPI_Win_fence(0, win);
		fill(local, s, (uint32_t)s, rank, 7);
		MPI_Put(local, (int)s, MPI_BYTE, right, 0, (int)s, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		verify(t, "put (fence)", base, s, (uint32_t)s, left, 7);

		// Passive target: get the left neighbour's window (it holds
		// what its own left neighbour put) under a shared lock.
		MPI_Barrier(MPI_COMM_WORLD);
		memset(local, 0x22, s);
		MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win);
		MPI_Get(local, (int)s, MPI_BYTE, left, 0, (int)s, MPI_BYTE, win);
		MPI_Win_unlock(left, win);
		verify(t, "get (lock)", local, s, (uint32_t)s,
		       (left + nranks - 1) % nranks, 7);

		// Passive target put, then the target checks after a barrier.
		MPI_Barrier(MPI_COMM_WORLD);
		fill(local, s, (uint32_t)s, rank, 9);
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
		MPI_Put(local, (int)s, MPI_BYTE, right, 0, (int)s, MPI_BYTE, win);
		MPI_Win_unlock(right, win);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
		verify(t, "put (lock)", base, s, (uint32_t)s, left, 9);
		MPI_Win_unlock(rank, win);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Win_free(&win);
	free(local);
}

// Sum a tally over the ranks and print it (rank 0); returns the errors.
static unsigned long report(const char *part, struct tally *t, struct tally *total)
{
	unsigned long in[2] = {t->checks, t->errors}, out[2];
	unsigned long long bytes;

	MPI_Reduce(in, out, 2, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t->bytes, &bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		printf("mpi: %s: %lu checks, %llu bytes verified, %lu errors\n",
		       part, out[0], bytes, out[1]);
		fflush(stdout);
		total->checks += out[0];
		total->errors += out[1];
		total->bytes += bytes;
	}
	return t->errors;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

// Median over 5 runs of the per-round-trip time of `rounds` ping-pongs.
static double pingpong_time(uint8_t *buf, int size, int rounds)
{
	double runs[5];

	for (int r = 0; r < 5; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		const double t0 = MPI_Wtime();

		for (int i = 0; i < rounds; i++) {
			if (rank == 0) {
				MPI_Send(buf, size, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
				MPI_Recv(buf, size, MPI_BYTE, 1, 4, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(buf, size, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(buf, size, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
			}
		}
		runs[r] = (MPI_Wtime() - t0) / rounds;
	}
	qsort(runs, 5, sizeof(runs[0]), cmp_double);
	return runs[2];
}

static int bench(double seconds)
{
	const int big = 1 << 20;
	uint8_t *buf = xmalloc(big);
	int lat_rounds = 100, bw_rounds = 4;

	memset(buf, 0x42, big);
	// Size the runs from a first estimate so each takes ~seconds / 10.
	double t = pingpong_time(buf, 8, 20);
	if (t > 0)
		lat_rounds = (int)(seconds / 10 / t) + 1;
	t = pingpong_time(buf, big, 2);
	if (t > 0)
		bw_rounds = (int)(seconds / 10 / t) + 1;
	MPI_Bcast(&lat_rounds, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Bcast(&bw_rounds, 1, MPI_INT, 0, MPI_COMM_WORLD);

	const double lat = pingpong_time(buf, 8, lat_rounds);
	const double bw = pingpong_time(buf, big, bw_rounds);

	if (rank == 0)
		printf("mpi-bench: lat_us %.2f bw_mibs %.1f (%d and %d round trips)\n",
		       lat / 2 * 1e6, 2.0 * big / bw / (1 << 20), lat_rounds,
		       bw_rounds);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int bench_mode = 0;
	double seconds = 10;
	struct tally total = {0}, t;
	unsigned long errors = 0, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bench")) {
			bench_mode = 1;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
			max_size = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--inject")) {
			inject = 1;
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = atoi(argv[++i]);
		} else {
			if (rank == 0)
				fprintf(stderr,
					"usage: sroce_mpi [--max-size B] [--iters N] [--inject] | --bench [--seconds S]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks < 2 || max_size < 16 || max_size > (1u << 30) || iters < 1) {
		if (rank == 0)
			fprintf(stderr, "sroce_mpi: needs 2 or more ranks and sane options\n");
		MPI_Finalize();
		return 2;
	}
	if (bench_mode) {
		bench(seconds);
		MPI_Finalize();
		return 0;
	}

	t = (struct tally){0};
	part_pingpong(&t);
	errors += report("pingpong", &t, &total);
	t = (struct tally){0};
	part_allreduce(&t);
	errors += report("allreduce", &t, &total);
	t = (struct tally){0};
	part_alltoall(&t);
	errors += report("alltoall", &t, &total);
	t = (struct tally){0};
	part_rma(&t);
	errors += report("rma", &t, &total);

	MPI_Allreduce(&errors, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi: %d ranks, %lu checks, %llu bytes verified, %lu errors\n",
		       nranks, total.checks, total.bytes, total.errors);
	MPI_Finalize();
	return all ? 1 : 0;
}
