#!/usr/bin/env bash
# A traced iwperf run (WRITE, READ and SEND, CRC on, several sizes) is
# decoded by tshark, which must find every FPDU "Good CRC32", and accepted
# by `iwdump --check`. Usage: test_trace_check.sh IWPERF IWDUMP
set -u
IWPERF=$1
IWDUMP=$2
. "$(dirname "$0")/lib.sh"

# Every step is bounded, and the whole script stops well before ctest's
# TIMEOUT so that a stuck step leaves its log behind.
START=$SECONDS
# A failing case leaves its capture and decode here (the build tree).
KEEP=${IWT_KEEP_DIR:-}
keep() {
	[ -n "$KEEP" ] || return 0
	mkdir -p "$KEEP" && cp "$@" "$KEEP/" && echo "kept for inspection: $* -> $KEEP"
}
DEADLINE=400
step() {
	echo "[$((SECONDS - START)) s] $*"
	if [ $((SECONDS - START)) -gt $DEADLINE ]; then
		bad "over ${DEADLINE} s: giving up before $*"
		finish
	fi
}

if ! command -v tshark >/dev/null; then
	bad "tshark is not installed (./run tests installs it)"
	finish
fi
if ! start_server "$TMP/srv.log" "$IWPERF" -s -p @PORT@; then
	bad "iwperf server did not start"
	finish
fi
PCAP=$TMP/iwperf.pcap
for t in write read send; do
	step "iwperf -t $t --trace"
	if ! timeout -k 5 30 "$IWPERF" -c 127.0.0.1 -p "$PORT" -t $t -S 65536 -n 40 --trace "$PCAP.$t" >"$TMP/$t.out" 2>&1; then
		bad "iwperf -t $t --trace failed"
		cat "$TMP/$t.out"
		continue
	fi
	# Small FPDUs too: 1442-byte ULPDUs, as siw would send them.
	step "iwperf -t $t --max-fpdu 1442 --trace"
	timeout -k 5 30 "$IWPERF" -c 127.0.0.1 -p "$PORT" -t $t -S 4000 -n 20 --max-fpdu 1442 \
		--trace "$PCAP.$t.small" >>"$TMP/$t.out" 2>&1 || bad "iwperf -t $t small FPDUs failed"
done
stop_server

TSHARK_OPTS=(-o tcp.desegment_tcp_streams:TRUE --disable-heuristic rpcrdma_iwarp
	--disable-heuristic smb_direct_iwarp -o tcp.try_heuristic_first:TRUE)
for f in "$PCAP".*; do
	name=$(basename "$f")
	step "tshark + iwdump on $name"
	fpdus=$(timeout -k 5 60 tshark -r "$f" "${TSHARK_OPTS[@]}" -T fields -e iwarp_mpa.ulpdulength 2>/dev/null |
		tr ',' '\n' | grep -c '[0-9]')
	timeout -k 5 60 tshark -r "$f" "${TSHARK_OPTS[@]}" -V 2>/dev/null >"$TMP/$name.txt"
	good=$(grep -c 'Good CRC32' "$TMP/$name.txt")
	badcrc=$(grep -c 'Bad CRC32' "$TMP/$name.txt")
	if [ "$fpdus" -gt 10 ] && [ "$good" -eq "$fpdus" ] && [ "$badcrc" -eq 0 ]; then
		ok "$name: tshark decodes $fpdus FPDUs, every one Good CRC32"
	else
		bad "$name: tshark FPDUs $fpdus, Good CRC32 $good, Bad CRC32 $badcrc"
		keep "$f" "$TMP/$name.txt"
	fi
	if timeout -k 5 60 "$IWDUMP" --check --quiet "$f" >"$TMP/$name.iwdump" 2>&1; then
		ok "$name: iwdump --check accepts it ($(grep -m1 '^TOTAL' "$TMP/$name.iwdump"))"
	else
		bad "$name: iwdump --check rejects it"
		head -20 "$TMP/$name.iwdump"
		keep "$f" "$TMP/$name.iwdump"
	fi
done
finish
