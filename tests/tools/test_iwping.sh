#!/usr/bin/env bash
# iwping against itself over 127.0.0.1: rping's data pattern, exit codes,
# CRC and marker variants, a persistent server, tracing, bad usage.
# Usage: test_iwping.sh PATH/TO/iwping
IWPING=${1:?usage: $0 iwping}
. "$(dirname "$0")/lib.sh"

# The lines rping prints with -v for iterations 0..count-1 of a size.
expected() {
	awk -v size="$1" -v count="$2" -v pre="$3" 'BEGIN {
		for (n = 0; n < count; n++) {
			h = sprintf("rdma-ping-%d: ", n); s = substr(h, 1, size - 1)
			c = 65 + n % 58; body = ""
			for (i = length(h); i < size - 1; i++) {
				body = body sprintf("%c", c); if (++c > 122) c = 65
			}
			print pre s body
		}
	}'
}

# ping_case NAME SERVER_OPTS CLIENT_OPTS SIZE COUNT
ping_case() {
	local name=$1 sopts=$2 copts=$3 size=$4 count=$5 port rc
	# shellcheck disable=SC2086
	if ! start_server "$TMP/srv.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@ -v $sopts; then
		bad "$name: server start"
		return
	fi
	port=$PORT
	# shellcheck disable=SC2086
	timeout -k 5 60 "$IWPING" -c -a 127.0.0.1 -p "$port" -S "$size" -C "$count" -V -v $copts \
		>"$TMP/cli.out" 2>"$TMP/cli.err"
	rc=$?
	wait_server
	local src=$?
	if [ $rc -ne 0 ]; then
		bad "$name: client exit $rc"; cat "$TMP/cli.err"; cat "$TMP/srv.log" "$TMP/srv.log.err"; return
	fi
	if [ $src -ne 0 ]; then
		bad "$name: server exit $src"; cat "$TMP/srv.log" "$TMP/srv.log.err"; return
	fi
	expected "$size" "$count" "ping data: " >"$TMP/exp.out"
	if ! cmp -s "$TMP/exp.out" "$TMP/cli.out"; then
		bad "$name: client output differs from rping's pattern"
		diff "$TMP/exp.out" "$TMP/cli.out" | head -5 | cut -c1-200
		return
	fi
	expected "$size" "$count" "server ping data: " >"$TMP/exp.srv"
	if ! cmp -s "$TMP/exp.srv" "$TMP/srv.log"; then
		bad "$name: server output differs"
		diff "$TMP/exp.srv" "$TMP/srv.log" | head -5 | cut -c1-200
		return
	fi
	ok "$name"
}

for size in 23 4000 65535; do
	ping_case "size $size" "" "" "$size" 5
done
ping_case "default size 64, 20 pings" "" "" 64 20
ping_case "crc off" "--crc=off" "--crc=off" 1000 5
ping_case "crc required" "--crc=required" "--crc=required" 1000 5
ping_case "markers" "--markers" "--markers" 4000 5
ping_case "markers, crc off, big" "--markers --crc=off" "--markers --crc=off" 65535 3

# Persistent server: two clients in a row, the server stays up.
if start_server "$TMP/psrv.log" "$IWPING" -s -P -a 127.0.0.1 -p @PORT@; then
	port=$PORT
	r1=0; r2=0
	timeout -k 5 30 "$IWPING" -c -a 127.0.0.1 -p "$port" -C 3 -V >"$TMP/p1" 2>&1 || r1=$?
	timeout -k 5 30 "$IWPING" -c -a 127.0.0.1 -p "$port" -C 3 -V -S 100 >"$TMP/p2" 2>&1 || r2=$?
	if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		ok "persistent server, two clients"
	else
		bad "persistent server: client exits $r1 $r2"; cat "$TMP/p1" "$TMP/p2" "$TMP/psrv.log"
	fi
	stop_server
else
	bad "persistent server start"
fi

# SIGINT on a client without -C: it finishes the ping under way, then
# disconnects cleanly (exit 0), and the server sees a clean end too.
if start_server "$TMP/isrv.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@; then
	"${SIGNALED_ENV[@]}" timeout -k 5 30 "$IWPING" -c -a 127.0.0.1 -p "$PORT" -V -v >"$TMP/i.out" 2>&1 &
	cpid=$!
	# Signal only once a ping completed: a fixed sleep raced connection
	# setup on a loaded machine (a signal while connecting aborts, exit 1).
	for _ in $(seq 100); do
		grep -q '^ping data' "$TMP/i.out" 2>/dev/null && break
		sleep 0.1
	done
	# Signal iwping itself: GNU timeout forwards a signal to its child and
	# then to its whole process group, so iwping would see two SIGINTs
	# (and a second SIGINT means "abort now").
	kill -INT "$(pgrep -P "$cpid" || echo "$cpid")" 2>/dev/null
	rc=0
	wait "$cpid" || rc=$?
	wait_server
	src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
		ok "SIGINT: clean stop"
	else
		bad "SIGINT: client exit $rc, server exit $src"; cat "$TMP/i.out" "$TMP/isrv.log"
	fi
else
	bad "SIGINT server start"
fi

# Tracing: a pcap file with the classic magic.
if start_server "$TMP/tsrv.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@; then
	port=$PORT
	rc=0
	timeout -k 5 30 "$IWPING" -c -a 127.0.0.1 -p "$port" -C 2 -V --trace "$TMP/c.pcap" >"$TMP/t.out" 2>&1 || rc=$?
	wait_server
	magic=$(od -An -tx1 -N4 "$TMP/c.pcap" 2>/dev/null | tr -d ' ')
	if [ $rc -eq 0 ] && [ "$(stat -c %s "$TMP/c.pcap" 2>/dev/null || echo 0)" -gt 100 ] &&
		{ [ "$magic" = "d4c3b2a1" ] || [ "$magic" = "a1b2c3d4" ] || [ "$magic" = "4d3cb2a1" ]; }; then
		ok "--trace writes a pcap"
	else
		bad "--trace: rc $rc magic '$magic'"; cat "$TMP/t.out"
	fi
else
	bad "trace server start"
fi

# Nobody listening: a quick, clear failure.
port=$(pick_port)
rc=0
timeout -k 5 30 "$IWPING" -c -a 127.0.0.1 -p "$port" -C 1 >"$TMP/n.out" 2>&1 || rc=$?
if [ $rc -eq 1 ] && [ -s "$TMP/n.out" ]; then
	ok "no server: exit 1 with a message ($(head -1 "$TMP/n.out"))"
else
	bad "no server: exit $rc"; cat "$TMP/n.out"
fi

# Usage errors exit 2; --help exits 0.
for args in "-c -a 127.0.0.1 -S 22" "-c -a 127.0.0.1 -S 65536" "-c" "-s -c" "-s --crc=maybe"; do
	rc=0
	# shellcheck disable=SC2086
	timeout -k 5 10 "$IWPING" $args >/dev/null 2>&1 || rc=$?
	if [ $rc -eq 2 ]; then ok "usage error: $args"; else bad "usage '$args': exit $rc"; fi
done
if timeout -k 5 10 "$IWPING" --help | grep -q SYNOPSIS; then ok "--help"; else bad "--help"; fi

finish
