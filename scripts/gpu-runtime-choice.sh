#!/usr/bin/env bash
# Our runtime or NVIDIA's over our driver (issue: driver-API front end, item
# 4): the same `-cudart shared` microbenchmark binary natively, through
# mearas's libcudart.so.13, and through NVIDIA's libcudart.so.13 (the
# toolkit's, CUDA_HOME) over mearas's libcuda.so.1, alternating, 3 runs
# each, the GPU out of the program's reach for the two mearas runs;
# experiments/results/runtime-choice.json (experiments/microbench/runtime_choice.py).
#   gpu-runtime-choice.sh OUTDIR SOCKET DEVICE_LABEL
# Last line: "runtime choice: ..." or "runtime choice: FAILED ...".
set -uo pipefail
out=$1 sock=$2 label=$3
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
lib=$top/build/lib
nvrt=${CUDA_HOME:-/usr/local/cuda}/lib64
bin=build/experiments/microbench
mkdir -p "$out" || exit 1
if [ ! -e "$nvrt/libcudart.so.13" ]; then
	echo "runtime choice: FAILED: no NVIDIA libcudart.so.13 in $nvrt"
	exit 1
fi
# which runtime each mearas run loads (the driver library is loaded by the runtime itself)
LD_LIBRARY_PATH=$lib ldd "$bin" | grep libcudart >"$out/runtime-ours-ldd.txt"
LD_LIBRARY_PATH=$nvrt:$lib ldd "$bin" | grep libcudart >"$out/runtime-theirs-ldd.txt"
grep -q "$lib/libcudart" "$out/runtime-ours-ldd.txt" && grep -q "$nvrt/libcudart" "$out/runtime-theirs-ldd.txt" ||
	{ echo "runtime choice: FAILED: the runs would not load the runtimes they name (runtime-*-ldd.txt)"; exit 1; }
for i in 1 2 3; do
	"$bin" >"$out/rc-native-$i.txt" 2>&1
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= "$bin" >"$out/rc-ours-$i.txt" 2>&1
	LD_LIBRARY_PATH=$nvrt:$lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= "$bin" >"$out/rc-theirs-$i.txt" 2>&1
done
python3 experiments/microbench/runtime_choice.py --native "$out"/rc-native-?.txt --ours "$out"/rc-ours-?.txt \
	--theirs "$out"/rc-theirs-?.txt --device "$label" --out experiments/results/runtime-choice.json ||
	{ echo "runtime choice: FAILED (see rc-*.txt)"; exit 1; }
