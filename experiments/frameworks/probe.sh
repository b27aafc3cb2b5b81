#!/usr/bin/env bash
# probe.sh OUTDIR [FRAMEWORK...]: runs experiments/frameworks/smoke.py for each
# framework (default: torch cupy jax) natively, then through a local vGPU
# (mearas's libcuda.so.1 first on the library path, a private mearasd), and
# writes NAME-native.txt, NAME-mearas.txt (+ .err) and mearasd.log into OUTDIR.
# Exploration: it says which step fails through mearas and how; no verdict.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: probe.sh OUTDIR [FRAMEWORK...]}
shift
[ $# -gt 0 ] || set -- torch cupy jax
mkdir -p "$out"
sock=/tmp/mearas-probe.$$.sock
MEARAS_SOCKET=$sock "$top/build/bin/mearasd" --device=cuda --max-data-mb 4096 >"$out/mearasd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -f $sock' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
for fw in "$@"; do
	echo "== $fw"
	timeout -k 5 150 python3 "$top/experiments/frameworks/smoke.py" "$fw" >"$out/$fw-native.txt" 2>"$out/$fw-native.err"
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock timeout -k 5 150 \
		python3 "$top/experiments/frameworks/smoke.py" "$fw" >"$out/$fw-mearas.txt" 2>"$out/$fw-mearas.err"
	echo "rc $?" >>"$out/$fw-mearas.txt"
	paste -d'|' "$out/$fw-native.txt" "$out/$fw-mearas.txt" | sed 's/|/   ||   /'
done
