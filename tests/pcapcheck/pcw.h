/* pcw: a capture loaded whole into memory, its TCP connections, each
 * direction reassembled into one stream buffer with a map back to the
 * packets that carried every byte, and the MPA FPDUs of each direction
 * (markers and CRC as negotiated by the MPA Request/Reply). Used by the
 * mutator (pcapmut) to rewrite one FPDU in place and by the tshark cross-
 * check (pcapxcheck) to know where FPDUs sit relative to TCP segments.
 *
 * Numbering follows iwdump: connections 1.. in order of their first
 * packet (a new SYN on a finished or different connection of the same
 * address pair starts a new one), direction 0 (A>B) is the initiator's,
 * frames are 1-based packet numbers, FPDUs 1.. per direction. */
#ifndef PCW_H
#define PCW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcap/pcap.h>

#define PCW_HDR_MAX 64 /* logical FPDU bytes kept per FPDU (length + headers) */

struct pcw_pkt {
	struct pcap_pkthdr h;
	uint8_t *data;    /* owned copy of the captured bytes */
	bool tcp;         /* IPv4/IPv6 + TCP parsed */
	bool drop;        /* the mutator removes it */
	int family;       /* 4 or 6 */
	size_t ip_off, tcp_off, pay_off, pay_len;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	int conn;         /* index into pcw_cap.conns, -1 if none */
	int dir;
};

struct pcw_fpdu {
	uint64_t start, end;    /* stream offsets: first byte (a leading marker) and one past the CRC */
	uint16_t ulpdu_len;
	uint32_t wire_len;      /* end - start */
	uint8_t hdr[PCW_HDR_MAX]; /* logical bytes 0.. (markers removed), up to the FPDU's length */
	uint32_t last_pkt;      /* packet whose arrival completed it in stream order */
	uint32_t first_pkt;     /* packet that delivered its first byte */
	uint32_t first_seg_bytes; /* of its bytes in that packet */
	bool shares_mpa_segment;  /* first byte came in the packet that ended the MPA frame */
	bool crc_ok;            /* CRC field matches (meaningful when CRC is on) */
	uint8_t opcode;
	bool tagged;
};

struct pcw_dir {
	bool have_base;
	uint32_t base;        /* sequence number of stream offset 0 */
	uint8_t *buf;         /* reassembled bytes (first copy wins) */
	uint32_t *owner;      /* per byte: packet index that first carried it, UINT32_MAX none */
	uint64_t len;         /* highest offset seen + 1 */
	uint64_t contig;      /* bytes present from offset 0 without a hole */
	bool fin;
	uint64_t frame_len;   /* MPA Request/Reply length: where the FPDU stream starts */
	bool markers;
	struct pcw_fpdu *fpdus;
	size_t nfpdus;
	bool walk_stopped;    /* the walk ended before contig (bad length, partial FPDU) */
};

struct pcw_conn {
	int family;
	uint8_t addr[2][16];
	uint16_t port[2];
	bool syn_seen, rst, closed;
	uint32_t syn_seq;
	bool any_payload;
	bool mpa;       /* Request and non-reject Reply decoded */
	bool rejected;
	bool crc;
	struct pcw_dir d[2];
};

struct pcw_cap {
	int dlt;
	int snaplen;
	struct pcw_pkt *pkts;
	size_t npkts;
	struct pcw_conn *conns;
	size_t nconns;
};

/* Load path, find connections, reassemble, decode MPA frames and walk the
 * FPDUs. Returns 0, or -1 with a message in err. */
int pcw_load(const char *path, struct pcw_cap *cap, char *err, size_t errlen);
void pcw_free(struct pcw_cap *cap);

/* Stream offset of logical byte i of the FPDU starting at start in d
 * (markers skipped). */
uint64_t pcw_logical_off(const struct pcw_dir *d, uint64_t start, uint32_t i);

/* Packet whose arrival completed stream bytes [0, off] of d in order (the
 * frame where a decoder can first see byte off). */
uint32_t pcw_delivered_pkt(const struct pcw_dir *d, uint64_t off);

/* Write stream bytes [from, to) of direction dir of conn back into every
 * packet that carries any of them. Returns the number of packets changed. */
size_t pcw_store(struct pcw_cap *cap, int conn, int dir, uint64_t from, uint64_t to);

/* Fix IPv4 header and TCP checksums of packet p (recomputed only where the
 * old value verified, so offloaded, unfinished checksums stay as they
 * were). Call pcw_csum_ok first and pass its results. */
void pcw_csum_state(const struct pcw_pkt *p, bool *ip_ok, bool *tcp_ok);
void pcw_csum_fix(struct pcw_pkt *p, bool ip_ok, bool tcp_ok);

/* Write the packets not marked drop to path with the capture's link type. */
int pcw_write(const struct pcw_cap *cap, const char *path, char *err, size_t errlen);

/* CRC-32C over stream bytes [start, first CRC byte) of an FPDU, the way
 * the MPA receiver computes it. */
uint32_t pcw_fpdu_crc(const struct pcw_dir *d, const struct pcw_fpdu *f);

const char *pcw_op_name(uint8_t opcode);
/* Opcode from a name (WRITE, READ_REQ, ..., OP8..OP15) or a number; -1. */
int pcw_op_parse(const char *s);

#endif
