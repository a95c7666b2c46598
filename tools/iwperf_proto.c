/* iwperf wire messages: fixed big-endian layouts, magic first.
 *
 * hello  (32): magic, version u8, test u8, crc u8, 0 u8, max_size, qd,
 *              qp_index, nqps, max_ulpdu, 0 (u32 each)
 * advert (32): magic, version u8, 0 u8 x3, recv_depth, addr u64, rkey,
 *              len, 0 (u32)
 * ctrl   (40): magic, type u8, 0 u8 x3, row, 0 (u32), credits, msgs,
 *              bytes (u64 each)
 * tcp hello (16): magic, version u8, kind u8, test u8, 0 u8, session,
 *              index */
#include <errno.h>
#include <string.h>

#include "iwperf.h"
#include "tool_common.h"

void perf_hello_encode(uint8_t *p, const struct perf_hello *h)
{
	memset(p, 0, PERF_HELLO_LEN);
	tc_put_be32(p, PERF_HELLO_MAGIC);
	p[4] = PERF_VERSION;
	p[5] = h->test;
	p[6] = h->crc;
	p[7] = h->flags;
	tc_put_be32(p + 8, h->max_size);
	tc_put_be32(p + 12, h->qd);
	tc_put_be32(p + 16, h->qp_index);
	tc_put_be32(p + 20, h->nqps);
	tc_put_be32(p + 24, h->max_ulpdu);
}

int perf_hello_decode(const void *buf, size_t len, struct perf_hello *h)
{
	const uint8_t *p = buf;

	if (p == NULL || len < PERF_HELLO_LEN || tc_get_be32(p) != PERF_HELLO_MAGIC || p[4] != PERF_VERSION)
		return -EINVAL;
	h->test = p[5];
	h->crc = p[6];
	h->flags = p[7];
	h->max_size = tc_get_be32(p + 8);
	h->qd = tc_get_be32(p + 12);
	h->qp_index = tc_get_be32(p + 16);
	h->nqps = tc_get_be32(p + 20);
	h->max_ulpdu = tc_get_be32(p + 24);
	if (h->test > PT_LAT || h->crc > IW_CRC_REQUIRED || h->max_size == 0 || h->max_size > PERF_SIZE_LIMIT ||
	    h->qd == 0 || h->qd > PERF_MAX_QD)
		return -EINVAL;
	return 0;
}

void perf_advert_encode(uint8_t *p, const struct perf_advert *a)
{
	memset(p, 0, PERF_ADVERT_LEN);
	tc_put_be32(p, PERF_ADVERT_MAGIC);
	p[4] = PERF_VERSION;
	tc_put_be32(p + 8, a->recv_depth);
	tc_put_be64(p + 12, a->addr);
	tc_put_be32(p + 20, a->rkey);
	tc_put_be32(p + 24, a->len);
}

int perf_advert_decode(const void *buf, size_t len, struct perf_advert *a)
{
	const uint8_t *p = buf;

	if (p == NULL || len < PERF_ADVERT_LEN || tc_get_be32(p) != PERF_ADVERT_MAGIC || p[4] != PERF_VERSION)
		return -EINVAL;
	a->recv_depth = tc_get_be32(p + 8);
	a->addr = tc_get_be64(p + 12);
	a->rkey = tc_get_be32(p + 20);
	a->len = tc_get_be32(p + 24);
	return a->recv_depth == 0 ? -EINVAL : 0;
}

void perf_ctrl_encode(uint8_t *p, const struct perf_ctrl *c)
{
	memset(p, 0, PERF_CTRL_LEN);
	tc_put_be32(p, PERF_CTRL_MAGIC);
	p[4] = c->type;
	tc_put_be32(p + 8, c->row);
	tc_put_be64(p + 16, c->credits);
	tc_put_be64(p + 24, c->msgs);
	tc_put_be64(p + 32, c->bytes);
}

int perf_ctrl_decode(const void *buf, size_t len, struct perf_ctrl *c)
{
	const uint8_t *p = buf;

	if (len != PERF_CTRL_LEN || tc_get_be32(p) != PERF_CTRL_MAGIC || p[4] < PC_ROW_END || p[4] > PC_CREDIT)
		return -EINVAL;
	c->type = p[4];
	c->row = tc_get_be32(p + 8);
	c->credits = tc_get_be64(p + 16);
	c->msgs = tc_get_be64(p + 24);
	c->bytes = tc_get_be64(p + 32);
	return 0;
}

void perf_tcp_hello_encode(uint8_t *p, const struct perf_tcp_hello *h)
{
	memset(p, 0, PERF_TCP_HELLO_LEN);
	tc_put_be32(p, PERF_TCP_MAGIC);
	p[4] = PERF_VERSION;
	p[5] = h->kind;
	p[6] = h->test;
	tc_put_be32(p + 8, h->session);
	tc_put_be32(p + 12, h->index);
}

int perf_tcp_hello_decode(const uint8_t *p, struct perf_tcp_hello *h)
{
	if (tc_get_be32(p) != PERF_TCP_MAGIC || p[4] != PERF_VERSION)
		return -EINVAL;
	h->kind = p[5];
	h->test = p[6];
	h->session = tc_get_be32(p + 8);
	h->index = tc_get_be32(p + 12);
	if ((h->kind != PTK_CTRL && h->kind != PTK_DATA) || h->test > PT_LAT)
		return -EINVAL;
	return 0;
}

const char *perf_test_name(enum perf_test t)
{
	switch (t) {
	case PT_WRITE: return "write";
	case PT_READ: return "read";
	case PT_SEND: return "send";
	case PT_LAT: return "lat";
	}
	return "?";
}
