/* Captured frames to iwdump's TCP packets: the link, IP and TCP parsing
 * itself is tools/capture (shared with pcapcheck and the fuzz seeds). */
#include <pcap/pcap.h>
#include <string.h>
#include <sys/socket.h>

#include "cap_frame.h"
#include "iwdump.h"

bool iwd_dlt_supported(int dlt)
{
	return iwc_link_supported(dlt);
}

const char *iwd_dlt_name(int dlt)
{
	const char *n = pcap_datalink_val_to_name(dlt);

	return n ? n : "unknown";
}

enum iwd_parse_result iwd_parse(int dlt, const uint8_t *f, size_t caplen, struct iwd_pkt *pkt)
{
	struct iwc_frame fr;

	memset(pkt, 0, sizeof(*pkt));
	switch (iwc_parse(dlt, f, caplen, &fr)) {
	case IWC_TCP:
		break;
	case IWC_OTHER:
		return IWD_PKT_OTHER;
	default:
		return IWD_PKT_BAD;
	}
	pkt->family = fr.family == 4 ? AF_INET : AF_INET6;
	memcpy(pkt->src, fr.src, sizeof(pkt->src));
	memcpy(pkt->dst, fr.dst, sizeof(pkt->dst));
	pkt->sport = fr.sport;
	pkt->dport = fr.dport;
	pkt->seq = fr.seq;
	pkt->ack = fr.ack;
	pkt->flags = fr.flags;
	pkt->data = f + fr.pay_off;
	pkt->len = fr.pay_len;
	pkt->missing = fr.missing;
	return IWD_PKT_TCP;
}
