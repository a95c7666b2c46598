/* Inside pktio: the backends behind pktio.h. pktio.c checks arguments,
 * picks a backend (IWARP_PKTIO) and dispatches through ops; a backend's
 * handle starts with struct iw_pktio. */
#ifndef IW_PKTIO_IMPL_H
#define IW_PKTIO_IMPL_H

#include "pktio.h"

struct iw_pktio_ops {
	void (*close)(struct iw_pktio *p);
	int (*fd)(const struct iw_pktio *p);
	void (*mac)(const struct iw_pktio *p, uint8_t mac[6]);
	uint32_t (*mtu)(const struct iw_pktio *p);
	bool (*offload)(const struct iw_pktio *p);
	int (*recv)(struct iw_pktio *p, int max, iw_pktio_rx_fn cb, void *arg);
	uint32_t (*rx_flags)(const struct iw_pktio *p);
	bool (*rx_ready)(const struct iw_pktio *p);
	int (*send)(struct iw_pktio *p, const uint8_t *frame, uint32_t len);
	int (*send_tcp)(struct iw_pktio *p, const uint8_t *frame, uint32_t len, uint32_t gso_size);
	uint8_t *(*tx_slot)(struct iw_pktio *p, uint32_t *cap);
	int (*flush)(struct iw_pktio *p);
	void (*get_stats)(struct iw_pktio *p, struct iw_pktio_stats *st);
};

struct iw_pktio {
	const struct iw_pktio_ops *ops;
};

/* AF_PACKET rings (pktio_packet.c). */
extern const struct iw_pktio_ops iw_pktio_packet_ops;
int iw_pktio_packet_open(const struct iw_pktio_cfg *cfg, struct iw_pktio **out, const char **why);

#endif
