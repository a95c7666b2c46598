/* pcapxcheck: the tshark cross-check. For each capture, every FPDU that
 * `iwdump --json` reports must be reported by tshark (iwarp_mpa /
 * iwarp_ddp_rdmap dissectors, -T pdml) in the same frame and in the same
 * order, with the same opcode, T and L flags, STag and TO (tagged) or QN,
 * MSN and MO (untagged), and the same CRC verdict (tshark's is only in the
 * label text: "Good CRC32" / "Bad CRC32"). FPDUs tshark 4.0 cannot decode
 * are excluded by rules computed from the capture itself (pcw), each
 * counted and named; see README.md and exclusion() below. Usage: see
 * usage(). Exit 0 all agree, 1 a disagreement, 2 usage or a tool failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpa/mpa_wire.h"
#include "pcw.h"

#define TSHARK_MIN_HEAD 8 /* fewer bytes of an FPDU at a segment start lose tshark 4.0 the stream */

static void usage(FILE *f)
{
	fputs("Usage: pcapxcheck --iwdump PATH [--tshark PATH] --outdir DIR [--min-fpdus N]\n"
	      "                  [--expect-excluded N] FILE.pcap...\n"
	      "Compares iwdump --json with tshark -T pdml, FPDU by FPDU. Outputs (iwdump JSON,\n"
	      "tshark PDML and stderr) are kept in DIR. Every file must have at least N\n"
	      "(default 1) FPDUs compared and, with --expect-excluded, exactly N excluded.\n",
	      f);
}

/* One FPDU as one of the decoders reported it. */
struct rec {
	int conn, dir;   /* pcw connection index, direction */
	unsigned frame;
	int op, t, l;
	uint64_t stag, to, qn, msn, mo;
	int crc;         /* 0 none, 1 good, 2 bad */
	unsigned have;   /* tshark: fields seen */
};

enum { H_OP = 1, H_T = 2, H_L = 4, H_STAG = 8, H_TO = 16, H_QN = 32, H_MSN = 64, H_MO = 128 };

struct recs {
	struct rec *r;
	size_t n, cap;
};

static struct rec *push(struct recs *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		struct rec *r = realloc(v->r, cap * sizeof(*r));

		if (!r) {
			fprintf(stderr, "pcapxcheck: out of memory\n");
			exit(2);
		}
		v->r = r;
		v->cap = cap;
	}
	memset(&v->r[v->n], 0, sizeof(v->r[0]));
	return &v->r[v->n++];
}

/* Run argv (bounded by timeout(1)) with stdout to out, stderr to err. */
static int run(char *const argv[], const char *out, const char *err)
{
	int status, fo, fe;
	pid_t pid;

	fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fo < 0 || fe < 0) {
		fprintf(stderr, "pcapxcheck: cannot write %s: %s\n", out, strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		execvp(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fo);
	close(fe);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* ---- iwdump --json ----------------------------------------------------- */

/* The text after "key": in a flat JSON line, or NULL. */
static const char *jval(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? p + strlen(pat) : NULL;
}

static bool jnum(const char *line, const char *key, uint64_t *v)
{
	const char *p = jval(line, key);

	if (!p)
		return false;
	if (*p == '"')
		p++;
	*v = strtoull(p, NULL, 0);
	return true;
}

static bool jstr_is(const char *line, const char *key, const char *want)
{
	const char *p = jval(line, key);
	size_t n = strlen(want);

	return p && p[0] == '"' && !strncmp(p + 1, want, n) && p[1 + n] == '"';
}

static int load_iwdump(const char *path, const struct pcw_cap *cap, struct recs *v, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t lcap = 0;
	int rc = 0;

	if (!f) {
		snprintf(err, errlen, "open %.400s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &lcap, f) > 0 && !rc) {
		uint64_t conn = 0, frame = 0, t, l;
		struct rec *r;

		if (jstr_is(line, "type", "conn")) {
			/* The numbering must be the same as pcw's. */
			char a[INET6_ADDRSTRLEN], want[96];
			const struct pcw_conn *c;

			jnum(line, "conn", &conn);
			if (!conn || conn > cap->nconns) {
				snprintf(err, errlen, "iwdump connection %" PRIu64 " unknown to pcw", conn);
				rc = -1;
				break;
			}
			c = &cap->conns[conn - 1];
			inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr[0], a, sizeof(a));
			snprintf(want, sizeof(want), c->family == 4 ? "\"initiator\":\"%s:%u\"" : "\"initiator\":\"[%s]:%u\"",
				 a, c->port[0]);
			if (!strstr(line, want)) {
				snprintf(err, errlen, "iwdump connection %" PRIu64 " is not pcw's (%s)", conn, want);
				rc = -1;
			}
			continue;
		}
		if (!jstr_is(line, "type", "fpdu"))
			continue;
		r = push(v);
		jnum(line, "conn", &conn);
		jnum(line, "frame", &frame);
		r->conn = (int)conn - 1;
		r->dir = jstr_is(line, "dir", "B>A");
		r->frame = (unsigned)frame;
		r->op = -1;
		for (int op = 0; op < 16; op++)
			if (jstr_is(line, "op", pcw_op_name((uint8_t)op)))
				r->op = op;
		/* iwdump always writes T and L: without them the line is not
		 * one of its FPDU records. */
		if (!jnum(line, "T", &t) || !jnum(line, "L", &l)) {
			snprintf(err, errlen, "iwdump FPDU line without T or L: %.200s", line);
			rc = -1;
			break;
		}
		r->t = (int)t;
		r->l = (int)l;
		jnum(line, "stag", &r->stag);
		jnum(line, "to", &r->to);
		jnum(line, "qn", &r->qn);
		jnum(line, "msn", &r->msn);
		jnum(line, "mo", &r->mo);
		r->crc = jstr_is(line, "crc", "ok") ? 1 : jstr_is(line, "crc", "bad") ? 2 : 0;
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---- tshark PDML -------------------------------------------------------- */

static bool field(const char *line, const char *name)
{
	char pat[96];

	snprintf(pat, sizeof(pat), "<field name=\"%s\"", name);
	return strstr(line, pat) != NULL;
}

static const char *attr(const char *line, const char *a, char *buf, size_t cap)
{
	const char *p = strstr(line, a), *q;
	size_t n;

	if (!p)
		return NULL;
	p += strlen(a);
	q = strchr(p, '"');
	if (!q)
		return NULL;
	n = (size_t)(q - p) < cap - 1 ? (size_t)(q - p) : cap - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return buf;
}

static uint64_t show(const char *line)
{
	char b[64];

	return attr(line, " show=\"", b, sizeof(b)) ? strtoull(b, NULL, 0) : UINT64_MAX;
}

static int load_pdml(const char *path, const struct pcw_cap *cap, struct recs *v, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned bit;
		size_t off;
	} fields[] = {
		{"iwarp_ddp.tagged_flag", H_T, 0},
		{"iwarp_ddp.last_flag", H_L, 0},
		{"iwarp_ddp.stag", H_STAG, offsetof(struct rec, stag)},
		{"iwarp_ddp.tagged_offset", H_TO, offsetof(struct rec, to)},
		{"iwarp_ddp.qn", H_QN, offsetof(struct rec, qn)},
		{"iwarp_ddp.msn", H_MSN, offsetof(struct rec, msn)},
		{"iwarp_ddp.mo", H_MO, offsetof(struct rec, mo)},
		{"iwarp_rdma.opcode", H_OP, 0},
	};
	FILE *f = fopen(path, "r");
	char *line = NULL, b[256];
	size_t lcap = 0;
	unsigned frame = 0;
	struct rec *cur = NULL;

	if (!f) {
		snprintf(err, errlen, "open %.400s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &lcap, f) > 0) {
		if (strstr(line, "<packet>")) {
			frame = 0;
			cur = NULL;
		} else if (field(line, "num") && !frame) {
			frame = (unsigned)show(line);
		} else if (field(line, "iwarp_mpa.fpdu")) {
			const struct pcw_pkt *p = frame && frame <= cap->npkts ? &cap->pkts[frame - 1] : NULL;

			cur = push(v);
			cur->frame = frame;
			cur->conn = p ? p->conn : -1;
			cur->dir = p ? p->dir : 0;
		} else if (cur && field(line, "iwarp_mpa.crc_check")) {
			if (!attr(line, "showname=\"", b, sizeof(b)) ||
			    (!strstr(b, "(Good CRC32)") && !strstr(b, "Bad CRC32"))) {
				snprintf(err, errlen, "frame %u: unexpected CRC label", frame);
				free(line);
				fclose(f);
				return -1;
			}
			cur->crc = strstr(b, "(Good CRC32)") ? 1 : 2;
		} else if (cur) {
			for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
				uint64_t x;

				if (!field(line, fields[i].name) || (cur->have & fields[i].bit))
					continue;
				x = show(line);
				cur->have |= fields[i].bit;
				if (fields[i].bit == H_T)
					cur->t = (int)x;
				else if (fields[i].bit == H_L)
					cur->l = (int)x;
				else if (fields[i].bit == H_OP)
					cur->op = (int)x;
				else
					*(uint64_t *)((char *)cur + fields[i].off) = x;
				break;
			}
		}
	}
	free(line);
	fclose(f);
	return 0;
}

/* ---- exclusions -------------------------------------------------------- */

/* Found by feeding tshark 4.0.17 the layouts gen_quirks builds (see the
 * test pcapcheck_tshark_quirks and README.md). */
enum why {
	W_NONE,
	W_MPA_SEGMENT, /* ends in the segment that carried the end of the MPA Request/Reply */
	W_SHORT_HEAD,  /* starts a segment holding fewer than 8 of its bytes (or comes after one) */
	W_MARKERS,     /* markers: shares a segment that holds a marker, or ends where one is due (or after one) */
	W_COUNT,
};

static const char *const why_text[W_COUNT] = {
	"",
	"FPDU ending in the TCP segment that ends the MPA Request/Reply (tshark skips it)",
	("FPDU starting a TCP segment that holds fewer than 8 of its bytes, and the rest of the direction "
	 "(tshark 4.0 loses the stream there)"),
	("markers on: FPDU sharing a TCP segment that holds a marker, or ending where a marker is due, and "
	 "the rest of the direction (tshark 4.0 counts markers per segment; it loses the stream there)"),
};

static uint64_t seg_off(const struct pcw_dir *d, const struct pcw_pkt *p)
{
	return (uint64_t)(int32_t)(p->seq - d->base);
}

/* Does a marker position fall inside packet p's bytes? */
static bool seg_has_marker(const struct pcw_dir *d, const struct pcw_pkt *p)
{
	uint64_t a = seg_off(d, p), b = a + p->pay_len, first;

	if (b <= d->frame_len)
		return false;
	if (a <= d->frame_len)
		return true;
	first = d->frame_len + ((a - d->frame_len + IW_MPA_MARKER_INTERVAL - 1) / IW_MPA_MARKER_INTERVAL) *
				      IW_MPA_MARKER_INTERVAL;
	return first < b;
}

/* Can tshark place the markers of f? Yes when f is alone in exactly one
 * segment, or when no segment carrying its bytes holds a marker; never
 * when it ends where a marker is due. */
static bool markers_ok(const struct pcw_cap *cap, const struct pcw_dir *d, const struct pcw_fpdu *f)
{
	const struct pcw_pkt *p = &cap->pkts[f->first_pkt];
	uint32_t last = UINT32_MAX;

	if (((f->end - d->frame_len) % IW_MPA_MARKER_INTERVAL) == 0)
		return false;
	if (f->first_pkt == f->last_pkt && seg_off(d, p) == f->start && p->pay_len == f->wire_len)
		return true;
	for (uint64_t o = f->start; o < f->end; o++) {
		if (d->owner[o] == last)
			continue;
		last = d->owner[o];
		if (seg_has_marker(d, &cap->pkts[last]))
			return false;
	}
	return true;
}

/* Reasons for each FPDU of a direction (why[i]). */
static void exclusions(const struct pcw_cap *cap, const struct pcw_dir *d, enum why *why)
{
	uint32_t mpa_pkt = d->frame_len ? d->owner[d->frame_len - 1] : UINT32_MAX;
	enum why lost = W_NONE;

	for (size_t i = 0; i < d->nfpdus; i++) {
		const struct pcw_fpdu *f = &d->fpdus[i];
		const struct pcw_pkt *p = &cap->pkts[f->first_pkt];

		why[i] = lost;
		if (lost != W_NONE)
			continue;
		if (f->last_pkt == mpa_pkt)
			why[i] = W_MPA_SEGMENT;
		else if (seg_off(d, p) == f->start && f->first_seg_bytes < TSHARK_MIN_HEAD)
			why[i] = lost = W_SHORT_HEAD;
		else if (d->markers && !markers_ok(cap, d, f))
			why[i] = lost = W_MARKERS;
	}
}

/* ---- comparison -------------------------------------------------------- */

static int differ(const struct rec *a, const struct rec *t, bool cmp_crc, char *buf, size_t cap)
{
	if (t->op != a->op)
		return snprintf(buf, cap, "opcode %d vs %d", a->op, t->op);
	if (!(t->have & H_T) || t->t != a->t)
		return snprintf(buf, cap, "T %d vs %d", a->t, t->t);
	if (!(t->have & H_L) || t->l != a->l)
		return snprintf(buf, cap, "L %d vs %d", a->l, t->l);
	if (a->t) {
		if (!(t->have & H_STAG) || t->stag != a->stag)
			return snprintf(buf, cap, "STag 0x%" PRIx64 " vs 0x%" PRIx64, a->stag, t->stag);
		if (!(t->have & H_TO) || t->to != a->to)
			return snprintf(buf, cap, "TO 0x%" PRIx64 " vs 0x%" PRIx64, a->to, t->to);
	} else {
		if (!(t->have & H_QN) || t->qn != a->qn)
			return snprintf(buf, cap, "QN %" PRIu64 " vs %" PRIu64, a->qn, t->qn);
		if (!(t->have & H_MSN) || t->msn != a->msn)
			return snprintf(buf, cap, "MSN %" PRIu64 " vs %" PRIu64, a->msn, t->msn);
		if (!(t->have & H_MO) || t->mo != a->mo)
			return snprintf(buf, cap, "MO %" PRIu64 " vs %" PRIu64, a->mo, t->mo);
	}
	if (cmp_crc && t->crc != a->crc)
		return snprintf(buf, cap, "CRC verdict %s vs %s", a->crc == 1 ? "ok" : a->crc == 2 ? "bad" : "none",
				t->crc == 1 ? "Good" : t->crc == 2 ? "Bad" : "none");
	return 0;
}

struct tally {
	size_t compared[2], excluded[W_COUNT], ignored, crc_skipped;
	int failures;
};

static void fail(struct tally *t, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct tally *t, const char *file, const char *fmt, ...)
{
	va_list ap;

	if (t->failures++ >= 20)
		return;
	printf("FAIL %s: ", file);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool frame_excluded(const struct pcw_cap *cap, int ci, int dir, const enum why *why, unsigned frame)
{
	const struct pcw_dir *d = &cap->conns[ci].d[dir];

	for (size_t i = 0; i < d->nfpdus; i++)
		if (why[i] != W_NONE && why[i] != W_MPA_SEGMENT && d->fpdus[i].last_pkt + 1 == frame)
			return true;
	return false;
}

static void compare_dir(const struct pcw_cap *cap, int ci, int dir, const struct recs *iw, const struct recs *ts,
			const char *file, struct tally *t)
{
	const struct pcw_conn *c = &cap->conns[ci];
	const struct pcw_dir *d = &c->d[dir];
	enum why *why = calloc(d->nfpdus + 1, sizeof(*why));
	size_t ni = 0, nt = 0, ia = 0, it = 0;
	const struct rec **a, **b;
	/* tshark checks CRC when the Request or the Reply has C set; the
	 * negotiated CRC is the Reply's C alone. */
	bool cmp_crc = true;
	char buf[160];

	a = calloc(iw->n + 1, sizeof(*a));
	b = calloc(ts->n + 1, sizeof(*b));
	if (!why || !a || !b) {
		fprintf(stderr, "pcapxcheck: out of memory\n");
		exit(2);
	}
	if (!c->crc) {
		/* Request C=1 with Reply C=0 makes tshark check zero CRCs. */
		const uint8_t *req = c->d[0].buf;

		if (c->d[0].contig > 16 && (req[16] & 0x40))
			cmp_crc = false;
	}
	exclusions(cap, d, why);
	for (size_t i = 0; i < iw->n; i++)
		if (iw->r[i].conn == ci && iw->r[i].dir == dir)
			a[ni++] = &iw->r[i];
	for (size_t i = 0; i < ts->n; i++)
		if (ts->r[i].conn == ci && ts->r[i].dir == dir)
			b[nt++] = &ts->r[i];
	if (ni != d->nfpdus) {
		fail(t, file, "conn %d %s: iwdump reports %zu FPDUs, the capture walk finds %zu", ci + 1,
		     dir ? "B>A" : "A>B", ni, d->nfpdus);
		goto out;
	}
	for (size_t i = 0; i < ni; i++) {
		const struct pcw_fpdu *f = &d->fpdus[i];

		if (a[i]->frame != f->last_pkt + 1) {
			fail(t, file, "conn %d %s FPDU %zu: iwdump frame %u, capture walk frame %u", ci + 1,
			     dir ? "B>A" : "A>B", i + 1, a[i]->frame, f->last_pkt + 1);
			goto out;
		}
	}
	/* Walk both lists in order; tshark records in frames holding an
	 * excluded FPDU are ignored. */
	while (ia < ni || it < nt) {
		if (ia < ni && why[ia] != W_NONE) {
			t->excluded[why[ia]]++;
			if (why[ia] == W_MPA_SEGMENT) {
				/* Expected: tshark reports nothing there. */
				for (size_t k = 0; k < nt; k++)
					if (b[k]->frame == a[ia]->frame && !frame_excluded(cap, ci, dir, why, b[k]->frame))
						fail(t, file, "conn %d %s frame %u: tshark decoded an FPDU in the MPA frame's "
							      "segment (expected it to skip it)",
						     ci + 1, dir ? "B>A" : "A>B", b[k]->frame);
			}
			ia++;
			continue;
		}
		if (it < nt && frame_excluded(cap, ci, dir, why, b[it]->frame)) {
			t->ignored++;
			it++;
			continue;
		}
		if (ia >= ni) {
			fail(t, file, "conn %d %s frame %u: tshark reports an FPDU iwdump does not", ci + 1,
			     dir ? "B>A" : "A>B", b[it]->frame);
			it++;
			continue;
		}
		if (it >= nt || b[it]->frame != a[ia]->frame) {
			if (it < nt && b[it]->frame < a[ia]->frame) {
				fail(t, file, "conn %d %s frame %u: tshark reports an FPDU iwdump does not", ci + 1,
				     dir ? "B>A" : "A>B", b[it]->frame);
				it++;
			} else {
				fail(t, file, "conn %d %s frame %u: tshark does not report iwdump's FPDU %zu (%s)", ci + 1,
				     dir ? "B>A" : "A>B", a[ia]->frame, ia + 1, pcw_op_name((uint8_t)a[ia]->op));
				ia++;
			}
			continue;
		}
		if (differ(a[ia], b[it], cmp_crc, buf, sizeof(buf)))
			fail(t, file, "conn %d %s frame %u FPDU %zu (%s): iwdump vs tshark: %s", ci + 1, dir ? "B>A" : "A>B",
			     a[ia]->frame, ia + 1, pcw_op_name((uint8_t)a[ia]->op), buf);
		t->compared[dir]++;
		if (!cmp_crc)
			t->crc_skipped++;
		ia++;
		it++;
	}
out:
	free(why);
	free(a);
	free(b);
}

static int check_file(const char *file, const char *iwdump, const char *tshark, const char *outdir, size_t min_fpdus,
		      long expect_excluded)
{
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	char jpath[1024], ppath[1024], epath[1040], cfg[1024], err[512];
	struct recs iw = {0}, ts = {0};
	struct tally t;
	struct pcw_cap cap;
	size_t excl = 0, total;
	int rc;

	memset(&t, 0, sizeof(t));
	snprintf(jpath, sizeof(jpath), "%s/%s.iwdump.json", outdir, base);
	snprintf(ppath, sizeof(ppath), "%s/%s.pdml", outdir, base);
	snprintf(cfg, sizeof(cfg), "%s/wireshark-config", outdir);
	if (pcw_load(file, &cap, err, sizeof(err)) < 0) {
		printf("FAIL %s: %s\n", base, err);
		pcw_free(&cap);
		return 1;
	}
	{
		char *argv[] = {"timeout", "-k", "5", "120", (char *)iwdump, "--json", (char *)file, NULL};

		snprintf(epath, sizeof(epath), "%s.stderr", jpath);
		rc = run(argv, jpath, epath);
		if (rc != 0) {
			printf("FAIL %s: iwdump --json exit %d (see %s)\n", base, rc, epath);
			pcw_free(&cap);
			return 1;
		}
	}
	{
		/* Private empty configuration; reassembly on; the heuristics that
		 * take SEND payloads off; MPA tried first whatever the port. */
		char *argv[] = {"timeout", "-k", "5", "300", (char *)tshark, "-n", "-r", (char *)file,
				"-o", "tcp.desegment_tcp_streams:TRUE", "-o", "tcp.reassemble_out_of_order:TRUE",
				"-o", "tcp.try_heuristic_first:TRUE",
				"--disable-heuristic", "rpcrdma_iwarp", "--disable-heuristic", "smb_direct_iwarp",
				"-T", "pdml", NULL};

		snprintf(epath, sizeof(epath), "%s.stderr", ppath);
		if (mkdir(cfg, 0700) != 0 && errno != EEXIST) {
			printf("FAIL %s: mkdir %s: %s\n", base, cfg, strerror(errno));
			pcw_free(&cap);
			return 1;
		}
		setenv("WIRESHARK_CONFIG_DIR", cfg, 1);
		rc = run(argv, ppath, epath);
		if (rc != 0) {
			printf("FAIL %s: tshark exit %d (%s; see %s)\n", base, rc,
			       rc == 127 ? "not installed? apt-get install tshark" : "failed", epath);
			pcw_free(&cap);
			return 1;
		}
	}
	if (load_iwdump(jpath, &cap, &iw, err, sizeof(err)) < 0 || load_pdml(ppath, &cap, &ts, err, sizeof(err)) < 0) {
		printf("FAIL %s: %s\n", base, err);
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < ts.n; i++)
		if (ts.r[i].conn < 0 || !cap.conns[ts.r[i].conn].mpa)
			fail(&t, base, "frame %u: tshark reports an FPDU on a connection iwdump does not decode",
			     ts.r[i].frame);
	for (size_t ci = 0; ci < cap.nconns; ci++)
		for (int d = 0; d < 2 && cap.conns[ci].mpa; d++)
			compare_dir(&cap, (int)ci, d, &iw, &ts, base, &t);
	for (int w = 1; w < W_COUNT; w++)
		excl += t.excluded[w];
	total = t.compared[0] + t.compared[1];
	printf("%s: %zu FPDUs compared (A>B %zu, B>A %zu), %zu excluded, %zu tshark records in their frames ignored%s\n",
	       base, total, t.compared[0], t.compared[1], excl, t.ignored,
	       t.crc_skipped ? ", CRC verdict not compared (Request C=1, Reply C=0)" : "");
	for (int w = 1; w < W_COUNT; w++)
		if (t.excluded[w])
			printf("  excluded %zu: %s\n", t.excluded[w], why_text[w]);
	if (total < min_fpdus)
		fail(&t, base, "only %zu FPDUs compared, at least %zu required", total, min_fpdus);
	if (expect_excluded >= 0 && excl != (size_t)expect_excluded)
		fail(&t, base, "%zu FPDUs excluded, expected %ld", excl, expect_excluded);
	rc = t.failures ? 1 : 0;
out:
	free(iw.r);
	free(ts.r);
	pcw_free(&cap);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"iwdump", required_argument, NULL, 'i'}, {"tshark", required_argument, NULL, 't'},
		{"outdir", required_argument, NULL, 'o'}, {"min-fpdus", required_argument, NULL, 'm'},
		{"expect-excluded", required_argument, NULL, 'e'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	const char *iwdump = NULL, *tshark = "tshark", *outdir = NULL;
	size_t min_fpdus = 1;
	long expect_excluded = -1;
	int ch, failed = 0;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			iwdump = optarg;
			break;
		case 't':
			tshark = optarg;
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'm':
			min_fpdus = strtoul(optarg, NULL, 10);
			break;
		case 'e':
			expect_excluded = strtol(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!iwdump || !outdir || optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		failed += check_file(argv[i], iwdump, tshark, outdir, min_fpdus, expect_excluded) != 0;
	printf("pcapxcheck: %d files, %d failed\n", argc - optind, failed);
	return failed ? 1 : 0;
}
