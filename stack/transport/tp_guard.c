/* The transports' re-entrancy guard: see tp_guard.h. */
#include "tp_guard.h"

enum { SHUT_NONE = 0, SHUT_GRACEFUL = 1, SHUT_ABORT = 2 };

bool iw_tp_guard_leave(struct iw_tp_guard *g, const struct iw_tp_guard_ops *ops, void *t)
{
	if (g->depth > 1) {
		g->depth--;
		return true;
	}
	for (;;) {
		if (g->destroy_req) {
			ops->free(t);
			return false;
		}
		if (g->shut_req) {
			int s = g->shut_req;
			g->shut_req = SHUT_NONE;
			ops->shutdown(t, s == SHUT_ABORT);
			continue;
		}
		if (g->kick_req) {
			g->kick_req = false;
			ops->tx(t);
			continue;
		}
		break;
	}
	g->depth = 0;
	return true;
}

bool iw_tp_guard_defer_kick(struct iw_tp_guard *g)
{
	if (!g->depth)
		return false;
	g->kick_req = true;
	return true;
}

bool iw_tp_guard_defer_shutdown(struct iw_tp_guard *g, bool abortive)
{
	if (!g->depth)
		return false;
	int want = abortive ? SHUT_ABORT : SHUT_GRACEFUL;
	if (want > g->shut_req)
		g->shut_req = want;
	return true;
}

bool iw_tp_guard_defer_destroy(struct iw_tp_guard *g)
{
	if (!g->depth)
		return false;
	g->destroy_req = true;
	return true;
}
