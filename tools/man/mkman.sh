#!/bin/sh
# mkman.sh PROGRAM NAME SEE_ALSO OUT: OUT = the man page of NAME, made from
# `PROGRAM --help` by help2man.awk (next to this script). SEE_ALSO: the
# other tools, comma separated. Fails (and leaves no OUT) if --help fails.
set -eu
prog=$1 name=$2 see=$3 out=$4
dir=$(dirname "$0")
"$prog" --help >"$out.help"
awk -v tool="$name" -v section=1 -v source="libiwarp" -v see="$see" -f "$dir/help2man.awk" "$out.help" >"$out.tmp"
rm -f "$out.help"
mv "$out.tmp" "$out"
