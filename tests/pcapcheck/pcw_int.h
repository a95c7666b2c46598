/* pcw internals shared between its source files. */
#ifndef PCW_INT_H
#define PCW_INT_H

#include "pcw.h"

/* Fill p's TCP fields from its bytes for link type dlt (p->tcp false when
 * the packet is not TCP over IPv4/IPv6 or is malformed). */
void pcw_parse(int dlt, struct pcw_pkt *p);

#endif
