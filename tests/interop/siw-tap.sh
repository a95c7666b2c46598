#!/usr/bin/env bash
# siw-tap.sh: libiwarp's raw transport (our own TCP/IP on raw frames)
# against the Linux kernel siw driver in the QEMU guest of siw-guest, over
# a tap device (issue 8, part 5).
#
# USAGE
#   siw-tap.sh --out DIR --siw-guest PATH --cache DIR --bin DIR --testbin DIR
#              --src DIR [--cc CC] [--only CASE]...
#   siw-tap.sh --list
#
#   --bin iwping, iwdump; --testbin iwrw; --src tests/interop/programs
#   (siwrw is compiled from there for the guest, as interop.sh does).
#
# Setup: a network namespace of its own with one tap device (tap0, up, no
# address: 10.78.0.1 is ours, the kernel must not answer for it). QEMU runs
# inside the namespace (siw-guest run under `ip netns exec`) with a second
# NIC on tap0 (vnet_hdr=off: no checksum/TSO offload reaches the tap, so
# every frame on tap0 is a plain, complete Ethernet frame). The guest puts
# 10.78.0.2/24 on eth1 and adds `siw1` on it; our iwping runs in the
# namespace with --transport=raw --dev tap0 --ip 10.78.0.1/24. One boot for
# all cases; QEMU's filter-dump records tap0's wire in DIR/tap.pcap.
#
# Sequencing: only one of our programs may own 10.78.0.1 at a time (a second
# raw stack on the same tap would answer the other's SYNs with RST), so the
# cases run strictly one after the other. The guest waits for a "go" before
# each case: it listens with nc on eth0 (port 7399, reached by the host
# through --hostfwd 7399:7399 on the namespace's loopback) and prints
# "SIW-CASE-WAIT name;". The host then (g2h) starts our server and waits
# until it listens, and connects to the go port; for h2g the guest starts
# rping -s, prints "SIW-CASE-READY name;" and the host runs our client.
#
# Cases: h2g = guest `rping -s` against our `iwping -c`; g2h = guest
# `rping -c` against our `iwping -s`; 64, 4000 and 60000 bytes with CRC on
# (our side asks for it), and 4000 bytes with --crc=off; and the READ/WRITE
# case of the interop suite (iwrw against siwrw, 1 B .. 1 MiB, 2 rounds) in
# both directions, and at 1 MiB with CRC off. A case passes when both
# programs exit 0, the data checks pass (rping: the ping data on both sides
# is rping's pattern for every iteration, interop-checks.sh ping_data;
# READ/WRITE: both programs verified every round), and `iwdump --check`
# accepts that connection on the tap capture with the expected CRC state.
#
# Exit: 0 all pass, 1 a failure, 77 only when qemu cannot run, or the
# machine forbids a namespace or a tap device (not root, no /dev/net/tun).
set -uo pipefail

ME="$(readlink -f "${BASH_SOURCE[0]}")"
OUT=""; SIWG=""; CACHE=""; BIN=""; TBIN=""; SRC=""; CC=${CC:-cc}; ONLY=(); LIST=0
CASE_T=25          # per-program bound inside a case (s)
RUN_T=240          # whole guest run bound (s)
GO_PORT=7399
TAP=tap0
OUR_IP=10.78.0.1
GUEST_IP=10.78.0.2

log() { printf 'siw-tap: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
skip() {
	log "################################################################"
	log "SKIPPED: $*"
	log "################################################################"
	exit 77
}
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	--siw-guest) SIWG=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	--bin) BIN=$2; shift 2 ;;
	--testbin) TBIN=$2; shift 2 ;;
	--src) SRC=$2; shift 2 ;;
	--cc) CC=$2; shift 2 ;;
	--only) ONLY+=("$2"); shift 2 ;;
	--list) LIST=1; shift ;;
	*) die "unknown argument $1" ;;
	esac
done

# ------------------------------------------------------------------ cases
C_NAME=(); C_DIR=(); C_GUEST=(); C_HOST=(); C_CHECK=()
add_case() {  # NAME DIR GUEST HOST CHECK (a function below and its arguments)
	local keep=1 o
	if [[ ${#ONLY[@]} -gt 0 ]]; then
		keep=0
		for o in "${ONLY[@]}"; do [[ $o = "$1" ]] && keep=1; done
	fi
	[[ $keep = 1 ]] || return 0
	C_NAME+=("$1"); C_DIR+=("$2"); C_GUEST+=("$3"); C_HOST+=("$4"); C_CHECK+=("$5")
}
RAW="--transport=raw --dev $TAP --ip $OUR_IP/24"
for s in 64 4000 60000; do
	add_case "tap-h2g-$s" h2g "rping -s -a $GUEST_IP -p @P@ -v -V -C 5 -S $s" \
		"@IWPING@ -c -a $GUEST_IP -p @P@ -v -V -C 5 -S $s $RAW" "chk_tap_rping 5 on"
	add_case "tap-g2h-$s" g2h "rping -c -a $OUR_IP -p @P@ -v -V -C 5 -S $s" \
		"@IWPING@ -s -a $OUR_IP -p @P@ -v -d $RAW" "chk_tap_rping 5 on"
done
add_case tap-h2g-crcoff h2g "rping -s -a $GUEST_IP -p @P@ -v -V -C 3 -S 4000" \
	"@IWPING@ -c -a $GUEST_IP -p @P@ -v -V -C 3 -S 4000 --crc=off $RAW" "chk_tap_rping 3 off"
add_case tap-g2h-crcoff g2h "rping -c -a $OUR_IP -p @P@ -v -V -C 3 -S 4000" \
	"@IWPING@ -s -a $OUR_IP -p @P@ -v -d --crc=off $RAW" "chk_tap_rping 3 off"
RW_SIZES=1,4000,65537,1048573,1048576
add_case tap-rw-h2g h2g "@SIWRW@ -s -p @P@ --sizes $RW_SIZES --rounds 2" \
	"@IWRW@ -c $GUEST_IP -p @P@ --sizes $RW_SIZES --rounds 2 $RAW" "chk_tap_rw 10 on"
add_case tap-rw-g2h g2h "@SIWRW@ -c $OUR_IP -p @P@ --sizes $RW_SIZES --rounds 2" \
	"@IWRW@ -s -a $OUR_IP -p @P@ --sizes $RW_SIZES --rounds 2 $RAW" "chk_tap_rw 10 on"
add_case tap-rw-h2g-crcoff h2g "@SIWRW@ -s -p @P@ --sizes 1048576" \
	"@IWRW@ -c $GUEST_IP -p @P@ --sizes 1048576 --crc=off $RAW" "chk_tap_rw 1 off"
add_case tap-rw-g2h-crcoff g2h "@SIWRW@ -c $OUR_IP -p @P@ --sizes 1048576" \
	"@IWRW@ -s -a $OUR_IP -p @P@ --sizes 1048576 --crc=off $RAW" "chk_tap_rw 1 off"
[[ ${#C_NAME[@]} -gt 0 ]] || die "no cases selected"
if [[ $LIST = 1 ]]; then printf '%s\n' "${C_NAME[@]}"; exit 0; fi

[[ -n $OUT ]] || die "need --out"
for v in SIWG CACHE BIN TBIN SRC; do
	[[ -n ${!v} ]] || die "missing --${v,,}"
done
mkdir -p "$CACHE" 2>/dev/null
for v in SIWG CACHE BIN TBIN SRC; do
	[[ -e ${!v} ]] || die "${!v} does not exist"
	printf -v "$v" '%s' "$(readlink -f "${!v}")"
done

# ------------------------------------------------------------------ setup
T0=$(now)
if [[ $(id -u) != 0 ]] || ! command -v ip >/dev/null 2>&1; then
	skip "needs root and iproute2 (a namespace, a tap device, raw sockets)"
fi
bash "$SIWG" prepare --variant default --dir "$CACHE" || die "siw-guest prepare failed"
qemu-system-x86_64 -version >/dev/null 2>&1 || skip "qemu-system-x86_64 cannot run on this machine"

# siwrw for the guest: compiled here (its -dev packages come with
# prepare), cached by the hash of its sources and the compiler, shared
# with interop.sh.
key=$( { cat "$SRC/siwrw.c" "$SRC/rw_proto.c" "$SRC/rw_proto.h"; "$CC" --version 2>&1 | head -n1; } |
	sha256sum | cut -c1-16)
SIWRW="$CACHE/siwrw-$key"
if [[ ! -x $SIWRW ]]; then
	log "compiling siwrw ($CC)"
	"$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$SIWRW.tmp.$$" \
		"$SRC/siwrw.c" "$SRC/rw_proto.c" -libverbs -lrdmacm || die "siwrw does not compile"
	mv "$SIWRW.tmp.$$" "$SIWRW"
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "${OUT:?}"/*

NS="iwtap-$$-$RANDOM"
GPID=""
cleanup() {
	# The guest run first (it kills QEMU and the host script), then the
	# namespace, which takes the tap device with it.
	if [[ -n $GPID ]] && kill -0 "$GPID" 2>/dev/null; then
		kill -TERM "$GPID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$GPID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$GPID" 2>/dev/null
	fi
	ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
[[ -c /dev/net/tun ]] || skip "no /dev/net/tun"
ip -n "$NS" tuntap add dev "$TAP" mode tap 2>/dev/null || skip "cannot create a tap device"
ip -n "$NS" link set lo up
ip -n "$NS" link set "$TAP" up || die "cannot bring $TAP up"
# No IPv6 chatter from the namespace's side of the wire.
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true

port() { echo $((7200 + $1)); }
subst() {  # TEXT INDEX
	local s=$1
	s=${s//@P@/$(port "$2")}; s=${s//@IWPING@/$BIN/iwping}
	s=${s//@IWRW@/$TBIN/iwrw}; s=${s//@SIWRW@//tmp/siwrw}
	printf '%s' "$s"
}

# ------------------------------------------------------------- guest script
guest_script() {
	local i n g
	echo 'cat /sys/firmware/qemu_fw_cfg/by_name/opt/siwrw/raw >/tmp/siwrw && chmod 755 /tmp/siwrw || exit 3'
	echo "ip link set eth1 up && ip addr add $GUEST_IP/24 dev eth1 && rdma link add siw1 type siw netdev eth1 || exit 3"
	guest_case_functions "$CASE_T"
	# go NAME: wait for the host's "go" (one connection to the go port).
	echo 'go() { timeout 60 nc -l -p '"$GO_PORT"' </dev/null >/dev/null 2>&1 & np=$!; siw_wait_listen '"$GO_PORT"' 10 && echo "SIW-CASE-WAIT $1;"; wait $np; }'
	for i in "${!C_NAME[@]}"; do
		n=${C_NAME[i]}; g=$(subst "${C_GUEST[i]}" "$i")
		echo "echo SIW-CASE-BEGIN $n"
		echo "go $n"
		if [[ ${C_DIR[i]} = h2g ]]; then
			echo "run_case $n $g & pid=\$!"
			echo "siw_wait_listen $(port "$i") 20 && echo \"SIW-CASE-READY $n;\""
			echo "wait \$pid"
		else
			echo "run_case $n $g"
		fi
		echo "report $n"
	done
	echo 'dmesg | grep -i siw | sed "s/^/G|dmesg| /"'
	echo 'echo SIW-CASES-DONE'
	echo 'exit 0'
}

# -------------------------------------------------------------- host script
# Runs inside the namespace (siw-guest run does, under ip netns exec).
host_script() {
	local i n h cd
	echo 'set -u'
	printf 'SIWG=%q\n' "$SIWG"
	echo 'export LC_ALL=C'
	# Connect to the guest's go listener (through hostfwd), then close.
	echo "go() { exec 3<>/dev/tcp/127.0.0.1/$GO_PORT && exec 3>&-; }"
	for i in "${!C_NAME[@]}"; do
		n=${C_NAME[i]}; h=$(subst "${C_HOST[i]}" "$i"); cd="$OUT/$n"
		printf 'if ! bash "$SIWG" wait-log %q 120; then echo noready >%q/host.rc; else\n' "SIW-CASE-WAIT $n;" "$cd"
		if [[ ${C_DIR[i]} = h2g ]]; then
			echo '  go'
			printf '  if bash "$SIWG" wait-log %q 60; then\n' "SIW-CASE-READY $n;"
			printf '    ( cd %q && { timeout -k 5 %d %s; echo $? >host.rc; } >host.log 2>&1 )\n' "$cd" "$CASE_T" "$h"
			printf '  else echo noready >%q/host.rc; fi\n' "$cd"
		else
			printf '  ( cd %q && { timeout -k 5 %d %s; echo $? >host.rc; } >host.log 2>&1 ) & srv=$!\n' \
				"$cd" "$CASE_T" "$h"
			# iwping -d and iwrw say when they listen.
			printf '  for _ in $(seq 100); do grep -aq "listening on" %q/host.log 2>/dev/null && break; sleep 0.1; done\n' "$cd"
			echo '  go'
			echo '  wait $srv'
		fi
		echo 'fi'
	done
	printf 'bash "$SIWG" wait-log SIW-CASES-DONE %d\n' "$RUN_T"
	echo 'exit 0'
}

# ------------------------------------------------------------------ run
source "$(dirname "$ME")/interop-checks.sh"

for i in "${!C_NAME[@]}"; do mkdir -p "$OUT/${C_NAME[i]}"; done
guest_script >"$OUT/guest-script.sh"
host_script >"$OUT/host-script.sh"
log "${#C_NAME[@]} cases, one guest boot, namespace $NS"
ip netns exec "$NS" bash "$SIWG" run --variant default --dir "$CACHE" --timeout "$RUN_T" \
	--log "$OUT/serial.log" --host-when boot --host-cmd "bash $OUT/host-script.sh" \
	--hostfwd "$GO_PORT:$GO_PORT" \
	--qemu-arg -netdev --qemu-arg "tap,id=t0,ifname=$TAP,script=no,downscript=no,vnet_hdr=off" \
	--qemu-arg -device --qemu-arg "virtio-net-pci,netdev=t0,mac=52:54:00:78:00:02" \
	--qemu-arg -object --qemu-arg "filter-dump,id=tapdump,netdev=t0,file=$OUT/tap.pcap" \
	--qemu-arg -fw_cfg --qemu-arg "name=opt/siwrw,file=$SIWRW" \
	-- "$(cat "$OUT/guest-script.sh")" &
GPID=$!
wait "$GPID"
RUN_RC=$?
GPID=""
[[ $RUN_RC = 0 ]] || log "siw-guest run exited $RUN_RC"
split_console "$OUT/serial.log"

# ------------------------------------------------------------------ verdicts
chk_tap_rping() {  # COUNT CRC
	ping_data "$(client_log)" "ping data: " "$1"
	ping_data "$(server_log)" "server ping data: " "$1"
	grep -aqi 'mismatch' "$CD/host.log" "$CD/guest.log" && WHY+=("data mismatch reported")
	iwdump_check tap "$OUT/tap.pcap" "$2" "$CASE_PORT"
}
chk_tap_rw() {  # ROUNDS CRC
	local n
	grep_need "$CD/host.log" "RESULT PASS rw" "iwrw did not pass"
	grep_need "$CD/guest.log" "RESULT PASS rw" "siwrw did not pass"
	n=$(grep -ac 'verified both ways' "$(client_log)")
	[[ $n = "$1" ]] || WHY+=("$n rounds verified, expected $1")
	iwdump_check tap "$OUT/tap.pcap" "$2" "$CASE_PORT"
}
case_port() { port "$1"; }
evaluate_cases 20
if grep -aq 'siw: crc error' "$OUT/dmesg.txt"; then
	log "siw logged CRC errors:"; grep -a 'siw: crc error' "$OUT/dmesg.txt" | sed 's/^/siw-tap:   /' >&2
fi
printf 'siw-tap: %d passed, %d failed, %.1f s (outputs: %s)\n' "$PASS" "$FAIL" \
	"$(awk -v a="$T0" -v b="$(now)" 'BEGIN { print b - a }')" "$OUT" | tee -a "$OUT/matrix.txt"
[[ $FAIL = 0 && $RUN_RC = 0 ]] && exit 0
exit 1
