#!/usr/bin/env bash
# iwperf against its own server over 127.0.0.1: every test type at a couple
# of sizes, several QPs, duration mode, CRC off, a small FPDU, JSON, the
# plain-TCP baseline; rows must be complete and their numbers must parse.
# Usage: test_iwperf.sh PATH/TO/iwperf
IWPERF=${1:?usage: $0 iwperf}
. "$(dirname "$0")/lib.sh"
# iwperf announces "listening on" once its TCP baseline port (PORT+1) is open too.

if ! start_server "$TMP/srv.log" "$IWPERF" -s -p @PORT@ -v; then
	bad "server start"
	finish
fi
port=$PORT

num='^[0-9]+(\.[0-9]+)?$'

# check_table NAME ROWS FILE: ROWS data rows of numbers, rates above zero.
check_table() {
	local name=$1 rows=$2 f=$3 n
	n=$(grep -cv '^#' "$f")
	if [ "$n" -ne "$rows" ]; then
		bad "$name: $n rows, expected $rows"; cat "$f"; return 1
	fi
	if ! grep -v '^#' "$f" | awk -v re="$num" '
		NF != 6 { exit 1 }
		{ for (i = 1; i <= 6; i++) if ($i !~ re) exit 1; if ($4 + 0 <= 0) exit 1 }'; then
		bad "$name: a row does not parse"; cat "$f"; return 1
	fi
	return 0
}

# perf_case NAME ROWS ARGS...
perf_case() {
	local name=$1 rows=$2 rc=0
	shift 2
	timeout -k 5 120 "$IWPERF" -c 127.0.0.1 -p "$port" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ $rc -ne 0 ]; then
		bad "$name: exit $rc"; cat "$TMP/err" "$TMP/out"; return
	fi
	check_table "$name" "$rows" "$TMP/out" && ok "$name: $(tail -1 "$TMP/out" | tr -s ' ')"
}

perf_case "write 64,64K" 2 -t write --sweep=64,64K -n 300
perf_case "read 64,64K" 2 -t read --sweep=64,64K -n 300
perf_case "send 64,64K" 2 -t send --sweep=64,64K -n 300
perf_case "lat 8,4K" 2 -t lat --sweep=8,4K -n 300
perf_case "write 1M qd 4" 1 -t write -S 1M -n 50 -Q 4
perf_case "send 256K qd 1" 1 -t send -S 256K -n 50 -Q 1
perf_case "write -q 8" 1 -t write -q 8 -S 16K -n 200
perf_case "send -q 8" 1 -t send -q 8 -S 4K -n 200
perf_case "read -q 8 qd 32" 1 -t read -q 8 -Q 32 -S 8K -n 200
perf_case "write -D 0.3" 1 -t write -S 64K -D 0.3
perf_case "lat -D 0.2" 1 -t lat -S 64 -D 0.2
perf_case "write crc off" 1 -t write -S 64K -n 300 --crc=off
perf_case "send max-fpdu 512" 1 -t send -S 64K -n 100 --max-fpdu 512
perf_case "write markers" 1 -t write -S 64K -n 100 --markers
perf_case "tcp write 64,64K" 2 --tcp -t write --sweep=64,64K -n 300
perf_case "tcp lat 8" 1 --tcp -t lat -S 8 -n 300
perf_case "tcp write -q 4 -D 0.2" 1 --tcp -q 4 -S 64K -D 0.2

# JSON: one object per row with the table's fields.
rc=0
timeout -k 5 60 "$IWPERF" -c 127.0.0.1 -p "$port" -t send --sweep=1K,2K -n 100 --json >"$TMP/j" 2>&1 || rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^{.*"bw_avg_MBps":[0-9.]*.*}$' "$TMP/j")" -eq 2 ] &&
	[ "$(wc -l <"$TMP/j")" -eq 2 ]; then
	ok "--json bandwidth"
else
	bad "--json bandwidth: exit $rc"; cat "$TMP/j"
fi
rc=0
timeout -k 5 60 "$IWPERF" -c 127.0.0.1 -p "$port" -t lat -n 100 --json >"$TMP/j" 2>&1 || rc=$?
if [ $rc -eq 0 ] && grep -q '^{"test":"lat".*"t_99_us":[0-9.]*}$' "$TMP/j"; then
	ok "--json latency"
else
	bad "--json latency: exit $rc"; cat "$TMP/j"
fi

if kill -0 "$SERVER_PID" 2>/dev/null; then ok "server still up"; else bad "server died"; cat "$TMP/srv.log" "$TMP/srv.log.err"; fi
stop_server

# --once: the server leaves after its first client.
if start_server "$TMP/once.log" "$IWPERF" -s -p @PORT@ --once; then
	timeout -k 5 60 "$IWPERF" -c 127.0.0.1 -p "$PORT" -S 4K -n 100 >/dev/null 2>&1
	if wait_server; then ok "--once"; else bad "--once: server exit"; cat "$TMP/once.log"; fi
fi

# No server: exit 1 with a message; usage errors exit 2.
rc=0
timeout -k 5 30 "$IWPERF" -c 127.0.0.1 -p "$(pick_port)" -n 10 >"$TMP/n" 2>&1 || rc=$?
if [ $rc -eq 1 ] && [ -s "$TMP/n" ]; then ok "no server: exit 1"; else bad "no server: exit $rc"; cat "$TMP/n"; fi
for args in "-c 127.0.0.1 -t nope" "-c 127.0.0.1 -q 1025" "-c 127.0.0.1 -t lat -q 2" "-s -c x" \
	"-c 127.0.0.1 -S 4K --sweep"; do
	rc=0
	# shellcheck disable=SC2086
	timeout -k 5 10 "$IWPERF" $args >/dev/null 2>&1 || rc=$?
	if [ $rc -eq 2 ]; then ok "usage error: $args"; else bad "usage '$args': exit $rc"; fi
done
if timeout -k 5 10 "$IWPERF" --help | grep -q SYNOPSIS; then ok "--help"; else bad "--help"; fi

finish
