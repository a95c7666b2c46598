/* gen_quirks: captures laid out to hit each case the tshark cross-check
 * excludes, built with our MPA encoders (see README.md):
 *   quirk-short-head.pcap   an FPDU with only 4 bytes in its first segment
 *   quirk-reply-seg.pcap    the responder's first FPDU in the Reply's segment
 *   quirk-reply-span.pcap   ... and continuing into the next segment
 *   quirk-markers.pcap      markers on, segments holding one or two FPDUs
 * Usage: gen_quirks OUTDIR. Each session: MPA Request (A) and Reply (B),
 * A sends NFPDU SENDs, B sends NFPDU SENDs, CRC on. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iw_bytes.h"
#include "iwt_common.h"
#include "iwt_pcap.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_tx.h"

#define NFPDU 10
#define STREAM_MAX (64 * 1024)

struct stream {
	uint8_t b[STREAM_MAX];
	size_t len, frame_len;
	size_t start[NFPDU + 1]; /* FPDU starts; start[NFPDU] = end */
};

static void die(const char *what)
{
	fprintf(stderr, "gen_quirks: %s\n", what);
	exit(1);
}

static void frame(struct stream *s, enum iw_mpa_frame_kind kind, bool markers)
{
	struct iw_mpa_frame f = {.kind = kind, .rev = 2, .markers = markers, .crc = true, .enhanced = true,
				 .ird = 1, .ord = 1};
	ssize_t n = iw_mpa_frame_encode(&f, s->b, STREAM_MAX, NULL);

	if (n <= 0)
		die("frame encode");
	s->len = s->frame_len = (size_t)n;
}

/* end_at: index of the FPDU that must end exactly where a marker is due
 * (-1 none). */
static void sends(struct stream *s, bool markers, uint32_t tag, int end_at)
{
	struct iw_mpa_tx tx;

	iw_mpa_tx_init(&tx, true, markers);
	for (int i = 0; i < NFPDU; i++) {
		uint8_t hdr[18] = {0x41, 0x43, 0}; /* L, DDP v1; RDMAP v1, SEND */
		uint8_t payload[1100];
		size_t plen = 40 + (size_t)(i * 37 + tag) % 300;

		if (i == end_at) {
			/* Wire lengths are multiples of 4: some size in 300 bytes fits. */
			for (plen = 40; plen < sizeof(payload); plen++)
				if ((tx.stream_off + iw_mpa_tx_wire_len(&tx, sizeof(hdr) + plen)) % IW_MPA_MARKER_INTERVAL == 0)
					break;
			if (plen == sizeof(payload))
				die("no size ends at a marker");
		}
		struct iovec pl = {payload, plen}, iov[8 + 2 * IW_MPA_TX_MAX_MARKERS];
		struct iw_mpa_tx_fpdu fp;
		int n;

		iw_put_be32(hdr + 10, 1 + (uint32_t)i); /* MSN */
		iwt_fill_pattern(payload, plen, tag + (uint32_t)i);
		n = iw_mpa_tx_build(&tx, &fp, hdr, sizeof(hdr), &pl, 1, iov, (int)(sizeof(iov) / sizeof(iov[0])));
		if (n <= 0)
			die("fpdu build");
		s->start[i] = s->len;
		for (int k = 0; k < n; k++) {
			if (s->len + iov[k].iov_len > STREAM_MAX)
				die("stream full");
			memcpy(s->b + s->len, iov[k].iov_base, iov[k].iov_len);
			s->len += iov[k].iov_len;
		}
	}
	s->start[NFPDU] = s->len;
}

/* Send [from, to) of s from side dir in one segment. */
static void seg(struct iwt_tcp *t, int dir, const struct stream *s, size_t from, size_t to)
{
	if (to > from && iwt_tcp_send(t, dir, s->b + from, to - from, to - from) != 0)
		die("segment");
}

enum layout { SHORT_HEAD, SHORT_HEAD_SHARED, REPLY_SEG, REPLY_SPAN, MARKERS, MARKER_END };

static void session(const char *dir, const char *name, enum layout lay)
{
	static struct stream a, b;
	static struct iwt_pcap pc;
	struct iwt_endpoint ea, eb;
	struct iwt_tcp t;
	bool mk = lay == MARKERS || lay == MARKER_END;
	char path[1024];

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	frame(&a, IW_MPA_REQUEST, mk);
	frame(&b, IW_MPA_REPLY, mk);
	sends(&a, mk, 100, -1);
	sends(&b, mk, 200, lay == MARKER_END ? 4 : -1);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (iwt_pcap_open(&pc, path) != 0)
		die(path);
	iwt_endpoint_set(&ea, "02:00:00:00:00:01", "10.0.0.1", 40001);
	iwt_endpoint_set(&eb, "02:00:00:00:00:02", "10.0.0.2", 7174);
	iwt_tcp_init(&t, &pc, &ea, &eb, 5000, 9000);
	if (iwt_tcp_handshake(&t) != 0)
		die("handshake");
	seg(&t, IWT_TCP_A, &a, 0, a.frame_len);
	switch (lay) {
	case SHORT_HEAD:
	case SHORT_HEAD_SHARED:
		/* B's FPDU 5 (index 4) has its first 4 bytes in a segment of
		 * their own, or at the end of FPDU 4's segment. */
		seg(&t, IWT_TCP_B, &b, 0, b.frame_len);
		for (int i = 0; i < NFPDU; i++) {
			seg(&t, IWT_TCP_A, &a, a.start[i], a.start[i + 1]);
			if (i == 3 && lay == SHORT_HEAD) {
				seg(&t, IWT_TCP_B, &b, b.start[3], b.start[4]);
				seg(&t, IWT_TCP_B, &b, b.start[4], b.start[4] + 4);
			} else if (i == 3) {
				seg(&t, IWT_TCP_B, &b, b.start[3], b.start[4] + 4);
			} else if (i == 4) {
				seg(&t, IWT_TCP_B, &b, b.start[4] + 4, b.start[5]);
			} else {
				seg(&t, IWT_TCP_B, &b, b.start[i], b.start[i + 1]);
			}
		}
		break;
	case REPLY_SEG:
	case REPLY_SPAN:
		/* The Reply and B's first FPDU (or part of it) in one segment. */
		{
			size_t cut = lay == REPLY_SEG ? b.start[1] : b.start[0] + 20;

			seg(&t, IWT_TCP_B, &b, 0, cut);
			if (lay == REPLY_SPAN)
				seg(&t, IWT_TCP_B, &b, cut, b.start[1]);
		}
		for (int i = 0; i < NFPDU; i++) {
			seg(&t, IWT_TCP_A, &a, a.start[i], a.start[i + 1]);
			if (i > 0)
				seg(&t, IWT_TCP_B, &b, b.start[i], b.start[i + 1]);
		}
		break;
	case MARKER_END:
		/* One FPDU per segment; B's FPDU 5 ends where a marker is due. */
		seg(&t, IWT_TCP_B, &b, 0, b.frame_len);
		for (int i = 0; i < NFPDU; i++) {
			seg(&t, IWT_TCP_A, &a, a.start[i], a.start[i + 1]);
			seg(&t, IWT_TCP_B, &b, b.start[i], b.start[i + 1]);
		}
		break;
	case MARKERS:
		/* A: one FPDU per segment. B: FPDUs 3+4 and 7+8 share segments. */
		seg(&t, IWT_TCP_B, &b, 0, b.frame_len);
		for (int i = 0; i < NFPDU; i++) {
			seg(&t, IWT_TCP_A, &a, a.start[i], a.start[i + 1]);
			if (i == 2 || i == 6)
				seg(&t, IWT_TCP_B, &b, b.start[i], b.start[i + 2]);
			else if (i != 3 && i != 7)
				seg(&t, IWT_TCP_B, &b, b.start[i], b.start[i + 1]);
		}
		break;
	}
	if (iwt_tcp_close(&t, IWT_TCP_A) != 0 || iwt_pcap_close(&pc) != 0)
		die("close");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_quirks OUTDIR\n");
		return 2;
	}
	session(argv[1], "quirk-short-head.pcap", SHORT_HEAD);
	session(argv[1], "quirk-short-head-shared.pcap", SHORT_HEAD_SHARED);
	session(argv[1], "quirk-marker-end.pcap", MARKER_END);
	session(argv[1], "quirk-reply-seg.pcap", REPLY_SEG);
	session(argv[1], "quirk-reply-span.pcap", REPLY_SPAN);
	session(argv[1], "quirk-markers.pcap", MARKERS);
	return 0;
}
