#include "tcp_sack.h"

#include <string.h>

#include "seq.h"

static void insert(struct iwn_sack_board *b, uint32_t s, uint32_t e)
{
	uint32_t i = 0;
	while (i < b->n && iwn_seq_lt(b->e[i], s))
		i++;
	uint32_t j = i;
	while (j < b->n && iwn_seq_le(b->s[j], e)) {
		s = iwn_seq_min(s, b->s[j]);
		e = iwn_seq_max(e, b->e[j]);
		j++;
	}
	if (i == j) {
		if (b->n == IWN_SACK_RANGES)
			return;
		memmove(&b->s[i + 1], &b->s[i], (b->n - i) * sizeof(b->s[0]));
		memmove(&b->e[i + 1], &b->e[i], (b->n - i) * sizeof(b->e[0]));
		b->n++;
	} else if (j - i > 1) {
		memmove(&b->s[i + 1], &b->s[j], (b->n - j) * sizeof(b->s[0]));
		memmove(&b->e[i + 1], &b->e[j], (b->n - j) * sizeof(b->e[0]));
		b->n -= j - i - 1;
	}
	b->s[i] = s;
	b->e[i] = e;
}

void iwn_sack_add(struct iwn_sack_board *b, const uint32_t (*blk)[2], uint32_t nblk, uint32_t snd_una,
		  uint32_t snd_max)
{
	for (uint32_t k = 0; k < nblk; k++) {
		uint32_t s = blk[k][0], e = blk[k][1];
		/* Only sane blocks above snd_una (D-SACKs below it are ignored). */
		if (!iwn_seq_lt(s, e) || !iwn_seq_gt(s, snd_una) || iwn_seq_gt(e, snd_max))
			continue;
		insert(b, s, e);
	}
}

void iwn_sack_prune(struct iwn_sack_board *b, uint32_t snd_una)
{
	uint32_t k = 0;
	while (k < b->n && iwn_seq_le(b->e[k], snd_una))
		k++;
	memmove(&b->s[0], &b->s[k], (b->n - k) * sizeof(b->s[0]));
	memmove(&b->e[0], &b->e[k], (b->n - k) * sizeof(b->e[0]));
	b->n -= k;
	if (b->n && iwn_seq_lt(b->s[0], snd_una))
		b->s[0] = snd_una;
}

bool iwn_sack_next_hole(const struct iwn_sack_board *b, uint32_t snd_una, uint32_t from, uint32_t *start,
			uint32_t *end)
{
	uint32_t cur = iwn_seq_max(from, snd_una);
	for (uint32_t i = 0; i < b->n; i++) {
		if (iwn_seq_lt(cur, b->s[i])) {
			*start = cur;
			*end = b->s[i];
			return true;
		}
		cur = iwn_seq_max(cur, b->e[i]);
	}
	return false;
}
