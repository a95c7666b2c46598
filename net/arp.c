#include "arp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/iw_bytes.h"

int iwn_arp_parse(const uint8_t *p, size_t len, struct iwn_arp_pkt *a)
{
	if (len < IWN_ARP_LEN)
		return -EINVAL;
	if (iw_get_be16(p + IWN_ARP_OFF_HTYPE) != 1 || iw_get_be16(p + IWN_ARP_OFF_PTYPE) != IWN_ETHERTYPE_IPV4 ||
	    p[IWN_ARP_OFF_HLEN] != IWN_ETH_ALEN || p[IWN_ARP_OFF_PLEN] != 4)
		return -EINVAL;
	a->oper = iw_get_be16(p + IWN_ARP_OFF_OPER);
	if (a->oper != IWN_ARP_REQUEST && a->oper != IWN_ARP_REPLY)
		return -EINVAL;
	memcpy(a->sha, p + IWN_ARP_OFF_SHA, IWN_ETH_ALEN);
	a->spa = iw_get_be32(p + IWN_ARP_OFF_SPA);
	memcpy(a->tha, p + IWN_ARP_OFF_THA, IWN_ETH_ALEN);
	a->tpa = iw_get_be32(p + IWN_ARP_OFF_TPA);
	return 0;
}

void iwn_arp_build(uint8_t *p, const struct iwn_arp_pkt *a)
{
	iw_put_be16(p + IWN_ARP_OFF_HTYPE, 1);
	iw_put_be16(p + IWN_ARP_OFF_PTYPE, IWN_ETHERTYPE_IPV4);
	p[IWN_ARP_OFF_HLEN] = IWN_ETH_ALEN;
	p[IWN_ARP_OFF_PLEN] = 4;
	iw_put_be16(p + IWN_ARP_OFF_OPER, a->oper);
	memcpy(p + IWN_ARP_OFF_SHA, a->sha, IWN_ETH_ALEN);
	iw_put_be32(p + IWN_ARP_OFF_SPA, a->spa);
	memcpy(p + IWN_ARP_OFF_THA, a->tha, IWN_ETH_ALEN);
	iw_put_be32(p + IWN_ARP_OFF_TPA, a->tpa);
}

int iwn_arp_cache_init(struct iwn_arp_cache *c, uint32_t n, uint32_t pending_cap, uint64_t reachable_us,
		       uint64_t retry_us, uint8_t max_tries)
{
	memset(c, 0, sizeof(*c));
	if (n == 0 || max_tries == 0)
		return -EINVAL;
	c->e = calloc(n, sizeof(*c->e));
	if (!c->e)
		return -ENOMEM;
	c->n = n;
	for (uint32_t i = 0; i < n; i++) {
		c->e[i].pending = malloc(pending_cap ? pending_cap : 1);
		if (!c->e[i].pending) {
			iwn_arp_cache_fini(c);
			return -ENOMEM;
		}
	}
	c->pending_cap = pending_cap;
	c->reachable_us = reachable_us;
	c->retry_us = retry_us;
	c->max_tries = max_tries;
	return 0;
}

void iwn_arp_cache_fini(struct iwn_arp_cache *c)
{
	if (c->e)
		for (uint32_t i = 0; i < c->n; i++)
			free(c->e[i].pending);
	free(c->e);
	c->e = NULL;
	c->n = 0;
}

static struct iwn_arp_entry *find(struct iwn_arp_cache *c, uint32_t ip)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->e[i].state != IWN_ARP_FREE && c->e[i].ip == ip)
			return &c->e[i];
	return NULL;
}

static void clear(struct iwn_arp_cache *c, struct iwn_arp_entry *e)
{
	if (e->pending_len)
		c->stats.pending_dropped++;
	e->pending_len = 0;
	e->state = IWN_ARP_FREE;
}

/* A free slot, else the oldest entry not in use, else (only when for a
 * learned neighbour, not for an address still resolving) the least
 * recently used one; NULL when none may go. */
static struct iwn_arp_entry *alloc_entry(struct iwn_arp_cache *c, bool resolving)
{
	struct iwn_arp_entry *idle = NULL, *lru = NULL;
	for (uint32_t i = 0; i < c->n; i++) {
		struct iwn_arp_entry *e = &c->e[i];
		if (e->state == IWN_ARP_FREE)
			return e;
		if (!e->in_use && (!idle || e->used < idle->used))
			idle = e;
		if (!lru || e->used < lru->used)
			lru = e;
	}
	struct iwn_arp_entry *victim = idle ? idle : resolving ? NULL : lru;
	if (!victim)
		return NULL;
	c->stats.evicted++;
	clear(c, victim);
	return victim;
}

const uint8_t *iwn_arp_lookup(struct iwn_arp_cache *c, uint32_t ip, uint64_t now)
{
	struct iwn_arp_entry *e = find(c, ip);
	if (!e || e->state != IWN_ARP_REACHABLE || now >= e->deadline)
		return NULL;
	e->used = now;
	e->in_use = true;
	return e->mac;
}

void iwn_arp_learn(struct iwn_arp_cache *c, uint32_t ip, const uint8_t mac[IWN_ETH_ALEN], uint64_t now,
		   bool create, uint8_t **frame, uint32_t *len)
{
	*frame = NULL;
	*len = 0;
	struct iwn_arp_entry *e = find(c, ip);
	if (!e) {
		if (!create)
			return;
		e = alloc_entry(c, false);
		e->ip = ip;
		e->pending_len = 0;
		e->in_use = false;
	}
	memcpy(e->mac, mac, IWN_ETH_ALEN);
	e->state = IWN_ARP_REACHABLE;
	e->deadline = now + c->reachable_us;
	uint64_t win = c->retry_us * c->max_tries;
	e->refresh_at = c->reachable_us > win ? e->deadline - win : now;
	e->used = now;
	e->learned = now;
	e->tries = 0;
	c->stats.learned++;
	if (e->pending_len) {
		e->in_use = true; /* we were waiting to send to it */
		*frame = e->pending;
		*len = e->pending_len;
		e->pending_len = 0;
	}
}

int iwn_arp_enqueue(struct iwn_arp_cache *c, uint32_t ip, const uint8_t *frame, uint32_t len, uint64_t now)
{
	if (len > c->pending_cap)
		return -EMSGSIZE;
	int send = 0;
	struct iwn_arp_entry *e = find(c, ip);
	if (!e || e->state != IWN_ARP_INCOMPLETE) {
		/* A stale reachable entry is re-resolved in place. */
		if (!e) {
			e = alloc_entry(c, true);
			if (!e) {
				c->stats.no_room++;
				return -ENOBUFS;
			}
			e->in_use = false;
		}
		e->ip = ip;
		e->state = IWN_ARP_INCOMPLETE;
		e->pending_len = 0;
		e->tries = 1;
		e->deadline = now + c->retry_us;
		send = 1;
	}
	if (e->pending_len)
		c->stats.pending_dropped++;
	memcpy(e->pending, frame, len);
	e->pending_len = len;
	e->used = now;
	if (send)
		c->stats.requests_sent++;
	return send;
}

static bool wants_refresh(const struct iwn_arp_entry *e)
{
	return e->state == IWN_ARP_REACHABLE && e->used > e->learned && e->refresh_at < e->deadline;
}

uint64_t iwn_arp_next_deadline(const struct iwn_arp_cache *c)
{
	uint64_t d = UINT64_MAX;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct iwn_arp_entry *e = &c->e[i];
		if (e->state == IWN_ARP_FREE)
			continue;
		uint64_t t = wants_refresh(e) ? e->refresh_at : e->deadline;
		if (t < d)
			d = t;
	}
	return d;
}

void iwn_arp_timers(struct iwn_arp_cache *c, uint64_t now, void (*request)(void *arg, uint32_t ip), void *arg)
{
	for (uint32_t i = 0; i < c->n; i++) {
		struct iwn_arp_entry *e = &c->e[i];
		if (e->state == IWN_ARP_FREE)
			continue;
		if (now < e->deadline) {
			if (wants_refresh(e) && now >= e->refresh_at) {
				e->refresh_at = now + c->retry_us;
				c->stats.requests_sent++;
				c->stats.refreshes++;
				request(arg, e->ip);
			}
			continue;
		}
		if (e->state == IWN_ARP_REACHABLE) {
			clear(c, e);
		} else if (e->tries >= c->max_tries) {
			c->stats.resolve_failed++;
			clear(c, e);
		} else {
			e->tries++;
			e->deadline = now + c->retry_us;
			c->stats.requests_sent++;
			request(arg, e->ip);
		}
	}
}
