#!/bin/bash
# Guest-free test of interop-checks.sh verdict rules that do not need a
# guest: guest_exit's single exception (rping's teardown race) must match
# only its exact shape.
set -u
source "$(dirname "$0")/interop-checks.sh"
CD=$(mktemp -d); trap 'rm -rf "$CD"' EXIT
FAILS=0

clean_server_log() {
	printf 'server ping data: rdma-ping-%d: ABCDEFG\n' 0 1 2
	echo 'server DISCONNECT EVENT...'
	echo 'wait for RDMA_READ_ADV state 10'
}

expect() {  # NAME RC VERDICT(pass|note|fail)
	local got
	WHY=(); NOTE=()
	guest_exit "$2"
	if [[ ${#WHY[@]} -gt 0 ]]; then got=fail; elif [[ ${#NOTE[@]} -gt 0 ]]; then got=note; else got=pass; fi
	if [[ $got = "$3" ]]; then
		echo "ok   $1: $got"
	else
		echo "FAIL $1: expected $3, got $got (${WHY[*]:-}${NOTE[*]:-})"; FAILS=$((FAILS + 1))
	fi
}

clean_server_log >"$CD/guest.log"
expect "exit 0" 0 pass
expect "exit 255 without the race line" 255 fail
expect "exit 1" 1 fail

{ clean_server_log; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "the race after a clean disconnect" 255 note
expect "the race line but exit 1" 1 fail
expect "timeout" 124 fail

{ printf 'server ping data: rdma-ping-0: ABC\n'; echo 'wait for RDMA_READ_ADV state 10'; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "no DISCONNECT event" 255 fail

{ clean_server_log; echo 'cq completion failed status 5'; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "a completion error before" 255 fail

{ clean_server_log; echo "$RPING_TEARDOWN_RACE"; echo 'something else'; } >"$CD/guest.log"
expect "the race line not last" 255 fail

{ echo "$RPING_TEARDOWN_RACE"; clean_server_log; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "CM event errors twice" 255 fail

{ printf 'server ping data: rdma-ping-%d: ABCDEFG\n' 0 1; echo 'server DISCONNECT EVENT...'; echo 'wait for RDMA_READ_COMPLETE state 10'; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "disconnected in the middle of a ping" 255 fail

{ printf 'ping data: rdma-ping-%d: ABCDEFG\n' 0 1 2; echo 'client DISCONNECT EVENT...'; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "the client's race after its disconnect" 255 note
{ printf 'ping data: rdma-ping-%d: ABCDEFG\n' 0 1; echo 'client DISCONNECT EVENT...'; echo 'wait for RDMA_WRITE_ADV state 10'; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "the client disconnected by its peer mid-ping" 255 fail
{ printf 'ping data: rdma-ping-%d: ABCDEFG\n' 0 1 2; echo "$RPING_TEARDOWN_RACE"; } >"$CD/guest.log"
expect "the client without a DISCONNECT event" 255 fail

[[ $FAILS = 0 ]] && { echo "checks-selftest: all passed"; exit 0; }
echo "checks-selftest: $FAILS failed"; exit 1
