/* Uses the installed public headers and library symbols. Every public
 * header is included so that each is known to compile from an install. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <iwarp/cm.h>
#include <iwarp/term.h>
#include <iwarp/verbs.h>

/* Not public API yet: declared here because it is the one entry point that
 * reaches ISA-L, so linking it proves the install carries that dependency. */
uint32_t iw_crc32c(const void *buf, size_t len);

int main(void)
{
	const char *s = iw_term_cause_str(IW_TERM_CAUSE(IW_LAYER_MPA, IW_ETYPE_MPA, IW_ECODE_MPA_CRC));
	uint32_t crc = iw_crc32c("123456789", 9);

	printf("cause: %s\ncrc32c(\"123456789\") = 0x%08X\n", s, (unsigned)crc);
	if (strcmp(s, "MPA: CRC error") != 0 || crc != 0xE3069283u)
		return 1;
	return 0;
}
