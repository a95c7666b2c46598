#include "netsim.h"

#include <stdlib.h>
#include <string.h>

#include "iwt_common.h"

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

void netsim_init(struct netsim *s, uint64_t seed, const struct netsim_link *link, const struct iwn_tcp_cfg *tcp0,
		 const struct iwn_tcp_cfg *tcp1, uint16_t mtu)
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
