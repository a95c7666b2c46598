/* Running the iwdump under test and looking at what it printed, plus
 * rewriting a pcap into other link types or from a later packet on. */
#ifndef IWD_RUN_H
#define IWD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The iwdump binary (argv[1] of the test program). */
void iwd_set_prog(const char *path);

/* name inside the test output directory (IWD_TEST_OUTDIR). */
void iwd_path(char *buf, size_t cap, const char *name);

/* Run iwdump with args (NULL-terminated, may be NULL) and then the pcap
 * `pcap_name`; stdout is kept as out_name in the output directory and
 * returned in *out (malloc'd, NUL-terminated). Returns the exit status
 * (-1 if it did not exit normally). */
int iwd_run(const char *pcap_name, const char *const *args, const char *out_name, char **out);

/* Whether the output holds this exact line. */
bool iwd_has_line(const char *out, const char *line);
/* Lines starting with prefix. */
int iwd_count_prefix(const char *out, const char *prefix);
/* The FPDU and MSG lines with " frame N" and " time T" removed (malloc'd):
 * what must not change when only the TCP segmentation does. */
char *iwd_decoded_lines(const char *out);

/* Copy src_name to dst_name from packet first (1-based) on, rewriting
 * each Ethernet frame for link type dlt (DLT_EN10MB, DLT_LINUX_SLL,
 * DLT_LINUX_SLL2, DLT_RAW); vlan adds an 802.1Q tag (Ethernet only). */
void iwd_pcap_convert(const char *src_name, const char *dst_name, int dlt, bool vlan, uint64_t first);

/* Copy src_name to dst_name with random damage (seeded by *rng): bit
 * flips anywhere in a frame, frames cut short, dropped or repeated. */
void iwd_pcap_mutate(const char *src_name, const char *dst_name, uint64_t *rng);

#endif
