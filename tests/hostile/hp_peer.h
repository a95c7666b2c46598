/* The hostile peer: a raw TCP endpoint over the loopback that speaks just
 * enough MPA to get a connection to RTS (as initiator toward our listener,
 * or as responder to our connect; CRC and markers either way) and then
 * sends whatever bytes a test scripts, valid or not. It reads back what
 * our stack sends: FPDUs (deframed, markers stripped, CRC checked), the
 * Terminate among them, and whether the connection is then closed.
 *
 * Every wait is bounded by a timeout in milliseconds; nothing blocks
 * forever. The peer never allocates per FPDU: one struct holds it all. */
#ifndef HP_PEER_H
#define HP_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <iwarp/term.h>

#include "mpa/mpa_rx.h"
#include "rdmap/rdmap_term.h"

#define HP_FRAME_MAX (20 + 65535)

/* One FPDU our stack sent, as decoded by the peer. */
struct hp_fpdu {
	uint8_t hdr[IW_MPA_RX_MAX_HDR];
	uint16_t hdr_len;
	uint16_t ulpdu_len;
	uint16_t payload_len;
	bool tagged, last;
	uint8_t opcode; /* RDMAP opcode */
	uint32_t stag;  /* tagged */
	uint64_t to;
	uint32_t qn, msn, mo; /* untagged */
	uint8_t *payload;     /* points into the peer (valid until the next receive) */
};

struct hp_peer {
	int fd;
	bool crc;
	bool markers_tx; /* the peer inserts markers in what it sends */
	bool markers_rx; /* our stack inserts markers toward the peer */
	uint32_t tx_off; /* peer FPDU stream offset (marker positions) */
	uint32_t send_msn, rreq_msn; /* next MSN the peer uses on QN 0 / QN 1 */
	/* receive */
	struct iw_mpa_rx rx;
	bool rx_started;
	uint8_t in[65536];
	size_t in_len, in_off;
	uint8_t payload[65536];
	struct iovec sink;
	struct hp_fpdu cur;
	/* what the handshake saw */
	uint8_t frame[HP_FRAME_MAX];
	size_t frame_len;
	uint16_t peer_ird, peer_ord; /* from our Request / Reply words */
	unsigned fpdus_skipped;      /* non-Terminate FPDUs passed over by hp_expect_term */
	uint8_t scratch[2 * 65536 + 1024];
};

/* Handshake settings for the peer's frame. */
struct hp_mpa {
	uint8_t flags;   /* 0x80 M, 0x40 C, 0x20 R, 0x10 enhanced, others as given */
	uint8_t rev;     /* 2 unless set */
	uint16_t ird, ord; /* RFC 6581 words (enhanced) */
	const uint8_t *pdata;
	size_t pdata_len;
	const char *key; /* 16 bytes; NULL: the right key */
	int rcvbuf;      /* SO_RCVBUF for the peer's socket before connect (0: default) */
};

uint64_t hp_now_ms(void);

/* Allocate a peer (fd -1). Free with hp_peer_free (closes fd). */
struct hp_peer *hp_peer_new(void);
void hp_peer_free(struct hp_peer *p);

/* TCP toward addr (bounded connect). Returns 0 or -errno. */
int hp_connect(struct hp_peer *p, const struct sockaddr_storage *addr, int rcvbuf);
/* A listening socket on 127.0.0.1, port 0; *addr gets its address. */
int hp_listen(struct sockaddr_storage *addr);
/* Accept one connection on lfd within ms. */
int hp_accept(struct hp_peer *p, int lfd, int ms, int rcvbuf);

/* Write all bytes within ms. Returns 0, -ETIMEDOUT or -errno. */
int hp_send_raw(struct hp_peer *p, const void *buf, size_t len, int ms);
/* The same, chunk bytes per write with gap_us between writes. */
int hp_send_slow(struct hp_peer *p, const void *buf, size_t len, size_t chunk, unsigned gap_us, int ms);
/* Read exactly len bytes within ms: 0, -ETIMEDOUT, -ECONNRESET or 1 on EOF. */
int hp_recv_exact(struct hp_peer *p, void *buf, size_t len, int ms);

/* Initiator handshake, in two halves so that the application can accept
 * in between: send the Request; read the Reply (the negotiated CRC and
 * markers are taken from it). hp_read_reply returns 0, -EPROTO when the
 * Reply is a reject or malformed, or a receive error; EOF gives 1. */
int hp_send_request(struct hp_peer *p, const struct hp_mpa *m);
int hp_read_reply(struct hp_peer *p, bool req_markers, int ms);
/* Responder handshake: read our Request, answer with the frame m
 * describes (rev 2 enhanced with C as the Request asked unless m->flags
 * overrides: pass HP_FLAGS_ECHO to echo the Request's C). */
#define HP_FLAGS_ECHO 0x100
int hp_respond(struct hp_peer *p, const struct hp_mpa *m, unsigned flags, int ms);

/* Build one FPDU (header + payload) for the peer's stream at its current
 * offset into out; advances the offset. Returns the wire length or < 0. */
ssize_t hp_build(struct hp_peer *p, const void *hdr, size_t hdr_len, const void *payload, size_t plen,
		 uint8_t *out, size_t cap);
/* Build and send. */
int hp_send_fpdu(struct hp_peer *p, const void *hdr, size_t hdr_len, const void *payload, size_t plen);

/* Headers (control byte 1 = RDMAP version 1 | opcode unless stated). */
size_t hp_hdr_tagged(uint8_t *buf, uint8_t opcode, uint32_t stag, uint64_t to, bool last);
size_t hp_hdr_untagged(uint8_t *buf, uint8_t opcode, uint32_t qn, uint32_t msn, uint32_t mo, bool last,
		       uint32_t ulp_word);
/* A whole valid SEND / WRITE / Read Request from the peer (MSNs tracked). */
int hp_send_send(struct hp_peer *p, const void *data, size_t len);
int hp_send_write(struct hp_peer *p, uint32_t stag, uint64_t to, const void *data, size_t len);
int hp_send_read_req(struct hp_peer *p, uint32_t sink_stag, uint64_t sink_to, uint32_t size, uint32_t src_stag,
		     uint64_t src_to);
int hp_send_terminate(struct hp_peer *p, struct iw_term_cause cause);

/* Next FPDU from our stack within ms: 1 with *out, 0 on EOF, -ETIMEDOUT,
 * -ECONNRESET, or -EPROTO when our bytes do not deframe (out->... unset). */
int hp_recv_fpdu(struct hp_peer *p, int ms, struct hp_fpdu *out);
/* Read FPDUs until a Terminate (others are counted and skipped); decode it
 * (RFC or siw layout). 0, or what hp_recv_fpdu returned when it ended. */
int hp_expect_term(struct hp_peer *p, int ms, struct iw_rdmap_term *t);
/* Wait for our stack to close the connection (EOF or reset), discarding
 * bytes. 0 when closed within ms, -ETIMEDOUT otherwise. */
int hp_wait_closed(struct hp_peer *p, int ms);
/* Nothing arrives and the connection stays open for ms. */
bool hp_quiet(struct hp_peer *p, int ms);

#endif
