/* Portable CRC-32C: slicing-by-8 over tables computed once at first use.
 *
 * Eight tables let each 8-byte step fold the whole state in one round of
 * independent lookups instead of eight dependent byte steps. Words are
 * assembled from bytes so the code is alignment- and endian-neutral; the
 * compilers turn that into a single load on little-endian hosts. */
#include "crc32c.h"

#include <pthread.h>

#define IW_CRC32C_POLY 0x82F63B78u /* Castagnoli, bit-reflected */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_tab_once = PTHREAD_ONCE_INIT;

static void crc_tab_build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1u) ? (c >> 1) ^ IW_CRC32C_POLY : c >> 1;
		crc_tab[0][i] = c;
	}
	/* tab[k][i]: CRC contribution of byte i followed by k zero bytes. */
	for (int k = 1; k < 8; k++)
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = crc_tab[k - 1][i];
			crc_tab[k][i] = (c >> 8) ^ crc_tab[0][c & 0xFFu];
		}
}

static inline uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t iw_crc32c_update_portable(uint32_t state, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = state;

	if (len == 0)
		return state;
	pthread_once(&crc_tab_once, crc_tab_build);

	while (len >= 8) {
		uint32_t lo = crc ^ load_le32(p);
		uint32_t hi = load_le32(p + 4);
		crc = crc_tab[7][lo & 0xFFu] ^ crc_tab[6][(lo >> 8) & 0xFFu] ^
		      crc_tab[5][(lo >> 16) & 0xFFu] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xFFu] ^ crc_tab[2][(hi >> 8) & 0xFFu] ^
		      crc_tab[1][(hi >> 16) & 0xFFu] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
	return crc;
}
