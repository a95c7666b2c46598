/* Runs a Check suite the way every test program here does. */
#ifndef IWT_CHECK_H
#define IWT_CHECK_H

#include <check.h>

/* Runs s (forking per test unless CK_FORK=no) and returns the process
 * exit status: EXIT_SUCCESS when nothing failed. Frees the suite. */
int iwt_run_suite(Suite *s);

#endif
