/* Congestion control: slow start and congestion avoidance (RFC 5681)
 * with NewReno fast retransmit / fast recovery (RFC 6582). Bytes and
 * sequence numbers only; the connection does the sending. */
#ifndef IWN_TCP_CC_H
#define IWN_TCP_CC_H

#include <stdbool.h>
#include <stdint.h>

#define IWN_DUPACK_THRESH 3

struct iwn_tcp_cc {
	uint32_t cwnd, ssthresh, mss;
	uint32_t dupacks;
	uint32_t ca_acked;   /* bytes acked towards the next cwnd increase */
	bool in_recovery;
	uint32_t recover;    /* snd_max (one past the highest byte sent) when recovery or an RTO began */
	bool recover_set;
};

/* What the connection must do after an ACK. */
enum iwn_cc_action {
	IWN_CC_NONE = 0,
	IWN_CC_RETRANSMIT, /* resend the first unacknowledged segment now */
};

void iwn_cc_init(struct iwn_tcp_cc *cc, uint32_t mss);
/* An ACK advanced snd_una by acked bytes to ack; flight is what was
 * outstanding before it. */
enum iwn_cc_action iwn_cc_on_ack(struct iwn_tcp_cc *cc, uint32_t ack, uint32_t acked, uint32_t flight);
/* A duplicate ACK (RFC 5681 definition) arrived; snd_una is the ack,
 * snd_max the highest sequence sent, flight the bytes outstanding. */
enum iwn_cc_action iwn_cc_on_dupack(struct iwn_tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t flight);
/* The retransmission timer expired. */
void iwn_cc_on_rto(struct iwn_tcp_cc *cc, uint32_t flight, uint32_t snd_max);

#endif
