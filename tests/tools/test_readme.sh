#!/usr/bin/env bash
# README.md's claims about the tools, checked against the tools:
#  - the "try it" lines at the top run as written (build/bin -> the build,
#    /tmp -> a scratch dir, a free port, the sleep replaced by waiting for
#    the server's announcement) and print what their comments say;
#  - the iwping and iwperf option tables list exactly the options --help has;
#  - the JSON field lists are the fields iwperf prints (bandwidth, latency);
#  - the quoted error message is the one iwperf prints;
#  - "~N lines" sizes of source files are right within 15 %.
# Usage: test_readme.sh README BIN_DIR MAN_DIR SOURCE_DIR
README=${1:?usage: $0 README.md bin_dir man_dir source_dir}
BIN=${2:?}
MAN=${3:?}
SRC=${4:?}
. "$(dirname "$0")/lib.sh"

# ---- the try-it block ------------------------------------------------------
sed -n '/^<!-- try-it/,/^<!-- \/try-it -->/p' "$README" | sed -n '/^```sh/,/^```$/p' | grep -v '^```' >"$TMP/try.txt"
if [ "$(wc -l <"$TMP/try.txt")" -ne 5 ]; then
	bad "try-it block: $(wc -l <"$TMP/try.txt") lines, the README promises 5"; cat "$TMP/try.txt"
fi
PORT=$(pick_port)
i=0
while IFS= read -r line; do
	i=$((i + 1))
	cmd=${line%%#*} # the comment is the claim, checked below
	# /tmp/ first: the build directory itself may be under /tmp.
	cmd=${cmd//\/tmp\//$TMP/}
	cmd=${cmd//build\/bin\//$BIN/}
	cmd=${cmd//build\/man\//$MAN/}
	cmd=${cmd//iwping -s/iwping -s -p $PORT}
	cmd=${cmd//iwping -c 127.0.0.1/iwping -c 127.0.0.1 -p $PORT}
	case "$cmd" in
	*"iwping -s"*"& sleep 1"*)
		# The server, in the background; wait for its announcement rather
		# than trust a second on a loaded machine.
		cmd=${cmd%%&*}
		# shellcheck disable=SC2086
		timeout -k 5 60 $cmd >"$TMP/try.srv" 2>"$TMP/try.srv.err" &
		SERVER_PID=$!
		if wait_announce "$TMP/try.srv.err" &&
			grep -qF "iwping: listening on 0.0.0.0:$PORT" "$TMP/try.srv.err"; then
			ok "try-it $i: the server says where it listens"
		else
			bad "try-it $i: $cmd"; cat "$TMP/try.srv.err"
		fi
		continue
		;;
	man\ -l*)
		page=${cmd#man -l }
		page=${page%% *}
		if [ -s "$page" ] && { ! command -v man >/dev/null || timeout 30 man -l "$page" 2>/dev/null | grep -q OPTIONS; }; then
			ok "try-it $i: $(basename "$page") is there"
		else
			bad "try-it $i: no man page $page"
		fi
		continue
		;;
	esac
	RC=0
	timeout -k 5 60 bash -c "set -o pipefail; $cmd" >"$TMP/try.$i" 2>"$TMP/try.$i.err" || RC=$?
	case "$line" in
	*"3 verified pings"*)
		if [ "$RC" -eq 0 ] && [ "$(grep -c '^ping data: rdma-ping-' "$TMP/try.$i")" -eq 3 ] && [ -s "$TMP/ping.pcap" ]; then
			ok "try-it $i: three verified pings, traced"
		else
			bad "try-it $i: exit $RC"; cat "$TMP/try.$i" "$TMP/try.$i.err"
		fi
		wait_server || bad "try-it: the server exited with an error"
		;;
	*"MPA handshake, FPDUs, messages"*)
		if grep -q '^MPA conn 1 dir A>B frame [0-9]*: Request' "$TMP/try.$i" && grep -q '^FPDU conn 1' "$TMP/try.$i" &&
			grep -q '^MSG conn 1' "$TMP/try.$i"; then
			ok "try-it $i: iwdump shows the handshake, FPDUs and messages"
		else
			bad "try-it $i: exit $RC"; cat "$TMP/try.$i" "$TMP/try.$i.err"
		fi
		;;
	*'ends "TOTAL 1 connections, 0 violations, 0 warnings"'*)
		if [ "$RC" -eq 0 ] && [ "$(tail -1 "$TMP/try.$i")" = "TOTAL 1 connections, 0 violations, 0 warnings" ]; then
			ok "try-it $i: iwdump --check accepts the capture"
		else
			bad "try-it $i: exit $RC"; cat "$TMP/try.$i" "$TMP/try.$i.err"
		fi
		;;
	*)
		bad "try-it $i: a line this test does not know: $line"
		;;
	esac
done <"$TMP/try.txt"
stop_server

# ---- option tables = --help ------------------------------------------------
# Each option line of a help text's OPTIONS section ("-s, --server"), and
# the options in the first column of a README table between two headings.
help_lines() {
	"$1" --help | sed -n '/^OPTIONS/,/^[A-Z]/p' | grep -E '^ {4,8}-' | sed -E 's/^ +//; s/ {2,}.*//'
}
readme_opts() { # FROM-HEADING TO-HEADING
	sed -n "/^$1\$/,/^$2/p" "$README" | grep '^| `' | sed 's/\\|/ /g' | cut -d'|' -f2 |
		grep -oE '(^|[ `])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' `' | sort -u
}
table_check() { # TOOL FROM TO
	local t=$1 line o found missing="" extra=""
	readme_opts "$2" "$3" >"$TMP/r.$t"
	help_lines "$BIN/$t" >"$TMP/h.$t"
	# Every help option is in the table (by its short or long name)...
	while IFS= read -r line; do
		found=0
		for o in $(echo "$line" | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,'); do
			grep -qxF -- "$o" "$TMP/r.$t" && found=1
		done
		[ $found -eq 1 ] || missing="$missing [$line]"
	done <"$TMP/h.$t"
	# ...and every table option is a help option.
	while IFS= read -r o; do
		grep -qE -- "(^|[ ,])$o([] ,=[]|\$)" "$TMP/h.$t" || extra="$extra $o"
	done <"$TMP/r.$t"
	if [ -z "$missing$extra" ]; then
		ok "README's $t table has exactly the options of $t --help ($(wc -l <"$TMP/h.$t") lines)"
	else
		bad "README's $t table vs --help: missing$missing; not in --help:$extra"
	fi
}
table_check iwping '### iwping' '### iwperf'
table_check iwperf '### iwperf' '## Benchmarks'

# ---- JSON fields and the quoted error message ------------------------------
fields_claimed() { # "bandwidth row" | "latency row"
	tr '\n' ' ' <"$README" | grep -oE "JSON fields of a bandwidth row: [^.]*\." | sed 's/([^)]*)//g' |
		sed 's/; of a latency row: /\n/' | sed -n "$1p" | grep -oE '`[a-zA-Z_]+`' | tr -d '`' | sort
}
if start_server "$TMP/perf.log" "$BIN/iwperf" -s -a 127.0.0.1 -p @PORT@; then
	timeout -k 5 60 "$BIN/iwperf" -c 127.0.0.1 -p "$PORT" -S 4K -n 20 --json >"$TMP/bw.json" 2>&1
	timeout -k 5 60 "$BIN/iwperf" -c 127.0.0.1 -p "$PORT" -t lat -n 20 --json >"$TMP/lat.json" 2>&1
	stop_server
	for kind in 1:bw 2:lat; do
		grep -oE '"[a-zA-Z_]+":' "$TMP/${kind#*:}.json" | tr -d '":' | sort >"$TMP/got.${kind#*:}"
		fields_claimed "${kind%%:*}" >"$TMP/claimed.${kind#*:}"
		if [ -s "$TMP/got.${kind#*:}" ] && cmp -s "$TMP/got.${kind#*:}" "$TMP/claimed.${kind#*:}"; then
			ok "README's JSON fields of a ${kind#*:} row are iwperf's"
		else
			bad "JSON fields of a ${kind#*:} row (< iwperf, > README):"
			diff "$TMP/got.${kind#*:}" "$TMP/claimed.${kind#*:}"
		fi
	done
else
	bad "iwperf server start"
fi
quoted=$(grep -oE "\`iwperf: invalid value '5000' for [^\`]*\`" "$README" | tr -d '`')
RC=0
timeout -k 5 10 "$BIN/iwperf" -c 127.0.0.1 -q 5000 >/dev/null 2>"$TMP/q.err" || RC=$?
if [ -n "$quoted" ] && [ "$RC" -eq 2 ] && [ "$(head -1 "$TMP/q.err")" = "$quoted" ]; then
	ok "the quoted -q error is iwperf's"
else
	bad "quoted '$quoted', iwperf says '$(head -1 "$TMP/q.err")' (exit $RC)"
fi

# ---- "~N lines" -------------------------------------------------------------
tr '\n' ' ' <"$README" | grep -oE '`[a-z/_.]+\.c` \([^)]*~[0-9,]+ lines' | while IFS= read -r claim; do
	f=$(echo "$claim" | grep -oE '`[^`]+`' | tr -d '`')
	n=$(echo "$claim" | grep -oE '~[0-9,]+' | tr -d '~,')
	real=$(wc -l <"$SRC/$f")
	if [ "$real" -ge $((n * 85 / 100)) ] && [ "$real" -le $((n * 115 / 100)) ]; then
		echo "ok: $f: ~$n lines claimed, $real"
	else
		echo "FAIL: $f: ~$n lines claimed, $real"
	fi
done >"$TMP/lines"
cat "$TMP/lines"
if [ ! -s "$TMP/lines" ]; then bad "no '~N lines' claim found"; elif grep -q FAIL "$TMP/lines"; then
	bad "a size claim is off"; else ok "size claims"; fi

finish
