/* Test-only LD_PRELOAD shim for interop_broken_mpa_reply_detected: an MPA
 * Reply that leaves the process through send() goes out with the
 * revision IWARP_TEST_MPA_REPLY_REV instead of the negotiated one, so
 * the suite can prove it notices a broken Reply. Everything else passes
 * through untouched. Kept out of libiwarp: production code has no test
 * switches. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "mpa/mpa_wire.h"

typedef ssize_t (*send_fn)(int, const void *, size_t, int);

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static send_fn real;
	const char *rev = getenv("IWARP_TEST_MPA_REPLY_REV");

	if (!real)
		real = (send_fn)dlsym(RTLD_NEXT, "send");
	if (rev && len >= IW_MPA_FRAME_HDR_LEN && len <= IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX &&
	    memcmp(buf, IW_MPA_KEY_REP, IW_MPA_KEY_LEN) == 0) {
		uint8_t copy[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
		memcpy(copy, buf, len);
		copy[offsetof(struct iw_mpa_frame_hdr, rev)] = (uint8_t)atoi(rev);
		return real(fd, copy, len, flags);
	}
	return real(fd, buf, len, flags);
}
