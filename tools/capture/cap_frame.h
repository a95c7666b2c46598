/* A captured link-layer frame down to its TCP segment: the one parser that
 * iwdump, pcapcheck's rewriter and the fuzz seed extractor share. Offsets
 * (not pointers) so that a caller can rewrite the frame in place. */
#ifndef IW_CAP_FRAME_H
#define IW_CAP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum iwc_kind {
	IWC_TCP = 0, /* *out filled */
	IWC_OTHER,   /* not TCP over IP, or an IP fragment: not ours */
	IWC_BAD,     /* malformed or truncated headers */
};

struct iwc_frame {
	int family; /* 4 or 6 */
	uint8_t src[16], dst[16]; /* IPv4: the first 4 bytes, the rest 0 */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	size_t ip_off, tcp_off, pay_off; /* from the start of the frame */
	size_t pay_len; /* TCP payload bytes captured */
	size_t missing; /* payload bytes the snapshot length cut off */
};

/* Link types: pcap's DLT values as libpcap reports them and the LINKTYPE
 * values a capture file stores (they differ only for raw IP). Ethernet
 * with up to two VLAN tags, Linux cooked v1/v2, raw IP, BSD loopback. */
bool iwc_link_supported(int linktype);

/* Lengths come from the IP header, so Ethernet padding is never payload;
 * an IP total length of 0 (a TSO capture) means "what was captured".
 * IPv6 extension headers are walked; fragments are IWC_OTHER. */
enum iwc_kind iwc_parse(int linktype, const uint8_t *frame, size_t caplen, struct iwc_frame *out);

#endif
