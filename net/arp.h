/* ARP for IPv4 over Ethernet (RFC 826): the packet codec and a fixed-size
 * neighbour cache with timeouts that holds one frame per unresolved
 * destination. No I/O: the owner sends what the calls ask for.
 * Eviction when full: entries never used to send (incomplete ones, or
 * learned from a request nobody answered) go first, oldest first; a
 * neighbour in use goes only for another learned neighbour (LRU), never
 * for an address still resolving. So spoofed sources on the link churn
 * among themselves and cannot push out peers we talk to. */
#ifndef IWN_ARP_H
#define IWN_ARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eth.h"

#define IWN_ARP_OFF_HTYPE 0
#define IWN_ARP_OFF_PTYPE 2
#define IWN_ARP_OFF_HLEN 4
#define IWN_ARP_OFF_PLEN 5
#define IWN_ARP_OFF_OPER 6
#define IWN_ARP_OFF_SHA 8
#define IWN_ARP_OFF_SPA 14
#define IWN_ARP_OFF_THA 18
#define IWN_ARP_OFF_TPA 24
#define IWN_ARP_LEN 28
_Static_assert(IWN_ARP_OFF_TPA + 4 == IWN_ARP_LEN, "ARP for IPv4/Ethernet is 28 bytes");

#define IWN_ARP_REQUEST 1
#define IWN_ARP_REPLY 2

struct iwn_arp_pkt {
	uint16_t oper;
	uint8_t sha[IWN_ETH_ALEN];
	uint32_t spa; /* IPv4 addresses in host order */
	uint8_t tha[IWN_ETH_ALEN];
	uint32_t tpa;
};

/* 0, or -EINVAL: short, or not Ethernet/IPv4 (htype 1, ptype 0x0800,
 * lengths 6/4), or an unknown operation. */
int iwn_arp_parse(const uint8_t *p, size_t len, struct iwn_arp_pkt *a);
/* Writes IWN_ARP_LEN bytes. */
void iwn_arp_build(uint8_t *p, const struct iwn_arp_pkt *a);

/* ---- neighbour cache ---- */

enum { IWN_ARP_FREE = 0, IWN_ARP_INCOMPLETE, IWN_ARP_REACHABLE };

struct iwn_arp_entry {
	uint32_t ip;
	uint8_t mac[IWN_ETH_ALEN];
	uint8_t state;
	uint8_t tries;       /* requests sent while incomplete */
	uint64_t deadline;   /* reachable: expiry; incomplete: next request */
	uint64_t used;       /* last use, for eviction */
	uint64_t learned;    /* when it was (re)confirmed */
	uint64_t refresh_at; /* reachable and in use: ask again from here on */
	bool in_use;         /* looked up to send since it was created */
	uint8_t *pending;    /* one queued frame (pending_cap bytes) */
	uint32_t pending_len; /* 0: none */
};

struct iwn_arp_stats {
	uint64_t requests_sent, replies_sent, learned, resolve_failed, pending_dropped, evicted, refreshes;
	uint64_t no_room; /* frames for a new address dropped: every entry was in use */
};

struct iwn_arp_cache {
	struct iwn_arp_entry *e;
	uint32_t n;
	uint32_t pending_cap;
	uint64_t reachable_us; /* how long a learned entry lives */
	uint64_t retry_us;     /* between requests for an incomplete entry */
	uint8_t max_tries;     /* requests before giving up */
	struct iwn_arp_stats stats;
};

/* Allocates n entries, each with a pending_cap-byte frame slot. */
int iwn_arp_cache_init(struct iwn_arp_cache *c, uint32_t n, uint32_t pending_cap, uint64_t reachable_us,
		       uint64_t retry_us, uint8_t max_tries);
void iwn_arp_cache_fini(struct iwn_arp_cache *c);

/* The MAC for ip when a live entry exists, else NULL. */
const uint8_t *iwn_arp_lookup(struct iwn_arp_cache *c, uint32_t ip, uint64_t now);
/* Learn ip -> mac. Existing entries are always refreshed; a new one is
 * created only when create is set (RFC 826: the request was for us).
 * When an incomplete entry resolves and holds a frame, its bytes are
 * returned through frame and len (valid until the next cache call) with the
 * entry marked empty: the caller fills in the destination and sends. */
void iwn_arp_learn(struct iwn_arp_cache *c, uint32_t ip, const uint8_t mac[IWN_ETH_ALEN], uint64_t now,
		   bool create, uint8_t **frame, uint32_t *len);
/* Queue a frame for an unresolved ip, replacing any older one (counted as
 * dropped). Returns 1 when the caller should send a request now (new
 * entry), 0 when one is already outstanding, -EMSGSIZE when the frame is
 * larger than a slot, -ENOBUFS when every entry is a neighbour in use
 * (the frame is dropped: unresolved, maybe spoofed, addresses never
 * push out neighbours we talk to). */
int iwn_arp_enqueue(struct iwn_arp_cache *c, uint32_t ip, const uint8_t *frame, uint32_t len, uint64_t now);
/* Earliest deadline of any entry, UINT64_MAX when none. */
uint64_t iwn_arp_next_deadline(const struct iwn_arp_cache *c);
/* Expire entries and schedule retries. For each address that needs a
 * request now, request(arg, ip) is called. An entry used since it was
 * learned is refreshed before it expires: requests start retry_us *
 * max_tries before expiry while the old address stays in use, so a busy
 * flow never waits for resolution. */
void iwn_arp_timers(struct iwn_arp_cache *c, uint64_t now, void (*request)(void *arg, uint32_t ip), void *arg);

#endif
