/* Names for completion statuses. */
#include <iwarp/verbs.h>

const char *iw_wc_status_str(enum iw_wc_status s)
{
	switch (s) {
	case IW_WC_SUCCESS:
		return "success";
	case IW_WC_LOC_LEN_ERR:
		return "local length error";
	case IW_WC_LOC_PROT_ERR:
		return "local protection error";
	case IW_WC_LOC_QP_OP_ERR:
		return "local QP operation error";
	case IW_WC_WR_FLUSH_ERR:
		return "work request flushed";
	case IW_WC_REM_ACCESS_ERR:
		return "remote access error";
	case IW_WC_REM_OP_ERR:
		return "remote operation error";
	case IW_WC_REM_INV_REQ_ERR:
		return "remote invalid request error";
	case IW_WC_FATAL_ERR:
		return "fatal error";
	}
	return "unknown status";
}
