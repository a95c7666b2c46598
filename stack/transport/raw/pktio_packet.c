/* Raw Ethernet frame I/O over AF_PACKET rings: the default backend of
 * pktio.h (pktio.c dispatches to it through its ops table). */
#include "pktio_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define ETH_HDR 14
#define RX_FRAME 2048          /* smallest V2 slot; V3 frames are packed into blocks */
#define RX_V2_BLOCK (1u << 16)
#define V3_BLOCK (1u << 20)    /* 1 MiB blocks: many frames per hand-over */
#define TX_SLOT 16384          /* fits a 9000-byte MTU frame plus the header */
/* Offload: a slot (V2 transmit and receive) holds a 64 KiB super-segment
 * with the ring header and the virtio_net_hdr: 17 pages. */
#define GSO_SLOT (17u * 4096u)
#define VNET_LEN ((uint32_t)sizeof(struct virtio_net_hdr))
#define GSO_FRAME_MAX (ETH_HDR + 65535u) /* an IPv4 packet of the largest total length */

/* One frame held back by the reorder shim. age: calls it has waited. */
struct held {
	uint8_t *buf;
	uint32_t len;
	uint32_t age;
	bool on;
	struct virtio_net_hdr vh; /* transmit: the offload it leaves with */
};

struct pk {
	struct iw_pktio base; /* first: the public handle */
	int rx_fd, tx_fd;
	enum iw_pktio_rx_ring rx_ring;
	uint8_t *rx_map;
	size_t rx_map_len;
	uint32_t rx_nslots, rx_slot_size; /* V2: frames; V3: blocks */
	uint32_t rx_next;
	uint8_t *tx_map;
	size_t tx_map_len;
	uint32_t tx_nslots, tx_next, tx_queued, tx_slot_size;
	uint32_t vnet;     /* bytes of virtio_net_hdr before each frame (0: no offload) */
	uint32_t hold_max; /* largest frame the reorder shim holds back */
	uint32_t rx_flags; /* of the frame being delivered */
	bool tso;          /* the interface segments TCP itself (ETHTOOL_GTSO) */
	uint8_t mac[6];
	uint32_t mtu;
	struct iw_pktio_stats st;
	uint32_t drop_ppm, reorder_ppm;
	uint64_t rng;
	struct held rx_held, tx_held;
};

/* Admit ARP, and IPv4 whose destination is ours (0: any); drop the rest
 * in the kernel, before it is copied into the ring. */
static int attach_filter(int fd, uint32_t ipv4)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                 /* EtherType */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 3, 0),   /* -> accept */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 3),    /* -> drop */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HDR + 16),       /* IPv4 destination */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ipv4, 0, 1),        /* ours: accept, else drop */
		BPF_STMT(BPF_RET | BPF_K, 0x40000),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	/* ipv4 == 0: any IPv4 destination passes. */
	if (ipv4 == 0)
		code[4] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0);
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

static int drop_all_filter(int fd)
{
	struct sock_filter code[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = code };
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

/* protocol 0: the socket receives nothing (the transmit socket). */
static int bind_to(int fd, int ifindex, uint16_t protocol)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(protocol),
		.sll_ifindex = ifindex,
	};
	return bind(fd, (struct sockaddr *)&sll, sizeof(sll));
}

static int setup_rx(struct pk *p, const struct iw_pktio_cfg *cfg)
{
	uint32_t bytes = cfg->rx_ring_bytes ? cfg->rx_ring_bytes : p->vnet ? 16u << 20 : 4u << 20;
	int ver;

	if (cfg->rx_ring == IW_PKTIO_RX_V3) {
		struct tpacket_req3 req = { 0 };
		ver = TPACKET_V3;
		if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) < 0)
			return -errno;
		req.tp_block_size = V3_BLOCK;
		req.tp_block_nr = bytes / V3_BLOCK ? bytes / V3_BLOCK : 1;
		req.tp_frame_size = RX_FRAME;
		req.tp_frame_nr = req.tp_block_nr * (V3_BLOCK / RX_FRAME);
		req.tp_retire_blk_tov = cfg->block_timeout_ms ? cfg->block_timeout_ms : 1;
		if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
			return -errno;
		p->rx_nslots = req.tp_block_nr;
		p->rx_slot_size = req.tp_block_size;
	} else {
		struct tpacket_req req = { 0 };
		ver = TPACKET_V2;
		if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) < 0)
			return -errno;
		/* A V2 slot holds one whole frame of the interface's MTU: the
		 * kernel truncates longer ones, which we must drop, so with
		 * fixed 2 KiB slots every segment above an MTU of about 1980
		 * was lost and TCP resent it forever (issue 11). */
		uint32_t slot = RX_FRAME;
		while (slot < TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + ETH_HDR + p->mtu && slot < RX_V2_BLOCK)
			slot *= 2;
		req.tp_block_size = RX_V2_BLOCK;
		if (p->vnet) {
			/* GSO/GRO packets of 64 KiB arrive whole (a veth passes
			 * them on): a slot must hold one, or it is truncated. */
			slot = GSO_SLOT;
			req.tp_block_size = GSO_SLOT;
		}
		req.tp_frame_size = slot;
		req.tp_block_nr = bytes / req.tp_block_size ? bytes / req.tp_block_size : 1;
		req.tp_frame_nr = req.tp_block_nr * (req.tp_block_size / slot);
		if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
			return -errno;
		p->rx_nslots = req.tp_frame_nr;
		p->rx_slot_size = slot;
	}
	p->rx_ring = cfg->rx_ring;
	p->rx_map_len = (size_t)p->rx_nslots * p->rx_slot_size;
	p->rx_map = mmap(NULL, p->rx_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->rx_fd, 0);
	if (p->rx_map == MAP_FAILED) {
		p->rx_map = NULL;
		return -errno;
	}
	return 0;
}

static int setup_tx(struct pk *p, const struct iw_pktio_cfg *cfg)
{
	struct tpacket_req req = { 0 };
	int ver = TPACKET_V2;
	uint32_t n = cfg->tx_frames ? cfg->tx_frames : p->vnet ? 128 : 512;
	uint32_t slot = p->vnet ? GSO_SLOT : TX_SLOT;

	if (setsockopt(p->tx_fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver)) < 0)
		return -errno;
	if (!cfg->no_qdisc_bypass && !(p->vnet && !p->tso)) {
		int one = 1;
		/* Old kernels lack it; the ring works without. */
		(void)setsockopt(p->tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	}
	req.tp_block_size = slot;
	req.tp_block_nr = n;
	req.tp_frame_size = slot;
	req.tp_frame_nr = n;
	if (setsockopt(p->tx_fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0)
		return -errno;
	p->tx_nslots = n;
	p->tx_slot_size = slot;
	p->tx_map_len = (size_t)n * slot;
	p->tx_map = mmap(NULL, p->tx_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->tx_fd, 0);
	if (p->tx_map == MAP_FAILED) {
		p->tx_map = NULL;
		return -errno;
	}
	return 0;
}

static int iface_info(struct pk *p, const char *ifname, int *ifindex)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	if (ioctl(p->rx_fd, SIOCGIFINDEX, &ifr) < 0)
		return -ENODEV;
	*ifindex = ifr.ifr_ifindex;
	if (ioctl(p->rx_fd, SIOCGIFHWADDR, &ifr) < 0)
		return -errno;
	memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(p->rx_fd, SIOCGIFMTU, &ifr) < 0)
		return -errno;
	p->mtu = (uint32_t)ifr.ifr_mtu;
	struct ethtool_value ev = { .cmd = ETHTOOL_GTSO };
	ifr.ifr_data = (void *)&ev;
	p->tso = ioctl(p->rx_fd, SIOCETHTOOL, &ifr) == 0 && ev.data;
	return 0;
}

static void pk_close(struct iw_pktio *base);

int iw_pktio_packet_open(const struct iw_pktio_cfg *cfg, struct iw_pktio **out, const char **why)
{
	const char *w = NULL;
	int ifindex = 0, rc;

	if (!cfg || !cfg->ifname || !out || strlen(cfg->ifname) >= IFNAMSIZ ||
	    (cfg->rx_ring != IW_PKTIO_RX_V3 && cfg->rx_ring != IW_PKTIO_RX_V2)) {
		if (why)
			*why = "bad configuration";
		return -EINVAL;
	}
	struct pk *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->rx_fd = -1;
	p->tx_fd = -1;
	p->drop_ppm = cfg->drop_ppm;
	p->reorder_ppm = cfg->reorder_ppm;
	/* xorshift64 must not start at 0. */
	p->rng = cfg->impair_seed ? cfg->impair_seed : 0x9e3779b97f4a7c15ull;
	if (cfg->drop_ppm > 1000000 || cfg->reorder_ppm > 1000000 - cfg->drop_ppm) {
		rc = -EINVAL;
		w = "impairment probabilities above 1000000 ppm";
		goto fail;
	}
	/* Protocol 0 until the filter is in place: nothing is queued before. */
	p->rx_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->rx_fd < 0) {
		rc = -errno;
		w = (rc == -EPERM || rc == -EACCES) ? "raw packet sockets need CAP_NET_RAW (run as root or grant the capability)"
						    : "cannot create an AF_PACKET socket";
		if (rc == -EACCES)
			rc = -EPERM;
		goto fail;
	}
	p->tx_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->tx_fd < 0) {
		rc = -errno;
		w = "cannot create an AF_PACKET socket";
		goto fail;
	}
	if ((rc = iface_info(p, cfg->ifname, &ifindex)) < 0) {
		w = rc == -ENODEV ? "no such interface" : "cannot read the interface's address or MTU";
		goto fail;
	}
	if (attach_filter(p->rx_fd, cfg->ipv4) < 0 || drop_all_filter(p->tx_fd) < 0) {
		rc = -errno;
		w = "cannot attach the BPF filter";
		goto fail;
	}
	if (cfg->offload) {
		/* Both sockets or neither; a kernel without it runs without. */
		int one = 1;
		if (setsockopt(p->rx_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) == 0 &&
		    setsockopt(p->tx_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) == 0) {
			p->vnet = VNET_LEN;
		} else {
			int zero = 0;
			(void)setsockopt(p->rx_fd, SOL_PACKET, PACKET_VNET_HDR, &zero, sizeof(zero));
		}
	}
	p->hold_max = p->vnet ? GSO_FRAME_MAX : TX_SLOT;
	if (cfg->reorder_ppm) {
		p->rx_held.buf = malloc(p->hold_max);
		p->tx_held.buf = malloc(p->hold_max);
		if (!p->rx_held.buf || !p->tx_held.buf) {
			rc = -ENOMEM;
			w = "out of memory";
			goto fail;
		}
	}
	if ((rc = setup_rx(p, cfg)) < 0) {
		w = "cannot set up the receive ring";
		goto fail;
	}
	/* A GSO frame sent past the qdisc (PACKET_QDISC_BYPASS) to an
	 * interface without TSO is dropped: the kernel's direct transmit
	 * does not take the segment list its software GSO makes. setup_tx
	 * keeps the qdisc path then (a veth's is noqueue: no queueing, only
	 * the segmentation), and our own frames must not come back on the
	 * receive socket through the transmit taps. A lost frame the kernel
	 * cannot parse is skipped (PACKET_LOSS) rather than stopping the
	 * ring at it. */
	{
		int one = 1;
		(void)setsockopt(p->rx_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
		(void)setsockopt(p->tx_fd, SOL_PACKET, PACKET_LOSS, &one, sizeof(one));
	}
	if ((rc = setup_tx(p, cfg)) < 0) {
		w = "cannot set up the transmit ring";
		goto fail;
	}
	if (bind_to(p->rx_fd, ifindex, ETH_P_ALL) < 0 || bind_to(p->tx_fd, ifindex, 0) < 0) {
		rc = -errno;
		w = "cannot bind to the interface";
		goto fail;
	}
	p->base.ops = &iw_pktio_packet_ops;
	*out = &p->base;
	return 0;
fail:
	if (why)
		*why = w;
	pk_close(&p->base);
	return rc;
}

static void pk_close(struct iw_pktio *base)
{
	struct pk *p = (struct pk *)base;
	if (!p)
		return;
	if (p->rx_map)
		munmap(p->rx_map, p->rx_map_len);
	if (p->tx_map)
		munmap(p->tx_map, p->tx_map_len);
	if (p->rx_fd >= 0)
		close(p->rx_fd);
	if (p->tx_fd >= 0)
		close(p->tx_fd);
	free(p->rx_held.buf);
	free(p->tx_held.buf);
	free(p);
}

static int pk_fd(const struct iw_pktio *base)
{
	const struct pk *p = (const struct pk *)base;
	return p->rx_fd;
}

static void pk_mac(const struct iw_pktio *base, uint8_t mac[6])
{
	const struct pk *p = (const struct pk *)base;
	memcpy(mac, p->mac, 6);
}

static uint32_t pk_mtu(const struct iw_pktio *base)
{
	const struct pk *p = (const struct pk *)base;
	return p->mtu;
}

static bool pk_offload(const struct iw_pktio *base)
{
	const struct pk *p = (const struct pk *)base;
	return p->vnet != 0;
}

static uint32_t pk_rx_flags(const struct iw_pktio *base)
{
	const struct pk *p = (const struct pk *)base;
	return p->rx_flags;
}

static uint16_t be16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static bool is_ipv4(const uint8_t *f, uint32_t len)
{
	return len >= ETH_HDR + 20 && be16(f + 12) == ETH_P_IP;
}

/* A local sender with checksum offload left only the pseudo-header sum
 * in the TCP/UDP checksum field: compute the whole checksum in place. */
static bool complete_csum(uint8_t *f, uint32_t len)
{
	if (!is_ipv4(f, len) || (f[ETH_HDR] >> 4) != 4)
		return false;
	uint32_t ihl = (uint32_t)(f[ETH_HDR] & 0xf) * 4, tot = be16(f + ETH_HDR + 2);
	uint8_t proto = f[ETH_HDR + 9];
	uint32_t off = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 0;
	if (!off || ihl < 20 || tot < ihl + off + 2 || tot > len - ETH_HDR)
		return false;
	uint8_t *l4 = f + ETH_HDR + ihl;
	uint32_t l4len = tot - ihl, sum = proto + l4len;
	for (uint32_t i = 12; i < 20; i += 2) /* source and destination address */
		sum += be16(f + ETH_HDR + i);
	l4[off] = l4[off + 1] = 0;
	for (uint32_t i = 0; i + 1 < l4len; i += 2)
		sum += be16(l4 + i);
	if (l4len & 1)
		sum += (uint32_t)l4[l4len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	uint16_t c = (uint16_t)~sum;
	if (proto == IPPROTO_UDP && c == 0)
		c = 0xffff; /* RFC 768: 0 means "no checksum" */
	l4[off] = (uint8_t)(c >> 8);
	l4[off + 1] = (uint8_t)c;
	return true;
}

static uint32_t rand_ppm(struct pk *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return (uint32_t)((p->rng >> 11) % 1000000u);
}

enum impair { PASS, DROP, HOLD };

static enum impair impair_pick(struct pk *p, const uint8_t *f, uint32_t len, struct held *h)
{
	if ((!p->drop_ppm && !p->reorder_ppm) || !is_ipv4(f, len))
		return PASS;
	uint32_t r = rand_ppm(p);
	if (r < p->drop_ppm)
		return DROP;
	if (r < p->drop_ppm + p->reorder_ppm && !h->on && len <= p->hold_max) {
		memcpy(h->buf, f, len);
		h->len = len;
		h->age = 0;
		h->on = true;
		return HOLD;
	}
	return PASS;
}

static void rx_release(struct pk *p, iw_pktio_rx_fn cb, void *arg)
{
	p->rx_held.on = false;
	p->rx_flags = p->rx_held.vh.flags; /* kept at hold time */
	cb(arg, p->rx_held.buf, p->rx_held.len);
}

/* What the kernel says about a frame's checksum: the ring status bits
 * (TP_STATUS_CSUM_VALID: verified; TP_STATUS_CSUMNOTREADY: a local
 * sender left it partial) and, with the offload, the virtio_net_hdr
 * before the frame (DATA_VALID, NEEDS_CSUM; gso_type for a packet that
 * spans several wire segments). */
static uint32_t rx_flags(const struct pk *p, const uint8_t *frame, uint32_t status)
{
	uint32_t f = 0;
	if (status & (TP_STATUS_CSUM_VALID | TP_STATUS_CSUMNOTREADY))
		f |= IW_PKTIO_RX_CSUM_OK;
	if (p->vnet) {
		struct virtio_net_hdr vh;
		memcpy(&vh, frame - VNET_LEN, sizeof(vh));
		if (vh.flags & (VIRTIO_NET_HDR_F_DATA_VALID | VIRTIO_NET_HDR_F_NEEDS_CSUM))
			f |= IW_PKTIO_RX_CSUM_OK;
		if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE)
			f |= IW_PKTIO_RX_GSO;
	}
	return f;
}

static void deliver(struct pk *p, uint8_t *frame, uint32_t snaplen, uint32_t len, uint32_t status,
		    iw_pktio_rx_fn cb, void *arg)
{
	if (snaplen < len) {
		p->st.rx_truncated++;
		return;
	}
	uint32_t flags = rx_flags(p, frame, status);
	/* Without the offload a partial checksum is completed in place, as
	 * before (the receiver then skips its own pass); with it, the
	 * receiver trusts the flag and no pass runs at all. */
	if (!p->vnet && (status & TP_STATUS_CSUMNOTREADY) && complete_csum(frame, len))
		p->st.rx_csum_completed++;
	p->st.rx_csum_ok += (flags & IW_PKTIO_RX_CSUM_OK) != 0;
	p->st.rx_gso += (flags & IW_PKTIO_RX_GSO) != 0;
	p->rx_flags = flags;
	p->st.rx_frames++;
	p->st.rx_bytes += len;
	bool was_held = p->rx_held.on;
	switch (impair_pick(p, frame, len, &p->rx_held)) {
	case DROP:
		p->st.rx_impair_drops++;
		return;
	case HOLD:
		p->rx_held.vh.flags = (uint8_t)flags;
		p->st.rx_impair_reorders++;
		return;
	case PASS:
		break;
	}
	cb(arg, frame, len);
	if (was_held && p->rx_held.on)
		rx_release(p, cb, arg);
}

static int recv_v2(struct pk *p, int max, iw_pktio_rx_fn cb, void *arg)
{
	int n = 0;

	while (n < max) {
		struct tpacket2_hdr *h = (struct tpacket2_hdr *)(p->rx_map + (size_t)p->rx_next * p->rx_slot_size);
		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			break;
		/* The kernel's offsets are trusted no further than the slot. */
		if (h->tp_mac >= p->vnet && h->tp_mac <= p->rx_slot_size && h->tp_snaplen <= p->rx_slot_size - h->tp_mac)
			deliver(p, (uint8_t *)h + h->tp_mac, h->tp_snaplen, h->tp_len, h->tp_status, cb, arg);
		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		p->rx_next = (p->rx_next + 1) % p->rx_nslots;
		n++;
	}
	return n;
}

/* V3: a block is ours from TP_STATUS_USER until we give it back whole;
 * max bounds the blocks walked, not the frames in them. */
static int recv_v3(struct pk *p, int max, iw_pktio_rx_fn cb, void *arg)
{
	int n = 0;

	for (int blocks = 0; blocks < max; blocks++) {
		uint8_t *base = p->rx_map + (size_t)p->rx_next * p->rx_slot_size;
		struct tpacket_block_desc *bd = (struct tpacket_block_desc *)base;
		if (!(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			break;
		uint32_t count = bd->hdr.bh1.num_pkts, off = bd->hdr.bh1.offset_to_first_pkt;
		for (uint32_t i = 0; i < count && off && off < p->rx_slot_size; i++) {
			struct tpacket3_hdr *h = (struct tpacket3_hdr *)(base + off);
			if (off + sizeof(*h) > p->rx_slot_size)
				break;
			if (h->tp_mac >= p->vnet && h->tp_mac <= p->rx_slot_size - off &&
			    h->tp_snaplen <= p->rx_slot_size - off - h->tp_mac) {
				deliver(p, (uint8_t *)h + h->tp_mac, h->tp_snaplen, h->tp_len, h->tp_status, cb,
					arg);
				n++;
			}
			if (!h->tp_next_offset)
				break;
			off += h->tp_next_offset;
		}
		__atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		p->rx_next = (p->rx_next + 1) % p->rx_nslots;
	}
	return n;
}

static bool pk_rx_ready(const struct iw_pktio *base)
{
	const struct pk *p = (const struct pk *)base;
	if (p->rx_held.on)
		return true; /* the shim holds one back: the next recv releases it */
	const uint8_t *slot = p->rx_map + (size_t)p->rx_next * p->rx_slot_size;
	if (p->rx_ring == IW_PKTIO_RX_V3) {
		const struct tpacket_block_desc *bd = (const struct tpacket_block_desc *)slot;
		return __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER;
	}
	const struct tpacket2_hdr *h = (const struct tpacket2_hdr *)slot;
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER;
}

static int pk_recv(struct iw_pktio *base, int max, iw_pktio_rx_fn cb, void *arg)
{
	struct pk *p = (struct pk *)base;
	if (!p || !cb || max <= 0)
		return -EINVAL;
	int n = p->rx_ring == IW_PKTIO_RX_V3 ? recv_v3(p, max, cb, arg) : recv_v2(p, max, cb, arg);
	/* A held frame waits at most until the end of the next call. */
	if (p->rx_held.on && p->rx_held.age++ > 0) {
		rx_release(p, cb, arg);
		n++;
	}
	return n;
}

/* The room for a frame in a transmit slot, after the ring header and
 * the virtio_net_hdr. */
static uint32_t tx_room(const struct pk *p)
{
	return p->tx_slot_size - (uint32_t)(TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)) - p->vnet;
}

static uint32_t frame_max(const struct pk *p, const struct virtio_net_hdr *vh)
{
	uint32_t m = vh && vh->gso_type != VIRTIO_NET_HDR_GSO_NONE ? GSO_FRAME_MAX : p->mtu + ETH_HDR;
	return m < tx_room(p) ? m : tx_room(p);
}

static int ring_put(struct pk *p, const uint8_t *frame, uint32_t len, const struct virtio_net_hdr *vh)
{
	const uint32_t data_off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);

	if (len > frame_max(p, vh))
		return -EMSGSIZE;
	uint8_t *slot = p->tx_map + (size_t)p->tx_next * p->tx_slot_size;
	struct tpacket2_hdr *h = (struct tpacket2_hdr *)slot;
	uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
	if (status != TP_STATUS_AVAILABLE && !(status & TP_STATUS_WRONG_FORMAT)) {
		p->st.tx_ring_full++;
		return -ENOBUFS;
	}
	uint8_t *data = slot + data_off;
	if (p->vnet) {
		struct virtio_net_hdr none = { 0 };
		memcpy(data, vh ? vh : &none, VNET_LEN);
		data += VNET_LEN;
	}
	if (frame != data) /* not built in place */
		memcpy(data, frame, len);
	h->tp_len = len + p->vnet;
	__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
	p->tx_next = (p->tx_next + 1) % p->tx_nslots;
	p->tx_queued++;
	p->st.tx_frames++;
	p->st.tx_bytes += len;
	if (vh && vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		p->st.tx_gso++;
		p->st.tx_gso_bytes += len;
	}
	return 0;
}

static uint8_t *pk_tx_slot(struct iw_pktio *base, uint32_t *cap)
{
	struct pk *p = (struct pk *)base;
	const uint32_t data_off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
	/* The shim may put its held frame into this very slot before the
	 * frame built in it is sent: no in-place building while it is on. */
	if (!p || p->reorder_ppm)
		return NULL;
	uint8_t *slot = p->tx_map + (size_t)p->tx_next * p->tx_slot_size;
	struct tpacket2_hdr *h = (struct tpacket2_hdr *)slot;
	uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
	if (status != TP_STATUS_AVAILABLE && !(status & TP_STATUS_WRONG_FORMAT))
		return NULL;
	if (cap)
		*cap = tx_room(p);
	return slot + data_off + p->vnet;
}

/* The held frame goes after a newer one; if the ring is full it stays
 * held (a later send or flush retries). */
static void tx_release(struct pk *p)
{
	if (ring_put(p, p->tx_held.buf, p->tx_held.len, &p->tx_held.vh) != -ENOBUFS)
		p->tx_held.on = false;
}

static int send_vh(struct pk *p, const uint8_t *frame, uint32_t len, const struct virtio_net_hdr *vh)
{
	if (len > frame_max(p, vh))
		return -EMSGSIZE;
	bool was_held = p->tx_held.on;
	switch (impair_pick(p, frame, len, &p->tx_held)) {
	case DROP:
		p->st.tx_impair_drops++;
		return 0; /* lost on the wire, as far as the sender knows */
	case HOLD:
		if (vh)
			p->tx_held.vh = *vh;
		else
			memset(&p->tx_held.vh, 0, sizeof(p->tx_held.vh));
		p->st.tx_impair_reorders++;
		return 0;
	case PASS:
		break;
	}
	int rc = ring_put(p, frame, len, vh);
	if (rc == 0 && was_held && p->tx_held.on)
		tx_release(p);
	return rc;
}

static int pk_send(struct iw_pktio *base, const uint8_t *frame, uint32_t len)
{
	struct pk *p = (struct pk *)base;
	if (!p || !frame || len < ETH_HDR)
		return -EINVAL;
	return send_vh(p, frame, len, NULL);
}

static int pk_send_tcp(struct iw_pktio *base, const uint8_t *frame, uint32_t len, uint32_t gso_size)
{
	struct pk *p = (struct pk *)base;
	if (!p || !frame || !p->vnet || !is_ipv4(frame, len) || frame[ETH_HDR + 9] != IPPROTO_TCP ||
	    gso_size > 0xFFFF)
		return -EINVAL;
	uint32_t ihl = (uint32_t)(frame[ETH_HDR] & 0xf) * 4;
	if (ihl < 20 || len < ETH_HDR + ihl + 20)
		return -EINVAL;
	uint32_t thl = (uint32_t)(frame[ETH_HDR + ihl + 12] >> 4) * 4;
	if (thl < 20 || len < ETH_HDR + ihl + thl)
		return -EINVAL;
	/* The kernel checks these against the headers it parses. */
	struct virtio_net_hdr vh = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = gso_size ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_NONE,
		.hdr_len = (uint16_t)(ETH_HDR + ihl + thl),
		.gso_size = (uint16_t)gso_size,
		.csum_start = (uint16_t)(ETH_HDR + ihl),
		.csum_offset = 16, /* offsetof(struct tcphdr, check) */
	};
	return send_vh(p, frame, len, &vh);
}

static int pk_flush(struct iw_pktio *base)
{
	struct pk *p = (struct pk *)base;
	if (!p)
		return -EINVAL;
	/* A held frame waits at most until the end of the next flush. */
	if (p->tx_held.on && p->tx_held.age++ > 0)
		tx_release(p);
	if (!p->tx_queued)
		return 0;
	p->tx_queued = 0;
	p->st.tx_flushes++;
	if (send(p->tx_fd, NULL, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ENOBUFS)
		return -errno;
	return 0;
}

static void pk_get_stats(struct iw_pktio *base, struct iw_pktio_stats *st)
{
	struct pk *p = (struct pk *)base;
	struct tpacket_stats_v3 ks;
	socklen_t l = sizeof(ks);
	/* Reading resets the kernel's counters: fold them in. */
	if (getsockopt(p->rx_fd, SOL_PACKET, PACKET_STATISTICS, &ks, &l) == 0)
		p->st.rx_kernel_drops += ks.tp_drops;
	*st = p->st;
}

const struct iw_pktio_ops iw_pktio_packet_ops = {
	.close = pk_close,
	.fd = pk_fd,
	.mac = pk_mac,
	.mtu = pk_mtu,
	.offload = pk_offload,
	.recv = pk_recv,
	.rx_flags = pk_rx_flags,
	.rx_ready = pk_rx_ready,
	.send = pk_send,
	.send_tcp = pk_send_tcp,
	.tx_slot = pk_tx_slot,
	.flush = pk_flush,
	.get_stats = pk_get_stats,
};
