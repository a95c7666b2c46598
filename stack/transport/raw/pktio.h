/* Raw Ethernet frame I/O on one interface for the user-space TCP/IP
 * transport: AF_PACKET with an mmap'ed receive ring and an mmap'ed
 * transmit ring, qdisc bypass, and a kernel BPF filter that admits only
 * ARP and IPv4 addressed to our own IP (an address the kernel itself does
 * not have on that interface, so it never answers our peers with RSTs).
 *
 * Receive rings:
 *   TPACKET_V3 (default): frames land in blocks the kernel hands over when
 *     full or after block_timeout_ms; fewest wake-ups under load.
 *   TPACKET_V2: each frame is handed over at once; lowest latency.
 * Transmit: frames are copied into a TPACKET_V2 ring and sent in one
 * batch by iw_pktio_flush (one syscall for the whole batch).
 *
 * Frames a local sender left with a partial checksum (veth/tap peers with
 * checksum offload: TP_STATUS_CSUMNOTREADY) get their TCP/UDP checksum
 * completed in the ring before delivery, so the receiver can verify it.
 *
 * Offload (iw_pktio_cfg.offload): PACKET_VNET_HDR on both rings, so each
 * frame carries a virtio_net_hdr. Transmit: TCP frames may leave with a
 * partial checksum and as GSO super-segments (up to 64 KiB) that the
 * kernel cuts into wire segments, or passes whole to a veth peer.
 * Receive: slots hold 64 KiB GSO/GRO packets whole, and a frame whose
 * checksum the kernel verified (DATA_VALID) or a local sender left
 * partial (NEEDS_CSUM) is flagged IW_PKTIO_RX_CSUM_OK.
 *
 * Backends (pktio_impl.h): the functions below dispatch through an ops
 * table chosen at open by the environment variable IWARP_PKTIO: "packet"
 * (AF_PACKET, the default and only one). An AF_XDP backend was built and
 * measured against AF_PACKET with offloads and lost every bandwidth and
 * CPU row (docs/raw.md, "AF_XDP"); IWARP_PKTIO=xdp says so (-ENOTSUP),
 * any other value fails with -EINVAL and a text naming the valid ones.
 *
 * Needs CAP_NET_RAW: without it iw_pktio_open fails with -EPERM and the
 * error text says so. Not thread-safe: one owner (the progress loop). */
#ifndef IW_PKTIO_H
#define IW_PKTIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum iw_pktio_rx_ring {
	IW_PKTIO_RX_V3 = 0,
	IW_PKTIO_RX_V2 = 1,
};

struct iw_pktio_cfg {
	const char *ifname;
	uint32_t ipv4;       /* our address, host byte order; 0 admits every IPv4 frame */
	enum iw_pktio_rx_ring rx_ring;
	uint32_t rx_ring_bytes;     /* default 4 MiB */
	uint32_t tx_frames;         /* transmit ring slots, default 512 */
	uint32_t block_timeout_ms;  /* V3: hand over a partly filled block after this (default 1) */
	bool no_qdisc_bypass;       /* keep the qdisc (e.g. for tc on the interface) */
	/* Test impairment (the host may have no netem): IPv4 frames in either
	 * direction are dropped, or held back and released after the next
	 * frame (or at the end of the next recv/flush call), with these
	 * probabilities in parts per million, from a PRNG seeded with
	 * impair_seed. ARP is never impaired. All 0: off. */
	uint32_t drop_ppm, reorder_ppm;
	uint64_t impair_seed;
	/* Offloads (see above). Sizes with it: transmit slots of 68 KiB,
	 * 128 of them by default; receive ring 16 MiB by default (V2: 68 KiB
	 * slots). Falls back to no offload where the kernel refuses it
	 * (iw_pktio_offload says which). */
	bool offload;
};

struct iw_pktio_stats {
	uint64_t rx_frames, rx_bytes;
	uint64_t rx_truncated;   /* frames longer than a ring slot (dropped) */
	uint64_t rx_kernel_drops; /* ring full, as the kernel counts them */
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_ring_full;   /* iw_pktio_send found no free slot */
	uint64_t tx_flushes;
	uint64_t rx_csum_completed; /* checksum left to offload by a local sender, filled in */
	uint64_t rx_impair_drops, rx_impair_reorders, tx_impair_drops, tx_impair_reorders;
	uint64_t rx_csum_ok;   /* frames flagged IW_PKTIO_RX_CSUM_OK */
	uint64_t rx_gso;       /* GSO/GRO packets received whole */
	uint64_t tx_gso, tx_gso_bytes; /* super-segments sent */
};

struct iw_pktio;

/* 0 or a negative errno: -EPERM without CAP_NET_RAW, -ENODEV for an
 * unknown interface, -EINVAL for a bad configuration. *why (if given)
 * points at a static text explaining the failure. */
int iw_pktio_open(const struct iw_pktio_cfg *cfg, struct iw_pktio **out, const char **why);
void iw_pktio_close(struct iw_pktio *p);

/* Pollable (POLLIN) when received frames wait. */
int iw_pktio_fd(const struct iw_pktio *p);
void iw_pktio_mac(const struct iw_pktio *p, uint8_t mac[6]);
/* The interface's MTU (IP packet size). */
uint32_t iw_pktio_mtu(const struct iw_pktio *p);

/* Is the offload on (asked for and granted by the kernel)? */
bool iw_pktio_offload(const struct iw_pktio *p);

/* Hand up to max received frames to cb (each valid during the call only).
 * Returns how many were delivered (0: nothing waiting). */
typedef void (*iw_pktio_rx_fn)(void *arg, const uint8_t *frame, uint32_t len);
int iw_pktio_recv(struct iw_pktio *p, int max, iw_pktio_rx_fn cb, void *arg);

/* About the frame being delivered (call from inside cb only). */
#define IW_PKTIO_RX_CSUM_OK 1u /* TCP/UDP checksum verified by the kernel, or left partial by a local sender */
#define IW_PKTIO_RX_GSO 2u     /* a GSO/GRO packet: more than one wire segment */
uint32_t iw_pktio_rx_flags(const struct iw_pktio *p);

/* Does a received frame wait in the ring? Reads ring memory only (no
 * syscall), for busy polling; iw_pktio_recv delivers it. */
bool iw_pktio_rx_ready(const struct iw_pktio *p);

/* Copy one frame into the transmit ring; it leaves with the next flush.
 * 0, -EMSGSIZE (larger than MTU + Ethernet header or a slot), or -ENOBUFS
 * (ring full: flush, wait for POLLOUT on the fd, retry). */
int iw_pktio_send(struct iw_pktio *p, const uint8_t *frame, uint32_t len);
/* With the offload on: an IPv4/TCP frame whose TCP checksum holds only
 * the pseudo-header sum (iwn_tcp_set_csum_partial) for the kernel to
 * complete; gso_size not 0 makes it a super-segment of up to 64 KiB cut
 * into wire segments of gso_size payload bytes. Errors as
 * iw_pktio_send; -EINVAL without the offload or for a frame that is not
 * IPv4/TCP. */
int iw_pktio_send_tcp(struct iw_pktio *p, const uint8_t *frame, uint32_t len, uint32_t gso_size);
/* The data area of the next free transmit slot (at least *cap bytes are
 * writable there), or NULL when the ring is full or the reorder shim is
 * on. A frame built there and passed to iw_pktio_send is not copied.
 * Anything else written there is overwritten by the next send. */
uint8_t *iw_pktio_tx_slot(struct iw_pktio *p, uint32_t *cap);
/* Send everything queued. 0 or a negative errno. */
int iw_pktio_flush(struct iw_pktio *p);

void iw_pktio_get_stats(struct iw_pktio *p, struct iw_pktio_stats *st);

#endif
