#include "netsim.h"

#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"
#include "common/iw_bytes.h"
#include "net/cksum.h"
#include "net/gso.h"
#include "net/ipv4.h"
#include "net/tcp_seg.h"

uint64_t netsim_rand(struct netsim *s)
{
	return iwt_rand(&s->rng);
}

static bool chance(struct netsim *s, uint32_t ppm)
{
	return ppm && netsim_rand(s) % 1000000u < ppm;
}

static void enqueue(struct netsim *s, int to, const uint8_t *frame, uint32_t len, uint64_t extra)
{
	if (s->nq == NETSIM_MAX_FRAMES || len > NETSIM_FRAME_MAX) {
		s->overflow++;
		return;
	}
	struct netsim_frame *f = &s->q[s->nq];
	f->data = malloc(len ? len : 1);
	if (!f->data) {
		s->overflow++;
		return;
	}
	memcpy(f->data, frame, len);
	f->len = len;
	f->to = to;
	f->at = s->now + s->link.delay_us + extra;
	f->order = s->order++;
	s->nq++;
}

static void sim_tx(void *arg, const uint8_t *sent, uint32_t len)
{
	struct netsim_port *p = arg;
	struct netsim *s = p->sim;
	static uint8_t frame[NETSIM_FRAME_MAX];
	s->sent++;
	if (len > sizeof(frame)) {
		s->overflow++;
		return;
	}
	memcpy(frame, sent, len);
	if (s->filter && !s->filter(s->filter_arg, p->idx, frame, len)) {
		s->lost++;
		return;
	}
	if (chance(s, s->link.loss_ppm)) {
		s->lost++;
		return;
	}
	int copies = chance(s, s->link.dup_ppm) ? 2 : 1;
	s->dupd += (uint64_t)(copies - 1);
	for (int k = 0; k < copies; k++) {
		uint64_t extra = 0;
		if (chance(s, s->link.reorder_ppm) && s->link.jitter_us) {
			extra = 1 + netsim_rand(s) % s->link.jitter_us;
			s->reordered++;
		}
		enqueue(s, 1 - p->idx, frame, len, extra);
	}
}

/* The kernel's side of the offload: cut a super-segment into wire
 * segments of gso_size payload bytes and complete every checksum. */
static void sim_tx_off(void *arg, const uint8_t *frame, uint32_t len, uint32_t gso_size)
{
	struct netsim_port *p = arg;
	struct netsim *s = p->sim;
	static uint8_t piece[IWN_ETH_HLEN + 65535];
	const uint32_t e = IWN_ETH_HLEN;
	uint32_t ihl = (uint32_t)(frame[e] & 15) * 4, tot = iw_get_be16(frame + e + IWN_IP4_OFF_TOTLEN);
	uint32_t thl = (uint32_t)(frame[e + ihl + IWN_TCP_OFF_DOFF] >> 4) * 4;
	if (len > sizeof(piece) || tot + e > len || tot < ihl + thl) {
		s->overflow++;
		return;
	}
	uint32_t hl = e + ihl + thl, plen = tot - ihl - thl;
	uint32_t src = iw_get_be32(frame + e + IWN_IP4_OFF_SRC), dst = iw_get_be32(frame + e + IWN_IP4_OFF_DST);
	if (!gso_size || plen <= gso_size) {
		memcpy(piece, frame, e + tot);
		iwn_tcp_set_csum(piece + e + ihl, tot - ihl, src, dst);
		sim_tx(arg, piece, e + tot);
		return;
	}
	s->gso_frames++;
	uint32_t seq = iw_get_be32(frame + e + ihl + IWN_TCP_OFF_SEQ);
	uint16_t id = iw_get_be16(frame + e + IWN_IP4_OFF_ID);
	uint8_t fl = frame[e + ihl + IWN_TCP_OFF_FLAGS];
	for (uint32_t at = 0, k = 0; at < plen; at += gso_size, k++) {
		uint32_t n = plen - at < gso_size ? plen - at : gso_size;
		bool last = at + n == plen;
		memcpy(piece, frame, hl);
		memcpy(piece + hl, frame + hl + at, n);
		uint8_t *ip = piece + e, *t = piece + e + ihl;
		iw_put_be16(ip + IWN_IP4_OFF_TOTLEN, (uint16_t)(ihl + thl + n));
		iw_put_be16(ip + IWN_IP4_OFF_ID, (uint16_t)(id + k));
		iw_put_be16(ip + IWN_IP4_OFF_CSUM, 0);
		iw_put_be16(ip + IWN_IP4_OFF_CSUM, iwn_cksum_fold(iwn_cksum_add(0, ip, ihl)));
		iw_put_be32(t + IWN_TCP_OFF_SEQ, seq + at);
		/* FIN and PSH on the last piece, CWR on the first (Linux). */
		uint8_t f = fl;
		if (!last)
			f &= (uint8_t)~(IWN_TCP_FIN | IWN_TCP_PSH);
		if (k)
			f &= (uint8_t)~0x80u;
		t[IWN_TCP_OFF_FLAGS] = f;
		iwn_tcp_set_csum(t, thl + n, src, dst);
		s->gso_pieces++;
		if (hl + n > e + s->net[p->idx].cfg.mtu)
			s->gso_oversize++;
		sim_tx(arg, piece, hl + n);
	}
}

void netsim_init(struct netsim *s, uint64_t seed, const struct netsim_link *link, const struct iwn_tcp_cfg *tcp0,
		 const struct iwn_tcp_cfg *tcp1, uint16_t mtu)
{
	netsim_init_gso(s, seed, link, tcp0, tcp1, mtu, 0);
}

void netsim_init_gso(struct netsim *s, uint64_t seed, const struct netsim_link *link, const struct iwn_tcp_cfg *tcp0,
		     const struct iwn_tcp_cfg *tcp1, uint16_t mtu, unsigned gso_mask)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed ? seed : 1;
	if (link)
		s->link = *link;
	s->now = 1000000 + netsim_rand(s) % 1000000000u; /* arbitrary start: ISNs vary */
	for (int i = 0; i < 2; i++) {
		struct iwn_net_cfg cfg;
		iwn_net_cfg_default(&cfg);
		const struct iwn_tcp_cfg *t = i ? tcp1 : tcp0;
		if (t)
			cfg.tcp = *t;
		if (mtu)
			cfg.mtu = mtu;
		uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)(i + 1)};
		memcpy(cfg.mac, mac, 6);
		cfg.ip = NETSIM_IP(i);
		for (int k = 0; k < IWN_ISN_KEY_LEN; k++)
			cfg.isn_key[k] = (uint8_t)netsim_rand(s);
		s->port[i].sim = s;
		s->port[i].idx = i;
		cfg.tx = sim_tx;
		cfg.tx_arg = &s->port[i];
		if (gso_mask & (1u << i)) {
			cfg.tx_off = sim_tx_off;
			cfg.gso_max = IWN_GSO_MAX_PAYLOAD;
		}
		if (iwn_net_init(&s->net[i], &cfg))
			abort();
	}
}

void netsim_fini(struct netsim *s)
{
	for (int i = 0; i < 2; i++)
		iwn_net_fini(&s->net[i]);
	for (uint32_t i = 0; i < s->nq; i++)
		free(s->q[i].data);
	s->nq = 0;
}

static int first_frame(const struct netsim *s)
{
	int best = -1;
	for (uint32_t i = 0; i < s->nq; i++)
		if (best < 0 || s->q[i].at < s->q[best].at ||
		    (s->q[i].at == s->q[best].at && s->q[i].order < s->q[best].order))
			best = (int)i;
	return best;
}

uint64_t netsim_next(const struct netsim *s)
{
	uint64_t t = UINT64_MAX;
	int f = first_frame(s);
	if (f >= 0)
		t = s->q[f].at;
	for (int i = 0; i < 2; i++) {
		uint64_t d = iwn_net_next_deadline(&s->net[i]);
		if (d < t)
			t = d;
	}
	return t;
}

bool netsim_step(struct netsim *s, uint64_t limit)
{
	uint64_t t = netsim_next(s);
	if (t > limit) {
		s->now = limit;
		return false;
	}
	if (t > s->now)
		s->now = t;
	for (;;) {
		int f = first_frame(s);
		if (f < 0 || s->q[f].at > s->now)
			break;
		struct netsim_frame fr = s->q[f];
		s->q[f] = s->q[--s->nq];
		iwn_net_input(&s->net[fr.to], fr.data, fr.len, s->now);
		free(fr.data);
	}
	for (int i = 0; i < 2; i++)
		if (iwn_net_next_deadline(&s->net[i]) <= s->now)
			iwn_net_timers(&s->net[i], s->now);
	return true;
}

void netsim_run_for(struct netsim *s, uint64_t us)
{
	uint64_t end = s->now + us;
	while (netsim_step(s, end))
		;
}
