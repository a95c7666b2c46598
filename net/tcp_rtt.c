#include "tcp_rtt.h"

static uint64_t clamp(const struct iwn_tcp_rtt *r, uint64_t v)
{
	if (v < r->rto_min)
		v = r->rto_min;
	if (v > r->rto_max)
		v = r->rto_max;
	return v;
}

void iwn_rtt_init(struct iwn_tcp_rtt *r, uint64_t rto_min, uint64_t rto_max)
{
	r->srtt = 0;
	r->rttvar = 0;
	r->rto_min = rto_min;
	r->rto_max = rto_max < rto_min ? rto_min : rto_max;
	r->have_sample = false;
	r->rto = clamp(r, IWN_RTO_INITIAL_US);
}

void iwn_rtt_sample(struct iwn_tcp_rtt *r, uint64_t rtt)
{
	if (!r->have_sample) {
		r->srtt = rtt;
		r->rttvar = rtt / 2;
		r->have_sample = true;
	} else {
		uint64_t diff = r->srtt > rtt ? r->srtt - rtt : rtt - r->srtt;
		/* beta = 1/4, alpha = 1/8; RTTVAR first, with the old SRTT. */
		r->rttvar = (3 * r->rttvar + diff) / 4;
		r->srtt = (7 * r->srtt + rtt) / 8;
	}
	uint64_t k = 4 * r->rttvar;
	r->rto = clamp(r, r->srtt + (k > IWN_RTO_GRANULARITY_US ? k : IWN_RTO_GRANULARITY_US));
}

void iwn_rtt_backoff(struct iwn_tcp_rtt *r)
{
	r->rto = clamp(r, r->rto * 2);
}

void iwn_rtt_reset_backoff(struct iwn_tcp_rtt *r)
{
	if (!r->have_sample) {
		r->rto = clamp(r, IWN_RTO_INITIAL_US);
		return;
	}
	uint64_t k = 4 * r->rttvar;
	r->rto = clamp(r, r->srtt + (k > IWN_RTO_GRANULARITY_US ? k : IWN_RTO_GRANULARITY_US));
}
