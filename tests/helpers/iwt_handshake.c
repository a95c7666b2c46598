/* Raw MPA handshake frames for tests (see iwt_handshake.h). */
#include "iwt_handshake.h"

#include <string.h>

#define REQ_KEY "MPA ID Req Frame"
#define REP_KEY "MPA ID Rep Frame"
#define KEY_BYTES 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e'

const uint8_t iwt_siw_rping_req[IWT_SIW_RPING_REQ_LEN] = {
	KEY_BYTES, 'q', ' ', 'F', 'r', 'a', 'm', 'e',
	0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
};

const uint8_t iwt_siw_req_crc[IWT_SIW_RPING_REQ_LEN] = {
	KEY_BYTES, 'q', ' ', 'F', 'r', 'a', 'm', 'e',
	0x50, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
};

uint16_t iwt_mpa_w1(bool p2p, bool rtr_send, uint16_t ird)
{
	return (uint16_t)((p2p ? 0x8000 : 0) | (rtr_send ? 0x4000 : 0) | (ird & 0x3FFF));
}

uint16_t iwt_mpa_w2(bool rtr_write, bool rtr_read, uint16_t ord)
{
	return (uint16_t)((rtr_write ? 0x8000 : 0) | (rtr_read ? 0x4000 : 0) | (ord & 0x3FFF));
}

size_t iwt_mpa_raw_bytes(const char *key16, uint8_t flags, uint8_t rev, uint16_t pd_len_field,
			 const uint8_t *body, size_t body_len, uint8_t *out)
{
	memcpy(out, key16, 16);
	out[16] = flags;
	out[17] = rev;
	out[18] = (uint8_t)(pd_len_field >> 8);
	out[19] = (uint8_t)pd_len_field;
	if (body_len)
		memcpy(out + 20, body, body_len);
	return 20 + body_len;
}

static size_t frame_bytes(const char *key, uint8_t flags, uint8_t rev, uint16_t w1, uint16_t w2,
			  const uint8_t *pdata, size_t pdlen, uint8_t *out)
{
	size_t words = (flags & 0x10) ? 4 : 0;
	uint8_t *p = out + 20;
	if (words) {
		p[0] = (uint8_t)(w1 >> 8);
		p[1] = (uint8_t)w1;
		p[2] = (uint8_t)(w2 >> 8);
		p[3] = (uint8_t)w2;
	}
	if (pdlen)
		memcpy(p + words, pdata, pdlen);
	return iwt_mpa_raw_bytes(key, flags, rev, (uint16_t)(words + pdlen), NULL, 0, out) + words +
	       pdlen;
}

size_t iwt_mpa_req_bytes(uint8_t flags, uint8_t rev, uint16_t w1, uint16_t w2,
			 const uint8_t *pdata, size_t pdlen, uint8_t *out)
{
	return frame_bytes(REQ_KEY, flags, rev, w1, w2, pdata, pdlen, out);
}

size_t iwt_mpa_rep_bytes(uint8_t flags, uint8_t rev, uint16_t w1, uint16_t w2,
			 const uint8_t *pdata, size_t pdlen, uint8_t *out)
{
	return frame_bytes(REP_KEY, flags, rev, w1, w2, pdata, pdlen, out);
}
