# Two network namespaces joined by a veth pair, for test_netns.sh and
# experiments/linkbench/netns_bench.sh (sourced, bash). The caller sets
# NODE (link_node), KEY, NSA NSB VA VB, ADDR_A ADDR_B, PORT; this sets TMP
# and pids, and removes namespaces, processes and TMP on exit.
TMP=$(mktemp -d)
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ina() { ip netns exec "$NSA" "$@"; }
inb() { ip netns exec "$NSB" "$@"; }

make_namespaces() {
	ip netns add "$NSA" && ip netns add "$NSB" && ina ip link set lo up && inb ip link set lo up
}

make_veth() {
	ip link add "$VA" type veth peer name "$VB" || return 1
	ip link set "$VA" netns "$NSA" && ip link set "$VB" netns "$NSB" || return 1
	ina ip addr add "$ADDR_A/24" dev "$VA" && ina ip link set "$VA" up || return 1
	inb ip addr add "$ADDR_B/24" dev "$VB" && inb ip link set "$VB" up || return 1
}

shape_1gbit() {
	inb tc qdisc add dev "$VB" root tbf rate 1gbit burst 256kb latency 20ms &&
		ina tc qdisc add dev "$VA" root tbf rate 1gbit burst 256kb latency 20ms
}

wait_line() { # file pattern timeout_s
	local end=$(( $(date +%s) + $3 ))
	while [ "$(date +%s)" -le "$end" ]; do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}

# a link_node server in NSA on port $2 (default $PORT), env $3 (e.g.
# LINK_ENCRYPTION=off); sets SERVER_PID
start_server() { # log file [port] [env assignment]
	ip netns exec "$NSA" env ${3:-} "$NODE" serve "$ADDR_A" "${2:-$PORT}" "$KEY" >"$1" 2>&1 &
	SERVER_PID=$!
	pids+=("$SERVER_PID")
	wait_line "$1" LISTENING 5
}
