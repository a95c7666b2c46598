/* Send buffer: a byte ring holding everything from the oldest
 * unacknowledged byte to the newest queued one, plus optional record
 * boundaries so segments can be cut at caller-given positions (one or
 * more whole records per segment, the MPA-aware sender of RFC 5044 sec.
 * 8) and cut the same way when retransmitted. Sized at creation,
 * allocated by the first write. */
#ifndef IWN_TCP_SNDBUF_H
#define IWN_TCP_SNDBUF_H

#include <stdint.h>
#include <sys/uio.h>

struct iwn_sndbuf {
	uint8_t *buf;
	uint32_t cap, head, len; /* len bytes from ring index head */
	uint64_t base;           /* stream offset of the byte at head */
	uint64_t *marks;         /* record ends (stream offsets), ascending */
	uint32_t mcap, mhead, mlen;
};

int iwn_sndbuf_init(struct iwn_sndbuf *sb, uint32_t cap, uint32_t max_records);
void iwn_sndbuf_fini(struct iwn_sndbuf *sb);
/* Allocate the ring now (writes do it themselves): 0 or -ENOMEM. */
int iwn_sndbuf_reserve(struct iwn_sndbuf *sb);
static inline uint32_t iwn_sndbuf_space(const struct iwn_sndbuf *sb)
{
	return sb->cap - sb->len;
}
/* Queue up to n bytes; returns how many were taken (0 also without
 * memory for the ring: iwn_sndbuf_reserve tells). */
uint32_t iwn_sndbuf_write(struct iwn_sndbuf *sb, const uint8_t *p, uint32_t n);
/* Queue exactly n bytes as one record (boundary after it): n, or -EAGAIN
 * when space or the record table is short, -EMSGSIZE when it can never
 * fit, -EINVAL for n == 0, -ENOMEM without memory for the ring. */
int iwn_sndbuf_write_record(struct iwn_sndbuf *sb, const uint8_t *p, uint32_t n);
/* The same for a record gathered from cnt pieces (n: their total). The
 * gather goes straight into the ring: no contiguous copy first. */
int iwn_sndbuf_write_recordv(struct iwn_sndbuf *sb, const struct iovec *iov, int cnt, uint32_t n);
/* n bytes were acknowledged: drop them from the front. */
void iwn_sndbuf_consume(struct iwn_sndbuf *sb, uint32_t n);
/* Copy n bytes starting off bytes after head. off + n <= len. */
void iwn_sndbuf_copy(const struct iwn_sndbuf *sb, uint32_t off, uint8_t *dst, uint32_t n);
/* Length of the segment starting off bytes after head, at most max: the
 * farthest record boundary within max when one is there, else max (or
 * what is queued). Cuts depend only on offsets, so a retransmission from
 * a boundary repeats the original cuts. */
uint32_t iwn_sndbuf_seglen(const struct iwn_sndbuf *sb, uint32_t off, uint32_t max);
/* Bytes from off to the first record boundary after it; 0 when no
 * boundary follows (no records, or only plain bytes queued). */
uint32_t iwn_sndbuf_reclen(const struct iwn_sndbuf *sb, uint32_t off);

#endif
