#!/usr/bin/env bash
# One guest started through libvirt (domain type qemu, the template
# vm-configs/mearas-vm.xml with an ivshmem-doorbell <server> on mearasd's VM
# socket). Starts virtlogd/libvirtd as root if none runs (and stops those it
# started, by PID). Usage: libvirt-test.sh GUEST_DIR VM_SOCKET WORK_DIR
# Prints PASS/FAIL lines; the console is left in WORK_DIR/libvirt/console.
set -uo pipefail
guest=${1:?} sock=${2:?} work=${3:?}
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=$work/libvirt name=mearas-vmcuda-$$ uri=qemu:///system
started=()

result_prefix=libvirt/
. "$(dirname "$0")/lib.sh"
stop_started() {
	virsh -c "$uri" destroy "$name" >/dev/null 2>&1
	for p in "${started[@]+"${started[@]}"}"; do kill "$p" 2>/dev/null; done
}
trap stop_started EXIT

for b in libvirtd virtlogd virsh; do
	command -v $b >/dev/null || { fail available "$b missing (scripts/deps/apt-vm-cuda.txt)"; exit 0; }
done
# QEMU runs as libvirt-qemu: it must reach the socket and read the guest
mkdir -p "$dir"
chmod 755 "$work" "$dir"
cp "$guest/initramfs.cpio.gz" "$dir/"
if [ -f "$guest/vmlinux" ]; then cp "$guest/vmlinux" "$dir/kernel"; else cp "$guest/vmlinuz" "$dir/kernel"; fi
chmod 644 "$dir"/*
if ! pgrep -x virtlogd >/dev/null; then virtlogd -d; sleep 0.3; started+=("$(pgrep -nx virtlogd)"); fi
if ! pgrep -x libvirtd >/dev/null; then libvirtd -d; sleep 1; started+=("$(pgrep -nx libvirtd)"); fi

sed -e "s|<name>mearas-NAME</name>|<name>$name</name>|" \
    -e "s|/var/lib/mearas/guest-NAME/vmlinux|$dir/kernel|" \
    -e "s|/var/lib/mearas/guest-NAME/initramfs.cpio.gz|$dir/initramfs.cpio.gz|" \
    -e "s|mearas_arg=doorbell|mearas_arg=memcpy mearas_secs=0|" \
    -e "s|/var/log/mearas/vm-NAME.console|$dir/console|" \
    -e "s|<shmem name='mearas-NAME'>|<shmem name='$name'>|" \
    -e "s|/run/mearas/vm-NAME.sock|$sock|" \
    "$repo/vm-configs/mearas-vm.xml" > "$dir/domain.xml"

if out=$(virsh -c "$uri" create "$dir/domain.xml" 2>&1); then
	pass domain-started
else
	fail domain-started "$out"
	exit 0
fi
# on_poweroff destroy: the domain disappears when the guest is done
for _ in $(seq 1800); do
	virsh -c "$uri" domstate "$name" >/dev/null 2>&1 || break
	sleep 0.1
done
if virsh -c "$uri" domstate "$name" >/dev/null 2>&1; then
	fail domain-finished "still running after 180 s"
fi
tr -d '\r' < "$dir/console" 2>/dev/null | while IFS= read -r line; do
	case $line in
	GUEST-PASS*) echo "PASS libvirt/${line#GUEST-PASS }" ;;
	GUEST-FAIL*) echo "FAIL libvirt/${line#GUEST-FAIL }" ;;
	esac
done
if grep -q '^MEARAS-EXIT 0' "$dir/console" 2>/dev/null; then pass guest-exit-0; else fail guest-exit-0 "see $dir/console"; fi
