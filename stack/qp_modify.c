/* Application-driven QP state changes (verbs' modify to ERROR). Kept
 * apart from qp.c: only the QP's public state and its deferred-work
 * entry points are used. */
#include "internal.h"

#include <errno.h>

int iw_qp_to_error(struct iw_qp *qp)
{
	if (!qp)
		return -EINVAL;
	iw_ctx_lock(qp->ctx);
	if (iw_qp_may(qp, IW_QP_ST_ERROR)) {
		/* Asked for, not caused: no Terminate cause, no WR to blame. */
		iw_qp_transition(qp, IW_QP_ST_ERROR, "iw_qp_to_error");
		qp->error_local = true;
	}
	/* A connection still in its MPA exchange fails (-ECANCELED). */
	if (!qp->connected)
		iw_cm_qp_gone(qp);
	/* Abortive close (RST, as siw does on a QP moved to error), then
	 * every outstanding WR completes with IW_WC_WR_FLUSH_ERR. */
	iw_qp_defer(qp, IW_QPW_ABORT | IW_QPW_FLUSH);
	iw_ctx_unlock(qp->ctx);
	return 0;
}
