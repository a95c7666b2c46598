/* A token bucket: at most burst events at once, refilled at rate per
 * second. Bounds the answers a host sends to unsolicited traffic (RSTs
 * for unknown segments, ICMP echo replies), so a flood of spoofed
 * segments cannot turn the host into a reflector or eat its uplink. */
#ifndef IWN_RATELIMIT_H
#define IWN_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct iwn_bucket {
	uint32_t rate;   /* tokens per second; 0: unlimited */
	uint32_t burst;  /* bucket size, tokens */
	uint64_t credit; /* microtokens (1e6 per token) */
	uint64_t at;     /* time of the last refill, us */
};

/* Starts full. */
void iwn_bucket_init(struct iwn_bucket *b, uint32_t rate, uint32_t burst, uint64_t now);
/* Take one token: true when the event may happen. */
bool iwn_bucket_take(struct iwn_bucket *b, uint64_t now);

#endif
