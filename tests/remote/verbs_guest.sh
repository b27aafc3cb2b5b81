#!/usr/bin/env bash
# Remote vGPUs over RDMA verbs (mearasd --link-transport=verbs) for real: in
# a QEMU TCG guest with Soft-RoCE (rdma_rxe on a virtio NIC, the guest of
# remote-link/tests/guest_lib.sh), two mearasd --device=sim (one serving its
# vGPU over links, one forwarding vGPU 1 to it) and tests/remote's program
# through mearas's libcudart:
#   - verbs asked for before any RDMA device exists: a clear startup error
#   - the program's checks through a verbs link (the serving node saw verbs)
#   - bench over verbs, then over TCP between the same two nodes, same address
#   - auto: verbs where the peer takes it; TCP, saying why, where it does not
#   - the serving mearasd SIGKILLed while the program copies: the program
#     gets a CUDA error (no hang), the forwarding node lives and serves again
# RESULTS=FILE writes the bench figures as JSON records (experiments/results/
# remote-verbs.json's format). Prints "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build/bin/mearasd
prog=$top/build/tests-remote/remote_vgpu
lib=$top/build/lib
for f in "$bin" "$prog" "$lib/libcudart.so.13" "$lib/libcuda.so.1"; do
	[ -e "$f" ] || { echo "FAIL guest_setup (no $f: make -C tests/remote all)"; echo "0 passed, 1 failed"; exit 1; }
done
. "$top/remote-link/tests/guest_lib.sh"
trap 'rm -rf "$GUEST_WORK"' EXIT
passed=0 failed=0

guest_init
LD_LIBRARY_PATH=$lib guest_copy "$bin" "$prog" || guest_fail_setup "copy binaries"
mkdir -p "$IR/mearas" && cp -L "$lib/libcudart.so.13" "$lib/libcuda.so.1" "$IR/mearas/" || guest_fail_setup "copy libraries"
cp "$IR$bin" "$IR/mearas/mearasd" && cp "$IR$prog" "$IR/mearas/remote_vgpu" || guest_fail_setup "copy binaries"

# the program's checks run through the verbs link, and the link's dead bound:
# TCG runs some 20-50 times slower than the host
printf 'CHECKS=%s\nDEAD_MS=%s\n' "${GUEST_CHECKS:-all}" "${DEAD_MS:-20000}" >"$IR/guest_env"

cat >"$GUEST_WORK/init" <<'INIT'
#!/bin/busybox sh
. /guest_lib_init.sh
. /guest_env
guest_modules_up
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
export LD_LIBRARY_PATH=/mearas
B=/mearas/mearasd
P=/mearas/remote_vgpu
echo guest-cluster-key >/tmp/key
# both nodes: clear text (verbs links are not encrypted); the first handshake
# of a process under TCG takes seconds
COMMON="--device=sim --cluster-key-file=/tmp/key --link-encryption=off --link-handshake-ms=20000 --link-dead-ms=$DEAD_MS --data-mb=256"
now() { cut -d' ' -f1 /proc/uptime; }
# node NAME ARGS...: starts a mearasd, waits for its socket; NODE is its pid
node() {
	local name=$1; shift
	$B $COMMON --socket=/tmp/$name.sock --control=/tmp/$name.ctl "$@" >/tmp/$name.log 2>&1 &
	NODE=$!
	for i in $(seq 300); do grep -q "socket /tmp" /tmp/$name.log && return 0; sleep 0.1; done
	echo "GUEST node $name did not start"; sed "s/^/GUEST $name: /" /tmp/$name.log
}
# prog NAME SOCKET MODE: runs the program, says its exit and time
prog() {
	local t0=$(now)
	MEARAS_SOCKET=$2 timeout 240 $P $3 >/tmp/$1.out 2>&1
	echo "GUEST $1 rc=$? secs=$(awk "BEGIN{print $(now)-$t0}")"
	grep -E "^FAIL|failed checks|^BENCH|^ERROR|^LATER|error" /tmp/$1.out | head -20 | sed "s/^/GUEST $1: /"
}

# no RDMA device yet: verbs is refused at startup, with the reason
$B $COMMON --socket=/tmp/nodev.sock --control=/tmp/nodev.ctl --link-port=7709 --link-transport=verbs >/tmp/nodev.log 2>&1
echo "GUEST nodev rc=$?"
sed 's/^/GUEST nodev: /' /tmp/nodev.log
guest_rxe_up

node srv --link-port=7710 --link-transport=verbs
SRV=$NODE
node cv --vgpus=2 --remote=1=10.250.0.1:7710 --link-transport=verbs
CV=$NODE
prog functional_verbs /tmp/cv.sock $CHECKS
prog bench_verbs /tmp/cv.sock bench
node ct --vgpus=2 --remote=1=10.250.0.1:7710 --link-transport=tcp
prog bench_tcp /tmp/ct.sock bench
kill $NODE
# auto: the serving node takes verbs; a node whose RDMA device is not there
# (--verbs-device=nosuch, on TCP itself) refuses verbs, and auto falls back
node ca --vgpus=2 --remote=1=10.250.0.1:7710 --remote=0=10.250.0.1:7711 --link-transport=auto
CA=$NODE
node nov --link-port=7711 --verbs-device=nosuch
prog auto /tmp/ca.sock d2h-h2d
kill $CA
sed -n 's/^.*\(link to 10.250.0.1:771[01]\)/GUEST ca: \1/p' /tmp/ca.log
# the serving node killed while the program copies over verbs
MEARAS_SOCKET=/tmp/cv.sock timeout 120 $P copyloop >/tmp/cut.out 2>&1 &
CUT=$!
for i in $(seq 600); do grep -q RUNNING /tmp/cut.out && break; sleep 0.1; done
grep -q RUNNING /tmp/cut.out && echo "GUEST cut copying"
kill -9 $SRV
t0=$(now)
wait $CUT
echo "GUEST cut rc=$? secs=$(awk "BEGIN{print $(now)-$t0}")"
sed 's/^/GUEST cut: /' /tmp/cut.out
kill -0 $CV && echo "GUEST client node alive"
node srv2 --link-port=7710 --link-transport=verbs
prog after_restart /tmp/cv.sock d2h-h2d
for n in srv cv ct ca nov srv2; do grep -E "open over|refused|error|broken|lost|closed" /tmp/$n.log | sed "s/^/GUEST log $n: /"; done
echo "GUEST done"
poweroff -f
INIT
guest_pack "$GUEST_WORK/init"
t0=$(date +%s)
guest_run 480 2048 2
echo "  guest ran $(($(date +%s) - t0)) s"
guest_lines | sed 's/^/  /'

check() { # name pattern [pattern...]: every pattern in the guest's lines
	local name=$1 p; shift
	for p in "$@"; do
		if ! guest_lines | grep -q -- "$p"; then failed=$((failed + 1)); echo "FAIL $name (no '$p')"; return; fi
	done
	passed=$((passed + 1)); echo "PASS $name"
}
check verbs_refused_without_rdma_device "GUEST nodev rc=1" "GUEST nodev: mearasd: --link-transport=verbs: no RDMA device"
check guest_rxe_ready "GUEST rxe ready"
check remote_vgpu_over_verbs "GUEST functional_verbs rc=0 " "GUEST log srv: .*open over verbs"
check bench_over_verbs "GUEST bench_verbs rc=0 " "GUEST bench_verbs: BENCH remote sync-4B-d2h-latency-us"
check bench_over_tcp_same_server "GUEST bench_tcp rc=0 " "GUEST log ct: .*open over tcp"
check auto_picks_verbs "GUEST ca: link to 10.250.0.1:7710 open over verbs"
check auto_falls_back_to_tcp "GUEST auto rc=0 " \
	"GUEST ca: link to 10.250.0.1:7711: transport auto: verbs failed (transport unavailable (no RDMA device): the peer has no RDMA device), falling back to TCP" \
	"GUEST ca: link to 10.250.0.1:7711 open over tcp"
check server_killed_mid_copy_cuda_error "GUEST cut copying" "GUEST cut rc=3 " "GUEST cut: ERROR after" "GUEST cut: LATER .*unavailable"
# the side channel's EOF tells at once: well within the links' dead bound
cut_s=$(guest_lines | sed -n 's/^GUEST cut rc=[0-9]* secs=\([0-9.]*\).*/\1/p')
if [ -n "$cut_s" ] && awk "BEGIN{exit !($cut_s < 10)}"; then
	passed=$((passed + 1)); echo "PASS server_killed_error_within_10s (${cut_s} s after the kill)"
else
	failed=$((failed + 1)); echo "FAIL server_killed_error_within_10s (${cut_s:-no} s)"
fi
check client_node_survives_and_serves_again "GUEST client node alive" "GUEST after_restart rc=0 "

if [ -n "${RESULTS:-}" ]; then
	guest_lines | python3 "$top/tests/remote/verbs_results.py" >"$RESULTS" && echo "  results: $RESULTS"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
