/* Raw Ethernet frame I/O: argument checks, the choice of backend
 * (IWARP_PKTIO, see pktio.h) and dispatch through its ops table. */
#include "pktio_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int iw_pktio_open(const struct iw_pktio_cfg *cfg, struct iw_pktio **out, const char **why)
{
	const char *sel = getenv("IWARP_PKTIO");

	if (!sel || !*sel || strcmp(sel, "packet") == 0)
		return iw_pktio_packet_open(cfg, out, why);
	if (strcmp(sel, "xdp") == 0) {
		if (why)
			*why = "IWARP_PKTIO=xdp: AF_XDP was built and measured against AF_PACKET with offloads "
			       "and not kept (docs/raw.md, \"AF_XDP\"); valid values: packet";
		return -ENOTSUP;
	}
	if (why) {
		/* The text names the value: it lives until the next bad open. */
		static _Thread_local char text[160];
		snprintf(text, sizeof(text), "IWARP_PKTIO=%.40s: unknown backend; valid values: packet (AF_PACKET, the default)",
			 sel);
		*why = text;
	}
	return -EINVAL;
}

void iw_pktio_close(struct iw_pktio *p)
{
	if (p)
		p->ops->close(p);
}

int iw_pktio_fd(const struct iw_pktio *p)
{
	return p->ops->fd(p);
}

void iw_pktio_mac(const struct iw_pktio *p, uint8_t mac[6])
{
	p->ops->mac(p, mac);
}

uint32_t iw_pktio_mtu(const struct iw_pktio *p)
{
	return p->ops->mtu(p);
}

bool iw_pktio_offload(const struct iw_pktio *p)
{
	return p->ops->offload(p);
}

uint32_t iw_pktio_rx_flags(const struct iw_pktio *p)
{
	return p->ops->rx_flags(p);
}

bool iw_pktio_rx_ready(const struct iw_pktio *p)
{
	return p->ops->rx_ready(p);
}

int iw_pktio_recv(struct iw_pktio *p, int max, iw_pktio_rx_fn cb, void *arg)
{
	if (!p || !cb || max <= 0)
		return -EINVAL;
	return p->ops->recv(p, max, cb, arg);
}

int iw_pktio_send(struct iw_pktio *p, const uint8_t *frame, uint32_t len)
{
	if (!p || !frame)
		return -EINVAL;
	return p->ops->send(p, frame, len);
}

int iw_pktio_send_tcp(struct iw_pktio *p, const uint8_t *frame, uint32_t len, uint32_t gso_size)
{
	if (!p || !frame)
		return -EINVAL;
	return p->ops->send_tcp(p, frame, len, gso_size);
}

uint8_t *iw_pktio_tx_slot(struct iw_pktio *p, uint32_t *cap)
{
	return p ? p->ops->tx_slot(p, cap) : NULL;
}

int iw_pktio_flush(struct iw_pktio *p)
{
	return p ? p->ops->flush(p) : -EINVAL;
}

void iw_pktio_get_stats(struct iw_pktio *p, struct iw_pktio_stats *st)
{
	p->ops->get_stats(p, st);
}
