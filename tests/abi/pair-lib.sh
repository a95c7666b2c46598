# Shared by the tests/abi scripts: run a server and a client program, both
# bounded in time, and require exit 0 from each. Sourced, not run.
#   PAIR_WAIT: seconds a pair may take (default 30)
pair_port() {
	# A port of our own per script run (ctest may run scripts in parallel),
	# below the kernel's ephemeral range (another test's client may hold
	# any port in it: "rdma_listen: Address already in use") and not in
	# use in any state right now.
	local lo=32768 p i
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	[ "$lo" -gt 12000 ] || lo=32768
	for i in $(seq 1 50); do
		p=$((10000 + ($$ * 7 + ${1:-0} * 13 + RANDOM) % (lo - 10000)))
		ss -Htan 2>/dev/null | awk '{print $4}' | grep -qE "[:.]$p\$" || break
	done
	echo "$p"
}

# wait_listen PORT: until something listens on PORT (bounded: 30 s, a
# loaded machine starts programs slowly).
wait_listen() {
	local port=$1 i
	for i in $(seq 1 300); do
		if ss -ltn 2>/dev/null | awk '{print $4}' | grep -qE "[:.]$port\$"; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# wait_tcp IP PORT: until a TCP connection to IP:PORT succeeds (a server
# on the raw transport has no kernel listener to look for). The probe
# closes before sending an MPA Request: libiwarp drops such connections
# without telling the application.
wait_tcp() {
	local ip=$1 port=$2 i
	for i in $(seq 1 150); do
		if timeout 1 bash -c "exec 3<>/dev/tcp/$ip/$port" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# run_pair NAME PORT "SERVER CMD" "CLIENT CMD": 0 when both exit 0.
# PAIR_PROBE_IP set: wait for the server with wait_tcp on that address.
run_pair() {
	local name=$1 port=$2 scmd=$3 ccmd=$4 t=${PAIR_WAIT:-30}
	local slog clog
	slog=$(mktemp) clog=$(mktemp)
	timeout -k 3 "$t" bash -c "$scmd" >"$slog" 2>&1 &
	local spid=$!
	local ready
	if [ -n "${PAIR_PROBE_IP:-}" ]; then
		wait_tcp "$PAIR_PROBE_IP" "$port"; ready=$?
	else
		wait_listen "$port"; ready=$?
	fi
	if [ $ready -ne 0 ]; then
		echo "FAIL $name: server never listened on $port"; cat "$slog"
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; rm -f "$slog" "$clog"; return 1
	fi
	timeout -k 3 "$t" bash -c "$ccmd" >"$clog" 2>&1
	local crc=$?
	if [ $crc -ne 0 ] && [ -n "${PAIR_RETRY_ON:-}" ] && grep -qE "$PAIR_RETRY_ON" "$clog" &&
		[ "${PAIR_RETRIED:-0}" = 0 ]; then
		# A failure the harness knows is the program's own race, not
		# ours: say so and run the pair once more on another port.
		echo "retry $name: client output matches '$PAIR_RETRY_ON'"
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null # timeout passes it on
		rm -f "$slog" "$clog"
		local np=$((port + 1))
		PAIR_RETRIED=1 run_pair "$name (retry)" $np "${scmd//$port/$np}" "${ccmd//$port/$np}"
		return
	fi
	wait "$spid"
	local src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "FAIL $name: server rc $src, client rc $crc"
		echo "--- server:"; tail -20 "$slog"; echo "--- client:"; tail -20 "$clog"
		rm -f "$slog" "$clog"
		return 1
	fi
	echo "ok $name"
	rm -f "$slog" "$clog"
	return 0
}
