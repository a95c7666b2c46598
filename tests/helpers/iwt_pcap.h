/* Writes TCP connections into a pcap file (Ethernet link type) so that an
 * independent decoder (tshark) can read what our encoders produced, and so
 * that live connections can be recorded later.
 *
 * A connection (iwt_tcp) has two endpoints: IWT_TCP_A opens it (client),
 * IWT_TCP_B accepts it. The writer keeps each side's next sequence number
 * and acknowledges everything the other side sent, so the trace is a
 * consistent, loss-free TCP session with valid IPv4/IPv6 and TCP checksums.
 * The caller decides how a side's bytes are cut into segments. */
#ifndef IWT_PCAP_H
#define IWT_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcap/pcap.h>

/* Largest frame: Ethernet + IPv6 header + TCP header with options + the
 * largest payload an IPv4/IPv6 length field allows. */
#define IWT_PCAP_MAX_FRAME (14 + 40 + 60 + 65535)

/* TCP flags. */
#define IWT_TCP_FIN 0x01
#define IWT_TCP_SYN 0x02
#define IWT_TCP_RST 0x04
#define IWT_TCP_PSH 0x08
#define IWT_TCP_ACK 0x10

struct iwt_pcap {
	pcap_t *pd;
	pcap_dumper_t *dump;
	uint64_t ts_us;      /* timestamp of the next packet, microseconds since the epoch */
	uint32_t ts_step_us; /* added after every packet */
	uint64_t packets;    /* packets written */
	uint8_t frame[IWT_PCAP_MAX_FRAME];
};

/* Create (truncate) path. Timestamps start at a fixed instant and grow by
 * 10 us per packet unless changed. Returns 0 or a negative errno. */
int iwt_pcap_open(struct iwt_pcap *p, const char *path);
/* Flush and close. Returns 0 or a negative errno. Safe on a closed writer. */
int iwt_pcap_close(struct iwt_pcap *p);
/* Set the next packet's timestamp (e.g. from a live clock). */
void iwt_pcap_set_time(struct iwt_pcap *p, uint64_t us);
/* Write one raw Ethernet frame. Returns 0 or a negative errno. */
int iwt_pcap_write_frame(struct iwt_pcap *p, const uint8_t *frame, size_t len);

struct iwt_endpoint {
	uint8_t mac[6];
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* IPv4: first 4 bytes */
	uint16_t port;
};

/* Fill ep from text: mac "02:00:00:00:00:01", addr "10.0.0.1" or "fd00::1".
 * Returns 0 or -EINVAL. */
int iwt_endpoint_set(struct iwt_endpoint *ep, const char *mac, const char *addr, uint16_t port);

enum { IWT_TCP_A = 0, IWT_TCP_B = 1 };

struct iwt_tcp {
	struct iwt_pcap *pcap;
	struct iwt_endpoint ep[2];
	uint32_t isn[2];     /* initial sequence numbers */
	uint32_t snd_nxt[2]; /* next sequence number each side sends */
	uint64_t sent[2];    /* data bytes each side sent */
	uint16_t ip_id[2];
	uint16_t window;  /* advertised window (unscaled) */
	uint16_t mss_opt; /* MSS option on SYN and SYN-ACK */
	bool established;
	bool fin[2];
};

/* Describe a connection from a to b with the given initial sequence
 * numbers. Nothing is written yet. Both endpoints must have one family. */
void iwt_tcp_init(struct iwt_tcp *c, struct iwt_pcap *p, const struct iwt_endpoint *a,
		  const struct iwt_endpoint *b, uint32_t isn_a, uint32_t isn_b);

/* SYN, SYN-ACK, ACK. Returns 0 or a negative errno. */
int iwt_tcp_handshake(struct iwt_tcp *c);

/* One segment from side dir carrying len bytes (len may be 0) with these
 * flags; ACK is added once the connection is established. SYN and FIN
 * take one sequence number. Returns 0, -EMSGSIZE when len does not fit an
 * IP packet, -EINVAL, or a write error. */
int iwt_tcp_segment(struct iwt_tcp *c, int dir, uint8_t flags, const void *data, size_t len);

/* Send len bytes from side dir cut into segments of at most mss bytes
 * (PSH on the last). Returns 0 or a negative errno. */
int iwt_tcp_send(struct iwt_tcp *c, int dir, const void *data, size_t len, size_t mss);

/* Send len bytes from side dir cut at the given segment sizes, in order;
 * when the list runs out the rest is cut at its last size. A zero size is
 * -EINVAL. Returns 0 or a negative errno. */
int iwt_tcp_send_sizes(struct iwt_tcp *c, int dir, const void *data, size_t len,
		       const size_t *sizes, size_t nsizes);

/* A pure ACK from side dir. */
int iwt_tcp_ack(struct iwt_tcp *c, int dir);

/* Orderly close started by side dir: FIN, FIN-ACK from the peer, ACK. */
int iwt_tcp_close(struct iwt_tcp *c, int dir);

/* A RST from side dir. */
int iwt_tcp_reset(struct iwt_tcp *c, int dir);

/* Sequence number of the next byte side dir sends. */
static inline uint32_t iwt_tcp_next_seq(const struct iwt_tcp *c, int dir)
{
	return c->snd_nxt[dir & 1];
}

#endif
