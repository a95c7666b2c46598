#include "tcp_cookie.h"

#include <errno.h>
#include <string.h>

#include "common/iw_bytes.h"
#include "tcp_internal.h"

/* MSS values a cookie can name; the largest not above the peer's is used.
 * Common Ethernet, tunnel and jumbo sizes. */
static const uint16_t cookie_mss[8] = {536, 1200, 1360, 1440, 1452, 1460, 4036, 8960};

#define MAC_BITS 27
#define MAC_MASK ((1u << MAC_BITS) - 1)
#define MSS_SHIFT 27
#define COUNT_SHIFT 30
#define TS_WS_NONE 0xF
#define TS_SACK 0x10

static uint32_t mac(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
		    uint16_t rport, uint32_t irs, uint64_t count, uint32_t mss_idx)
{
	/* A leading tag keeps these inputs apart from the ISN's. */
	uint8_t t[26];
	t[0] = 'C';
	iw_put_be32(t + 1, laddr);
	iw_put_be16(t + 5, lport);
	iw_put_be32(t + 7, raddr);
	iw_put_be16(t + 11, rport);
	iw_put_be32(t + 13, irs);
	iw_put_be32(t + 17, (uint32_t)(count >> 32));
	iw_put_be32(t + 21, (uint32_t)count);
	t[25] = (uint8_t)mss_idx;
	return (uint32_t)iwn_siphash24(key, t, sizeof(t)) & MAC_MASK;
}

uint32_t iwn_syn_cookie(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
			uint16_t rport, uint32_t irs, uint16_t peer_mss, uint64_t now)
{
	uint16_t want = peer_mss ? peer_mss : cookie_mss[0];
	uint32_t idx = 0;
	for (uint32_t i = 1; i < 8; i++)
		if (cookie_mss[i] <= want)
			idx = i;
	uint64_t count = now >> IWN_COOKIE_PERIOD_SHIFT;
	return (uint32_t)(count & 3) << COUNT_SHIFT | idx << MSS_SHIFT |
	       mac(key, laddr, lport, raddr, rport, irs, count, idx);
}

int iwn_syn_cookie_check(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport, uint32_t irs, uint32_t cookie, uint64_t now, uint16_t *mss)
{
	uint64_t count = now >> IWN_COOKIE_PERIOD_SHIFT;
	uint32_t low = cookie >> COUNT_SHIFT;
	uint32_t idx = (cookie >> MSS_SHIFT) & 7;
	if (low == (count & 3)) {
		/* this step */
	} else if (count > 0 && low == ((count - 1) & 3)) {
		count--;
	} else {
		return -ETIMEDOUT;
	}
	if ((cookie & MAC_MASK) != mac(key, laddr, lport, raddr, rport, irs, count, idx))
		return -EINVAL;
	*mss = cookie_mss[idx];
	return 0;
}

uint32_t iwn_syn_cookie_ts_clock(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport,
				 uint32_t raddr, uint16_t rport, uint64_t now)
{
	return (uint32_t)(now / 1000) + iwn_tcp_isn(key, raddr, rport, laddr, lport, 0);
}

uint32_t iwn_syn_cookie_tsval(uint32_t ts_now, const struct iwn_tcp_opts *syn)
{
	uint32_t low = (syn->has_ws ? (syn->ws > IWN_TCP_WS_MAX ? IWN_TCP_WS_MAX : syn->ws) : TS_WS_NONE) |
		       (syn->sack_ok ? TS_SACK : 0);
	uint32_t mask = (1u << IWN_COOKIE_TS_BITS) - 1;
	uint32_t ts = (ts_now & ~mask) | low;
	if (iwn_seq_gt(ts, ts_now))
		ts -= mask + 1; /* our clock never runs backwards for the peer */
	return ts;
}

bool iwn_syn_cookie_ts_decode(uint32_t tsecr, uint32_t ts_now, struct iwn_tcp_opts *syn)
{
	/* Two counter steps in ms, plus the step back of the encoding. */
	uint32_t life_ms = (uint32_t)((2ull << IWN_COOKIE_PERIOD_SHIFT) / 1000) + (1u << IWN_COOKIE_TS_BITS);
	if (iwn_seq_gt(tsecr, ts_now) || ts_now - tsecr > life_ms)
		return false;
	uint32_t ws = tsecr & 0xF;
	if (ws != TS_WS_NONE && ws > IWN_TCP_WS_MAX)
		return false;
	syn->has_ws = ws != TS_WS_NONE;
	syn->ws = syn->has_ws ? (uint8_t)ws : 0;
	syn->sack_ok = tsecr & TS_SACK;
	return true;
}

void iwn_tcp_send_cookie_synack(uint8_t *txbuf, uint32_t headroom, iwn_tcp_out_fn out, void *arg,
				const struct iwn_tcp_cfg *cfg, const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr,
				uint32_t raddr, const struct iwn_tcp_hdr *syn, uint32_t cookie, uint64_t now)
{
	uint8_t *seg = txbuf + headroom;
	struct iwn_tcp_hdr h;
	memset(&h, 0, sizeof(h));
	h.sport = syn->dport;
	h.dport = syn->sport;
	h.seq = cookie;
	h.ack = syn->seq + 1;
	h.flags = IWN_TCP_SYN | IWN_TCP_ACK;
	h.win = (uint16_t)(cfg->rcvbuf > 0xFFFF ? 0xFFFF : cfg->rcvbuf);
	h.opt.has_mss = true;
	h.opt.mss = cfg->mss;
	/* Without timestamps there is nowhere to keep window scale and SACK. */
	if (cfg->timestamps && syn->opt.has_ts) {
		h.opt.has_ts = true;
		uint32_t ts_now = iwn_syn_cookie_ts_clock(key, laddr, syn->dport, raddr, syn->sport, now);
		struct iwn_tcp_opts o = syn->opt;
		o.has_ws = cfg->wscale && syn->opt.has_ws;
		o.sack_ok = cfg->sack && syn->opt.sack_ok;
		h.opt.tsval = iwn_syn_cookie_tsval(ts_now, &o);
		h.opt.tsecr = syn->opt.tsval;
		if (o.has_ws) {
			h.opt.has_ws = true;
			h.opt.ws = iwn_tcp_our_wscale(cfg->rcvbuf);
		}
		h.opt.sack_ok = o.sack_ok;
	}
	size_t hlen = iwn_tcp_build(seg, &h);
	iwn_tcp_set_csum(seg, hlen, laddr, raddr);
	out(arg, NULL, laddr, raddr, seg, (uint32_t)hlen);
}
