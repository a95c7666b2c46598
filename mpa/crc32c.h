/* CRC-32C (Castagnoli) as MPA uses it (RFC 5044 sec. 6.5).
 *
 * Incremental: state = iw_crc32c_init(); state = update(state, ...);
 * crc = iw_crc32c_final(state). The wire carries the final value as its
 * little-endian bytes (iw_crc32c_put_wire / iw_crc32c_get_wire).
 *
 * The fast path is ISA-L's crc32_iscsi when the build found libisal
 * (IW_HAVE_ISAL); otherwise a portable slicing-by-8 table implementation. */
#ifndef IW_CRC32C_H
#define IW_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

static inline uint32_t iw_crc32c_init(void)
{
	return 0xFFFFFFFFu;
}

static inline uint32_t iw_crc32c_final(uint32_t state)
{
	return ~state;
}

/* Feed len bytes (any alignment, len may be 0). */
uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len);

/* Feed an iovec list in order. */
uint32_t iw_crc32c_update_iov(uint32_t state, const struct iovec *iov, int iovcnt);

/* One-shot convenience: crc32c("123456789") == 0xE3069283. */
uint32_t iw_crc32c(const void *buf, size_t len);

/* The portable implementation, always built, so tests can compare it with
 * the accelerated one. */
uint32_t iw_crc32c_update_portable(uint32_t state, const void *buf, size_t len);

/* Buffers up to this many bytes go through the short path: the SSE4.2
 * crc32 instruction in a plain loop when the CPU has it (runtime check),
 * which for a header or a small payload costs less than a library call
 * with its dispatch and setup. Longer buffers use the library. */
#define IW_CRC32C_SHORT_MAX 256

/* The short path itself, for any len (tests compare it with the portable
 * one): the crc32 instruction when available, else the portable code. */
uint32_t iw_crc32c_update_short(uint32_t state, const void *buf, size_t len);

/* True when iw_crc32c_update_short uses the crc32 instruction. */
int iw_crc32c_short_hw(void);

/* "isa-l" or "portable": what iw_crc32c_update uses in this build. */
const char *iw_crc32c_impl(void);

/* MPA puts the CRC on the wire as the little-endian bytes of the value. */
static inline void iw_crc32c_put_wire(uint8_t *p, uint32_t crc)
{
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}

static inline uint32_t iw_crc32c_get_wire(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
