#!/usr/bin/env bash
# GPU lane, remote part: a second mearasd serves its GPU over remote-link
# (loopback TCP) and the client node's vGPU 0 is remote. Runs the program
# suite through the remote vGPU (compared with the native outputs in
# NATIVE_DIR) and the microbenchmarks, and writes
# experiments/results/remote.json.
#   scripts/gpu-remote.sh OUTDIR NATIVE_DIR MICRO_NATIVE DEVICE_NAME
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=$1 native=$2 micro_native=$3 device=$4
rsock=/tmp/mearas-remote-node.$$.sock csock=/tmp/mearas-client-node.$$.sock
key=$out/cluster.key
port=$((20000 + $$ % 20000))
head -c 32 /dev/urandom | base64 >"$key"
build/bin/mearasd --device=cuda --socket=$rsock --control=/tmp/mearas-rctl.$$.sock --link-port=$port \
	--cluster-key-file="$key" --max-data-mb 4096 >"$out/remote-node.log" 2>&1 &
rnode=$!
build/bin/mearasd --device=cuda --socket=$csock --control=/tmp/mearas-cctl.$$.sock --vgpus=1 \
	--remote=0=127.0.0.1:$port --cluster-key-file="$key" --max-data-mb 4096 >"$out/client-node.log" 2>&1 &
cnode=$!
trap 'kill $rnode $cnode 2>/dev/null; wait 2>/dev/null; rm -f $rsock $csock' EXIT
for _ in $(seq 50); do [ -S "$csock" ] && [ -S "$rsock" ] && break; sleep 0.1; done
LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$csock tests/cuda/run-suite.sh --run "$out/remote" --timeout 120 \
	>"$out/suite-remote.txt" 2>&1
tests/cuda/run-suite.sh --compare "$native" "$out/remote" >"$out/suite-remote-compare.txt" 2>&1
tail -1 "$out/suite-remote-compare.txt" | sed 's/^/remote suite: /'
for i in 1 2; do
	build/experiments/microbench >"$out/micro-rnative-$i.txt" 2>&1
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$csock timeout 300 build/experiments/microbench >"$out/micro-remote-$i.txt" 2>&1
	build/tests/gpu/tcp_bench 4096 >"$out/raw-tcp-$i.txt" 2>&1
done
python3 experiments/microbench/remote_compare.py --native "$micro_native" "$out"/micro-rnative-?.txt \
	--remote "$out"/micro-remote-?.txt --raw-tcp "$out"/raw-tcp-?.txt \
	--device "$device" --out experiments/results/remote.json
