#include "tcp_seg.h"

#include <errno.h>
#include <string.h>

#include "cksum.h"
#include "common/iw_bytes.h"
#include "ipv4.h"

static uint32_t pseudo_sum(uint32_t src, uint32_t dst, size_t len)
{
	uint8_t ph[12];
	iw_put_be32(ph, src);
	iw_put_be32(ph + 4, dst);
	ph[8] = 0;
	ph[9] = IWN_IPPROTO_TCP;
	iw_put_be16(ph + 10, (uint16_t)len);
	return iwn_cksum_add(0, ph, sizeof(ph));
}

static void parse_opts(const uint8_t *p, size_t len, struct iwn_tcp_opts *o)
{
	size_t i = 0;
	while (i < len) {
		uint8_t kind = p[i];
		if (kind == IWN_TCPOPT_EOL)
			return;
		if (kind == IWN_TCPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return;
		uint8_t olen = p[i + 1];
		if (olen < 2 || i + olen > len)
			return;
		const uint8_t *v = p + i + 2;
		switch (kind) {
		case IWN_TCPOPT_MSS:
			if (olen == 4) {
				o->has_mss = true;
				o->mss = iw_get_be16(v);
			}
			break;
		case IWN_TCPOPT_WS:
			if (olen == 3) {
				o->has_ws = true;
				/* RFC 7323 sec. 2.3: larger shifts are treated as 14. */
				o->ws = v[0] > IWN_TCP_WS_MAX ? IWN_TCP_WS_MAX : v[0];
			}
			break;
		case IWN_TCPOPT_SACK_OK:
			if (olen == 2)
				o->sack_ok = true;
			break;
		case IWN_TCPOPT_SACK:
			if (olen >= 10 && (olen - 2) % 8 == 0) {
				uint8_t n = (uint8_t)((olen - 2) / 8);
				if (n > IWN_TCP_MAX_SACK)
					n = IWN_TCP_MAX_SACK;
				for (uint8_t k = 0; k < n; k++) {
					o->sack[k][0] = iw_get_be32(v + 8 * k);
					o->sack[k][1] = iw_get_be32(v + 8 * k + 4);
				}
				o->n_sack = n;
			}
			break;
		case IWN_TCPOPT_TS:
			if (olen == 10) {
				o->has_ts = true;
				o->tsval = iw_get_be32(v);
				o->tsecr = iw_get_be32(v + 4);
			}
			break;
		default:
			break;
		}
		i += olen;
	}
}

static int parse(const uint8_t *seg, size_t len, uint32_t src, uint32_t dst, struct iwn_tcp_hdr *h, bool check)
{
	memset(h, 0, sizeof(*h));
	if (len < IWN_TCP_HLEN || len > 0xFFFF)
		return -EINVAL;
	h->hlen = (uint8_t)((seg[IWN_TCP_OFF_DOFF] >> 4) * 4);
	if (h->hlen < IWN_TCP_HLEN || h->hlen > len)
		return -EINVAL;
	if (check && iwn_cksum_fold(iwn_cksum_add(pseudo_sum(src, dst, len), seg, len)) != 0)
		return -EBADMSG;
	h->sport = iw_get_be16(seg + IWN_TCP_OFF_SPORT);
	h->dport = iw_get_be16(seg + IWN_TCP_OFF_DPORT);
	h->seq = iw_get_be32(seg + IWN_TCP_OFF_SEQ);
	h->ack = iw_get_be32(seg + IWN_TCP_OFF_ACK);
	h->flags = seg[IWN_TCP_OFF_FLAGS];
	h->win = iw_get_be16(seg + IWN_TCP_OFF_WIN);
	parse_opts(seg + IWN_TCP_HLEN, h->hlen - IWN_TCP_HLEN, &h->opt);
	h->payload = seg + h->hlen;
	h->plen = (uint32_t)(len - h->hlen);
	return 0;
}

int iwn_tcp_parse(const uint8_t *seg, size_t len, uint32_t src, uint32_t dst, struct iwn_tcp_hdr *h)
{
	return parse(seg, len, src, dst, h, true);
}

int iwn_tcp_parse_verified(const uint8_t *seg, size_t len, struct iwn_tcp_hdr *h)
{
	return parse(seg, len, 0, 0, h, false);
}

size_t iwn_tcp_opts_len(const struct iwn_tcp_opts *o)
{
	return (o->has_mss ? 4u : 0u) + (o->has_ws ? 4u : 0u) + (o->sack_ok ? 4u : 0u) + (o->has_ts ? 12u : 0u) +
	       (o->n_sack ? 4u + 8u * o->n_sack : 0u);
}

size_t iwn_tcp_build(uint8_t *p, const struct iwn_tcp_hdr *h)
{
	const struct iwn_tcp_opts *o = &h->opt;
	uint8_t *q = p + IWN_TCP_HLEN;
	if (o->has_mss) {
		q[0] = IWN_TCPOPT_MSS;
		q[1] = 4;
		iw_put_be16(q + 2, o->mss);
		q += 4;
	}
	if (o->has_ws) {
		q[0] = IWN_TCPOPT_NOP;
		q[1] = IWN_TCPOPT_WS;
		q[2] = 3;
		q[3] = o->ws;
		q += 4;
	}
	if (o->sack_ok) {
		q[0] = IWN_TCPOPT_NOP;
		q[1] = IWN_TCPOPT_NOP;
		q[2] = IWN_TCPOPT_SACK_OK;
		q[3] = 2;
		q += 4;
	}
	if (o->has_ts) {
		q[0] = IWN_TCPOPT_NOP;
		q[1] = IWN_TCPOPT_NOP;
		q[2] = IWN_TCPOPT_TS;
		q[3] = 10;
		iw_put_be32(q + 4, o->tsval);
		iw_put_be32(q + 8, o->tsecr);
		q += 12;
	}
	if (o->n_sack) {
		uint8_t n = o->n_sack > IWN_TCP_MAX_SACK ? IWN_TCP_MAX_SACK : o->n_sack;
		q[0] = IWN_TCPOPT_NOP;
		q[1] = IWN_TCPOPT_NOP;
		q[2] = IWN_TCPOPT_SACK;
		q[3] = (uint8_t)(2 + 8 * n);
		for (uint8_t k = 0; k < n; k++) {
			iw_put_be32(q + 4 + 8 * k, o->sack[k][0]);
			iw_put_be32(q + 8 + 8 * k, o->sack[k][1]);
		}
		q += 4 + 8 * n;
	}
	size_t hlen = (size_t)(q - p);
	iw_put_be16(p + IWN_TCP_OFF_SPORT, h->sport);
	iw_put_be16(p + IWN_TCP_OFF_DPORT, h->dport);
	iw_put_be32(p + IWN_TCP_OFF_SEQ, h->seq);
	iw_put_be32(p + IWN_TCP_OFF_ACK, h->ack);
	p[IWN_TCP_OFF_DOFF] = (uint8_t)(hlen / 4 << 4);
	p[IWN_TCP_OFF_FLAGS] = h->flags;
	iw_put_be16(p + IWN_TCP_OFF_WIN, h->win);
	iw_put_be16(p + IWN_TCP_OFF_CSUM, 0);
	iw_put_be16(p + IWN_TCP_OFF_URP, 0);
	return hlen;
}

void iwn_tcp_set_csum_partial(uint8_t *seg, size_t len, uint32_t src, uint32_t dst)
{
	iw_put_be16(seg + IWN_TCP_OFF_CSUM, (uint16_t)~iwn_cksum_fold(pseudo_sum(src, dst, len)));
}

void iwn_tcp_set_csum(uint8_t *seg, size_t len, uint32_t src, uint32_t dst)
{
	iw_put_be16(seg + IWN_TCP_OFF_CSUM, 0);
	iw_put_be16(seg + IWN_TCP_OFF_CSUM, iwn_cksum_fold(iwn_cksum_add(pseudo_sum(src, dst, len), seg, len)));
}
