/* SYN cookies (RFC 4987 sec. 3.6): when a listener's half-open queue is
 * full, the SYN-ACK's ISN carries what the handshake needs, so the SYN
 * leaves no state behind and a valid ACK recreates the connection.
 *
 * The cookie (32 bits): bits 31..30 the low bits of a counter that steps
 * every 2^IWN_COOKIE_PERIOD_SHIFT us (~67 s), bits 29..27 an index into a
 * table of MSS values, bits 26..0 SipHash-2-4 (the RFC 6528 ISN key)
 * over the 4-tuple, the peer's ISN, the full counter and the MSS index.
 * A cookie is good for the counter's current and previous step (67..134
 * s). Window scale and SACK-permitted do not fit: when the SYN carried
 * timestamps they ride in the low 6 bits of our TSval (echoed back in
 * the ACK's TSecr), else the SYN-ACK offers neither, as Linux does. */
#ifndef IWN_TCP_COOKIE_H
#define IWN_TCP_COOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_conn.h"
#include "tcp_isn.h"
#include "tcp_seg.h"

#define IWN_COOKIE_PERIOD_SHIFT 26
#define IWN_COOKIE_TS_BITS 6 /* TSval bits that carry window scale and SACK */

/* The cookie for a SYN from raddr:rport with sequence number irs and MSS
 * option peer_mss (0: none) to laddr:lport. */
uint32_t iwn_syn_cookie(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
			uint16_t rport, uint32_t irs, uint16_t peer_mss, uint64_t now);
/* Checks cookie (the ACK's ack - 1) against the ACK's seq - 1 (irs). 0 with
 * *mss set to the MSS it encodes; -ETIMEDOUT when it is older than two
 * counter steps; -EINVAL when it was not ours. */
int iwn_syn_cookie_check(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport, uint32_t irs, uint32_t cookie, uint64_t now, uint16_t *mss);

/* The RFC 7323 timestamp clock a connection on this 4-tuple will run
 * (1 ms ticks from the per-connection offset of iwn_tcp_accept_syn). */
uint32_t iwn_syn_cookie_ts_clock(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport,
				 uint32_t raddr, uint16_t rport, uint64_t now);
/* Our TSval for the cookie SYN-ACK: ts_now with its low bits replaced by
 * the peer's window scale (or none) and SACK-permitted, never later than
 * ts_now. */
uint32_t iwn_syn_cookie_tsval(uint32_t ts_now, const struct iwn_tcp_opts *syn);
/* From the echoed TSecr, the options the SYN carried. false: the echo is
 * not one we can have sent within a cookie's life (ts_now is our clock). */
bool iwn_syn_cookie_ts_decode(uint32_t tsecr, uint32_t ts_now, struct iwn_tcp_opts *syn);

/* Send the stateless SYN-ACK answering syn (from raddr to laddr) with ISN
 * cookie, as a passive open with cfg would (options are dropped to what
 * the cookie can carry). Built in txbuf at headroom, handed to out with
 * c == NULL. */
void iwn_tcp_send_cookie_synack(uint8_t *txbuf, uint32_t headroom, iwn_tcp_out_fn out, void *arg,
				const struct iwn_tcp_cfg *cfg, const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr,
				uint32_t raddr, const struct iwn_tcp_hdr *syn, uint32_t cookie, uint64_t now);

#endif
