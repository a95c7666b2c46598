/* The SACK scoreboard of a sender (RFC 2018): which sequence ranges above
 * snd_una the peer reported as received, so loss recovery resends only
 * the holes. Fixed size; when full, the newest report is dropped, which
 * only costs retransmissions. */
#ifndef IWN_TCP_SACK_H
#define IWN_TCP_SACK_H

#include <stdbool.h>
#include <stdint.h>

#define IWN_SACK_RANGES 8

struct iwn_sack_board {
	uint32_t s[IWN_SACK_RANGES], e[IWN_SACK_RANGES]; /* sorted, disjoint [s, e) */
	uint32_t n;
};

static inline void iwn_sack_clear(struct iwn_sack_board *b)
{
	b->n = 0;
}
/* Merge reported blocks; blocks outside (snd_una, snd_max] are ignored. */
void iwn_sack_add(struct iwn_sack_board *b, const uint32_t (*blk)[2], uint32_t nblk, uint32_t snd_una,
		  uint32_t snd_max);
/* snd_una advanced: forget what it covers. */
void iwn_sack_prune(struct iwn_sack_board *b, uint32_t snd_una);
/* The first hole at or after from (and snd_una) that lies below a SACKed
 * range: true with [*start, *end). */
bool iwn_sack_next_hole(const struct iwn_sack_board *b, uint32_t snd_una, uint32_t from, uint32_t *start,
			uint32_t *end);

#endif
