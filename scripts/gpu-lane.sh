#!/usr/bin/env bash
# The GPU lane, in one call (make gpu-test): on a machine with an NVIDIA GPU,
# runs the CUDA program suite natively and through mearas (local vGPUs) and
# compares outputs, then the microbenchmarks against native, a remote vGPU
# (two mearasd in two network namespaces joined by veth, scripts/gpu-remote.sh)
# and the batch-size sweep (scripts/gpu-batch.sh), and prints a short table
# last. Logs: build/gpu-lane (GPU_LANE_WORK); results: experiments/results
# (microbench.json, remote.json, batch.json, batch-size.png, watchdog.json: the
# GPU time limit, scripts/gpu-watchdog.sh; drvapi.json and drvapi-programs.json:
# NVIDIA's static runtime over mearas's libcuda.so.1, scripts/gpu-drvapi.sh;
# frameworks.json and frameworks.png: PyTorch, CuPy and JAX,
# experiments/frameworks/suite.py, about 8 minutes more, and PyTorch in a VM
# guest (guest_torch) where a bundle is at build-vm/vmgpu.tar.gz or
# GPU_LANE_VM_BUNDLE (tests/vm-cuda/gpu-bundle.sh, made on a machine with QEMU),
# else that record says not run; with that bundle also the program suite in
# the VM guest, tests/vm-cuda/gpu-suite.sh, about 5 minutes (guest.json, the
# "guest" records of drvapi-programs.json). GPU_LANE_FRAMEWORKS=0 and
# GPU_LANE_VM=0 leave those two out, as for the device tool's 10-minute calls,
# where `make gpu-frameworks` and gpu-suite.sh run them in calls of their own.
# GPU_LANE_STEPS=a,b,... runs only those steps (the rest say "not run" in the
# table and do not count), e.g. to run one step again after a fix:
#   suite isolation watchdog lifetimes assembly smi micro drvapi remote vm
#   batch frameworks runtime-choice
# remote takes the native suite's outputs, a native microbenchmark run and
# drvapi's native runs, so it brings suite, micro and drvapi with it. The default is every step.
# Where OUT is set
# (the device tool's folder, which brings back at most 8 files), only these go
# there: table.txt, gpu-lane.tar.gz (all logs and results), and the
# results; without OUT they go to the logs folder too.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
all_steps="suite isolation watchdog lifetimes assembly smi micro drvapi remote vm batch frameworks runtime-choice"
steps=" ${GPU_LANE_STEPS:-$all_steps} "
steps=${steps//,/ }
for s in $steps; do
	[[ " $all_steps " == *" $s "* ]] || { echo "gpu-lane: no step '$s' (GPU_LANE_STEPS; steps: $all_steps)" >&2; exit 2; }
done
# remote compares with the native suite's outputs, a native microbenchmark run
# and the native runs of the static-runtime and driver-API builds (drvapi's);
# without drvapi its static-runtime and driver-API suites would not run and
# would count as failed
step() { [[ "$steps" == *" $1 "* ]]; }
if step remote; then
	step suite || steps="$steps suite "
	step micro || steps="$steps micro "
	step drvapi || steps="$steps drvapi "
fi
not_run="not run (GPU_LANE_STEPS)"
only=
[ -n "${GPU_LANE_STEPS:-}" ] && only=" (GPU_LANE_STEPS: only $(echo $steps))"
out=${GPU_LANE_WORK:-$top/build/gpu-lane}
pack=${OUT:-$out}
mkdir -p "$out" "$pack"
# results of an earlier run (or the committed ones) must not pass for this
# run's: only files newer than this stamp are taken
rm -f "$out"/{microbench,remote,batch,watchdog,drvapi,drvapi-programs,frameworks,runtime-choice}.json "$out"/frameworks.png "$out"/batch.csv "$out"/batch-size.png "$out"/table.txt
touch "$out/.start"
failed_steps=()
fresh() { [ -f "$1" ] && [ "$1" -nt "$out/.start" ] && cp "$1" "$out/"; }
sock=/tmp/mearas-gpu-lane.$$.sock
export MEARAS_DATA_MB=${MEARAS_DATA_MB:-1024}
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "gpu-lane: device '${device:-none}' driver ${driver:-?}; steps:$steps"

ctl=/tmp/mearas-gpu-lane-ctl.$$.sock
MEARAS_SOCKET=$sock build/bin/mearasd --device=cuda --max-data-mb 4096 --control=$ctl >"$out/mearasd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -f $sock $ctl' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done

suite_rc=0
if step suite; then
	echo "== program suite: native"
	tests/cuda/run-suite.sh --run "$out/native" --set all --timeout 120 >"$out/suite-native.txt" 2>&1
	echo "== program suite: mearas"
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= tests/cuda/run-suite.sh --run "$out/mearas" --set all --timeout 120 \
		>"$out/suite-mearas.txt" 2>&1
	tests/cuda/run-suite.sh --compare "$out/native" "$out/mearas" >"$out/suite-compare.txt" 2>&1
	suite_rc=$?
else
	echo "$not_run" >"$out/suite-compare.txt"
fi

isolation=$not_run
if step isolation; then
	echo "== fault isolation: a client faulting on the GPU next to a healthy one"
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= build/tests/gpu/isolation good 4 >"$out/isolation-good.txt" 2>&1 &
	good=$!
	sleep 1
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= build/tests/gpu/isolation bad >"$out/isolation-bad.txt" 2>&1
	bad_rc=$?
	build/tests/gpu/isolation bad >"$out/isolation-bad-native.txt" 2>&1
	wait $good
	good_rc=$?
	if [ $bad_rc -eq 0 ] && [ $good_rc -eq 0 ] && diff -q "$out/isolation-bad.txt" "$out/isolation-bad-native.txt" >/dev/null; then
		isolation="ok (faulting client: $(cat "$out/isolation-bad.txt" | sed 's/bad client: //'), as native; healthy client unaffected)"
	else
		isolation="FAILED (bad rc $bad_rc, good rc $good_rc; see isolation-*.txt)"
		suite_rc=1
	fi
fi

watchdog=$not_run
if step watchdog; then
	echo "== GPU time limit: a tenant's spinning kernel next to a healthy tenant (scripts/gpu-watchdog.sh)"
	watchdog=$(scripts/gpu-watchdog.sh "$out" "${device:-unknown} (driver ${driver:-?})" 2>&1 | tail -1)
	case "$watchdog" in "watchdog: ok"*) ;; *) suite_rc=1 ;; esac
	fresh experiments/results/watchdog.json
fi
lifetimes=$not_run
if step lifetimes; then
	echo "== record lifetimes: graph host functions relaunched; waits on events destroyed, or reset, meanwhile"
	timeout 120 tests/cuda/build/graph_host_func >"$out/graph-host-func-native.txt" 2>&1
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= timeout 120 tests/cuda/build/graph_host_func \
		>"$out/graph-host-func.txt" 2>&1
	graph_rc=$?
	if LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= timeout 120 build/tests/gpu/event_destroy_wait \
		>"$out/event-destroy-wait.txt" 2>&1 && grep -q '^PASS' "$out/event-destroy-wait.txt" &&
		[ $graph_rc -eq 0 ] && diff -q "$out/graph-host-func.txt" "$out/graph-host-func-native.txt" >/dev/null; then
		lifetimes="ok (graph_host_func as native; $(grep -v PASS "$out/event-destroy-wait.txt" | tr '\n' ';'))"
	else
		lifetimes="FAILED (see graph-host-func*.txt, event-destroy-wait.txt)"
		suite_rc=1
	fi
fi

assembly="assembly: $not_run"
if step assembly; then
	echo "== assembly manager: mearas run --vgpus 2"
	assembly=$(scripts/gpu-assembly.sh "$sock" "$ctl" "$out" 2>&1 | tail -1)
	case "$assembly" in "assembly: ok"*) ;; *) suite_rc=1 ;; esac
fi

smi=$not_run
if ! step smi; then
	:
elif echo "== nvidia-smi: -L natively and over mearas's libnvidia-ml.so.1 (stdout compared), the default view over it" &&
	command -v nvidia-smi >/dev/null; then
	nvidia-smi -L >"$out/smi-native.txt" 2>&1
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= timeout 60 nvidia-smi -L \
		>"$out/smi-mearas.txt" 2>"$out/smi-mearas.err"
	smi_rc=$?
	# the default view too: it must list the device (what mearas does not answer is N/A there;
	# nvidia-smi then exits 3, which says some query was not answered, as on a real vGPU)
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= timeout 60 nvidia-smi \
		>"$out/smi-mearas-view.txt" 2>>"$out/smi-mearas.err"
	view_rc=$?
	name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
	if [ $smi_rc -eq 0 ] && [ -s "$out/smi-mearas.txt" ] && diff -q "$out/smi-native.txt" "$out/smi-mearas.txt" >/dev/null &&
		{ [ $view_rc -eq 0 ] || [ $view_rc -eq 3 ]; } && grep -qF "$name" "$out/smi-mearas-view.txt"; then
		smi="ok ($(head -1 "$out/smi-mearas.txt"), as native; the default view lists it, exit $view_rc)"
	else
		smi="FAILED (-L rc $smi_rc, view rc $view_rc; see smi-*.txt)"
		suite_rc=1
	fi
else
	smi="skipped: no nvidia-smi on this machine"
fi

idle_cpu=
if step micro; then
	echo "== microbenchmarks (native and mearas alternate, 3 runs each)"
	for i in 1 2 3; do
		build/experiments/microbench >"$out/micro-native-$i.txt" 2>&1
		LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= build/experiments/microbench >"$out/micro-mearas-$i.txt" 2>&1
	done

	# CPU used by mearasd (daemon and workers) while a client sits idle
	LD_LIBRARY_PATH=$top/build/lib MEARAS_SOCKET=$sock CUDA_VISIBLE_DEVICES= build/experiments/microbench --idle 5 >"$out/idle.txt" 2>&1 &
	idle_client=$!
	for _ in $(seq 100); do grep -q "IDLE start" "$out/idle.txt" 2>/dev/null && break; sleep 0.1; done
	sleep 1
	ticks() {
		local t=0 p
		for p in $daemon $(pgrep -P $daemon); do
			t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
		done
		echo $t
	}
	t0=$(ticks); s0=$(date +%s.%N)
	sleep 3
	t1=$(ticks); s1=$(date +%s.%N)
	wait $idle_client
	hz=$(getconf CLK_TCK)
	idle_cpu=$(python3 -c "print(round(100*($t1-$t0)/$hz/($s1-$s0), 3))")
fi

if step drvapi; then
	echo "== driver-API front end: static-runtime programs and microbenchmarks (scripts/gpu-drvapi.sh)"
	scripts/gpu-drvapi.sh "$out" "$sock" "${device:-unknown} (driver ${driver:-?})" >"$out/drvapi-table.txt" 2>&1
	tail -1 "$out/drvapi-table.txt" | grep -q '^drvapi: ok' || failed_steps+=("driver-API front end")
	fresh experiments/results/drvapi.json
else
	echo "$not_run" >"$out/drvapi-table.txt"
fi

if step remote; then
	echo "== remote vGPU (second mearasd, in its own network namespace)"
	remote=$(scripts/gpu-remote.sh "$out" "$out/native" "$out/micro-native-1.txt" "${device:-unknown} (driver ${driver:-?})" 2>&1)
	echo "$remote" >"$out/remote-table.txt"
	# the suite through the remote vGPU, and the remote targets of the encrypted
	# (default) run: its table's first "N passed, N failed" line
	grep -Eq '^remote suite: [0-9]+ passed, 0 failed' "$out/remote-table.txt" || failed_steps+=("remote suite")
	# the same programs with the link shaped (tbf): passed, or skipped with its reason
	grep -Eq '^remote shaped suite( \(.*\))?: ([0-9]+ passed, 0 failed|skipped: )' "$out/remote-table.txt" ||
		failed_steps+=("remote shaped suite")
	grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/remote-table.txt" | head -1 | grep -q ' 0 failed' ||
		failed_steps+=("remote targets")
	fresh experiments/results/remote.json
	fresh experiments/results/remote-encryption-off.json

	grep -Eq '^remote static-runtime suite: [0-9]+ passed, 0 failed' "$out/remote-table.txt" ||
		failed_steps+=("remote static-runtime suite")
	grep -Eq '^remote driver-API suite: [0-9]+ passed, 0 failed' "$out/remote-table.txt" ||
		failed_steps+=("remote driver-API suite")
	grep -q '^remote nvidia-smi -L: as native' "$out/remote-table.txt" || failed_steps+=("remote nvidia-smi -L")
else
	echo "$not_run" >"$out/remote-table.txt"
fi
# every program comparison of the lane, one record per program, build and place
# (of a run that made them all)
: >"$out/drvapi-programs.txt"
if step suite && step drvapi && step remote; then
	python3 scripts/drvapi_programs.py --device "${device:-unknown} (driver ${driver:-?})" \
		--out experiments/results/drvapi-programs.json "shared:local:$out/suite-compare.txt" \
		"static:local:$out/static-suite-compare.txt" "shared:remote:$out/suite-remote-compare.txt" \
		"static:remote:$out/static-suite-remote-compare.txt" "driver:local:$out/driver-suite-compare.txt" \
		"driver:remote:$out/driver-suite-remote-compare.txt" --merge >"$out/drvapi-programs.txt" 2>&1 ||
		failed_steps+=("driver-API program records")
	fresh experiments/results/drvapi-programs.json
fi

# the VM guest (place "guest" in drvapi-programs.json): every program, its
# static build, the library programs and the driver-API builds in a TCG guest
# served by mearasd --vm (tests/vm-cuda/gpu-suite.sh, about 5 minutes)
vm_bundle=${GPU_LANE_VM_BUNDLE:-build-vm/vmgpu.tar.gz}
if ! step vm; then
	vm_guest=$not_run
elif [ "${GPU_LANE_VM:-1}" = 1 ] && [ -f "$vm_bundle" ]; then
	echo "== VM guest (tests/vm-cuda/gpu-suite.sh $vm_bundle)"
	tests/vm-cuda/gpu-suite.sh "$vm_bundle" "$out/vm-guest" >/dev/null 2>&1 || failed_steps+=("VM guest suite")
	fresh experiments/results/guest.json
	fresh experiments/results/drvapi-programs.json
	vm_guest="$(tail -n 1 "$out/vm-guest/gpu-suite.txt" 2>/dev/null) ($out/vm-guest/gpu-suite.txt)"
else
	vm_guest="not run ($([ "${GPU_LANE_VM:-1}" = 1 ] && echo "no bundle at $vm_bundle: tests/vm-cuda/gpu-bundle.sh" ||
		echo "GPU_LANE_VM=0: tests/vm-cuda/gpu-suite.sh runs it alone"))"
fi

if step batch; then
	echo "== batch-size sweep (one remote vGPU, mearasd --link-batch 1..1024)"
	scripts/gpu-batch.sh "$out" cuda >"$out/batch-table.txt" 2>&1 || failed_steps+=("batch sweep")
else
	echo "$not_run" >"$out/batch-table.txt"
fi

if ! step frameworks; then
	echo "frameworks: $not_run" >"$out/frameworks-table.txt"
elif [ "${GPU_LANE_FRAMEWORKS:-1}" = 1 ]; then
	echo "== frameworks: PyTorch, CuPy and JAX natively and through mearas (experiments/frameworks/suite.py)"
	bundle=$vm_bundle
	fw_args=()
	[ -f "$bundle" ] && fw_args=(--vm-bundle "$bundle")
	# its own mearasd nodes; OUT emptied: the lane packs its results itself
	OUT='' python3 experiments/frameworks/suite.py --work "$out/frameworks" "${fw_args[@]}" \
		>"$out/frameworks-table.txt" 2>&1 || failed_steps+=("frameworks")
	fresh experiments/results/frameworks.json
	fresh experiments/results/frameworks.png
else
	echo "frameworks: not run (GPU_LANE_FRAMEWORKS=0; make gpu-frameworks runs it alone)" \
		>"$out/frameworks-table.txt"
fi

if step micro; then
	python3 experiments/microbench/compare.py --native "$out"/micro-native-?.txt --mearas "$out"/micro-mearas-?.txt \
		--idle-cpu "$idle_cpu" --device "${device:-unknown} (driver ${driver:-?})" \
		--out experiments/results/microbench.json >"$out/micro-table.txt" 2>&1 || failed_steps+=("microbenchmarks")
	tail -1 "$out/micro-table.txt" | grep -Eq '^[0-9]+ passed, 0 failed' || failed_steps+=("microbenchmark targets")
	fresh experiments/results/microbench.json
else
	echo "$not_run" >"$out/micro-table.txt"
fi

if step runtime-choice; then
	echo "== runtime choice: ours or NVIDIA's libcudart.so.13 over our libcuda.so.1 (the same shared-runtime binary)"
	scripts/gpu-runtime-choice.sh "$out" "$sock" "${device:-unknown} (driver ${driver:-?})" >"$out/runtime-choice.txt" 2>&1
	grep -q '^runtime choice: ours better on' "$out/runtime-choice.txt" || failed_steps+=("runtime choice")
	fresh experiments/results/runtime-choice.json
else
	echo "$not_run" >"$out/runtime-choice.txt"
fi

table_body() {
	echo
	echo "== program suite (native vs mearas, outputs compared)"
	cat "$out/suite-compare.txt"
	echo
	echo "== fault isolation: $isolation"
	echo "== GPU time limit: $watchdog"
	echo "== record lifetimes: $lifetimes"
	echo "== $assembly"
	echo "== nvidia-smi -L: $smi"
	echo "== VM guest: $vm_guest"
	echo
	echo "== remote vGPU (issue 4 targets)"
	cat "$out/remote-table.txt"
	echo
	echo "== batch-size sweep (launch-heavy BlackScholes, one remote vGPU; batch-size.png)"
	cat "$out/batch-table.txt"
	echo
	echo "== microbenchmarks: ${device:-unknown}"
	cat "$out/micro-table.txt"
	echo
	echo "== runtime choice (the same -cudart shared microbench: ours, and NVIDIA's runtime over our libcuda.so.1)"
	cat "$out/runtime-choice.txt"
	echo
	echo "== driver-API front end (NVIDIA's static runtime over mearas's libcuda.so.1)"
	grep -v '^==' "$out/drvapi-table.txt"
	cat "$out/drvapi-programs.txt"
	echo
	# the suite's table from its header line (device, time taken); without
	# one (not run, or it stopped early) the end of what it printed
	sed -n '/^== frameworks:/,$p' "$out/frameworks-table.txt" | grep . ||
		{ echo "== frameworks (experiments/frameworks/suite.py)"; tail -20 "$out/frameworks-table.txt"; }
}
[ $suite_rc -eq 0 ] || failed_steps+=("program suite, isolation, watchdog, lifetimes, assembly or nvidia-smi (see above)")
table() {
	table_body
	echo
	if [ ${#failed_steps[@]} -eq 0 ]; then
		echo "gpu-lane: every step passed$only"
	else
		failed=$(printf '%s; ' "${failed_steps[@]}")
		echo "gpu-lane: FAILED steps: ${failed%; }$only"
	fi
}
table | tee "$out/table.txt"

# one tarball of the logs folder (results included), the results beside it
tmp=$(mktemp /tmp/gpu-lane.XXXXXX)
if tar czf "$tmp" -C "$(dirname "$out")" --exclude=gpu-lane.tar.gz "$(basename "$out")" && chmod 644 "$tmp"; then
	mv "$tmp" "$pack/gpu-lane.tar.gz"
else
	rm -f "$tmp"
fi
if [ "$(realpath "$pack")" != "$(realpath "$out")" ]; then
	for f in microbench.json remote.json drvapi.json drvapi-programs.json watchdog.json frameworks.json runtime-choice.json table.txt; do
		[ -f "$out/$f" ] && cp "$out/$f" "$pack/"
	done
fi
[ ${#failed_steps[@]} -eq 0 ]
