#!/bin/bash
# Runs the drvapi-probe subjects on a GPU machine, each natively and under
# the probe, and writes OUTDIR/summary.txt (plus NAME.jsonl logs, NAME.*.txt
# outputs, summary.json).
#
#   experiments/drvapi-probe/run-on-gpu.sh OUTDIR
#
# Needs build/probe (make) and build/programs (make programs) next to this
# script. Environment: PROBE_REAL_LIBCUDA (default: from ldconfig -p, else
# /usr/lib/x86_64-linux-gnu/libcuda.so.1), CUDA_LIB (cuBLAS/NVRTC for the
# programs, default /usr/local/cuda/lib64), PYTHON (default python3),
# TIMEOUT (per program, default 60 s), PY_TIMEOUT (torch/CuPy, default 90 s).
set -u
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
PROBE_DIR=$HERE/build/probe
PROGS=$HERE/build/programs
CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}
PYTHON=${PYTHON:-python3}
TIMEOUT=${TIMEOUT:-60}
PY_TIMEOUT=${PY_TIMEOUT:-90}
START=$(date +%s)

if [ ! -e "$PROBE_DIR/libcuda.so.1" ]; then
    echo "$PROBE_DIR/libcuda.so.1 missing: run make -C experiments/drvapi-probe" >&2
    exit 2
fi
if [ -z "${PROBE_REAL_LIBCUDA:-}" ]; then
    PROBE_REAL_LIBCUDA=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$PROBE_REAL_LIBCUDA" ] || PROBE_REAL_LIBCUDA=/usr/lib/x86_64-linux-gnu/libcuda.so.1
fi
PROBE_REAL_LIBCUDA=$(readlink -f "$PROBE_REAL_LIBCUDA")
export PROBE_REAL_LIBCUDA
rm -f "$OUT"/*.jsonl "$OUT"/*.txt "$OUT"/summary.json

{
    echo "drvapi-probe run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "real driver: $PROBE_REAL_LIBCUDA"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    echo "kernel: $(uname -r); CUDA_LIB: $CUDA_LIB"
    if command -v nm >/dev/null 2>&1 && nm -D --defined-only "$PROBE_REAL_LIBCUDA" >/dev/null 2>&1; then
        nm -D --defined-only "$PROBE_REAL_LIBCUDA" 2>/dev/null | awk '{print $3}' | sort -u >"$OUT/real-exports.txt"
        nm -D --defined-only "$PROBE_DIR/libcuda.so.1" | awk '{print $3}' | sort -u >"$OUT/probe-exports.txt"
        echo "real driver exports: $(wc -l <"$OUT/real-exports.txt"), probe exports: $(wc -l <"$OUT/probe-exports.txt")"
        echo "in the real driver, not exported by the probe (dlsym on the probe misses them):" \
            "$(comm -23 "$OUT/real-exports.txt" "$OUT/probe-exports.txt" | tr '\n' ' ')"
        echo "exported by the probe, not in the real driver (abort if called):" \
            "$(comm -13 "$OUT/real-exports.txt" "$OUT/probe-exports.txt" | tr '\n' ' ')"
    fi
} >"$OUT/env.txt" 2>&1

ROWS=()
# run_one NAME KIND(native|probed) [VAR=VALUE ...] -- COMMAND...
run_one() {
    local name=$1 kind=$2 t=$3
    shift 3
    local envs=()
    while [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    local log=$OUT/$name.$kind.txt
    if [ "$kind" = probed ]; then
        envs+=("PROBE_LOG=$OUT/$name.jsonl")
    fi
    local t0 t1 rc
    t0=$(date +%s%N)
    timeout -k 5 "$t" env "${envs[@]}" "$@" >"$log" 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf '%s %s rc=%d %d ms\n' "$name" "$kind" "$rc" $(((t1 - t0) / 1000000)) >>"$OUT/runs.txt"
    echo "$rc"
}

prog() { # NAME [extra probe env...]
    local name=$1 bin=$1
    shift
    case $name in a_static_*) bin=a_static ;; esac
    local exe=$PROGS/$bin
    if [ ! -x "$exe" ]; then
        ROWS+=("$name missing-binary -")
        return
    fi
    local n=- p
    case $name in
    a_static_*) ;; # variants: the native run is a_static's
    *) n=$(run_one "$name" native "$TIMEOUT" "LD_LIBRARY_PATH=$CUDA_LIB:${LD_LIBRARY_PATH:-}" -- "$exe") ;;
    esac
    p=$(run_one "$name" probed "$TIMEOUT" "LD_LIBRARY_PATH=$PROBE_DIR:$CUDA_LIB:${LD_LIBRARY_PATH:-}" "$@" -- "$exe")
    ROWS+=("$name $n $p")
}

python_subject() { # NAME SCRIPT [extra probe env...]
    local name=$1 script=$HERE/subjects/$2 n=- p
    shift 2
    case $name in
    *_wrap) # a variant: runs only where the plain subject ran
        case " ${ROWS[*]} " in *" ${name%_wrap} skipped"*) return ;; esac ;;
    *)
        n=$(run_one "$name" native "$PY_TIMEOUT" "PYTHONUNBUFFERED=1" -- "$PYTHON" "$script")
        if [ "$n" = 3 ]; then
            ROWS+=("$name skipped(module-missing) -")
            return
        fi
        ;;
    esac
    # Only the probe in front: the frameworks find their own CUDA libraries.
    p=$(run_one "$name" probed "$PY_TIMEOUT" "PYTHONUNBUFFERED=1" \
        "LD_LIBRARY_PATH=$PROBE_DIR:${LD_LIBRARY_PATH:-}" "$@" -- "$PYTHON" "$script")
    ROWS+=("$name $n $p")
}

prog a_static
prog b_shared
prog c_ptds
prog d_rdc
prog e_symbols
prog f_cublas
prog g_nvrtc
# Variants of (a): counts per driver function; the two hashed tables copied
# (expected to break cudart's integrity check, error 103, if the research is right).
prog a_static_wrap PROBE_WRAP_PROCS=1
prog a_static_hashcopy PROBE_HASHED_TABLES=copy
python_subject torch torch_subject.py
python_subject torch_wrap torch_subject.py PROBE_WRAP_PROCS=1
python_subject cupy cupy_subject.py

{
    cat "$OUT/env.txt"
    echo
    printf '%-20s %-22s %s\n' program native-exit probed-exit
    for r in "${ROWS[@]}"; do
        # shellcheck disable=SC2086
        printf '%-20s %-22s %s\n' $r
    done
    echo
    echo "total $(($(date +%s) - START)) s; per run: see runs.txt; outputs: NAME.native.txt NAME.probed.txt"
    echo
    logs=$(ls "$OUT"/*.jsonl 2>/dev/null)
    if [ -n "$logs" ]; then
        # shellcheck disable=SC2086
        "$PYTHON" "$HERE/summarize.py" $logs
        # shellcheck disable=SC2086
        "$PYTHON" "$HERE/summarize.py" --json $logs >"$OUT/summary.json"
    fi
} >"$OUT/summary.txt" 2>&1
sed -n '1,/^total /p' "$OUT/summary.txt"
echo "summary: $OUT/summary.txt"
