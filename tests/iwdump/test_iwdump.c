/* iwdump end to end: pcaps of sessions built by our encoders (clean,
 * with protocol violations, with mangled TCP) are decoded by the iwdump
 * binary given as argv[1]; its exit status and exact output lines are
 * checked. Pcaps and outputs stay in the build directory for debugging. */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwd_gen.h"
#include "iwd_run.h"
#include "iwt_common.h"
#include "iwt_ddp.h"
#include "iwt_fpdu.h"
#include "iwt_handshake.h"

#define A IWT_TCP_A
#define B IWT_TCP_B

static const struct iwd_gen_opts crc_on = {.crc = true};

static void assert_line(const char *out, const char *line)
{
	ck_assert_msg(iwd_has_line(out, line), "missing line:\n%s\n--- output:\n%.3000s", line, out);
}

static void assert_linef(const char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void assert_linef(const char *out, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert_line(out, line);
}

static int run(const char *pcap, const char *const *args, const char *out_name, char **out)
{
	return iwd_run(pcap, args, out_name, out);
}

static const char *const check_args[] = {"--check", NULL};
static const char *const allow_args[] = {"--check", "--allow-gaps", NULL};

/* Every line of a clean session's summary. */
static void assert_clean_summary(const struct iwd_gen *g, const char *out)
{
	char buf[4096] = "";

	assert_line(out, "SUMMARY conn 1: 192.168.77.10:40001 > 192.168.77.11:7174: decoded");
	assert_line(out, "  mpa: rev 2 enhanced, crc on, markers A>B off B>A off, A ird 16 ord 8, B ird 8 ord 4");
	iwd_gen_summary_lines(g, A, 0, 0, buf, sizeof(buf));
	iwd_gen_summary_lines(g, B, 0, 0, buf, sizeof(buf));
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		assert_line(out, l);
	assert_line(out, "  result: 0 violations, 0 warnings");
	assert_line(out, "TOTAL 1 connections, 0 violations, 0 warnings");
}

START_TEST(test_clean)
{
	struct iwd_gen *g = iwd_gen_clean("clean.pcap", &crc_on);
	char *out, *dec;

	ck_assert_int_eq(run("clean.pcap", check_args, "clean.out", &out), 0);
	assert_line(out, "CONN 1 frame 1: 192.168.77.10:40001 > 192.168.77.11:7174");
	assert_line(out, "MPA conn 1 dir A>B frame 4: Request rev 2 M=0 C=1 R=0 enhanced ird 16 ord 16 pd 19");
	assert_line(out, "MPA conn 1 dir B>A frame 5: Reply rev 2 M=0 C=1 R=0 enhanced ird 8 ord 4 pd 17");
	assert_line(out, "MPA conn 1 frame 5: negotiated rev 2 enhanced, crc on, markers A>B off B>A off, "
			 "A ird 16 ord 8, B ird 8 ord 4");
	ck_assert_int_eq(iwd_count_prefix(out, "FPDU "), (int)(g->fpdus[A] + g->fpdus[B]));
	ck_assert_int_eq(iwd_count_prefix(out, "MSG "), (int)(g->msgs[A] + g->msgs[B]));
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 0);
	dec = iwd_decoded_lines(out);
	assert_line(dec, "FPDU conn 1 dir A>B: SEND T=0 L=0 qn 0 msn 1 mo 0 len 1000 crc ok");
	assert_line(dec, "MSG conn 1 dir A>B: SEND msn 1 3000 bytes");
	assert_line(dec, "MSG conn 1 dir A>B: WRITE stag 0x00b20101 to 0x7f0000010000 2600 bytes");
	assert_line(dec, "FPDU conn 1 dir A>B: READ_REQ T=0 L=1 qn 1 msn 1 mo 0 len 28 crc ok");
	assert_line(dec, "MSG conn 1 dir A>B: READ_REQ msn 1 sink 0x00a10201 to 0x20000 src 0x00b20301 "
			 "to 0x7f0000300000 size 3500");
	assert_line(dec, "MSG conn 1 dir A>B: SEND_SE msn 2 40 bytes");
	assert_line(dec, "MSG conn 1 dir A>B: SEND_INV msn 3 1200 bytes inv 0x00b20401");
	assert_line(dec, "FPDU conn 1 dir A>B: SEND_SE_INV T=0 L=1 qn 0 msn 4 mo 0 inv 0x00b20501 len 0 crc ok");
	assert_line(dec, "MSG conn 1 dir A>B: SEND_SE_INV msn 4 0 bytes inv 0x00b20501");
	assert_line(dec, "FPDU conn 1 dir B>A: READ_RESP T=1 L=0 stag 0x00a10201 to 0x20000 len 1168 crc ok");
	assert_line(dec, "MSG conn 1 dir B>A: READ_RESP stag 0x00a10201 to 0x20000 3500 bytes complete "
			 "(src 0x00b20301 to 0x7f0000300000)");
	assert_line(dec, "MSG conn 1 dir B>A: WRITE stag 0x00a10601 to 0x1000 2048 bytes");
	assert_line(dec, "MSG conn 1 dir B>A: READ_REQ msn 1 sink 0x00b20901 to 0x9000 src 0x00a10a01 "
			 "to 0x55aa0000 size 2222");
	assert_line(dec, "MSG conn 1 dir A>B: READ_RESP stag 0x00b20901 to 0x9000 2222 bytes complete "
			 "(src 0x00a10a01 to 0x55aa0000)");
	assert_line(dec, "MSG conn 1 dir A>B: SEND msn 6 4100 bytes");
	assert_line(dec, "FPDU conn 1 dir A>B: TERMINATE T=0 L=1 qn 2 msn 1 mo 0 len 52 crc ok");
	assert_line(dec, "MSG conn 1 dir A>B: TERMINATE layer 0 etype 1 ecode 0x00: RDMAP remote protection: "
			 "invalid STag [M D R]");
	assert_clean_summary(g, out);
	free(dec);
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* Markers, no CRC, IPv6: still clean. */
START_TEST(test_clean_variants)
{
	static const struct iwd_gen_opts v[] = {
		{.crc = true, .markers = true},
		{.crc = false, .ipv6 = true},
		{.crc = false, .markers = true, .ipv6 = true},
	};
	char name[64], oname[64], *out;
	struct iwd_gen *g;

	snprintf(name, sizeof(name), "clean_v%d.pcap", _i);
	snprintf(oname, sizeof(oname), "clean_v%d.out", _i);
	g = iwd_gen_clean(name, &v[_i]);
	ck_assert_int_eq(run(name, check_args, oname, &out), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "FPDU "), (int)(g->fpdus[A] + g->fpdus[B]));
	ck_assert_int_eq(iwd_count_prefix(out, "MSG "), (int)(g->msgs[A] + g->msgs[B]));
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 0);
	if (v[_i].ipv6)
		assert_line(out, "CONN 1 frame 1: [fd00:77::a]:40001 > [fd00:77::b]:7174");
	assert_linef(out, "MPA conn 1 frame 5: negotiated rev 2 enhanced, crc %s, markers A>B %s B>A %s, "
			  "A ird 16 ord 8, B ird 8 ord 4",
		     v[_i].crc ? "on" : "off", v[_i].markers ? "on" : "off", v[_i].markers ? "on" : "off");
	{
		char buf[4096] = "";

		iwd_gen_summary_lines(g, A, 0, 0, buf, sizeof(buf));
		iwd_gen_summary_lines(g, B, 0, 0, buf, sizeof(buf));
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
			assert_line(out, l);
	}
	/* Every FPDU line carries the CRC verdict of the negotiation. */
	{
		int n = 0;

		for (const char *p = out; (p = strstr(p, v[_i].crc ? " crc ok\n" : " no crc\n")); p++)
			n++;
		ck_assert_int_eq(n, (int)(g->fpdus[A] + g->fpdus[B]));
	}
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* The same packets behind other link layers decode to the same text. */
START_TEST(test_link_types)
{
	static const struct {
		int dlt;
		bool vlan;
		const char *name;
	} lt[] = {
		{DLT_LINUX_SLL, false, "lt_sll.pcap"},
		{DLT_LINUX_SLL2, false, "lt_sll2.pcap"},
		{DLT_RAW, false, "lt_raw.pcap"},
		{DLT_EN10MB, true, "lt_vlan.pcap"},
	};
	struct iwd_gen *g = iwd_gen_clean("lt_clean.pcap", &crc_on);
	char *ref, *out;

	ck_assert_int_eq(run("lt_clean.pcap", check_args, "lt_clean.out", &ref), 0);
	for (size_t i = 0; i < sizeof(lt) / sizeof(lt[0]); i++) {
		char oname[64];

		iwd_pcap_convert("lt_clean.pcap", lt[i].name, lt[i].dlt, lt[i].vlan, 1);
		snprintf(oname, sizeof(oname), "%s.out", lt[i].name);
		ck_assert_int_eq(run(lt[i].name, check_args, oname, &out), 0);
		ck_assert_msg(strcmp(out, ref) == 0, "%s decodes differently", lt[i].name);
		free(out);
	}
	free(ref);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_quiet_json)
{
	static const char *const quiet[] = {"--quiet", NULL};
	static const char *const json[] = {"--json", "--check", NULL};
	struct iwd_gen *g = iwd_gen_clean("qj.pcap", &crc_on);
	char *out;
	int lines = 0, fpdus = 0, summaries = 0;

	ck_assert_int_eq(run("qj.pcap", quiet, "qj_quiet.out", &out), 0);
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		ck_assert_msg(!strncmp(l, "SUMMARY ", 8) || !strncmp(l, "  ", 2) || !strncmp(l, "TOTAL ", 6),
			      "--quiet printed: %s", l);
	free(out);
	ck_assert_int_eq(run("qj.pcap", json, "qj_json.out", &out), 0);
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		size_t n = strlen(l);

		ck_assert_msg(n >= 2 && l[0] == '{' && l[n - 1] == '}', "not a JSON object: %s", l);
		fpdus += strncmp(l, "{\"type\":\"fpdu\"", 14) == 0;
		if (!strncmp(l, "{\"type\":\"summary\"", 17)) {
			summaries++;
			ck_assert_ptr_nonnull(strstr(l, "\"sizes\":[{\"op\":\"WRITE\",\"size\":2600,\"count\":1},"
							"{\"op\":\"READ_REQ\",\"size\":3500,\"count\":1},"));
			ck_assert_ptr_nonnull(strstr(l, "\"reads\":{\"requested\":1,\"answered\":1,\"unanswered\":0,"
							"\"unmatched_responses\":0}"));
		}
		lines++;
	}
	ck_assert_int_eq(summaries, 1);
	ck_assert_int_eq(fpdus, (int)(g->fpdus[A] + g->fpdus[B]));
	ck_assert_int_gt(lines, fpdus);
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_usage)
{
	static const char *const help[] = {"--help", NULL};
	static const char *const bad_opt[] = {"--no-such-option", NULL};
	static const char *const port[] = {"-p", "9999", NULL};
	static const char *const filter[] = {"-f", "tcp port 7174", "--check", NULL};
	static const char *const bad_filter[] = {"-f", "no such filter (", NULL};
	struct iwd_gen *g = iwd_gen_clean("usage.pcap", &crc_on);
	char *out;

	ck_assert_int_eq(run("usage.pcap", help, "usage_help.out", &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "Usage: iwdump [options] FILE.pcap"));
	for (const char *o = "--check\0--allow-gaps\0--quiet\0--json\0--port\0--filter\0--max-ulpdu\0--reorder-max\0"
			     "VIOLATION conn N dir D frame F: TEXT (layer L etype E ecode 0xC)\0";
	     *o; o += strlen(o) + 1)
		ck_assert_msg(strstr(out, o), "--help does not mention %s", o);
	free(out);
	ck_assert_int_eq(run("usage.pcap", bad_opt, "usage_bad.out", &out), 2);
	free(out);
	ck_assert_int_eq(run("no-such-file.pcap", NULL, "usage_nofile.out", &out), 2);
	free(out);
	ck_assert_int_eq(run("usage.pcap", bad_filter, "usage_badfilter.out", &out), 2);
	free(out);
	ck_assert_int_eq(run("usage.pcap", port, "usage_port.out", &out), 0);
	assert_line(out, "TOTAL 0 connections, 0 violations, 0 warnings");
	free(out);
	ck_assert_int_eq(run("usage.pcap", filter, "usage_filter.out", &out), 0);
	assert_line(out, "TOTAL 1 connections, 0 violations, 0 warnings");
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* ---- protocol violations ------------------------------------------------ */

/* Handshake and A's first Send (MSN 1), sent and acknowledged. */
static struct iwd_gen *start(const char *name, const struct iwd_gen_opts *o)
{
	struct iwd_gen *g = iwd_gen_open(name, o);

	iwd_gen_msg(g, A, IW_OP_SEND, 100, 0, 0, NULL, NULL);
	iwd_gen_flight(g);
	return g;
}

/* Run --check and expect exactly one VIOLATION, this one. */
static char *expect_violation(struct iwd_gen *g, const char *pcap, int dir, uint64_t frame, const char *text)
{
	char out_name[80], line[512], *out;

	snprintf(out_name, sizeof(out_name), "%s.out", pcap);
	ck_assert_int_eq(run(pcap, check_args, out_name, &out), 1);
	snprintf(line, sizeof(line), "VIOLATION conn 1 dir %s frame %" PRIu64 ": %s", dir == A ? "A>B" : "B>A", frame,
		 text);
	assert_line(out, line);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 1);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 0);
	assert_line(out, "TOTAL 1 connections, 1 violations, 0 warnings");
	(void)g;
	return out;
}

START_TEST(test_crc_bitflip)
{
	struct iwd_gen *g = start("v_crc.pcap", &crc_on);
	struct iwd_gen_fpdu f = iwd_gen_msg(g, A, IW_OP_SEND, 1000, 0, 0, NULL, NULL);
	char *out, *dec;

	g->stream[A][f.start + 2 + IW_DDP_UNTAGGED_HDR_LEN + 10] ^= 0x10;
	iwd_gen_flight(g);
	iwd_gen_close(g);
	out = expect_violation(g, "v_crc.pcap", A, iwd_gen_frame_of(g, A, f.end - 1),
			       "CRC error (layer 2 etype 0 ecode 0x02)");
	dec = iwd_decoded_lines(out);
	assert_line(dec, "FPDU conn 1 dir A>B: SEND T=0 L=1 qn 0 msn 2 mo 0 len 1000 crc BAD");
	assert_linef(out, "NOTE conn 1 dir A>B frame %" PRIu64 ": MPA framing lost: rest of this direction not decoded",
		     iwd_gen_frame_of(g, A, f.end - 1));
	free(dec);
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* One FPDU with a hand-made header after the clean start. */
struct raw_case {
	const char *name;
	int dir;
	bool tagged;
	uint8_t ctrl, version;
	uint32_t stag_or_qn;
	uint64_t to_or_msn;
	size_t plen;
	const char *text;
};

static const struct raw_case raw_cases[] = {
	{"v_msn", A, false, 0x43, 1, 0, 3, 50, "MSN 3 on QN 0, expected 2 (layer 1 etype 2 ecode 0x03)"},
	{"v_ddpver_t", A, true, 0x40, 2, 0x1234, 0x100, 64, "DDP version 2, expected 1 (layer 1 etype 1 ecode 0x04)"},
	{"v_ddpver_u", A, false, 0x43, 0, 0, 2, 64, "DDP version 0, expected 1 (layer 1 etype 2 ecode 0x06)"},
	{"v_rdmapver", A, false, 0x83, 1, 0, 2, 64, "RDMAP version 2, expected 1 (layer 0 etype 2 ecode 0x05)"},
	{"v_opcode", A, false, 0x4C, 1, 0, 2, 64, "unknown opcode 12 (layer 0 etype 2 ecode 0x06)"},
	{"v_7306", A, false, 0x49, 1, 0, 2, 64,
	 "Immediate Data with SE, but RFC 7306 was not negotiated (layer 0 etype 2 ecode 0x06)"},
	{"v_qn", A, false, 0x43, 1, 3, 2, 64, "Send on QN 3, expected QN 0 (layer 1 etype 2 ecode 0x01)"},
	{"v_noreq", B, true, 0x42, 1, 0x99, 0x0, 100,
	 "Read Response without an outstanding Read Request (layer 0 etype 2 ecode 0x06)"},
	{"v_noreq_a", A, true, 0x42, 1, 0x99, 0x0, 100,
	 "Read Response without an outstanding Read Request (layer 0 etype 2 ecode 0x06)"},
};

START_TEST(test_raw_violation)
{
	const struct raw_case *rc = &raw_cases[_i];
	char pcap[64];
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], payload[256];
	struct iwd_gen *g;
	struct iwd_gen_fpdu f;
	size_t hl;
	char *out;

	snprintf(pcap, sizeof(pcap), "%s.pcap", rc->name);
	g = start(pcap, &crc_on);
	memset(payload, 0x5a, sizeof(payload));
	if (rc->tagged)
		hl = iwt_ddp_tagged(h, rc->ctrl, rc->stag_or_qn, rc->to_or_msn, true, rc->version);
	else
		hl = iwt_ddp_untagged(h, rc->ctrl, 0, rc->stag_or_qn, (uint32_t)rc->to_or_msn, 0, true, rc->version);
	f = iwd_gen_raw(g, rc->dir, h, hl, payload, rc->plen, -1);
	iwd_gen_flight(g);
	iwd_gen_close(g);
	out = expect_violation(g, pcap, rc->dir, iwd_gen_frame_of(g, rc->dir, f.end - 1), rc->text);
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_wrong_mo)
{
	struct iwd_gen *g = start("v_mo.pcap", &crc_on);
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], payload[100] = {0};
	struct iwd_gen_fpdu f;
	char *out;

	iwt_ddp_untagged(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 2, 0, false, 1);
	iwd_gen_raw(g, A, h, sizeof(h), payload, sizeof(payload), -1);
	iwt_ddp_untagged(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 2, 150, true, 1);
	f = iwd_gen_raw(g, A, h, sizeof(h), payload, sizeof(payload), -1);
	iwd_gen_flight(g);
	iwd_gen_close(g);
	out = expect_violation(g, "v_mo.pcap", A, iwd_gen_frame_of(g, A, f.end - 1),
			       "MO 150 on QN 0 MSN 2, expected 100 (layer 1 etype 2 ecode 0x04)");
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_ulpdu_too_small)
{
	struct iwd_gen *g = start("v_ulpdu.pcap", &crc_on);
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN];
	struct iwd_gen_fpdu f;
	char *out;

	/* A Read Request without its 28-byte body. */
	iwt_ddp_untagged(h, iw_rdmap_ctrl(IW_OP_READ_REQ), 0, 1, 1, 0, true, 1);
	f = iwd_gen_raw(g, A, h, sizeof(h), NULL, 0, -1);
	iwd_gen_flight(g);
	iwd_gen_close(g);
	/* Found when the control bytes arrive. */
	out = expect_violation(g, "v_ulpdu.pcap", A, iwd_gen_frame_of(g, A, f.start + 3),
			       "ULPDU_LENGTH 18 too small (minimum 46) (layer 2 etype 0 ecode 0x03)");
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_truncated)
{
	struct iwd_gen *g = start("v_trunc.pcap", &crc_on);
	struct iwd_gen_fpdu f = iwd_gen_msg(g, A, IW_OP_SEND, 2000, 0, 0, NULL, NULL);
	char *out;

	g->len[A] = f.start + 100; /* the last FPDU never completes */
	iwd_gen_flight(g);
	iwd_gen_close(g);
	/* Reported at A's FIN (the close writes FIN, FIN-ACK, ACK). */
	out = expect_violation(g, "v_trunc.pcap", A, iwd_gen_last_frame(g) - 2,
			       "truncated FPDU at end of stream (layer 2 etype 0 ecode 0x01)");
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* An RST from either side inside an FPDU is an abortive close, not the
 * sender's framing error (interop_abi: siw's ib_write_bw server exits and
 * resets while our WRITEs still stream). A FIN there stays a violation
 * (test_truncated). */
START_TEST(test_truncated_by_reset)
{
	for (int by = A; by <= B; by++) {
		const char *name = by == A ? "v_trunc_rst_a.pcap" : "v_trunc_rst_b.pcap";
		struct iwd_gen *g = start(name, &crc_on);
		struct iwd_gen_fpdu f = iwd_gen_msg(g, A, IW_OP_SEND, 2000, 0, 0, NULL, NULL);
		char out_name[80], *out;

		g->len[A] = f.start + 100;
		iwd_gen_flight(g);
		ck_assert_int_eq(iwt_tcp_reset(&g->tcp, by), 0);
		iwd_gen_end(g);
		snprintf(out_name, sizeof(out_name), "%s.out", name);
		ck_assert_int_eq(run(name, check_args, out_name, &out), 0);
		ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
		assert_linef(out, "NOTE conn 1 dir A>B frame %" PRIu64 ": connection reset inside an FPDU (abortive close)",
			     iwd_gen_last_frame(g));
		assert_line(out, "TOTAL 1 connections, 0 violations, 0 warnings");
		free(out);
		iwd_gen_free(g);
	}
}
END_TEST

/* The receiver's pure ACK reaches the capture before the data it
 * acknowledges (raw_wire_capture: a busy-polling receiver answers while
 * the kernel still copies the frame to tcpdump): no gap, no warning. */
START_TEST(test_ack_before_data)
{
	struct iwd_gen *g = start("ack_first.pcap", &crc_on);
	char *out;

	iwd_gen_msg(g, A, IW_OP_SEND, 1000, 0, 0, NULL, NULL);
	uint32_t pending = (uint32_t)(g->len[A] - g->flushed[A]);
	g->tcp.snd_nxt[A] += pending;
	ck_assert_int_eq(iwt_tcp_ack(&g->tcp, B), 0);
	g->tcp.snd_nxt[A] -= pending;
	iwd_gen_flush(g, A);
	iwd_gen_close(g);
	ck_assert_int_eq(run("ack_first.pcap", check_args, "ack_first.pcap.out", &out), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	assert_line(out, "TOTAL 1 connections, 0 violations, 0 warnings");
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_marker_fpduptr)
{
	struct iwd_gen_opts o = {.crc = true, .markers = true};
	struct iwd_gen *g = iwd_gen_open("v_marker.pcap", &o);
	size_t at;
	char *out;

	iwd_gen_msg(g, A, IW_OP_SEND, 3000, 0, 0, NULL, NULL);
	/* The marker 512 octets into A's FPDU stream sits inside the first
	 * FPDU, which began at 0: it points back 512 octets. */
	at = g->hs_len[A] + 512;
	ck_assert_uint_eq(g->stream[A][at + 2], 0x02);
	ck_assert_uint_eq(g->stream[A][at + 3], 0x00);
	g->stream[A][at + 3] = 0x10;
	iwd_gen_flight(g);
	iwd_gen_close(g);
	out = expect_violation(g, "v_marker.pcap", A, iwd_gen_frame_of(g, A, at + 3),
			       "marker FPDUPTR 528, expected 512 (layer 2 etype 0 ecode 0x03)");
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_ird_exceeded)
{
	struct iwd_gen_opts o = {.crc = true, .b_ird = 1};
	struct iwd_gen *g = iwd_gen_open("v_ird.pcap", &o);
	struct iw_rdmap_read_req rr = {.sink_stag = 0x100, .sink_to = 0x1000, .size = 64, .src_stag = 0x200};
	struct iwd_gen_fpdu f;
	char *out;

	iwd_gen_msg(g, A, IW_OP_READ_REQ, 0, 0, 0, &rr, NULL);
	f = iwd_gen_msg(g, A, IW_OP_READ_REQ, 0, 0, 0, &rr, NULL);
	iwd_gen_flight(g);
	iwd_gen_close(g);
	out = expect_violation(g, "v_ird.pcap", A, iwd_gen_frame_of(g, A, f.end - 1),
			       "Read Request beyond IRD 1 (1 outstanding) (layer 0 etype 2 ecode 0x07)");
	assert_line(out, "MPA conn 1 dir B>A frame 5: Reply rev 2 M=0 C=1 R=0 enhanced ird 1 ord 4 pd 17");
	/* a Read Request's size is the size it asks for */
	assert_line(out, "  A>B sizes (bytes x messages): READ_REQ 64x2");
	assert_line(out, "  A>B reads: 2 requested, 0 answered, 2 unanswered");
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* ---- MPA handshakes, several connections in one capture ----------------- */

struct hs_case {
	uint8_t req_flags, req_rev, rep_flags, rep_rev;
	uint16_t req_w1, req_w2, rep_w1, rep_w2;
	bool fpdu_behind_reply; /* B sends an FPDU in the Reply's segment */
};

/* One connection on port pair (40100 + i, 7174): handshake frames as
 * given, then a one-FPDU Send from A, then close. Returns the Reply's frame. */
static uint64_t hs_conn(struct iwt_pcap *pc, int i, const struct hs_case *hc)
{
	struct iwt_endpoint ea, eb;
	struct iwt_tcp t;
	uint8_t req[64], rep[64 + 64], fpdu[64];
	size_t rl, pl, fl = 0;
	uint64_t rep_frame;
	struct iw_mpa_tx tx;
	uint8_t h[IW_DDP_UNTAGGED_HDR_LEN], body[8] = "payload";

	ck_assert_int_eq(iwt_endpoint_set(&ea, "02:00:00:00:00:0a", "10.9.0.1", (uint16_t)(40100 + i)), 0);
	ck_assert_int_eq(iwt_endpoint_set(&eb, "02:00:00:00:00:0b", "10.9.0.2", 7174), 0);
	iwt_tcp_init(&t, pc, &ea, &eb, 1000u * (uint32_t)i, 7777u);
	ck_assert_int_eq(iwt_tcp_handshake(&t), 0);
	rl = iwt_mpa_req_bytes(hc->req_flags, hc->req_rev, hc->req_w1, hc->req_w2, NULL, 0, req);
	pl = iwt_mpa_rep_bytes(hc->rep_flags, hc->rep_rev, hc->rep_w1, hc->rep_w2, NULL, 0, rep);
	ck_assert_int_eq(iwt_tcp_segment(&t, IWT_TCP_A, IWT_TCP_PSH, req, rl), 0);
	iwt_ddp_untagged(h, iw_rdmap_ctrl(IW_OP_SEND), 0, 0, 1, 0, true, 1);
	if (hc->fpdu_behind_reply) {
		struct iovec v = {body, sizeof(body)};
		ssize_t n;

		iw_mpa_tx_init(&tx, hc->rep_flags & 0x40, false);
		n = iwt_fpdu_build_flat(&tx, h, sizeof(h), &v, 1, fpdu, sizeof(fpdu));
		ck_assert_int_gt(n, 0);
		memcpy(rep + pl, fpdu, (size_t)n);
		fl = (size_t)n;
	}
	ck_assert_int_eq(iwt_tcp_segment(&t, IWT_TCP_B, IWT_TCP_PSH, rep, pl + fl), 0);
	rep_frame = pc->packets;
	{
		struct iovec v = {body, sizeof(body)};
		ssize_t n;

		iw_mpa_tx_init(&tx, hc->rep_flags & 0x40, false);
		n = iwt_fpdu_build_flat(&tx, h, sizeof(h), &v, 1, fpdu, sizeof(fpdu));
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(iwt_tcp_segment(&t, IWT_TCP_A, IWT_TCP_PSH, fpdu, (size_t)n), 0);
	}
	ck_assert_int_eq(iwt_tcp_close(&t, IWT_TCP_A), 0);
	return rep_frame;
}

START_TEST(test_mpa_handshakes)
{
	static const struct hs_case hc[] = {
		/* 1: siw-style rev 2 enhanced, C=1, peer-to-peer with WRITE RTR */
		{0x50, 2, 0x50, 2, 0x8004, 0xC004, 0x8002, 0x8002, false},
		/* 2: rejected by the responder */
		{0x50, 2, 0x70, 2, 1, 1, 1, 1, false},
		/* 3: Reply with revision 3 */
		{0x50, 2, 0x50, 3, 1, 1, 1, 1, false},
		/* 4: reserved flag bit in the Request (strict decoding only) */
		{0x51, 2, 0x50, 2, 1, 1, 1, 1, false},
		/* 5: rev 2 Reply to a rev 1 Request */
		{0x40, 1, 0x40, 2, 0, 0, 0, 0, false},
		/* 6: an FPDU right behind the Reply */
		{0x50, 2, 0x50, 2, 1, 1, 1, 1, true},
		/* 7: rev 1, no CRC */
		{0x00, 1, 0x00, 1, 0, 0, 0, 0, false},
		/* 8: RFC 7306 ASK, and a Reply echoing it as siw does: no ACK */
		{0x58, 2, 0x58, 2, 1, 1, 1, 1, false},
		/* 9: RFC 7306 ASK and ACK */
		{0x58, 2, 0x54, 2, 1, 1, 1, 1, false},
	};
	static const char *const plain[] = {NULL};
	struct iwt_pcap pc;
	char path[1024], *out;
	uint64_t rf[9];

	iwd_path(path, sizeof(path), "mpa.pcap");
	ck_assert_int_eq(iwt_pcap_open(&pc, path), 0);
	for (int i = 0; i < 9; i++)
		rf[i] = hs_conn(&pc, i, &hc[i]);
	ck_assert_int_eq(iwt_pcap_close(&pc), 0);

	ck_assert_int_eq(run("mpa.pcap", check_args, "mpa.out", &out), 1);
	assert_line(out, "CONN 1 frame 1: 10.9.0.1:40100 > 10.9.0.2:7174");
	assert_line(out, "MPA conn 1 dir A>B frame 4: Request rev 2 M=0 C=1 R=0 enhanced ird 4 ord 4 p2p rtr WRITE,READ pd 0");
	assert_linef(out, "MPA conn 1 dir B>A frame %" PRIu64 ": Reply rev 2 M=0 C=1 R=0 enhanced ird 2 ord 2 p2p rtr WRITE pd 0",
		     rf[0]);
	assert_linef(out, "MPA conn 1 frame %" PRIu64 ": negotiated rev 2 enhanced, crc on, markers A>B off B>A off, "
			  "A ird 4 ord 2, B ird 2 ord 2, p2p", rf[0]);
	assert_line(out, "SUMMARY conn 1: 10.9.0.1:40100 > 10.9.0.2:7174: decoded");
	assert_linef(out, "NOTE conn 2 dir B>A frame %" PRIu64 ": connection rejected by the responder (MPA Reply with R=1)",
		     rf[1]);
	assert_line(out, "SUMMARY conn 2: 10.9.0.1:40101 > 10.9.0.2:7174: rejected by the responder");
	assert_linef(out, "VIOLATION conn 3 dir B>A frame %" PRIu64 ": invalid MPA Reply: MPA revision not 1 or 2 "
			  "(layer 2 etype 0 ecode 0x04)", rf[2]);
	assert_line(out, "SUMMARY conn 3: 10.9.0.1:40102 > 10.9.0.2:7174: MPA handshake invalid");
	assert_linef(out, "VIOLATION conn 4 dir A>B frame %" PRIu64 ": invalid MPA Request: reserved MPA flag bits set "
			  "(layer 2 etype 0 ecode 0x04)", rf[3] - 1);
	assert_line(out, "SUMMARY conn 4: 10.9.0.1:40103 > 10.9.0.2:7174: decoded");
	assert_linef(out, "VIOLATION conn 5 dir B>A frame %" PRIu64 ": MPA Reply refused: MPA Reply inconsistent with "
			  "the Request (layer 2 etype 0 ecode 0x04)", rf[4]);
	assert_linef(out, "NOTE conn 6 dir B>A frame %" PRIu64 ": responder sent FPDU bytes before the initiator's "
			  "first FPDU (lock-step)", rf[5]);
	assert_linef(out, "MPA conn 7 frame %" PRIu64 ": negotiated rev 1, crc off, markers A>B off B>A off, "
			  "ird/ord not negotiated", rf[6]);
	assert_line(out, "  mpa: rev 1, crc off, markers A>B off B>A off, ird/ord not negotiated");
	/* The Send after each accepted handshake decodes. */
	ck_assert_int_eq(iwd_count_prefix(out, "MSG conn 7 dir A>B frame"), 1);
	ck_assert_int_eq(iwd_count_prefix(out, "MSG conn 6 dir B>A frame"), 1);
	assert_linef(out, "MPA conn 8 dir A>B frame %" PRIu64 ": Request rev 2 M=0 C=1 R=0 enhanced ird 1 ord 1 pd 0 "
			  "rfc7306 ask", rf[7] - 1);
	assert_linef(out, "MPA conn 8 dir B>A frame %" PRIu64 ": Reply rev 2 M=0 C=1 R=0 enhanced ird 1 ord 1 pd 0", rf[7]);
	assert_linef(out, "NOTE conn 8 dir B>A frame %" PRIu64 ": Reply echoes the Request's RFC 7306 ASK flag bit (as "
			  "siw echoes reserved bits); no ACK, RFC 7306 not in use", rf[7]);
	assert_linef(out, "MPA conn 8 frame %" PRIu64 ": negotiated rev 2 enhanced, crc on, markers A>B off B>A off, "
			  "A ird 1 ord 1, B ird 1 ord 1", rf[7]);
	assert_linef(out, "MPA conn 9 dir B>A frame %" PRIu64 ": Reply rev 2 M=0 C=1 R=0 enhanced ird 1 ord 1 pd 0 "
			  "rfc7306 ack", rf[8]);
	assert_linef(out, "MPA conn 9 frame %" PRIu64 ": negotiated rev 2 enhanced, crc on, markers A>B off B>A off, "
			  "A ird 1 ord 1, B ird 1 ord 1, rfc7306", rf[8]);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 3);
	assert_line(out, "TOTAL 9 connections, 3 violations, 0 warnings");
	free(out);
	/* Reserved bits are ignored unless checking (RFC 5044). */
	ck_assert_int_eq(run("mpa.pcap", plain, "mpa_plain.out", &out), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION conn 4"), 0);
	assert_line(out, "TOTAL 9 connections, 2 violations, 0 warnings");
	free(out);
}
END_TEST

/* ---- TCP ----------------------------------------------------------------- */

static void tcp_counts(const char *out, const char *dir, uint64_t *dup, uint64_t *ooo)
{
	char pfx[16];
	const char *p;

	snprintf(pfx, sizeof(pfx), "\n  %s: ", dir);
	p = strstr(out, pfx);
	ck_assert_ptr_nonnull(p);
	p = strstr(p, "tcp bytes (");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, "tcp bytes (%" SCNu64 " dup, %" SCNu64 " out-of-order", dup, ooo), 2);
}

/* Retransmitted, overlapping and reordered segments decode exactly like
 * the clean session. */
START_TEST(test_tcp_mangled)
{
	static const enum iwd_tcp_mode modes[] = {IWD_TCP_RETRANSMIT, IWD_TCP_OVERLAP, IWD_TCP_REORDER};
	struct iwd_gen_opts o = crc_on;
	struct iwd_gen *ref, *g;
	char name[64], oname[64], *rout, *out, *rdec, *dec;
	uint64_t dup, ooo;

	ref = iwd_gen_clean("tcp_ref.pcap", &crc_on);
	ck_assert_int_eq(run("tcp_ref.pcap", check_args, "tcp_ref.out", &rout), 0);
	o.mode[A] = o.mode[B] = modes[_i];
	snprintf(name, sizeof(name), "tcp_mode%d.pcap", _i);
	snprintf(oname, sizeof(oname), "tcp_mode%d.out", _i);
	g = iwd_gen_clean(name, &o);
	ck_assert_int_eq(run(name, check_args, oname, &out), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 0);
	rdec = iwd_decoded_lines(rout);
	dec = iwd_decoded_lines(out);
	ck_assert_str_eq(dec, rdec);
	for (int d = 0; d < 2; d++) {
		tcp_counts(out, d == A ? "A>B" : "B>A", &dup, &ooo);
		if (modes[_i] == IWD_TCP_REORDER)
			ck_assert_uint_gt(ooo, 0);
		else
			ck_assert_uint_gt(dup, 0);
	}
	assert_line(out, "TOTAL 1 connections, 0 violations, 0 warnings");
	free(rdec);
	free(dec);
	free(rout);
	free(out);
	iwd_gen_free(ref);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_tcp_gap)
{
	struct iwd_gen_opts o = crc_on;
	struct iwd_gen *g;
	char *out, *dec, line[256];

	o.mode[A] = IWD_TCP_DROP;
	g = iwd_gen_clean("tcp_gap.pcap", &o);
	ck_assert_uint_gt(g->gap_len, 0);
	snprintf(line, sizeof(line),
		 "WARNING conn 1 dir A>B frame %" PRIu64 ": gap of %" PRIu64 " bytes at seq %" PRIu64
		 "; rest of this direction not decoded",
		 /* Reported with B's first data after the ACK that covers the
		  * hole: a pure ACK may precede the data it acknowledges in a
		  * capture (test_ack_before_data). */
		 g->first_ack_frame + 1, g->gap_len, g->gap_seq);
	ck_assert_int_eq(run("tcp_gap.pcap", check_args, "tcp_gap.out", &out), 1);
	assert_line(out, line);
	ck_assert_int_eq(iwd_count_prefix(out, "WARNING"), 1);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	/* B>A is still decoded; the Read Response to a request lost in the
	 * gap is reported as such, not as a violation. */
	dec = iwd_decoded_lines(out);
	assert_line(dec, "MSG conn 1 dir B>A: READ_RESP stag 0x00a10201 to 0x20000 3500 bytes complete "
			 "(request not seen)");
	assert_line(dec, "MSG conn 1 dir B>A: WRITE stag 0x00a10601 to 0x1000 2048 bytes");
	assert_line(out, "TOTAL 1 connections, 0 violations, 1 warnings");
	/* A's requests went into the gap: its reads line only counts B's
	 * response as one to an unseen request; B's request stays unanswered
	 * because A's direction is no longer decoded. */
	assert_line(out, "  A>B reads: 0 requested, 0 answered, 0 unanswered, 1 responses to unseen requests");
	assert_line(out, "  B>A reads: 1 requested, 0 answered, 1 unanswered");
	free(dec);
	free(out);
	ck_assert_int_eq(run("tcp_gap.pcap", allow_args, "tcp_gap_allow.out", &out), 0);
	assert_line(out, line);
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* Seen on real siw captures with a segment cut out: once the initiator's
 * direction has a gap, its Read Responses are unseen, so the responder's
 * further Read Requests must not count against the initiator's IRD. */
START_TEST(test_gap_reads_unjudged)
{
	struct iwd_gen_opts o = crc_on;
	struct iw_rdmap_read_req rr = {.sink_stag = 0x00a10201, .sink_to = 0x20000, .size = 100,
				       .src_stag = 0x00b20301, .src_to = 0x7f0000300000ull};
	struct iwd_gen *g;
	char *out;

	o.mode[A] = IWD_TCP_DROP;
	g = iwd_gen_open("gap_reads.pcap", &o);
	iwd_gen_msg(g, A, IW_OP_SEND, 4000, 0, 0, NULL, NULL);
	iwd_gen_flight(g);
	for (int i = 0; i < 20; i++) { /* A's IRD is 16 */
		iwd_gen_msg(g, B, IW_OP_READ_REQ, 0, 0, 0, &rr, NULL);
		iwd_gen_flight(g);
		iwd_gen_msg(g, A, IW_OP_READ_RESP, 100, rr.sink_stag, rr.sink_to, NULL, NULL);
		iwd_gen_flight(g);
	}
	iwd_gen_close(g);
	ck_assert_uint_gt(g->gap_len, 0);
	ck_assert_int_eq(run("gap_reads.pcap", check_args, "gap_reads.out", &out), 1);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	assert_line(out, "  B>A reads: 20 requested, 0 answered, 20 unanswered");
	assert_line(out, "TOTAL 1 connections, 0 violations, 1 warnings");
	free(out);
	iwd_gen_free(g);
}
END_TEST

START_TEST(test_mid_connection)
{
	struct iwd_gen *g = iwd_gen_clean("mid_src.pcap", &crc_on);
	uint64_t first = iwd_gen_frame_of(g, A, g->hs_len[A]) + 1; /* A's second data segment */
	char *out, *ref, *rdec, *dec;

	iwd_pcap_convert("mid_src.pcap", "mid.pcap", DLT_EN10MB, false, first);
	ck_assert_int_eq(run("mid.pcap", check_args, "mid.out", &out), 1);
	assert_line(out, "WARNING conn 1 frame 1: capture starts mid-connection (no SYN or MPA Request seen); "
			 "connection skipped");
	assert_line(out, "SUMMARY conn 1: 192.168.77.10:40001 > 192.168.77.11:7174: capture starts mid-connection");
	ck_assert_int_eq(iwd_count_prefix(out, "FPDU "), 0);
	ck_assert_int_eq(iwd_count_prefix(out, "VIOLATION"), 0);
	free(out);
	ck_assert_int_eq(run("mid.pcap", allow_args, "mid_allow.out", &out), 0);
	free(out);

	/* Without the TCP handshake but from the MPA Request on, the session
	 * decodes as usual. */
	iwd_pcap_convert("mid_src.pcap", "mid_nosyn.pcap", DLT_EN10MB, false, 4);
	ck_assert_int_eq(run("mid_nosyn.pcap", check_args, "mid_nosyn.out", &out), 0);
	assert_line(out, "CONN 1 frame 1: 192.168.77.10:40001 > 192.168.77.11:7174 (no TCP handshake seen)");
	ck_assert_int_eq(run("mid_src.pcap", check_args, "mid_src.out", &ref), 0);
	rdec = iwd_decoded_lines(ref);
	dec = iwd_decoded_lines(out);
	ck_assert_str_eq(dec, rdec);
	free(rdec);
	free(dec);
	free(ref);
	free(out);
	iwd_gen_free(g);
}
END_TEST

/* Damaged captures (bit flips anywhere, cut, lost and repeated frames):
 * iwdump must always finish with status 0 or 1. Under the sanitizer
 * build this also proves it stays in bounds and frees everything. */
START_TEST(test_damaged_captures)
{
	static const struct iwd_gen_opts opts[] = {
		{.crc = true}, {.crc = true, .markers = true}, {.crc = false, .ipv6 = true}};
	uint64_t rng = iwt_seed() + 77;

	for (int i = 0; i < 3; i++) {
		char src[32];
		struct iwd_gen *g;

		snprintf(src, sizeof(src), "dmg_src%d.pcap", i);
		g = iwd_gen_clean(src, &opts[i]);
		iwd_gen_free(g);
		for (int k = 0; k < 8; k++) {
			char *out;
			int st;

			iwd_pcap_mutate(src, "dmg.pcap", &rng);
			st = run("dmg.pcap", check_args, "dmg.out", &out);
			ck_assert_msg(st == 0 || st == 1, "iwdump exit status %d on dmg.pcap (copy %d of %s)", st, k, src);
			ck_assert_ptr_nonnull(strstr(out, "TOTAL "));
			free(out);
		}
	}
}
END_TEST

static Suite *iwdump_suite(void)
{
	Suite *s = suite_create("iwdump");
	TCase *tc = tcase_create("decode");
	TCase *tv = tcase_create("violations");
	TCase *tt = tcase_create("tcp");

	tcase_add_test(tc, test_clean);
	tcase_add_loop_test(tc, test_clean_variants, 0, 3);
	tcase_add_test(tc, test_link_types);
	tcase_add_test(tc, test_quiet_json);
	tcase_add_test(tc, test_usage);
	suite_add_tcase(s, tc);
	tcase_add_test(tv, test_crc_bitflip);
	tcase_add_loop_test(tv, test_raw_violation, 0, (int)(sizeof(raw_cases) / sizeof(raw_cases[0])));
	tcase_add_test(tv, test_wrong_mo);
	tcase_add_test(tv, test_ulpdu_too_small);
	tcase_add_test(tv, test_truncated);
	tcase_add_test(tv, test_truncated_by_reset);
	tcase_add_test(tv, test_ack_before_data);
	tcase_add_test(tv, test_marker_fpduptr);
	tcase_add_test(tv, test_ird_exceeded);
	tcase_add_test(tv, test_mpa_handshakes);
	suite_add_tcase(s, tv);
	tcase_add_loop_test(tt, test_tcp_mangled, 0, 3);
	tcase_add_test(tt, test_tcp_gap);
	tcase_add_test(tt, test_gap_reads_unjudged);
	tcase_add_test(tt, test_mid_connection);
	tcase_add_test(tt, test_damaged_captures);
	suite_add_tcase(s, tt);
	return s;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH/TO/iwdump\n", argv[0]);
		return EXIT_FAILURE;
	}
	iwd_set_prog(argv[1]);
	SRunner *sr = srunner_create(iwdump_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
