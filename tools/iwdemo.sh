#!/usr/bin/env bash
# The README's demo: real RDMA over loopback TCP with libiwarp.
#  1. iwping: an rping-style exchange (SEND adverts, RDMA READ, RDMA WRITE,
#     verified) between a server and a client process;
#  2. iwperf: a short RDMA WRITE bandwidth sweep next to plain TCP, and
#     8-byte ping-pong latency next to TCP, from the same harness;
#  3. a traced session (--trace) decoded and checked by iwdump.
# Usage: iwdemo.sh BIN_DIR
set -euo pipefail
BIN=${1:?usage: iwdemo.sh BIN_DIR}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iwdemo.XXXXXX")
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

port() { echo $((20000 + (RANDOM + $$) % 10000)); }
# start_server LOG CMD...: in the background; ready once it prints
# "listening on" on stderr (the tools announce their ports).
start_server() {
	local log=$1 i
	shift
	timeout 120 "$@" >"$log" 2>"$log.err" &
	SRV=$!
	for i in $(seq 1 200); do
		grep -q 'listening on' "$log.err" && return 0
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.05
	done
	echo "server did not come up: $*" >&2
	cat "$log.err" >&2
	return 1
}
say() { printf '\n---- %s\n' "$*"; }

say "iwping: 5 verified rping-style iterations of 4000 bytes over 127.0.0.1 (traced)"
P=$(port)
start_server "$TMP/ping-server.log" "$BIN/iwping" -s -a 127.0.0.1 -p "$P"
timeout 60 "$BIN/iwping" -c 127.0.0.1 -p "$P" -S 4000 -C 5 -V -v --trace "$TMP/iwping.pcap" | cut -c1-100
wait "$SRV"
SRV=""

say "iwperf: RDMA WRITE bandwidth (CRC on) next to plain TCP, same harness"
P=$(port)
start_server "$TMP/perf-server.log" "$BIN/iwperf" -s -a 127.0.0.1 -p "$P"
echo "iWARP RDMA WRITE:"
timeout 60 "$BIN/iwperf" -c 127.0.0.1 -p "$P" -t write --sweep=4K,64K,1M -D 0.5
echo "plain TCP:"
timeout 60 "$BIN/iwperf" -c 127.0.0.1 -p "$P" -t write --sweep=4K,64K,1M -D 0.5 --tcp
echo "iWARP SEND ping-pong latency:"
timeout 60 "$BIN/iwperf" -c 127.0.0.1 -p "$P" -t lat -S 8 -n 2000
echo "plain TCP ping-pong latency:"
timeout 60 "$BIN/iwperf" -c 127.0.0.1 -p "$P" -t lat -S 8 -n 2000 --tcp
kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
SRV=""

say "iwdump --check on the iwping trace (first messages, then the summary)"
"$BIN/iwdump" --check "$TMP/iwping.pcap" >"$TMP/iwdump.out"
grep -E '^(MPA|MSG)' "$TMP/iwdump.out" | head -12
sed -n '/^SUMMARY/,$p' "$TMP/iwdump.out"
