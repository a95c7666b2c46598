/* iwselftest: run RDMA WRITE, READ and SEND between two libiwarp protocol
 * engines wired back to back in memory (no sockets), with CRC and markers
 * in every combination, verify every byte and print what happened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwt_b2b.h"
#include "iwt_common.h"
#include "mpa/crc32c.h"
#include "mpa/mpa_tx.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
	fprintf(stderr, "iwselftest: FAILED: %s\n", what);
	return 1;
}

static int run(bool crc, bool markers, size_t len, int rounds)
{
	struct iw_rdmap_conn_cfg cfg = {
		.crc = crc, .markers_tx = markers, .markers_rx = markers,
		.mulpdu = (uint32_t)iw_mpa_mulpdu(65536 - 4, markers), .ird = 8, .ord = 8,
	};
	struct iwt_b2b *t = calloc(1, sizeof(*t));
	uint8_t *src = malloc(len), *dst = malloc(len), *rcv = malloc(len);
	if (!t || !src || !dst || !rcv)
		return fail("out of memory");
	iwt_b2b_init(t, &cfg, 42);
	t->max_chunk = 65536;
	t->rx_mode = IWT_RX_ZEROCOPY;
	iwt_fill_pattern(src, len, 7);
	uint32_t dst_stag = iwt_mem_reg(&t->b.mem, dst, len, IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ, 1, 0x77);
	uint32_t rcv_stag = iwt_mem_reg(&t->a.mem, rcv, len, IW_RDMAP_ACC_LOCAL_WRITE, 1, 0x78);
	double t0 = now();
	uint64_t wire0 = t->a.wire_total + t->b.wire_total;
	for (int r = 0; r < rounds; r++) {
		struct iw_rdmap_wr w = { .cookie = 1, .opcode = IW_RDMAP_WR_WRITE, .nsge = 1,
					 .remote_stag = dst_stag, .remote_to = (uint64_t)(uintptr_t)dst };
		w.sgl[0] = (struct iovec){ src, len };
		struct iw_rdmap_wr rd = { .cookie = 2, .opcode = IW_RDMAP_WR_READ, .nsge = 1,
					  .remote_stag = dst_stag, .remote_to = (uint64_t)(uintptr_t)dst,
					  .local_stag = rcv_stag, .local_to = (uint64_t)(uintptr_t)rcv };
		rd.sgl[0] = (struct iovec){ rcv, len };
		struct iw_rdmap_wr s = { .cookie = 3, .opcode = IW_RDMAP_WR_SEND, .nsge = 1 };
		s.sgl[0] = (struct iovec){ src, len };
		struct iovec rv = { dst, len };
		iwt_mem_post_recv(&t->b.mem, 9, &rv, 1);
		if (iw_rdmap_post(&t->a.conn, &w) || iw_rdmap_post(&t->a.conn, &rd) || iw_rdmap_post(&t->a.conn, &s))
			return fail("post");
		if (!iwt_b2b_pump(t, 100000))
			return fail("exchange did not finish");
	}
	double dt = now() - t0;
	uint64_t wire = t->a.wire_total + t->b.wire_total - wire0;
	if (iwt_ep_count(&t->a, IW_RDMAP_EV_SQ_DONE) != 3u * (unsigned)rounds)
		return fail("missing completions");
	if (iwt_ep_count(&t->a, IW_RDMAP_EV_ERROR) || iwt_ep_count(&t->b, IW_RDMAP_EV_ERROR))
		return fail("protocol error");
	if (iwt_check_pattern(dst, len, 7) != len || iwt_check_pattern(rcv, len, 7) != len)
		return fail("data mismatch");
	printf("  crc %-3s markers %-3s  %3d x (WRITE + READ + SEND) of %zu KiB: %llu FPDUs, %.1f MB on the wire, "
	       "verified, %.2f GB/s in memory\n",
	       crc ? "on" : "off", markers ? "on" : "off", rounds, len / 1024,
	       (unsigned long long)(t->a.conn.fpdus_tx + t->b.conn.fpdus_tx), (double)wire / 1e6,
	       (double)wire / dt / 1e9);
	iwt_b2b_fini(t);
	free(t);
	free(src);
	free(dst);
	free(rcv);
	return 0;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	if (argc > 1 && !quick) {
		printf("usage: iwselftest [--quick]\n"
		       "Runs RDMA WRITE, READ and SEND between two libiwarp protocol engines\n"
		       "connected in memory, with CRC and markers on and off, and verifies the data.\n");
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	printf("libiwarp self-check (CRC32C: %s)\n", iw_crc32c_impl());
	int rc = 0;
	for (int crc = 0; crc < 2; crc++)
		for (int markers = 0; markers < 2; markers++)
			rc |= run(crc, markers, quick ? 256 * 1024 : 4 * 1024 * 1024, quick ? 2 : 8);
	printf(rc ? "self-check FAILED\n" : "self-check passed\n");
	return rc;
}
