#!/usr/bin/env bash
# On the GPU machine (no QEMU there; gpu-bundle.sh packs it), from the repo
# root, in one call: the tests/cuda program suite natively and inside a TCG
# guest served by `mearasd --vm` (outputs compared with run-suite.sh
# --compare), the microbenchmark natively and in the guest, and
# OUT_DIR/guest.json, copied to experiments/results/ with --device=cuda (guest
# vs native, plus the host time per synchronizing call from mearasd's VM
# worker). One QEMU boot runs everything of the guest image (guest/suite.sh);
# a second boot runs the programs too big for the image, tests/cuda's library
# programs (run-suite.sh's `libraries`, both builds) and its driver-API-only
# builds (`drivers`), the bundle's stripped copies (share-programs/, laid out
# as tests/cuda/build, or SUITE_BUILD) from this machine over a read-only
# virtio-9p share of / (guestpy.py), named NAME, static-NAME and
# driver-NAME; the libraries, CUDA's and cuDNN, are this machine's, so the
# guest's programs find them where the native ones do. With --device=cuda and
# without --remote, every comparison is recorded as place "guest" in
# experiments/results/drvapi-programs.json (scripts/drvapi_programs.py
# --merge; a copy goes into suite-outputs.tar.gz).
#
#   gpu-suite.sh BUNDLE.tar.gz OUT_DIR [--device=cuda|sim] [--bar-mb=N]
#                [--copy-mb=N] [--smp=N] [--native-runs=N] [--remote]
#                [--quota-mb=N]
#
# --device=sim runs the same orchestration without a GPU (kernels do not run
# there, so the outputs differ; tests/vm-cuda/suite-test.sh checks the rest).
# Defaults: cuda, a 4096 MiB BAR (8 slots of 2 vGPUs, 504 MiB data area each,
# so the microbenchmark's 256 MiB copies fit), --copy-mb=256, --smp=4, 3
# native microbench runs. OUT_DIR gets 8 files at its top level: gpu-suite.txt
# (this output), guest.json, suite-compare.txt, suite-static-compare.txt (the
# static-runtime builds), microbench.txt, mearasd.log, guest-serial.log,
# suite-outputs.tar.gz. Exits non-zero if anything failed.
#
# --remote: the VM's vGPUs are an assembly of 1 local and 1 remote vGPU. A
# second mearasd on this machine (the same --device; its second GPU where
# there are two) is the remote node, serving its link on loopback TCP to
# nodes holding a fresh random cluster key; the first one (node-a) is given
# the assembly (each vGPU a quota of --quota-mb MiB, default 8192) and serves
# the VM through its control socket (AttachVm, by the bundle's copy of the
# assembly manager's client: needs Python 3 with protobuf). In the guest,
# every program sees one vGPU (MEARAS_VISIBLE_VGPUS): the suite, its static
# builds and the microbenchmark run on the local vGPU, then again on the
# remote one, each compared with the native runs (the second boot's programs
# run on the remote vGPU only: the local one is the case without --remote,
# and a TCG guest is slow). OUT_DIR's 8 files are then
# gpu-suite.txt, guest.json (records with "vgpu": "local" or "remote"),
# suite-compare-local.txt, suite-compare-remote.txt, microbench.txt,
# mearasd.log (node-a), guest-serial.log and suite-outputs.tar.gz, which also
# holds the static builds' tables (suite-static-compare-local.txt,
# suite-static-compare-remote.txt; both printed below too) and node-b's log
# (mearasd-remote.log). Either way the tarball holds the driver-API builds'
# table (suite-driver-compare*.txt, printed below) and the second boot's
# console and guestpy.py summary (hostpy/).
set -uo pipefail
bundle=${1:?usage: gpu-suite.sh BUNDLE.tar.gz OUT_DIR [options]}
out=${2:?usage: gpu-suite.sh BUNDLE.tar.gz OUT_DIR [options]}
shift 2
device=cuda bar_mb=4096 copy_mb=256 smp=4 native_runs=3 remote=0 quota_mb=8192
for a in "$@"; do
	case $a in
	--device=cuda|--device=sim) device=${a#*=} ;;
	--remote) remote=1 ;;
	--quota-mb=*) quota_mb=${a#*=} ;;
	--bar-mb=*) bar_mb=${a#*=} ;;
	--copy-mb=*) copy_mb=${a#*=} ;;
	--smp=*) smp=${a#*=} ;;
	--native-runs=*) native_runs=${a#*=} ;;
	*) echo "gpu-suite: unknown option $a (see the header of $0)" >&2; exit 2 ;;
	esac
done
for v in "$bar_mb" "$copy_mb" "$smp" "$native_runs" "$quota_mb"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "gpu-suite: not a positive number: $v" >&2; exit 2; }
done
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -f "$bundle" ] || { echo "gpu-suite: no bundle $bundle (tests/vm-cuda/gpu-bundle.sh)" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
exec > >(tee "$out/gpu-suite.txt") 2>&1
work=$(mktemp -d /tmp/vs.XXXXXX)  # short: socket paths must fit sun_path
mpid="" qpid="" bpid=""
cleanup() {
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	[ -n "$bpid" ] && kill "$bpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
t_start=$(date +%s)
tar -C "$work" -xzf "$bundle" || { echo "gpu-suite: cannot unpack $bundle"; exit 1; }
suite_build=${SUITE_BUILD:-$work/share-programs}
programs=$("$repo/tests/cuda/run-suite.sh" --list core) libraries=$("$repo/tests/cuda/run-suite.sh" --list libraries)
drivers=$("$repo/tests/cuda/run-suite.sh" --list driver)
missing=""
for p in $libraries; do [ -x "$suite_build/$p" ] && [ -x "$suite_build/static/$p" ] || missing="$missing $p"; done
for p in $drivers; do [ -x "$suite_build/driver/$p" ] || missing="$missing driver/$p"; done
[ -z "$missing" ] || { echo "gpu-suite: not in $suite_build:$missing (a bundle of make -C tests/vm-cuda all)" >&2; exit 2; }
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
gpu_driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
gpu=${gpu_name:+$gpu_name, $gpu_driver}
gpu=${gpu:-no GPU}
[ "$device" = sim ] && gpu="mearas-sim ($gpu)"
echo "gpu-suite: device=$device ($gpu), BAR $bar_mb MiB, copies $copy_mb MiB, guest -smp $smp$(
	[ $remote = 1 ] && echo ", an assembly of 1 local + 1 remote vGPU of $quota_mb MiB each")"
rc=0
if [ $remote = 1 ] && ! PYTHONPATH=$work/am python3 -c 'import mearas_am.control.client' > "$work/am.txt" 2>&1; then
	echo "gpu-suite: --remote needs Python 3 with protobuf (the bundle's control client, am/):"
	tail -n 3 "$work/am.txt"
	exit 2
fi

echo "== program suite, natively (the bundle's binaries, LD_LIBRARY_PATH unset)"
t0=$(date +%s)
env -u LD_LIBRARY_PATH "$repo/tests/cuda/run-suite.sh" --run "$work/native" --build "$work/suite" --timeout 120 \
	> "$work/suite-native.txt" 2>&1
tail -n 1 "$work/suite-native.txt"
env -u LD_LIBRARY_PATH "$repo/tests/cuda/run-suite.sh" --run "$work/native-static" --build "$work/suite-static" \
	--timeout 120 > "$work/suite-native-static.txt" 2>&1
tail -n 1 "$work/suite-native-static.txt" | sed 's/^/static runtime: /'
echo "== library programs and driver-API builds, natively ($suite_build)"
env -u LD_LIBRARY_PATH "$repo/tests/cuda/run-suite.sh" --run "$work/native" --build "$suite_build" --set libraries \
	--timeout 120 > "$work/libs-native.txt" 2>&1
tail -n 1 "$work/libs-native.txt" | sed 's/^/libraries: /'
env -u LD_LIBRARY_PATH "$repo/tests/cuda/run-suite.sh" --run "$work/native-static" --build "$suite_build/static" \
	--set libraries --timeout 120 > "$work/libs-native-static.txt" 2>&1
tail -n 1 "$work/libs-native-static.txt" | sed 's/^/libraries, static runtime: /'
env -u LD_LIBRARY_PATH "$repo/tests/cuda/run-suite.sh" --run "$work/native-driver" --build "$suite_build/driver" \
	--set driver --timeout 120 > "$work/driver-native.txt" 2>&1
tail -n 1 "$work/driver-native.txt" | sed 's/^/driver-API builds: /'
echo "== microbenchmark, natively ($native_runs runs)"
for i in $(seq "$native_runs"); do
	env -u LD_LIBRARY_PATH "$work/suite/microbench" --copy-mb "$copy_mb" > "$work/micro-native-$i.txt" 2>&1 ||
		echo "  native run $i: exit $?"
done
t_native=$(( $(date +%s) - t0 ))

# control WHAT ARGS...: one request to node-a's control socket by the bundle's
# assembly manager client (as tests/vm-cuda/assembly-test.sh does)
control() {
	PYTHONPATH=$work/am python3 - "$work/c.sock" "$@" <<'EOF'
import os, sys, time
from mearas_am.control.client import SocketMearasdClient, VmAttachment
from mearas_am.errors import MearasdError
from mearas_am.model import Assembly, VgpuPlacement
sock, what = sys.argv[1], sys.argv[2]
c = SocketMearasdClient(sock, timeout=60)
MiB = 1 << 20
try:
    if what == "instantiate":  # QUOTA_MB REMOTE_ADDR REMOTE_GPU
        q = int(sys.argv[3]) * MiB
        c.instantiate(Assembly("gpu-suite", "vm:guest", "node-a", "exact", (
            VgpuPlacement(0, "node-a", 0, q, ""),
            VgpuPlacement(1, "node-b", int(sys.argv[5]), q, sys.argv[4])), time.time(), identity="vm:guest"))
    elif what == "attach":  # SOCKET BAR_MB
        vgpus, slots = c.attach_vm(VmAttachment("guest", "gpu-suite", sys.argv[3], int(sys.argv[4]) * MiB,
                                                os.getuid(), os.getgid()))
        print(f"{vgpus} vGPUs per guest process, {slots} slots")
except MearasdError as e:
    print(e)
    sys.exit(1)
EOF
}

t0=$(date +%s)
if [ $remote = 0 ]; then
	echo "== guest: mearasd --device=$device --vm, one TCG boot running everything"
	vmname=g vmsock=$work/a.sock rounds="" qemu_limit=360
	LD_LIBRARY_PATH=$work/lib "$work/bin/mearasd" --device="$device" --socket="$work/m.sock" \
		--control="$work/c.sock" --vm="g:$vmsock:$bar_mb:2" > "$out/mearasd.log" 2>&1 &
	mpid=$!
else
	echo "== guest: an assembly of 1 local + 1 remote vGPU (node-b: a second mearasd, loopback TCP), one TCG boot"
	vmname=guest vmsock=$work/vm/guest.sock rounds=remote qemu_limit=480
	head -c 32 /dev/urandom | base64 > "$work/cluster.key"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	rgpu=0
	if [ "$device" = cuda ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
		rgpu=1
	fi
	LD_LIBRARY_PATH=$work/lib "$work/bin/mearasd" --device="$device" --socket="$work/b.sock" \
		--control="$work/bc.sock" --node-name=node-b --link-port="$port" --link-bind=127.0.0.1 \
		--cluster-key-file="$work/cluster.key" > "$work/mearasd-remote.log" 2>&1 &
	bpid=$!
	LD_LIBRARY_PATH=$work/lib "$work/bin/mearasd" --device="$device" --socket="$work/m.sock" \
		--control="$work/c.sock" --node-name=node-a --vm-dir="$work/vm" \
		--cluster-key-file="$work/cluster.key" > "$out/mearasd.log" 2>&1 &
	mpid=$!
	for _ in $(seq 300); do
		[ -S "$work/c.sock" ] && [ -S "$work/bc.sock" ] && grep -q 'link' "$work/mearasd-remote.log" && break
		sleep 0.1
	done
	if ! r=$(control instantiate "$quota_mb" "127.0.0.1:$port" "$rgpu") || ! r=$(control attach "$vmsock" "$bar_mb"); then
		echo "gpu-suite: the assembly was not given to the VM: $r"
		tail -n 5 "$out/mearasd.log" "$work/mearasd-remote.log"
		exit 1
	fi
	echo "  AttachVm: $r; vGPU 1 on node-b's GPU $rgpu (127.0.0.1:$port)"
fi
for _ in $(seq 300); do grep -q "VM $vmname: serving" "$out/mearasd.log" && [ -S "$vmsock" ] && break; sleep 0.1; done
grep "VM $vmname: serving" "$out/mearasd.log" || { echo "gpu-suite: mearasd does not serve the VM"; tail "$out/mearasd.log"; exit 1; }
LD_LIBRARY_PATH=$work/lib QEMU_MODULE_DIR=$work/lib/qemu timeout -k 5 $qemu_limit "$work/bin/qemu-system-x86_64" \
	-L "$work/share/qemu" -L "$work/share/seabios" -accel tcg -m 1024 -smp "$smp" \
	-nodefaults -display none -no-reboot -net none -serial "file:$out/guest-serial.log" \
	-kernel "$work/guest/vmlinuz" -initrd "$work/guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 mearas_arg=suite mearas_secs=$copy_mb${rounds:+ mearas_rounds=$rounds}" \
	-chardev "socket,path=$vmsock,id=ivs" \
	-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$work/qemu.err" 2>&1 &
qpid=$!
wait "$qpid"
qrc=$?
qpid=""
t_guest=$(( $(date +%s) - t0 ))
echo "  qemu exit $qrc after $t_guest s"
[ "$qrc" = 0 ] || { rc=1; sed 's/^/  qemu: /' "$work/qemu.err" | tail -n 5; }

# The second boot, on the same VM socket: the library programs and the
# driver-API builds from $suite_build, run by guestpy.py (each run's
# NAME.{out,err,rc} comes back into guest/ beside the first boot's); with
# --remote on the remote vGPU
x="" vis=""
[ $remote = 1 ] && x=remote- vis="env MEARAS_VISIBLE_VGPUS=1 "
echo "== guest: library programs and driver-API builds$([ $remote = 1 ] && echo " on the remote vGPU"), this machine's $suite_build over a read-only virtio-9p share of / (a second TCG boot)"
hostruns=()
for p in $libraries; do
	hostruns+=(--run "$x$p" "$vis$(printf %q "$suite_build/$p")"
		--run "${x}static-$p" "$vis$(printf %q "$suite_build/static/$p")")
done
for p in $drivers; do hostruns+=(--run "${x}driver-$p" "$vis$(printf %q "$suite_build/driver/$p")"); done
# nvidia-smi -L over the guest's libnvidia-ml.so.1 shown one vGPU: native's
# line of the GPU behind it (vGPU 0: GPU 0; the remote one: node-b's GPU), as GPU 0
smi=$(command -v nvidia-smi)
if [ -n "$smi" ] && [ "$device" = cuda ]; then
	g=0
	[ $remote = 1 ] && g=$rgpu
	nvidia-smi -L 2>&1 | sed -n "s/^GPU $g: /GPU 0: /p" > "$work/smi-native.txt"
	hostruns+=(--run "${x}nvidia-smi-L" "env MEARAS_VISIBLE_VGPUS=$([ $remote = 1 ] && echo 1 || echo 0) $(printf %q "$smi") -L")
fi
t0=$(date +%s)
python3 "$repo/tests/vm-cuda/guestpy.py" --guest "$work/guest" --vm-socket "$vmsock" --work "$work/hostpy" \
	--qemu "$work/bin/qemu-system-x86_64" --qemu-data "$work/share/qemu" --qemu-data "$work/share/seabios" \
	--qemu-lib "$work/lib" --memory-mb 4096 --smp "$smp" --timeout-s "$qemu_limit" --run-limit-s 200 \
	"${hostruns[@]}" > "$work/hostpy.txt" 2>&1 || rc=1
grep -E '^guest: |^guest error: ' "$work/hostpy.txt" | sed 's/^/  /'
t_host=$(( $(date +%s) - t0 ))
echo "  $(grep -c '^guest run .*: exit 0' "$work/hostpy.txt") of $(( ${#hostruns[@]} / 3 )) runs exited 0, after $t_host s"
cp "$work"/hostpy/runs/* "$work/guest/" 2>/dev/null
sleep 0.5 # the worker logs the last slot's report when it sees the disconnect
kill "$mpid" 2>/dev/null
wait "$mpid" 2>/dev/null
mpid=""
if [ -n "$bpid" ]; then
	kill "$bpid" 2>/dev/null
	wait "$bpid" 2>/dev/null
	bpid=""
fi
tr -d '\r' < "$out/guest-serial.log" | grep -E '^MEARAS-(EXIT|KERNEL|INSMOD)' | sed 's/^/  /'
grep -q '^MEARAS-EXIT 0' <(tr -d '\r' < "$out/guest-serial.log") || rc=1
expect=()
prefixes=("")
[ $remote = 1 ] && prefixes+=(remote-)
for x in "${prefixes[@]}"; do
	for p in $programs warmup microbench-1 microbench-2; do expect+=(--expect "$x$p"); done
	for p in $programs; do expect+=(--expect "${x}static-$p"); done
done
expect+=(--expect microbench-sync)
python3 "$repo/tests/vm-cuda/guest_console.py" "$out/guest-serial.log" "$work/guest" "${expect[@]}" \
	> "$work/console.txt" 2>&1 || { rc=1; cat "$work/console.txt"; }

# compare PREFIX HOST TABLE STATIC_TABLE [DRIVER_TABLE]: the suite programs of
# both sides (microbench runs are not suite programs), and the static-runtime
# builds (NVIDIA's runtime over mearas's libcuda.so.1 in the guest); with HOST
# 1 also the second boot's library programs and the driver-API builds
compare() {
	local x=$1 host=$2 p f names=$programs
	rm -rf "$work"/cmp-*
	mkdir -p "$work"/cmp-{native,guest}{,-static,-driver}
	[ "$host" = 1 ] && names="$programs $libraries"
	for p in $names; do
		cp "$work/native/$p".* "$work/cmp-native/" 2>/dev/null
		cp "$work/native-static/$p".* "$work/cmp-native-static/" 2>/dev/null
		for f in "$work/guest/$x$p".*; do
			[ -e "$f" ] && cp "$f" "$work/cmp-guest/$p.${f##*.}"
		done
		for f in "$work/guest/${x}static-$p".*; do
			[ -e "$f" ] && cp "$f" "$work/cmp-guest-static/$p.${f##*.}"
		done
	done
	"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native" "$work/cmp-guest" > "$3" 2>&1 || rc=1
	"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native-static" "$work/cmp-guest-static" > "$4" 2>&1 || rc=1
	[ "$host" = 1 ] || return 0
	for p in $drivers; do
		cp "$work/native-driver/$p".* "$work/cmp-native-driver/" 2>/dev/null
		for f in "$work/guest/${x}driver-$p".*; do
			[ -e "$f" ] && cp "$f" "$work/cmp-guest-driver/$p.${f##*.}"
		done
	done
	"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native-driver" "$work/cmp-guest-driver" > "$5" 2>&1 || rc=1
}
if [ $remote = 0 ]; then
	compare "" 1 "$out/suite-compare.txt" "$out/suite-static-compare.txt" "$work/suite-driver-compare.txt"
	tables=("program suite and library programs: native vs VM guest ($gpu)|$out/suite-compare.txt"
		"static-runtime programs (NVIDIA's runtime over mearas's libcuda.so.1): native vs VM guest|$out/suite-static-compare.txt"
		"driver-API builds (no CUDA runtime in the program): native vs VM guest|$work/suite-driver-compare.txt")
else
	compare "" 0 "$out/suite-compare-local.txt" "$work/suite-static-compare-local.txt"
	compare remote- 1 "$out/suite-compare-remote.txt" "$work/suite-static-compare-remote.txt" \
		"$work/suite-driver-compare-remote.txt"
	tables=("program suite: native vs VM guest, local vGPU 0 ($gpu)|$out/suite-compare-local.txt"
		"program suite and library programs: native vs VM guest, remote vGPU 1 (node-b over loopback TCP)|$out/suite-compare-remote.txt"
		"static-runtime programs (NVIDIA's runtime over mearas's libcuda.so.1): native vs VM guest, local vGPU 0|$work/suite-static-compare-local.txt"
		"static-runtime programs: native vs VM guest, remote vGPU 1|$work/suite-static-compare-remote.txt"
		"driver-API builds: native vs VM guest, remote vGPU 1|$work/suite-driver-compare-remote.txt")
fi
if [ -z "$smi" ] || [ "$device" != cuda ]; then
	smi_result="not run (no nvidia-smi here, or --device=sim)"
elif [ "$(cat "$work/guest/${x}nvidia-smi-L.rc" 2>/dev/null)" = 0 ] &&
	cmp -s "$work/smi-native.txt" "$work/guest/${x}nvidia-smi-L.out"; then
	smi_result="identical to native: $(head -n 1 "$work/smi-native.txt")"
else
	smi_result="DIFFERS (exit $(cat "$work/guest/${x}nvidia-smi-L.rc" 2>/dev/null); native: $(head -n 1 "$work/smi-native.txt"); guest: $(head -n 1 "$work/guest/${x}nvidia-smi-L.out" 2>/dev/null))"
	rc=1
fi
# every comparison of a guest on its own GPU, one record per program, build
# and place "guest", beside the GPU lane's local and remote ones
# (its exit status counts every record of the file, the lane's too: the
# guest's failures are the tables' already, so only a file not written fails here)
if [ "$device" = cuda ] && [ $remote = 0 ]; then
	python3 "$repo/scripts/drvapi_programs.py" --merge --device "${gpu_name:-unknown} (driver ${gpu_driver:-?})" \
		--out "$repo/experiments/results/drvapi-programs.json" "shared:guest:$out/suite-compare.txt" \
		"static:guest:$out/suite-static-compare.txt" "driver:guest:$work/suite-driver-compare.txt" \
		> "$work/records.txt" 2>&1
	grep -q '^drvapi programs: [0-9]* of [0-9]* passed' "$work/records.txt" || rc=1
	cp "$repo/experiments/results/drvapi-programs.json" "$work/" 2>/dev/null
fi

for f in "$work"/micro-native-*.txt; do echo "### native $(basename "$f")"; cat "$f"; done > "$out/microbench.txt"
micro_runs="microbench-sync microbench-1 microbench-2"
[ $remote = 1 ] && micro_runs+=" remote-microbench-1 remote-microbench-2"
for n in $micro_runs; do
	echo "### guest $n (exit $(cat "$work/guest/$n.rc" 2>/dev/null))"
	cat "$work/guest/$n.out" "$work/guest/$n.err" 2>/dev/null
done >> "$out/microbench.txt"
remote_args=()
if [ $remote = 1 ]; then
	remote_args=(--remote-guest "$work"/guest/remote-microbench-{1,2}.out
		--remote-note "vGPU 1 of the VM's assembly, forwarded by mearasd node-a to node-b (a second mearasd on this machine, GPU $rgpu) over loopback TCP with TLS (the default)")
fi
python3 "$repo/experiments/microbench/guest_compare.py" --native "$work"/micro-native-*.txt \
	--guest "$work"/guest/microbench-{sync,1,2}.out ${remote_args[@]+"${remote_args[@]}"} --mearasd-log "$out/mearasd.log" \
	--device "$gpu" --note "mearasd --vm BAR $bar_mb MiB, $copy_mb MiB copies, guest -smp $smp$(
		[ $remote = 1 ] && echo ", an assembly of 1 local + 1 remote vGPU attached by AttachVm, each program on one vGPU")" \
	--out "$out/guest.json" > "$work/micro-table.txt" 2>&1 || rc=1
# a sim run (the orchestration test) leaves the repository's results alone
if [ "$device" = cuda ]; then
	cp "$out/guest.json" "$repo/experiments/results/guest$([ $remote = 1 ] && echo -remote).json" 2>/dev/null
fi
extra=(suite-driver-compare.txt drvapi-programs.json records.txt)
[ $remote = 1 ] && extra=(suite-static-compare-local.txt suite-static-compare-remote.txt
	suite-driver-compare-remote.txt mearasd-remote.log)
tar -C "$work" -czf "$out/suite-outputs.tar.gz" --exclude=hostpy/job.* native native-static native-driver guest \
	hostpy suite-native.txt libs-native.txt libs-native-static.txt driver-native.txt hostpy.txt console.txt \
	"${extra[@]}" 2>/dev/null

for t in "${tables[@]}"; do
	echo
	echo "== ${t%%|*}"
	cat "${t#*|}"
done
echo
echo "== nvidia-smi -L in the guest$([ $remote = 1 ] && echo ", remote vGPU 1"): $smi_result"
echo
echo "== microbenchmark: native vs VM guest (TCG guest CPU; see guest.json notes)"
cat "$work/micro-table.txt"
[ -s "$work/records.txt" ] && { echo; cat "$work/records.txt"; }
echo
echo "== times: native $t_native s, guest boots and runs $t_guest s + $t_host s, total $(( $(date +%s) - t_start )) s"
echo "gpu-suite: $([ $rc = 0 ] && echo ok || echo FAILED)"
exit $rc
