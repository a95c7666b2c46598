# Shared helpers for the tool tests (sourced). Every command that can block
# runs under `timeout`; servers started here are stopped by their PID.

set -u

FAILS=0
PASSES=0
SERVER_PID=""
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iwtools.XXXXXX")

cleanup() {
	stop_server
	rm -rf "$TMP"
}
trap cleanup EXIT

ok() {
	PASSES=$((PASSES + 1))
	echo "ok: $*"
}

bad() {
	FAILS=$((FAILS + 1))
	echo "FAIL: $*"
}

# A port unlikely to collide with a parallel test, below the ephemeral
# range (32768..) so no client socket holds it.
pick_port() {
	echo $((10000 + (RANDOM * 7 + $$) % 20000))
}

# wait_announce ERRLOG: up to 10 s for the server's "listening on" line
# on stderr (the tools print it once their ports are open).
wait_announce() {
	local i
	for i in $(seq 1 200); do
		grep -q 'listening on' "$1" 2>/dev/null && return 0
		if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
			return 1
		fi
		sleep 0.05
	done
	return 1
}

# Processes the tests stop with a signal run without LeakSanitizer: under
# load on these 2-core machines its exit-time scan was seen to spin for
# minutes in a process that had just handled SIGTERM/SIGINT (sanitizer
# builds only). Everything that exits by itself keeps leak checking, and
# the library's leak-freedom is checked in-process by the unit and
# integration suites.
SIGNALED_ENV=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")

# start_server LOG CMD...: a background server (bounded to 120 s); the
# argument @PORT@ in CMD becomes a free port, left in $PORT. Its stdout goes
# to LOG, its stderr to LOG.err; ready when it announces "listening on".
# Tries a few ports in case one is taken.
start_server() {
	local log=$1 try a
	local -a cmd
	shift
	for try in 1 2 3 4 5; do
		PORT=$(pick_port)
		cmd=()
		for a in "$@"; do
			[ "$a" = "@PORT@" ] && a=$PORT
			cmd+=("$a")
		done
		# The previous server's log says "listening on" too, and the
		# background shell truncates it only when it gets to run: without
		# this, wait_announce could read the old line and the client race
		# the new server's listen() (tools_iwping: "Connection refused").
		rm -f "$log" "$log.err"
		"${SIGNALED_ENV[@]}" timeout -k 10 120 "${cmd[@]}" >"$log" 2>"$log.err" &
		SERVER_PID=$!
		if wait_announce "$log.err"; then
			return 0
		fi
		stop_server
	done
	echo "server did not start: ${cmd[*]}"
	cat "$log" "$log.err"
	return 1
}

# wait_server: wait for a server that exits by itself (up to 10 s), else
# end it. Returns the server's exit status.
wait_server() {
	local rc i
	[ -z "$SERVER_PID" ] && return 0
	for i in $(seq 1 200); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$SERVER_PID" 2>/dev/null
	fi
	wait "$SERVER_PID"
	rc=$?
	SERVER_PID=""
	return $rc
}

# SIGTERM, then SIGKILL if the server is not gone within 10 s. (Seen under
# ASan: LeakSanitizer's exit-time scan can spin forever in a server that
# was stopped by a signal; the harness must not hang on that.)
stop_server() {
	local i
	[ -z "$SERVER_PID" ] && return 0
	kill "$SERVER_PID" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		echo "server $SERVER_PID did not stop within 10 s of SIGTERM: killed"
		pkill -KILL -P "$SERVER_PID" 2>/dev/null
		kill -KILL "$SERVER_PID" 2>/dev/null
	fi
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=""
}

finish() {
	echo "$PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
	exit $?
}
