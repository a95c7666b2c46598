/* The transports' re-entrancy guard. A transport's own steps (reading,
 * writing, timers) run QP code that may kick, shut down or even destroy
 * that transport; such calls made inside a step are recorded and run when
 * the outermost step unwinds: destroy first, then a shutdown (the
 * strongest asked), then a kick, until none is left. */
#ifndef IW_TP_GUARD_H
#define IW_TP_GUARD_H

#include <stdbool.h>

struct iw_tp_guard {
	int depth;
	bool kick_req, destroy_req;
	int shut_req; /* 0 none, 1 graceful, 2 abortive */
};

/* What unwinding runs, on the transport t given to iw_tp_guard_leave. */
struct iw_tp_guard_ops {
	void (*tx)(void *t);
	void (*shutdown)(void *t, bool abortive);
	void (*free)(void *t);
};

static inline void iw_tp_guard_enter(struct iw_tp_guard *g)
{
	g->depth++;
}

/* Unwind one level. Returns false when t was freed. */
bool iw_tp_guard_leave(struct iw_tp_guard *g, const struct iw_tp_guard_ops *ops, void *t);

/* For the transport ops: inside a step the call is only recorded (true);
 * false: the caller runs it now, as a step of its own. */
bool iw_tp_guard_defer_kick(struct iw_tp_guard *g);
bool iw_tp_guard_defer_shutdown(struct iw_tp_guard *g, bool abortive);
bool iw_tp_guard_defer_destroy(struct iw_tp_guard *g);

#endif
