#!/usr/bin/env bash
# One negative.list entry: derive the capture with pcapmut, then require
# `iwdump --check` to exit 1 with the entry's violation as its FIRST one.
# Usage: run_negative.sh LIST NAME SRCDIR TRACEDIR OUTDIR PCAPMUT IWDUMP
set -u
LIST=$1
NAME=$2
SRCDIR=$3
TRACEDIR=$4
OUTDIR=$5
PCAPMUT=$6
IWDUMP=$7

trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	s=${s%"${s##*[![:space:]]}"}
	printf '%s' "$s"
}

line=$(grep -E "^[[:space:]]*$NAME[[:space:]]*\|" "$LIST")
if [ "$(printf '%s\n' "$line" | grep -c .)" -ne 1 ]; then
	echo "FAIL: entry '$NAME' not found exactly once in $LIST"
	exit 1
fi
IFS='|' read -r _ src sel mut expect <<<"$line"
src=$(trim "$src")
sel=$(trim "$sel")
mut=$(trim "$mut")
expect=$(trim "$expect")

case "$src" in
trace:*)
	in=$TRACEDIR/${src#trace:}.pcap
	if [ ! -f "$TRACEDIR/ok" ]; then
		echo "FAIL: the trace captures were not recorded (see test pcapcheck_traces)"
		exit 1
	fi
	;;
*) in=$SRCDIR/$src ;;
esac
if [ ! -f "$in" ]; then
	echo "FAIL: source capture $in missing"
	exit 1
fi

args=()
for kv in $sel; do
	args+=("--${kv%%=*}" "${kv#*=}")
done
read -r kind value <<<"$mut"
args+=(--mutate "$kind")
[ -n "${value:-}" ] && args+=(--value "$value")

mkdir -p "$OUTDIR"
out=$OUTDIR/$NAME.pcap
echo "source: $in"
echo "pcapmut ${args[*]}"
if ! timeout -k 5 60 "$PCAPMUT" "${args[@]}" "$in" "$out" >"$OUTDIR/$NAME.pcapmut" 2>&1; then
	echo "FAIL: pcapmut failed:"
	cat "$OUTDIR/$NAME.pcapmut"
	exit 1
fi
cat "$OUTDIR/$NAME.pcapmut"
conn=$(sed -n 's/^pcapmut: conn \([0-9]*\) .*/\1/p' "$OUTDIR/$NAME.pcapmut")
frame=$(sed -n 's/^pcapmut: frame \([0-9]*\)$/\1/p' "$OUTDIR/$NAME.pcapmut")
expect=${expect/conn @/conn $conn}
expect=${expect/frame @/frame $frame}
want="VIOLATION $expect"

rc=0
timeout -k 5 60 "$IWDUMP" --check "$out" >"$OUTDIR/$NAME.iwdump" 2>&1 || rc=$?
first=$(grep -m1 '^VIOLATION ' "$OUTDIR/$NAME.iwdump")
echo "iwdump --check exit $rc; first violation:"
echo "  got:  $first"
echo "  want: $want"
if [ "$rc" -ne 1 ] || [ "$first" != "$want" ]; then
	echo "FAIL: see $OUTDIR/$NAME.iwdump"
	grep -E '^(VIOLATION|WARNING|TOTAL)' "$OUTDIR/$NAME.iwdump" | head -20
	exit 1
fi
echo "ok: $NAME"
