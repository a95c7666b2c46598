/* Running tshark and reading its PDML output (see tshark_run.h). */
#include "tshark_run.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef IWT_TSHARK_OUTDIR
#define IWT_TSHARK_OUTDIR "."
#endif

const char *ts_outdir(void)
{
	const char *d = getenv("IWT_TSHARK_OUTDIR");
	return d && *d ? d : IWT_TSHARK_OUTDIR;
}

void ts_path(char *buf, size_t cap, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", ts_outdir(), name);
	ck_assert_msg(n > 0 && (size_t)n < cap, "path too long");
}

void ts_run(const char *pcap_name, const char *out_name, const char *const *extra)
{
	const char *prog = getenv("IWT_TSHARK");
	char pcap[1024], out[1024], err[1040], cfg[1024];
	const char *argv[64];
	int argc = 0, status = 0, fd_out, fd_err;
	pid_t pid;

	if (!prog || !*prog)
		prog = "tshark";
	ts_path(pcap, sizeof(pcap), pcap_name);
	ts_path(out, sizeof(out), out_name);
	snprintf(err, sizeof(err), "%s.stderr", out);
	/* Private, empty configuration so personal preferences cannot
	 * change the dissection. */
	ts_path(cfg, sizeof(cfg), "wireshark-config");
	ck_assert_msg(mkdir(cfg, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", cfg, strerror(errno));

	argv[argc++] = prog;
	argv[argc++] = "-n";
	argv[argc++] = "-r";
	argv[argc++] = pcap;
	argv[argc++] = "-o";
	argv[argc++] = "tcp.desegment_tcp_streams:TRUE";
	argv[argc++] = "-o";
	argv[argc++] = "tcp.check_checksum:TRUE";
	argv[argc++] = "-o";
	argv[argc++] = "ip.check_checksum:TRUE";
	/* Otherwise SEND payloads are decoded as (malformed) RPC-over-RDMA
	 * or SMB Direct. */
	argv[argc++] = "--disable-heuristic";
	argv[argc++] = "rpcrdma_iwarp";
	argv[argc++] = "--disable-heuristic";
	argv[argc++] = "smb_direct_iwarp";
	while (extra && *extra && argc < 62)
		argv[argc++] = *extra++;
	argv[argc] = NULL;

	fd_out = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_msg(fd_out >= 0, "open %s: %s", out, strerror(errno));
	fd_err = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_msg(fd_err >= 0, "open %s: %s", err, strerror(errno));
	fflush(NULL);
	pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd_out, 1);
		dup2(fd_err, 2);
		setenv("WIRESHARK_CONFIG_DIR", cfg, 1);
		execvp(prog, (char *const *)argv);
		dprintf(2, "exec %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	close(fd_out);
	close(fd_err);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 127),
		      "cannot run '%s' (is tshark installed? apt-get install tshark); see %s", prog, err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (status %#x); see %s", prog,
		      status, err);
}

/* The value of attribute attr="..." on this line, or NULL. */
static const char *attr(const char *line, const char *attr_eq, char *buf, size_t cap)
{
	const char *p = strstr(line, attr_eq), *q;
	size_t n;

	if (!p)
		return NULL;
	p += strlen(attr_eq);
	q = strchr(p, '"');
	if (!q)
		return NULL;
	n = (size_t)(q - p);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return buf;
}

static bool field_is(const char *line, const char *name)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "<field name=\"%s\"", name);
	return strstr(line, pat) != NULL;
}

static uint64_t show_u64(const char *line)
{
	char v[64];

	if (!attr(line, " show=\"", v, sizeof(v)))
		return UINT64_MAX;
	return strtoull(v, NULL, 0);
}

void ts_parse_pdml(const char *out_name, uint16_t port_a, uint16_t port_b, struct ts_result *r)
{
	static const struct {
		const char *name;
		unsigned bit;
		size_t off;
	} fields[] = {
		{"iwarp_mpa.ulpdulength", TS_F_ULPDU, offsetof(struct ts_fpdu, ulpdu_len)},
		{"iwarp_ddp.tagged_flag", TS_F_T, offsetof(struct ts_fpdu, tagged)},
		{"iwarp_ddp.last_flag", TS_F_L, offsetof(struct ts_fpdu, last)},
		{"iwarp_ddp.stag", TS_F_STAG, offsetof(struct ts_fpdu, stag)},
		{"iwarp_ddp.tagged_offset", TS_F_TO, offsetof(struct ts_fpdu, to)},
		{"iwarp_ddp.qn", TS_F_QN, offsetof(struct ts_fpdu, qn)},
		{"iwarp_ddp.msn", TS_F_MSN, offsetof(struct ts_fpdu, msn)},
		{"iwarp_ddp.mo", TS_F_MO, offsetof(struct ts_fpdu, mo)},
		{"iwarp_rdma.opcode", TS_F_OP, offsetof(struct ts_fpdu, opcode)},
		{"iwarp_rdma.inval_stag", TS_F_INV, offsetof(struct ts_fpdu, inval)},
		{"iwarp_rdma.sinkstag", TS_F_SINKSTAG, offsetof(struct ts_fpdu, sinkstag)},
		{"iwarp_rdma.sinkto", TS_F_SINKTO, offsetof(struct ts_fpdu, sinkto)},
		{"iwarp_rdma.rdmardsz", TS_F_RDSZ, offsetof(struct ts_fpdu, rdsz)},
		{"iwarp_rdma.srcstag", TS_F_SRCSTAG, offsetof(struct ts_fpdu, srcstag)},
		{"iwarp_rdma.srcto", TS_F_SRCTO, offsetof(struct ts_fpdu, srcto)},
		{"iwarp_rdma.term_layer", TS_F_TLAYER, offsetof(struct ts_fpdu, tlayer)},
	};
	char path[1024], buf[256], msg[200] = "";
	char *line = NULL;
	size_t cap = 0;
	unsigned port = 0, frame = 0;
	struct ts_fpdu *cur = NULL;
	struct ts_mpa_frame *mf = NULL;
	FILE *f;

	memset(r, 0, sizeof(*r));
	ts_path(path, sizeof(path), out_name);
	f = fopen(path, "r");
	ck_assert_msg(f, "open %s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		if (strstr(line, "<packet>")) {
			port = 0;
			frame = 0;
			cur = NULL;
			mf = NULL;
			r->packets++;
			continue;
		}
		if (strstr(line, "<field name=\"num\""))
			frame = (unsigned)show_u64(line);
		else if (field_is(line, "tcp.srcport"))
			port = (unsigned)show_u64(line);
		else if (field_is(line, "_ws.malformed"))
			r->malformed++;
		else if (field_is(line, "_ws.expert.message"))
			attr(line, " show=\"", msg, sizeof(msg));
		else if (field_is(line, "_ws.expert.severity")) {
			/* tshark may flag the rev 2 MPA handshake ("Rev field is NOT
			 * set to one as required by RFC 5044"); anything else above
			 * Note (SYN/FIN chat, closing notes) is a failure. */
			if (show_u64(line) > TS_PI_NOTE && !strstr(msg, "Rev field is NOT set to one")) {
				r->expert_bad++;
				snprintf(r->expert_msg, sizeof(r->expert_msg), "frame %u: %s", frame, msg);
			}
		}
		else if (field_is(line, "ip.checksum.status") || field_is(line, "tcp.checksum.status")) {
			/* 1 = Good; anything else (bad, unverified) is a failure */
			if (show_u64(line) == 1)
				r->cksum_good++;
			else
				r->cksum_other++;
		} else if (field_is(line, "iwarp_mpa.req") || field_is(line, "iwarp_mpa.rep")) {
			bool req = field_is(line, "iwarp_mpa.req");

			*(req ? &r->n_req : &r->n_rep) += 1;
			mf = req ? &r->req : &r->rep;
			memset(mf, 0, sizeof(*mf));
			mf->frame = frame;
			cur = NULL;
		} else if (mf && field_is(line, "iwarp_mpa.marker_flag"))
			mf->m = show_u64(line);
		else if (mf && field_is(line, "iwarp_mpa.crc_flag"))
			mf->c = show_u64(line);
		else if (mf && field_is(line, "iwarp_mpa.rej_flag"))
			mf->r = show_u64(line);
		else if (mf && field_is(line, "iwarp_mpa.rev"))
			mf->rev = show_u64(line);
		else if (mf && field_is(line, "iwarp_mpa.pdlength"))
			mf->pd_len = show_u64(line);
		else if (field_is(line, "iwarp_mpa.fpdu")) {
			ck_assert_int_lt(r->n, TS_MAX_FPDU);
			cur = &r->f[r->n++];
			memset(cur, 0, sizeof(*cur));
			cur->dir = port == port_a ? 0 : port == port_b ? 1 : -1;
			cur->frame = frame;
		} else if (cur && field_is(line, "iwarp_mpa.crc_check")) {
			ck_assert_ptr_nonnull(attr(line, "showname=\"", buf, sizeof(buf)));
			cur->have |= TS_F_CRC;
			cur->crc_good = strstr(buf, "(Good CRC32)") != NULL;
			ck_assert_msg(cur->crc_good || strstr(buf, "Bad CRC32"), "unexpected CRC label: %s", buf);
		} else if (cur && strstr(line, "<field name=\"iwarp_rdma.term_etype")) {
			cur->have |= TS_F_TETYPE;
			cur->tetype = show_u64(line);
		} else if (cur && strstr(line, "<field name=\"iwarp_rdma.term_errcode")) {
			cur->have |= TS_F_TECODE;
			cur->tecode = show_u64(line);
		} else if (cur) {
			for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
				if (field_is(line, fields[i].name)) {
					cur->have |= fields[i].bit;
					*(uint64_t *)((char *)cur + fields[i].off) = show_u64(line);
					break;
				}
			}
		}
	}
	free(line);
	fclose(f);
}
