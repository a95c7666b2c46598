#include "tcp_cc.h"

#include "seq.h"

static uint32_t half_flight(const struct iwn_tcp_cc *cc, uint32_t flight)
{
	uint32_t h = flight / 2;
	return h > 2 * cc->mss ? h : 2 * cc->mss;
}

void iwn_cc_init(struct iwn_tcp_cc *cc, uint32_t mss)
{
	cc->mss = mss ? mss : 1;
	/* RFC 5681 sec. 3.1 initial window. */
	if (mss > 2190)
		cc->cwnd = 2 * mss;
	else if (mss > 1095)
		cc->cwnd = 3 * mss;
	else
		cc->cwnd = 4 * mss;
	cc->ssthresh = UINT32_MAX / 2;
	cc->dupacks = 0;
	cc->ca_acked = 0;
	cc->in_recovery = false;
	cc->recover = 0;
	cc->recover_set = false;
}

static void grow(struct iwn_tcp_cc *cc, uint32_t acked)
{
	if (cc->cwnd < cc->ssthresh) {
		cc->cwnd += acked < cc->mss ? acked : cc->mss;
	} else {
		cc->ca_acked += acked;
		if (cc->ca_acked >= cc->cwnd) {
			cc->ca_acked -= cc->cwnd;
			cc->cwnd += cc->mss;
		}
	}
	if (cc->cwnd > UINT32_MAX / 4)
		cc->cwnd = UINT32_MAX / 4;
}

enum iwn_cc_action iwn_cc_on_ack(struct iwn_tcp_cc *cc, uint32_t ack, uint32_t acked, uint32_t flight)
{
	cc->dupacks = 0;
	if (!cc->in_recovery) {
		grow(cc, acked);
		return IWN_CC_NONE;
	}
	if (iwn_seq_ge(ack, cc->recover)) {
		/* Full acknowledgment (RFC 6582 sec. 3.2 step 3, option 1): recover
		 * is one past the highest byte sent, so covering it is reaching it. */
		uint32_t rest = flight > acked ? flight - acked : 0;
		uint32_t w = (rest > cc->mss ? rest : cc->mss) + cc->mss;
		cc->cwnd = w < cc->ssthresh ? w : cc->ssthresh;
		cc->in_recovery = false;
		cc->ca_acked = 0;
		return IWN_CC_NONE;
	}
	/* Partial acknowledgment: deflate by what was acked, add back one
	 * MSS if that was at least one, and resend the next hole. */
	cc->cwnd = cc->cwnd > acked ? cc->cwnd - acked : cc->mss;
	if (acked >= cc->mss)
		cc->cwnd += cc->mss;
	if (cc->cwnd < cc->mss)
		cc->cwnd = cc->mss;
	return IWN_CC_RETRANSMIT;
}

enum iwn_cc_action iwn_cc_on_dupack(struct iwn_tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t flight)
{
	if (cc->in_recovery) {
		cc->cwnd += cc->mss;
		return IWN_CC_NONE;
	}
	if (++cc->dupacks < IWN_DUPACK_THRESH)
		return IWN_CC_NONE;
	/* RFC 6582 sec. 3.2 step 2: a new recovery only when the ACK covers
	 * more than the previous recovery point. */
	if (cc->dupacks == IWN_DUPACK_THRESH && (!cc->recover_set || iwn_seq_ge(snd_una, cc->recover))) {
		cc->ssthresh = half_flight(cc, flight);
		cc->cwnd = cc->ssthresh + 3 * cc->mss;
		cc->recover = snd_max;
		cc->recover_set = true;
		cc->in_recovery = true;
		return IWN_CC_RETRANSMIT;
	}
	return IWN_CC_NONE;
}

void iwn_cc_on_rto(struct iwn_tcp_cc *cc, uint32_t flight, uint32_t snd_max)
{
	cc->ssthresh = half_flight(cc, flight);
	cc->cwnd = cc->mss;
	cc->dupacks = 0;
	cc->ca_acked = 0;
	cc->in_recovery = false;
	cc->recover = snd_max;
	cc->recover_set = true;
}
