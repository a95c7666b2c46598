/* The QP state machine: the one place qp->st changes. Each change is
 * checked against the table of legal edges and, with IWARP_DEBUG set in
 * the environment, written to stderr as one line, so a QP's life can be
 * followed without a debugger. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define EDGE(to) (1u << (to))

/* edges[from]: the states a QP in from may move to. */
static const unsigned edges[IW_QP_ST_COUNT] = {
	/* connected; or moved to error before (or while) the CM connects */
	[IW_QP_ST_IDLE] = EDGE(IW_QP_ST_RTS) | EDGE(IW_QP_ST_ERROR),
	/* disconnect asked; a Terminate, a lost stream or completion, or
	 * asked for; the peer closed between messages */
	[IW_QP_ST_RTS] = EDGE(IW_QP_ST_CLOSING) | EDGE(IW_QP_ST_ERROR) | EDGE(IW_QP_ST_CLOSED),
	/* the same errors while draining; drained, drain timed out, or the
	 * peer closed first */
	[IW_QP_ST_CLOSING] = EDGE(IW_QP_ST_ERROR) | EDGE(IW_QP_ST_CLOSED),
	/* ERROR and CLOSED are final: the QP is destroyed from there */
	[IW_QP_ST_ERROR] = 0,
	[IW_QP_ST_CLOSED] = 0,
};

static const char *const names[IW_QP_ST_COUNT] = {
	[IW_QP_ST_IDLE] = "IDLE",   [IW_QP_ST_RTS] = "RTS",       [IW_QP_ST_CLOSING] = "CLOSING",
	[IW_QP_ST_ERROR] = "ERROR", [IW_QP_ST_CLOSED] = "CLOSED",
};

static bool debug_on;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void debug_init(void)
{
	const char *v = getenv("IWARP_DEBUG");
	debug_on = v && *v && !(v[0] == '0' && v[1] == '\0');
}

static void debug_line(const struct iw_qp *qp, enum iw_qp_st from, enum iw_qp_st to, const char *verdict,
		       const char *why)
{
	pthread_once(&debug_once, debug_init);
	if (debug_on)
		fprintf(stderr, "iwarp: qp %p: %s -> %s%s (%s)\n", (const void *)qp, iw_qp_st_name(from),
			iw_qp_st_name(to), verdict, why ? why : "?");
}

const char *iw_qp_st_name(enum iw_qp_st st)
{
	return (unsigned)st < IW_QP_ST_COUNT ? names[st] : "?";
}

bool iw_qp_edge_legal(enum iw_qp_st from, enum iw_qp_st to)
{
	return (unsigned)from < IW_QP_ST_COUNT && (unsigned)to < IW_QP_ST_COUNT && (edges[from] & EDGE(to));
}

bool iw_qp_may(const struct iw_qp *qp, enum iw_qp_st to)
{
	return iw_qp_edge_legal(qp->st, to);
}

int iw_qp_transition(struct iw_qp *qp, enum iw_qp_st to, const char *why)
{
	enum iw_qp_st from = qp->st;

	if (!iw_qp_edge_legal(from, to)) {
		/* A caller bug, not a peer's doing: the state stays. */
		debug_line(qp, from, to, " refused", why);
		return -EINVAL;
	}
	qp->st = to;
	debug_line(qp, from, to, "", why);
	return 0;
}

enum iw_qp_state iw_qp_public_state(enum iw_qp_st st)
{
	switch (st) {
	case IW_QP_ST_IDLE:
		return IW_QPS_INIT;
	case IW_QP_ST_RTS:
	case IW_QP_ST_CLOSING:
		return IW_QPS_RTS; /* still delivering what was posted */
	case IW_QP_ST_CLOSED:
		return IW_QPS_CLOSED;
	case IW_QP_ST_ERROR:
	case IW_QP_ST_COUNT:
		break;
	}
	return IW_QPS_ERROR;
}
