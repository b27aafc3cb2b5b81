#!/usr/bin/env bash
# GPU lane, batch part: the experiments harness's batch-size sweep (one remote
# vGPU over loopback TCP, the forwarding node's mearasd --link-batch = 1, 2, 4, ...,
# 1024; BlackScholes on 64 Ki options, a launch-heavy workload), plotted.
# Writes batch.json, batch.csv and batch-size.png to experiments/results (on
# the sim: to OUTDIR only), copies them to OUTDIR, keeps the harness's logs in
# OUTDIR/batch-logs, and prints one line per batch size. About a minute on a
# GPU: BATCH_SECONDS (default 2) per point, 11 points; stopped after
# BATCH_TIMEOUT seconds (default 240).
#   scripts/gpu-batch.sh OUTDIR [cuda|sim]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 1
kind=${2:-cuda}
results=$top/experiments/results
[ "$kind" = cuda ] || results=$out
rm -f "$out"/batch.json "$out"/batch.csv "$out"/batch-size.png
touch "$out/.batch-start" # only files newer than this are this run's
cd "$top/experiments/harness" || exit 1
# SIGINT: the harness stops its nodes on the way out
timeout -s INT "${BATCH_TIMEOUT:-240}" python3 -m mearas_exp batch --device "$kind" --apps blackscholes \
	--seconds "${BATCH_SECONDS:-2}" --out "$results" --logs "$out/batch-logs" >"$out/batch.txt" 2>&1
rc=$?
[ $rc = 124 ] && echo "batch sweep: stopped after ${BATCH_TIMEOUT:-240} s (see batch.txt)"
if [ "$results" != "$out" ]; then
	for f in batch.json batch.csv batch-size.png; do
		[ "$results/$f" -nt "$out/.batch-start" ] && cp "$results/$f" "$out/"
	done
fi
python3 - "$out/batch.json" 2>/dev/null <<'EOF' || tail -3 "$out/batch.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
ok = [p for p in doc["points"] if p["status"] == "ok"]
base = ok[0]["aggregate"]["throughput"] if ok else None
print(f"{'link batch':>10} {'options/s':>12} {'vs batch 1':>10}  ({doc['device']})")
for p in doc["points"]:
    t = p["aggregate"]["throughput"]
    rel = f"{t / base:10.2f}" if t and base and ok[0]["params"]["batch"] == 1 else f"{'-':>10}"
    print(f"{p['params']['batch']:>10} {t or 0:12.4g} {rel}  {p['status']} {p['error'][:60]}")
print(f"batch points: {len(ok)} ok, {len(doc['points']) - len(ok)} not ok")
EOF
exit $rc
