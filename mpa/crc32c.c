/* CRC-32C dispatch: ISA-L's crc32_iscsi when the build found libisal,
 * else the portable slicing-by-8 (crc32c_portable.c). */
#include "crc32c.h"

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
