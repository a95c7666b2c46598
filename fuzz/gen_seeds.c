/* Writes the seed corpora: fuzz_gen_seeds <dir> creates
 * <dir>/fuzz_mpa_frame, fuzz_mpa_rx, fuzz_ddp_rdmap, fuzz_rdmap_conn and
 * fuzz_qp_live with a handful of valid inputs each (formats: see each fuzz_*.c). MPA frames
 * and siw's Terminate are spelled out from the facts sheet; FPDU streams
 * are built with the library's own transmit path (iw_mpa_tx_build), so
 * marker placement and CRCs match what it sends. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/iw_bytes.h"
#include "qp_live.h"
#include "ddp/ddp_wire.h"
#include "mpa/mpa_tx.h"
#include "mpa/mpa_wire.h"
#include "rdmap/rdmap_term.h"
#include "rdmap/rdmap_wire.h"

static const char *root;

static void mkdir_p(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
}

static void put(const char *target, const char *name, const uint8_t *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, target);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* A growable byte buffer for building inputs. */
struct buf {
	uint8_t b[8192];
	size_t n;
};

static void add(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > sizeof(b->b)) {
		fprintf(stderr, "seed too large\n");
		exit(1);
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void add8(struct buf *b, uint8_t v)
{
	add(b, &v, 1);
}

/* ---- fuzz_mpa_frame: a frame, then one settings-selector byte. */

static void frame(const char *name, const char *key, uint8_t flags, uint8_t rev,
		  const uint8_t *pd, uint16_t pd_len, uint8_t sel)
{
	struct buf b = {.n = 0};
	uint8_t len[2];
	add(&b, key, IW_MPA_KEY_LEN);
	add8(&b, flags);
	add8(&b, rev);
	iw_put_be16(len, pd_len);
	add(&b, len, 2);
	add(&b, pd, pd_len);
	add8(&b, sel);
	put("fuzz_mpa_frame", name, b.b, b.n);
}

static void seeds_mpa_frame(void)
{
	static const uint8_t ird_ord_1_1[] = {0x00, 0x01, 0x00, 0x01};
	static const uint8_t p2p_write[] = {0x80, 0x10, 0x80, 0x10, 'h', 'i', '!', 0};
	static const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};

	/* rping's request and siw's reply to a C=1 request (facts sheet). */
	frame("req_rping", IW_MPA_KEY_REQ, 0x10, 2, ird_ord_1_1, 4, 0x00);
	frame("rep_siw_crc", IW_MPA_KEY_REP, 0x50, 2, ird_ord_1_1, 4, 0x00);
	frame("req_crc_v2", IW_MPA_KEY_REQ, 0x50, 2, ird_ord_1_1, 4, 0xC5);
	frame("req_v1_pd", IW_MPA_KEY_REQ, 0x40, 1, hello, sizeof(hello), 0x03);
	frame("rep_v1", IW_MPA_KEY_REP, 0x40, 1, hello, sizeof(hello), 0x02);
	frame("rep_reject", IW_MPA_KEY_REP, 0x30, 2, ird_ord_1_1, 4, 0x00);
	frame("req_p2p", IW_MPA_KEY_REQ, 0x50, 2, p2p_write, sizeof(p2p_write), 0xC0);
	frame("rep_p2p", IW_MPA_KEY_REP, 0x50, 2, p2p_write, sizeof(p2p_write), 0xC0);
	frame("req_markers", IW_MPA_KEY_REQ, 0x90, 2, ird_ord_1_1, 4, 0x20);
}

/* ---- fuzz_mpa_rx: a selector byte, then FPDUs from iw_mpa_tx_build. */

static void fpdu(struct iw_mpa_tx *tx, struct buf *b, const uint8_t *hdr, size_t hdr_len,
		 const uint8_t *payload, size_t len)
{
	static struct iw_mpa_tx_fpdu f;
	static struct iovec iov[2 * 3 + 2 * IW_MPA_TX_MAX_MARKERS];
	struct iovec pl = {(void *)(uintptr_t)payload, len};
	int n = iw_mpa_tx_build(tx, &f, hdr, hdr_len, &pl, len ? 1 : 0, iov,
				(int)(sizeof(iov) / sizeof(iov[0])));
	if (n < 0) {
		fprintf(stderr, "iw_mpa_tx_build: %d\n", n);
		exit(1);
	}
	for (int i = 0; i < n; i++)
		add(b, iov[i].iov_base, iov[i].iov_len);
}

static size_t tagged_hdr(uint8_t *out, uint8_t op, bool last, uint32_t stag, uint64_t to)
{
	struct iw_ddp_hdr h = {.tagged = true, .last = last, .ulp_ctrl = iw_rdmap_ctrl(op),
			       .stag = stag, .to = to};
	return iw_ddp_hdr_encode(&h, out);
}

static size_t untagged_hdr(uint8_t *out, uint8_t op, bool last, uint32_t qn, uint32_t msn,
			   uint32_t mo)
{
	struct iw_ddp_hdr h = {.tagged = false, .last = last, .ulp_ctrl = iw_rdmap_ctrl(op),
			       .qn = qn, .msn = msn, .mo = mo};
	return iw_ddp_hdr_encode(&h, out);
}

static uint8_t payload[2048];

/* A little of everything: SEND, WRITE, Read Request, Read Response,
 * multi-segment SEND, zero-length SEND, Terminate. */
static void mixed_stream(struct iw_mpa_tx *tx, struct buf *b, size_t write_len)
{
	uint8_t hdr[64];
	size_t n;

	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 1, 0);
	fpdu(tx, b, hdr, n, (const uint8_t *)"hello", 5);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0x100, 0x1000);
	fpdu(tx, b, hdr, n, payload, write_len);
	struct iw_rdmap_read_req rr = {0x100, 0x1000, 64, 0x201, 0x2000};
	n = untagged_hdr(hdr, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
	iw_rdmap_read_req_encode(&rr, hdr + n);
	fpdu(tx, b, hdr, n + IW_RDMAP_READ_REQ_LEN, NULL, 0);
	n = tagged_hdr(hdr, IW_OP_READ_RESP, true, 0x100, 0x1000);
	fpdu(tx, b, hdr, n, payload, 64);
	n = untagged_hdr(hdr, IW_OP_SEND, false, IW_DDP_QN_SEND, 2, 0);
	fpdu(tx, b, hdr, n, payload, 16);
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 2, 16);
	fpdu(tx, b, hdr, n, payload + 16, 48);
	n = untagged_hdr(hdr, IW_OP_SEND_SE, true, IW_DDP_QN_SEND, 3, 0);
	fpdu(tx, b, hdr, n, NULL, 0);
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED,
						  IW_ECODE_DDP_T_INV_STAG),
			      hdr, 0, 0);
	n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
	size_t body = iw_rdmap_term_encode(&t, hdr + n);
	fpdu(tx, b, hdr, n + body, NULL, 0);
}

static void rx_seed(const char *name, uint8_t sel, size_t write_len)
{
	struct iw_mpa_tx tx;
	struct buf b = {.n = 0};
	add8(&b, sel);
	iw_mpa_tx_init(&tx, sel & 1, sel & 2);
	mixed_stream(&tx, &b, write_len);
	put("fuzz_mpa_rx", name, b.b, b.n);
}

static void seeds_mpa_rx(void)
{
	rx_seed("plain", 0x00, 100);
	rx_seed("crc", 0x01, 100);
	rx_seed("crc_fixup", 0x05, 100);
	rx_seed("markers", 0x02, 1000);
	rx_seed("markers_crc", 0x23, 1400);
	rx_seed("crc_max1500", 0x49, 1400);
	rx_seed("plain_max48", 0xF8, 20);
}

/* ---- fuzz_ddp_rdmap: records of [u16 payload length][header]. */

static void rec(struct buf *b, uint16_t payload_len, const uint8_t *hdr, size_t n)
{
	uint8_t len[2];
	iw_put_be16(len, payload_len);
	add(b, len, 2);
	add(b, hdr, n);
}

static void seeds_ddp_rdmap(void)
{
	uint8_t hdr[128];
	size_t n;
	struct buf b;

	b.n = 0;
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0x100, 0x1000);
	rec(&b, 100, hdr, n);
	n = tagged_hdr(hdr, IW_OP_WRITE, false, 0x100, 0x1080);
	rec(&b, 128, hdr, n);
	put("fuzz_ddp_rdmap", "write", b.b, b.n);

	b.n = 0;
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 1, 0);
	rec(&b, 64, hdr, n);
	n = untagged_hdr(hdr, IW_OP_SEND, false, IW_DDP_QN_SEND, 2, 0);
	rec(&b, 16, hdr, n);
	n = untagged_hdr(hdr, IW_OP_SEND_INV, true, IW_DDP_QN_SEND, 2, 16);
	rec(&b, 48, hdr, n);
	n = untagged_hdr(hdr, IW_OP_SEND_SE, true, IW_DDP_QN_SEND, 3, 0);
	rec(&b, 0, hdr, n);
	put("fuzz_ddp_rdmap", "sends", b.b, b.n);

	b.n = 0;
	struct iw_rdmap_read_req rr = {0x100, 0x1000, 64, 0x201, 0x2000};
	n = untagged_hdr(hdr, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
	iw_rdmap_read_req_encode(&rr, hdr + n);
	rec(&b, 0, hdr, n + IW_RDMAP_READ_REQ_LEN);
	n = tagged_hdr(hdr, IW_OP_READ_RESP, true, 0x100, 0x1000);
	rec(&b, 64, hdr, n);
	put("fuzz_ddp_rdmap", "read", b.b, b.n);

	/* Protection errors: read-only MR, near the top of the TO space,
	 * another PD, unknown STag. */
	b.n = 0;
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0x201, 0x2000);
	rec(&b, 8, hdr, n);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0x300, 0xFFFFFFFFFFFFFFF0ull);
	rec(&b, 32, hdr, n);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0x400, 0x4000);
	rec(&b, 8, hdr, n);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, 0xdeadbe00, 0x1000);
	rec(&b, 16, hdr, n);
	put("fuzz_ddp_rdmap", "errors", b.b, b.n);

	/* siw's Terminate after a WRITE to an unknown STag (facts sheet),
	 * body in siw's layout, then one of ours in the RFC layout. */
	static const uint8_t siw_term[] = {0x11, 0x00, 0x03, 0x00, 0x00, 0x10, 0xc1, 0x40,
					   0xde, 0xad, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00,
					   0x00, 0x00, 0x10, 0x00};
	b.n = 0;
	n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
	rec(&b, sizeof(siw_term) - IW_RDMAP_TERM_CTRL_LEN, hdr, n);
	add(&b, siw_term, sizeof(siw_term));
	put("fuzz_ddp_rdmap", "term_siw", b.b, b.n);

	b.n = 0;
	uint8_t bad[IW_DDP_TAGGED_HDR_LEN];
	tagged_hdr(bad, IW_OP_WRITE, true, 0xdeadbe00, 0x1000);
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED,
						  IW_ECODE_DDP_T_INV_STAG),
			      bad, sizeof(bad), 16 + sizeof(bad));
	uint8_t body[IW_RDMAP_TERM_MAX_LEN];
	size_t blen = iw_rdmap_term_encode(&t, body);
	n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
	rec(&b, (uint16_t)(blen - IW_RDMAP_TERM_CTRL_LEN), hdr, n);
	add(&b, body, blen);
	put("fuzz_ddp_rdmap", "term_rfc", b.b, b.n);

	/* RFC 7306: Immediate Data, Atomic Request, Atomic Response. */
	b.n = 0;
	n = untagged_hdr(hdr, IW_OP_IMM_DATA, true, IW_DDP_QN_SEND, 1, 0);
	iw_put_be64(hdr + n, 0x0102030405060708ull);
	rec(&b, 0, hdr, n + IW_RDMAP_IMM_LEN);
	struct iw_rdmap_atomic_req ar = {IW_ATOMIC_CMP_SWAP, 0, 9, 0x100, 0x1008, 5, ~0ull, 3, ~0ull};
	n = untagged_hdr(hdr, IW_OP_ATOMIC_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
	iw_rdmap_atomic_req_encode(&ar, hdr + n);
	rec(&b, 0, hdr, n + IW_RDMAP_ATOMIC_REQ_LEN);
	struct iw_rdmap_atomic_resp as = {9, 3};
	n = untagged_hdr(hdr, IW_OP_ATOMIC_RESP, true, IW_RDMAP_QN_ATOMIC_RESP, 1, 0);
	iw_rdmap_atomic_resp_encode(&as, hdr + n);
	rec(&b, 0, hdr, n + IW_RDMAP_ATOMIC_RESP_LEN);
	put("fuzz_ddp_rdmap", "rfc7306", b.b, b.n);
}

/* ---- fuzz_rdmap_conn: a mode byte (bit 0 CRC, bit 1 markers, bit 2 feed
 * instead of prepare/commit, bit 3 RFC 7306, bit 4 verified placement),
 * then what the peer sends. STags and
 * addresses are the ones fuzz_rdmap_conn.c sets up: MR i (1-based) has
 * STag i << 8 | 0x5A at 0x10000 * i; MR 1 is writable, MR 2 read-only,
 * MR 4 the sink of two outstanding 1 KiB READs, MR 5 remotely readable. */

#define CONN_STAG(i) ((uint32_t)(i) << 8 | 0x5A)
#define CONN_VA(i) (0x10000ull * (i))

static void conn_seed(const char *name, uint8_t mode, bool bad_write, bool peer_term)
{
	struct iw_mpa_tx tx;
	struct buf b = {.n = 0};
	uint8_t hdr[64];
	size_t n;

	add8(&b, mode);
	iw_mpa_tx_init(&tx, mode & 1, mode & 2);
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 1, 0);
	fpdu(&tx, &b, hdr, n, (const uint8_t *)"hello", 5);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, CONN_STAG(1), CONN_VA(1) + 8);
	fpdu(&tx, &b, hdr, n, payload, 100);
	struct iw_rdmap_read_req rr = {0x7700, 0x1000, 64, CONN_STAG(5), CONN_VA(5)};
	n = untagged_hdr(hdr, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
	iw_rdmap_read_req_encode(&rr, hdr + n);
	fpdu(&tx, &b, hdr, n + IW_RDMAP_READ_REQ_LEN, NULL, 0);
	for (unsigned i = 0; i < 2; i++) {
		n = tagged_hdr(hdr, IW_OP_READ_RESP, true, CONN_STAG(4), CONN_VA(4) + 1024u * i);
		fpdu(&tx, &b, hdr, n, payload, 1024);
	}
	n = untagged_hdr(hdr, IW_OP_SEND, false, IW_DDP_QN_SEND, 2, 0);
	fpdu(&tx, &b, hdr, n, payload, 16);
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 2, 16);
	fpdu(&tx, &b, hdr, n, payload + 16, 48);
	/* Send with Invalidate of the read-only MR. */
	n = untagged_hdr(hdr, IW_OP_SEND_INV, true, IW_DDP_QN_SEND, 3, 0);
	iw_put_be32(hdr + 2, CONN_STAG(2));
	fpdu(&tx, &b, hdr, n, payload, 8);
	n = untagged_hdr(hdr, IW_OP_SEND_SE, true, IW_DDP_QN_SEND, 4, 0);
	fpdu(&tx, &b, hdr, n, NULL, 0);
	if (bad_write) { /* to the MR just invalidated */
		n = tagged_hdr(hdr, IW_OP_WRITE, true, CONN_STAG(2), CONN_VA(2));
		fpdu(&tx, &b, hdr, n, payload, 32);
	}
	if (peer_term) {
		static const uint8_t siw_term[] = {0x11, 0x00, 0x03, 0x00, 0x00, 0x10, 0xc1, 0x40,
						   0xde, 0xad, 0xbe, 0x00, 0x00, 0x00, 0x00, 0x00,
						   0x00, 0x00, 0x10, 0x00};
		n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
		memcpy(hdr + n, siw_term, sizeof(siw_term));
		fpdu(&tx, &b, hdr, n + sizeof(siw_term), NULL, 0);
	}
	put("fuzz_rdmap_conn", name, b.b, b.n);
}

/* RFC 7306 (mode bit 3): Write with Immediate, two Atomic Requests on
 * the writable region (a FetchAdd, a CmpSwap, and one unaligned when bad),
 * then the answers to our two READs and our atomic (identifier 0). */
static void conn_seed_7306(const char *name, uint8_t mode, bool bad)
{
	struct iw_mpa_tx tx;
	struct buf b = {.n = 0};
	uint8_t hdr[128];
	size_t n;

	add8(&b, (uint8_t)(mode | 0x08));
	iw_mpa_tx_init(&tx, mode & 1, mode & 2);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, CONN_STAG(1), CONN_VA(1) + 64);
	fpdu(&tx, &b, hdr, n, payload, 200);
	n = untagged_hdr(hdr, IW_OP_IMM_DATA_SE, true, IW_DDP_QN_SEND, 1, 0);
	iw_put_be64(hdr + n, 0x0102030405060708ull);
	fpdu(&tx, &b, hdr, n + IW_RDMAP_IMM_LEN, NULL, 0);
	for (uint32_t i = 0; i < 2; i++) {
		struct iw_rdmap_atomic_req ar = {.op = i ? IW_ATOMIC_CMP_SWAP : IW_ATOMIC_FETCH_ADD,
						 .req_id = 0x40 + i,
						 .stag = CONN_STAG(1),
						 .to = CONN_VA(1) + 8 + (bad && i ? 4 : 0),
						 .add_swap = 5,
						 .add_swap_mask = i ? ~0ull : 0,
						 .compare = 0x1111111111111111ull,
						 .compare_mask = ~0ull};
		n = untagged_hdr(hdr, IW_OP_ATOMIC_REQ, true, IW_DDP_QN_READ_REQ, 1 + i, 0);
		iw_rdmap_atomic_req_encode(&ar, hdr + n);
		fpdu(&tx, &b, hdr, n + IW_RDMAP_ATOMIC_REQ_LEN, NULL, 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		n = tagged_hdr(hdr, IW_OP_READ_RESP, true, CONN_STAG(4), CONN_VA(4) + 1024u * i);
		fpdu(&tx, &b, hdr, n, payload, 1024);
	}
	struct iw_rdmap_atomic_resp rs = {.req_id = 0, .orig = 77};
	n = untagged_hdr(hdr, IW_OP_ATOMIC_RESP, true, IW_RDMAP_QN_ATOMIC_RESP, 1, 0);
	iw_rdmap_atomic_resp_encode(&rs, hdr + n);
	fpdu(&tx, &b, hdr, n + IW_RDMAP_ATOMIC_RESP_LEN, NULL, 0);
	put("fuzz_rdmap_conn", name, b.b, b.n);
}

static void seeds_rdmap_conn(void)
{
	conn_seed_7306("rfc7306", 0x00, false);
	conn_seed_7306("rfc7306_crc_markers", 0x03, false);
	conn_seed_7306("rfc7306_unaligned", 0x05, true);
	conn_seed("plain", 0x00, false, false);
	conn_seed("crc_feed", 0x05, false, false);
	conn_seed("markers_crc", 0x03, false, false);
	conn_seed("markers_feed", 0x06, false, true);
	conn_seed("bad_write", 0x01, true, false);
	conn_seed("peer_term", 0x04, false, true);
	conn_seed("verified", 0x11, false, false);
	conn_seed("verified_bad_write", 0x11, true, false);
	conn_seed("verified_feed", 0x15, false, true);
}

/* ---- fuzz_qp_live: header, the peer's MPA frame, control bytes, then
 * the peer's FPDUs (qp_live.h). Every opcode, with and without CRC and
 * markers, both roles, copy and zero-copy receive. */

#define QPL_API(x) (QPL_CTL_API | (x))

enum qpl_variant {
	QV_PLAIN = 0,
	QV_BAD_WRITE = 1, /* WRITE to the region just invalidated */
	QV_PEER_TERM = 2, /* the peer ends with a Terminate */
	QV_BAD_SEND = 4,  /* SEND with a wrong MSN */
};

static void qpl_stream(struct iw_mpa_tx *tx, struct buf *b, unsigned variant)
{
	uint8_t hdr[64];
	size_t n;

	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 1, 0);
	fpdu(tx, b, hdr, n, (const uint8_t *)"hello", 5);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, QPL_STAG(QPL_MR_RW), QPL_VA(QPL_OFF_RW) + 8);
	fpdu(tx, b, hdr, n, payload, 100);
	n = tagged_hdr(hdr, IW_OP_WRITE, false, QPL_STAG(QPL_MR_WO), QPL_VA(QPL_OFF_WO));
	fpdu(tx, b, hdr, n, payload, 300);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, QPL_STAG(QPL_MR_WO), QPL_VA(QPL_OFF_WO) + 300);
	fpdu(tx, b, hdr, n, payload + 300, 200);
	n = tagged_hdr(hdr, IW_OP_WRITE, true, QPL_STAG(QPL_MR_SPARE), QPL_VA(QPL_OFF_SPARE_A) + 16);
	fpdu(tx, b, hdr, n, payload, 64);
	struct iw_rdmap_read_req rr = {0x9900, 0x0, 64, QPL_STAG(QPL_MR_RR), QPL_VA(QPL_OFF_RR) + 32};
	n = untagged_hdr(hdr, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
	iw_rdmap_read_req_encode(&rr, hdr + n);
	fpdu(tx, b, hdr, n + IW_RDMAP_READ_REQ_LEN, NULL, 0);
	rr = (struct iw_rdmap_read_req){0x9901, 0x0, 16, QPL_STAG(QPL_MR_RW), QPL_VA(QPL_OFF_RW)};
	n = untagged_hdr(hdr, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 2, 0);
	iw_rdmap_read_req_encode(&rr, hdr + n);
	fpdu(tx, b, hdr, n + IW_RDMAP_READ_REQ_LEN, NULL, 0);
	for (unsigned i = 0; i < 2; i++) {
		uint64_t to = QPL_VA(QPL_OFF_LW + QPL_READ_SINK) + (uint64_t)QPL_READ_LEN * i;
		n = tagged_hdr(hdr, IW_OP_READ_RESP, false, QPL_STAG(QPL_MR_LW), to);
		fpdu(tx, b, hdr, n, payload, 200);
		n = tagged_hdr(hdr, IW_OP_READ_RESP, true, QPL_STAG(QPL_MR_LW), to + 200);
		fpdu(tx, b, hdr, n, payload, QPL_READ_LEN - 200);
	}
	n = untagged_hdr(hdr, IW_OP_SEND, false, IW_DDP_QN_SEND, 2, 0);
	fpdu(tx, b, hdr, n, payload, 16);
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 2, 16);
	fpdu(tx, b, hdr, n, payload + 16, 48);
	n = untagged_hdr(hdr, IW_OP_SEND_INV, true, IW_DDP_QN_SEND, 3, 0);
	iw_put_be32(hdr + 2, QPL_STAG(QPL_MR_SPARE));
	fpdu(tx, b, hdr, n, payload, 8);
	n = untagged_hdr(hdr, IW_OP_SEND_SE_INV, true, IW_DDP_QN_SEND, 4, 0);
	iw_put_be32(hdr + 2, QPL_STAG(QPL_MR_RW));
	fpdu(tx, b, hdr, n, NULL, 0);
	n = untagged_hdr(hdr, IW_OP_SEND_SE, true, IW_DDP_QN_SEND, 5, 0);
	fpdu(tx, b, hdr, n, payload, 3);
	if (variant & QV_BAD_WRITE) {
		n = tagged_hdr(hdr, IW_OP_WRITE, true, QPL_STAG(QPL_MR_SPARE), QPL_VA(QPL_OFF_SPARE_A));
		fpdu(tx, b, hdr, n, payload, 32);
	}
	if (variant & QV_BAD_SEND) {
		n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 9, 0);
		fpdu(tx, b, hdr, n, payload, 32);
	}
	if (variant & QV_PEER_TERM) {
		struct iw_rdmap_term t;
		uint8_t bad[IW_DDP_TAGGED_HDR_LEN];
		tagged_hdr(bad, IW_OP_WRITE, true, QPL_PEER_STAG, 0x1000);
		iw_rdmap_term_prepare(&t, IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED,
							  IW_ECODE_DDP_T_INV_STAG),
				      bad, sizeof(bad), 16 + sizeof(bad));
		n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
		size_t body = iw_rdmap_term_encode(&t, hdr + n);
		fpdu(tx, b, hdr, n + body, NULL, 0);
	}
}

/* The peer's frame: a Request (we respond) or a Reply (we initiate),
 * rev 2 enhanced with IRD = ORD = 4 unless rev is 1. */
static void qpl_frame(struct buf *b, bool reply, uint8_t flags, uint8_t rev)
{
	static const uint8_t words[] = {0x00, 0x04, 0x00, 0x04, 'p', 'e', 'e', 'r'};
	uint8_t len[2];
	add(b, reply ? IW_MPA_KEY_REP : IW_MPA_KEY_REQ, IW_MPA_KEY_LEN);
	add8(b, rev == 2 ? (uint8_t)(flags | IW_MPA_FLAG_ENHANCED) : flags);
	add8(b, rev);
	const uint8_t *pd = rev == 2 ? words : words + 4;
	uint16_t pd_len = rev == 2 ? 8 : 4;
	iw_put_be16(len, pd_len);
	add(b, len, 2);
	add(b, pd, pd_len);
}

/* peer_flags: the C and M bits of the peer's frame. */
static void qpl_seed(const char *name, uint8_t mode, uint8_t peer_flags, uint8_t rev,
		     const uint8_t *ctl, uint8_t ctl_len, unsigned variant)
{
	static struct buf b;
	struct iw_mpa_tx tx;
	bool initiator = mode & QPL_MODE_INITIATOR;
	/* CRC iff the Reply has C: ours when we respond. */
	bool crc = initiator ? (peer_flags & IW_MPA_FLAG_CRC) != 0
			     : (peer_flags & IW_MPA_FLAG_CRC) || !(mode & QPL_MODE_CRC_OFF);
	/* The peer inserts markers when our frame asked for them. */
	bool markers = (mode & QPL_MODE_MARKERS) != 0;

	b.n = 0;
	add8(&b, mode);
	add8(&b, 0x44); /* IRD 4, ORD 4 */
	add8(&b, ctl_len);
	qpl_frame(&b, initiator, peer_flags, rev);
	add(&b, ctl, ctl_len);
	iw_mpa_tx_init(&tx, crc, markers);
	qpl_stream(&tx, &b, variant);
	put("fuzz_qp_live", name, b.b, b.n);
}

/* The peer rejects one of our messages with a Terminate that copies its
 * header (op: which), after one SEND of its own: the QP must pin the
 * error on the right WR. */
static void qpl_term_seed(const char *name, uint8_t mode, const uint8_t *ctl, uint8_t ctl_len, uint8_t op)
{
	static struct buf b;
	struct iw_mpa_tx tx;
	uint8_t hdr[64], bad[64];
	size_t n, bn;
	struct iw_term_cause cause;

	b.n = 0;
	add8(&b, mode);
	add8(&b, 0x44);
	add8(&b, ctl_len);
	qpl_frame(&b, mode & QPL_MODE_INITIATOR, IW_MPA_FLAG_CRC, 2);
	add(&b, ctl, ctl_len);
	iw_mpa_tx_init(&tx, true, false);
	n = untagged_hdr(hdr, IW_OP_SEND, true, IW_DDP_QN_SEND, 1, 0);
	fpdu(&tx, &b, hdr, n, (const uint8_t *)"hello", 5);
	if (op == IW_OP_WRITE) {
		bn = tagged_hdr(bad, IW_OP_WRITE, true, QPL_PEER_STAG, 0x1000);
		cause = IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_TAGGED, IW_ECODE_DDP_T_INV_STAG);
	} else if (op == IW_OP_READ_REQ) {
		bn = untagged_hdr(bad, IW_OP_READ_REQ, true, IW_DDP_QN_READ_REQ, 1, 0);
		struct iw_rdmap_read_req rr = {QPL_STAG(QPL_MR_LW), QPL_VA(QPL_OFF_LW + QPL_READ_SINK),
					       QPL_READ_LEN, QPL_PEER_STAG, 0x1000};
		iw_rdmap_read_req_encode(&rr, bad + bn);
		bn += IW_RDMAP_READ_REQ_LEN;
		cause = IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_REMOTE_PROT, 0x00);
	} else {
		bn = untagged_hdr(bad, op, true, IW_DDP_QN_SEND, 1, 0);
		cause = IW_TERM_CAUSE(IW_LAYER_DDP, IW_ETYPE_DDP_UNTAGGED, IW_ECODE_DDP_U_NO_BUFFER);
	}
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, cause, bad, bn, (uint16_t)(bn + 16));
	n = untagged_hdr(hdr, IW_OP_TERMINATE, true, IW_DDP_QN_TERMINATE, 1, 0);
	n += iw_rdmap_term_encode(&t, hdr + n);
	fpdu(&tx, &b, hdr, n, NULL, 0);
	put("fuzz_qp_live", name, b.b, b.n);
}

static void seeds_qp_live(void)
{
	const uint8_t C = IW_MPA_FLAG_CRC, M = IW_MPA_FLAG_MARKERS;
	/* Feed sizes: 1, 7, 64, 1448 bytes; API calls between. */
	static const uint8_t chunks[] = {0, 7, 20, 27, 0x20 | 3, 27, 26, 31};
	static const uint8_t api_mix[] = {
		QPL_API(QPL_API_POST_RECV), QPL_API(QPL_API_SEND), 20, QPL_API(QPL_API_WRITE),
		QPL_API(QPL_API_READ), 27, QPL_API(QPL_API_SEND_INV), QPL_API(QPL_API_SEND_INLINE),
		QPL_API(QPL_API_POST_RECV2), 26, QPL_API(QPL_API_SEND_FENCE), QPL_API(QPL_API_REREG),
		27, QPL_API(QPL_API_DEREG), 27, QPL_API(QPL_API_DEREG), 31, QPL_API(QPL_API_PROGRESS),
	};
	static const uint8_t disc[] = {27, QPL_API(QPL_API_SEND), QPL_API(QPL_API_DISCONNECT), 27, 31};
	static const uint8_t fin[] = {26, 27, QPL_API(QPL_API_READ), QPL_API(QPL_API_PEER_FIN), 31};
	static const uint8_t rst[] = {27, QPL_API(QPL_API_POST_RECV), QPL_API(QPL_API_PEER_RST)};

	qpl_seed("resp_plain", QPL_MODE_CRC_OFF, 0, 2, NULL, 0, QV_PLAIN);
	qpl_seed("resp_crc", 0x00, C, 2, chunks, sizeof(chunks), QV_PLAIN);
	qpl_seed("resp_crc_feed", QPL_MODE_FEED | 0x40, C, 2, NULL, 0, QV_PLAIN);
	qpl_seed("resp_markers_rx", QPL_MODE_MARKERS | QPL_MODE_CRC_OFF, 0, 2, NULL, 0, QV_PLAIN);
	qpl_seed("resp_markers_both_crc", QPL_MODE_MARKERS, C | M, 2, chunks, sizeof(chunks),
		 QV_PEER_TERM);
	qpl_seed("resp_v1", QPL_MODE_CRC_OFF | QPL_MODE_FEED, 0, 1, NULL, 0, QV_PLAIN);
	qpl_seed("resp_api_mix", 0x10, C, 2, api_mix, sizeof(api_mix), QV_PLAIN);
	qpl_seed("resp_bad_write", 0x20 | QPL_MODE_FEED, C, 2, NULL, 0, QV_BAD_WRITE);
	qpl_seed("resp_bad_send", 0x30, 0, 2, api_mix, sizeof(api_mix), QV_BAD_SEND);
	qpl_seed("init_crc", QPL_MODE_INITIATOR, C, 2, NULL, 0, QV_PLAIN);
	qpl_seed("init_plain_feed", QPL_MODE_INITIATOR | QPL_MODE_CRC_OFF | QPL_MODE_FEED, 0, 2,
		 chunks, sizeof(chunks), QV_PEER_TERM);
	qpl_seed("init_markers_both", QPL_MODE_INITIATOR | QPL_MODE_MARKERS | 0x80, C | M, 2, api_mix,
		 sizeof(api_mix), QV_PLAIN);
	qpl_seed("init_disconnect", QPL_MODE_INITIATOR | 0x10, C, 2, disc, sizeof(disc), QV_PLAIN);
	qpl_seed("init_peer_fin", QPL_MODE_INITIATOR, C, 2, fin, sizeof(fin), QV_PLAIN);
	qpl_seed("resp_peer_rst", 0x80, C, 2, rst, sizeof(rst), QV_PLAIN);
	static const uint8_t pre_write[] = {QPL_API(QPL_API_WRITE), QPL_API(QPL_API_SEND), 27, 27};
	static const uint8_t pre_send[] = {QPL_API(QPL_API_SEND_INV), QPL_API(QPL_API_WRITE), 27, 27};
	qpl_term_seed("term_copy_write", 0x00, pre_write, sizeof(pre_write), IW_OP_WRITE);
	qpl_term_seed("term_copy_read", QPL_MODE_INITIATOR, NULL, 0, IW_OP_READ_REQ);
	qpl_term_seed("term_copy_send_inv", QPL_MODE_FEED, pre_send, sizeof(pre_send), IW_OP_SEND_INV);
	qpl_seed("resp_srq", QPL_MODE_SRQ, C, 2, api_mix, sizeof(api_mix), QV_PLAIN);
	qpl_seed("init_srq_feed", QPL_MODE_SRQ | QPL_MODE_INITIATOR | QPL_MODE_FEED, 0, 2, chunks,
		 sizeof(chunks), QV_BAD_WRITE);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
		return 2;
	}
	root = argv[1];
	mkdir_p(root);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	seeds_mpa_frame();
	seeds_mpa_rx();
	seeds_ddp_rdmap();
	seeds_rdmap_conn();
	seeds_qp_live();
	return 0;
}
