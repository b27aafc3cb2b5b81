#!/usr/bin/env bash
# GPU lane, remote part: a second mearasd (the remote node) serves its GPU over
# remote-link and the forwarding node's vGPU 0 is remote. The two nodes run in two
# network namespaces joined by a veth pair (scripts/netns-pair.sh: iproute2, or
# the busybox carried in build/tools where the GPU machine has no `ip`); the
# programs, the microbenchmarks and the raw TCP yardstick (tcp_bench, between
# the same two namespaces, in the same run) run in the forwarding node's namespace
# and reach the client mearasd by its unix socket. Where namespaces cannot be
# made (not root, no veth, no tool), it says so loudly and uses loopback TCP in
# the host's namespace. Runs the program suite through the remote vGPU
# (compared with the native outputs in NATIVE_DIR) and the microbenchmarks, and
# writes experiments/results/remote.json (its "network" field says which).
#   scripts/gpu-remote.sh OUTDIR NATIVE_DIR MICRO_NATIVE DEVICE_NAME
# MEARAS_REMOTE_DEVICE=sim runs the nodes on the host-memory model (a dry run
# of the orchestration on a machine without a GPU; the numbers mean nothing,
# and remote.json goes to OUTDIR instead).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$1 native=$2 micro_native=$3 device=$4
kind=${MEARAS_REMOTE_DEVICE:-cuda}
results=experiments/results/remote.json
[ "$kind" = cuda ] || results=$out/remote.json
rsock=/tmp/mearas-remote-node.$$.sock csock=/tmp/mearas-client-node.$$.sock
key=$out/cluster.key
port=$((20000 + $$ % 20000)) tport=$((40000 + $$ % 20000))
rns=mxgr$$ cns=mxgc$$
head -c 32 /dev/urandom | base64 >"$key"
# two GPUs: the remote node serves the second, so each node has its own GPU
# (native runs use the first)
rgpu=0
if [ "$kind" = cuda ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
	rgpu=1
fi

if scripts/netns-pair.sh up $rns $cns 10.251.0.1 10.251.0.2 2>"$out/netns.txt"; then
	tool=$(scripts/netns-pair.sh tool)
	network="veth between namespaces (${tool%% *})"
	host=10.251.0.1
	rx=(scripts/netns-pair.sh exec "$rns") cx=(scripts/netns-pair.sh exec "$cns")
else
	network=loopback host=127.0.0.1 rx=() cx=() rns='' cns=
	for _ in 1 2 3; do
		echo "!!! gpu-remote: NO NETWORK NAMESPACES ($(tail -1 "$out/netns.txt")): remote nodes talk over loopback TCP" >&2
	done
fi

rnode='' cnode='' sink=''
# raw_tcp NAME FROM_NS TO_NS TO_ADDR BUFFER_MB FILE: tcp_bench's sink in TO_NS,
# its sender in FROM_NS (the host's namespace and loopback without them)
raw_tcp() {
	local from=() to=() addr=$4
	if [ -n "$rns" ]; then
		from=(scripts/netns-pair.sh exec "$2") to=(scripts/netns-pair.sh exec "$3")
	else
		addr=127.0.0.1
	fi
	"${to[@]}" build/tests/gpu/tcp_bench --buffer-mb "$5" --listen "$addr:$tport" >"$6.sink" 2>&1 &
	sink=$!
	"${from[@]}" timeout 60 build/tests/gpu/tcp_bench --buffer-mb "$5" --connect "$addr:$tport" 4096 >"$6" 2>&1
	kill $sink 2>/dev/null
	wait $sink 2>/dev/null
	sink=''
}
cleanup() {
	# shellcheck disable=SC2086 # empty ones drop out
	kill $rnode $cnode $sink 2>/dev/null
	wait 2>/dev/null
	rm -f $rsock $csock
	[ -z "$rns" ] || scripts/netns-pair.sh down "$rns" "$cns"
}
trap cleanup EXIT
# start_nodes LOGSUFFIX [mearasd link args...]: the remote node and the forwarding node
start_nodes() {
	local sfx=$1
	shift
	rm -f $rsock $csock
	"${rx[@]}" build/bin/mearasd --device="$kind" --socket=$rsock --control=/tmp/mearas-rctl.$$.sock --link-port=$port \
		--cluster-key-file="$key" --max-data-mb 4096 "$@" >"$out/remote-node$sfx.log" 2>&1 &
	rnode=$!
	for _ in $(seq 100); do
		"${cx[@]}" python3 -c "import socket; socket.create_connection(('$host', $port), 1).close()" 2>/dev/null && break
		sleep 0.1
	done
	"${cx[@]}" build/bin/mearasd --device="$kind" --socket=$csock --control=/tmp/mearas-cctl.$$.sock --vgpus=1 \
		--remote=0=$host:$port/$rgpu --cluster-key-file="$key" --max-data-mb 4096 "$@" >"$out/client-node$sfx.log" 2>&1 &
	cnode=$!
	for _ in $(seq 50); do [ -S "$csock" ] && [ -S "$rsock" ] && break; sleep 0.1; done
}
stop_nodes() {
	kill $rnode $cnode 2>/dev/null
	wait $rnode $cnode 2>/dev/null
	rnode='' cnode=''
}
# how the link was protected: the remote node's log line of the link
link_security() { grep -m1 -o 'open over tcp, .*' "$1" | sed 's/^open over tcp, //'; }
start_nodes ''

lib=$top/build/lib
LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh --run "$out/remote" --set all --timeout 120 \
	>"$out/suite-remote.txt" 2>&1
tests/cuda/run-suite.sh --compare "$native" "$out/remote" >"$out/suite-remote-compare.txt" 2>&1
tail -1 "$out/suite-remote-compare.txt" | sed 's/^/remote suite: /'
# the static-runtime builds through mearas's libcuda.so.1, against their
# native run of scripts/gpu-drvapi.sh (when it ran)
if [ -d "$out/static-native" ]; then
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh \
		--run "$out/static-remote" --set all --build tests/cuda/build/static --timeout 120 >"$out/static-suite-remote.txt" 2>&1
	tests/cuda/run-suite.sh --compare "$out/static-native" "$out/static-remote" \
		>"$out/static-suite-remote-compare.txt" 2>&1
	tail -1 "$out/static-suite-remote-compare.txt" | sed 's/^/remote static-runtime suite: /'
fi
for i in 1 2; do
	build/experiments/microbench >"$out/micro-rnative-$i.txt" 2>&1
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" timeout 300 build/experiments/microbench >"$out/micro-remote-$i.txt" 2>&1
	# raw TCP between the same namespaces: each direction between two 256 MiB
	# buffers, as the copies move them (up: client to remote node, as
	# host-to-device; down: as device-to-host), and from a 4 MiB buffer that
	# stays in the caches, for reference
	raw_tcp up "$cns" "$rns" 10.251.0.1 256 "$out/raw-tcp-up-$i.txt"
	raw_tcp down "$rns" "$cns" 10.251.0.2 256 "$out/raw-tcp-down-$i.txt"
	raw_tcp up "$cns" "$rns" 10.251.0.1 4 "$out/raw-tcp-hot-$i.txt"
done
python3 experiments/microbench/remote_compare.py --native "$micro_native" "$out"/micro-rnative-?.txt \
	--remote "$out"/micro-remote-?.txt --raw-tcp-up "$out"/raw-tcp-up-?.txt \
	--raw-tcp-down "$out"/raw-tcp-down-?.txt --raw-tcp-hot "$out"/raw-tcp-hot-?.txt \
	--device "$device" --network "$network; link $(link_security "$out/remote-node.log")" --out "$results"

# The same remote microbenchmarks with link encryption off on both nodes
# (mearasd --link-encryption=off; the run above has it on, the default),
# against the same native and raw TCP numbers: remote-encryption-off.json
# beside remote.json, in the same record format.
stop_nodes
start_nodes -encryption-off --link-encryption=off
for i in 1 2; do
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" timeout 300 build/experiments/microbench \
		>"$out/micro-remote-encryption-off-$i.txt" 2>&1
done
echo "== link encryption off (--link-encryption=off on both nodes)"
python3 experiments/microbench/remote_compare.py --native "$micro_native" "$out"/micro-rnative-?.txt \
	--remote "$out"/micro-remote-encryption-off-?.txt --raw-tcp-up "$out"/raw-tcp-up-?.txt \
	--raw-tcp-down "$out"/raw-tcp-down-?.txt --raw-tcp-hot "$out"/raw-tcp-hot-?.txt \
	--device "$device" --network "$network; link $(link_security "$out/remote-node-encryption-off.log")" \
	--out "${results%.json}-encryption-off.json"
