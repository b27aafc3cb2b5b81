#!/usr/bin/env bash
# cuFFT through mearas on a GPU, in one device call (well under 3 minutes).
#
#   experiments/drvapi-probe/cufft-gpu.sh build
#                                  here (no GPU): builds what the run needs
#                                  into build/cufft-probe (drvapi-probe's
#                                  forwarding libcuda.so.1, module_functions)
#                                  and tests/cuda/build/{,static/}lib_cufft
#   experiments/drvapi-probe/cufft-gpu.sh
#                                  on the GPU machine, from the repository
#                                  root, with build/ and tests/cuda/build
#                                  carried: writes $OUT/summary.txt and
#                                  $OUT/cufft-gpu.tar.gz (every log)
#
# What it runs:
#  1. lib_cufft (shared and static runtime) natively: the reference outputs.
#  2. The same natively under experiments/drvapi-probe's libcuda.so.1 (a
#     forwarding driver on LD_LIBRARY_PATH: cuFFT's embedded runtime opens
#     libcuda.so.1 with dlopen and takes its entry points from
#     cuGetProcAddress, which an LD_PRELOAD of cuGetExportTable would not
#     see): every export-table call logged; the calls of table 6e163fbe
#     (slot, arguments, memory they point to before and after, return) are
#     extracted into probe-6e16-*.txt.
#  3. module_functions (experiments/drvapi-probe/programs): slot 7 asked
#     directly on modules of one, three and no kernels, a NULL context, a
#     NULL visit, a function handle as module; the current context after
#     runtime calls. Natively, then through mearas: the outputs are diffed
#     (lines starting with '#' are addresses, not compared).
#  4. mearasd --device=cuda (MEARAS_LOG=debug) and lib_cufft through it,
#     both builds, MEARAS_LOG=debug for the program too; outputs diffed
#     against 1.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
P=$top/build/cufft-probe

if [ "${1:-}" = build ]; then
	set -e
	make -j2
	make -C experiments/drvapi-probe B="$P/dp"
	/usr/local/cuda/bin/nvcc -O2 -std=c++17 -cudart shared -Werror all-warnings \
		-Xcompiler -Wall,-Wextra,-Werror -o "$P/module_functions" \
		experiments/drvapi-probe/programs/module_functions.cu -lcuda
	make -C tests/cuda build/lib_cufft build/static/lib_cufft
	echo "built: $P, tests/cuda/build/lib_cufft, tests/cuda/build/static/lib_cufft"
	exit 0
fi

out=${OUT:-$top/build/cufft-gpu}
w=$(mktemp -d /tmp/cufft-gpu.XXXXXX)
mkdir -p "$out"
T=${TIMEOUT:-60}
sum=$w/summary.txt
say() { echo "$*" | tee -a "$sum"; }

real=${PROBE_REAL_LIBCUDA:-$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')}
[ -n "$real" ] || real=/usr/lib/x86_64-linux-gnu/libcuda.so.1
say "cufft-gpu $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo +dirty)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); real driver $real"

# run NAME CMD...: output in $w/NAME.txt, exit status in the summary
run() {
	local name=$1 rc
	shift
	timeout -k 5 "$T" "$@" >"$w/$name.txt" 2>&1
	rc=$?
	say "$(printf '%-34s rc=%d  last: %s' "$name" $rc "$(grep -v '^#\|debug: ' "$w/$name.txt" | tail -1)")"
}

# 6e163fbe's calls in a probe log, one block per call and its return
xt6e16() {
	python3 - "$1" <<'EOF'
import json, sys
rets = {}
calls = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("uuid", "").startswith("6e163fbe"):
        if e.get("ev") == "xt_call":
            calls.append(e)
        elif e.get("ev") == "xt_ret":
            rets[e.get("call_seq")] = e
        elif e.get("ev") == "export_table":
            print("table:", {k: e.get(k) for k in ("caller", "rc", "word0", "layout", "n_slots", "mode")})
for c in calls:
    r = rets.get(c["seq"], {})
    print(f"slot {c['slot']} call {c.get('n')} from {c.get('caller')} tid {c.get('tid')}")
    print("  args:", " ".join(c.get("args", [])))
    for p in c.get("ptrs", []):
        print(f"  before a{p['a']} {p.get('kind')}: {p.get('bytes')}")
    print(f"  returned rax {r.get('rax')} rc {r.get('rc')}")
    for p in r.get("ptrs", []):
        print(f"  after  a{p['a']}{' changed' if p.get('changed') else ''}: {p.get('bytes')}")
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if '"xt_counts"' in line:
        e = json.loads(line)
        print("xt_counts (6e163fbe):", [c for c in e.get("counts", e.get("tables", [])) if "6e163fbe" in json.dumps(c)])
EOF
}

say "== 1. native"
run native-shared tests/cuda/build/lib_cufft
run native-static tests/cuda/build/static/lib_cufft

say "== 2. native under the forwarding probe (PROBE_REAL_LIBCUDA=$real)"
for b in shared static; do
	bin=tests/cuda/build/lib_cufft
	[ $b = static ] && bin=tests/cuda/build/static/lib_cufft
	rm -f "$w/probe-$b.jsonl"
	run probed-$b env LD_LIBRARY_PATH="$P/dp/probe${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		PROBE_REAL_LIBCUDA="$real" PROBE_LOG="$w/probe-$b.jsonl" PROBE_DUMP=128 "$bin"
	xt6e16 "$w/probe-$b.jsonl" >"$w/probe-6e16-$b.txt" 2>&1
	python3 experiments/drvapi-probe/summarize.py "$w/probe-$b.jsonl" >"$w/probe-summary-$b.txt" 2>&1
	say "   6e163fbe calls ($b): $(grep -c '^slot ' "$w/probe-6e16-$b.txt") ($(grep '^slot ' "$w/probe-6e16-$b.txt" |
		awk '{print $2}' | sort -n | uniq -c | awk '{printf "slot %s x%s ", $2, $1}'))"
	grep -m1 -A12 '^slot 7 ' "$w/probe-6e16-$b.txt" | sed 's/^/   | /' | cut -c1-200 | tee -a "$sum" >/dev/null
done

say "== 3. module_functions natively"
for m in all null-visit bad-module; do run mf-native-$m "$P/module_functions" $m; done

say "== 4. through mearas (mearasd --device=cuda, MEARAS_LOG=debug)"
sock=/tmp/mearas-cufft.$$.sock
ctl=/tmp/mearas-cufft-ctl.$$.sock
MEARAS_LOG=debug MEARAS_SOCKET=$sock build/bin/mearasd --device=cuda --max-data-mb 4096 --control=$ctl \
	>"$w/mearasd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -f $sock $ctl' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || say "mearasd did not come up: $(tail -3 "$w/mearasd.log")"
M=(env LD_LIBRARY_PATH="$top/build/lib" MEARAS_SOCKET="$sock" CUDA_VISIBLE_DEVICES= MEARAS_DATA_MB=1024 MEARAS_LOG=debug)
run mearas-shared "${M[@]}" tests/cuda/build/lib_cufft
run mearas-static "${M[@]}" tests/cuda/build/static/lib_cufft
for m in all null-visit bad-module; do run mf-mearas-$m "${M[@]}" "$P/module_functions" $m; done
kill $daemon 2>/dev/null
wait $daemon 2>/dev/null

say "== comparisons (native vs mearas; mearas's log lines and '#' lines left out)"
cmp_out() {
	local a=$1 b=$2
	if diff <(grep -v '^#' "$w/$a.txt") <(grep -v '^#\|mearas\[[0-9]*\]: ' "$w/$b.txt") >"$w/diff-$b.txt"; then
		say "   $b: same as $a"
	else
		say "   $b: DIFFERS from $a:"
		sed 's/^/   | /' "$w/diff-$b.txt" | head -20 | tee -a "$sum" >/dev/null
	fi
}
cmp_out native-shared mearas-shared
cmp_out native-static mearas-static
for m in all null-visit bad-module; do cmp_out mf-native-$m mf-mearas-$m; done
say "   mearas log lines of note (errors, warnings, export tables):"
grep -h 'error: \|warning: \|export table' "$w"/mearas-*.txt "$w"/mf-mearas-*.txt "$w/mearasd.log" 2>/dev/null |
	sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head -20 | sed 's/^/   | /' | tee -a "$sum" >/dev/null

cp "$sum" "$out/summary.txt"
tar -C "$w" -czf "$out/cufft-gpu.tar.gz" .
rm -rf "$w"
echo "wrote $out/summary.txt and $out/cufft-gpu.tar.gz"
