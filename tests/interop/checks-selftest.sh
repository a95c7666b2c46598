#!/bin/bash
# Guest-free test of interop-checks.sh verdict rules that do not need a
# guest: guest_exit's two exceptions (rping's teardown race, perftest's
# close handshake against siw's tx_suspend race) must match only their
# exact shapes.
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

# perftest's close handshake against siw's tx_suspend race (g2h only).
perftest_log() {  # the guest client's output, then its error lines
	echo ' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]'
	echo ' 65536      200              8.73               7.06   		   0.000113'
	echo '---------------------------------------------------------------------------------------'
	printf '%s\n' "$@"
}
close_msgs() {  # the exchange connection's last SENDs: A>B msn $1, B>A msn $2
	echo 'MPA conn 1 dir A>B frame 9542: Request rev 2 M=0 C=0 R=0 enhanced ird 0 ord 0 pd 0'
	echo 'MSG conn 1 dir A>B frame 27997: SEND msn 15 8 bytes'
	echo 'MSG conn 1 dir B>A frame 27998: SEND msn 15 8 bytes'
	echo "MSG conn 1 dir A>B frame 27999: SEND msn $1 56 bytes"
	[[ -z ${2:-} ]] || echo "MSG conn 1 dir B>A frame 28000: SEND msn $2 56 bytes"
	echo 'MSG conn 2 dir A>B frame 11974: WRITE stag 0x00000205 to 0x7f8a2d1f4000 65536 bytes'
}
CASE_DIR=g2h
perftest_log "${PERFTEST_CLOSE_RACE[@]}" >"$CD/guest.log"; close_msgs 16 16 >"$CD/iwdump-close.txt"
expect "perftest: the close race, SEND delivered and answered" 1 note
expect "perftest: the close race shape but exit 255" 255 fail
CASE_DIR=h2g
expect "perftest: the close race shape on the server side (h2g)" 1 fail
CASE_DIR=g2h
close_msgs 16 >"$CD/iwdump-close.txt"
expect "perftest: the last SEND never answered" 1 fail
close_msgs 16 15 >"$CD/iwdump-close.txt"
expect "perftest: answered with another msn" 1 fail
: >"$CD/iwdump-close.txt"
expect "perftest: no capture" 1 fail
close_msgs 16 16 >"$CD/iwdump-close.txt"
perftest_log ' Bad wc status 5' "${PERFTEST_CLOSE_RACE[@]:1}" >"$CD/guest.log"
expect "perftest: another completion status" 1 fail
perftest_log ' Bad wc status 2' ' Unable to read from socket/rdma_cm' "${PERFTEST_CLOSE_RACE[2]}" >"$CD/guest.log"
expect "perftest: a failed read" 1 fail
perftest_log 'Couldn'"'"'t post send' "${PERFTEST_CLOSE_RACE[@]}" >"$CD/guest.log"
expect "perftest: an earlier error" 1 fail
perftest_log "${PERFTEST_CLOSE_RACE[@]}" | grep -v '^ 65536' >"$CD/guest.log"
expect "perftest: no result line" 1 fail
{ perftest_log "${PERFTEST_CLOSE_RACE[@]}"; echo 'more'; } >"$CD/guest.log"
expect "perftest: the error lines not last" 1 fail
CASE_DIR=

[[ $FAILS = 0 ]] && { echo "checks-selftest: all passed"; exit 0; }
echo "checks-selftest: $FAILS failed"; exit 1
