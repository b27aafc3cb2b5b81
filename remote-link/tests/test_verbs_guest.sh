#!/usr/bin/env bash
# The verbs transport for real: a QEMU TCG guest (Debian kernel, busybox
# initramfs) loads Soft-RoCE (rdma_rxe) on a virtio NIC attached to an empty
# QEMU hub (no traffic leaves the guest); a link_node server and client in the
# guest talk over an RC queue pair. Prints "N passed, N failed".
set -u
# $1: the directory of link_node (absolute, or from the repository's top)
NODE=$(cd "$(dirname "$0")/../.." && cd "${1:-build/remote-link}" && pwd)/link_node
[ -x "$NODE" ] || { echo "FAIL guest_setup (no $NODE)"; echo "0 passed, 1 failed"; exit 1; }
. "$(dirname "$0")/guest_lib.sh"
trap 'rm -rf "$GUEST_WORK"' EXIT
passed=0 failed=0

guest_init
guest_copy "$NODE" || guest_fail_setup "copy binaries"
mv "$IR$NODE" "$IR/link_node"

cat >"$GUEST_WORK/init" <<'INIT'
#!/bin/busybox sh
. /guest_lib_init.sh
guest_modules_up
guest_rxe_up
K=guest-cluster-key
# an emulated guest runs the first handshake of a process far slower than 3 s
export LINK_HANDSHAKE_MS=20000
# TLS covers TCP links only: verbs links run with link encryption off on both ends
export LINK_ENCRYPTION=off
/link_node serve 10.250.0.1 7700 $K >/tmp/srv.log 2>&1 &
SRV=$!
sleep 1
export LINK_TRANSPORT=verbs
/link_node call 10.250.0.1 7700 $K; echo "GUEST call_verbs rc=$?"
/link_node call 10.250.0.1 7700 wrong-key; echo "GUEST wrong_key_verbs rc=$?"
/link_node bulk 10.250.0.1 7700 $K 32; echo "GUEST bulk_verbs rc=$?"
/link_node rate 10.250.0.1 7700 $K 20000 on; echo "GUEST rate_on_verbs rc=$?"
/link_node rate 10.250.0.1 7700 $K 5000 off; echo "GUEST rate_off_verbs rc=$?"
LINK_TRANSPORT=tcp /link_node bulk 10.250.0.1 7700 $K 32; echo "GUEST bulk_tcp rc=$?"
# Server killed mid-transfer: the verbs client fails (side channel EOF), no hang.
/link_node cut 10.250.0.1 7700 $K >/tmp/cut.log 2>&1 &
CUT=$!
for i in $(seq 100); do grep -q STARTED /tmp/cut.log && break; sleep 0.2; done
kill -9 $SRV
wait $CUT; echo "GUEST cut_verbs rc=$?"
sed 's/^/GUEST cut: /' /tmp/cut.log
sed 's/^/GUEST server: /' /tmp/srv.log
/link_node serve 10.250.0.1 7700 $K >/tmp/srv2.log 2>&1 &
SRV=$!
sleep 1
/link_node call 10.250.0.1 7700 $K; echo "GUEST restart_call_verbs rc=$?"
kill $SRV; wait $SRV
echo "GUEST done"
poweroff -f
INIT
guest_pack "$GUEST_WORK/init"
guest_run 400 1024 1
guest_lines | sed 's/^/  /'

check() { # name pattern
	if grep -q "$2" "$GUEST_WORK/console.log"; then passed=$((passed + 1)); echo "PASS $1"
	else failed=$((failed + 1)); echo "FAIL $1"; fi
}
check guest_rxe_ready "GUEST rxe ready"
check verbs_call "GUEST call_verbs rc=0"
check verbs_wrong_key_refused "RESULT -4 "
check verbs_bulk "GUEST bulk_verbs rc=0"
check verbs_rate_batching_on "GUEST rate_on_verbs rc=0"
check verbs_rate_batching_off "GUEST rate_off_verbs rc=0"
check verbs_server_saw_link_over_verbs "open over verbs"
check verbs_server_killed_client_fails "GUEST cut_verbs rc=0"
check verbs_restarted_server_accepts "GUEST restart_call_verbs rc=0"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
