/* mpi_check: a small MPI job whose every result is verified, built with
 * Debian's mpicc and run by tests/mpi/mpi-check under iwarp-run (Open
 * MPI over libfabric's verbs provider over libiwarp).
 *
 *   mpi_check [--quick]           the checks below; rank 0 prints OK
 *   mpi_check --bench SIZE ITERS REPS
 *                                 ranks 0 and 1 ping-pong SIZE bytes
 *                                 ITERS times per repetition; rank 0
 *                                 prints one line per repetition:
 *                                 "pingpong size=S usec=U MBps=B"
 *
 * Checks, message sizes 1 B .. 4 MiB (powers of two and odd sizes):
 * ping-pong between ranks 0 and 1 with timing (half round trip),
 * allreduce (sum), alltoall, non-blocking point-to-point around a ring
 * (Isend/Irecv/Waitall, both directions at once). Each payload is a
 * pattern of (sender, receiver, size, iteration), checked byte for
 * byte. Exit status 0 only if every check passed on every rank. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4u << 20)

static int rank, nranks;

static uint8_t pat(int from, int to, size_t size, int iter, size_t i)
{
	uint32_t x = (uint32_t)from * 2654435761u ^ (uint32_t)to * 40503u ^ (uint32_t)size * 97u ^
		     (uint32_t)iter * 131u ^ (uint32_t)i * 7u ^ (uint32_t)(i >> 8);
	return (uint8_t)(x ^ (x >> 13));
}

static void fill(uint8_t *b, int from, int to, size_t size, int iter)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pat(from, to, size, iter, i);
}

static int check(const uint8_t *b, int from, int to, size_t size, int iter, const char *what)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pat(from, to, size, iter, i)) {
			fprintf(stderr, "mpi_check: rank %d: %s size %zu from %d iter %d: byte %zu is %u, expected %u\n",
				rank, what, size, from, iter, i, b[i], pat(from, to, size, iter, i));
			return 1;
		}
	return 0;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* The sizes checked: every power of two and a few odd ones. */
static size_t sizes[64];
static int nsizes;

static void make_sizes(int quick)
{
	for (size_t s = 1; s <= MAX_MSG; s *= quick ? 16 : 2) {
		sizes[nsizes++] = s;
		if (!quick && s >= 4 && s < MAX_MSG)
			sizes[nsizes++] = s + s / 2 + 1; /* odd, not aligned */
	}
	if (sizes[nsizes - 1] != MAX_MSG)
		sizes[nsizes++] = MAX_MSG;
}

/* Ping-pong between ranks 0 and 1 (the others wait); the timing is
 * printed, never checked. */
static int pingpong(uint8_t *sb, uint8_t *rb)
{
	int bad = 0;
	for (int k = 0; k < nsizes; k++) {
		size_t s = sizes[k];
		int iters = s <= 65536 ? 20 : 4;
		double t0 = MPI_Wtime();
		for (int it = 0; it < iters && rank < 2 && nranks >= 2; it++) {
			int peer = 1 - rank;
			if (rank == 0) {
				fill(sb, 0, 1, s, it);
				MPI_Send(sb, (int)s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(rb, (int)s, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				bad |= check(rb, 1, 0, s, it, "pingpong");
			} else {
				MPI_Status st;
				int n;
				MPI_Recv(rb, (int)s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &n);
				if ((size_t)n != s) {
					fprintf(stderr, "mpi_check: pingpong got %d bytes, expected %zu\n", n, s);
					bad = 1;
				}
				bad |= check(rb, 0, 1, s, it, "pingpong");
				fill(sb, 1, 0, s, it);
				MPI_Send(sb, (int)s, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
			}
		}
		double us = (MPI_Wtime() - t0) * 1e6 / iters / 2;
		if (rank == 0 && (s == 1 || s == 8 || s == 4096 || s == 65536 || s == MAX_MSG))
			printf("mpi_check: pingpong %8zu B: %9.1f us one way, %8.1f MB/s\n", s, us, s / us);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return bad;
}

static int allreduce(void)
{
	int bad = 0;
	for (int k = 0; k < nsizes; k++) {
		size_t n = sizes[k] / sizeof(int64_t);
		if (n == 0)
			n = 1;
		int64_t *in = xmalloc(n * sizeof(*in)), *out = xmalloc(n * sizeof(*out));
		for (size_t i = 0; i < n; i++)
			in[i] = (int64_t)(rank + 1) * (int64_t)(i % 1000 + 1) + (int64_t)k;
		MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		int64_t ranks_sum = (int64_t)nranks * (nranks + 1) / 2;
		for (size_t i = 0; i < n; i++)
			if (out[i] != ranks_sum * (int64_t)(i % 1000 + 1) + (int64_t)k * nranks) {
				fprintf(stderr, "mpi_check: rank %d: allreduce of %zu: element %zu wrong\n", rank, n, i);
				bad = 1;
				break;
			}
		free(in);
		free(out);
	}
	return bad;
}

static int alltoall(void)
{
	int bad = 0;
	uint8_t *sb = xmalloc(MAX_MSG), *rb = xmalloc(MAX_MSG);
	for (int k = 0; k < nsizes; k++) {
		size_t blk = sizes[k] / (size_t)nranks;
		if (blk == 0)
			blk = 1;
		for (int to = 0; to < nranks; to++)
			fill(sb + (size_t)to * blk, rank, to, blk, k);
		memset(rb, 0, blk * (size_t)nranks);
		MPI_Alltoall(sb, (int)blk, MPI_BYTE, rb, (int)blk, MPI_BYTE, MPI_COMM_WORLD);
		for (int from = 0; from < nranks; from++)
			bad |= check(rb + (size_t)from * blk, from, rank, blk, k, "alltoall");
	}
	free(sb);
	free(rb);
	return bad;
}

/* Each rank sends to both neighbours at once and receives from both:
 * four requests in flight, completed with one Waitall. */
static int ring(void)
{
	int bad = 0;
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	uint8_t *s1 = xmalloc(MAX_MSG), *s2 = xmalloc(MAX_MSG), *r1 = xmalloc(MAX_MSG), *r2 = xmalloc(MAX_MSG);
	for (int k = 0; k < nsizes; k++) {
		size_t s = sizes[k];
		MPI_Request rq[4];
		fill(s1, rank, right, s, k);
		fill(s2, rank, left, s, k + 1000);
		MPI_Irecv(r1, (int)s, MPI_BYTE, left, 10, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(r2, (int)s, MPI_BYTE, right, 11, MPI_COMM_WORLD, &rq[1]);
		MPI_Isend(s1, (int)s, MPI_BYTE, right, 10, MPI_COMM_WORLD, &rq[2]);
		MPI_Isend(s2, (int)s, MPI_BYTE, left, 11, MPI_COMM_WORLD, &rq[3]);
		MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
		bad |= check(r1, left, rank, s, k, "isend/irecv");
		bad |= check(r2, right, rank, s, k + 1000, "isend/irecv");
	}
	free(s1);
	free(s2);
	free(r1);
	free(r2);
	return bad;
}

static int bench(size_t size, int iters, int reps)
{
	uint8_t *sb = xmalloc(size), *rb = xmalloc(size);
	int bad = 0;
	memset(sb, 0x5a, size);
	for (int r = 0; r < reps && nranks >= 2; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int it = 0; it < iters && rank < 2; it++) {
			if (rank == 0) {
				MPI_Send(sb, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
				MPI_Recv(rb, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(rb, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(rb, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
			}
		}
		double us = (MPI_Wtime() - t0) * 1e6 / iters / 2;
		if (rank == 0) {
			/* What came back is what went out. */
			if (memcmp(sb, rb, size) != 0) {
				fprintf(stderr, "mpi_check: bench: echoed data differs\n");
				bad = 1;
			}
			printf("pingpong size=%zu usec=%.3f MBps=%.1f\n", size, us, size / us);
			fflush(stdout);
		}
	}
	free(sb);
	free(rb);
	return bad;
}

static long arg_num(const char *s, long lo, long hi, const char *name)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end || v < lo || v > hi) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: %s '%s': valid range %ld..%ld\n", name, s, lo, hi);
		MPI_Finalize();
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int bad = 0, quick = 0;

	if (argc == 5 && strcmp(argv[1], "--bench") == 0) {
		size_t size = (size_t)arg_num(argv[2], 1, MAX_MSG, "SIZE");
		int iters = (int)arg_num(argv[3], 1, 1000000, "ITERS");
		int reps = (int)arg_num(argv[4], 1, 1000, "REPS");
		bad = bench(size, iters, reps);
	} else if (argc == 1 || (argc == 2 && strcmp(argv[1], "--quick") == 0)) {
		quick = argc == 2;
		make_sizes(quick);
		uint8_t *sb = xmalloc(MAX_MSG), *rb = xmalloc(MAX_MSG);
		bad |= pingpong(sb, rb);
		free(sb);
		free(rb);
		bad |= allreduce();
		bad |= alltoall();
		bad |= ring();
	} else {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_check [--quick] | --bench SIZE ITERS REPS\n");
		MPI_Finalize();
		return 2;
	}
	int any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0 && !any && argc != 5)
		printf("mpi_check: OK: %d ranks, %d sizes 1 B..%u B: pingpong, allreduce, alltoall, isend/irecv ring verified\n",
		       nranks, nsizes, MAX_MSG);
	MPI_Finalize();
	return any ? 1 : 0;
}
