/* A deterministic two-host network for the net/ tests: two
 * struct iwn_net joined by a simulated link with seeded loss,
 * duplication, reordering and delay, driven in virtual time. */
#ifndef NETSIM_H
#define NETSIM_H

#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"

#define NETSIM_MAX_FRAMES 4096
#define NETSIM_FRAME_MAX 9018

struct netsim_link {
	uint32_t loss_ppm, dup_ppm, reorder_ppm; /* per frame, parts per million */
	uint64_t delay_us;                      /* base one-way delay */
	uint64_t jitter_us;                     /* uniform extra delay for reordered frames */
};

struct netsim_frame {
	uint64_t at;
	uint64_t order; /* FIFO among frames due at the same time */
	int to;
	uint32_t len;
	uint8_t *data;
};

struct netsim;
struct netsim_port {
	struct netsim *sim;
	int idx;
};

struct netsim {
	struct iwn_net net[2];
	struct netsim_port port[2];
	struct netsim_link link;
	uint64_t now;
	uint64_t rng;
	uint64_t order;
	struct netsim_frame q[NETSIM_MAX_FRAMES];
	uint32_t nq;
	uint64_t sent, lost, dupd, reordered, overflow;
	/* Transmit offload (netsim_init_gso): super-segments the link cut
	 * into wire segments as the kernel's GSO does; wire segments found
	 * larger than the MTU or with a bad checksum after the cut. */
	uint64_t gso_frames, gso_pieces, gso_oversize;
	/* A filter may drop frames (return false), look at them or change
	 * them (frame is the link's own copy). */
	bool (*filter)(void *arg, int from, uint8_t *frame, uint32_t len);
	void *filter_arg;
};

#define NETSIM_IP(i) (0x0A000001u + (uint32_t)(i)) /* 10.0.0.1, 10.0.0.2 */

/* tcp[i] NULL: defaults. mtu 0: 1500. */
void netsim_init(struct netsim *s, uint64_t seed, const struct netsim_link *link, const struct iwn_tcp_cfg *tcp0,
		 const struct iwn_tcp_cfg *tcp1, uint16_t mtu);
/* The same with transmit offload on the hosts in gso_mask (bit i: host
 * i): their TCP leaves checksums partial and sends GSO super-segments,
 * which the link cuts into wire segments (as Linux's software GSO:
 * sequence numbers, IPv4 IDs and lengths per piece, FIN and PSH on the
 * last piece only, checksums completed) before loss, reordering and the
 * filter see them. */
void netsim_init_gso(struct netsim *s, uint64_t seed, const struct netsim_link *link, const struct iwn_tcp_cfg *tcp0,
		     const struct iwn_tcp_cfg *tcp1, uint16_t mtu, unsigned gso_mask);
void netsim_fini(struct netsim *s);
/* Earliest pending event (frame delivery or timer), UINT64_MAX if none. */
uint64_t netsim_next(const struct netsim *s);
/* Advance to the next event if it is at or before limit and process
 * everything due then. false: nothing to do before limit (now = limit). */
bool netsim_step(struct netsim *s, uint64_t limit);
/* Step until nothing happens before now + us. */
void netsim_run_for(struct netsim *s, uint64_t us);
uint64_t netsim_rand(struct netsim *s);

#endif
