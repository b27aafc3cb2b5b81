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
#                [--copy-mb=N] [--smp=N] [--native-runs=N]
#
# --device=sim runs the same orchestration without a GPU (kernels do not run
# there, so the outputs differ; tests/vm-cuda/suite-test.sh checks the rest).
# Defaults: cuda, a 4096 MiB BAR (8 slots of 2 vGPUs, 504 MiB data area each,
# so the microbenchmark's 256 MiB copies fit), --copy-mb=256, --smp=4, 3
# native microbench runs. OUT_DIR gets 8 files at its top level: gpu-suite.txt
# (this output), guest.json, suite-compare.txt, suite-static-compare.txt (the
# static-runtime builds), microbench.txt, mearasd.log, guest-serial.log,
# suite-outputs.tar.gz. Exits non-zero if anything failed.
set -uo pipefail
bundle=${1:?usage: gpu-suite.sh BUNDLE.tar.gz OUT_DIR [options]}
out=${2:?usage: gpu-suite.sh BUNDLE.tar.gz OUT_DIR [options]}
shift 2
device=cuda bar_mb=4096 copy_mb=256 smp=4 native_runs=3
for a in "$@"; do
	case $a in
	--device=cuda|--device=sim) device=${a#*=} ;;
	--bar-mb=*) bar_mb=${a#*=} ;;
	--copy-mb=*) copy_mb=${a#*=} ;;
	--smp=*) smp=${a#*=} ;;
	--native-runs=*) native_runs=${a#*=} ;;
	*) echo "gpu-suite: unknown option $a (see the header of $0)" >&2; exit 2 ;;
	esac
done
for v in "$bar_mb" "$copy_mb" "$smp" "$native_runs"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "gpu-suite: not a positive number: $v" >&2; exit 2; }
done
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -f "$bundle" ] || { echo "gpu-suite: no bundle $bundle (tests/vm-cuda/gpu-bundle.sh)" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
exec > >(tee "$out/gpu-suite.txt") 2>&1
work=$(mktemp -d /tmp/vs.XXXXXX)  # short: socket paths must fit sun_path
mpid="" qpid=""
cleanup() {
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
t_start=$(date +%s)
tar -C "$work" -xzf "$bundle" || { echo "gpu-suite: cannot unpack $bundle"; exit 1; }
programs=$(sed -n '/^programs=(/,/)/p' "$repo/tests/cuda/run-suite.sh" | tr -d '()' | sed 's/programs=//' | tr -s ' \t\n' ' ')
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
gpu=${gpu:-no GPU}
[ "$device" = sim ] && gpu="mearas-sim ($gpu)"
echo "gpu-suite: device=$device ($gpu), BAR $bar_mb MiB, copies $copy_mb MiB, guest -smp $smp"
rc=0

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

echo "== guest: mearasd --device=$device --vm, one TCG boot running everything"
t0=$(date +%s)
LD_LIBRARY_PATH=$work/lib "$work/bin/mearasd" --device="$device" --socket="$work/m.sock" \
	--control="$work/c.sock" --vm="g:$work/a.sock:$bar_mb:2" > "$out/mearasd.log" 2>&1 &
mpid=$!
for _ in $(seq 300); do grep -q 'VM g: serving' "$out/mearasd.log" && [ -S "$work/a.sock" ] && break; sleep 0.1; done
grep 'VM g: serving' "$out/mearasd.log" || { echo "gpu-suite: mearasd does not serve the VM"; tail "$out/mearasd.log"; exit 1; }
LD_LIBRARY_PATH=$work/lib QEMU_MODULE_DIR=$work/lib/qemu timeout -k 5 360 "$work/bin/qemu-system-x86_64" \
	-L "$work/share/qemu" -L "$work/share/seabios" -accel tcg -m 1024 -smp "$smp" \
	-nodefaults -display none -no-reboot -net none -serial "file:$out/guest-serial.log" \
	-kernel "$work/guest/vmlinuz" -initrd "$work/guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 mearas_arg=suite mearas_secs=$copy_mb" \
	-chardev "socket,path=$work/a.sock,id=ivs" \
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
tr -d '\r' < "$out/guest-serial.log" | grep -E '^MEARAS-(EXIT|KERNEL|INSMOD)' | sed 's/^/  /'
grep -q '^MEARAS-EXIT 0' <(tr -d '\r' < "$out/guest-serial.log") || rc=1
expect=()
for p in $programs warmup microbench-sync microbench-1 microbench-2; do expect+=(--expect "$p"); done
for p in $programs; do expect+=(--expect "static-$p"); done
python3 "$repo/tests/vm-cuda/guest_console.py" "$out/guest-serial.log" "$work/guest" "${expect[@]}" \
	> "$work/console.txt" 2>&1 || { rc=1; cat "$work/console.txt"; }

# the suite programs of both sides, compared (microbench runs are not suite programs)
mkdir -p "$work/cmp-native" "$work/cmp-guest"
for p in $programs; do
	cp "$work/native/$p".* "$work/cmp-native/" 2>/dev/null
	cp "$work/guest/$p".* "$work/cmp-guest/" 2>/dev/null
done
"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native" "$work/cmp-guest" > "$out/suite-compare.txt" 2>&1 || rc=1
# the static-runtime builds: NVIDIA's runtime over mearas's libcuda.so.1 in the guest
mkdir -p "$work/cmp-native-static" "$work/cmp-guest-static"
for p in $programs; do
	cp "$work/native-static/$p".* "$work/cmp-native-static/" 2>/dev/null
	for f in "$work/guest/static-$p".*; do
		[ -e "$f" ] && cp "$f" "$work/cmp-guest-static/$p.${f##*.}"
	done
done
"$repo/tests/cuda/run-suite.sh" --compare "$work/cmp-native-static" "$work/cmp-guest-static" \
	> "$out/suite-static-compare.txt" 2>&1 || rc=1

for f in "$work"/micro-native-*.txt; do echo "### native $(basename "$f")"; cat "$f"; done > "$out/microbench.txt"
for n in sync 1 2; do
	echo "### guest microbench-$n (exit $(cat "$work/guest/microbench-$n.rc" 2>/dev/null))"
	cat "$work/guest/microbench-$n.out" "$work/guest/microbench-$n.err" 2>/dev/null
done >> "$out/microbench.txt"
python3 "$repo/experiments/microbench/guest_compare.py" --native "$work"/micro-native-*.txt \
	--guest "$work"/guest/microbench-{sync,1,2}.out --mearasd-log "$out/mearasd.log" \
	--device "$gpu" --note "mearasd --vm BAR $bar_mb MiB, $copy_mb MiB copies, guest -smp $smp" \
	--out "$out/guest.json" > "$work/micro-table.txt" 2>&1 || rc=1
# a sim run (the orchestration test) leaves the repository's results alone
[ "$device" = cuda ] && cp "$out/guest.json" "$repo/experiments/results/guest.json" 2>/dev/null
tar -C "$work" -czf "$out/suite-outputs.tar.gz" native native-static guest suite-native.txt console.txt 2>/dev/null

echo
echo "== program suite: native vs VM guest ($gpu)"
cat "$out/suite-compare.txt"
echo
echo "== static-runtime programs (NVIDIA's runtime over mearas's libcuda.so.1): native vs VM guest"
cat "$out/suite-static-compare.txt"
echo
echo "== microbenchmark: native vs VM guest (TCG guest CPU; see guest.json notes)"
cat "$work/micro-table.txt"
echo
echo "== times: native $t_native s, guest boot and runs $t_guest s, total $(( $(date +%s) - t_start )) s"
echo "gpu-suite: $([ $rc = 0 ] && echo ok || echo FAILED)"
exit $rc
