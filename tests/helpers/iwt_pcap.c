/* pcap writer for synthetic and recorded TCP connections (see iwt_pcap.h). */
#include "iwt_pcap.h"

#include "common/iw_bytes.h"
#include "net/cksum.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define ETH_HLEN 14
#define IP4_HLEN 20
#define IP6_HLEN 40
#define TCP_HLEN 20
#define TCP_OPT_MSS_LEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define IPPROTO_TCP_NUM 6
#define PCAP_SNAPLEN 262144
/* 2023-11-14 22:13:20 UTC: fixed so identical runs give identical files. */
#define IWT_PCAP_EPOCH_US 1700000000000000ull

int iwt_pcap_open(struct iwt_pcap *p, const char *path)
{
	memset(p, 0, offsetof(struct iwt_pcap, frame));
	p->pd = pcap_open_dead(DLT_EN10MB, PCAP_SNAPLEN);
	if (!p->pd)
		return -ENOMEM;
	p->dump = pcap_dump_open(p->pd, path);
	if (!p->dump) {
		fprintf(stderr, "iwt_pcap_open %s: %s\n", path, pcap_geterr(p->pd));
		pcap_close(p->pd);
		p->pd = NULL;
		return -EIO;
	}
	p->ts_us = IWT_PCAP_EPOCH_US;
	p->ts_step_us = 10;
	return 0;
}

int iwt_pcap_close(struct iwt_pcap *p)
{
	int rc = 0;

	if (p->dump) {
		if (pcap_dump_flush(p->dump) != 0)
			rc = -EIO;
		pcap_dump_close(p->dump);
		p->dump = NULL;
	}
	if (p->pd) {
		pcap_close(p->pd);
		p->pd = NULL;
	}
	return rc;
}

void iwt_pcap_set_time(struct iwt_pcap *p, uint64_t us)
{
	p->ts_us = us;
}

int iwt_pcap_write_frame(struct iwt_pcap *p, const uint8_t *frame, size_t len)
{
	struct pcap_pkthdr h;

	if (!p->dump || len > PCAP_SNAPLEN)
		return -EINVAL;
	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = (time_t)(p->ts_us / 1000000u);
	h.ts.tv_usec = (suseconds_t)(p->ts_us % 1000000u);
	h.caplen = (bpf_u_int32)len;
	h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)p->dump, &h, frame);
	p->ts_us += p->ts_step_us;
	p->packets++;
	return 0;
}

static int parse_mac(uint8_t mac[6], const char *s)
{
	unsigned v[6];
	char tail;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		if (v[i] > 0xFF)
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

int iwt_endpoint_set(struct iwt_endpoint *ep, const char *mac, const char *addr, uint16_t port)
{
	memset(ep, 0, sizeof(*ep));
	if (parse_mac(ep->mac, mac) != 0)
		return -EINVAL;
	if (inet_pton(AF_INET, addr, ep->addr) == 1)
		ep->family = AF_INET;
	else if (inet_pton(AF_INET6, addr, ep->addr) == 1)
		ep->family = AF_INET6;
	else
		return -EINVAL;
	ep->port = port;
	return 0;
}

void iwt_tcp_init(struct iwt_tcp *c, struct iwt_pcap *p, const struct iwt_endpoint *a,
		  const struct iwt_endpoint *b, uint32_t isn_a, uint32_t isn_b)
{
	memset(c, 0, sizeof(*c));
	c->pcap = p;
	c->ep[IWT_TCP_A] = *a;
	c->ep[IWT_TCP_B] = *b;
	c->isn[IWT_TCP_A] = isn_a;
	c->isn[IWT_TCP_B] = isn_b;
	c->snd_nxt[IWT_TCP_A] = isn_a;
	c->snd_nxt[IWT_TCP_B] = isn_b;
	c->ip_id[IWT_TCP_A] = 0x1000;
	c->ip_id[IWT_TCP_B] = 0x2000;
	c->window = 65535;
	c->mss_opt = 1460;
}

/* Pseudo-header sum for the TCP checksum (RFC 793 / RFC 8200 sec. 8.1). */
static uint32_t pseudo_sum(const struct iwt_endpoint *s, const struct iwt_endpoint *d,
			   size_t tcp_len)
{
	uint8_t w[8];
	uint32_t sum = 0;
	size_t alen = s->family == AF_INET ? 4 : 16;

	sum = iwn_cksum_add(sum, s->addr, alen);
	sum = iwn_cksum_add(sum, d->addr, alen);
	iw_put_be32(w, (uint32_t)tcp_len);
	iw_put_be32(w + 4, IPPROTO_TCP_NUM);
	return iwn_cksum_add(sum, w, sizeof(w));
}

int iwt_tcp_segment(struct iwt_tcp *c, int dir, uint8_t flags, const void *data, size_t len)
{
	const struct iwt_endpoint *s, *d;
	uint8_t *f, *ip, *tcp;
	size_t ip_hlen, tcp_hlen, max_payload;
	uint32_t seq, ack = 0;
	uint16_t tcp_sum;

	if (!c || !c->pcap || (dir != IWT_TCP_A && dir != IWT_TCP_B) || (len && !data))
		return -EINVAL;
	s = &c->ep[dir];
	d = &c->ep[!dir];
	if (s->family != d->family || (s->family != AF_INET && s->family != AF_INET6))
		return -EINVAL;
	if (c->fin[dir] && (len || (flags & (IWT_TCP_FIN | IWT_TCP_SYN))))
		return -EINVAL; /* nothing may follow our own FIN */
	if (c->established)
		flags |= IWT_TCP_ACK;
	ip_hlen = s->family == AF_INET ? IP4_HLEN : IP6_HLEN;
	tcp_hlen = TCP_HLEN + ((flags & IWT_TCP_SYN) && c->mss_opt ? TCP_OPT_MSS_LEN : 0);
	max_payload = 65535 - tcp_hlen - (s->family == AF_INET ? ip_hlen : 0);
	if (len > max_payload)
		return -EMSGSIZE;

	f = c->pcap->frame;
	memcpy(f, d->mac, 6);
	memcpy(f + 6, s->mac, 6);
	iw_put_be16(f + 12, s->family == AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6);

	ip = f + ETH_HLEN;
	if (s->family == AF_INET) {
		ip[0] = 0x45;
		ip[1] = 0;
		iw_put_be16(ip + 2, (uint16_t)(ip_hlen + tcp_hlen + len));
		iw_put_be16(ip + 4, c->ip_id[dir]++);
		iw_put_be16(ip + 6, 0x4000); /* DF, no fragments */
		ip[8] = 64;
		ip[9] = IPPROTO_TCP_NUM;
		iw_put_be16(ip + 10, 0);
		memcpy(ip + 12, s->addr, 4);
		memcpy(ip + 16, d->addr, 4);
		iw_put_be16(ip + 10, iwn_cksum_fold(iwn_cksum_add(0, ip, IP4_HLEN)));
	} else {
		iw_put_be32(ip, 0x60000000u);
		iw_put_be16(ip + 4, (uint16_t)(tcp_hlen + len));
		ip[6] = IPPROTO_TCP_NUM;
		ip[7] = 64;
		memcpy(ip + 8, s->addr, 16);
		memcpy(ip + 24, d->addr, 16);
	}

	seq = c->snd_nxt[dir];
	if (flags & IWT_TCP_ACK)
		ack = c->snd_nxt[!dir];
	tcp = ip + ip_hlen;
	iw_put_be16(tcp, s->port);
	iw_put_be16(tcp + 2, d->port);
	iw_put_be32(tcp + 4, seq);
	iw_put_be32(tcp + 8, ack);
	tcp[12] = (uint8_t)((tcp_hlen / 4) << 4);
	tcp[13] = flags;
	iw_put_be16(tcp + 14, c->window);
	iw_put_be16(tcp + 16, 0);
	iw_put_be16(tcp + 18, 0);
	if (tcp_hlen > TCP_HLEN) {
		tcp[20] = 2; /* MSS option */
		tcp[21] = TCP_OPT_MSS_LEN;
		iw_put_be16(tcp + 22, c->mss_opt);
	}
	if (len)
		memcpy(tcp + tcp_hlen, data, len);
	tcp_sum = iwn_cksum_fold(iwn_cksum_add(pseudo_sum(s, d, tcp_hlen + len), tcp, tcp_hlen + len));
	iw_put_be16(tcp + 16, tcp_sum);

	c->snd_nxt[dir] = seq + (uint32_t)len + ((flags & IWT_TCP_SYN) ? 1u : 0u) +
			  ((flags & IWT_TCP_FIN) ? 1u : 0u);
	c->sent[dir] += len;
	if (flags & IWT_TCP_FIN)
		c->fin[dir] = true;
	return iwt_pcap_write_frame(c->pcap, f, ETH_HLEN + ip_hlen + tcp_hlen + len);
}

int iwt_tcp_handshake(struct iwt_tcp *c)
{
	int rc;

	if (c->established)
		return -EINVAL;
	rc = iwt_tcp_segment(c, IWT_TCP_A, IWT_TCP_SYN, NULL, 0);
	if (!rc)
		rc = iwt_tcp_segment(c, IWT_TCP_B, IWT_TCP_SYN | IWT_TCP_ACK, NULL, 0);
	if (!rc)
		rc = iwt_tcp_segment(c, IWT_TCP_A, IWT_TCP_ACK, NULL, 0);
	if (!rc)
		c->established = true;
	return rc;
}

int iwt_tcp_send_sizes(struct iwt_tcp *c, int dir, const void *data, size_t len,
		       const size_t *sizes, size_t nsizes)
{
	const uint8_t *p = data;
	size_t i = 0, off = 0, n;
	int rc;

	if (!c || !c->established || !sizes || !nsizes)
		return -EINVAL;
	for (i = 0; i < nsizes; i++)
		if (!sizes[i])
			return -EINVAL;
	i = 0;
	while (off < len) {
		n = sizes[i < nsizes ? i : nsizes - 1];
		if (n > len - off)
			n = len - off;
		rc = iwt_tcp_segment(c, dir, off + n == len ? IWT_TCP_PSH : 0, p + off, n);
		if (rc)
			return rc;
		off += n;
		i++;
	}
	return 0;
}

int iwt_tcp_send(struct iwt_tcp *c, int dir, const void *data, size_t len, size_t mss)
{
	return iwt_tcp_send_sizes(c, dir, data, len, &mss, 1);
}

int iwt_tcp_ack(struct iwt_tcp *c, int dir)
{
	if (!c || !c->established)
		return -EINVAL;
	return iwt_tcp_segment(c, dir, IWT_TCP_ACK, NULL, 0);
}

int iwt_tcp_close(struct iwt_tcp *c, int dir)
{
	int rc;

	if (!c || !c->established || (dir != IWT_TCP_A && dir != IWT_TCP_B) || c->fin[dir])
		return -EINVAL;
	rc = iwt_tcp_segment(c, dir, IWT_TCP_FIN, NULL, 0);
	if (rc)
		return rc;
	if (c->fin[!dir]) /* the peer closed first: it only acknowledges */
		return iwt_tcp_segment(c, !dir, IWT_TCP_ACK, NULL, 0);
	rc = iwt_tcp_segment(c, !dir, IWT_TCP_FIN, NULL, 0);
	if (!rc)
		rc = iwt_tcp_segment(c, dir, IWT_TCP_ACK, NULL, 0);
	return rc;
}

int iwt_tcp_reset(struct iwt_tcp *c, int dir)
{
	if (!c || (dir != IWT_TCP_A && dir != IWT_TCP_B))
		return -EINVAL;
	return iwt_tcp_segment(c, dir, IWT_TCP_RST, NULL, 0);
}
