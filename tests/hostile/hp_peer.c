/* The hostile peer (see hp_peer.h). Non-blocking socket + poll: every
 * wait has a deadline. */
#include "hp_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/iw_bytes.h"
#include "ddp/ddp_wire.h"
#include "iwt_ddp.h"
#include "iwt_fpdu.h"
#include "iwt_handshake.h"
#include "rdmap/rdmap_wire.h"

uint64_t hp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int left_ms(uint64_t end)
{
	uint64_t now = hp_now_ms();
	return now >= end ? 0 : (int)(end - now);
}

struct hp_peer *hp_peer_new(void)
{
	struct hp_peer *p = calloc(1, sizeof(*p));
	if (p) {
		p->fd = -1;
		p->send_msn = 1;
		p->rreq_msn = 1;
	}
	return p;
}

void hp_peer_free(struct hp_peer *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static void sock_opts(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static socklen_t ss_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int hp_connect(struct hp_peer *p, const struct sockaddr_storage *addr, int rcvbuf)
{
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sock_opts(fd);
	if (connect(fd, (const struct sockaddr *)addr, ss_len(addr)) < 0 && errno != EINPROGRESS) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t el = sizeof(err);
	if (poll(&pfd, 1, 5000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		close(fd);
		return err ? -err : -ETIMEDOUT;
	}
	p->fd = fd;
	return 0;
}

int hp_listen(struct sockaddr_storage *addr)
{
	struct sockaddr_in *a = (struct sockaddr_in *)addr;
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memset(addr, 0, sizeof(*addr));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)a, len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)a, &len) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int hp_accept(struct hp_peer *p, int lfd, int ms, int rcvbuf)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	if (poll(&pfd, 1, ms) != 1)
		return -ETIMEDOUT;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sock_opts(fd);
	p->fd = fd;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Raw I/O                                                             */

int hp_send_slow(struct hp_peer *p, const void *buf, size_t len, size_t chunk, unsigned gap_us, int ms)
{
	const uint8_t *b = buf;
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	size_t done = 0;

	if (!chunk)
		chunk = len;
	while (done < len) {
		size_t want = len - done < chunk ? len - done : chunk;
		ssize_t n = send(p->fd, b + done, want, MSG_NOSIGNAL);
		if (n > 0) {
			done += (size_t)n;
			if (gap_us && done < len)
				usleep(gap_us);
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };
		int w = left_ms(end);
		if (!w || poll(&pfd, 1, w) < 0)
			return -ETIMEDOUT;
	}
	return 0;
}

int hp_send_raw(struct hp_peer *p, const void *buf, size_t len, int ms)
{
	return hp_send_slow(p, buf, len, 0, 0, ms);
}

/* Some bytes into p->in (appended). 1: got some, 0: EOF, < 0 error. */
static int fill(struct hp_peer *p, uint64_t end)
{
	if (p->in_off == p->in_len)
		p->in_off = p->in_len = 0;
	for (;;) {
		ssize_t n = recv(p->fd, p->in + p->in_len, sizeof(p->in) - p->in_len, 0);
		if (n > 0) {
			p->in_len += (size_t)n;
			return 1;
		}
		if (n == 0)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return errno == ECONNRESET ? -ECONNRESET : -errno;
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		int w = left_ms(end);
		if (!w)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, w) == 0)
			return -ETIMEDOUT;
	}
}

int hp_recv_exact(struct hp_peer *p, void *buf, size_t len, int ms)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	uint8_t *b = buf;
	size_t got = 0;

	while (got < len) {
		if (p->in_off < p->in_len) {
			size_t k = p->in_len - p->in_off;
			if (k > len - got)
				k = len - got;
			memcpy(b + got, p->in + p->in_off, k);
			p->in_off += k;
			got += k;
			continue;
		}
		int r = fill(p, end);
		if (r == 0)
			return 1;
		if (r < 0)
			return r;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Handshake                                                           */

static void rx_setup(struct hp_peer *p)
{
	struct iw_mpa_rx_config cfg = {
		.crc = p->crc,
		.markers = p->markers_rx,
		.max_ulpdu = 0,
		.ulp_lens = iw_rdmap_ulp_lens,
	};
	iw_mpa_rx_init(&p->rx, &cfg);
	p->rx_started = true;
	p->tx_off = 0;
}

static size_t frame_of(const struct hp_mpa *m, bool reply, uint8_t *out)
{
	uint8_t flags = m->flags;
	uint8_t rev = m->rev ? m->rev : 2;
	size_t n = reply ? iwt_mpa_rep_bytes(flags, rev, iwt_mpa_w1(false, false, m->ird),
					     iwt_mpa_w2(false, false, m->ord), m->pdata, m->pdata_len, out)
			 : iwt_mpa_req_bytes(flags, rev, iwt_mpa_w1(false, false, m->ird),
					     iwt_mpa_w2(false, false, m->ord), m->pdata, m->pdata_len, out);
	if (m->key)
		memcpy(out, m->key, 16);
	return n;
}

int hp_send_request(struct hp_peer *p, const struct hp_mpa *m)
{
	size_t n = frame_of(m, false, p->scratch);
	p->markers_rx = (m->flags & 0x80) != 0;
	return hp_send_raw(p, p->scratch, n, 5000);
}

/* Read one MPA frame (header + PD_Length bytes) into p->frame. */
static int read_frame(struct hp_peer *p, int ms)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	int r = hp_recv_exact(p, p->frame, 20, ms);
	if (r)
		return r;
	size_t pd = (size_t)p->frame[18] << 8 | p->frame[19];
	r = hp_recv_exact(p, p->frame + 20, pd, left_ms(end) ? left_ms(end) : 1);
	if (r)
		return r;
	p->frame_len = 20 + pd;
	if (pd >= 4 && (p->frame[16] & 0x10) && p->frame[17] == 2) {
		p->peer_ird = iw_get_be16(p->frame + 20) & 0x3FFF;
		p->peer_ord = iw_get_be16(p->frame + 22) & 0x3FFF;
	}
	return 0;
}

int hp_read_reply(struct hp_peer *p, bool req_markers, int ms)
{
	int r = read_frame(p, ms);
	if (r)
		return r;
	if (memcmp(p->frame, "MPA ID Rep Frame", 16) != 0 || (p->frame[16] & 0x20))
		return -EPROTO;
	p->crc = (p->frame[16] & 0x40) != 0;
	p->markers_tx = (p->frame[16] & 0x80) != 0;
	p->markers_rx = req_markers;
	rx_setup(p);
	return 0;
}

int hp_respond(struct hp_peer *p, const struct hp_mpa *m, unsigned flags, int ms)
{
	int r = read_frame(p, ms);
	if (r)
		return r;
	if (memcmp(p->frame, "MPA ID Req Frame", 16) != 0)
		return -EPROTO;
	struct hp_mpa rep = *m;
	if (flags & HP_FLAGS_ECHO)
		rep.flags = (uint8_t)((rep.flags & ~0x40) | (p->frame[16] & 0x40));
	p->markers_tx = (p->frame[16] & 0x80) != 0;
	p->markers_rx = (rep.flags & 0x80) != 0;
	p->crc = (rep.flags & 0x40) != 0;
	size_t n = frame_of(&rep, true, p->scratch);
	r = hp_send_raw(p, p->scratch, n, 5000);
	if (r)
		return r;
	rx_setup(p);
	return 0;
}

/* ------------------------------------------------------------------ */
/* FPDUs out                                                           */

ssize_t hp_build(struct hp_peer *p, const void *hdr, size_t hdr_len, const void *payload, size_t plen,
		 uint8_t *out, size_t cap)
{
	ssize_t n = iwt_fpdu_ref_encode(p->tx_off, p->crc, p->markers_tx, hdr, hdr_len, payload, plen, out, cap);
	if (n > 0)
		p->tx_off += (uint32_t)n;
	return n;
}

int hp_send_fpdu(struct hp_peer *p, const void *hdr, size_t hdr_len, const void *payload, size_t plen)
{
	ssize_t n = hp_build(p, hdr, hdr_len, payload, plen, p->scratch, sizeof(p->scratch));
	if (n < 0)
		return (int)n;
	return hp_send_raw(p, p->scratch, (size_t)n, 5000);
}

size_t hp_hdr_tagged(uint8_t *buf, uint8_t opcode, uint32_t stag, uint64_t to, bool last)
{
	return iwt_ddp_tagged(buf, iw_rdmap_ctrl(opcode), stag, to, last, IW_DDP_VERSION);
}

size_t hp_hdr_untagged(uint8_t *buf, uint8_t opcode, uint32_t qn, uint32_t msn, uint32_t mo, bool last,
		       uint32_t ulp_word)
{
	return iwt_ddp_untagged(buf, iw_rdmap_ctrl(opcode), ulp_word, qn, msn, mo, last, IW_DDP_VERSION);
}

int hp_send_send(struct hp_peer *p, const void *data, size_t len)
{
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];
	hp_hdr_untagged(h, IW_OP_SEND, 0, p->send_msn++, 0, true, 0);
	return hp_send_fpdu(p, h, sizeof(h), data, len);
}

int hp_send_write(struct hp_peer *p, uint32_t stag, uint64_t to, const void *data, size_t len)
{
	uint8_t h[IW_DDP_TAGGED_HDR_LEN];
	hp_hdr_tagged(h, IW_OP_WRITE, stag, to, true);
	return hp_send_fpdu(p, h, sizeof(h), data, len);
}

int hp_send_read_req(struct hp_peer *p, uint32_t sink_stag, uint64_t sink_to, uint32_t size, uint32_t src_stag,
		     uint64_t src_to)
{
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], body[IW_RDMAP_READ_REQ_LEN];
	struct iw_rdmap_read_req r = { sink_stag, sink_to, size, src_stag, src_to };
	hp_hdr_untagged(h, IW_OP_READ_REQ, 1, p->rreq_msn++, 0, true, 0);
	iw_rdmap_read_req_encode(&r, body);
	return hp_send_fpdu(p, h, sizeof(h), body, sizeof(body));
}

int hp_send_terminate(struct hp_peer *p, struct iw_term_cause cause)
{
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], body[IW_RDMAP_TERM_MAX_LEN];
	struct iw_rdmap_term t;
	iw_rdmap_term_prepare(&t, cause, NULL, 0, 0);
	size_t n = iw_rdmap_term_encode(&t, body);
	hp_hdr_untagged(h, IW_OP_TERMINATE, 2, 1, 0, true, 0);
	return hp_send_fpdu(p, h, sizeof(h), body, n);
}

/* ------------------------------------------------------------------ */
/* FPDUs in                                                            */

static void decode_hdr(struct hp_fpdu *f, const struct iw_mpa_rx_event *ev)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->hdr, ev->hdr, ev->hdr_len);
	f->hdr_len = ev->hdr_len;
	f->ulpdu_len = ev->ulpdu_len;
	f->payload_len = ev->payload_len;
	f->tagged = (ev->hdr[0] & IW_DDP_CTRL_TAGGED) != 0;
	f->last = (ev->hdr[0] & IW_DDP_CTRL_LAST) != 0;
	f->opcode = iw_rdmap_opcode_of(ev->hdr[1]);
	if (f->tagged && ev->hdr_len >= IW_DDP_TAGGED_HDR_LEN) {
		f->stag = iw_get_be32(ev->hdr + 2);
		f->to = iw_get_be64(ev->hdr + 6);
	} else if (!f->tagged && ev->hdr_len >= IW_DDP_UNTAGGED_HDR_LEN) {
		f->qn = iw_get_be32(ev->hdr + 6);
		f->msn = iw_get_be32(ev->hdr + 10);
		f->mo = iw_get_be32(ev->hdr + 14);
	}
}

int hp_recv_fpdu(struct hp_peer *p, int ms, struct hp_fpdu *out)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;

	if (!p->rx_started)
		return -EPROTO;
	for (;;) {
		while (p->in_off < p->in_len) {
			struct iw_mpa_rx_event ev;
			size_t n = iw_mpa_rx_feed(&p->rx, p->in + p->in_off, p->in_len - p->in_off, &ev);
			p->in_off += n;
			switch (ev.type) {
			case IW_MPA_RX_HEADER:
				decode_hdr(&p->cur, &ev);
				p->sink.iov_base = p->payload;
				p->sink.iov_len = ev.payload_len;
				iw_mpa_rx_set_sink(&p->rx, ev.payload_len ? &p->sink : NULL, ev.payload_len ? 1 : 0);
				break;
			case IW_MPA_RX_FPDU:
				*out = p->cur;
				out->payload = p->payload;
				return 1;
			case IW_MPA_RX_ERROR:
				return -EPROTO;
			default:
				break;
			}
		}
		int r = fill(p, end);
		if (r <= 0)
			return r;
	}
}

int hp_expect_term(struct hp_peer *p, int ms, struct iw_rdmap_term *t)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;
	struct hp_fpdu f;

	for (;;) {
		int r = hp_recv_fpdu(p, left_ms(end) ? left_ms(end) : 1, &f);
		if (r != 1)
			return r;
		if (!f.tagged && f.opcode == IW_OP_TERMINATE) {
			memset(t, 0, sizeof(*t));
			iw_rdmap_term_decode(f.payload, f.payload_len, t);
			return 0;
		}
		p->fpdus_skipped++;
	}
}

int hp_wait_closed(struct hp_peer *p, int ms)
{
	uint64_t end = hp_now_ms() + (uint64_t)ms;

	for (;;) {
		p->in_off = p->in_len = 0;
		int r = fill(p, end);
		if (r == 0 || (r < 0 && r != -ETIMEDOUT))
			return 0;
		if (r == -ETIMEDOUT)
			return -ETIMEDOUT;
	}
}

bool hp_quiet(struct hp_peer *p, int ms)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	return poll(&pfd, 1, ms) == 0;
}
