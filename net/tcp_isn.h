/* Initial sequence numbers per RFC 6528: ISN = M + F(4-tuple, key), M a
 * 4-microsecond clock, F SipHash-2-4 keyed with a secret the owner
 * injects (so tests are deterministic and production uses random bytes). */
#ifndef IWN_TCP_ISN_H
#define IWN_TCP_ISN_H

#include <stddef.h>
#include <stdint.h>

#define IWN_ISN_KEY_LEN 16

/* SipHash-2-4 of msg with a 16-byte key (Aumasson/Bernstein). */
uint64_t iwn_siphash24(const uint8_t key[IWN_ISN_KEY_LEN], const uint8_t *msg, size_t len);
uint32_t iwn_tcp_isn(const uint8_t key[IWN_ISN_KEY_LEN], uint32_t laddr, uint16_t lport, uint32_t raddr,
		     uint16_t rport, uint64_t now_us);

#endif
