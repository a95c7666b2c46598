/* Names for Terminate causes, for logs, iwdump and error messages. */
#include <iwarp/term.h>

struct cause_name {
	uint8_t layer, etype, ecode;
	const char *name;
};

static const struct cause_name names[] = {
	{ 0, 0, 0x00, "RDMAP local catastrophic error" },
	{ 0, 1, 0x00, "RDMAP remote protection: invalid STag" },
	{ 0, 1, 0x01, "RDMAP remote protection: base or bounds violation" },
	{ 0, 1, 0x02, "RDMAP remote protection: access rights violation" },
	{ 0, 1, 0x03, "RDMAP remote protection: STag not associated with RDMAP stream" },
	{ 0, 1, 0x04, "RDMAP remote protection: TO wrap" },
	{ 0, 1, 0x09, "RDMAP remote protection: STag cannot be invalidated" },
	{ 0, 1, 0xFF, "RDMAP remote protection: unspecified" },
	{ 0, 2, 0x05, "RDMAP remote operation: invalid RDMAP version" },
	{ 0, 2, 0x06, "RDMAP remote operation: unexpected opcode" },
	{ 0, 2, 0x07, "RDMAP remote operation: catastrophic error localized to stream" },
	{ 0, 2, 0x08, "RDMAP remote operation: catastrophic error global" },
	{ 0, 2, 0x09, "RDMAP remote operation: STag cannot be invalidated" },
	{ 0, 2, 0xFF, "RDMAP remote operation: unspecified" },
	{ 1, 0, 0x00, "DDP local catastrophic error" },
	{ 1, 1, 0x00, "DDP tagged buffer: invalid STag" },
	{ 1, 1, 0x01, "DDP tagged buffer: base or bounds violation" },
	{ 1, 1, 0x02, "DDP tagged buffer: STag not associated with DDP stream" },
	{ 1, 1, 0x03, "DDP tagged buffer: TO wrap" },
	{ 1, 1, 0x04, "DDP tagged buffer: invalid DDP version" },
	{ 1, 2, 0x01, "DDP untagged buffer: invalid QN" },
	{ 1, 2, 0x02, "DDP untagged buffer: invalid MSN, no buffer available" },
	{ 1, 2, 0x03, "DDP untagged buffer: invalid MSN, MSN range not valid" },
	{ 1, 2, 0x04, "DDP untagged buffer: invalid MO" },
	{ 1, 2, 0x05, "DDP untagged buffer: message too long for receive buffer" },
	{ 1, 2, 0x06, "DDP untagged buffer: invalid DDP version" },
	{ 2, 0, 0x01, "MPA: TCP connection closed, reset or lost" },
	{ 2, 0, 0x02, "MPA: CRC error" },
	{ 2, 0, 0x03, "MPA: marker or ULPDU_LENGTH invalid" },
	{ 2, 0, 0x04, "MPA: invalid request or reply frame" },
	{ 2, 0, 0x05, "MPA: local catastrophic error" },
	{ 2, 0, 0x06, "MPA: insufficient IRD resources" },
	{ 2, 0, 0x07, "MPA: no matching RTR model" },
};

const char *iw_term_cause_str(struct iw_term_cause c)
{
	if (!c.valid)
		return "no cause";
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].layer == c.layer && names[i].etype == c.etype && names[i].ecode == c.ecode)
			return names[i].name;
	switch (c.layer) {
	case IW_LAYER_RDMAP: return "RDMAP: unknown error";
	case IW_LAYER_DDP: return "DDP: unknown error";
	case IW_LAYER_MPA: return "MPA: unknown error";
	default: return "unknown layer";
	}
}
