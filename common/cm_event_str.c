/* Names of CM event types, for logs and error messages. */
#include <iwarp/cm.h>

const char *iw_cm_event_str(enum iw_cm_event_type t)
{
	switch (t) {
	case IW_CM_EVENT_CONNECT_REQUEST: return "CONNECT_REQUEST";
	case IW_CM_EVENT_ESTABLISHED: return "ESTABLISHED";
	case IW_CM_EVENT_REJECTED: return "REJECTED";
	case IW_CM_EVENT_DISCONNECTED: return "DISCONNECTED";
	case IW_CM_EVENT_CONNECT_ERROR: return "CONNECT_ERROR";
	case IW_CM_EVENT_TIMEWAIT_EXIT: return "TIMEWAIT_EXIT";
	}
	return "unknown CM event";
}
