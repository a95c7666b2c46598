/* CRC-32C dispatch. Interim byte-table version; the slicing-by-8 and ISA-L
 * paths replace it. */
#include "crc32c.h"

static uint32_t table[256];
static int table_ready;

static void make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[i] = c;
	}
	table_ready = 1;
}

uint32_t iw_crc32c_update_portable(uint32_t state, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (!table_ready)
		make_table();
	while (len--)
		state = table[(state ^ *p++) & 0xFF] ^ (state >> 8);
	return state;
}

uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	return iw_crc32c_update_portable(state, buf, len);
}

uint32_t iw_crc32c_update_iov(uint32_t state, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++)
		state = iw_crc32c_update(state, iov[i].iov_base, iov[i].iov_len);
	return state;
}

uint32_t iw_crc32c(const void *buf, size_t len)
{
	return iw_crc32c_final(iw_crc32c_update(iw_crc32c_init(), buf, len));
}

const char *iw_crc32c_impl(void)
{
	return "portable-bytewise";
}
