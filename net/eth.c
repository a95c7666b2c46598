#include "eth.h"

#include <errno.h>
#include <string.h>

#include "common/iw_bytes.h"

const uint8_t iwn_eth_broadcast[IWN_ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

int iwn_eth_parse(const uint8_t *frame, size_t len, struct iwn_eth *h)
{
	if (len < IWN_ETH_HLEN)
		return -EINVAL;
	memcpy(h->dst, frame + IWN_ETH_OFF_DST, IWN_ETH_ALEN);
	memcpy(h->src, frame + IWN_ETH_OFF_SRC, IWN_ETH_ALEN);
	h->type = iw_get_be16(frame + IWN_ETH_OFF_TYPE);
	return 0;
}

void iwn_eth_build(uint8_t *p, const uint8_t dst[IWN_ETH_ALEN], const uint8_t src[IWN_ETH_ALEN],
		   uint16_t type)
{
	memcpy(p + IWN_ETH_OFF_DST, dst, IWN_ETH_ALEN);
	memcpy(p + IWN_ETH_OFF_SRC, src, IWN_ETH_ALEN);
	iw_put_be16(p + IWN_ETH_OFF_TYPE, type);
}

bool iwn_eth_is_broadcast(const uint8_t a[IWN_ETH_ALEN])
{
	return memcmp(a, iwn_eth_broadcast, IWN_ETH_ALEN) == 0;
}
