/* Ethernet II framing: 6-byte destination, 6-byte source, ethertype. */
#ifndef IWN_ETH_H
#define IWN_ETH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IWN_ETH_ALEN 6
#define IWN_ETH_OFF_DST 0
#define IWN_ETH_OFF_SRC 6
#define IWN_ETH_OFF_TYPE 12
#define IWN_ETH_HLEN 14
_Static_assert(IWN_ETH_OFF_TYPE + 2 == IWN_ETH_HLEN, "Ethernet II header is 14 bytes");

#define IWN_ETHERTYPE_IPV4 0x0800
#define IWN_ETHERTYPE_ARP 0x0806

struct iwn_eth {
	uint8_t dst[IWN_ETH_ALEN];
	uint8_t src[IWN_ETH_ALEN];
	uint16_t type;
};

extern const uint8_t iwn_eth_broadcast[IWN_ETH_ALEN];

/* 0, or -EINVAL when the frame is shorter than the header. */
int iwn_eth_parse(const uint8_t *frame, size_t len, struct iwn_eth *h);
/* Writes IWN_ETH_HLEN bytes at p. */
void iwn_eth_build(uint8_t *p, const uint8_t dst[IWN_ETH_ALEN], const uint8_t src[IWN_ETH_ALEN],
		   uint16_t type);
bool iwn_eth_is_broadcast(const uint8_t a[IWN_ETH_ALEN]);

#endif
