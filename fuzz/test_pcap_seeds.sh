#!/usr/bin/env bash
# The capture seed extractor end to end: iwping traces a ping over
# 127.0.0.1 (CRC on; markers with CRC off), fuzz_pcap_seeds turns the
# captures into fuzz_qp_live inputs (two per connection), and each input
# replays through the target past its MPA exchange: the live QP must take
# at least one captured FPDU (so framing, CRC and markers were matched).
# Usage: test_pcap_seeds.sh iwping fuzz_pcap_seeds fuzz_qp_live_replay
IWPING=${1:?usage}
EXTRACT=${2:?usage}
REPLAY=${3:?usage}
. "$(dirname "$0")/../tests/tools/lib.sh"

capture() { # NAME SERVER_OPTS CLIENT_OPTS
	local name=$1 sopts=$2 copts=$3
	# shellcheck disable=SC2086
	if ! start_server "$TMP/srv.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@ --trace "$TMP/$name.pcap" $sopts; then
		bad "$name: server start"
		return
	fi
	# shellcheck disable=SC2086
	if ! timeout -k 5 60 "$IWPING" -c -a 127.0.0.1 -p "$PORT" -S 3000 -C 3 -V $copts >"$TMP/cli.log" 2>&1; then
		bad "$name: iwping client failed"
		cat "$TMP/cli.log"
	fi
	wait_server || bad "$name: iwping server failed"
}

capture crc "" ""
capture markers "--markers --crc=off" "--markers --crc=off"

if timeout -k 5 60 "$EXTRACT" "$TMP/seeds" "$TMP/crc.pcap" "$TMP/markers.pcap" >"$TMP/extract.log" 2>&1 &&
	grep -q '^4 seeds written' "$TMP/extract.log"; then
	ok "extractor: 4 seeds from 2 captures"
else
	bad "extractor"
	cat "$TMP/extract.log"
fi

for f in "$TMP"/seeds/*; do
	[ -f "$f" ] || continue
	out=$(QPL_VERBOSE=1 timeout -k 5 60 "$REPLAY" "$f" 2>&1)
	rc=$?
	n=$(printf '%s\n' "$out" | sed -n 's/.*fpdus rx \([0-9]*\).*/\1/p')
	if [ $rc -eq 0 ] && [ -n "$n" ] && [ "$n" -ge 1 ]; then
		ok "$(basename "$f"): replayed, $n captured FPDUs taken"
	else
		bad "$(basename "$f"): exit $rc"
		printf '%s\n' "$out"
	fi
done

# Not a capture, not pcap at all: refused with an error, no crash.
printf 'not a pcap file at all' >"$TMP/junk.pcap"
timeout -k 5 30 "$EXTRACT" "$TMP/seeds2" "$TMP/junk.pcap" >/dev/null 2>&1
[ $? -eq 1 ] && ok "junk input refused" || bad "junk input"
finish
