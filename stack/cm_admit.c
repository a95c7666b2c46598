/* Admission of passive connections: who may wait in a listener's backlog
 * for its MPA Request, and who goes when it is full.
 *
 * An idle-connection or slow-MPA flood must not lock legitimate clients
 * out (the kernel's SYN cookies and nginx's eviction of idle pre-request
 * connections are the models). So a newcomer that finds the backlog (or
 * its own address's share of it) full evicts the oldest connection that
 *  - has not completed its MPA Request (a received Request is the
 *    application's to answer and is never evicted),
 *  - is older than IW_CM_EVICT_GRACE_MS (a burst of legitimate connects
 *    is accepted in one loop before any Request is read), and
 *  - has no unread bytes waiting: a candidate's waiting bytes are read
 *    first (its Request may be complete and just not read yet: the
 *    progress loop takes new connections before it reads old ones, and
 *    a server short of CPU falls behind), and it stays a candidate only
 *    if they are not a whole Request,
 * preferring one that has sent nothing. Failing that, a connection whose
 * peer already closed or reset it goes, whatever its age. Failing that,
 * when one address holds more than half of the pending connections, a
 * newcomer from another address evicts that address's oldest (otherwise
 * evictable) one regardless of age: one attacker that refills its own
 * connections as fast as they are evicted (each under the grace) would
 * else keep everyone else out. Only if there is none
 * is the newcomer refused. A connection that sends no byte at all goes
 * after the silent deadline, shorter than the Request deadline. */
#include "cm_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

/* Candidates whose unread bytes are checked per admission, at most: each
 * check is a syscall on the kernel transport. */
#define ADMIT_MAX_PROBES 8

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return false;
}

static bool from(const struct iw_cm_id *c, const struct sockaddr_storage *peer)
{
	return !peer || (c->has_peer && same_host(&c->peer, peer));
}

static uint32_t pending_from(const struct iw_cm_id *l, const struct sockaddr_storage *peer)
{
	uint32_t n = 0;

	for (const struct iw_cm_id *c = l->children; c; c = c->sib_next)
		n += from(c, peer);
	return n;
}

/* The oldest evictable child (from peer, NULL: any) among those that have
 * sent nothing (silent) or that have sent part of a Request. */
static struct iw_cm_id *oldest(struct iw_cm_id *l, const struct sockaddr_storage *peer, uint64_t now_ms,
			       bool silent, bool grace)
{
	struct iw_cm_id *best = NULL;

	for (struct iw_cm_id *c = l->children; c; c = c->sib_next) {
		if (c->state != CM_WAIT_REQUEST || c->unread || !from(c, peer) ||
		    (grace && now_ms - c->born_ms < IW_CM_EVICT_GRACE_MS) || (c->in_len == 0) != silent)
			continue;
		if (!best || c->born_ms < best->born_ms)
			best = c;
	}
	return best;
}

static struct iw_cm_id *victim(struct iw_cm_id *l, const struct sockaddr_storage *peer, uint64_t now_ms,
			       bool grace)
{
	int probes = 0;

	for (int pass = 0; pass < 2; pass++) {
		struct iw_cm_id *c;
		while (probes < ADMIT_MAX_PROBES && (c = oldest(l, peer, now_ms, pass == 0, grace)) != NULL) {
			probes++;
			/* < 0: the peer already closed or reset it (a
			 * connect-then-RST storm), the cheapest victim. */
			if (c->conn->ops->pending(c->conn) <= 0)
				return c;
			/* Bytes waiting: read them rather than guess. A whole
			 * Request (or a failure, which frees c) takes it out of
			 * the candidates; a part of one leaves it one. */
			if (!cm_read_request(c))
				continue;
			if (c->conn->ops->pending(c->conn) <= 0)
				return c;
			c->unread = true; /* cleared when its bytes are read */
		}
	}
	return NULL;
}

/* A pending child whose peer already closed or reset it (a
 * connect-then-RST storm), whatever its age: it needs no protection. */
static struct iw_cm_id *dead_child(struct iw_cm_id *l)
{
	int probes = 0;

	for (struct iw_cm_id *c = l->children; c && probes < ADMIT_MAX_PROBES; c = c->sib_next) {
		if (c->state != CM_WAIT_REQUEST || c->unread)
			continue;
		probes++;
		if (c->conn->ops->pending(c->conn) < 0)
			return c;
	}
	return NULL;
}

/* The address holding more than half of the pending children, if one does
 * (Boyer-Moore majority vote, then a count). */
static const struct sockaddr_storage *majority(const struct iw_cm_id *l)
{
	const struct sockaddr_storage *cand = NULL;
	uint32_t votes = 0, n = 0;

	for (const struct iw_cm_id *c = l->children; c; c = c->sib_next) {
		if (!c->has_peer)
			continue;
		n++;
		if (votes == 0) {
			cand = &c->peer;
			votes = 1;
		} else if (same_host(cand, &c->peer)) {
			votes++;
		} else {
			votes--;
		}
	}
	return cand && 2 * pending_from(l, cand) > n ? cand : NULL;
}

int cm_admit(struct iw_cm_id *l, const struct sockaddr_storage *peer, uint64_t now_ms,
	     struct iw_cm_id **out)
{
	*out = NULL;
	if (peer && pending_from(l, peer) >= l->per_source_max) {
		*out = victim(l, peer, now_ms, true);
		if (!*out) {
			l->stats.refused_source++;
			return -ECONNREFUSED;
		}
		l->stats.evicted_source++;
		return 0; /* the eviction frees a place in the backlog too */
	}
	if (l->n_pending < (uint32_t)l->backlog)
		return 0;
	*out = victim(l, NULL, now_ms, true);
	if (!*out)
		*out = dead_child(l);
	if (*out) {
		l->stats.evicted_backlog++;
		return 0;
	}
	const struct sockaddr_storage *heavy = majority(l);
	if (heavy && !(peer && same_host(heavy, peer)))
		*out = victim(l, heavy, now_ms, false);
	if (!*out) {
		l->stats.refused_backlog++;
		return -ECONNREFUSED;
	}
	l->stats.evicted_majority++;
	return 0;
}

uint32_t cm_admit_first_timer(const struct iw_cm_id *c)
{
	const struct iw_cm_id *l = c->listener;

	return l->silent_timeout_ms < l->req_timeout_ms ? l->silent_timeout_ms : l->req_timeout_ms;
}

bool cm_admit_deadline(struct iw_cm_id *c, uint64_t now_ms)
{
	struct iw_cm_id *l = c->listener;
	uint64_t end;

	if (!l)
		return true;
	end = c->born_ms + l->req_timeout_ms;
	/* Bytes waiting unread (a stalled progress loop) are not silence. */
	if (c->in_len == 0 && now_ms < end && c->conn->ops->pending(c->conn) == 0) {
		l->stats.timeout_silent++;
		return true;
	}
	if (now_ms >= end) {
		l->stats.timeout_request++;
		return true;
	}
	iw_ctx_timer_arm(c->ctx, &c->timer, end - now_ms);
	return false;
}

int iw_cm_listen_stats(const struct iw_cm_id *id, struct iw_listen_stats *out)
{
	int rc = -EINVAL;

	if (!id || !out)
		return -EINVAL;
	iw_ctx_lock(id->ctx);
	if (id->state == CM_LISTEN) {
		*out = id->stats;
		out->pending = id->n_pending;
		rc = 0;
	}
	iw_ctx_unlock(id->ctx);
	return rc;
}
