#!/usr/bin/env bash
# remote-link over a veth pair between two network namespaces: bulk transfers
# beside raw TCP (link encryption on and off), small-message rates with
# batching on and off, and bulk over the pair shaped to 1 Gbit/s. Prints
# "MEASURE ..." lines; exit status non-zero only when something did not run.
# Needs root and iproute2. Usage: netns_bench.sh [DIR]: where link_node is
# (absolute, or from the repository's top; default build/remote-link)
set -u
here=$(cd "$(dirname "$0")" && pwd)
RL=$here/../../remote-link
NODE=$(cd "$here/../.." && cd "${1:-build/remote-link}" && pwd)/link_node
BENCH=$here/build/link_bench
KEY=netns-bench-cluster-key
NSA=mlb-a-$$ NSB=mlb-b-$$ VA=mlbva$$ VB=mlbvb$$
ADDR_A=10.250.1.1 ADDR_B=10.250.1.2 PORT=7710 RAWPORT=7711 PLAINPORT=7712
# shellcheck source=../../remote-link/tests/netns_lib.sh
. "$RL/tests/netns_lib.sh"
bad=0

[ -x "$NODE" ] && [ -x "$BENCH" ] || { echo "build first: make -C remote-link; make -C experiments/linkbench"; exit 2; }

# label MiB [port] [env assignment]: raw TCP, then the link, the same bytes
measure_pair() {
	ina "$BENCH" rawsink "$ADDR_A" "$RAWPORT" 1 >"$TMP/raw.log" 2>&1 &
	local sink=$! raw link
	pids+=("$sink")
	wait_line "$TMP/raw.log" LISTENING 5
	raw=$(inb "$BENCH" rawsend "$ADDR_A" "$RAWPORT" "$2" | awk '/MEASURE raw/ {print $3}')
	wait "$sink" 2>/dev/null
	inb env ${4:-} "$NODE" bulk "$ADDR_A" "${3:-$PORT}" "$KEY" "$2" >"$TMP/bulk.log" 2>&1 || bad=1
	link=$(awk '/MEASURE link/ {print $4}' "$TMP/bulk.log")
	echo "MEASURE $1 bulk $2 MiB, 1 MiB chunks: link ${link:-?} MB/s, raw TCP ${raw:-?} MB/s" \
		"(share $(awk -v a="${link:-0}" -v b="${raw:-0}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'))"
}

make_namespaces && make_veth || { echo "namespaces or veth: failed"; exit 1; }
start_server "$TMP/server.log" || { echo "server did not start"; exit 1; }
measure_pair "veth encrypted" 512
start_server "$TMP/plain.log" "$PLAINPORT" LINK_ENCRYPTION=off || bad=1
measure_pair "veth encryption off" 512 "$PLAINPORT" LINK_ENCRYPTION=off
# what encryption costs over veth, both links in the same run: round trip, up, down
tls=$(inb "$BENCH" tls --host="$ADDR_A" --port="$PORT" --plain-port="$PLAINPORT" --key="$KEY" --mib=256 2>/dev/null) ||
	bad=1
echo "$tls" | sed 's/^MEASURE link /MEASURE veth link /'
for mode in on off; do
	n=200000; [ $mode = off ] && n=50000
	inb "$NODE" rate "$ADDR_A" "$PORT" "$KEY" $n $mode | sed 's/^MEASURE/MEASURE veth/' || bad=1
done
if shape_1gbit; then
	measure_pair "veth shaped 1gbit" 128
else
	echo "tc tbf: not available, the shaped figures are left out"
fi
exit $bad
