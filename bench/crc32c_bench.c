/* CRC-32C throughput: dispatched (ISA-L or portable) and portable paths at
 * 64 B, 1.5 KiB and 64 KiB. Usage: crc32c_bench [--quick] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpa/crc32c.h"

typedef uint32_t (*crc_update_fn)(uint32_t, const void *, size_t);

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs fn over buf in batches until min_s has passed; returns GB/s
 * (1 GB = 1e9 bytes). The chained state keeps the calls from being
 * optimised away and makes each call depend on the previous one. */
static volatile uint32_t sink;

static double measure(crc_update_fn fn, const uint8_t *buf, size_t len, double min_s)
{
	uint32_t st = iw_crc32c_init();
	uint64_t iters = 0, batch = 1 + (1u << 20) / len;
	double t0, el;

	st = fn(st, buf, len); /* warm caches and any lazy table setup */
	t0 = now_s();
	do {
		for (uint64_t i = 0; i < batch; i++)
			st = fn(st, buf, len);
		iters += batch;
		el = now_s() - t0;
	} while (el < min_s);
	sink ^= st;
	return (double)iters * (double)len / el / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {64, 1536, 65536};
	double min_s = 0.3;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			min_s = 0.02;
		} else {
			fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
			return 2;
		}
	}

	uint8_t *buf = malloc(65536);
	if (!buf)
		return 1;
	for (size_t i = 0; i < 65536; i++)
		buf[i] = (uint8_t)(i * 131u + 7u);

	const struct {
		const char *name;
		crc_update_fn fn;
	} paths[] = {
		{iw_crc32c_impl(), iw_crc32c_update},
		{"portable", iw_crc32c_update_portable},
	};
	size_t npaths = sizeof(paths) / sizeof(paths[0]);
	if (strcmp(iw_crc32c_impl(), "portable") == 0)
		npaths = 1; /* dispatch is the portable path: no second run */

	printf("crc32c impl: %s\n", iw_crc32c_impl());
	for (size_t p = 0; p < npaths; p++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			double gbs = measure(paths[p].fn, buf, sizes[s], min_s);
			printf("crc32c %-8s %6zu B  %6.2f GB/s\n", paths[p].name, sizes[s], gbs);
			fflush(stdout);
		}
	free(buf);
	return 0;
}
