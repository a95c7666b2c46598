#!/usr/bin/env bash
# The man pages install with the tools and match their --help: install the
# build into a scratch prefix; for each tool the installed page must equal
# the page made from the installed tool's --help (tools/man), every option
# of --help must be in the rendered page, and groff must render it without
# warnings. Usage: test_man.sh CMAKE BUILD_DIR MAN_DIR TOOL...
CMAKE=${1:?usage: $0 cmake build_dir tools/man tool...}
BUILD=${2:?}
MANSRC=${3:?}
shift 3
. "$(dirname "$0")/lib.sh"

if ! timeout -k 5 120 "$CMAKE" --install "$BUILD" --prefix "$TMP/inst" >"$TMP/install.log" 2>&1; then
	bad "cmake --install"; cat "$TMP/install.log"; finish
fi
for t in "$@"; do
	page=$(find "$TMP/inst" -path "*/man1/$t.1" | head -1)
	bin=$(find "$TMP/inst" -path "*/bin/$t" | head -1)
	if [ -z "$page" ] || [ -z "$bin" ]; then
		bad "$t: installed page '${page}' and tool '${bin}'"; continue
	fi
	see=$(printf '%s\n' "$@" | grep -vx "$t" | paste -sd, -)
	if ! sh "$MANSRC/mkman.sh" "$bin" "$t" "$see" "$TMP/$t.1"; then
		bad "$t: mkman.sh failed"; continue
	fi
	if cmp -s "$page" "$TMP/$t.1"; then ok "$t: installed man page = its --help"; else
		bad "$t: installed page differs from its --help"; diff "$page" "$TMP/$t.1" | head; fi
	# Every option spelled in --help's OPTIONS is in the rendered page.
	MANWIDTH=200 timeout 30 man -l "$page" 2>/dev/null | sed 's/\x08.//g' >"$TMP/$t.txt"
	missing=""
	for o in $("$bin" --help | sed -n '/^OPTIONS/,/^[A-Z]/p' | grep -oE '(^| )--?[a-zA-Z][a-zA-Z-]*' | sort -u); do
		grep -qF -- "$o" "$TMP/$t.txt" || missing="$missing $o"
	done
	if [ -z "$missing" ] && [ -s "$TMP/$t.txt" ]; then ok "$t: every option in the rendered page"; else
		bad "$t: rendered page lacks:${missing:- everything}"; fi
	if command -v groff >/dev/null; then
		if [ -z "$(groff -man -Tutf8 -ww -z "$page" 2>&1)" ]; then ok "$t: groff renders it without warnings"; else
			bad "$t: groff warnings"; groff -man -Tutf8 -ww -z "$page"; fi
	fi
done
finish
