#!/usr/bin/env bash
# tshark sees the damage too: the negative captures of the mutations after
# which iwdump goes on decoding (MSN, MO, DDP/RDMAP version, opcode, Read
# Request turned into a Write, truncation) must still agree FPDU by FPDU
# with tshark, which shows the mutated values as iwdump does. (After CRC,
# marker and ULPDU_LENGTH damage iwdump stops the direction; tshark goes
# on, so those are not compared.) Entries on pcaps/ captures are included
# when the capture is there at run time.
# Usage: run_xcheck_negative.sh LIST SRCDIR TRACEDIR OUTDIR PCAPMUT PCAPXCHECK IWDUMP
set -u
LIST=$1
SRC=$2
TRACES=$3
OUT=$4
PCAPMUT=$5
XCHECK=$6
IWDUMP=$7
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
files=()
fails=0
while IFS='|' read -r name src _ mut _; do
	name=$(echo "$name" | tr -d '[:space:]')
	src=$(echo "$src" | tr -d '[:space:]')
	read -r kind _ <<<"$mut"
	case "$name" in '' | \#*) continue ;; esac
	case "$kind" in msn | mo | ddp-version | rdmap-version | opcode | read-req-to-write | truncate) ;; *) continue ;; esac
	# Every FPDU of that trace shares a segment holding markers: tshark
	# decodes none of it (see README.md).
	[ "$src" = trace:iwperf-send-markers ] && continue
	case "$src" in pcaps/*) [ -f "$SRC/$src" ] || continue ;; esac
	if bash "$HERE/run_negative.sh" "$LIST" "$name" "$SRC" "$TRACES" "$OUT" "$PCAPMUT" "$IWDUMP" >"$OUT/$name.log" 2>&1; then
		files+=("$OUT/$name.pcap")
	else
		echo "FAIL: $name: the negative capture itself failed:"
		cat "$OUT/$name.log"
		fails=$((fails + 1))
	fi
done < <(grep -v '^[[:space:]]*#' "$LIST")
echo "${#files[@]} negative captures"
[ "${#files[@]}" -ge 8 ] || { echo "FAIL: expected at least 8"; exit 1; }
timeout -k 10 600 "$XCHECK" --iwdump "$IWDUMP" --outdir "$OUT" --min-fpdus 1 "${files[@]}" || fails=$((fails + 1))
[ "$fails" -eq 0 ]
