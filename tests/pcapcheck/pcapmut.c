/* pcapmut: derive a negative capture from a good one. One mutation is
 * applied to one FPDU, in place in every packet that carries its bytes
 * (an FPDU may span segments; retransmitted copies are changed alike),
 * TCP checksums are recomputed where they were valid, the MPA CRC is
 * recomputed when CRC is on (unless the mutation is about CRC or framing),
 * and the result is written as a new pcap. See usage(). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mut.h"
#include "pcw.h"

static void usage(FILE *f)
{
	fputs(
"Usage: pcapmut [--conn N] --dir A>B|B>A [--op OP] [--nth K]\n"
"               --mutate KIND [--value V] IN.pcap OUT.pcap\n"
"       pcapmut --list IN.pcap   (the FPDUs it can select, one per line)\n"
"\n"
"Selects one FPDU: connection N as iwdump numbers them (default: the first\n"
"MPA connection that has the FPDU asked for), direction A>B (the MPA\n"
"initiator's) or B>A, and the K-th FPDU (default 1) of that direction,\n"
"counting only opcode OP if given (WRITE, READ_REQ, READ_RESP, SEND,\n"
"SEND_INV, SEND_SE, SEND_SE_INV, TERMINATE, IMM, IMM_SE, ATOMIC_REQ, ATOMIC_RESP, OP8..OP15, or a number).\n"
"\n"
"Mutations (V is optional):\n"
"  flip-bit        flip bit 0 of payload byte V (0); CRC left as it was\n"
"  msn             add V (1) to the MSN (untagged FPDU)\n"
"  mo              add V (16) to the MO (untagged FPDU)\n"
"  ddp-version     set the DDP version to V (2)\n"
"  rdmap-version   set the RDMAP version to V (2)\n"
"  opcode          set the RDMAP opcode to V (13)\n"
"  ulpdu-small     set ULPDU_LENGTH to V (default: one below the minimum\n"
"                  for the FPDU's header); CRC left as it was\n"
"  truncate        the sender's stream ends (FIN) after V bytes of the FPDU\n"
"                  (default half of it); its later packets are removed and\n"
"                  the peer's ACKs clamped to the new end\n"
"  read-req-to-write\n"
"                  turn a Read Request into an RDMA Write of the same\n"
"                  length (STag/TO = the request's sink), so the peer's\n"
"                  Read Response answers no request\n"
"  marker          add V (4) to the FPDUPTR of the first marker in the FPDU\n"
"Every mutation but flip-bit, ulpdu-small and truncate recomputes the MPA\n"
"CRC when the connection negotiated CRC. TCP checksums are recomputed where\n"
"they were valid. The last line printed, \"pcapmut: frame F\", is the frame\n"
"of OUT.pcap where the damage becomes detectable.\n"
"Exit status: 0 written, 1 the FPDU or mutation does not apply, 2 usage.\n",
	      f);
}

static int list(const char *path)
{
	struct pcw_cap cap;
	char err[512];

	if (pcw_load(path, &cap, err, sizeof(err)) < 0) {
		fprintf(stderr, "pcapmut: %s\n", err);
		pcw_free(&cap);
		return 1;
	}
	for (size_t ci = 0; ci < cap.nconns; ci++) {
		const struct pcw_conn *c = &cap.conns[ci];

		printf("conn %zu: %s, crc %s, markers A>B %s B>A %s\n", ci + 1,
		       c->mpa ? "MPA" : c->rejected ? "rejected" : "not decoded", c->crc ? "on" : "off",
		       c->d[0].markers ? "on" : "off", c->d[1].markers ? "on" : "off");
		for (int d = 0; d < 2 && c->mpa; d++) {
			for (size_t i = 0; i < c->d[d].nfpdus; i++) {
				const struct pcw_fpdu *f = &c->d[d].fpdus[i];

				printf("  %s %zu %s frames %u..%u bytes %" PRIu64 "..%" PRIu64
				       " ulpdu %u first-segment %u%s%s\n",
				       d ? "B>A" : "A>B", i + 1, pcw_op_name(f->opcode), f->first_pkt + 1,
				       f->last_pkt + 1, f->start, f->end, f->ulpdu_len, f->first_seg_bytes,
				       c->crc ? (f->crc_ok ? " crc ok" : " crc BAD") : "",
				       f->shares_mpa_segment ? " (shares the MPA frame's segment)" : "");
			}
			if (c->d[d].walk_stopped)
				printf("  %s: walk stopped at a bad or partial FPDU\n", d ? "B>A" : "A>B");
		}
	}
	pcw_free(&cap);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"conn", required_argument, NULL, 'c'}, {"dir", required_argument, NULL, 'd'},
		{"op", required_argument, NULL, 'o'},   {"nth", required_argument, NULL, 'n'},
		{"mutate", required_argument, NULL, 'm'}, {"value", required_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
	};
	const char *dir = NULL;
	int conn = 0, op = -1, mut = -1, ch;
	unsigned nth = 1;
	bool have_v = false;
	long long v = 0;
	char err[512] = "", msg[512] = "";
	struct sel s;
	char *end;

	if (argc == 3 && !strcmp(argv[1], "--list"))
		return list(argv[2]);
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			conn = (int)strtol(optarg, &end, 10);
			if (*end || conn < 1)
				goto bad;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'o':
			op = pcw_op_parse(optarg);
			if (op < 0)
				goto bad;
			break;
		case 'n':
			nth = (unsigned)strtoul(optarg, &end, 10);
			if (*end || !nth)
				goto bad;
			break;
		case 'm':
			for (int i = 0; i < M_COUNT; i++)
				if (!strcmp(optarg, mut_names[i]))
					mut = i;
			if (mut < 0)
				goto bad;
			break;
		case 'v':
			errno = 0;
			v = strtoll(optarg, &end, 0);
			if (errno || *end)
				goto bad;
			have_v = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc - 2 || !dir || mut < 0)
		goto bad;
	memset(&s, 0, sizeof(s));
	if (pcw_load(argv[optind], &s.cap, err, sizeof(err)) < 0) {
		fprintf(stderr, "pcapmut: %s\n", err);
		pcw_free(&s.cap);
		return 1;
	}
	if (mut_find(&s, conn, dir, op, nth, err, sizeof(err)) < 0 ||
	    mut_apply(&s, (enum mut)mut, have_v, v, msg, sizeof(msg), err, sizeof(err)) < 0 ||
	    pcw_write(&s.cap, argv[optind + 1], err, sizeof(err)) < 0) {
		fprintf(stderr, "pcapmut: %s\n", err);
		pcw_free(&s.cap);
		return 1;
	}
	printf("pcapmut: conn %d dir %s FPDU %zu (%s, frame %u, stream bytes %" PRIu64 "..%" PRIu64 "): %s: %s\n",
	       s.ci + 1, s.dir ? "B>A" : "A>B", s.fi + 1, pcw_op_name(s.f->opcode), s.f->last_pkt + 1, s.f->start,
	       s.f->end, mut_names[mut], msg);
	/* Where the damage shows in the new capture: the frame that completes
	 * the FPDU, or for a truncation the frame that now ends the stream. */
	printf("pcapmut: frame %zu\n",
	       mut_out_frame(&s.cap, s.at_pkt));
	pcw_free(&s.cap);
	return 0;
bad:
	usage(stderr);
	return 2;
}
