#!/usr/bin/env bash
# Two network namespaces joined by a veth pair (10.250.0.1 server side,
# 10.250.0.2 client side): link over a real device, 1 Gbit/s shaping, wrong
# key from a remote address, link encryption (on by default, off on both ends,
# a mismatch), link cut by deleting the veth, server killed and
# restarted. Needs root. Namespaces and processes are removed on any exit.
set -u
# $1: the directory of link_node (absolute, or from the repository's top)
NODE=$(cd "$(dirname "$0")/../.." && cd "${1:-build/remote-link}" && pwd)/link_node
KEY=netns-test-cluster-key
NSA=mlk-a-$$ NSB=mlk-b-$$ VA=mlkva$$ VB=mlkvb$$
ADDR_A=10.250.0.1 ADDR_B=10.250.0.2 PORT=7700 PLAINPORT=7702
passed=0 failed=0
# shellcheck source=netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"

result() { # name ok(0/1) detail
	if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "PASS $1 $3"
	else failed=$((failed + 1)); echo "FAIL $1 $3"; fi
}
now_ms() { date +%s%3N; }
below() { awk -v a="${1:-0}" -v m="$2" 'BEGIN { exit !(a > 0 && a <= m) }'; }

make_namespaces && make_veth
result setup_namespaces_and_veth $? ""

start_server "$TMP/server.log"
result server_listens_in_namespace $? ""

out=$(inb "$NODE" call "$ADDR_A" "$PORT" "$KEY")
echo "$out" | grep -q "RESULT 0 "
result call_over_veth $? "($out)"

grep -q "link from $ADDR_B:[0-9]* .*open over tcp, encrypted: TLSv1.3" "$TMP/server.log"
result call_over_veth_encrypted $? "($(grep -m1 'open over' "$TMP/server.log"))"

out=$(inb "$NODE" call "$ADDR_A" "$PORT" wrong-key 2>&1)
echo "$out" | grep -q "RESULT -4 " && grep -q "link from $ADDR_B:[0-9]* refused: wrong cluster key" "$TMP/server.log"
result wrong_key_refused_and_logged_with_peer $? "($(echo "$out" | tail -1))"

out=$(inb "$NODE" call "$ADDR_A" "$PORT" - 2>&1)
echo "$out" | grep -q "RESULT -4 " && echo "$out" | grep -q "not tried: this node has no cluster key"
result no_key_refused_before_connecting $? "($(echo "$out" | tail -1))"

out=$(LINK_ENCRYPTION=off inb "$NODE" call "$ADDR_A" "$PORT" "$KEY" 2>&1)
echo "$out" | grep -q "RESULT -13 " &&
	grep -q "link from $ADDR_B:[0-9]* refused: link encryption is off on the peer" "$TMP/server.log"
result encryption_mismatch_refused_on_both_ends $? "($(echo "$out" | grep -m1 'refused'))"

# Bulk transfers arrive whole (link_node bulk checks the byte count); what
# they cost against raw TCP is experiments/linkbench/netns_bench.sh's to say.
inb "$NODE" bulk "$ADDR_A" "$PORT" "$KEY" 128 >"$TMP/bulk.log" 2>&1
result bulk_over_veth_encrypted $? "($(grep -m1 -E 'MEASURE|RESULT' "$TMP/bulk.log"))"
# the same with link encryption off on both ends (a server of its own)
main_server=$SERVER_PID
start_server "$TMP/plain.log" "$PLAINPORT" LINK_ENCRYPTION=off &&
	LINK_ENCRYPTION=off inb "$NODE" bulk "$ADDR_A" "$PLAINPORT" "$KEY" 128 >"$TMP/bulk-plain.log" 2>&1 &&
	grep -q "UNENCRYPTED" "$TMP/plain.log"
result bulk_over_veth_encryption_off $? "($(grep -m1 -E 'MEASURE|RESULT' "$TMP/bulk-plain.log"))"
SERVER_PID=$main_server

shape_1gbit
result shape_1gbit $? ""
inb "$NODE" bulk "$ADDR_A" "$PORT" "$KEY" 32 >"$TMP/bulk-shaped.log" 2>&1
result bulk_over_shaped_1gbit $? "($(grep -m1 -E 'MEASURE|RESULT' "$TMP/bulk-shaped.log"))"

# Cut the link mid-transfer by deleting the veth: both ends notice within the bound.
ip netns exec "$NSB" "$NODE" cut "$ADDR_A" "$PORT" "$KEY" >"$TMP/cut.log" 2>&1 &
cut_pid=$!; pids+=("$cut_pid")
wait_line "$TMP/cut.log" STARTED 20; sleep 0.3
closed_before=$(grep -c CLOSED "$TMP/server.log")
t_cut=$(now_ms)
ina ip link del "$VA"
end=$(( $(date +%s) + 15 )); while kill -0 "$cut_pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
kill -0 "$cut_pid" 2>/dev/null && { echo "  client still running 15 s after the cut"; kill -9 "$cut_pid"; }
wait "$cut_pid"; rc=$?
cat "$TMP/cut.log" | sed 's/^/  client: /'
t_err=$(sed -n 's/.*at_ms=\([0-9]*\).*/\1/p' "$TMP/cut.log")
[ $rc = 0 ] && [ -n "$t_err" ] && below $((t_err - t_cut)) 4500
result cut_veth_client_error_within_bound $? "(error $(( ${t_err:-0} - t_cut )) ms after the cut, bound 3000 ms + 1500 ms slack)"
end=$(( $(date +%s) + 6 ))
while [ "$(grep -c CLOSED "$TMP/server.log")" -le "$closed_before" ] && [ "$(date +%s)" -le "$end" ]; do sleep 0.05; done
closed_line=$(grep "CLOSED $ADDR_B" "$TMP/server.log" | tail -n +$((closed_before + 1)) | head -1)
echo "  server: $closed_line"
t_closed=$(echo "$closed_line" | sed -n 's/.*status=-7 .*at_ms=\([0-9]*\).*/\1/p')
[ -n "$t_closed" ] && below $((t_closed - t_cut)) 4500
result cut_veth_server_closed_callback $? "(closed callback $(( ${t_closed:-0} - t_cut )) ms after the cut)"

# Kill the server mid-transfer, restart it, link again.
make_veth
result veth_recreated $? ""
ip netns exec "$NSB" "$NODE" cut "$ADDR_A" "$PORT" "$KEY" >"$TMP/cut2.log" 2>&1 &
cut_pid=$!; pids+=("$cut_pid")
wait_line "$TMP/cut2.log" STARTED 20; sleep 0.3
t_kill=$(now_ms)
kill -9 "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
end=$(( $(date +%s) + 15 )); while kill -0 "$cut_pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
kill -0 "$cut_pid" 2>/dev/null && { echo "  client still running 15 s after the kill"; kill -9 "$cut_pid"; }
wait "$cut_pid"; rc=$?
sed 's/^/  client: /' "$TMP/cut2.log"
t_err=$(sed -n 's/.*at_ms=\([0-9]*\).*/\1/p' "$TMP/cut2.log")
[ $rc = 0 ] && [ -n "$t_err" ] && below $((t_err - t_kill + 1)) 4500
result server_killed_client_error_within_bound $? "(error $(( ${t_err:-0} - t_kill )) ms after the kill)"

start_server "$TMP/server2.log"
out=$(inb "$NODE" call "$ADDR_A" "$PORT" "$KEY")
echo "$out" | grep -q "RESULT 0 "
result restarted_server_accepts_new_link $? "($out)"

kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
