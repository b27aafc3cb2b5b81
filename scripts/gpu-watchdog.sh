#!/usr/bin/env bash
# GPU lane, GPU time limit part: a mearasd of its own with
# --kernel-timeout-ms=LIMIT (WATCHDOG_LIMIT_MS, default 3000). Tenant B
# (build/tests/gpu/watchdog victim) measures its kernel and copy throughput
# alone, while tenant A's kernel spins on every SM, and after mearasd's
# limit ended A's context. Passes when A got cudaErrorLaunchTimeout within
# the limit plus 2 s, mearasd logged it, A's worker exited, and B's
# throughput after is at least WATCHDOG_MIN_RATIO (default 0.8) of its alone
# figure (kernels and copies).
# Writes experiments/results/watchdog.json; last line "watchdog: ok ..." or
# "watchdog: FAILED ...".
#   scripts/gpu-watchdog.sh OUTDIR "DEVICE DESCRIPTION" [cuda|sim]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$1 desc=$2 dev=${3:-cuda}
limit=${WATCHDOG_LIMIT_MS:-3000}
min_ratio=${WATCHDOG_MIN_RATIO:-0.8}
work=$(mktemp -d /tmp/mearas-watchdog.XXXXXX)
sock=$work/mearasd.sock
log=$out/watchdog-mearasd.log
mkdir -p "$out"
build/bin/mearasd --device="$dev" --socket="$sock" --control="$work/ctl.sock" --kernel-timeout-ms="$limit" \
	>"$log" 2>&1 &
daemon=$!
victim=
cleanup() {
	[ -n "$victim" ] && kill "$victim" 2>/dev/null
	kill "$daemon" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
client() { LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= timeout 120 build/tests/gpu/watchdog "$@"; }
wait_for() { for _ in $(seq $(($2 * 20))); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
workers() { pgrep -P "$daemon" | wc -l; }
fail() { echo "watchdog: FAILED: $*"; exit 1; }

client victim "$work" >"$out/watchdog-victim.txt" 2>&1 &
victim=$!
echo 4 >"$work/alone"
wait_for "$work/alone.done" 120 || fail "tenant B never measured alone ($(tail -2 "$out/watchdog-victim.txt"))"
client spin "$limit" "$work/spinning" >"$out/watchdog-spin.txt" 2>&1 &
spinner=$!
wait_for "$work/spinning" 60 || fail "tenant A never started its kernel ($(tail -2 "$out/watchdog-spin.txt"))"
# B measures while A spins, well inside the limit
python3 -c "print(min(2.0, $limit / 2000))" >"$work/during"
wait_for "$work/during.done" 120 || fail "tenant B never measured during the spin"
wait $spinner
spin_rc=$?
# A's worker (and so its context) must go; B's stays
for _ in $(seq 100); do [ "$(workers)" -le 1 ] && break; sleep 0.1; done
gone=$([ "$(workers)" -le 1 ] && echo true || echo false)
echo 4 >"$work/after"
wait_for "$work/after.done" 120 || fail "tenant B never measured after the limit fired"
wait "$victim"
victim_rc=$?
victim=
logged=$(grep -c "GPU time limit: .* has run [0-9]* ms, past the limit of $limit ms" "$log")

python3 - "$out/watchdog-victim.txt" "$out/watchdog-spin.txt" "$limit" "$spin_rc" "$victim_rc" "$gone" \
	"$logged" "$desc" "$dev" "$min_ratio" <<'EOT'
import json, sys, time
victim, spin, limit, spin_rc, victim_rc, gone, logged, desc, dev, min_ratio = sys.argv[1:]
def kv(path):
    return dict(l.split("=", 1) for l in open(path).read().splitlines() if "=" in l and " " not in l.split("=", 1)[0])
b, a = kv(victim), kv(spin)
num = lambda d, k: float(d[k]) if k in d else None
phase = lambda p: {"kernels_per_s": num(b, p + "_kernels_per_s"), "copy_gbps": num(b, p + "_copy_gbps")}
alone, during, after = phase("alone"), phase("during"), phase("after")
ratio = {k: (after[k] / alone[k] if alone[k] and after[k] is not None else None) for k in alone}
took = num(a, "timeout_after_ms")
ok = (spin_rc == "0" and a.get("spin_status") == "cudaErrorLaunchTimeout" and took is not None
      and took <= int(limit) + 2000 and victim_rc == "0" and gone == "true" and int(logged) >= 1
      and all(r is not None and r >= float(min_ratio) for r in ratio.values()))
res = {"device": desc, "mearasd_device": dev, "limit_ms": int(limit), "timeout_after_ms": took,
       "spin_status": a.get("spin_status"), "spinning_worker_exited": gone == "true",
       "log_line": int(logged) >= 1, "victim": {"alone": alone, "during_spin": during, "after": after},
       "after_over_alone": ratio, "min_ratio": float(min_ratio), "ok": ok, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
json.dump(res, open("experiments/results/watchdog.json", "w"), indent=2)
open("experiments/results/watchdog.json", "a").write("\n")
f = lambda x, p=0: "?" if x is None else f"{x:.{p}f}"
print(f"watchdog: {'ok' if ok else 'FAILED'}: spinning tenant got {a.get('spin_status')} after "
      f"{f(took)} ms (limit {limit} ms); other tenant kernels/s alone {f(alone['kernels_per_s'])}, "
      f"during {f(during['kernels_per_s'])}, after {f(after['kernels_per_s'])}; copy GB/s "
      f"{f(alone['copy_gbps'], 1)} / {f(during['copy_gbps'], 1)} / {f(after['copy_gbps'], 1)}")
sys.exit(0 if ok else 1)
EOT
