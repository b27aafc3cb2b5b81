#!/usr/bin/env bash
# The GPU machine's gpu-suite.sh, run here against mearasd --device=sim from
# a fresh gpu-bundle.sh bundle. Kernels do not run in the sim, so the suite
# fails on both sides; this checks the orchestration: every program ran in
# the guest and its output came back byte-exact (compared with the same
# programs through mearas' sim on this host's process transport), the
# microbenchmark ran natively and in the guest, guest.json has its records
# and the host time per call, and OUT holds its 8 files.
# Prints PASS/FAIL lines, then "N passed, N failed". Usage: suite-test.sh (after make -C tests/vm-cuda all)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/mst.XXXXXX)
passed=0 failed=0 mpid=""
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; failed=$((failed + 1)); }
check() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }
trap '[ -n "$mpid" ] && kill $mpid 2>/dev/null' EXIT
programs=$(sed -n '/^programs=(/,/)/p' "$repo/tests/cuda/run-suite.sh" | tr -d '()' | sed 's/programs=//' | tr -s ' \t\n' ' ')

echo "== gpu-bundle.sh"
"$here/gpu-bundle.sh" "$work/bundle" > "$work/bundle.txt" 2>&1
check bundle/built "[ -s '$work/bundle/vmgpu.tar.gz' ]" "$(tail -n 2 "$work/bundle.txt")"
size=$(stat -c %s "$work/bundle/vmgpu.tar.gz" 2>/dev/null || echo 0)
echo "  bundle: $((size >> 20)) MiB"
check bundle/under-55-mib "[ $size -lt $((55 << 20)) ]"
bundled=$(tar -tzf "$work/bundle/vmgpu.tar.gz" | sed -n 's|^\./suite/||p')
absent=""
for p in $programs microbench; do grep -qx "$p" <<<"$bundled" || absent="$absent $p"; done
check bundle/holds-suite-and-microbench "[ -z '$absent' ]" "missing:$absent"

echo "== gpu-suite.sh --device=sim (one TCG boot)"
out=$work/out
t0=$(date +%s)
"$here/gpu-suite.sh" "$work/bundle/vmgpu.tar.gz" "$out" --device=sim --smp=2 --native-runs=1 > "$work/suite.txt" 2>&1
src=$?
echo "  gpu-suite.sh: exit $src after $(( $(date +%s) - t0 )) s (non-zero expected: the sim runs no kernels)"
grep -E '^== times|^  MEARAS-EXIT' "$work/suite.txt" | sed 's/^/  /'
check suite/runs-to-the-end "tail -n 1 '$work/suite.txt' | grep -q '^gpu-suite: '"
check suite/table-printed-last "tail -n 16 '$work/suite.txt' | grep -q '^host_us_per_sync_call'"
for f in gpu-suite.txt guest.json suite-compare.txt suite-static-compare.txt microbench.txt mearasd.log \
	guest-serial.log suite-outputs.tar.gz; do
	check "out/$f" "[ -s '$out/$f' ]"
done
check out/eight-files-at-top "[ \$(find '$out' -mindepth 1 | wc -l) -eq 8 ]"
check guest/exit-0-kernel-clean "tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-EXIT 0' &&
	tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-KERNEL-CLEAN'"

mkdir -p "$work/res"
tar -C "$work/res" -xzf "$out/suite-outputs.tar.gz"
missing=""
for p in $programs $(printf 'static-%s ' $programs) warmup microbench-sync microbench-1 microbench-2; do
	for e in out err rc; do [ -f "$work/res/guest/$p.$e" ] || missing="$missing $p.$e"; done
	[ -s "$work/res/guest/$p.out" ] || missing="$missing $p.out(empty)"
done
check guest/every-run-captured "[ -z '$missing' ]" "missing:$missing"
for p in $programs; do [ -f "$work/res/native/$p.rc" ] || missing="$missing native/$p"; done
check native/every-program-ran "[ -z '$missing' ]" "missing:$missing"
nprog=$(wc -w <<<"$programs")
check compare/every-program-compared "[ \$(grep -cE '^[a-z_]+ +(PASS|FAIL|TIMEOUT|MISSING)' '$out/suite-compare.txt') -eq $nprog ] &&
	tail -n 1 '$out/suite-compare.txt' | grep -qE '^[0-9]+ passed, [0-9]+ failed$'"

echo "== the guest's captured outputs vs the same programs through mearas (sim) on this host"
"$repo/build/bin/mearasd" --device=sim --socket="$work/m.sock" --control="$work/c.sock" > "$work/mearasd-host.log" 2>&1 &
mpid=$!
for _ in $(seq 50); do [ -S "$work/m.sock" ] && break; sleep 0.1; done
LD_LIBRARY_PATH=$repo/build/lib MEARAS_SOCKET=$work/m.sock "$repo/tests/cuda/run-suite.sh" --run "$work/hostsim" \
	--build "$repo/tests/cuda/build" --timeout 60 > "$work/hostsim.txt" 2>&1
kill "$mpid"; mpid=""
differ=""
# not stream_callbacks: the sim posts a stream's completion without waiting
# for its host functions (exec.c), so the count it prints races under the sim
for p in ${programs/stream_callbacks/}; do
	cmp -s "$work/hostsim/$p.out" "$work/res/guest/$p.out" || differ="$differ $p"
	[ "$(cat "$work/hostsim/$p.rc")" = "$(cat "$work/res/guest/$p.rc")" ] || differ="$differ $p(rc)"
done
check capture/byte-identical-to-host-sim "[ -z '$differ' ]" "differ:$differ"

echo "== guest.json"
python3 - "$out/guest.json" <<'EOF' > "$work/json.txt" 2>&1
import json, sys
recs = json.load(open(sys.argv[1]))
names = [r["metric"] for r in recs]
want = ["sync_roundtrip_us", "sync_roundtrip_mean_us", "launch_rate", "h2d_pinned_gbps", "d2h_pinned_gbps",
        "h2d_pageable_gbps", "d2h_pageable_gbps", "host_us_per_sync_call"]
assert names == want, f"metrics {names}"
for r in recs:
    for k in ("metric", "unit", "native", "mearas", "ratio", "device", "date", "note"):
        assert k in r, f"{r['metric']}: no {k}"
    assert isinstance(r["mearas"], float) and r["mearas"] > 0, f"{r['metric']}: guest value {r['mearas']}"
    assert r["note"], f"{r['metric']}: empty note"
assert "TCG" in recs[0]["note"]
host = recs[-1]
assert host["sync_calls"] >= 3000, f"sync calls {host['sync_calls']}"
print(f"guest sync round trip {recs[1]['mearas']:.2f} us (mean), host {host['mearas']:.2f} us per call "
      f"over {host['sync_calls']} calls")
EOF
jrc=$?
sed 's/^/  /' "$work/json.txt"
check guest-json/records-and-fields "[ $jrc = 0 ]"
check host-time/per-call-below-guest-round-trip "python3 -c \"import json,sys; r=json.load(open('$out/guest.json')); \
sys.exit(0 if r[-1]['mearas'] < r[1]['mearas'] else 1)\""

if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "kept $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
