#!/usr/bin/env bash
# Remote vGPUs end to end with --device=sim on both nodes: a CUDA program sees
# vGPU 0 (local) and vGPU 1 (on the other node's mearasd). First over
# loopback (with link encryption on, as by default; off on both ends; and a
# mismatch refused), then between two network namespaces joined by a veth pair shaped
# to 1 Gbit/s (root needed), then over RDMA verbs in a QEMU TCG guest with
# Soft-RoCE (verbs_guest.sh; GUEST=0 leaves it out). Every daemon is stopped by PID, namespaces are
# deleted, even on failure. Last line: "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bin=$top/build/bin/mearasd
prog=$top/build/tests-remote/remote_vgpu
stress_prog=$top/build/tests-remote/stress_mix
work=$(mktemp -d /tmp/mearas-remote.XXXXXX)
tag=$$
nsa=mra$tag
nsb=mrb$tag
# below the kernel's ephemeral range (32768-60999 by default): a port picked
# there may be taken meanwhile as the local end of some outgoing connection
# (the suite's own links, or anything else on the machine), and a node's
# listen then fails ("cannot listen on *:PORT")
port=$((20000 + tag % 12000))
pass=0
fail=0
pids=()
results=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.3
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); results+=("PASS $1"); echo "PASS $1"; }
bad() { fail=$((fail + 1)); results+=("FAIL $1: $2"); echo "FAIL $1: $2"; }

# start_node NAME NETNS(or -) ARGS... ; sets NODE_PID
start_node() {
	local name=$1 ns=$2
	shift 2
	if [ "$ns" = - ]; then
		"$bin" --device=sim "$@" >"$work/$name.log" 2>&1 &
	else
		ip netns exec "$ns" "$bin" --device=sim "$@" >"$work/$name.log" 2>&1 &
	fi
	NODE_PID=$!
	pids+=("$NODE_PID")
	for _ in $(seq 50); do
		grep -q "socket" "$work/$name.log" 2>/dev/null && break
		sleep 0.1
	done
}

# start_pair NAME PORT ARGS...: a serving node NAME-remote on PORT and a
# forwarding node NAME-client whose vGPU 1 is there, both with the cluster
# key and ARGS; sets REMOTE_PID and CLIENT_PID
start_pair() {
	local name=$1 p=$2
	shift 2
	start_node "$name-remote" - --socket="$work/$name-remote.sock" --link-port="$p" \
		--cluster-key-file="$work/key" "$@"
	REMOTE_PID=$NODE_PID
	start_node "$name-client" - --socket="$work/$name-client.sock" --vgpus=2 --remote=1=127.0.0.1:"$p" \
		--cluster-key-file="$work/key" "$@"
	CLIENT_PID=$NODE_PID
}

stop_node() {
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 30); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
}

# children of a daemon: its worker processes
workers_of() { pgrep -P "$1" 2>/dev/null | tr '\n' ' '; }

# wait_no_workers PID SECONDS: true when the daemon has no worker left
wait_no_workers() {
	local t=0
	while [ -n "$(workers_of "$1")" ]; do
		[ "$t" -ge $(($2 * 10)) ] && return 1
		sleep 0.1
		t=$((t + 1))
	done
	return 0
}

# wait_gone "PIDS" SECONDS: true when none of these processes is left
wait_gone() {
	local t=0 p alive
	while :; do
		alive=
		for p in $1; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ -z "$alive" ] && return 0
		[ "$t" -ge $(($2 * 10)) ] && return 1
		sleep 0.1
		t=$((t + 1))
	done
}

run_prog() { # SOCKET MODE LOGNAME
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$1 timeout 300 "$prog" "$2" >"$work/$3.out" 2>&1
}

functional() { # NAME SOCKET
	if run_prog "$2" all "$1"; then
		ok "$1 ($(grep -c '^PASS' "$work/$1.out") checks)"
	else
		bad "$1" "$(grep -m3 -E '^FAIL|error' "$work/$1.out" | tr '\n' ' ')"
	fi
}

# stress NAME SOCKET: tests/cuda's stress mix (8 threads, streams, events,
# host functions, callbacks, registered and mapped memory; its sim mode) on
# the remote vGPU (1) alone, its output equal to that of a run on the local
# vGPU (0) of the same node
stress() {
	local name=$1 rc
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$2 MEARAS_VISIBLE_VGPUS=0 timeout 120 "$stress_prog" \
		>"$work/$name-local.out" 2>&1
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$2 MEARAS_VISIBLE_VGPUS=1 timeout 300 "$stress_prog" \
		>"$work/$name.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || [ "$(tail -n 1 "$work/$name.out")" != PASS ]; then
		bad "$name" "remote vGPU: rc $rc: $(grep -m3 -E '^FAIL|error' "$work/$name.out" | tr '\n' ' ')"
	elif [ "$(tail -n 1 "$work/$name-local.out")" != PASS ]; then
		bad "$name" "local vGPU: $(grep -m3 -E '^FAIL|error' "$work/$name-local.out" | tr '\n' ' ')"
	elif ! cmp -s "$work/$name.out" "$work/$name-local.out"; then
		bad "$name" "output differs from the local vGPU's: $(diff "$work/$name-local.out" "$work/$name.out" | head -4 | tr '\n' ' ')"
	else
		ok "$name ($(grep -c '^thread' "$work/$name.out") threads, output equal to the local vGPU's)"
	fi
}

bench() { # NAME SOCKET
	if run_prog "$2" bench "$1"; then
		sed -n 's/^BENCH /  measured '"$1"': /p' "$work/$1.out"
		ok "$1"
	else
		bad "$1" "$(tail -2 "$work/$1.out" | tr '\n' ' ')"
	fi
}

# cut_test NAME SOCKET CLIENT_PID REMOTE_PID HOW (a command that breaks the link)
cut_test() {
	local name=$1 sock=$2 cpid=$3 rpid=$4 how=$5 start end ms rc cw rw
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock timeout 60 "$prog" copyloop >"$work/$name.out" 2>&1 &
	local p=$!
	for _ in $(seq 100); do
		grep -q RUNNING "$work/$name.out" && break
		sleep 0.1
	done
	if ! grep -q RUNNING "$work/$name.out"; then
		kill -KILL "$p" 2>/dev/null
		bad "$name" "copy loop did not start: $(tail -2 "$work/$name.out" | tr '\n' ' ')"
		return
	fi
	sleep 0.3
	cw=$(workers_of "$cpid")
	rw=$(workers_of "$rpid")
	start=$(date +%s%N)
	eval "$how"
	wait "$p"
	rc=$?
	end=$(date +%s%N)
	ms=$(((end - start) / 1000000))
	echo "  measured $name: program got its error ${ms} ms after the cut"
	if [ "$rc" -ne 3 ] || ! grep -q "^ERROR" "$work/$name.out"; then
		bad "$name" "exit $rc, expected an error: $(tail -3 "$work/$name.out" | tr '\n' ' ')"
	elif [ "$ms" -gt 5000 ]; then
		bad "$name" "error came after ${ms} ms (> 5 s)"
	elif ! grep -q "^LATER .*unavailable" "$work/$name.out"; then
		bad "$name" "a later call did not fail at once: $(grep LATER "$work/$name.out")"
	elif [ -z "$cw" ] || [ -z "$rw" ]; then
		bad "$name" "no worker processes seen during the copy (client: '$cw', remote: '$rw')"
	elif ! wait_gone "$cw" 3; then
		bad "$name" "forwarding node workers left: $cw"
	elif ! wait_gone "$rw" 8; then
		bad "$name" "remote node workers left: $rw"
	else
		ok "$name ($(grep '^ERROR' "$work/$name.out"))"
	fi
}

[ -x "$bin" ] || { echo "build mearasd first (make)"; exit 1; }
echo "cluster-secret-$tag" >"$work/key"
echo "another-secret" >"$work/wrongkey"

if "$top/build/tests-remote/capture_tracker_test" >"$work/tracker.out" 2>&1; then
	ok capture-tracker
else
	bad capture-tracker "$(grep -m3 FAIL "$work/tracker.out" | tr '\n' ' ')"
fi

if "$top/build/tests-remote/spin_test" >"$work/spin.out" 2>&1; then
	ok spin-decision-no-syscalls
else
	bad spin-decision-no-syscalls "$(grep -m1 FAIL "$work/spin.out")"
fi

# ---------------- loopback ----------------
start_node lo-remote - --socket="$work/lo-remote.sock" --link-port=$port --cluster-key-file="$work/key"
lo_remote=$NODE_PID
start_node lo-client - --socket="$work/lo-client.sock" --vgpus=2 --remote=1=127.0.0.1:$port \
	--cluster-key-file="$work/key"
lo_client=$NODE_PID
functional loopback-functional "$work/lo-client.sock"
stress loopback-stress-mix "$work/lo-client.sock"
# NVML on the remote vGPU (1): the PCIe figures come in the serving node's
# devinfo, and the P2P status is answered (tests/nvml's cases)
if MEARAS_SOCKET="$work/lo-client.sock" timeout 60 "$top/tests/nvml/build/nvml_query" pcie_link_figures \
	p2p_status_not_supported >"$work/nvml.out" 2>&1; then
	ok loopback-nvml-remote
else
	bad loopback-nvml-remote "$(grep -m3 FAIL "$work/nvml.out" | tr '\n' ' ')"
fi
if wait_no_workers "$lo_remote" 5; then ok loopback-remote-worker-freed; else bad loopback-remote-worker-freed "$(workers_of "$lo_remote")"; fi
# clients that ended normally ended their links with a goodbye: the serving
# node freed each session as an orderly close, none as a broken link
if [ "$(grep -c 'closed (orderly): freeing its vGPU' "$work/lo-remote.log")" -ge 3 ] &&
	! grep -q 'closed: link broken' "$work/lo-remote.log"; then
	ok "loopback-client-exit-closes-link ($(grep -c 'closed (orderly)' "$work/lo-remote.log") orderly closes)"
else
	bad loopback-client-exit-closes-link "$(grep -E 'closed' "$work/lo-remote.log" | tail -3 | tr '\n' ' ')"
fi
reap_before=$(grep -c 'REAP calls, ' "$work/lo-client.log")
bench loopback-bench "$work/lo-client.sock"
# the bench's 500 synchronous copies on the remote vGPU: each reply frees a
# REAP call, which the next record's batch takes again in its own frame (no
# frame, nor a wakeup of the reaper thread, of its own). On a loaded machine a
# copy's completions can come back in two replies, and then the reaper sends
# the freed calls itself (a CI node had 359 of 655 ride with a batch): at least
# half of the copies' calls must ride; without the mechanism none do
reap_line() { # LOG N: the forwarder's line of REAP calls after the first N (its worker's end)
	for _ in $(seq 50); do
		[ "$(grep -c 'REAP calls, ' "$1")" -gt "$2" ] && break
		sleep 0.1
	done
	grep 'REAP calls, ' "$1" | sed -n "$(($2 + 1))p"
}
line=$(reap_line "$work/lo-client.log" "$reap_before")
with=$(echo "$line" | sed -n 's/.* \([0-9]*\) of them with a batch of records.*/\1/p')
if [ -n "$with" ] && [ "$with" -ge 250 ]; then
	ok "reap-calls-ride-batches (${line##*: })"
else
	bad reap-calls-ride-batches "fewer than 250 REAP calls went with a batch over 500 synchronous copies: ${line:-no line}"
fi

# on_remote_device0 NAME NODE SECS CHECK PROG [ARGS...]: the program PROG of
# build/tests-remote with its device 0 on the other node, through a node NODE of
# its own (stopped after): NAME passes when PROG ends with PASS within SECS
# and CHECK (eval'd) holds; NAME-worker-freed when the remote worker is gone then
on_remote_device0() {
	local name=$1 node=$2 secs=$3 check=$4 prog=$5 pid
	shift 5
	start_node "$node" - --socket="$work/$node.sock" --vgpus=2 --remote=0=127.0.0.1:$port \
		--cluster-key-file="$work/key"
	pid=$NODE_PID
	if LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET="$work/$node.sock" timeout "$secs" \
		"$top/build/tests-remote/$prog" "$@" >"$work/$node.out" 2>&1 &&
		[[ "$(tail -n 1 "$work/$node.out")" =~ ^PASS( [a-z_]+)?$ ]] && eval "$check"; then
		ok "$name"
	else
		bad "$name" "$(grep -m3 FAIL "$work/$node.out" | tr '\n' ' ')"
	fi
	stop_node "$pid"
	if wait_no_workers "$lo_remote" 5; then ok "$name-worker-freed"; else bad "$name-worker-freed" "$(workers_of "$lo_remote")"; fi
}

# virtual memory management on a remote vGPU: tests/sim's drv_vmm with its
# device 0 on the other node (reservations, mappings, aliasing, the quota,
# a reset), then the remote worker is gone
on_remote_device0 loopback-vmm-remote lo-vmm 120 true drv_vmm

# tensor maps on a remote vGPU: tests/sim's drv_tensormap (encode and
# replace, 200 rounds, and a refusal) with its device 0 on the other node:
# the record goes over the link, the serving node checks it against its own
# memory and the 128 bytes come back through the data area
on_remote_device0 loopback-tensormap-remote lo-tmap 60 \
	"grep -q 'tiled tensor map of 0x[0-9a-f]* bytes at 0x[0-9a-f]* refused: not inside device memory' '$work/lo-remote.log'" \
	drv_tensormap remote

# CUDA arrays, texture and surface objects on a remote vGPU: tests/sim's
# mem_arrays with its device 0 on the other node (array copies through
# pageable, pinned and device memory both ways, queries, objects described,
# refusals by the serving node)
on_remote_device0 loopback-arrays-remote lo-arrays 120 \
	"grep -q 'surface object refused: its array was not made for surface loads' '$work/lo-remote.log'" mem_arrays

# stream memory operations on a remote vGPU: tests/sim's drv_memops with
# its device 0 on the other node: on device memory in order, on host
# memory refused (the node holds a copy of it)
on_remote_device0 loopback-memops-remote lo-memops 60 true drv_memops remote

start_node lo-wrong - --socket="$work/lo-wrong.sock" --vgpus=2 --remote=1=127.0.0.1:$port \
	--cluster-key-file="$work/wrongkey"
lo_wrong=$NODE_PID
t0=$(date +%s%N)
run_prog "$work/lo-wrong.sock" all wrong-key
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -ne 0 ] && grep -q "cluster key refused" "$work/wrong-key.out" && [ "$ms" -lt 5000 ] &&
	grep -q "refused" "$work/lo-remote.log"; then
	ok "wrong-cluster-key-refused (${ms} ms: $(grep -o 'link to.*' "$work/wrong-key.out" | head -1))"
else
	bad wrong-cluster-key-refused "rc $rc after $ms ms: $(head -2 "$work/wrong-key.out" | tr '\n' ' ')"
fi
stop_node "$lo_wrong"

# link encryption: on by default; a node with it off is refused with the reason
# on both ends; off on both ends works and both ends say so
if grep -q "open over tcp, encrypted: TLSv1.3" "$work/lo-remote.log"; then
	ok "link-encrypted-by-default ($(grep -m1 -o 'encrypted: .*' "$work/lo-remote.log"))"
else
	bad link-encrypted-by-default "$(grep -m1 'open over' "$work/lo-remote.log")"
fi
start_node lo-mismatch - --socket="$work/lo-mismatch.sock" --vgpus=2 --remote=1=127.0.0.1:$port \
	--cluster-key-file="$work/key" --link-encryption=off
run_prog "$work/lo-mismatch.sock" all encryption-mismatch
rc=$?
if [ "$rc" -ne 0 ] && grep -q "link encryption differs" "$work/encryption-mismatch.out" &&
	grep -q "refused: link encryption is off on the peer" "$work/lo-remote.log"; then
	ok "link-encryption-mismatch-refused ($(grep -m1 -o 'refused: link encryption is off on the peer, [^)]*)' "$work/lo-remote.log"))"
else
	bad link-encryption-mismatch-refused "rc $rc: $(head -2 "$work/encryption-mismatch.out" | tr '\n' ' ')"
fi
stop_node "$NODE_PID"
pport=$((port + 1))
start_pair lo-plain $pport --link-encryption=off
lo_plain_remote=$REMOTE_PID lo_plain_client=$CLIENT_PID
functional loopback-encryption-off-functional "$work/lo-plain-client.sock"
if grep -q "LINK ENCRYPTION IS OFF" "$work/lo-plain-remote.log" && grep -q "UNENCRYPTED" "$work/lo-plain-remote.log" &&
	grep -q -- "--link-encryption=off" "$work/lo-plain-client.log"; then
	ok loopback-encryption-off-logged
else
	bad loopback-encryption-off-logged "$(grep -m2 -i 'encrypt' "$work"/lo-plain-*.log | tr '\n' ' ')"
fi
bench loopback-bench-encryption-off "$work/lo-plain-client.sock"
stop_node "$lo_plain_client"
stop_node "$lo_plain_remote"

# spinning remote threads (--remote-spin=on on both nodes; the default on
# nodes of 4 cores or more, which this suite's machine may not have): the
# forwarder, the link threads, the serving worker's poller and the session
# thread spin through a round trip; byte-exact both ways, and both nodes say so
qport=$((port + 3))
start_pair lo-spin $qport --remote-spin=on
lo_spin_remote=$REMOTE_PID lo_spin_client=$CLIENT_PID
functional loopback-spinning-functional "$work/lo-spin-client.sock"
stress loopback-spinning-stress-mix "$work/lo-spin-client.sock"
# large copies both ways at once beside small synchronous calls: the receive
# threads send too while they spin, and neither node may wait on the other
if run_prog "$work/lo-spin-client.sock" bidir loopback-spinning-both-ways; then
	ok "loopback-spinning-both-ways ($(grep -c '^PASS' "$work/loopback-spinning-both-ways.out") checks)"
else
	bad loopback-spinning-both-ways "$(grep -m3 -E '^FAIL|ERROR|error' "$work/loopback-spinning-both-ways.out" | tr '\n' ' ')"
fi
if grep -q "its threads spin through a round trip" "$work/lo-spin-client.log" &&
	grep -q "its threads spin through a round trip" "$work/lo-spin-remote.log"; then
	ok loopback-spinning-said
else
	bad loopback-spinning-said "$(grep -h -m2 -o 'its threads [a-z ]*' "$work"/lo-spin-*.log | tr '\n' ' ')"
fi
# ... and there the thread that reads a reply sends the next call, and the one
# that reads a call sends its reply (the link's receive threads serve the
# rings while they spin): both nodes count what their receive thread sent
rx_served() { # LOG PATTERN: some line's count before PATTERN is not 0
	grep -oE "[0-9]+ $2" "$1" | grep -qv '^0 '
}
for _ in $(seq 50); do
	rx_served "$work/lo-spin-remote.log" "replies sent by the link's receive thread" &&
		rx_served "$work/lo-spin-client.log" "batches of records sent by the link's receive thread" && break
	sleep 0.1
done
if rx_served "$work/lo-spin-remote.log" "replies sent by the link's receive thread" &&
	rx_served "$work/lo-spin-client.log" "batches of records sent by the link's receive thread"; then
	ok loopback-spinning-receive-threads-serve
else
	bad loopback-spinning-receive-threads-serve "$(grep -h -o '[0-9]* [a-z]* sent by the link.s receive thread, [0-9]* by the [a-z]* thread' "$work"/lo-spin-*.log | tr '\n' ' ')"
fi
stop_node "$lo_spin_client"
stop_node "$lo_spin_remote"

# striped links (--link-streams=4; the default on a node of 8 cores or more):
# bulk copies go over 4 data connections of the link, each with the link's
# handshake; byte-exact both ways (functional's checks, the stress mix equal
# to the local vGPU's), with TLS and in clear text, both ends say so in the
# log; a data connection cut (ss -K) fails the link like the link itself
sport=$((port + 2))
# (--link-streams is the forwarding node's; the serving node has no use for it)
start_pair lo-stripe $sport --link-streams=4
lo_stripe_remote=$REMOTE_PID lo_stripe_client=$CLIENT_PID
functional loopback-striped-functional "$work/lo-stripe-client.sock"
if grep -q "open over tcp, encrypted: .*bulk striped over 4 data connections" "$work/lo-stripe-remote.log" &&
	grep -q "data connection 3 of 4 open" "$work/lo-stripe-remote.log" &&
	grep -q "bulk copies over 4 TCP streams" "$work/lo-stripe-client.log"; then
	ok "loopback-striped-logged ($(grep -m1 -o 'bulk copies over [^)]*' "$work/lo-stripe-client.log"))"
else
	bad loopback-striped-logged "$(grep -m2 -E 'striped|streams?' "$work"/lo-stripe-*.log | tr '\n' ' ')"
fi
stress loopback-striped-stress-mix "$work/lo-stripe-client.sock"
bench loopback-striped-bench "$work/lo-stripe-client.sock"
# both directions went over the data connections (the workers' lines at their end)
sleep 0.5
if grep -q "[1-9][0-9]* host-to-device chunks and [1-9][0-9]* device-to-host bytes over 4 data connections" \
	"$work/lo-stripe-client.log"; then
	ok "loopback-striped-both-directions ($(grep -o '[0-9]* host-to-device chunks and [0-9]* device-to-host bytes over 4 data connections' "$work/lo-stripe-client.log" | tail -1))"
else
	bad loopback-striped-both-directions "$(grep 'data connections' "$work/lo-stripe-client.log" | tail -2 | tr '\n' ' ')"
fi
# cut_data_connection LOG N: the client's end of the last link's data connection N reset
cut_data_connection() {
	local p
	p=$(grep -o "data connection $2 of [0-9]* open (from 127.0.0.1:[0-9]*)" "$1" | tail -1 | sed 's/.*://; s/)//')
	[ -n "$p" ] && ss -K src 127.0.0.1 sport = ":$p" >/dev/null 2>&1
}
cut_test loopback-striped-data-connection-cut "$work/lo-stripe-client.sock" "$lo_stripe_client" "$lo_stripe_remote" \
	"cut_data_connection $work/lo-stripe-remote.log 2"
# the end that saw the cut first names the connection (the other then sees the link go)
# (the client's receive: "failed (", the server's receive: "(addr) dropped", its bulk sender: ": bulk to the client failed")
cutline=$(grep -h -o -E "data connection 2( \(127.0.0.1:[0-9]*\) dropped| failed \(|: bulk to the client failed \().*the link fails" \
	"$work/lo-stripe-remote.log" "$work/lo-stripe-client.log" | head -1)
if [ -n "$cutline" ]; then
	ok "loopback-striped-data-connection-cut-logged ($cutline)"
else
	bad loopback-striped-data-connection-cut-logged "$(grep -h 'data connection 2' "$work"/lo-stripe-*.log | tail -2 | tr '\n' ' ')"
fi
functional loopback-striped-after-cut "$work/lo-stripe-client.sock"
stop_node "$lo_stripe_client"
stop_node "$lo_stripe_remote"
start_pair lo-stripe-plain $sport --link-encryption=off --link-streams=4
lo_stripe_plain_remote=$REMOTE_PID lo_stripe_plain_client=$CLIENT_PID
functional loopback-striped-encryption-off-functional "$work/lo-stripe-plain-client.sock"
if grep -q "UNENCRYPTED.*bulk striped over 4 data connections" "$work/lo-stripe-plain-remote.log"; then
	ok loopback-striped-encryption-off-logged
else
	bad loopback-striped-encryption-off-logged "$(grep -m1 'open over' "$work/lo-stripe-plain-remote.log")"
fi
bench loopback-striped-bench-encryption-off "$work/lo-stripe-plain-client.sock"
stop_node "$lo_stripe_plain_client"
stop_node "$lo_stripe_plain_remote"

cut_test loopback-sigkill-remote "$work/lo-client.sock" "$lo_client" "$lo_remote" "kill -KILL $lo_remote"
start_node lo-remote2 - --socket="$work/lo-remote.sock" --link-port=$port --cluster-key-file="$work/key"
lo_remote=$NODE_PID
functional loopback-after-remote-restart "$work/lo-client.sock"
# batches held up to a time bound (--link-batch-us): only waited-for records go at once
start_node lo-timed - --socket="$work/lo-timed.sock" --vgpus=2 --remote=1=127.0.0.1:$port \
	--cluster-key-file="$work/key" --link-batch=64 --link-batch-us=300
lo_timed=$NODE_PID
functional loopback-time-bounded-batches "$work/lo-timed.sock"
stop_node "$lo_timed"
stop_node "$lo_client"
stop_node "$lo_remote"

# ---------------- two namespaces, veth, 1 Gbit/s ----------------
if [ "$(id -u)" != 0 ] || ! ip netns add "$nsa" 2>/dev/null; then
	bad netns-setup "needs root and network namespaces"
else
	ip netns add "$nsb"
	ip link add va$tag type veth peer name vb$tag
	ip link set va$tag netns "$nsa"
	ip link set vb$tag netns "$nsb"
	ip -n "$nsa" addr add 10.250.1.1/24 dev va$tag
	ip -n "$nsb" addr add 10.250.1.2/24 dev vb$tag
	for n in "$nsa:va$tag" "$nsb:vb$tag"; do
		ip -n "${n%%:*}" link set lo up
		ip -n "${n%%:*}" link set "${n#*:}" up
		ip netns exec "${n%%:*}" tc qdisc add dev "${n#*:}" root tbf rate 1gbit burst 256kb latency 50ms
	done
	start_node ns-remote "$nsb" --socket="$work/ns-remote.sock" --link-port=$port --cluster-key-file="$work/key"
	ns_remote=$NODE_PID
	start_node ns-client "$nsa" --socket="$work/ns-client.sock" --vgpus=2 --remote=1=10.250.1.2:$port \
		--cluster-key-file="$work/key"
	ns_client=$NODE_PID
	functional netns-1gbit-functional "$work/ns-client.sock"
	stress netns-1gbit-stress-mix "$work/ns-client.sock"
	bench netns-1gbit-bench "$work/ns-client.sock"
	cut_test netns-veth-deleted-mid-copy "$work/ns-client.sock" "$ns_client" "$ns_remote" \
		"ip -n $nsa link del va$tag"
	# the remote node lives on: it must have freed the session's worker
	if kill -0 "$ns_remote" 2>/dev/null; then ok netns-remote-node-survives-cut; else bad netns-remote-node-survives-cut "it died"; fi
	ip link add va$tag type veth peer name vb$tag
	ip link set va$tag netns "$nsa"
	ip link set vb$tag netns "$nsb"
	ip -n "$nsa" addr add 10.250.1.1/24 dev va$tag
	ip -n "$nsb" addr add 10.250.1.2/24 dev vb$tag
	ip -n "$nsa" link set va$tag up
	ip -n "$nsb" link set vb$tag up
	ip netns exec "$nsa" tc qdisc add dev va$tag root tbf rate 1gbit burst 256kb latency 50ms
	ip netns exec "$nsb" tc qdisc add dev vb$tag root tbf rate 1gbit burst 256kb latency 50ms
	cut_test netns-remote-sigkill-mid-copy "$work/ns-client.sock" "$ns_client" "$ns_remote" "kill -KILL $ns_remote"
	start_node ns-remote2 "$nsb" --socket="$work/ns-remote.sock" --link-port=$port --cluster-key-file="$work/key"
	functional netns-after-remote-restart "$work/ns-client.sock"
fi

# ---------------- the hop-trace build (make hoptrace) ----------------
# scripts/remote-latency.sh --hops on the sim: a table per link mode, whose
# calls chain through every hop (two sealing rows where the link is encrypted)
hopout=$work/hops.out
if MEARAS_LAT_DEVICE=sim timeout 300 "$top/scripts/remote-latency.sh" --hops 1 >"$hopout" 2>&1 &&
	[ "$(grep -c '^total (one call' "$hopout")" = 2 ] && [ "$(grep -c 'sealed (encrypted link)' "$hopout")" = 2 ] &&
	[ "$(grep -c 'worker: runs it' "$hopout")" = 2 ]; then
	ok hoptrace-table
else
	bad hoptrace-table "$(tail -5 "$hopout" | tr '\n' ' ')"
fi
# the same run's yardstick: both TCP round trips have a figure
if [ "$(grep -cE '^yardstick: TCP RTT, [12] threads?/end +[0-9.]+ ' "$hopout")" = 2 ]; then
	ok latency-yardstick
else
	bad latency-yardstick "$(grep -m2 yardstick "$hopout" | tr '\n' ' ')"
fi

# ---------------- verbs links in a QEMU TCG guest (Soft-RoCE) ----------------
# verbs_guest.sh: two mearasd over --link-transport=verbs|tcp|auto in one guest,
# the serving one killed mid-copy (a few minutes; GUEST=0 leaves it out)
if [ "${GUEST:-1}" = 1 ]; then
	timeout 600 "$top/tests/remote/verbs_guest.sh" >"$work/verbs-guest.out" 2>&1
	grep -E '^  (GUEST (.* rc=|nodev: mearasd)|guest ran)' "$work/verbs-guest.out"
	while read -r verdict name rest; do
		if [ "$verdict" = PASS ]; then ok "verbs-guest-$name"; else bad "verbs-guest-$name" "$rest"; fi
	done < <(grep -E '^(PASS|FAIL) ' "$work/verbs-guest.out")
	grep -qE '^[0-9]+ passed, 0 failed$' "$work/verbs-guest.out" ||
		bad verbs-guest "$(tail -3 "$work/verbs-guest.out" | tr '\n' ' ')"
else
	echo "verbs-guest: not run in this configuration (GUEST=0)"
fi

echo
for r in "${results[@]}"; do echo "$r"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
