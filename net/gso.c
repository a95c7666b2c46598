#include "gso.h"

static uint64_t mark_at(const struct iwn_sndbuf *sb, uint32_t i)
{
	return sb->marks[(sb->mhead + i) % sb->mcap];
}

uint32_t iwn_gso_plan(const struct iwn_sndbuf *sb, uint32_t off, uint32_t max, uint32_t mss, uint32_t *gso_size)
{
	*gso_size = 0;
	if (mss == 0 || off >= sb->len)
		return 0;
	uint32_t avail = sb->len - off;
	if (max > avail)
		max = avail;
	if (max > IWN_GSO_MAX_PAYLOAD)
		max = IWN_GSO_MAX_PAYLOAD;
	uint64_t from = sb->base + off;
	/* First mark after from (marks ascend). */
	uint32_t lo = 0, hi = sb->mlen;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (mark_at(sb, mid) > from)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == sb->mlen) {
		/* A plain stream: whole MSS segments, plus a short tail only
		 * when it is the end of what is queued (as a plain segment
		 * would go with nodelay). */
		uint32_t len = max == avail ? max : max - max % mss;
		if (len <= mss)
			return 0;
		*gso_size = mss;
		return len;
	}
	uint64_t prev = from;
	uint32_t s = (uint32_t)(mark_at(sb, lo) - from);
	if (s > mss)
		return 0;
	uint32_t total = 0;
	for (uint32_t i = lo; i < sb->mlen; i++) {
		uint64_t m = mark_at(sb, i);
		uint32_t r = (uint32_t)(m - prev);
		if (r > s || total + r > max)
			break;
		total += r;
		prev = m;
		if (r < s)
			break; /* a shorter record ends the run */
	}
	uint32_t g = (mss / s) * s;
	if (total <= g)
		return 0;
	*gso_size = g;
	return total;
}
