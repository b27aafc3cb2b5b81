#!/usr/bin/env bash
# Guest started by hand against the standalone server (mearas-ivshmem-serve
# -e): the guest's doorbell to the host must come back as an interrupt.
# Usage: serve-test.sh BUILD_DIR WORK_DIR. Prints PASS/FAIL lines.
set -uo pipefail
build=${1:?} work=${2:?}
repo=$(cd "$(dirname "$0")/../.." && pwd)
serve=$repo/build/bin/mearas-ivshmem-serve
sock=$work/serve.sock shm=/dev/shm/mearas-serve-$$ log=$work/ping.log
kernel=$build/guest/vmlinux
[ -f "$kernel" ] || kernel=$build/guest/vmlinuz

"$serve" -s "$sock" -f "$shm" -z 4M -v 2 -e -t 120 > "$work/serve.out" 2>&1 &
spid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done

timeout 90 "${MEARAS_QEMU:-qemu-system-x86_64}" -accel tcg -m 256 -smp 1 \
	-nodefaults -display none -no-reboot -net none -serial "file:$log" \
	-kernel "$kernel" -initrd "$build/guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 mearas_arg=ping" \
	-chardev "socket,path=$sock,id=ivs" \
	-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$log.err" 2>&1
qrc=$?
sleep 0.5
kill "$spid" 2>/dev/null
wait "$spid"
rm -f "$shm"

check() { if eval "$2"; then echo "PASS serve/$1"; else echo "FAIL serve/$1"; fi; }
check qemu-exits-0 '[ $qrc -eq 0 ]'
check server-saw-connect 'grep -q "^connected 1$" "$work/serve.out"'
check server-saw-doorbell 'grep -q "^doorbell 1 " "$work/serve.out"'
check server-saw-disconnect 'grep -q "^disconnected 1$" "$work/serve.out"'
check guest-ping-echoed 'grep -q "^GUEST-PASS ping-echoed" "$log"'
check guest-exit-0 'grep -q "^MEARAS-EXIT 0" "$log"'
check guest-no-oops 'grep -q "^MEARAS-KERNEL-CLEAN" "$log"'
grep -h '^ping:' "$log" | sed 's/^/  /'
