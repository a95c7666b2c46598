/* Retransmission timeout per RFC 6298 (microseconds): SRTT/RTTVAR from
 * samples, RTO = SRTT + max(G, 4 RTTVAR) clamped to [min, max],
 * exponential backoff. Karn's rule is the caller's: never sample a
 * retransmitted segment. */
#ifndef IWN_TCP_RTT_H
#define IWN_TCP_RTT_H

#include <stdbool.h>
#include <stdint.h>

#define IWN_RTO_INITIAL_US 1000000u /* RFC 6298 sec. 2.1 */
#define IWN_RTO_GRANULARITY_US 1000u

struct iwn_tcp_rtt {
	uint64_t srtt, rttvar, rto; /* us */
	uint64_t rto_min, rto_max;
	bool have_sample;
};

void iwn_rtt_init(struct iwn_tcp_rtt *r, uint64_t rto_min, uint64_t rto_max);
void iwn_rtt_sample(struct iwn_tcp_rtt *r, uint64_t rtt_us);
/* Timer expired (sec. 5.5): double the RTO up to the maximum. */
void iwn_rtt_backoff(struct iwn_tcp_rtt *r);
/* Drop any backoff: RTO from the current estimate (or the initial 1 s). */
void iwn_rtt_reset_backoff(struct iwn_tcp_rtt *r);

#endif
