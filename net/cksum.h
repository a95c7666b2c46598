/* Internet checksum (RFC 1071): one's-complement sum of 16-bit words. */
#ifndef IWN_CKSUM_H
#define IWN_CKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Add len bytes to a running 32-bit sum. An odd length pads with a zero
 * byte, so only the last piece of a message may be odd. */
uint32_t iwn_cksum_add(uint32_t sum, const uint8_t *p, size_t len);
/* Fold the carries and complement: the value to put on the wire (host
 * order). A message whose stored checksum is right folds to 0. */
uint16_t iwn_cksum_fold(uint32_t sum);

#endif
