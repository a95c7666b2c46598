/* The live-connection pcap writer (stack/trace.c) on its own: sessions
 * built from our MPA and FPDU encoders are written through the trace
 * hooks exactly as the CM and the transport call them, then decoded by
 * tshark (Ethernet/IP/TCP checksums, MPA handshake, CRC of every FPDU). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp/ddp_wire.h"
#include "iwt_check.h"
#include "iwt_common.h"
#include "iwt_fpdu.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"
#include "rdmap/rdmap_wire.h"
#include "stack/internal.h"
#include "tshark_run.h"

#define PORT_A 40001
#define PORT_B 40002

static void sa_make(int family, const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1);
	}
}

/* Largest chunk handed to the trace at once; tiny chunks put cuts right
 * after FPDU starts, which tshark cannot reassemble unless the trace
 * moves those bytes to the next frame. */
static size_t max_chunk = 200000;

/* Send bytes the way the transport reports them: as several gather
 * lists, cut at arbitrary points. */
static void trace_chunks(struct iw_context *ctx, uint32_t conn, bool tx, const uint8_t *p, size_t len,
			 uint64_t *rng)
{
	while (len) {
		struct iovec iov[8];
		size_t n = (size_t)iwt_rand_range(rng, 1, len < max_chunk ? len : max_chunk);
		int k = iwt_fpdu_split(rng, p, n, iov, 8);
		iw_trace_data(ctx, conn, tx, iov, k, n);
		p += n;
		len -= n;
	}
}

/* One session from A (initiator) to B: handshake, WRITEs of various sizes
 * A->B, SENDs B->A, close. Returns the number of FPDUs. */
static int session(struct iw_context *ctx, int family, const char *a, const char *b, bool reset, uint64_t *rng)
{
	struct sockaddr_storage la, pa;
	struct iw_mpa_settings st;
	struct iw_mpa_frame req, rep;
	struct iw_mpa_outcome out;
	uint8_t frame[600];
	static uint8_t payload[200000], stream[400000];
	struct iwt_fpdu_msg msgs[32];
	uint8_t hdrs[32][IW_DDP_UNTAGGED_HDR_LEN];
	int n = 0;

	sa_make(family, a, PORT_A, &la);
	sa_make(family, b, PORT_B, &pa);
	uint32_t c = iw_trace_conn_open(ctx, (struct sockaddr *)&la, (struct sockaddr *)&pa, true);
	ck_assert_uint_ne(c, 0);
	/* The same connection seen from the other end is traced once. */
	ck_assert_uint_eq(iw_trace_conn_open(ctx, (struct sockaddr *)&pa, (struct sockaddr *)&la, false), 0);

	iw_mpa_settings_default(&st);
	iw_mpa_make_request(&st, (const uint8_t *)"hi", 2, &req);
	ssize_t fl = iw_mpa_frame_encode(&req, frame, sizeof(frame), NULL);
	ck_assert_int_gt(fl, 0);
	/* The CM sends each frame with one send(): one segment (tshark only
	 * recognises a Request that starts and ends in one). */
	iw_trace_data(ctx, c, true, &(struct iovec){ frame, (size_t)fl }, 1, (size_t)fl);
	ck_assert_int_eq(iw_mpa_respond(&st, &req, NULL, 0, &rep, &out), IW_MPA_OK);
	fl = iw_mpa_frame_encode(&rep, frame, sizeof(frame), NULL);
	ck_assert_int_gt(fl, 0);
	iw_trace_data(ctx, c, false, &(struct iovec){ frame, (size_t)fl }, 1, (size_t)fl);

	iwt_fill_random(rng, payload, sizeof(payload));
	/* A -> B: tagged WRITE segments of assorted sizes up to a full ULPDU. */
	static const size_t wsz[] = { 0, 1, 100, 1428, 4000, 65521, 30000, 7 };
	size_t off = 0;
	for (size_t i = 0; i < sizeof(wsz) / sizeof(wsz[0]); i++, n++) {
		struct iw_ddp_hdr h = { .tagged = true, .last = true, .ulp_ctrl = iw_rdmap_ctrl(IW_OP_WRITE),
					.stag = 0x1234500u, .to = 0x10000u + off };
		msgs[n] = (struct iwt_fpdu_msg){ hdrs[n], iw_ddp_hdr_encode(&h, hdrs[n]), payload + off, wsz[i] };
		off += wsz[i];
	}
	ssize_t sl = iwt_fpdu_stream(true, false, msgs, n, stream, sizeof(stream), NULL, NULL);
	ck_assert_int_gt(sl, 0);
	trace_chunks(ctx, c, true, stream, (size_t)sl, rng);

	/* B -> A: SENDs. */
	int m = 0;
	for (uint32_t i = 0; i < 5; i++, m++) {
		struct iw_ddp_hdr h = { .last = true, .ulp_ctrl = iw_rdmap_ctrl(IW_OP_SEND), .qn = 0, .msn = i + 1 };
		msgs[m] = (struct iwt_fpdu_msg){ hdrs[m], iw_ddp_hdr_encode(&h, hdrs[m]), payload, 10 + i * 997 };
	}
	sl = iwt_fpdu_stream(true, false, msgs, m, stream, sizeof(stream), NULL, NULL);
	ck_assert_int_gt(sl, 0);
	trace_chunks(ctx, c, false, stream, (size_t)sl, rng);
	iw_trace_conn_close(ctx, c, reset);
	/* Closed: its handle is dead. */
	iw_trace_data(ctx, c, true, NULL, 0, 0);
	return n + m;
}

static void decode_check(const char *pcap, const char *pdml, int fpdus, bool v4, bool reset)
{
	static const char *const args[] = { "-T", "pdml", NULL };
	struct ts_result *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	ts_run(pcap, pdml, args);
	ts_parse_pdml(pdml, PORT_A, PORT_B, r);
	ck_assert_int_eq(r->n_req, 1);
	ck_assert_int_eq(r->n_rep, 1);
	ck_assert_int_eq(r->malformed, 0);
	/* A RST is a warning to tshark; nothing else may be. */
	ck_assert_msg(r->expert_bad == (reset ? 1 : 0), "expert: %s", r->expert_msg);
	if (reset)
		ck_assert_ptr_nonnull(strstr(r->expert_msg, "reset"));
	ck_assert_int_eq(r->cksum_other, 0);
	ck_assert_int_eq(r->cksum_good, v4 ? 2 * r->packets : r->packets);
	ck_assert_int_eq(r->n, fpdus);
	for (int i = 0; i < r->n; i++) {
		ck_assert_msg(r->f[i].crc_good, "FPDU %d (frame %u): bad CRC", i, r->f[i].frame);
		ck_assert_int_ge(r->f[i].dir, 0);
	}
	free(r);
}

static void run(int family, const char *a, const char *b, const char *name, bool reset)
{
	static struct iw_context ctx; /* the trace only uses ctx->trace */
	char path[1024], pcap[256], pdml[256];
	uint64_t rng = iwt_seed();

	memset(&ctx, 0, sizeof(ctx));
	snprintf(pcap, sizeof(pcap), "%s.pcap", name);
	snprintf(pdml, sizeof(pdml), "%s.pdml", name);
	ts_path(path, sizeof(path), pcap);
	/* Not tracing: every hook is a no-op. */
	ck_assert_uint_eq(iw_trace_conn_open(&ctx, NULL, NULL, true), 0);
	iw_trace_close(&ctx);

	ck_assert_int_eq(iw_trace_open(&ctx, path), 0);
	ck_assert_int_eq(iw_trace_open(&ctx, path), -EBUSY);
	int n = session(&ctx, family, a, b, reset, &rng);
	iw_trace_close(&ctx);
	ck_assert_ptr_null(ctx.trace);
	decode_check(pcap, pdml, n, family == AF_INET, reset);
}

START_TEST(test_trace_ipv4_fin)
{
	run(AF_INET, "127.0.0.1", "127.0.0.2", "trace_v4", false);
}
END_TEST

START_TEST(test_trace_ipv6_rst)
{
	run(AF_INET6, "::1", "fd00::2", "trace_v6", true);
}
END_TEST

START_TEST(test_trace_tiny_chunks)
{
	max_chunk = 48;
	run(AF_INET, "127.0.0.1", "127.0.0.2", "trace_tiny", false);
	max_chunk = 200000;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("pcap");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_trace_ipv4_fin);
	tcase_add_test(tc, test_trace_ipv6_rst);
	tcase_add_test(tc, test_trace_tiny_chunks);
	suite_add_tcase(s, tc);
	return iwt_run_suite(s);
}
