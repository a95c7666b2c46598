#include "ipv4.h"

#include <errno.h>

#include "cksum.h"
#include "common/iw_bytes.h"

int iwn_ip4_parse(const uint8_t *p, size_t len, struct iwn_ip4 *h)
{
	if (len < IWN_IP4_HLEN || p[IWN_IP4_OFF_VIHL] >> 4 != 4)
		return IWN_IP4_EBAD;
	h->hlen = (uint8_t)((p[IWN_IP4_OFF_VIHL] & 0x0F) * 4);
	h->totlen = iw_get_be16(p + IWN_IP4_OFF_TOTLEN);
	if (h->hlen < IWN_IP4_HLEN || h->hlen > len || h->totlen < h->hlen || h->totlen > len)
		return IWN_IP4_EBAD;
	if (iwn_cksum_fold(iwn_cksum_add(0, p, h->hlen)) != 0)
		return IWN_IP4_ECSUM;
	h->id = iw_get_be16(p + IWN_IP4_OFF_ID);
	h->frag = iw_get_be16(p + IWN_IP4_OFF_FRAG);
	h->ttl = p[IWN_IP4_OFF_TTL];
	h->proto = p[IWN_IP4_OFF_PROTO];
	h->src = iw_get_be32(p + IWN_IP4_OFF_SRC);
	h->dst = iw_get_be32(p + IWN_IP4_OFF_DST);
	if (h->frag & (IWN_IP4_MF | IWN_IP4_OFFMASK))
		return IWN_IP4_EFRAG;
	return 0;
}

void iwn_ip4_build(uint8_t *p, uint32_t src, uint32_t dst, uint8_t proto, uint16_t id, uint8_t ttl,
		   uint16_t payload_len)
{
	p[IWN_IP4_OFF_VIHL] = 0x45;
	p[IWN_IP4_OFF_TOS] = 0;
	iw_put_be16(p + IWN_IP4_OFF_TOTLEN, (uint16_t)(IWN_IP4_HLEN + payload_len));
	iw_put_be16(p + IWN_IP4_OFF_ID, id);
	iw_put_be16(p + IWN_IP4_OFF_FRAG, IWN_IP4_DF);
	p[IWN_IP4_OFF_TTL] = ttl;
	p[IWN_IP4_OFF_PROTO] = proto;
	iw_put_be16(p + IWN_IP4_OFF_CSUM, 0);
	iw_put_be32(p + IWN_IP4_OFF_SRC, src);
	iw_put_be32(p + IWN_IP4_OFF_DST, dst);
	iw_put_be16(p + IWN_IP4_OFF_CSUM, iwn_cksum_fold(iwn_cksum_add(0, p, IWN_IP4_HLEN)));
}

int iwn_icmp_echo_reply(uint8_t *p, size_t len)
{
	if (len < IWN_ICMP_HLEN || p[IWN_ICMP_OFF_TYPE] != IWN_ICMP_ECHO_REQUEST || p[IWN_ICMP_OFF_CODE] != 0)
		return -EINVAL;
	if (iwn_cksum_fold(iwn_cksum_add(0, p, len)) != 0)
		return -EINVAL;
	p[IWN_ICMP_OFF_TYPE] = IWN_ICMP_ECHO_REPLY;
	iw_put_be16(p + IWN_ICMP_OFF_CSUM, 0);
	iw_put_be16(p + IWN_ICMP_OFF_CSUM, iwn_cksum_fold(iwn_cksum_add(0, p, len)));
	return 0;
}
