# Shared by tests/fabric and tests/mpi: the proof that traffic went
# through libiwarp. IWARP_STATS=FILE makes every process that loaded our
# libibverbs.so.1 append one line of libiwarp's counters at exit
# (abi/ibverbs/stats.c). Sourced, not run.

# stats_check FILE NPROCS [TRANSPORT]: exactly NPROCS processes with
# traffic, each having sent and received FPDUs and placed payload, on
# TRANSPORT (kernel, the default, or raw); prints the lines.
# Processes that loaded the library but made no QP (a launcher) are
# ignored; a process with a QP and no traffic fails the check.
stats_check() {
	local file=$1 want=$2 tp=${3:-kernel}
	if [ ! -s "$file" ]; then
		echo "FAIL: no libiwarp counters in $file (the program did not use libiwarp)"
		return 1
	fi
	sed 's/^/  /' "$file"
	awk -v want="$want" -v tp="$tp" '
		{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		v["qps"] == 0 { next }
		{ n++ }
		v["fpdus_tx"] == 0 || v["fpdus_rx"] == 0 || v["bytes_placed"] == 0 {
			print "FAIL: pid " v["pid"] " made QPs but moved no data through libiwarp"; bad = 1 }
		v["transport"] != tp { print "FAIL: pid " v["pid"] " on transport " v["transport"] ", expected " tp; bad = 1 }
		END {
			if (n != want) { print "FAIL: " n " processes used libiwarp, expected " want; bad = 1 }
			exit bad }' "$file"
}
