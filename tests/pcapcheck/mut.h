/* The mutations of pcapmut (see its usage and README.md), as a library so
 * that tests can drive them on damaged captures too. */
#ifndef PCAPCHECK_MUT_H
#define PCAPCHECK_MUT_H

#include <stdbool.h>
#include <stddef.h>

#include "pcw.h"

enum mut {
	M_FLIP, M_MSN, M_MO, M_DDPV, M_RDMAPV, M_OPCODE, M_ULPDU, M_TRUNC, M_RR2W, M_MARKER, M_COUNT,
};

extern const char *const mut_names[M_COUNT];

/* The selected FPDU. */
struct sel {
	struct pcw_cap cap;
	int ci, dir;
	struct pcw_conn *c;
	struct pcw_dir *d;
	struct pcw_fpdu *f;
	size_t fi;
	size_t at_pkt; /* packet index where the damage shows */
};

/* Select in s->cap: connection conn (1-based, 0 = the first MPA connection
 * holding such an FPDU), direction "A>B"/"B>A", the nth FPDU with opcode
 * op (-1 any). Returns 0 or -1 with err. */
int mut_find(struct sel *s, int conn, const char *dir, int op, unsigned nth, char *err, size_t errlen);

/* Apply m (with value v when have_v) to the selected FPDU, in the
 * capture's packets. Returns 0 with a description in msg, or -1 with err
 * when the mutation does not apply to this FPDU. */
int mut_apply(struct sel *s, enum mut m, bool have_v, long long v, char *msg, size_t msglen, char *err,
	      size_t errlen);

/* Frame number of packet idx in the written capture (dropped packets do
 * not count). */
size_t mut_out_frame(const struct pcw_cap *cap, size_t idx);

#endif
