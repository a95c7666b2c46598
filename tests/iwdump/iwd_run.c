/* Running iwdump for the tests (see iwd_run.h). */
#include "iwd_run.h"

#include "iwt_common.h"

#include <check.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef IWD_TEST_OUTDIR
#define IWD_TEST_OUTDIR "."
#endif

extern char **environ;

static const char *prog = "iwdump";

void iwd_set_prog(const char *path)
{
	prog = path;
}

void iwd_path(char *buf, size_t cap, const char *name)
{
	const char *dir = getenv("IWD_TEST_OUTDIR");
	int n = snprintf(buf, cap, "%s/%s", dir ? dir : IWD_TEST_OUTDIR, name);

	ck_assert_msg(n > 0 && (size_t)n < cap, "path too long");
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, len = 0, n;
	char *buf = malloc(cap);

	ck_assert_msg(f != NULL, "cannot read %s", path);
	ck_assert_ptr_nonnull(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	fclose(f);
	buf[len] = 0;
	return buf;
}

int iwd_run(const char *pcap_name, const char *const *args, const char *out_name, char **out)
{
	char pcap[1024], outp[1024], errp[1040];
	const char *argv[32];
	posix_spawn_file_actions_t fa;
	int argc = 0, status = 0;
	pid_t pid;

	iwd_path(pcap, sizeof(pcap), pcap_name);
	iwd_path(outp, sizeof(outp), out_name);
	snprintf(errp, sizeof(errp), "%s.stderr", outp);
	argv[argc++] = prog;
	for (int i = 0; args && args[i]; i++) {
		ck_assert_int_lt(argc, 30);
		argv[argc++] = args[i];
	}
	argv[argc++] = pcap;
	argv[argc] = NULL;
	ck_assert_int_eq(posix_spawn_file_actions_init(&fa), 0);
	ck_assert_int_eq(posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
	ck_assert_int_eq(posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
	ck_assert_msg(posix_spawn(&pid, prog, &fa, NULL, (char *const *)argv, environ) == 0, "cannot run %s", prog);
	posix_spawn_file_actions_destroy(&fa);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*out = slurp(outp);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool iwd_has_line(const char *out, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = out; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && memcmp(p, line, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

int iwd_count_prefix(const char *out, const char *prefix)
{
	size_t n = strlen(prefix);
	int k = 0;

	for (const char *p = out; p && *p;) {
		const char *e = strchr(p, '\n');

		if (strncmp(p, prefix, n) == 0)
			k++;
		p = e ? e + 1 : NULL;
	}
	return k;
}

/* Remove " word VALUE" (word followed by one token) from a line. */
static void drop_field(char *line, const char *word)
{
	char *p = strstr(line, word);

	if (!p)
		return;
	char *v = p + strlen(word);
	char *end = v + strcspn(v, " :");
	memmove(p, end, strlen(end) + 1);
}

char *iwd_decoded_lines(const char *out)
{
	size_t cap = strlen(out) + 1, len = 0;
	char *res = malloc(cap);

	ck_assert_ptr_nonnull(res);
	res[0] = 0;
	for (const char *p = out; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (!strncmp(p, "FPDU ", 5) || !strncmp(p, "MSG ", 4)) {
			char line[1024];

			ck_assert_uint_lt(l, sizeof(line));
			memcpy(line, p, l);
			line[l] = 0;
			drop_field(line, " frame ");
			drop_field(line, " time ");
			len += (size_t)snprintf(res + len, cap - len, "%s\n", line);
		}
		p = e ? e + 1 : NULL;
	}
	return res;
}

void iwd_pcap_convert(const char *src_name, const char *dst_name, int dlt, bool vlan, uint64_t first)
{
	char src[1024], dst[1024], err[PCAP_ERRBUF_SIZE];
	static uint8_t f[262144 + 64];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *in, *dead;
	pcap_dumper_t *out;
	uint64_t k = 0;

	iwd_path(src, sizeof(src), src_name);
	iwd_path(dst, sizeof(dst), dst_name);
	in = pcap_open_offline(src, err);
	ck_assert_msg(in != NULL, "%s", err);
	ck_assert_int_eq(pcap_datalink(in), DLT_EN10MB);
	dead = pcap_open_dead(dlt, 262144);
	ck_assert_ptr_nonnull(dead);
	out = pcap_dump_open(dead, dst);
	ck_assert_msg(out != NULL, "%s", pcap_geterr(dead));
	while (pcap_next_ex(in, &h, &d) == 1) {
		struct pcap_pkthdr oh = *h;
		size_t n = 0, body = h->caplen - 14;

		if (++k < first)
			continue;
		ck_assert_uint_ge(h->caplen, 14);
		switch (dlt) {
		case DLT_EN10MB:
			memcpy(f, d, 12);
			n = 12;
			if (vlan) {
				static const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x64};

				memcpy(f + n, tag, 4);
				n += 4;
			}
			memcpy(f + n, d + 12, 2);
			n += 2;
			break;
		case DLT_LINUX_SLL:
			memset(f, 0, 16);
			f[3] = 1;  /* ARPHRD_ETHER */
			f[5] = 6;  /* address length */
			memcpy(f + 6, d + 6, 6);
			memcpy(f + 14, d + 12, 2);
			n = 16;
			break;
		case DLT_LINUX_SLL2:
			memset(f, 0, 20);
			memcpy(f, d + 12, 2);
			f[7] = 2;  /* interface index */
			f[9] = 1;  /* ARPHRD_ETHER */
			f[11] = 6; /* address length */
			memcpy(f + 12, d + 6, 6);
			n = 20;
			break;
		case DLT_RAW:
			break;
		default:
			ck_abort_msg("link type %d", dlt);
		}
		memcpy(f + n, d + 14, body);
		oh.caplen = oh.len = (bpf_u_int32)(n + body);
		pcap_dump((u_char *)out, &oh, f);
	}
	pcap_dump_close(out);
	pcap_close(dead);
	pcap_close(in);
}

void iwd_pcap_mutate(const char *src_name, const char *dst_name, uint64_t *rng)
{
	char src[1024], dst[1024], err[PCAP_ERRBUF_SIZE];
	static uint8_t f[262144];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *in, *dead;
	pcap_dumper_t *out;

	iwd_path(src, sizeof(src), src_name);
	iwd_path(dst, sizeof(dst), dst_name);
	in = pcap_open_offline(src, err);
	ck_assert_msg(in != NULL, "%s", err);
	dead = pcap_open_dead(pcap_datalink(in), 262144);
	ck_assert_ptr_nonnull(dead);
	out = pcap_dump_open(dead, dst);
	ck_assert_msg(out != NULL, "%s", pcap_geterr(dead));
	while (pcap_next_ex(in, &h, &d) == 1) {
		struct pcap_pkthdr oh = *h;
		unsigned r = (unsigned)iwt_rand_range(rng, 0, 99);

		ck_assert_uint_le(h->caplen, sizeof(f));
		memcpy(f, d, h->caplen);
		if (r < 3)
			continue; /* dropped */
		if (r < 20) {
			for (int k = (int)iwt_rand_range(rng, 1, 3); k > 0 && oh.caplen; k--)
				f[iwt_rand_range(rng, 0, oh.caplen - 1)] ^= (uint8_t)(1u << iwt_rand_range(rng, 0, 7));
		} else if (r < 24 && oh.caplen > 1) {
			oh.caplen = (bpf_u_int32)iwt_rand_range(rng, 0, oh.caplen - 1); /* snapshot length */
		}
		pcap_dump((u_char *)out, &oh, f);
		if (r >= 96)
			pcap_dump((u_char *)out, &oh, f); /* repeated */
	}
	pcap_dump_close(out);
	pcap_close(dead);
	pcap_close(in);
}
