#include "ratelimit.h"

#define MICRO 1000000ull

void iwn_bucket_init(struct iwn_bucket *b, uint32_t rate, uint32_t burst, uint64_t now)
{
	b->rate = rate;
	b->burst = burst ? burst : 1;
	b->credit = (uint64_t)b->burst * MICRO;
	b->at = now;
}

bool iwn_bucket_take(struct iwn_bucket *b, uint64_t now)
{
	if (b->rate == 0)
		return true;
	uint64_t full = (uint64_t)b->burst * MICRO;
	if (now > b->at) {
		uint64_t dt = now - b->at;
		/* Clamp before multiplying: an idle hour must not overflow. */
		if (dt > full / b->rate + 1)
			b->credit = full;
		else
			b->credit += dt * b->rate;
		if (b->credit > full)
			b->credit = full;
		b->at = now;
	}
	if (b->credit < MICRO)
		return false;
	b->credit -= MICRO;
	return true;
}
