/* Fuzz the whole receive path of one RDMAP stream endpoint: MPA deframing,
 * DDP validation and placement, RDMAP semantics, Terminate generation.
 *
 * Input: byte 0 picks CRC / markers / chunking / RFC 7306 (bit 3: the
 * writable region also takes atomics, one of our atomics is outstanding
 * behind the READs, Immediate Data consumes receives); the rest is the byte
 * stream a peer sends after the MPA handshake. The endpoint has memory
 * regions with fixed, guessable STags and small virtual addresses, posted
 * receives, and READs of its own outstanding (so Read Responses can
 * match). Invariants: guard bytes around every region stay intact, regions
 * without a remote write right (or of another PD) never change, nothing
 * crashes, leaks or loops, and after a violation nothing more is placed. */
#include <string.h>

#include "fuzz_common.h"
#include "rdmap/rdmap_conn.h"

#define GUARD 32
#define N_MR 5
#define N_RECV 4
#define RECV_LEN 2048

enum { MR_RW, MR_RO, MR_OTHER_PD, MR_SINK, MR_SRC_RO };

struct region {
	uint32_t stag;
	uint32_t pd;
	unsigned access;
	uint64_t va;
	size_t len;
	bool valid;
	uint8_t *mem; /* GUARD bytes before and after */
};

struct fixture {
	struct region mr[N_MR];
	uint8_t *recv[N_RECV];
	struct iovec recv_iov[N_RECV];
	unsigned recv_head;
	bool stopped;
	uint64_t placed_after_stop;
};

static enum iw_stag_status f_stag(void *ctx, uint32_t stag, uint64_t to, size_t len, unsigned access,
				  uint8_t **addr)
{
	struct fixture *f = ctx;
	for (int i = 0; i < N_MR; i++) {
		struct region *r = &f->mr[i];
		if (r->stag != stag)
			continue;
		if (!r->valid)
			return IW_STAG_INVALID;
		if (r->pd != 1)
			return IW_STAG_NOT_ASSOC;
		if (to < r->va || to - r->va > r->len || len > r->len - (to - r->va))
			return IW_STAG_BOUNDS;
		if ((r->access & access) != access)
			return IW_STAG_ACCESS;
		*addr = r->mem + GUARD + (to - r->va);
		return IW_STAG_OK;
	}
	return IW_STAG_INVALID;
}

static int f_recv_buf(void *ctx, const struct iovec **sgl, int *nsge)
{
	struct fixture *f = ctx;
	if (f->recv_head >= N_RECV)
		return -1;
	*sgl = &f->recv_iov[f->recv_head];
	*nsge = 1;
	return 0;
}

static int f_invalidate(void *ctx, uint32_t stag)
{
	struct fixture *f = ctx;
	for (int i = 0; i < N_MR; i++)
		if (f->mr[i].stag == stag && f->mr[i].valid && f->mr[i].pd == 1) {
			f->mr[i].valid = false;
			return 0;
		}
	return -1;
}

static void f_event(void *ctx, const struct iw_rdmap_event *ev)
{
	struct fixture *f = ctx;
	if (ev->type == IW_RDMAP_EV_RECV_DONE) {
		FUZZ_CHECK(f->recv_head < N_RECV);
		FUZZ_CHECK(ev->byte_len <= RECV_LEN || ev->has_imm); /* Immediate: the Write's length */
		f->recv_head++;
	}
	if (ev->type == IW_RDMAP_EV_ERROR || ev->type == IW_RDMAP_EV_TERM_RECV)
		f->stopped = true;
}

static uint8_t *guarded(size_t len, uint8_t fill)
{
	uint8_t *p = malloc(len + 2 * GUARD);
	memset(p, FUZZ_GUARD_BYTE, len + 2 * GUARD);
	memset(p + GUARD, fill, len);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	uint64_t rng = mode;
	data++;
	size--;

	static const struct {
		unsigned access;
		uint32_t pd;
		size_t len;
	} spec[N_MR] = {
		[MR_RW] = { IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ | IW_RDMAP_ACC_LOCAL_WRITE |
				    IW_RDMAP_ACC_REMOTE_ATOMIC,
			    1, 4096 },
		[MR_RO] = { IW_RDMAP_ACC_LOCAL_WRITE, 1, 1024 },
		[MR_OTHER_PD] = { IW_RDMAP_ACC_REMOTE_WRITE | IW_RDMAP_ACC_REMOTE_READ, 2, 1024 },
		[MR_SINK] = { IW_RDMAP_ACC_LOCAL_WRITE, 1, 4096 },
		[MR_SRC_RO] = { IW_RDMAP_ACC_REMOTE_READ, 1, 512 },
	};
	struct fixture f = { 0 };
	for (int i = 0; i < N_MR; i++) {
		f.mr[i] = (struct region){
			.stag = (uint32_t)(i + 1) << 8 | 0x5A, .pd = spec[i].pd, .access = spec[i].access,
			.va = 0x10000u * (uint64_t)(i + 1), .len = spec[i].len, .valid = true,
			.mem = guarded(spec[i].len, (uint8_t)(0x10 + i)),
		};
	}
	for (int i = 0; i < N_RECV; i++) {
		f.recv[i] = guarded(RECV_LEN, 0);
		f.recv_iov[i] = (struct iovec){ f.recv[i] + GUARD, RECV_LEN };
	}

	struct iw_rdmap_sq_entry sq[8];
	struct iw_rdmap_ird_entry ird[4];
	struct iw_rdmap_tx_slot tx[8];
	struct iw_rdmap_conn c;
	struct iw_rdmap_conn_cfg cfg = {
		.crc = mode & 1, .markers_tx = mode & 2, .markers_rx = mode & 2,
		.mulpdu = 1442, .ird = 4, .ord = 4, .rfc7306 = mode & 8,
	};
	struct iw_rdmap_conn_ops ops = { f_stag, f_recv_buf, f_invalidate, f_event };
	static struct iovec sq_sgl[8 * IW_RDMAP_MAX_SGE];
	static uint8_t tx_markers[8 * IW_MPA_TX_MAX_MARKERS][IW_MPA_MARKER_LEN];
	/* Mode 16: verified placement (payload staged until its CRC); mode 8
	 * negotiates RFC 7306. */
	static uint8_t rx_stage[65536];
	struct iw_rdmap_conn_mem mem = {
		.sq = sq, .sq_depth = 8, .ird = ird, .n_ird = 4, .tx = tx, .n_tx = 8,
		.sgl_pool = sq_sgl, .max_sge = IW_RDMAP_MAX_SGE, .tx_markers = tx_markers,
		.rx_stage = (mode & 16) ? rx_stage : NULL, .rx_stage_len = sizeof(rx_stage),
	};
	FUZZ_CHECK(iw_rdmap_conn_init(&c, &cfg, &ops, &f, &mem) == 0);

	/* Two READs outstanding so Read Responses have something to match. */
	for (int i = 0; i < 2; i++) {
		struct iw_rdmap_wr wr = { .cookie = (uint64_t)i, .opcode = IW_RDMAP_WR_READ, .nsge = 1,
					  .remote_stag = 0x9900, .remote_to = 0,
					  .local_stag = f.mr[MR_SINK].stag,
					  .local_to = f.mr[MR_SINK].va + 1024u * (unsigned)i };
		wr.sgl[0] = (struct iovec){ f.mr[MR_SINK].mem + GUARD + 1024 * i, 1024 };
		FUZZ_CHECK(iw_rdmap_post(&c, &wr) == 0);
	}
	if (mode & 8) { /* an atomic behind them: its response (id 0) comes third */
		struct iw_rdmap_wr wr = { .cookie = 2, .opcode = IW_RDMAP_WR_ATOMIC_FETCH_ADD, .nsge = 1,
					  .remote_stag = 0x9900, .remote_to = 0, .add_swap = 1 };
		wr.sgl[0] = (struct iovec){ f.mr[MR_SINK].mem + GUARD + 2048, 8 };
		FUZZ_CHECK(iw_rdmap_post(&c, &wr) == 0);
	}

	size_t off = 0;
	struct iovec iov[512];
	while (off < size) {
		size_t bytes;
		int n = iw_rdmap_tx_pull(&c, iov, 512, 1 << 20, &bytes);
		FUZZ_CHECK(n >= 0);
		if (n > 0)
			iw_rdmap_tx_ack(&c, bytes);
		size_t chunk = fuzz_range(&rng, 1, 1500);
		if (chunk > size - off)
			chunk = size - off;
		size_t used;
		if (mode & 4) {
			used = iw_rdmap_rx_feed(&c, data + off, chunk);
		} else {
			used = 0;
			while (used < chunk) {
				struct iovec rv[16];
				int k = iw_rdmap_rx_prepare(&c, rv, 16);
				if (k <= 0)
					break;
				size_t got = 0, want = fuzz_range(&rng, 1, chunk - used);
				for (int i = 0; i < k && got < want; i++) {
					size_t m = rv[i].iov_len < want - got ? rv[i].iov_len : want - got;
					memcpy(rv[i].iov_base, data + off + used + got, m);
					got += m;
				}
				iw_rdmap_rx_commit(&c, got);
				used += got;
			}
		}
		off += chunk;
		if (used < chunk || c.state != IW_RDMAP_ST_RTS)
			break;
	}
	/* Drain what the endpoint wants to send (responses, Terminate). */
	for (int rounds = 0; rounds < 64; rounds++) {
		size_t bytes;
		int n = iw_rdmap_tx_pull(&c, iov, 512, 1 << 20, &bytes);
		FUZZ_CHECK(n >= 0);
		if (n == 0)
			break;
		iw_rdmap_tx_ack(&c, bytes);
	}
	iw_rdmap_flush(&c);

	for (int i = 0; i < N_MR; i++) {
		struct region *r = &f.mr[i];
		FUZZ_CHECK(fuzz_guard_ok(r->mem, GUARD));
		FUZZ_CHECK(fuzz_guard_ok(r->mem + GUARD + r->len, GUARD));
		/* Only the writable region and the READ sink may change. */
		if (i != MR_RW && i != MR_SINK)
			for (size_t k = 0; k < r->len; k++)
				FUZZ_CHECK(r->mem[GUARD + k] == (uint8_t)(0x10 + i));
		free(r->mem);
	}
	for (int i = 0; i < N_RECV; i++) {
		FUZZ_CHECK(fuzz_guard_ok(f.recv[i], GUARD));
		FUZZ_CHECK(fuzz_guard_ok(f.recv[i] + GUARD + RECV_LEN, GUARD));
		free(f.recv[i]);
	}
	return 0;
}
