#!/usr/bin/env bash
# The cross-check must be able to fail: with a tshark that misreports one
# MSN, or one CRC verdict, pcapxcheck must exit 1 naming that field.
# Usage: run_xcheck_selftest.sh TRACEDIR OUTDIR PCAPXCHECK IWDUMP
set -u
TRACES=$1
OUT=$2
XCHECK=$3
IWDUMP=$4
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
[ -f "$TRACES/ok" ] || { echo "FAIL: the trace captures were not recorded"; exit 1; }
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
fails=0
for lie in msn crc; do
	case $lie in
	msn) want='MSN 1 vs 77' ;;
	crc) want='CRC verdict ok vs Bad' ;;
	esac
	rc=0
	LIE=$lie timeout -k 5 120 "$XCHECK" --iwdump "$IWDUMP" --tshark "$HERE/tshark_lie.sh" --outdir "$OUT" \
		"$TRACES/iwping-crc-4000.pcap" >"$OUT/selftest-$lie.out" 2>&1 || rc=$?
	if [ "$rc" -eq 1 ] && grep -q "$want" "$OUT/selftest-$lie.out"; then
		echo "ok: a tshark lying about the $lie is caught ($(grep -m1 FAIL "$OUT/selftest-$lie.out"))"
	else
		echo "FAIL: lie '$lie' not caught as '$want' (exit $rc):"
		cat "$OUT/selftest-$lie.out"
		fails=$((fails + 1))
	fi
done
[ "$fails" -eq 0 ]
