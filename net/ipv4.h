/* IPv4 header codec (RFC 791) without fragmentation, and ICMP echo
 * (RFC 792): parse + validate, build, answer an echo request. */
#ifndef IWN_IPV4_H
#define IWN_IPV4_H

#include <stddef.h>
#include <stdint.h>

#define IWN_IP4_OFF_VIHL 0
#define IWN_IP4_OFF_TOS 1
#define IWN_IP4_OFF_TOTLEN 2
#define IWN_IP4_OFF_ID 4
#define IWN_IP4_OFF_FRAG 6
#define IWN_IP4_OFF_TTL 8
#define IWN_IP4_OFF_PROTO 9
#define IWN_IP4_OFF_CSUM 10
#define IWN_IP4_OFF_SRC 12
#define IWN_IP4_OFF_DST 16
#define IWN_IP4_HLEN 20
_Static_assert(IWN_IP4_OFF_DST + 4 == IWN_IP4_HLEN, "IPv4 header without options is 20 bytes");

#define IWN_IP4_DF 0x4000u
#define IWN_IP4_MF 0x2000u
#define IWN_IP4_OFFMASK 0x1FFFu

#define IWN_IPPROTO_ICMP 1
#define IWN_IPPROTO_TCP 6

#define IWN_ICMP_OFF_TYPE 0
#define IWN_ICMP_OFF_CODE 1
#define IWN_ICMP_OFF_CSUM 2
#define IWN_ICMP_OFF_ID 4
#define IWN_ICMP_OFF_SEQ 6
#define IWN_ICMP_HLEN 8
_Static_assert(IWN_ICMP_OFF_SEQ + 2 == IWN_ICMP_HLEN, "ICMP echo header is 8 bytes");
#define IWN_ICMP_ECHO_REPLY 0
#define IWN_ICMP_ECHO_REQUEST 8

struct iwn_ip4 {
	uint8_t hlen;  /* header bytes, options included */
	uint8_t proto;
	uint8_t ttl;
	uint16_t totlen;
	uint16_t id;
	uint16_t frag;  /* flags + offset field */
	uint32_t src, dst; /* host order */
};

/* Results of iwn_ip4_parse besides 0. */
#define IWN_IP4_EBAD (-1)   /* malformed: version, lengths */
#define IWN_IP4_ECSUM (-2)  /* header checksum wrong */
#define IWN_IP4_EFRAG (-3)  /* a fragment: not supported, dropped */

/* Validates the header of the IPv4 packet at p (len bytes available, the
 * packet may be followed by link padding). On 0 the payload is
 * p[h->hlen .. h->totlen). */
int iwn_ip4_parse(const uint8_t *p, size_t len, struct iwn_ip4 *h);
/* Writes a 20-byte header (DF set, no options) with its checksum for a
 * payload of payload_len bytes. */
void iwn_ip4_build(uint8_t *p, uint32_t src, uint32_t dst, uint8_t proto, uint16_t id, uint8_t ttl,
		   uint16_t payload_len);

/* Turns the ICMP message at p (len bytes, in place) into an echo reply
 * when it is a valid echo request. 0: done, reply is len bytes at p;
 * -EINVAL: not a valid echo request (ignore it). */
int iwn_icmp_echo_reply(uint8_t *p, size_t len);

#endif
