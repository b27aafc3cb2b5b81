#!/usr/bin/env bash
# On the GPU machine (no QEMU there; gpu-bundle.sh packs it), from the repo
# root, in one call: the tests/cuda program suite natively and inside a TCG
# guest served by `mearasd --vm` (outputs compared with run-suite.sh
# --compare), the microbenchmark natively and in the guest, and
# OUT_DIR/guest.json, copied to experiments/results/ with --device=cuda (guest
# vs native, plus the host time per synchronizing call from mearasd's VM
# worker). One QEMU boot runs everything in the guest (guest/suite.sh).
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
# remote one, each compared with the native runs. OUT_DIR's 8 files are then
# gpu-suite.txt, guest.json (records with "vgpu": "local" or "remote"),
# suite-compare-local.txt, suite-compare-remote.txt, microbench.txt,
# mearasd.log (node-a), guest-serial.log and suite-outputs.tar.gz, which also
# holds the static builds' tables (suite-static-compare-local.txt,
# suite-static-compare-remote.txt; both printed below too) and node-b's log
# (mearasd-remote.log).
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
programs=$(sed -n '/^programs=(/,/)/p' "$repo/tests/cuda/run-suite.sh" | tr -d '()' | sed 's/programs=//' | tr -s ' \t\n' ' ')
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
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

# compare PREFIX TABLE STATIC_TABLE: the suite programs of both sides (microbench
# runs are not suite programs), and the static-runtime builds (NVIDIA's runtime
# over mearas's libcuda.so.1 in the guest)
compare() {
	local x=$1 p f
	rm -rf "$work"/cmp-*
	mkdir -p "$work/cmp-native" "$work/cmp-guest" "$work/cmp-native-static" "$work/cmp-guest-static"
	for p in $programs; do
		cp "$work/native/$p".* "$work/cmp-native/" 2>/dev/null
		cp "$work/native-static/$p".* "$work/cmp-native-static/" 2>/dev/null
		for f in "$work/guest/$x$p".*; do
			[ -e "$f" ] && cp "$f" "$work/cmp-guest/$p.${f##*.}"
		done
		for f in "$work/guest/${x}static-$p".*; do
			[ -e "$f" ] && cp "$f" "$work/cmp-guest-static/$p.${f##*.}"
		done
	done
	"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native" "$work/cmp-guest" > "$2" 2>&1 || rc=1
	"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native-static" "$work/cmp-guest-static" > "$3" 2>&1 || rc=1
}
if [ $remote = 0 ]; then
	compare "" "$out/suite-compare.txt" "$out/suite-static-compare.txt"
	tables=("program suite: native vs VM guest ($gpu)|$out/suite-compare.txt"
		"static-runtime programs (NVIDIA's runtime over mearas's libcuda.so.1): native vs VM guest|$out/suite-static-compare.txt")
else
	compare "" "$out/suite-compare-local.txt" "$work/suite-static-compare-local.txt"
	compare remote- "$out/suite-compare-remote.txt" "$work/suite-static-compare-remote.txt"
	tables=("program suite: native vs VM guest, local vGPU 0 ($gpu)|$out/suite-compare-local.txt"
		"program suite: native vs VM guest, remote vGPU 1 (node-b over loopback TCP)|$out/suite-compare-remote.txt"
		"static-runtime programs (NVIDIA's runtime over mearas's libcuda.so.1): native vs VM guest, local vGPU 0|$work/suite-static-compare-local.txt"
		"static-runtime programs: native vs VM guest, remote vGPU 1|$work/suite-static-compare-remote.txt")
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
extra=()
[ $remote = 1 ] && extra=(suite-static-compare-local.txt suite-static-compare-remote.txt mearasd-remote.log)
tar -C "$work" -czf "$out/suite-outputs.tar.gz" native native-static guest suite-native.txt console.txt \
	${extra[@]+"${extra[@]}"} 2>/dev/null

for t in "${tables[@]}"; do
	echo
	echo "== ${t%%|*}"
	cat "${t#*|}"
done
echo
echo "== microbenchmark: native vs VM guest (TCG guest CPU; see guest.json notes)"
cat "$work/micro-table.txt"
echo
echo "== times: native $t_native s, guest boot and runs $t_guest s, total $(( $(date +%s) - t_start )) s"
echo "gpu-suite: $([ $rc = 0 ] && echo ok || echo FAILED)"
exit $rc
