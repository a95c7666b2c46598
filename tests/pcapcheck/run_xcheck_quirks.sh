#!/usr/bin/env bash
# The cross-check's exclusion rules against tshark itself: captures laid
# out to hit each case (gen_quirks) must compare equal with exactly the
# number of FPDUs the rules exclude. Where tshark decodes everything the
# expected count is 0, so an over-broad rule fails here too.
# Usage: run_xcheck_quirks.sh OUTDIR GEN_QUIRKS PCAPXCHECK IWDUMP
set -u
OUT=$1
GEN=$2
XCHECK=$3
IWDUMP=$4
mkdir -p "$OUT"
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
rm -f "$OUT"/quirk-*.pcap
"$GEN" "$OUT" || { echo "FAIL: gen_quirks"; exit 1; }
fails=0
# capture : FPDUs excluded (B>A; A>B has one whole FPDU per segment)
while read -r name want why; do
	[ -n "$name" ] || continue
	if timeout -k 5 120 "$XCHECK" --iwdump "$IWDUMP" --outdir "$OUT" --min-fpdus 10 --expect-excluded "$want" \
		"$OUT/$name.pcap" >"$OUT/$name.xcheck" 2>&1; then
		echo "ok: $name: $want excluded ($why)"
	else
		echo "FAIL: $name ($why):"
		cat "$OUT/$name.xcheck"
		fails=$((fails + 1))
	fi
done <<'LIST'
quirk-short-head 6 4-byte segment starting FPDU 5: tshark decodes nothing after
quirk-short-head-shared 0 the same 4 bytes after FPDU 4 in its segment: tshark copes
quirk-reply-seg 1 FPDU 1 inside the Reply's segment: skipped, the rest decoded
quirk-reply-span 0 FPDU 1 starting in the Reply's segment and ending in the next: decoded
quirk-markers 4 FPDUs 3+4 share a segment without a marker (fine); 7+8 one with a marker: nothing after
quirk-marker-end 6 FPDU 5 ends where a marker is due (tshark recovers at FPDU 6 here, not always)
LIST
[ "$fails" -eq 0 ]
