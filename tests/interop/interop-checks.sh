# Per-case checks of interop.sh (sourced). Each check function looks at
# the case directory $CD (host.log, guest.log, host.pcap), the group's
# guest capture $OUT/guest.pcap (this case's connection: TCP port
# $CASE_PORT), the direction $CASE_DIR (h2g: our client, g2h: our server)
# and appends failure reasons to WHY.

# grep_need FILE PATTERN WHAT: the (fixed-string) pattern must occur.
grep_need() {
	grep -aqF -- "$2" "$1" 2>/dev/null || WHY+=("$3")
}

# guest_exit RC: the guest program must exit 0. One exception, and only
# with its exact signature: rping's server (rdma-core 44) closes its CM
# event channel in main() while its cm_thread, having just acked the
# DISCONNECTED event, loops back into rdma_get_cm_event(); that read fails
# with EBADF and the thread calls exit(-1) = 255, racing main's exit(0).
# The race is inside rping (it also hits siw against siw), after the last
# ping was verified and the peer disconnected, so it says nothing about
# us: it becomes a NOTE when the log shows the whole clean teardown
# (DISCONNECT event, state 10 = DISCONNECTED) and ends with that error and
# nothing else went wrong. Any other exit status, or 255 without this
# exact shape, fails the case.
RPING_TEARDOWN_RACE='rdma_get_cm_event: Bad file descriptor'
# The server's clean end: the DISCONNECTED event, then its loop leaving
# while waiting for the next ping (state 10). The client's (its main
# thread disconnects after the last ping, the same race in its cm_thread):
# the event and no "wait for" complaint at all.
rping_clean_teardown() {  # LOG
	if grep -aqxF 'server DISCONNECT EVENT...' "$1"; then
		grep -aqxF 'wait for RDMA_READ_ADV state 10' "$1"
	else
		grep -aqxF 'client DISCONNECT EVENT...' "$1" && ! grep -aqF 'wait for ' "$1"
	fi
}
# The second exception, perftest's close handshake against siw (6.1):
# siw_tx_hdt() checks tx_suspend, which a peer's FIN or RST sets from the
# socket callback, AFTER sending a segment and BEFORE looking at its L flag,
# so a SEND whose last byte is already on the wire completes with
# IBV_WC_LOC_QP_OP_ERR (2) when the peer closes while siw's send call is
# still running. perftest's server (ours, g2h) answers the client's last
# handshake SEND and exits at once; siw in the TCG guest is slow enough
# that our answer and our close arrive inside that call. The signature: a
# guest perftest client that printed its result line, whose only error is
# that completion in its closing handshake (its last three lines), while
# the guest's capture shows the exchange connection's last SEND delivered
# and answered (A>B SEND msn N, then B>A SEND msn N). The iwdump text of
# the guest capture for this case is in $CD/iwdump-close.txt.
PERFTEST_CLOSE_RACE=(' Bad wc status 2' ' Unable to write to socket/rdma_cm'
	'Failed to close connection between server and client')
perftest_close_race() {  # LOG IWDUMP_TEXT
	local last=() msgs=() re='^MSG conn 1 dir (A>B|B>A) frame [0-9]+: SEND msn ([0-9]+) '
	[[ ${CASE_DIR:-} = g2h ]] || return 1
	mapfile -t last < <(grep -av '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 3)
	[[ ${#last[@]} = 3 && ${last[0]} = "${PERFTEST_CLOSE_RACE[0]}" &&
		${last[1]} = "${PERFTEST_CLOSE_RACE[1]}" && ${last[2]} = "${PERFTEST_CLOSE_RACE[2]}" ]] || return 1
	[[ $(grep -acE "[Bb]ad |[Ff]ail|[Uu]nable|[Ee]rror|[Cc]ouldn|[Ww]arn" "$1") = 3 ]] || return 1
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+$/ { f = 1 } END { exit !f }' "$1" || return 1
	mapfile -t msgs < <(grep -a '^MSG conn 1 ' "$2" 2>/dev/null | tail -n 2)
	[[ ${#msgs[@]} = 2 && ${msgs[0]} =~ $re && ${BASH_REMATCH[1]} = "A>B" ]] || return 1
	local n=${BASH_REMATCH[2]}
	[[ ${msgs[1]} =~ $re && ${BASH_REMATCH[1]} = "B>A" && ${BASH_REMATCH[2]} = "$n" ]]
}

guest_exit() {
	local rc=$1 log="$CD/guest.log" last
	[[ $rc = 0 ]] && return
	if [[ $rc = 1 && ${CASE_DIR:-} = g2h ]] && grep -aqxF "${PERFTEST_CLOSE_RACE[0]}" "$log" 2>/dev/null; then
		[[ -s $CD/iwdump-close.txt || -z ${BIN:-} ]] ||
			"$BIN/iwdump" -p "$CASE_PORT" "$OUT/guest.pcap" >"$CD/iwdump-close.txt" 2>&1
		if perftest_close_race "$log" "$CD/iwdump-close.txt"; then
			NOTE+=("guest perftest exit 1: siw failed its last handshake SEND after delivering it (our answer and close came during its send call; siw tx_suspend race)")
			return
		fi
	fi
	if [[ $rc = 255 ]]; then
		last=$(grep -av '^[[:space:]]*$' "$log" 2>/dev/null | tail -n1)
		if [[ $last = "$RPING_TEARDOWN_RACE" ]] && rping_clean_teardown "$log" &&
			[[ $(grep -acF 'rdma_get_cm_event' "$log") = 1 ]] &&
			! grep -aqE 'failed|error [0-9-]|mismatch|cq completion' "$log"; then
			NOTE+=("guest rping exit 255 after a clean disconnect: rping's own channel-close race ($RPING_TEARDOWN_RACE)")
			return
		fi
	fi
	WHY+=("guest exit $rc")
}

# show_failure: the tails of a failed case's logs, so that a CI log alone
# says what went wrong (the output directory is gone with the clone).
show_failure() {
	local f
	for f in guest.log host.log; do
		[[ -s $CD/$f ]] || continue
		echo "  --- $(basename "$CD")/$f (last 8 lines)"
		tail -n 8 "$CD/$f" | cut -c1-200 | sed 's/^/  | /'
	done
}

# Logs of the client and the server of this case.
client_log() { [[ $CASE_DIR = h2g ]] && echo "$CD/host.log" || echo "$CD/guest.log"; }
server_log() { [[ $CASE_DIR = h2g ]] && echo "$CD/guest.log" || echo "$CD/host.log"; }

# iwdump_check NAME PCAP CRC(on|off) [PORT]: iwdump --check accepts the
# capture, which holds exactly one iWARP connection with the expected CRC
# state, every FPDU showing it ("crc ok" / "no crc"). Output kept in
# $CD/iwdump-NAME.txt. Extra checks read that file afterwards.
iwdump_check() {
	local name=$1 pcap=$2 crc=$3 port=${4:-} out="$CD/iwdump-$1.txt" n bad
	if [[ ! -s $pcap ]]; then
		WHY+=("no capture $name"); return
	fi
	if ! "$BIN/iwdump" --check ${port:+-p "$port"} "$pcap" >"$out" 2>&1; then
		bad=$(grep -aE '^(VIOLATION|WARNING)' "$out")
		if [[ -n ${IWD_TOLERATE:-} ]]; then
			[[ -n $bad ]] && ! grep -vqF -- "$IWD_TOLERATE" <<<"$bad" &&
				NOTE+=("$name capture: $(wc -l <<<"$bad") x \"$IWD_TOLERATE\" (siw's RST)") && bad="tolerated"
		fi
		[[ $bad = tolerated ]] ||
			WHY+=("iwdump --check rejects the $name capture: $(head -n1 <<<"${bad:-see $out}")")
	fi
	n=$(grep -ac '^SUMMARY' "$out")
	if [[ ${IWD_CONNS:-1} = any ]]; then
		[[ $n -ge 1 ]] || { WHY+=("$name capture: no iWARP connection"); return; }
	else
		[[ $n = 1 ]] || { WHY+=("$name capture: $n iWARP connections, expected 1"); return; }
	fi
	[[ -z $crc ]] && return
	grep -aq "negotiated rev .*, crc $crc," "$out" || WHY+=("$name capture: CRC is not $crc")
	if [[ $crc = on ]]; then
		grep -aq 'crc ok$' "$out" || WHY+=("$name capture: no FPDU with a good CRC")
		! grep -aq -e 'crc BAD' -e 'no crc$' "$out" || WHY+=("$name capture: FPDUs without a good CRC")
	else
		grep -aq 'no crc$' "$out" || WHY+=("$name capture: no FPDU seen")
		! grep -aq 'crc ok$' "$out" || WHY+=("$name capture: CRC present although off")
	fi
}

both_captures() {  # CRC
	iwdump_check ours "$CD/host.pcap" "$1"
	iwdump_check guest "$OUT/guest.pcap" "$1" "$CASE_PORT"
}

# ping_data FILE PREFIX COUNT: COUNT lines "PREFIXrdma-ping-N: ..." for N =
# 0..COUNT-1, each continuing with rping's pattern (printable ASCII from
# 'A' + N % 58, cycling 'A'..'z') up to the end of the (maybe cut) line.
ping_data() {
	local file=$1 prefix=$2 count=$3 r
	r=$(awk -v pre="$prefix" -v want="$count" '
		BEGIN { for (i = 0; i < 256; i++) ord[sprintf("%c", i)] = i; n = 0; bad = "" }
		index($0, pre "rdma-ping-") == 1 {
			rest = substr($0, length(pre) + 11)
			k = index(rest, ": "); it = substr(rest, 1, k - 1) + 0; data = substr(rest, k + 2)
			if (it != n && bad == "") bad = "iteration " it " where " n " was expected"
			c = 65 + it % 58
			for (j = 1; j <= length(data) && bad == ""; j++) {
				if (ord[substr(data, j, 1)] != c)
					bad = "iteration " it " byte " (j - 1) " is \"" substr(data, j, 1) "\""
				c = c + 1; if (c > 122) c = 65
			}
			if (length(data) < 8 && bad == "") bad = "iteration " it " has almost no data"
			n++
		}
		END {
			if (bad == "" && n != want) bad = n " pings, expected " want
			print bad
		}' "$file")
	[[ -z $r ]] || WHY+=("$(basename "$file"): \"${prefix}\" lines: $r")
}

# 1, 2: rping / iwping; data on both sides, both captures, CRC state.
chk_rping() {  # DIR COUNT CRC
	ping_data "$(client_log)" "ping data: " "$2"
	ping_data "$(server_log)" "server ping data: " "$2"
	grep -aqi 'mismatch' "$CD/host.log" "$CD/guest.log" && WHY+=("data mismatch reported")
	both_captures "$3"
}

# 3: rdma-core's rdma_client / rdma_server against iwhello.
chk_hello() {  # PROGRAM
	grep_need "$CD/host.log" "RESULT PASS" "iwhello did not pass"
	grep_need "$CD/guest.log" "$1: end 0" "$1 did not end with 0"
	both_captures on
}

# 4: READ/WRITE rounds verified by both programs.
chk_rw() {  # ROUNDS CRC
	local n
	grep_need "$CD/host.log" "RESULT PASS rw" "iwrw did not pass"
	grep_need "$CD/guest.log" "RESULT PASS rw" "siwrw did not pass"
	n=$(grep -ac 'verified both ways' "$(client_log)")
	[[ $n = "$1" ]] || WHY+=("$n rounds verified, expected $1")
	both_captures "$2"
}

# RFC 7306 toward siw: refused at post, then the usual test passes, and
# the captures show no RFC 7306 in use (siw's Reply echoes our ASK bit when
# we initiate; no ACK either way).
chk_rfc7306_refused() {
	grep_need "$CD/host.log" "RFC 7306 not negotiated; atomic and write-with-immediate posts refused" \
		"our RFC 7306 posts were not refused"
	chk_rw 1 on
	grep -aq ", rfc7306\$" "$CD/iwdump-ours.txt" "$CD/iwdump-guest.txt" &&
		WHY+=("a capture shows RFC 7306 negotiated")
	grep -aqE "ATOMIC_REQ|IMM " "$CD/iwdump-ours.txt" "$CD/iwdump-guest.txt" &&
		WHY+=("an RFC 7306 message went on the wire")
	return 0
}

# 5: private data both ways, on the wire too.
chk_pdata() {  # BYTES
	grep_need "$(server_log)" "connect private data verified ($1 bytes)" "server: connect private data not verified"
	grep_need "$(client_log)" "accept private data verified ($1 bytes)" "client: accept private data not verified"
	grep_need "$CD/host.log" "RESULT PASS" "iwrw did not pass"
	grep_need "$CD/guest.log" "RESULT PASS" "siwrw did not pass"
	both_captures on
	grep -aqE "Request rev 2 .* pd $1( rfc7306 (ask|ack))?\$" "$CD/iwdump-guest.txt" || WHY+=("guest capture: no Request with $1 bytes")
	grep -aqE "Reply rev 2 .* pd $1( rfc7306 (ask|ack))?\$" "$CD/iwdump-guest.txt" || WHY+=("guest capture: no Reply with $1 bytes")
}

# reject-g2h may take several attempts (siw race, see interop.sh): every
# attempt must be a reject carrying BYTES on the wire, one must deliver them.
chk_reject() {  # BYTES
	local lost
	grep_need "$(server_log)" "rejected the connection with $1 bytes" "server did not reject"
	grep_need "$(client_log)" "reject private data verified ($1 bytes)" "client: reject private data not verified"
	lost=$(grep -ac 'rejected (status .*, 0 bytes of private data)' "$(client_log)")
	[[ $lost = 0 ]] || NOTE+=("siw reported $lost reject(s) without the private data")
	IWD_CONNS=any iwdump_check ours "$CD/host.pcap" ""
	if "$BIN/iwdump" -p "$CASE_PORT" "$OUT/guest.pcap" >"$CD/iwdump-guest.txt" 2>&1; then
		! grep -aqE '^(VIOLATION|WARNING)' "$CD/iwdump-guest.txt" || WHY+=("guest capture: violations")
		local n r
		n=$(grep -acE "^MPA .* Request rev 2 " "$CD/iwdump-guest.txt")
		r=$(grep -acE "^MPA .* Reply rev 2 M=0 C=. R=1 .* pd $1( rfc7306 (ask|ack))?\$" "$CD/iwdump-guest.txt")
		[[ $n -ge 1 && $n = "$r" ]] || WHY+=("guest capture: $n Requests, $r reject Replies with $1 bytes")
	else
		WHY+=("iwdump cannot read the guest capture")
	fi
}

# 6: Terminates. h2g: siw detects our bad access and terminates (its own
# bit layout); g2h: we detect siw's and send an RFC-layout Terminate, which
# siw logs (it reads the nibbles of byte 0 swapped, see below).
chk_term() {  # DIR KIND LAYER ETYPE ECODE
	local dir=$1 kind=$2 l=$3 e=$4 c=$5 want ours
	grep_need "$(client_log)" "RESULT PASS $kind" "client ($kind) did not pass"
	grep_need "$(server_log)" "RESULT PASS victim" "server (victim) did not pass"
	grep_need "$CD/host.log" "every failed completion carried cause ($l,$e,$c)" \
		"our completions did not all carry ($l,$e,$c)"
	grep_need "$CD/host.log" "error cause ($l,$e,$c)" "our QP error is not ($l,$e,$c)"
	both_captures on
	want="TERMINATE layer $l etype $e ecode $c"
	# The victim is the server (B) in both directions.
	ours=$(grep -a "MSG .* $want" "$CD/iwdump-guest.txt" | head -n1)
	if [[ -z $ours ]]; then
		WHY+=("guest capture: no $want")
	elif [[ $dir = h2g ]]; then
		[[ $ours = *"(siw layout)"* && $ours = *"dir B>A"* ]] ||
			WHY+=("guest capture: siw's Terminate not in siw's layout from B: $ours")
	else
		[[ $ours != *"(siw layout)"* && $ours = *"dir B>A"* ]] ||
			WHY+=("guest capture: our Terminate not in the RFC layout from B: $ours")
		# siw reads layer from the low nibble and etype from the high one.
		grep -aqF "got TERMINATE. layer $e, type $l, code $((c))" "$OUT/dmesg.txt" ||
			WHY+=("siw did not log our Terminate as layer $e type $l (its nibble order)")
	fi
	if [[ $kind = badread ]]; then
		grep -aqE "first failed completion: READ" "$(client_log)" || WHY+=("the READ did not fail first")
	fi
}

# 7: disconnect with RDMA in flight; the engine checks exactly-once. siw
# closes with a RST while our data still arrives (its socket is released
# with unread data), so the capture may end inside one of our FPDUs: that
# one violation (2,0,0x01) is tolerated here, nothing else.
chk_flood() {  # DIR WHO
	local n v
	grep_need "$CD/host.log" "RESULT PASS flood" "iwrw did not pass"
	grep_need "$CD/guest.log" "RESULT PASS flood" "siwrw did not pass"
	n=$(grep -aoE '[0-9]+ in flight at the disconnect' "$(client_log)" | cut -d' ' -f1)
	[[ ${n:-0} -gt 0 ]] || WHY+=("nothing was in flight at the disconnect")
	IWD_TOLERATE='truncated FPDU at end of stream' both_captures off
}

# 8: rdma-core programs under iwarp-run against the same on siw.
# perftest's bandwidth tests verify no data; both sides must print their
# result line (size, iterations, then the numbers), and the connections
# (the exchange one, the test one, any of perftest's own refused
# retries) must pass iwdump. A refused retry leaves an MPA Request
# without a Reply at most, which iwdump does not count as a connection.
chk_perftest() {  # SIZE ITERS
	local f
	for f in "$CD/host.log" "$CD/guest.log"; do
		awk -v s="$1" -v n="$2" '$1 == s && $2 == n && $3 ~ /^[0-9.]+$/ { f = 1 } END { exit !f }' "$f" ||
			WHY+=("$(basename "$f"): no result line for $1 bytes x $2")
	done
	grep -aqF 'Unable to connect (retries' "$CD/host.log" "$CD/guest.log" &&
		WHY+=("perftest gave up connecting")
	IWD_CONNS=any both_captures on
}

chk_rdma_hello() {
	grep_need "$(server_log)" "rdma_server: end 0" "rdma_server did not end with 0"
	grep_need "$(client_log)" "rdma_client: end 0" "rdma_client did not end with 0"
	both_captures on
}

# ---- shared by interop.sh and siw-tap.sh ---------------------------------

# Guest-side shell functions: run_case NAME CMD... runs one case (stdout
# cut to 160 columns: the console is slow under TCG; stderr apart, since
# unbuffered it would land inside buffered stdout lines); report NAME puts
# its output on the console as "G|NAME| ..." lines and its exit status.
guest_case_functions() {  # CASE_TIMEOUT
	echo 'run_case() { n=$1; shift; { timeout '"$1"' "$@" 2>/tmp/$n.err; echo $? >/tmp/$n.rc; } | cut -c1-160 >/tmp/$n.log; }'
	echo 'report() { cat /tmp/$1.log /tmp/$1.err | sed "s/^/G|$1| /"; echo "SIW-CASE-RESULT $1 rc=$(cat /tmp/$1.rc 2>/dev/null || echo none)"; }'
}

# The console split per case: $OUT/NAME/guest.log and guest.rc, and the
# guest's siw kernel messages in $OUT/dmesg.txt.
split_console() {  # SERIAL_LOG
	local n
	for n in "${C_NAME[@]}"; do
		grep -a "^G|$n| " "$1" | sed "s/^G|$n| //; s/\r$//" >"$OUT/$n/guest.log"
		grep -ao "SIW-CASE-RESULT $n rc=[a-z0-9]*" "$1" | head -n1 | sed 's/.*rc=//' >"$OUT/$n/guest.rc"
	done
	grep -a "^G|dmesg| " "$1" | sed "s/^G|dmesg| //; s/\r$//" >"$OUT/dmesg.txt"
}

# Verdict per case into $OUT/NAME/verdict and $OUT/matrix.txt; sets PASS
# and FAIL. The runner defines case_port INDEX: the case's TCP port in the
# captures.
evaluate_cases() {  # NAME_COLUMN_WIDTH
	local i n hrc grc v chk
	PASS=0; FAIL=0
	: >"$OUT/matrix.txt"
	for i in "${!C_NAME[@]}"; do
		n=${C_NAME[i]}
		CD="$OUT/$n"; CASE_DIR=${C_DIR[i]}; CASE_PORT=$(case_port "$i")
		WHY=(); NOTE=()
		hrc=$(cat "$CD/host.rc" 2>/dev/null || echo none); grc=$(cat "$CD/guest.rc" 2>/dev/null); grc=${grc:-none}
		[[ $hrc = 0 ]] || WHY+=("host exit $hrc")
		guest_exit "$grc"
		read -ra chk <<<"${C_CHECK[i]}"
		"${chk[@]}"
		if grep -aq 'NOTE: .* never completed' "$CD/guest.log"; then
			NOTE+=("siw side: $(grep -aoE 'NOTE: .*' "$CD/guest.log" | head -n1 | sed 's/^NOTE: //')")
		fi
		if [[ ${#WHY[@]} = 0 ]]; then
			v="PASS"; PASS=$((PASS + 1))
			[[ ${#NOTE[@]} = 0 ]] || v+=" (note: $(IFS=';'; echo "${NOTE[*]}"))"
		else
			v="FAIL: $(IFS=';'; echo "${WHY[*]}")"; FAIL=$((FAIL + 1))
		fi
		printf '%s\n' "$v" >"$CD/verdict"
		printf "%-${1}s %s\n" "$n" "$v" | tee -a "$OUT/matrix.txt"
		[[ ${#WHY[@]} = 0 ]] || show_failure
	done
}
