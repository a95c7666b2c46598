/* iwdump: decode and check the iWARP (MPA / DDP / RDMAP) traffic in a pcap.
 * See usage() for the options and output formats. */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwdump.h"

#define DEFAULT_REORDER_MAX (1u << 20)

static void usage(FILE *f)
{
	fputs(
"Usage: iwdump [options] FILE.pcap\n"
"\n"
"NAME\n"
"    iwdump - decode and check the iWARP traffic in a packet capture\n"
"\n"
"SYNOPSIS\n"
"    iwdump [-c [--allow-gaps]] [-q] [-j] [-p PORT] [-f EXPR] [OPTIONS] FILE.pcap\n"
"\n"
"DESCRIPTION\n"
"    Decodes the iWARP connections in a capture (MPA RFC 5044/6581, DDP RFC 5041,\n"
"    RDMAP RFC 5040) with libiwarp's own decoders, and optionally checks them.\n"
"\n"
"OPTIONS\n"
"    -c, --check          validate: exit 1 on any protocol violation, or on a\n"
"                         capture problem (gap, mid-connection start) unless\n"
"                         --allow-gaps; MPA frames are also decoded strictly\n"
"                         (reserved flag bits must be zero)\n"
"        --allow-gaps     with --check, capture problems are warnings only\n"
"    -q, --quiet          print no CONN/MPA/FPDU/MSG/NOTE lines; violations,\n"
"                         warnings, summaries and the total are still printed\n"
"    -j, --json           one JSON object per line instead of text\n"
"    -p, --port PORT      only TCP connections with this port\n"
"    -f, --filter EXPR    a pcap filter expression applied while reading\n"
"        --max-ulpdu N    largest acceptable ULPDU_LENGTH (default 65535)\n"
"        --reorder-max N  out-of-order bytes buffered per direction before a\n"
"                         hole is declared a gap (default 1048576)\n"
"    -h, --help           this text\n"
"\n"
"INPUT\n"
"    A pcap or pcapng file with Ethernet (VLAN tags allowed), Linux cooked\n"
"    (SLL, SLL2), raw IP or BSD loopback link types; IPv4 and IPv6; anything\n"
"    but TCP is ignored, IP fragments too. Each TCP connection is reassembled\n"
"    per direction: retransmitted and overlapping bytes are dropped, segments\n"
"    ahead of a hole wait until it is filled, sequence numbers may wrap. A\n"
"    hole that is never filled is a gap: that direction is not decoded further.\n"
"    A connection is decoded from its SYN, or from an MPA Request if the TCP\n"
"    handshake is missing; one whose start is missing is skipped. One that does\n"
"    not open with an MPA Request is not iWARP and is ignored. A new SYN on\n"
"    the same address pair after the old connection ended starts a new one.\n"
"    A = the initiator (sends SYN and the MPA Request), B = the responder.\n"
"    Negotiation: CRC in both directions iff the Reply has C=1; A inserts\n"
"    markers iff the Reply has M=1, B iff the Request has M=1; with rev 2\n"
"    enhanced frames B accepts at most Reply.IRD outstanding Read Requests and\n"
"    A at most Request.IRD.\n"
"    A capture file that ends in the middle of a frame (a truncated capture) is\n"
"    decoded up to there and reported as a capture problem (a WARNING line).\n"
"\n"
"OUTPUT\n"
"    One line per event (text; D is A>B or B>A, F the 1-based frame number, times in\n"
"    seconds since the first packet; --json carries the same fields):\n"
"      CONN N frame F: ADDR:PORT > ADDR:PORT [(no TCP handshake seen)]\n"
"      MPA conn N dir D frame F: Request|Reply rev R M=0|1 C=0|1 R=0|1\n"
"          [enhanced ird I ord O [p2p rtr TYPES]] pd LEN [rfc7306 ask|ack]\n"
"      MPA conn N frame F: negotiated rev R [enhanced], crc on|off,\n"
"          markers A>B on|off B>A on|off, A ird I ord O, B ird I ord O\n"
"      FPDU conn N dir D frame F time T: OP T=t L=l (stag 0xS to 0xTO |\n"
"          qn Q msn M mo O) [inv 0xS] len PAYLOAD crc ok|crc BAD|no crc\n"
"          (one per FPDU, in the frame where its last byte arrived)\n"
"      MSG conn N dir D frame F: one per completed message:\n"
"          SEND|SEND_SE|SEND_INV|SEND_SE_INV msn M BYTES bytes [inv 0xS]\n"
"          WRITE stag 0xS to 0xTO BYTES bytes\n"
"          READ_REQ msn M sink 0xS to 0xTO src 0xS to 0xTO size N\n"
"          READ_RESP stag 0xS to 0xTO BYTES bytes complete (src 0xS to 0xTO)\n"
"              or (request not seen) after the other direction lost bytes\n"
"          TERMINATE layer L etype E ecode 0xC: TEXT [M D R] [(siw layout)]\n"
"          IMM|IMM_SE msn M imm 0xVALUE            (RFC 7306 Immediate Data)\n"
"          ATOMIC_REQ msn M id I (FetchAdd|CmpSwap stag 0xS to 0xTO add/swap 0xV\n"
"              mask 0xM compare 0xV mask 0xM)\n"
"          ATOMIC_RESP msn M id I orig 0xV (the request, as above)\n"
"      VIOLATION conn N dir D frame F: TEXT (layer L etype E ecode 0xC)\n"
"          with the Terminate the receiver should send\n"
"      WARNING conn N [dir D] frame F: TEXT   (capture problems)\n"
"      NOTE conn N [dir D] frame F: TEXT      (information)\n"
"      SUMMARY conn N: A > B: RESULT, then indented lines: negotiated MPA\n"
"          parameters, per direction FPDU/message/byte counts, messages/FPDUs\n"
"          per opcode, completed messages per opcode and size\n"
"          (D sizes (bytes x messages): OP SIZExCOUNT ..., a READ_REQ's size\n"
"          is the size it asks for), Read Requests D sent and how many the\n"
"          other side answered completely (D reads: N requested, N answered,\n"
"          N unanswered[, N responses to unseen requests]), payload bytes per\n"
"          STag, and the violation/warning counts\n"
"      TOTAL C connections, V violations, W warnings\n"
"    OP names: WRITE READ_REQ READ_RESP SEND SEND_INV SEND_SE SEND_SE_INV\n"
"    TERMINATE IMM IMM_SE ATOMIC_REQ ATOMIC_RESP (RFC 7306), OP12..OP15 for\n"
"    undefined opcodes. RFC 7306 opcodes are valid only where the MPA\n"
"    Request carried libiwarp's ASK bit and the Reply its ACK bit (shown as\n"
"    'rfc7306 ask' / 'rfc7306 ack' on the MPA lines and ', rfc7306' in the\n"
"    negotiated line).\n"
"\n"
"CHECKS\n"
"    Each check, with the (layer, etype, ecode) of the Terminate it implies:\n"
"    CRC error (2,0,0x02); marker FPDUPTR wrong (2,0,0x03); ULPDU_LENGTH too\n"
"    small or too large (2,0,0x03); truncated FPDU at end of stream (2,0,0x01);\n"
"    invalid MPA Request/Reply frame, or a Reply the initiator must refuse\n"
"    (2,0,0x04); DDP version (1,1,0x04) tagged / (1,2,0x06) untagged; RDMAP\n"
"    version (0,2,0x05); undefined opcode or wrong T bit for it (0,2,0x06);\n"
"    untagged QN not the opcode's queue (1,2,0x01); MSN out of sequence per\n"
"    queue, starting at 1 on QN 0, 1 and 2 (1,2,0x03); MO discontinuity within\n"
"    a message (1,2,0x04); Read Response without an outstanding Read Request\n"
"    (0,2,0x06), with another sink STag (1,1,0x00), a TO not continuing the\n"
"    response or more bytes than requested (1,1,0x01), ending short of the\n"
"    size (0,2,0xff); Read Request body longer than 28 bytes (1,2,0x05),\n"
"    shorter or not at MO 0 (0,2,0xff); more Read Requests outstanding than\n"
"    the receiver's IRD (0,2,0x07). These are the causes libiwarp's own\n"
"    receive path (rdmap_conn) reports, checked against it by the tests.\n"
"    After a DDP/RDMAP violation decoding goes on with the values seen; after\n"
"    an MPA-level one that direction stops, and Read Responses for requests\n"
"    it may have lost are no longer judged. A Terminate in the stream is\n"
"    decoded (RFC and Linux siw layouts) and reported, not a violation.\n"
"\n"
"EXIT STATUS\n"
"    0: fine (always without --check, unless the file cannot be\n"
"    opened), 1 violations or capture problems (gaps, mid-connection starts, a\n"
"    truncated file) with --check, 2 usage error or a file that cannot be opened\n"
"    or is not a capture.\n",
	      f);
}

enum {
	OPT_ALLOW_GAPS = 256,
	OPT_MAX_ULPDU,
	OPT_REORDER_MAX,
};

static bool parse_num(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return false;
	*out = v;
	return true;
}

static int run(const char *path, const char *filter, const struct iwd_opts *o)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	struct iwd_where w = {0, 0};
	struct iwd_table *t;
	double t0 = 0;
	pcap_t *pd;
	int dlt, rc;

	pd = pcap_open_offline(path, err);
	if (!pd) {
		/* libpcap names the file only for some errors ("unknown file
		 * format" does not). */
		if (strncmp(err, path, strlen(path)) == 0)
			fprintf(stderr, "iwdump: %s\n", err);
		else
			fprintf(stderr, "iwdump: %s: %s (not a pcap or pcapng capture?)\n", path, err);
		return 2;
	}
	dlt = pcap_datalink(pd);
	if (!iwd_dlt_supported(dlt)) {
		fprintf(stderr, "iwdump: %s: link type %s (%d) not supported\n", path, iwd_dlt_name(dlt), dlt);
		pcap_close(pd);
		return 2;
	}
	if (filter) {
		struct bpf_program prog;

		if (pcap_compile(pd, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 ||
		    pcap_setfilter(pd, &prog) < 0) {
			fprintf(stderr, "iwdump: filter: %s\n", pcap_geterr(pd));
			pcap_close(pd);
			return 2;
		}
		pcap_freecode(&prog);
	}
	t = iwd_table_new(o);
	if (!t) {
		fprintf(stderr, "iwdump: out of memory\n");
		pcap_close(pd);
		return 2;
	}
	while ((rc = pcap_next_ex(pd, &h, &data)) == 1) {
		struct iwd_pkt p;
		double ts = (double)h->ts.tv_sec + (double)h->ts.tv_usec / 1e6;

		w.frame++;
		if (w.frame == 1)
			t0 = ts;
		w.time = ts - t0;
		if (iwd_parse(dlt, data, h->caplen, &p) == IWD_PKT_TCP)
			iwd_table_packet(t, &p, &w);
	}
	iwd_table_finish(t, &w);
	if (rc == PCAP_ERROR) {
		/* A capture cut short (e.g. tcpdump killed) is a capture problem
		 * like a gap: a warning, so --check fails it unless --allow-gaps
		 * and the totals say it; stderr names it even with --quiet. */
		char text[PCAP_ERRBUF_SIZE + 128];

		snprintf(text, sizeof(text), "capture file ends in the middle of frame %" PRIu64 " (%s); "
			 "decoded the %" PRIu64 " frames before it", w.frame + 1, pcap_geterr(pd), w.frame);
		iwd_out_file_warning(&w, text);
		fprintf(stderr, "iwdump: %s: %s\n", path, text);
	}
	for (size_t i = 0; i < iwd_table_count(t); i++)
		iwd_out_summary(iwd_table_get(t, i));
	iwd_out_totals();
	fflush(stdout);
	iwd_table_free(t);
	pcap_close(pd);
	if (!o->check)
		return 0;
	if (iwd_totals.violations || (iwd_totals.warnings && !o->allow_gaps))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"check", no_argument, NULL, 'c'},
		{"allow-gaps", no_argument, NULL, OPT_ALLOW_GAPS},
		{"quiet", no_argument, NULL, 'q'},
		{"json", no_argument, NULL, 'j'},
		{"port", required_argument, NULL, 'p'},
		{"filter", required_argument, NULL, 'f'},
		{"max-ulpdu", required_argument, NULL, OPT_MAX_ULPDU},
		{"reorder-max", required_argument, NULL, OPT_REORDER_MAX},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct iwd_opts o = {.port = -1, .reorder_max = DEFAULT_REORDER_MAX};
	const char *filter = NULL;
	unsigned long long v;
	int ch;

	while ((ch = getopt_long(argc, argv, "cqjp:f:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.check = true;
			break;
		case OPT_ALLOW_GAPS:
			o.allow_gaps = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'p':
			if (!parse_num(optarg, 65535, &v)) {
				fprintf(stderr, "iwdump: invalid value '%s' for -p/--port (valid: 0..65535)\n", optarg);
				return 2;
			}
			o.port = (int)v;
			break;
		case 'f':
			filter = optarg;
			break;
		case OPT_MAX_ULPDU:
			if (!parse_num(optarg, 65535, &v) || v < 2) {
				fprintf(stderr, "iwdump: invalid value '%s' for --max-ulpdu (valid: 2..65535)\n", optarg);
				return 2;
			}
			o.max_ulpdu = (uint16_t)v;
			break;
		case OPT_REORDER_MAX:
			if (!parse_num(optarg, SIZE_MAX / 2, &v)) {
				fprintf(stderr, "iwdump: invalid value '%s' for --reorder-max (valid: 0..%zu bytes)\n", optarg,
					(size_t)(SIZE_MAX / 2));
				return 2;
			}
			o.reorder_max = (size_t)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fputs("Usage: iwdump [options] FILE.pcap\nTry 'iwdump --help'.\n", stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "iwdump: %s\nUsage: iwdump [options] FILE.pcap\nTry 'iwdump --help'.\n",
			optind < argc ? "one capture file at a time" : "no capture file given");
		return 2;
	}
	iwd_out_init(&o);
	return run(argv[optind], filter, &o);
}
