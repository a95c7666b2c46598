/* Input format and memory layout of fuzz_qp_live (shared with the seed
 * generators gen_seeds.c and pcap_seeds.c).
 *
 * Input:
 *   byte 0  mode: bit 0 our role (0: responder, the peer's frame is an MPA
 *           Request; 1: initiator, it is a Reply to our Request); bit 1
 *           our CRC policy OFF (else ON); bit 2 we ask for markers; bit 3
 *           receive by copy (feed) instead of prepare/commit; bits 4-5
 *           MULPDU of what we send; bits 6-7 seed the default chunking,
 *           both set: receives come from an SRQ; bit 7: the stream ends
 *           with a reset (else a FIN)
 *   byte 1  our IRD (low nibble) and ORD (high nibble)
 *   byte 2  CTL_LEN, the number of control bytes
 *   then    the peer's MPA frame (20 bytes + PD_Length, decoded for real)
 *   then    CTL_LEN control bytes, one per step (QPL_CTL_* below)
 *   then    the peer's byte stream after its frame (FPDUs)
 * When the control bytes run out, steps feed chunks of PRNG-chosen sizes.
 *
 * Memory: one arena at a fixed address (so TOs in inputs stay valid from
 * run to run); regions are registered in this order in a fresh context,
 * so region i gets STag index i; the harness gives it key QPL_KEY(i). */
#ifndef IW_FUZZ_QP_LIVE_H
#define IW_FUZZ_QP_LIVE_H

#include <stdint.h>

#define QPL_MODE_INITIATOR 0x01
#define QPL_MODE_CRC_OFF 0x02
#define QPL_MODE_MARKERS 0x04
#define QPL_MODE_FEED 0x08
#define QPL_MODE_SRQ 0xC0 /* both bits: receives through a shared receive queue */
#define QPL_HDR_LEN 3

#define QPL_ARENA_BASE 0x3f0000000000ull /* clear of ASan's allocator (0x6000...) */
#define QPL_ARENA_SIZE 0xA000u

enum qpl_region {
	QPL_MR_RW = 1,    /* local write, remote write, remote read */
	QPL_MR_LW,        /* local write only: receive buffers and READ sinks */
	QPL_MR_RR,        /* remote read only: source of our SENDs / WRITEs */
	QPL_MR_OTHER_PD,  /* everything allowed, but another PD */
	QPL_MR_NONE,      /* no rights at all */
	QPL_MR_SPARE,     /* local + remote write; dereg / rereg target */
	QPL_MR_WO,        /* local + remote write, no remote read */
	QPL_N_MR = QPL_MR_WO
};

/* Offset into the arena and length, per region (index 0 unused). The
 * spare region moves between SPARE_A and SPARE_B on re-registration. */
#define QPL_OFF_RW 0x1000u
#define QPL_LEN_RW 0x1000u
#define QPL_OFF_LW 0x2100u
#define QPL_LEN_LW 0x2000u
#define QPL_OFF_RR 0x4200u
#define QPL_LEN_RR 0x800u
#define QPL_OFF_OTHER 0x5000u
#define QPL_LEN_OTHER 0x400u
#define QPL_OFF_NONE 0x5800u
#define QPL_LEN_NONE 0x200u
#define QPL_OFF_SPARE_A 0x6000u
#define QPL_OFF_SPARE_B 0x6800u
#define QPL_LEN_SPARE 0x400u
#define QPL_OFF_WO 0x7000u
#define QPL_LEN_WO 0x400u

#define QPL_KEY(i) ((uint8_t)(0x40 + (i)))
#define QPL_STAG(i) ((uint32_t)(i) << 8 | QPL_KEY(i))
#define QPL_VA(off) (QPL_ARENA_BASE + (off))

/* Posted at start: receives of QPL_RECV_LEN bytes at QPL_OFF_LW +
 * k * QPL_RECV_LEN (k < QPL_PRE_RECV), and with ORD >= 1 up to two
 * READs of QPL_READ_LEN into QPL_OFF_LW + QPL_READ_SINK + k * QPL_READ_LEN
 * (Read Responses: STag QPL_STAG(QPL_MR_LW), TO = that address). */
#define QPL_RECV_LEN 0x200u
#define QPL_PRE_RECV 6
#define QPL_READ_SINK 0x1800u
#define QPL_READ_LEN 0x200u
#define QPL_PEER_STAG 0x00777700u /* the peer's STag our WRITEs / READs name */

/* Control bytes: below QPL_CTL_API a chunk of qpl_chunk[c & 31] bytes
 * is fed (bit 5 set: progress is not called after it); at or above, the
 * low 5 bits pick an API call. */
#define QPL_CTL_API 0xE0u
enum qpl_api {
	QPL_API_POST_RECV,
	QPL_API_POST_RECV2, /* two SGEs */
	QPL_API_SEND,
	QPL_API_SEND_INLINE,
	QPL_API_SEND_INV,
	QPL_API_WRITE,
	QPL_API_READ,
	QPL_API_DEREG,
	QPL_API_REREG,
	QPL_API_DISCONNECT,
	QPL_API_PEER_FIN,
	QPL_API_PEER_RST,
	QPL_API_PROGRESS,
	QPL_API_SEND_FENCE,
};

#endif
