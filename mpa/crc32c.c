/* CRC-32C dispatch: buffers up to IW_CRC32C_SHORT_MAX bytes take the
 * SSE4.2 crc32 instruction when the CPU has it; the rest ISA-L's
 * crc32_iscsi when the build found libisal, else the portable
 * slicing-by-8 (crc32c_portable.c).
 *
 * Why a short path: for an 8-byte payload or a 20-byte header a call into
 * ISA-L (dispatch, alignment prologue, folding setup) costs more than the
 * CRC itself; the instruction does 8 bytes per step with no tables. It is
 * chosen at run time (builds run on any x86-64; other architectures take
 * the portable code). It uses the same reflected Castagnoli polynomial and
 * the same state convention (no inversion inside). */
#include "crc32c.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define IW_CRC_HW_BUILD 1
#include <nmmintrin.h>

static int crc_hw;

__attribute__((constructor)) static void crc_hw_detect(void)
{
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw_update(uint32_t state, const uint8_t *p,
								 size_t len)
{
	uint64_t c = state;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8); /* any alignment */
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t s = (uint32_t)c;
	if (len >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		s = _mm_crc32_u32(s, v);
		p += 4;
		len -= 4;
	}
	while (len--)
		s = _mm_crc32_u8(s, *p++);
	return s;
}
#endif

static inline uint32_t short_update(uint32_t state, const void *buf, size_t len)
{
#ifdef IW_CRC_HW_BUILD
	if (crc_hw)
		return crc_hw_update(state, buf, len);
#endif
	return iw_crc32c_update_portable(state, buf, len);
}

int iw_crc32c_short_hw(void)
{
#ifdef IW_CRC_HW_BUILD
	return crc_hw;
#else
	return 0;
#endif
}

uint32_t iw_crc32c_update_short(uint32_t state, const void *buf, size_t len)
{
	return short_update(state, buf, len);
}

#ifdef IW_HAVE_ISAL
#include <isa-l/crc.h>
#include <limits.h>
#include <stdint.h>

/* crc32_iscsi takes an int length; feed huge buffers in pieces well below
 * INT_MAX. Its return value is the state before the final inversion, which
 * is exactly our state convention, so it chains directly. */
#define IW_ISAL_CHUNK ((size_t)1 << 30)

uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	if (len <= IW_CRC32C_SHORT_MAX)
		return short_update(state, buf, len);
	/* ISA-L's prototype is not const-qualified but it only reads. */
	unsigned char *p = (unsigned char *)(uintptr_t)buf;

	while (len > 0) {
		size_t n = len < IW_ISAL_CHUNK ? len : IW_ISAL_CHUNK;
		state = crc32_iscsi(p, (int)n, state);
		p += n;
		len -= n;
	}
	return state;
}

const char *iw_crc32c_impl(void)
{
	return "isa-l";
}
#else
uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	if (len <= IW_CRC32C_SHORT_MAX)
		return short_update(state, buf, len);
	return iw_crc32c_update_portable(state, buf, len);
}

const char *iw_crc32c_impl(void)
{
	return "portable";
}
#endif

uint32_t iw_crc32c_update_iov(uint32_t state, const struct iovec *iov, int iovcnt)
{
	if (!iov)
		return state;
	for (int i = 0; i < iovcnt; i++)
		state = iw_crc32c_update(state, iov[i].iov_base, iov[i].iov_len);
	return state;
}

uint32_t iw_crc32c(const void *buf, size_t len)
{
	return iw_crc32c_final(iw_crc32c_update(iw_crc32c_init(), buf, len));
}
