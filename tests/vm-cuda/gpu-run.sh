#!/usr/bin/env bash
# On the GPU machine: mearasd --device=cuda --vm serving a TCG guest that runs
# the CUDA checks on the GPU through the VM transport.
#   gpu-run.sh BUNDLE.tar.gz LOG_DIR
set -uo pipefail
bundle=${1:?} logs=${2:?}
dir=$(mktemp -d /tmp/vg.XXXXXX)
mkdir -p "$logs"
tar -C "$dir" -xzf "$bundle"
export LD_LIBRARY_PATH=$dir/lib QEMU_MODULE_DIR=$dir/lib/qemu
"$dir/bin/mearasd" --device=cuda --socket="$dir/m.sock" --vm="g:$dir/a.sock:256:2" > "$logs/mearasd.log" 2>&1 &
mpid=$!
for _ in $(seq 100); do grep -q 'VM g: serving' "$logs/mearasd.log" && break; sleep 0.1; done
# xslot: two guest processes of one VM, one reading the other's device
# memory (faults in its own context only; the other's bytes intact)
for t in props memcpy errors xslot; do
	timeout 300 "$dir/bin/qemu-system-x86_64" -L "$dir/share/qemu" -L "$dir/share/seabios" -accel tcg -m 256 -smp 1 \
		-nodefaults -display none -no-reboot -net none -serial "file:$logs/$t.log" \
		-kernel "$dir/guest/vmlinuz" -initrd "$dir/guest/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet panic=-1 mearas_arg=$t mearas_secs=0" \
		-chardev "socket,path=$dir/a.sock,id=ivs" \
		-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$logs/$t.err" 2>&1
	echo "qemu $t: exit $?"
	for _ in $(seq 100); do [ -S "$dir/a.sock" ] && break; sleep 0.1; done
	sleep 0.5
done
kill $mpid
cat "$logs"/{props,memcpy,errors,xslot}.log | tr -d '\r' | grep -E '^(GUEST-|  device|MEARAS-)'
p=$(cat "$logs"/*.log | grep -c '^GUEST-PASS'); f=$(cat "$logs"/*.log | grep -c '^GUEST-FAIL')
echo "$p passed, $f failed"
[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
