#!/usr/bin/env bash
# The GPU machine's gpu-suite.sh, run here against mearasd --device=sim from
# a fresh gpu-bundle.sh bundle. Kernels do not run in the sim, so the suite
# fails on both sides; this checks the orchestration: every program ran in
# the guest and its output came back byte-exact (compared with the same
# programs through mearas' sim on this host's process transport), the
# microbenchmark ran natively and in the guest, guest.json has its records
# and the host time per call, and OUT holds its 8 files; the second boot's
# programs (the library programs and driver-API builds from tests/cuda/build
# over the 9p share) came back byte-exact too. Then the same with
# --remote (a VM on an assembly of 1 local + 1 remote vGPU, a second mearasd
# as the remote node): every program ran on each vGPU, each guest process
# used only the one it was shown (mearasd's slot reports), the remote node
# served the second round, and both compare tables and guest.json's local
# and remote records are there.
# Prints PASS/FAIL lines, then "N passed, N failed". Usage: suite-test.sh (after make -C tests/vm-cuda all)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/mst.XXXXXX)
passed=0 failed=0 mpid=""
. "$(dirname "$0")/lib.sh"
trap '[ -n "$mpid" ] && kill $mpid 2>/dev/null' EXIT
programs=$("$repo/tests/cuda/run-suite.sh" --list core)
libraries=$("$repo/tests/cuda/run-suite.sh" --list libraries)
drivers=$("$repo/tests/cuda/run-suite.sh" --list driver)
nprog=$(wc -w <<<"$programs") nlib=$(wc -w <<<"$libraries") ndrv=$(wc -w <<<"$drivers")

echo "== gpu-bundle.sh"
"$here/gpu-bundle.sh" "$work/bundle" > "$work/bundle.txt" 2>&1
check bundle/built "[ -s '$work/bundle/vmgpu.tar.gz' ]" "$(tail -n 2 "$work/bundle.txt")"
size=$(stat -c %s "$work/bundle/vmgpu.tar.gz" 2>/dev/null || echo 0)
echo "  bundle: $((size >> 20)) MiB"
check bundle/under-55-mib "[ $size -lt $((55 << 20)) ]"
listing=$(tar -tzf "$work/bundle/vmgpu.tar.gz")
bundled=$(sed -n 's|^\./suite/||p' <<<"$listing")
absent=""
for p in $programs microbench; do grep -qx "$p" <<<"$bundled" || absent="$absent $p"; done
check bundle/holds-suite-and-microbench "[ -z '$absent' ]" "missing:$absent"
absent=""
for p in $libraries $(printf 'static/%s ' $libraries) $(printf 'driver/%s ' $drivers); do
	grep -qx "./share-programs/$p" <<<"$listing" || absent="$absent $p"
done
check bundle/holds-share-programs "[ -z '$absent' ]" "missing:$absent"
check bundle/holds-control-client "grep -qx './am/mearas_am/generated/control_pb2.py' <<<\"\$listing\""

# suite NAME [gpu-suite options]: one gpu-suite.sh run into $work/NAME; sets out, res
suite() {
	local name=$1 t0 src
	shift
	out=$work/$name res=$work/$name-res
	t0=$(date +%s)
	"$here/gpu-suite.sh" "$work/bundle/vmgpu.tar.gz" "$out" --device=sim --smp=2 --native-runs=1 "$@" \
		> "$work/$name.txt" 2>&1
	src=$?
	echo "  gpu-suite.sh $*: exit $src after $(( $(date +%s) - t0 )) s (non-zero expected: the sim runs no kernels)"
	grep -E '^== times|^  MEARAS-EXIT|^  AttachVm' "$work/$name.txt" | sed 's/^/  /'
	mkdir -p "$res"
	tar -C "$res" -xzf "$out/suite-outputs.tar.gz" 2>/dev/null
}
# every_run_captured PREFIX...: each run's stdout, stderr and exit status came back
every_run_captured() {
	local x p e missing=""
	for x in "$@"; do
		for p in $programs $(printf 'static-%s ' $programs) warmup microbench-1 microbench-2; do
			for e in out err rc; do [ -f "$res/guest/$x$p.$e" ] || missing="$missing $x$p.$e"; done
			[ -s "$res/guest/$x$p.out" ] || missing="$missing $x$p.out(empty)"
		done
	done
	for e in out err rc; do [ -f "$res/guest/microbench-sync.$e" ] || missing="$missing microbench-sync.$e"; done
	[ -z "$missing" ] || { echo "missing:$missing"; return 1; }
}
# every_host_run_captured PREFIX: the second boot's runs (library programs,
# both builds, and driver-API builds, from this machine's tests/cuda/build
# over the 9p share) came back
every_host_run_captured() {
	local p e missing=""
	for p in $libraries $(printf 'static-%s ' $libraries) $(printf 'driver-%s ' $drivers); do
		for e in out err rc; do [ -f "$res/guest/$1$p.$e" ] || missing="$missing $1$p.$e"; done
	done
	[ -z "$missing" ] || { echo "missing:$missing"; return 1; }
}
# every_program_compared N TABLE...: each TABLE compares N programs
every_program_compared() {
	local t n=$1
	shift
	for t in "$@"; do
		[ "$(grep -cE '^[a-z_]+ +(PASS|FAIL|TIMEOUT|MISSING)' "$t")" -eq "$n" ] &&
			tail -n 1 "$t" | grep -qE '^[0-9]+ passed, [0-9]+ failed$' || { echo "$t"; return 1; }
	done
}
# byte_identical PREFIX [NAME...]: the guest's outputs of the programs (run
# PREFIXNAME; default: the suite programs) are those of the same programs
# through mearas (sim) on this host; not stream_callbacks: the sim posts a
# stream's completion without waiting for its host functions (exec.c), so the
# count it prints races under the sim
byte_identical() {
	local x=$1 p differ=""
	shift
	for p in ${@:-${programs/stream_callbacks/}}; do
		cmp -s "$work/hostsim/$p.out" "$res/guest/$x$p.out" || differ="$differ $x$p"
		[ "$(cat "$work/hostsim/$p.rc")" = "$(cat "$res/guest/$x$p.rc" 2>/dev/null)" ] || differ="$differ $x$p(rc)"
	done
	[ -z "$differ" ] || { echo "differ:$differ"; return 1; }
}
# guest_json METRIC_SETS: guest.json's records (METRIC_SETS "local" or "local remote")
guest_json() {
	python3 - "$out/guest.json" "$@" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
sets = sys.argv[2:]
want = ["sync_roundtrip_us", "sync_roundtrip_mean_us", "launch_rate", "h2d_pinned_gbps", "d2h_pinned_gbps",
        "h2d_pageable_gbps", "d2h_pageable_gbps"]
got = [(r["metric"], r["vgpu"]) for r in recs]
assert got == [(m, v) for v in sets for m in want] + [("host_us_per_sync_call", "local")], f"records {got}"
for r in recs:
    for k in ("metric", "unit", "native", "mearas", "ratio", "device", "date", "note", "vgpu"):
        assert k in r, f"{r['metric']}: no {k}"
    assert isinstance(r["mearas"], float) and r["mearas"] > 0, f"{r['metric']}: guest value {r['mearas']}"
    assert r["note"], f"{r['metric']}: empty note"
assert "TCG" in recs[0]["note"]
if "remote" in sets:
    assert "node-b" in recs[len(want)]["note"], recs[len(want)]["note"]
host = recs[-1]
assert host["sync_calls"] >= 3000, f"sync calls {host['sync_calls']}"
print(f"guest sync round trip {recs[1]['mearas']:.2f} us (mean), host {host['mearas']:.2f} us per call "
      f"over {host['sync_calls']} calls" + (f"; remote vGPU {recs[len(want) + 1]['mearas']:.2f} us"
                                           if "remote" in sets else ""))
EOF
}

echo "== gpu-suite.sh --device=sim (one TCG boot)"
suite out
check suite/runs-to-the-end "tail -n 1 '$work/out.txt' | grep -q '^gpu-suite: '"
check suite/table-printed-last "tail -n 16 '$work/out.txt' | grep -q '^host_us_per_sync_call'"
for f in gpu-suite.txt guest.json suite-compare.txt suite-static-compare.txt microbench.txt mearasd.log \
	guest-serial.log suite-outputs.tar.gz; do
	check "out/$f" "[ -s '$out/$f' ]"
done
check out/eight-files-at-top "[ \$(find '$out' -mindepth 1 | wc -l) -eq 8 ]"
check guest/exit-0-kernel-clean "tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-EXIT 0' &&
	tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-KERNEL-CLEAN'"
check guest/every-run-captured "every_run_captured ''"
check guest/second-boot-every-run-captured "every_host_run_captured ''"
missing=""
for p in $programs; do [ -f "$res/native/$p.rc" ] || missing="$missing native/$p"; done
check native/every-program-ran "[ -z '$missing' ]" "missing:$missing"
check compare/every-program-and-library-compared "every_program_compared $((nprog + nlib)) '$out/suite-compare.txt' \
	'$out/suite-static-compare.txt'"
check compare/every-driver-build-compared "every_program_compared $ndrv '$res/suite-driver-compare.txt'"

echo "== the guest's captured outputs vs the same programs through mearas (sim) on this host"
"$repo/build/bin/mearasd" --device=sim --socket="$work/m.sock" --control="$work/c.sock" > "$work/mearasd-host.log" 2>&1 &
mpid=$!
for _ in $(seq 50); do [ -S "$work/m.sock" ] && break; sleep 0.1; done
LD_LIBRARY_PATH=$repo/build/lib MEARAS_SOCKET=$work/m.sock "$repo/tests/cuda/run-suite.sh" --run "$work/hostsim" \
	--build "$repo/tests/cuda/build" --set all --timeout 60 > "$work/hostsim.txt" 2>&1
LD_LIBRARY_PATH=$repo/build/lib MEARAS_SOCKET=$work/m.sock "$repo/tests/cuda/run-suite.sh" --run "$work/hostsim-driver" \
	--build "$repo/tests/cuda/build/driver" --set driver --timeout 60 > "$work/hostsim-driver.txt" 2>&1
for p in $drivers; do for e in out rc; do cp "$work/hostsim-driver/$p.$e" "$work/hostsim/driver-$p.$e"; done; done
kill "$mpid"; mpid=""
check capture/byte-identical-to-host-sim "byte_identical ''"
check capture/second-boot-byte-identical-to-host-sim "byte_identical '' $libraries $(printf 'driver-%s ' $drivers)"

echo "== guest.json"
check guest-json/records-and-fields "guest_json local | sed 's/^/  /'"
check host-time/per-call-below-guest-round-trip "python3 -c \"import json,sys; r=json.load(open('$out/guest.json')); \
sys.exit(0 if r[-1]['mearas'] < r[1]['mearas'] else 1)\""

echo "== gpu-suite.sh --remote --device=sim: an assembly of 1 local + 1 remote vGPU, each program on one"
suite remote --remote --quota-mb=2048
check remote/runs-to-the-end "tail -n 1 '$work/remote.txt' | grep -q '^gpu-suite: '"
check remote/vm-attached-with-two-vgpus "grep -q '^  AttachVm: 2 vGPUs per guest process' '$work/remote.txt'" \
	"$(grep -m1 'gpu-suite:' "$work/remote.txt")"
for f in gpu-suite.txt guest.json suite-compare-local.txt suite-compare-remote.txt microbench.txt mearasd.log \
	guest-serial.log suite-outputs.tar.gz; do
	check "remote/out/$f" "[ -s '$out/$f' ]"
done
check remote/out/eight-files-at-top "[ \$(find '$out' -mindepth 1 | wc -l) -eq 8 ]"
check remote/guest/exit-0-kernel-clean "tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-EXIT 0' &&
	tr -d '\r' < '$out/guest-serial.log' | grep -q '^MEARAS-KERNEL-CLEAN'"
check remote/guest/every-run-captured-on-each-vgpu "every_run_captured '' remote-"
check remote/guest/second-boot-on-the-remote-vgpu "every_host_run_captured remote-"
check remote/compare/every-program-compared-on-each-vgpu "every_program_compared $nprog '$out/suite-compare-local.txt' \
	'$res/suite-static-compare-local.txt' && every_program_compared $((nprog + nlib)) '$out/suite-compare-remote.txt' \
	'$res/suite-static-compare-remote.txt' && every_program_compared $ndrv '$res/suite-driver-compare-remote.txt'"
check remote/capture/local-vgpu-byte-identical-to-host-sim "byte_identical ''"
check remote/capture/remote-vgpu-byte-identical-to-host-sim "byte_identical remote-"
check remote/capture/second-boot-byte-identical-to-host-sim "byte_identical remote- $libraries $(printf 'driver-%s ' $drivers)"
# node-a's slot reports, by slot worker (one a guest process): "records on vGPU 0, on vGPU 1"
reports=$(python3 - "$out/mearasd.log" <<'EOF'
import re, sys
served: dict[str, dict[str, int]] = {}
for line in open(sys.argv[1]):
    m = re.search(r"mearasd\[(\d+)\].*VM guest slot \d vGPU ([01]): (\d+) records served", line)
    if m:
        served.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
for v in served.values():
    print(v.get("0", 0), v.get("1", 0))
EOF
)
both=$(awk '$1 > 0 && $2 > 0' <<<"$reports" | wc -l)
on0=$(awk '$1 > 0 && $2 == 0' <<<"$reports" | wc -l)
on1=$(awk '$1 == 0 && $2 > 0' <<<"$reports" | wc -l)
echo "  node-a: $(wc -l <<<"$reports") guest processes: $on0 used vGPU 0 only, $on1 vGPU 1 only, $both both"
# the first boot's 4 * nprog + 7 processes, the second boot's 2 * nlib + ndrv
check remote/each-process-used-one-vgpu "[ $both = 0 ] && [ \$(wc -l <<<'$reports') -eq $((4 * nprog + 7 + 2 * nlib + ndrv)) ]"
# each round: its programs and microbench runs (2 * nprog + 4 and + 3), less those that
# make no record (cluster_launch in both builds: the sim has no cluster launch)
check remote/each-round-on-its-vgpu "[ $on0 -ge $((2 * nprog)) ] && [ $on1 -ge $((2 * nprog)) ]"
check remote/node-b-served-the-remote-round "[ \$(grep -cE 'client pid [0-9]+ vGPU 0: [1-9][0-9]* records served' \
	'$res/mearasd-remote.log') -eq $on1 ]"
check remote/guest-json/local-and-remote-records "guest_json local remote | sed 's/^/  /'"

if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "kept $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
