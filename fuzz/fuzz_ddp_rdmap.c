/* DDP receive validation and placement (ddp/ddp_rx.h) over a small fake
 * MR table and receive queues, plus the RDMAP Terminate and Read Request
 * decoders.
 *
 * Input: records of [u16 BE payload length (low 12 bits)][DDP/RDMAP
 * header], the header as long as MPA would deliver it (14 tagged, 18
 * untagged, +28 for a Read Request). Payload bytes are not in the input:
 * the harness writes a pattern where DDP says they go.
 *
 * Properties: every destination lies inside the addressed MR or posted
 * buffer and adds up to the payload length, guard bytes around all
 * memory stay intact, every failure is a defined (layer, etype, ecode),
 * a Terminate built for it encodes and decodes back, and the header
 * codecs round-trip. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "common/iw_bytes.h"
#include "ddp/ddp_rx.h"
#include "ddp/ddp_wire.h"
#include "fuzz_common.h"
#include "rdmap/rdmap_term.h"
#include "rdmap/rdmap_wire.h"

#define GUARD 32

enum { R_WRITE = 1, R_READ = 2 };

struct fake_mr {
	uint32_t stag; /* index << 8 | key */
	uint64_t base;
	size_t len;
	unsigned rights;
	unsigned pd;
	size_t off; /* in the arena */
};

/* Index 1..4; index 0 and anything above are unknown. MR 3 ends at the
 * top of the 64-bit TO space, MR 4 belongs to another PD. */
static struct fake_mr mrs[] = {
	{0x00000100, 0x1000, 256, R_WRITE | R_READ, 1, 0},
	{0x00000201, 0x2000, 64, R_READ, 1, 0},
	{0x00000300, 0xFFFFFFFFFFFFFF00ull, 256, R_WRITE | R_READ, 1, 0},
	{0x00000400, 0x4000, 128, R_WRITE | R_READ, 2, 0},
};
#define NMR (sizeof(mrs) / sizeof(mrs[0]))

/* Posted receive buffers: QN 0 has three (MSN 1..3) of different shapes;
 * QN 1 (Read Requests) and QN 2 (Terminate) always have one. */
struct posted {
	struct iovec sgl[3];
	int nsge;
};
static const size_t shapes[5][3] = {{64}, {16, 48}, {8, 8, 100}, {16}, {64}};
static const int shape_n[5] = {1, 2, 3, 1, 1};
static struct posted posted[5];

static uint8_t arena[4096];
static size_t arena_used;

static uint8_t *carve(size_t len)
{
	uint8_t *p = arena + arena_used + GUARD;
	arena_used += GUARD + len;
	FUZZ_CHECK(arena_used + GUARD <= sizeof(arena));
	return p;
}

static void layout(void)
{
	arena_used = 0;
	for (size_t i = 0; i < NMR; i++)
		mrs[i].off = (size_t)(carve(mrs[i].len) - arena);
	for (int b = 0; b < 5; b++) {
		posted[b].nsge = shape_n[b];
		for (int i = 0; i < shape_n[b]; i++)
			posted[b].sgl[i] = (struct iovec){carve(shapes[b][i]), shapes[b][i]};
	}
	arena_used += GUARD;
}

static enum iw_stag_status lookup(void *ctx, uint32_t stag, uint64_t to, size_t len,
				  uint8_t ulp_ctrl, uint8_t **dest)
{
	(void)ctx;
	for (size_t i = 0; i < NMR; i++) {
		const struct fake_mr *mr = &mrs[i];
		if (mr->stag != stag)
			continue;
		if (mr->pd != 1)
			return IW_STAG_NOT_ASSOC;
		unsigned need = iw_rdmap_opcode_of(ulp_ctrl) == IW_OP_WRITE ||
						iw_rdmap_opcode_of(ulp_ctrl) == IW_OP_READ_RESP
					? R_WRITE
					: R_READ;
		if (!(mr->rights & need))
			return IW_STAG_ACCESS;
		if (to < mr->base || to - mr->base > mr->len || len > mr->len - (to - mr->base))
			return IW_STAG_BOUNDS;
		*dest = arena + mr->off + (to - mr->base);
		return IW_STAG_OK;
	}
	return IW_STAG_INVALID;
}

static int untagged(void *ctx, uint32_t qn, uint32_t msn, const struct iovec **sgl, int *nsge,
		    struct iw_term_cause *cause)
{
	(void)ctx;
	(void)cause;
	int b;
	if (qn == IW_DDP_QN_SEND && msn >= 1 && msn <= 3)
		b = (int)msn - 1;
	else if (qn == IW_DDP_QN_READ_REQ && msn >= 1 && msn <= 8)
		b = 3;
	else if (qn == IW_DDP_QN_TERMINATE && msn >= 1 && msn <= 8)
		b = 4;
	else
		return -1;
	*sgl = posted[b].sgl;
	*nsge = posted[b].nsge;
	return 0;
}

static const struct iw_ddp_rx_ops ops = {lookup, untagged};

static bool guards_ok(void)
{
	size_t pos = 0;
	for (size_t i = 0; i < NMR; i++) {
		if (!fuzz_guard_ok(arena + pos, mrs[i].off - pos))
			return false;
		pos = mrs[i].off + mrs[i].len;
	}
	for (int b = 0; b < 5; b++)
		for (int i = 0; i < posted[b].nsge; i++) {
			size_t off = (size_t)((uint8_t *)posted[b].sgl[i].iov_base - arena);
			if (!fuzz_guard_ok(arena + pos, off - pos))
				return false;
			pos = off + posted[b].sgl[i].iov_len;
		}
	return fuzz_guard_ok(arena + pos, arena_used - pos);
}

/* A destination must lie in one MR (tagged) or one buffer of its queue. */
static bool dest_ok(const struct iw_ddp_segment *seg, const struct iovec *d)
{
	if (seg->hdr.tagged) {
		for (size_t i = 0; i < NMR; i++)
			if (fuzz_within(d->iov_base, d->iov_len, arena + mrs[i].off, mrs[i].len))
				return true;
		return false;
	}
	for (int b = 0; b < 5; b++)
		for (int i = 0; i < posted[b].nsge; i++)
			if (fuzz_within(d->iov_base, d->iov_len, posted[b].sgl[i].iov_base,
					posted[b].sgl[i].iov_len))
				return true;
	return false;
}

static bool defined_cause(struct iw_term_cause c)
{
	const char *s = iw_term_cause_str(c);
	return strstr(s, "unknown") == NULL;
}

static void check_term_roundtrip(struct iw_term_cause c, const uint8_t *ulpdu, size_t avail,
				 uint16_t ulpdu_len)
{
	struct iw_rdmap_term t, u;
	uint8_t body[IW_RDMAP_TERM_MAX_LEN + 8];

	memset(&t, 0, sizeof(t));
	iw_rdmap_term_prepare(&t, c, ulpdu, avail, ulpdu_len);
	FUZZ_CHECK(iw_term_cause_eq(t.cause, c));
	memset(body + IW_RDMAP_TERM_MAX_LEN, FUZZ_GUARD_BYTE, 8);
	size_t n = iw_rdmap_term_encode(&t, body);
	FUZZ_CHECK(n >= IW_RDMAP_TERM_CTRL_LEN && n <= IW_RDMAP_TERM_MAX_LEN);
	FUZZ_CHECK(fuzz_guard_ok(body + IW_RDMAP_TERM_MAX_LEN, 8));
	memset(&u, 0, sizeof(u));
	FUZZ_CHECK(iw_rdmap_term_decode(body, n, &u) == 0);
	FUZZ_CHECK(iw_term_cause_eq(u.cause, c));
	FUZZ_CHECK(!u.siw_layout);
	FUZZ_CHECK(u.has_seg_len == t.has_seg_len && u.has_ddp_hdr == t.has_ddp_hdr &&
		   u.has_rdmap_hdr == t.has_rdmap_hdr);
	if (t.has_seg_len)
		FUZZ_CHECK(u.seg_len == t.seg_len);
	if (t.has_ddp_hdr)
		FUZZ_CHECK(u.ddp_hdr_len == t.ddp_hdr_len &&
			   memcmp(u.ddp_hdr, t.ddp_hdr, t.ddp_hdr_len) == 0);
	if (t.has_rdmap_hdr)
		FUZZ_CHECK(u.rdmap_hdr_len == t.rdmap_hdr_len &&
			   memcmp(u.rdmap_hdr, t.rdmap_hdr, t.rdmap_hdr_len) == 0);
}

/* Any bytes: decode must stay in bounds and report only what fits. */
static void decode_term_any(const uint8_t *p, size_t len)
{
	struct iw_rdmap_term t;
	memset(&t, 0, sizeof(t));
	int r = iw_rdmap_term_decode(p, len, &t);
	FUZZ_CHECK(r == 0 || r == -1);
	if (r != 0)
		return;
	FUZZ_CHECK(len >= IW_RDMAP_TERM_CTRL_LEN);
	if (t.has_ddp_hdr)
		FUZZ_CHECK(t.ddp_hdr_len == IW_DDP_TAGGED_HDR_LEN ||
			   t.ddp_hdr_len == IW_DDP_UNTAGGED_HDR_LEN);
	FUZZ_CHECK(t.rdmap_hdr_len <= IW_RDMAP_READ_REQ_LEN);
	(void)iw_term_cause_str(t.cause);
}

static void check_hdr_codec(const uint8_t *hdr, size_t len)
{
	struct iw_ddp_hdr h;
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN];
	size_t n = iw_ddp_hdr_decode(hdr, len, &h);

	FUZZ_CHECK(n == 0 || n == iw_ddp_hdr_len_ctrl(hdr[0]));
	if (n == 0) {
		FUZZ_CHECK(len < iw_ddp_hdr_len_ctrl(hdr[0]));
		return;
	}
	FUZZ_CHECK(iw_ddp_hdr_encode(&h, out) == n);
	FUZZ_CHECK(out[0] == ((hdr[0] & (IW_DDP_CTRL_TAGGED | IW_DDP_CTRL_LAST)) | IW_DDP_VERSION));
	FUZZ_CHECK(memcmp(out + 1, hdr + 1, n - 1) == 0);
}

static void check_read_req(const uint8_t *body)
{
	struct iw_rdmap_read_req r;
	uint8_t out[IW_RDMAP_READ_REQ_LEN];
	iw_rdmap_read_req_decode(body, &r);
	iw_rdmap_read_req_encode(&r, out);
	FUZZ_CHECK(memcmp(out, body, IW_RDMAP_READ_REQ_LEN) == 0);
	FUZZ_CHECK(r.sink_stag == iw_get_be32(body) && r.size == iw_get_be32(body + 12));
}

/* RFC 7306 bodies: decode, re-encode, same bytes (but reserved bits of
 * an Atomic Request's word 0 stay apart from its opcode); applying any
 * decoded request to any value never crashes. */
static void check_rfc7306_bodies(const uint8_t *body, size_t len)
{
	if (len >= IW_RDMAP_ATOMIC_REQ_LEN) {
		struct iw_rdmap_atomic_req r;
		uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN];
		iw_rdmap_atomic_req_decode(body, &r);
		FUZZ_CHECK(r.op <= IW_RDMAP_ATOMIC_OP_MASK && !(r.rsvd & IW_RDMAP_ATOMIC_OP_MASK));
		iw_rdmap_atomic_req_encode(&r, out);
		FUZZ_CHECK(memcmp(out, body, IW_RDMAP_ATOMIC_REQ_LEN) == 0);
		bool changed;
		uint64_t v = iw_rdmap_atomic_apply(&r, r.compare, &changed);
		FUZZ_CHECK(changed == (v != r.compare));
	}
	if (len >= IW_RDMAP_ATOMIC_RESP_LEN) {
		struct iw_rdmap_atomic_resp r;
		uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN];
		iw_rdmap_atomic_resp_decode(body, &r);
		iw_rdmap_atomic_resp_encode(&r, out);
		FUZZ_CHECK(memcmp(out, body, IW_RDMAP_ATOMIC_RESP_LEN) == 0);
	}
}

/* What MPA would deliver as the header for these control bytes. */
static size_t deliver_len(const uint8_t ctrl[2])
{
	if (ctrl[0] & IW_DDP_CTRL_TAGGED)
		return IW_DDP_TAGGED_HDR_LEN;
	const struct iw_rdmap_opinfo *oi = &iw_rdmap_optable[iw_rdmap_opcode_of(ctrl[1])];
	size_t ext = (oi->flags & IW_OPF_VALID) && !oi->tagged ? oi->ulp_hdr_len : 0;
	return IW_DDP_UNTAGGED_HDR_LEN + ext;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct iw_ddp_rx rx;
	static struct iw_ddp_segment seg;
	size_t pos = 0;
	uint8_t fill = 0;

	layout();
	memset(arena, FUZZ_GUARD_BYTE, sizeof(arena));
	for (size_t i = 0; i < NMR; i++)
		memset(arena + mrs[i].off, 0, mrs[i].len);
	for (int b = 0; b < 5; b++)
		for (int i = 0; i < posted[b].nsge; i++)
			memset(posted[b].sgl[i].iov_base, 0, posted[b].sgl[i].iov_len);
	iw_ddp_rx_init(&rx, &ops, NULL);

	decode_term_any(data, size);

	while (pos + 4 <= size) {
		size_t payload_len = iw_get_be16(data + pos) & 0x0FFF;
		const uint8_t *hdr = data + pos + 2;
		size_t hdr_len = deliver_len(hdr);
		if (pos + 2 + hdr_len > size)
			break;
		pos += 2 + hdr_len;
		if (hdr_len > 2)
			check_hdr_codec(hdr, hdr_len);
		if (!(hdr[0] & IW_DDP_CTRL_TAGGED)) {
			if (hdr_len >= IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN)
				check_read_req(hdr + IW_DDP_UNTAGGED_HDR_LEN);
			check_rfc7306_bodies(hdr + IW_DDP_UNTAGGED_HDR_LEN, hdr_len - IW_DDP_UNTAGGED_HDR_LEN);
			/* Whatever follows an untagged header might be a Terminate body. */
			decode_term_any(hdr + IW_DDP_UNTAGGED_HDR_LEN, size - (pos - hdr_len) -
									  IW_DDP_UNTAGGED_HDR_LEN);
		}

		struct iw_term_cause cause = {0xEE, 0xEE, 0xEE, true};
		memset(&seg, 0, sizeof(seg));
		int r = iw_ddp_rx_begin(&rx, hdr, hdr_len, payload_len, &seg, &cause);
		FUZZ_CHECK(r == 0 || r == -1);
		if (r != 0) {
			FUZZ_CHECK(cause.layer == IW_LAYER_DDP || cause.layer == IW_LAYER_RDMAP);
			FUZZ_CHECK(defined_cause(cause));
			check_term_roundtrip(cause, hdr, hdr_len, (uint16_t)(hdr_len + payload_len));
			continue;
		}
		FUZZ_CHECK(seg.payload_len == payload_len);
		FUZZ_CHECK(seg.ndest >= 0 && seg.ndest <= IW_DDP_MAX_SGE);
		FUZZ_CHECK(seg.hdr.tagged == !!(hdr[0] & IW_DDP_CTRL_TAGGED));
		size_t total = 0;
		fill++;
		for (int i = 0; i < seg.ndest; i++) {
			FUZZ_CHECK(dest_ok(&seg, &seg.dest[i]));
			memset(seg.dest[i].iov_base, fill, seg.dest[i].iov_len);
			total += seg.dest[i].iov_len;
		}
		FUZZ_CHECK(total == payload_len);
		FUZZ_CHECK(guards_ok());
		(void)iw_ddp_rx_end(&rx, &seg);
	}
	return 0;
}
