#!/usr/bin/env bash
# The main job, small: start mearasd on this node's GPUs (the host-memory
# model when there is no GPU), run unmodified CUDA programs through it on two
# vGPUs, and print what they saw and how fast the data path is.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sock=/tmp/mearas-demo.$$.sock
device=sim
if nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi
MEARAS_SOCKET=$sock build/bin/mearasd --device=$device --vgpus 2 >build/demo-mearasd.log 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -f $sock' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
head -1 build/demo-mearasd.log
run() { LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock MEARAS_DATA_MB=1024 "$@"; }
echo "== device query through mearas (2 vGPUs)"
run tests/cuda/build/device_query
if [ "$device" = cuda ]; then
	echo "== vector add, multi-device and thrust sort through mearas"
	for p in vector_add multidevice thrust_sort; do
		printf '%-14s ' "$p"; run tests/cuda/build/$p | tail -1
	done
	echo "== data path against native CUDA"
	build/experiments/microbench >build/demo-native.txt
	run build/experiments/microbench >build/demo-mearas.txt
	python3 experiments/microbench/compare.py --native build/demo-native.txt --mearas build/demo-mearas.txt \
		--idle-cpu 0 --out build/demo-microbench.json | grep -v idle_poller
else
	echo "== no GPU here: the host-memory model runs copies for real (kernels are not executed)"
	run build/experiments/microbench | sed 's/^METRIC /  /'
	echo "(timings on the model say nothing about a GPU; run 'make demo' on a GPU node)"
fi
