/* Running tshark from a Check test and reading its PDML output: the FPDUs
 * the iwarp_mpa / iwarp_ddp_rdmap dissectors found, with their CRC verdict
 * (only available as label text), plus checksum and expert summaries.
 * Failures to run tshark fail the calling test. */
#ifndef TSHARK_RUN_H
#define TSHARK_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TS_MAX_FPDU 512
#define TS_PI_NOTE 0x00400000ul /* Wireshark's expert severity "Note" */

/* Fields seen in a decoded FPDU (ts_fpdu.have). */
enum {
	TS_F_ULPDU = 1u << 0,
	TS_F_CRC = 1u << 1,
	TS_F_T = 1u << 2,
	TS_F_L = 1u << 3,
	TS_F_STAG = 1u << 4,
	TS_F_TO = 1u << 5,
	TS_F_QN = 1u << 6,
	TS_F_MSN = 1u << 7,
	TS_F_MO = 1u << 8,
	TS_F_OP = 1u << 9,
	TS_F_INV = 1u << 10,
	TS_F_SINKSTAG = 1u << 11,
	TS_F_SINKTO = 1u << 12,
	TS_F_RDSZ = 1u << 13,
	TS_F_SRCSTAG = 1u << 14,
	TS_F_SRCTO = 1u << 15,
	TS_F_TLAYER = 1u << 16,
	TS_F_TETYPE = 1u << 17,
	TS_F_TECODE = 1u << 18,
};

/* One FPDU as tshark decoded it. */
struct ts_fpdu {
	int dir; /* 0: from port_a, 1: from port_b, -1: other */
	unsigned frame;
	unsigned have;
	bool crc_good;
	uint64_t ulpdu_len, tagged, last, stag, to, qn, msn, mo, opcode, inval;
	uint64_t sinkstag, sinkto, rdsz, srcstag, srcto, tlayer, tetype, tecode;
};

/* An MPA Request or Reply as tshark decoded it. */
struct ts_mpa_frame {
	unsigned frame;
	uint64_t m, c, r, rev, pd_len;
};

struct ts_result {
	struct ts_fpdu f[TS_MAX_FPDU];
	int n;
	int n_req, n_rep; /* MPA Request / Reply frames */
	struct ts_mpa_frame req, rep; /* the last of each */
	int malformed;
	int expert_bad; /* expert items above "Note", except the known one */
	char expert_msg[256];
	int cksum_good, cksum_other; /* IPv4 / TCP checksum verdicts */
	int packets;
};

/* Output directory: $IWT_TSHARK_OUTDIR, else the compiled-in default. */
const char *ts_outdir(void);
/* outdir/name into buf. */
void ts_path(char *buf, size_t cap, const char *name);

/* Run tshark ($IWT_TSHARK, else "tshark" from PATH) on outdir/pcap_name
 * with TCP reassembly and IP/TCP checksum checks on, the RPC-over-RDMA and
 * SMB Direct heuristics off, a private empty configuration, and the extra
 * arguments (NULL-terminated). stdout goes to outdir/out_name, stderr to
 * outdir/out_name.stderr. */
void ts_run(const char *pcap_name, const char *out_name, const char *const *extra);

/* Parse outdir/out_name written with -T pdml. */
void ts_parse_pdml(const char *out_name, uint16_t port_a, uint16_t port_b, struct ts_result *r);

#endif
