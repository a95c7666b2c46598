/* IWARP_STATS=FILE: at exit, one line of libiwarp's counters for this
 * process appended to FILE (QPs made, FPDUs and bytes on the wire,
 * payload placed), summed over every QP the program had, destroyed or
 * not. It is how a test proves that a program's traffic (an MPI job
 * through libfabric) really went through libiwarp and not through a
 * shared-memory or TCP fallback. One write(2) with O_APPEND per process,
 * so the ranks of a job can share the file. */
#include "iwabi.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_qp_stats gone; /* QPs destroyed so far */
static uint64_t qps_made, conns;

void iwabi_stats_qp_made(void)
{
	pthread_mutex_lock(&lock);
	qps_made++;
	pthread_mutex_unlock(&lock);
}

void iwabi_stats_add(struct iw_qp_stats *to, const struct iw_qp_stats *s)
{
	to->fpdus_tx += s->fpdus_tx;
	to->fpdus_rx += s->fpdus_rx;
	to->bytes_tx += s->bytes_tx;
	to->bytes_rx += s->bytes_rx;
	to->bytes_placed += s->bytes_placed;
	to->tx_syscalls += s->tx_syscalls;
	to->rx_syscalls += s->rx_syscalls;
}

void iwabi_stats_qp_gone(const struct iw_qp_stats *s)
{
	pthread_mutex_lock(&lock);
	iwabi_stats_add(&gone, s);
	if (s->fpdus_tx || s->fpdus_rx)
		conns++;
	pthread_mutex_unlock(&lock);
}

/* The line for totals t (exposed for the unit test). */
int iwabi_stats_format(char *buf, size_t len, long pid, bool raw, uint64_t qps, uint64_t active,
		       const struct iw_qp_stats *t)
{
	return snprintf(buf, len,
			"iwarp-stats pid=%ld transport=%s qps=%" PRIu64 " qps_with_traffic=%" PRIu64 " fpdus_tx=%" PRIu64
			" fpdus_rx=%" PRIu64 " bytes_tx=%" PRIu64 " bytes_rx=%" PRIu64 " bytes_placed=%" PRIu64 "\n",
			pid, raw ? "raw" : "kernel", qps, active, t->fpdus_tx, t->fpdus_rx, t->bytes_tx, t->bytes_rx, t->bytes_placed);
}

/* Also callable by tests before exit. 0, or -1 when FILE cannot be
 * written (a message on stderr). */
int iwabi_stats_write(const char *path)
{
	struct iw_qp_stats t;
	uint64_t qps, active;
	pthread_mutex_lock(&lock);
	t = gone;
	qps = qps_made;
	active = conns;
	pthread_mutex_unlock(&lock);
	active += iwabi_qp_stats_sum_live(&t);
	char line[512];
	int n = iwabi_stats_format(line, sizeof(line), (long)getpid(), iwabi_engine_raw_ip() != NULL, qps, active,
				   &t);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || n <= 0 || write(fd, line, (size_t)n) != n) {
		fprintf(stderr, "libiwarp: IWARP_STATS=%s: cannot write the counters\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

__attribute__((destructor)) static void stats_at_exit(void)
{
	const char *path = getenv("IWARP_STATS");
	if (path && *path)
		(void)iwabi_stats_write(path);
}
