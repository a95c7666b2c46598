/* Names the library gives to things (common/): CM event types and
 * Terminate causes, "no cause" included (issue 17). */
#include <check.h>
#include <string.h>

#include <iwarp/cm.h>
#include <iwarp/term.h>

#include "iwt_check.h"

START_TEST(cm_event_names)
{
	static const struct {
		enum iw_cm_event_type t;
		const char *name;
	} all[] = {
		{ IW_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST" },
		{ IW_CM_EVENT_ESTABLISHED, "ESTABLISHED" },
		{ IW_CM_EVENT_REJECTED, "REJECTED" },
		{ IW_CM_EVENT_DISCONNECTED, "DISCONNECTED" },
		{ IW_CM_EVENT_CONNECT_ERROR, "CONNECT_ERROR" },
		{ IW_CM_EVENT_TIMEWAIT_EXIT, "TIMEWAIT_EXIT" },
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		ck_assert_str_eq(iw_cm_event_str(all[i].t), all[i].name);
	ck_assert_str_eq(iw_cm_event_str((enum iw_cm_event_type)0), "unknown CM event");
	ck_assert_str_eq(iw_cm_event_str((enum iw_cm_event_type)99), "unknown CM event");
}
END_TEST

START_TEST(no_cause_is_not_local_catastrophic)
{
	struct iw_term_cause zero = { 0 };
	struct iw_term_cause cata = IW_TERM_CAUSE(IW_LAYER_RDMAP, IW_ETYPE_RDMAP_LOCAL_CATA, 0x00);

	ck_assert(!iw_term_cause_is_set(zero));
	ck_assert(!iw_term_cause_is_set(IW_TERM_CAUSE_NONE));
	ck_assert(iw_term_cause_eq(zero, IW_TERM_CAUSE_NONE));
	ck_assert(iw_term_cause_is_set(cata));
	ck_assert(!iw_term_cause_eq(zero, cata));
	ck_assert_str_eq(iw_term_cause_str(zero), "no cause");
	ck_assert_str_eq(iw_term_cause_str(cata), "RDMAP local catastrophic error");
	ck_assert_str_eq(iw_term_cause_str(IW_TERM_CAUSE(1, 1, 0)), "DDP tagged buffer: invalid STag");
	ck_assert_str_eq(iw_term_cause_str(IW_TERM_CAUSE(9, 9, 9)), "unknown layer");
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, cm_event_names);
	tcase_add_test(tc, no_cause_is_not_local_catastrophic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return iwt_run_suite(names_suite());
}
