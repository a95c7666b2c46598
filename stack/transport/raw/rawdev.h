/* A raw network device: one interface driven by our own TCP/IPv4
 * (net/) over AF_PACKET frame I/O (pktio.h), owning an IPv4
 * address the kernel does not have on that interface.
 *
 * Two ways to drive it:
 *   - stand-alone: poll iw_rawdev_fd() for POLLIN and wake up at
 *     iw_rawdev_next_deadline_us(); call iw_rawdev_poll() then;
 *   - in a context: iw_rawdev_attach() puts the fd on the context's epoll
 *     set and keeps a context timer at the stack's next deadline, so
 *     iw_progress() (or the progress thread) drives the device; users are
 *     told after every pass (iw_rawdev_user).
 * After queueing data on a connection (iwn_tcp_send*, close, connect),
 * call iw_rawdev_flush(): frames leave in one batch and the timer is
 * re-armed. Not thread-safe: one owner (or the context lock). */
#ifndef IW_RAWDEV_H
#define IW_RAWDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "stack/internal.h"
#include "net/net.h"
#include "pktio.h"

#define IW_RAWDEV_SPIN_DEFAULT_US 50u
#define IW_RAWDEV_SPIN_OFF UINT32_MAX

struct iw_rawdev_cfg {
	const char *ifname;
	uint32_t ip;      /* our address, host order; the kernel must not have it on ifname */
	uint8_t prefix;   /* on-link network (1..32); 0: 24 */
	uint32_t mtu;     /* 0 or larger than the interface's: the interface's */
	enum iw_pktio_rx_ring rx_ring;
	uint32_t sndbuf, rcvbuf; /* per TCP connection; 0: 1 MiB each */
	uint32_t max_conns;      /* 0: 64 */
	/* In a context, a progress call that would block first spins on the
	 * receive ring this long (us): a reply that arrives within it is
	 * seen without a sleep and wake-up. 0: IW_RAWDEV_SPIN_DEFAULT_US;
	 * IW_RAWDEV_SPIN_OFF: no spin. The environment variable
	 * IWARP_RAW_SPIN_US (0 = off) overrides it. The spin is adaptive
	 * (struct iw_rawdev_spin): it stops while most waits for frames last
	 * longer than this, and comes back when they get short again. */
	uint32_t spin_us;
	/* Seeded impairment in pktio (ppm, see pktio.h); 0: none. */
	uint32_t drop_ppm, reorder_ppm;
	uint64_t impair_seed;
	/* Transmit/receive offloads (pktio's PACKET_VNET_HDR: checksum
	 * offload, GSO super-segments of whole FPDUs, 64 KiB GSO/GRO packets
	 * received whole). On unless this is set, or the environment
	 * variable IWARP_RAW_OFFLOAD is 0. */
	bool no_offload;
};

/* Told after every pass of the device in a context (frames received or
 * timers run): check your connections. Embed in the owner; unlink before
 * freeing it. */
struct iw_rawdev_user {
	void (*cb)(struct iw_rawdev_user *u);
	struct iw_rawdev_user *next;
};

/* The adaptive receive spin. A spin pays only when the frame comes within
 * it; a wait longer than the budget burns the whole budget and then
 * sleeps anyway. A bulk receiver (or a sender waiting for ACKs) waits
 * mostly longer than that (the peer builds and sends a batch of 64 KiB
 * super-segments in between), so there the spin was CPU spent waiting,
 * counted in CPU per GB; a request/response pattern waits a round trip
 * and keeps it. The rule: a moving share of the recent waits (ended by
 * frames) that lasted at most max_us; the budget is max_us while at least
 * half of them did, else 0. A wait is measured whether or not we spun
 * (from the first empty ring check to the pass that received), so waits
 * that get short again turn the spin back on. */
struct iw_rawdev_spin {
	uint32_t max_us;  /* the configured budget; 0: never spin */
	uint32_t hit_avg; /* share of short waits, in 1/256 (moving, 1/8 per wait) */
};
void iw_rawdev_spin_init(struct iw_rawdev_spin *s, uint32_t max_us);
/* A wait for frames lasted wait_us: the budget for the next one (us). */
uint32_t iw_rawdev_spin_wait_done(struct iw_rawdev_spin *s, uint64_t wait_us);

struct iw_rawdev_stats {
	uint64_t polls, frames_in, timer_runs;
	uint64_t flushes;      /* iw_rawdev_flush calls (each may move the timer) */
	uint64_t timer_rearms; /* context timer moved (timerfd syscalls) */
	uint64_t spin_hits;    /* progress found frames in the ring without a syscall */
	/* Waits for frames (from an empty ring check to frames) that lasted
	 * at most / more than the spin budget, and those that began with the
	 * spin off (struct iw_rawdev_spin). */
	uint64_t waits_short, waits_long, waits_unspun;
	uint64_t tx_dropped; /* transmit ring still full after a flush */
	/* Raw transports on this device: FPDUs placed out of order. */
	uint64_t ooo_fpdus_placed, ooo_bytes_placed;
};

struct iw_rawdev {
	struct iw_pktio *pio;
	struct iwn_net net;
	uint32_t netmask; /* host order */
	struct iw_rawdev_stats st;
	/* context integration (iw_rawdev_attach) */
	struct iw_context *ctx;
	struct iw_watch watch;
	struct iw_timer timer;
	struct iw_peek peek; /* the ring, checked in memory before epoll_wait */
	struct iw_rawdev_user *users;
	bool in_pass; /* users are being told: no recursion */
	struct iw_rawdev_spin spin;
	bool waiting;     /* the ring was found empty since the last frames */
	uint64_t wait_t0; /* then (us) */
};

/* 0 or a negative errno (those of iw_pktio_open, -EINVAL for a bad
 * configuration, -ENOMEM); *why explains a failure. */
int iw_rawdev_open(const struct iw_rawdev_cfg *cfg, struct iw_rawdev **out, const char **why);
/* Detaches, aborts every connection, frees everything. */
void iw_rawdev_close(struct iw_rawdev *d);

/* CLOCK_MONOTONIC in microseconds: the time base of the stack. */
uint64_t iw_rawdev_now_us(void);
int iw_rawdev_fd(const struct iw_rawdev *d);
uint64_t iw_rawdev_next_deadline_us(const struct iw_rawdev *d);
/* Is addr (host order) on our link? */
bool iw_rawdev_on_link(const struct iw_rawdev *d, uint32_t addr);

/* Receive what waits, run due timers, send the output. Returns the
 * frames received. */
int iw_rawdev_poll(struct iw_rawdev *d);
/* Send queued frames; in a context, re-arm the timer. */
void iw_rawdev_flush(struct iw_rawdev *d);

/* Does a context timer (armed?, at armed_ms, CLOCK_MONOTONIC ms) have to
 * move for the stack's next deadline (us, UINT64_MAX: none)? Only when it
 * would fire after the deadline; an early timer stays. Exposed for tests. */
bool iw_rawdev_rearm_needed(bool armed, uint64_t armed_ms, uint64_t deadline_us);

/* Let ctx's progress loop drive the device. 0 or a negative errno. */
int iw_rawdev_attach(struct iw_rawdev *d, struct iw_context *ctx);
void iw_rawdev_detach(struct iw_rawdev *d);
void iw_rawdev_user_add(struct iw_rawdev *d, struct iw_rawdev_user *u);
void iw_rawdev_user_del(struct iw_rawdev *d, struct iw_rawdev_user *u);

#endif
