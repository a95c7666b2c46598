#include "tcp_sndbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int iwn_sndbuf_init(struct iwn_sndbuf *sb, uint32_t cap, uint32_t max_records)
{
	memset(sb, 0, sizeof(*sb));
	if (cap == 0)
		return -EINVAL;
	sb->cap = cap;
	sb->mcap = max_records;
	return 0;
}

/* The ring and its marks come with the first write: a connection that
 * never sends (a flood's, refused before any MPA Reply) never pays for
 * them (1 MiB on the raw transport: an mmap, page faults and a munmap
 * per connection, most of a flooded server's time). */
int iwn_sndbuf_reserve(struct iwn_sndbuf *sb)
{
	if (sb->buf)
		return 0;
	sb->buf = malloc(sb->cap);
	sb->marks = sb->mcap ? calloc(sb->mcap, sizeof(*sb->marks)) : NULL;
	if (!sb->buf || (sb->mcap && !sb->marks)) {
		free(sb->buf);
		free(sb->marks);
		sb->buf = NULL;
		sb->marks = NULL;
		return -ENOMEM;
	}
	return 0;
}

void iwn_sndbuf_fini(struct iwn_sndbuf *sb)
{
	free(sb->buf);
	free(sb->marks);
	sb->buf = NULL;
	sb->marks = NULL;
}

static void put(struct iwn_sndbuf *sb, const uint8_t *p, uint32_t n)
{
	uint32_t at = (sb->head + sb->len) % sb->cap;
	uint32_t first = sb->cap - at < n ? sb->cap - at : n;
	memcpy(sb->buf + at, p, first);
	memcpy(sb->buf, p + first, n - first);
	sb->len += n;
}

uint32_t iwn_sndbuf_write(struct iwn_sndbuf *sb, const uint8_t *p, uint32_t n)
{
	uint32_t sp = iwn_sndbuf_space(sb);
	if (n > sp)
		n = sp;
	if (n && iwn_sndbuf_reserve(sb))
		return 0;
	if (n)
		put(sb, p, n);
	return n;
}

static int record_check(struct iwn_sndbuf *sb, uint32_t n)
{
	if (n == 0)
		return -EINVAL;
	if (n > sb->cap || sb->mcap == 0)
		return -EMSGSIZE;
	if (n > iwn_sndbuf_space(sb) || sb->mlen == sb->mcap)
		return -EAGAIN;
	return iwn_sndbuf_reserve(sb);
}

static int record_mark(struct iwn_sndbuf *sb, uint32_t n)
{
	sb->marks[(sb->mhead + sb->mlen) % sb->mcap] = sb->base + sb->len;
	sb->mlen++;
	return (int)n;
}

int iwn_sndbuf_write_record(struct iwn_sndbuf *sb, const uint8_t *p, uint32_t n)
{
	int r = record_check(sb, n);
	if (r)
		return r;
	put(sb, p, n);
	return record_mark(sb, n);
}

int iwn_sndbuf_write_recordv(struct iwn_sndbuf *sb, const struct iovec *iov, int cnt, uint32_t n)
{
	uint64_t total = 0;
	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	if (cnt < 0 || total != n)
		return -EINVAL;
	int r = record_check(sb, n);
	if (r)
		return r;
	for (int i = 0; i < cnt; i++)
		if (iov[i].iov_len)
			put(sb, iov[i].iov_base, (uint32_t)iov[i].iov_len);
	return record_mark(sb, n);
}

void iwn_sndbuf_consume(struct iwn_sndbuf *sb, uint32_t n)
{
	if (n > sb->len)
		n = sb->len;
	sb->head = (sb->head + n) % sb->cap;
	sb->len -= n;
	sb->base += n;
	while (sb->mlen && sb->marks[sb->mhead] <= sb->base) {
		sb->mhead = (sb->mhead + 1) % sb->mcap;
		sb->mlen--;
	}
}

void iwn_sndbuf_copy(const struct iwn_sndbuf *sb, uint32_t off, uint8_t *dst, uint32_t n)
{
	if (n == 0 || off > sb->len || n > sb->len - off)
		return;
	uint32_t at = (sb->head + off) % sb->cap;
	uint32_t first = sb->cap - at < n ? sb->cap - at : n;
	memcpy(dst, sb->buf + at, first);
	memcpy(dst + first, sb->buf, n - first);
}

/* Index of the first mark after stream offset from (mlen: none). Marks
 * ascend, so bisect: a linear walk from the oldest cost a scan of every
 * record in flight per segment. */
static uint32_t first_mark_after(const struct iwn_sndbuf *sb, uint64_t from)
{
	uint32_t lo = 0, hi = sb->mlen;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (sb->marks[(sb->mhead + mid) % sb->mcap] > from)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint32_t iwn_sndbuf_reclen(const struct iwn_sndbuf *sb, uint32_t off)
{
	if (off >= sb->len)
		return 0;
	uint64_t from = sb->base + off;
	uint32_t i = first_mark_after(sb, from);
	return i < sb->mlen ? (uint32_t)(sb->marks[(sb->mhead + i) % sb->mcap] - from) : 0;
}

uint32_t iwn_sndbuf_seglen(const struct iwn_sndbuf *sb, uint32_t off, uint32_t max)
{
	if (off >= sb->len)
		return 0;
	uint32_t avail = sb->len - off;
	if (max > avail)
		max = avail;
	uint64_t from = sb->base + off, to = from + max, best = 0;
	/* The last mark within to. */
	for (uint32_t i = first_mark_after(sb, from); i < sb->mlen; i++) {
		uint64_t m = sb->marks[(sb->mhead + i) % sb->mcap];
		if (m > to)
			break;
		best = m;
	}
	return best ? (uint32_t)(best - from) : max;
}
