#!/usr/bin/env bash
# Record the "trace:" captures the pcapcheck tests use, with our own tools
# over 127.0.0.1 (--trace), into OUTDIR/NAME.pcap; each must pass
# `iwdump --check` before any test derives a negative capture from it.
# Usage: gen_traces.sh OUTDIR IWPING IWPERF IWDUMP
# Every command is bounded with timeout; servers are stopped by their PID.
set -u
OUT=$1
IWPING=$2
IWPERF=$3
IWDUMP=$4
mkdir -p "$OUT"
rm -f "$OUT"/*.pcap "$OUT"/*.log "$OUT/ok"
FAILS=0
SRV=""

stop_server() {
	[ -n "$SRV" ] || return 0
	kill "$SRV" 2>/dev/null
	for _ in $(seq 1 50); do
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=""
}
trap stop_server EXIT

listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# start LOG CMD... (@PORT@ becomes a free port, left in $PORT). A port some
# other process already listens on is never used: a client reaching a
# stranger's server would record the wrong conversation.
start() {
	local log=$1 try a i
	local -a cmd
	shift
	for try in 1 2 3 4 5 6; do
		PORT=$((20000 + (RANDOM * 13 + $$ + try * 101) % 12000))
		listening "$PORT" && continue
		listening $((PORT + 1)) && continue
		cmd=()
		for a in "$@"; do
			[ "$a" = "@PORT@" ] && a=$PORT
			cmd+=("$a")
		done
		timeout -k 5 60 "${cmd[@]}" >"$log" 2>&1 &
		SRV=$!
		for i in $(seq 1 100); do
			kill -0 "$SRV" 2>/dev/null || break
			listening "$PORT" && return 0
			sleep 0.05
		done
		stop_server
	done
	echo "FAIL: server did not start: $*"
	cat "$log"
	FAILS=$((FAILS + 1))
	return 1
}

# record NAME: the client command follows; @PORT@ and @TRACE@ are filled in.
record() {
	local name=$1 a
	local -a cmd
	shift
	cmd=()
	for a in "$@"; do
		[ "$a" = "@PORT@" ] && a=$PORT
		[ "$a" = "@TRACE@" ] && a=$OUT/$name.pcap
		cmd+=("$a")
	done
	if ! timeout -k 5 30 "${cmd[@]}" >"$OUT/$name.log" 2>&1; then
		echo "FAIL: $name: ${cmd[*]}"
		cat "$OUT/$name.log"
		FAILS=$((FAILS + 1))
		return
	fi
	if ! timeout -k 5 30 "$IWDUMP" --check --quiet "$OUT/$name.pcap" >"$OUT/$name.iwdump" 2>&1; then
		echo "FAIL: $name: the source capture itself does not pass iwdump --check"
		cat "$OUT/$name.iwdump"
		FAILS=$((FAILS + 1))
		return
	fi
	echo "ok: $name ($(grep -m1 '^TOTAL' "$OUT/$name.iwdump"))"
}

# rping-style traffic: SEND adverts, RDMA READ, RDMA WRITE; CRC on.
start "$OUT/srv1.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@ &&
	record iwping-crc-4000 "$IWPING" -c -a 127.0.0.1 -p @PORT@ -S 4000 -C 3 -V --trace @TRACE@
stop_server
# Markers in both directions (each side asks the other to insert them).
start "$OUT/srv2.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@ --markers &&
	record iwping-markers-4000 "$IWPING" -c -a 127.0.0.1 -p @PORT@ -S 4000 -C 3 -V --markers --trace @TRACE@
stop_server
# CRC off: tshark and iwdump must both report no CRC verdict.
start "$OUT/srv3.log" "$IWPING" -s -a 127.0.0.1 -p @PORT@ --crc=off &&
	record iwping-nocrc-100 "$IWPING" -c -a 127.0.0.1 -p @PORT@ -S 100 -C 3 -V --crc=off --trace @TRACE@
stop_server
# Multi-FPDU messages at siw's FPDU size: READ responses of several FPDUs,
# and 64 KiB WRITEs whose FPDUs are larger than a trace frame (so they
# span segments). Their FPDU size is given: by default it follows the
# MSS, which Linux bounds by half the peer's window, so a small tcp_rmem
# default (16384) made 3.8 KB FPDUs and no FPDU spanned segments.
start "$OUT/srv4.log" "$IWPERF" -s -a 127.0.0.1 -p @PORT@ &&
	{
		record iwperf-read-1442 "$IWPERF" -c 127.0.0.1 -p @PORT@ -t read -S 6000 -n 6 -Q 2 \
			--max-fpdu 1442 --trace @TRACE@
		record iwperf-write-64k "$IWPERF" -c 127.0.0.1 -p @PORT@ -t write -S 65536 -n 4 -Q 2 \
			--max-fpdu 65000 --trace @TRACE@
	}
stop_server
# SENDs of several FPDUs (MO > 0) with markers both ways.
start "$OUT/srv5.log" "$IWPERF" -s -a 127.0.0.1 -p @PORT@ --markers &&
	record iwperf-send-markers "$IWPERF" -c 127.0.0.1 -p @PORT@ -t send -S 4000 -n 6 -Q 2 \
		--max-fpdu 1442 --markers --trace @TRACE@
stop_server
if [ "$FAILS" -eq 0 ]; then
	touch "$OUT/ok"
	echo "all traces recorded in $OUT"
fi
[ "$FAILS" -eq 0 ]
