#!/usr/bin/env bash
# The driver-API front end on the GPU (part of scripts/gpu-lane.sh): the
# tests/cuda programs built with nvcc's default static runtime and those built
# with the driver API alone, natively and through mearas's libcuda.so.1 on
# local vGPUs, outputs compared; the
# microbenchmarks of a static build, native and through mearas alternating,
# into experiments/results/drvapi.json (launch_sync_us held too). The lane
# records every comparison in drvapi-programs.json afterwards.
#   gpu-drvapi.sh OUTDIR SOCKET DEVICE_LABEL
# Prints a table; its last line is "drvapi: ok ..." or "drvapi: FAILED ...".
set -uo pipefail
out=$1 sock=$2 label=$3
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
lib=$top/build/lib
mkdir -p "$out" || exit 1
failed=()

echo "== static-runtime programs: native"
tests/cuda/run-suite.sh --run "$out/static-native" --set all --build tests/cuda/build/static --timeout 120 \
	>"$out/static-suite-native.txt" 2>&1
echo "== static-runtime programs: mearas (libcuda.so.1, the GPU out of the program's reach)"
LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= tests/cuda/run-suite.sh --run "$out/static-mearas" --set all \
	--build tests/cuda/build/static --timeout 120 >"$out/static-suite-mearas.txt" 2>&1
tests/cuda/run-suite.sh --compare "$out/static-native" "$out/static-mearas" >"$out/static-suite-compare.txt" 2>&1 ||
	failed+=("static programs")
cat "$out/static-suite-compare.txt"

echo "== driver-API programs (no CUDA runtime in them): native, then mearas"
tests/cuda/run-suite.sh --run "$out/driver-native" --set driver --build tests/cuda/build/driver --timeout 120 \
	>"$out/driver-suite-native.txt" 2>&1
LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= tests/cuda/run-suite.sh --run "$out/driver-mearas" \
	--set driver --build tests/cuda/build/driver --timeout 120 >"$out/driver-suite-mearas.txt" 2>&1
tests/cuda/run-suite.sh --compare "$out/driver-native" "$out/driver-mearas" >"$out/driver-suite-compare.txt" 2>&1 ||
	failed+=("driver-API programs")
cat "$out/driver-suite-compare.txt"

echo "== microbenchmarks, static build (native and mearas alternate, 3 runs each)"
for i in 1 2 3; do
	build/experiments/microbench-static >"$out/drv-micro-native-$i.txt" 2>&1
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= build/experiments/microbench-static \
		>"$out/drv-micro-mearas-$i.txt" 2>&1
done
python3 experiments/microbench/compare.py --native "$out"/drv-micro-native-?.txt --mearas "$out"/drv-micro-mearas-?.txt \
	--also launch_sync_us --device "$label" --out experiments/results/drvapi.json >"$out/drv-micro-table.txt" 2>&1 ||
	failed+=("microbenchmarks")
cat "$out/drv-micro-table.txt"
tail -1 "$out/drv-micro-table.txt" | grep -Eq '^[0-9]+ passed, 0 failed' || failed+=("microbenchmark targets")

if [ ${#failed[@]} -eq 0 ]; then
	echo "drvapi: ok: static-runtime programs as native, targets met"
else
	echo "drvapi: FAILED: ${failed[*]}"
fi
