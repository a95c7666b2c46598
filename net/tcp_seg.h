/* TCP segment codec (RFC 9293 sec. 3.1): header, the options we use (MSS,
 * window scale and timestamps from RFC 7323, SACK-permitted) and the
 * checksum over the IPv4 pseudo-header. */
#ifndef IWN_TCP_SEG_H
#define IWN_TCP_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IWN_TCP_OFF_SPORT 0
#define IWN_TCP_OFF_DPORT 2
#define IWN_TCP_OFF_SEQ 4
#define IWN_TCP_OFF_ACK 8
#define IWN_TCP_OFF_DOFF 12
#define IWN_TCP_OFF_FLAGS 13
#define IWN_TCP_OFF_WIN 14
#define IWN_TCP_OFF_CSUM 16
#define IWN_TCP_OFF_URP 18
#define IWN_TCP_HLEN 20
_Static_assert(IWN_TCP_OFF_URP + 2 == IWN_TCP_HLEN, "TCP header without options is 20 bytes");
#define IWN_TCP_MAX_HLEN 60

#define IWN_TCP_FIN 0x01
#define IWN_TCP_SYN 0x02
#define IWN_TCP_RST 0x04
#define IWN_TCP_PSH 0x08
#define IWN_TCP_ACK 0x10
#define IWN_TCP_URG 0x20

#define IWN_TCPOPT_EOL 0
#define IWN_TCPOPT_NOP 1
#define IWN_TCPOPT_MSS 2
#define IWN_TCPOPT_WS 3
#define IWN_TCPOPT_SACK_OK 4
#define IWN_TCPOPT_SACK 5
#define IWN_TCPOPT_TS 8
#define IWN_TCP_MAX_SACK 4 /* blocks that fit 40 option bytes */
#define IWN_TCP_WS_MAX 14 /* RFC 7323 sec. 2.3 */

struct iwn_tcp_opts {
	bool has_mss, has_ws, sack_ok, has_ts;
	uint16_t mss;
	uint8_t ws;
	uint32_t tsval, tsecr;
	uint8_t n_sack; /* SACK blocks (RFC 2018), [start, end) sequence numbers */
	uint32_t sack[IWN_TCP_MAX_SACK][2];
};

struct iwn_tcp_hdr {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint8_t hlen; /* bytes, options included */
	uint16_t win; /* raw field, unscaled */
	struct iwn_tcp_opts opt;
	const uint8_t *payload; /* parse only */
	uint32_t plen;
};

/* Parses and checks the segment seg[0..len) carried between src and dst
 * (host order). 0; -EINVAL malformed (data offset); -EBADMSG checksum.
 * Malformed options are ignored from the bad one on. */
int iwn_tcp_parse(const uint8_t *seg, size_t len, uint32_t src, uint32_t dst, struct iwn_tcp_hdr *h);
/* Bytes the options in o take when built (a multiple of 4; the caller
 * keeps the total <= 40: at most 3 SACK blocks next to timestamps). */
size_t iwn_tcp_opts_len(const struct iwn_tcp_opts *o);
/* Writes the header and options (h->hlen is ignored and the written length
 * returned); the checksum field is left 0. */
size_t iwn_tcp_build(uint8_t *p, const struct iwn_tcp_hdr *h);
/* The same for a segment whose checksum a trusted source already
 * verified (the receiving kernel, or a local sender that left it to
 * offload): no checksum pass. */
int iwn_tcp_parse_verified(const uint8_t *seg, size_t len, struct iwn_tcp_hdr *h);
/* Checksum offload (Linux CHECKSUM_PARTIAL, virtio NEEDS_CSUM): only the
 * pseudo-header sum, folded and not complemented, for the kernel or NIC
 * to add the segment's own sum to. len: the whole TCP length (for a
 * super-segment the kernel adjusts it per wire segment). */
void iwn_tcp_set_csum_partial(uint8_t *seg, size_t len, uint32_t src, uint32_t dst);
/* Fills the checksum of the complete segment seg[0..len). */
void iwn_tcp_set_csum(uint8_t *seg, size_t len, uint32_t src, uint32_t dst);

#endif
