/* The receiver's per-byte cost, three ways to move an FPDU payload from
 * the socket into a large region and CRC it (issue 14: "CRC computed in
 * the same pass that moves the payload"). The kernel's copy out of the
 * socket is modelled by a memcpy from a source buffer.
 *   direct    what the TCP transport does: readv straight into the region
 *             (memcpy src -> dst), then the CRC pass over dst (still in
 *             cache right after the copy);
 *   fused     read into a cache-resident stage (memcpy src -> stage), then
 *             per 4 KiB chunk CRC the stage and copy it to dst while it is
 *             in L1 (one pass over the stage doing both);
 *   separate  stage, CRC the whole stage, then copy it to dst (verified
 *             placement's order: the copy waits for the CRC).
 * The region is 64 MiB, walked FPDU by FPDU, so dst is cold like a large
 * RDMA WRITE target. GB/s of payload (1 GB = 1e9 B), best of 5 runs.
 * Usage: copy_crc_bench [--quick] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpa/crc32c.h"

#define REGION (64u << 20)
#define CHUNK 4096u

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

enum way { DIRECT, FUSED, SEPARATE };

static uint32_t one_fpdu(enum way w, uint8_t *dst, const uint8_t *src, uint8_t *stage, size_t len)
{
	uint32_t st = iw_crc32c_init();

	switch (w) {
	case DIRECT:
		memcpy(dst, src, len);
		st = iw_crc32c_update(st, dst, len);
		break;
	case FUSED:
		memcpy(stage, src, len);
		for (size_t off = 0; off < len; off += CHUNK) {
			size_t n = len - off < CHUNK ? len - off : CHUNK;
			st = iw_crc32c_update(st, stage + off, n);
			memcpy(dst + off, stage + off, n);
		}
		break;
	case SEPARATE:
		memcpy(stage, src, len);
		st = iw_crc32c_update(st, stage, len);
		memcpy(dst, stage, len);
		break;
	}
	return st;
}

static double run(enum way w, uint8_t *region, const uint8_t *src, uint8_t *stage, size_t len)
{
	size_t n = REGION / len;
	uint32_t x = 0;
	double t0 = now_s();

	for (size_t i = 0; i < n; i++)
		x ^= one_fpdu(w, region + i * len, src, stage, len);
	double el = now_s() - t0;
	sink ^= x;
	return (double)n * (double)len / el / 1e9;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 1 : 5;
	static const size_t sizes[] = { 1448, 8192, 65536 };
	static const char *names[] = { "direct (readv to dst, CRC dst)", "fused (stage, CRC+copy per 4 KiB)",
				       "separate (stage, CRC, copy)" };
	uint8_t *region = malloc(REGION), *src = malloc(65536), *stage = malloc(65536);

	if (!region || !src || !stage)
		return 1;
	memset(region, 1, REGION);
	for (size_t i = 0; i < 65536; i++)
		src[i] = (uint8_t)(i * 131u);
	printf("%-36s %10s %10s %10s  (GB/s, best of %d)\n", "FPDU payload", "1448 B", "8 KiB", "64 KiB", reps);
	for (int w = DIRECT; w <= SEPARATE; w++) {
		printf("%-36s", names[w]);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			double best = 0;
			for (int r = 0; r < reps; r++) {
				double g = run((enum way)w, region, src, stage, sizes[s]);
				if (g > best)
					best = g;
			}
			printf(" %10.2f", best);
		}
		printf("\n");
	}
	free(region);
	free(src);
	free(stage);
	return 0;
}
