#!/usr/bin/env bash
# What the tools say when something is wrong (issue 17): one case per
# message, each checking the exit status and the text.
# Usage: test_messages.sh IWPING IWPERF IWDUMP TT_PEER TT_BADSINK
IWPING=${1:?usage: $0 iwping iwperf iwdump tt_peer tt_badsink}
IWPERF=${2:?}
IWDUMP=${3:?}
TT_PEER=${4:?}
TT_BADSINK=${5:?}
. "$(dirname "$0")/lib.sh"

# expect NAME WANT_RC FILE PATTERN...: the last command's exit status was
# $RC; FILE must contain every (grep -F) pattern.
expect() {
	local name=$1 want=$2 f=$3 p
	shift 3
	if [ "$RC" -ne "$want" ]; then
		bad "$name: exit $RC, expected $want"; cat "$f"; return 1
	fi
	for p in "$@"; do
		if ! grep -qF -- "$p" "$f"; then
			bad "$name: no '$p' in:"; cat "$f"; return 1
		fi
	done
	if grep -qE 'state [0-9]' "$f"; then
		bad "$name: an internal state number in:"; cat "$f"; return 1
	fi
	ok "$name"
}

run() { # run OUT ERR CMD...: bounded, status in RC
	local out=$1 err=$2
	shift 2
	RC=0
	timeout -k 5 60 "$@" >"$out" 2>"$err" || RC=$?
}

# ---- every numeric (and enumerated) option: option, value, valid range --
bad_value() { # TOOL OPTION-SPELLING VALUE ARGS...
	local tool=$1 opt=$2 val=$3 name
	shift 3
	name="$(basename "$tool") $* -> '$val' for $opt"
	run "$TMP/o" "$TMP/e" "$tool" "$@"
	expect "$name" 2 "$TMP/e" "invalid value '$val' for $opt (valid: "
}
bad_value "$IWPING" -p/--port 0 -c -a 127.0.0.1 -p 0
bad_value "$IWPING" -p/--port 70000 -c -a 127.0.0.1 -p 70000
bad_value "$IWPING" -S/--size 22 -c -a 127.0.0.1 -S 22
bad_value "$IWPING" -S/--size 65536 -c -a 127.0.0.1 -S 65536
bad_value "$IWPING" -C/--count 0 -c -a 127.0.0.1 -C 0
bad_value "$IWPING" --timeout 0 -c -a 127.0.0.1 --timeout 0
bad_value "$IWPING" --dead-peer 0 -c -a 127.0.0.1 --dead-peer 0
bad_value "$IWPING" --crc maybe -c -a 127.0.0.1 --crc=maybe
bad_value "$IWPING" --transport x -c -a 127.0.0.1 --transport=x
bad_value "$IWPERF" -q/--qps 5000 -c 127.0.0.1 -q 5000
bad_value "$IWPERF" -q/--qps 0 -c 127.0.0.1 -q 0
bad_value "$IWPERF" -S/--size 0 -c 127.0.0.1 -S 0
bad_value "$IWPERF" -S/--size 2G -c 127.0.0.1 -S 2G
bad_value "$IWPERF" -Q/--qd 0 -c 127.0.0.1 -Q 0
bad_value "$IWPERF" -Q/--qd 1025 -c 127.0.0.1 -Q 1025
bad_value "$IWPERF" -n/--iters 0 -c 127.0.0.1 -n 0
bad_value "$IWPERF" -D/--duration 0 -c 127.0.0.1 -D 0
bad_value "$IWPERF" -p/--port 65535 -c 127.0.0.1 -p 65535
bad_value "$IWPERF" --tcp-port 0 -s --tcp-port 0
bad_value "$IWPERF" -t/--test nope -c 127.0.0.1 -t nope
bad_value "$IWPERF" --sweep 64,0 -c 127.0.0.1 --sweep=64,0
bad_value "$IWPERF" --max-fpdu 10 -c 127.0.0.1 --max-fpdu 10
bad_value "$IWPERF" --timeout 0 -c 127.0.0.1 --timeout 0
bad_value "$IWPERF" --crc x -c 127.0.0.1 --crc=x
bad_value "$IWPERF" --transport x -c 127.0.0.1 --transport=x
bad_value "$IWDUMP" -p/--port 70000 -p 70000 x.pcap
bad_value "$IWDUMP" --max-ulpdu 1 --max-ulpdu 1 x.pcap
bad_value "$IWDUMP" --reorder-max -1 --reorder-max -1 x.pcap

# ---- servers announce where they listen; both client spellings work ----
if start_server "$TMP/ps.log" "$IWPING" -s -P -a 127.0.0.1 -p @PORT@; then
	RC=0
	expect "iwping server announces itself" 0 "$TMP/ps.log.err" "iwping: listening on 127.0.0.1:$PORT"
	run "$TMP/o" "$TMP/e" "$IWPING" -c 127.0.0.1 -p "$PORT" -C 2 -V
	expect "iwping -c ADDR" 0 "$TMP/e"
	run "$TMP/o" "$TMP/e" "$IWPING" -c -a 127.0.0.1 -p "$PORT" -C 2 -V
	expect "iwping -c -a ADDR" 0 "$TMP/e"
	run "$TMP/o" "$TMP/e" "$IWPING" -c 127.0.0.1 -a 127.0.0.1 -p "$PORT" -C 1
	expect "iwping: the address twice" 2 "$TMP/e" "unexpected argument 127.0.0.1"
	stop_server
else
	bad "iwping server start"
fi
if start_server "$TMP/fs.log" "$IWPERF" -s -a 127.0.0.1 -p @PORT@; then
	RC=0
	expect "iwperf server announces itself" 0 "$TMP/fs.log.err" \
		"iwperf: listening on 127.0.0.1:$PORT (iWARP) and TCP port $((PORT + 1))"
	run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -p "$PORT" -S 4K -n 20
	expect "iwperf -c ADDR" 0 "$TMP/e"
	run "$TMP/o" "$TMP/e" "$IWPERF" -c -a 127.0.0.1 -p "$PORT" -S 4K -n 20
	expect "iwperf -c -a ADDR" 0 "$TMP/e"
	run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -a 127.0.0.1 -p "$PORT" -n 20
	expect "iwperf: the address twice" 2 "$TMP/e" "the server address is given once"
	# A summary after the rows; the latency header has no queue depth.
	run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -p "$PORT" --sweep=1K,4K -n 50
	expect "iwperf summary line" 0 "$TMP/o" "# total: 2 rows, 100 messages"
	run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -p "$PORT" -t lat -n 50
	if grep -q "queue depth" "$TMP/o"; then
		bad "latency header shows a queue depth"; cat "$TMP/o"
	else
		expect "latency header without queue depth" 0 "$TMP/o" "# QPs 1, CRC on" "# total: 1 row, 50 round trips"
	fi
	# Without -n / -D even a 64-byte row runs at least 0.5 s (iWARP and
	# the TCP baseline).
	for tcp in "" --tcp; do
		run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -p "$PORT" -S 64 --json $tcp
		secs=$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' "$TMP/o")
		if [ "$RC" -eq 0 ] && awk -v s="${secs:-0}" 'BEGIN { exit !(s >= 0.5) }'; then
			ok "default 64-byte row $tcp lasts ${secs} s (>= 0.5)"
		else
			bad "default 64-byte row $tcp: exit $RC, ${secs:-?} s"; cat "$TMP/o" "$TMP/e"
		fi
	done
	# The live line: only on a terminal, and not with --quiet.
	if command -v script >/dev/null; then
		RC=0
		timeout -k 5 60 script -qefc "$IWPERF -c 127.0.0.1 -p $PORT -S 4K -D 3.2" /dev/null \
			>"$TMP/tty" 2>&1 || RC=$?
		expect "live line on a terminal" 0 "$TMP/tty" "s so far:" "# total: 1 row"
		RC=0
		timeout -k 5 60 script -qefc "$IWPERF -c 127.0.0.1 -p $PORT -S 4K -D 3.2 --quiet" /dev/null \
			>"$TMP/tty" 2>&1 || RC=$?
		if grep -q "so far:" "$TMP/tty"; then bad "--quiet still shows the live line"; else
			expect "--quiet: no live line" 0 "$TMP/tty" "# total: 1 row"; fi
	else
		bad "script(1) missing: cannot test the live line"
	fi
	run "$TMP/o" "$TMP/e" "$IWPERF" -c 127.0.0.1 -p "$PORT" -S 4K -D 3.2
	if grep -q "so far:" "$TMP/o" "$TMP/e"; then bad "live line without a terminal"; else
		ok "no live line without a terminal"; fi
	stop_server
else
	bad "iwperf server start"
fi

# start_peer MODE [TEXT]: tt_peer in the background; its port in $PEER_PORT,
# its pid in $PEER_PID.
start_peer() {
	local i
	rm -f "$TMP/peer.out" # else the loop below may read the last peer's port
	timeout -k 5 60 "$TT_PEER" "$@" >"$TMP/peer.out" 2>&1 &
	PEER_PID=$!
	for i in $(seq 1 200); do grep -q '^port ' "$TMP/peer.out" && break; sleep 0.05; done
	PEER_PORT=$(awk '/^port / { print $2 }' "$TMP/peer.out")
}

# ---- a peer that is not iWARP: say what it sent ----------------------------
not_mpa() { # TOOL ARGS...
	local tool=$1
	shift
	start_peer reply 'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n'
	run "$TMP/o" "$TMP/e" "$tool" -c 127.0.0.1 -p "$PEER_PORT" "$@"
	kill "$PEER_PID" 2>/dev/null; wait "$PEER_PID" 2>/dev/null
	expect "$(basename "$tool"): HTTP server answers" 1 "$TMP/e" \
		'peer sent "HTTP/1.1 400 Bad Req' 'which is not an MPA Reply'
}
not_mpa "$IWPING" -C 1
not_mpa "$IWPERF" -n 10

# ---- --timeout ends the run on time --------------------------------------
# A peer that accepts TCP and never answers the MPA Request.
start_peer silent
port=$PEER_PORT
t0=$(date +%s.%N)
run "$TMP/o" "$TMP/e" "$IWPING" -c 127.0.0.1 -p "$port" --timeout 1
t1=$(date +%s.%N)
kill "$PEER_PID" 2>/dev/null; wait "$PEER_PID" 2>/dev/null
expect "iwping --timeout 1, silent peer ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)" 1 "$TMP/e" \
	"127.0.0.1:$port"

# An established run whose server stops (SIGSTOP): the client reports the
# timeout and exits without waiting for a DISCONNECTED that cannot come.
timeout_stopped() { # NAME PATTERN SERVER-CMD... -- CLIENT-CMD...
	local name=$1 pat=$2 i t_msg t_end
	local -a scmd=() ccmd=()
	shift 2
	while [ "$1" != "--" ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	if ! start_server "$TMP/ss.log" "${scmd[@]}"; then bad "$name: server start"; return; fi
	for i in "${!ccmd[@]}"; do [ "${ccmd[$i]}" = "@PORT@" ] && ccmd[$i]=$PORT; done
	rm -f "$TMP/to.out" "$TMP/to.err" # the wait below must not see the last run's output
	timeout -k 5 60 "${ccmd[@]}" >"$TMP/to.out" 2>"$TMP/to.err" &
	local cpid=$!
	for i in $(seq 1 100); do [ -s "$TMP/to.out" ] && break; sleep 0.1; done
	# The server itself, not the `timeout` wrapping it.
	local spid
	spid=$(pgrep -P "$SERVER_PID" || echo "$SERVER_PID")
	kill -STOP "$spid"
	t_msg=""
	# Liveness first, then the message: a client that prints and exits
	# between the two checks must still have its message seen.
	local alive
	for i in $(seq 1 300); do
		alive=1
		kill -0 "$cpid" 2>/dev/null || alive=0
		if [ -z "$t_msg" ] && grep -q "no progress" "$TMP/to.err"; then t_msg=$(date +%s.%N); fi
		[ "$alive" = 1 ] || break
		sleep 0.02
	done
	t_end=$(date +%s.%N)
	RC=0
	wait "$cpid" || RC=$?
	kill -CONT "$spid"
	stop_server
	local late
	late=$(awk -v a="${t_msg:-0}" -v b="$t_end" 'BEGIN { printf "%.2f", b - a }')
	# Before the fix the exit came 3 s after the message (a disconnect wait).
	if [ -n "$t_msg" ] && awk -v l="$late" 'BEGIN { exit !(l < 2.5) }' &&
		! grep -q "no DISCONNECTED event" "$TMP/to.err"; then
		expect "$name: exits ${late} s after its timeout message" 1 "$TMP/to.err" "$pat"
	else
		bad "$name: message at ${t_msg:-never}, exit ${late} s later"; cat "$TMP/to.err"
	fi
}
timeout_stopped "iwping --timeout 1, server stopped" "no progress for 1 s waiting for the server" "$IWPING" -s -a 127.0.0.1 -p @PORT@ -- \
	"$IWPING" -c 127.0.0.1 -p @PORT@ -v -d --timeout 1
timeout_stopped "iwperf --timeout 1, server stopped" "no progress for 1 s" "$IWPERF" -s -a 127.0.0.1 -p @PORT@ -- \
	"$IWPERF" -c 127.0.0.1 -p @PORT@ --sweep=4K,4K,4K,4K,4K,4K,4K,4K,4K,4K -D 1 --timeout 1

# ---- the peer refuses our RDMA WRITE: a success locally, reported anyway --
if start_server "$TMP/ws.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@; then
	run "$TMP/bo" "$TMP/be" "$TT_BADSINK" "$PORT"
	wait_server
	RC=$?
	cp "$TMP/ws.log.err" "$TMP/we"
	if grep -q "our cause: DDP tagged buffer: invalid STag" "$TMP/bo"; then
		expect "iwping server: WRITE refused by the peer" 1 "$TMP/we" \
			"connection stopped: DDP tagged buffer: invalid STag (layer 1 etype 1 ecode 0x00)"
	else
		bad "tt_badsink did not refuse the WRITE"; cat "$TMP/bo" "$TMP/be" "$TMP/we"
	fi
else
	bad "badsink server start"
fi

# ---- iwdump: name the file; a truncated capture is a capture problem ------
printf 'not a capture at all\n' >"$TMP/notpcap.txt"
run "$TMP/o" "$TMP/e" "$IWDUMP" "$TMP/notpcap.txt"
expect "iwdump on a text file" 2 "$TMP/e" "$TMP/notpcap.txt: unknown file format"
if start_server "$TMP/ts.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@; then
	run "$TMP/o" "$TMP/e" "$IWPING" -c 127.0.0.1 -p "$PORT" -C 3 -V --trace "$TMP/full.pcap"
	wait_server
	size=$(stat -c %s "$TMP/full.pcap")
	head -c $((size - 7)) "$TMP/full.pcap" >"$TMP/cut.pcap"
	run "$TMP/o" "$TMP/e" "$IWDUMP" --check --quiet "$TMP/cut.pcap"
	expect "iwdump --check --quiet, truncated capture: stdout" 1 "$TMP/o" \
		"WARNING frame" "capture file ends in the middle of frame" "0 violations, 1 warnings"
	expect "iwdump --check --quiet, truncated capture: stderr" 1 "$TMP/e" "$TMP/cut.pcap: capture file ends"
	run "$TMP/o" "$TMP/e" "$IWDUMP" --check --allow-gaps --quiet "$TMP/cut.pcap"
	expect "iwdump --check --allow-gaps, truncated capture" 0 "$TMP/o" "1 warnings"
	run "$TMP/o" "$TMP/e" "$IWDUMP" --quiet "$TMP/cut.pcap"
	expect "iwdump without --check, truncated capture" 0 "$TMP/o" "1 warnings"
	run "$TMP/o" "$TMP/e" "$IWDUMP" --check --quiet "$TMP/full.pcap"
	expect "iwdump --check, the whole capture" 0 "$TMP/o" "0 violations, 0 warnings"
else
	bad "trace server start"
fi

finish
