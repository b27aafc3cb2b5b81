#!/usr/bin/env bash
# Builds a small QEMU guest from Debian packages: the kernel of
# linux-image-amd64 (vmlinuz, plus vmlinux unpacked from it for the faster
# PVH boot) and a busybox-static initramfs holding mearas.ko, the given extra
# files and an init that loads the module, runs a command and powers off.
#
#   build-guest.sh -o OUTDIR [-k KVER] [-m mearas.ko] [-c COMMAND]
#                  [-f SRC[:DEST]]... [-K MODULE]... [-n]
#
#   -o OUTDIR   output directory (created): vmlinuz, vmlinux, initramfs.cpio.gz
#   -k KVER     Debian kernel version (default: newest under /lib/modules)
#   -m KO       prebuilt mearas.ko (default: build guest/kmod for KVER)
#   -c COMMAND  shell command the guest runs (default: sh, interactive);
#               kernel command-line words like mearas_arg=X reach it as $mearas_arg
#   -f SRC[:DEST] extra file, DEST an absolute guest path (default /bin/NAME);
#               shared libraries a dynamic ELF file needs (ldd) and the
#               dynamic loader are copied along to their host paths
#   -K MODULE   a module of the kernel (/lib/modules/KVER) loaded at boot,
#               before mearas.ko, after the modules it depends on (modinfo
#               -F depends), which come along; built-in ones are skipped.
#               Default: none. For a virtio-9p share of the host:
#               -K virtio_pci -K 9pnet_virtio -K 9p
#   -n          do not insmod mearas.ko at boot (it stays at /lib/mearas/mearas.ko)
#
# The guest prints "MEARAS-EXIT <rc>" after the command and then either
# "MEARAS-KERNEL-CLEAN" or "MEARAS-KERNEL-OOPS <line>" from dmesg; a -K
# module that does not load prints "MEARAS-MODULE-FAILED <name>".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out="" kver="" ko="" cmd="sh" insmod=1
files=() kmods=()
while getopts "o:k:m:c:f:K:n" opt; do
	case $opt in
	o) out=$OPTARG ;;
	k) kver=$OPTARG ;;
	m) ko=$OPTARG ;;
	c) cmd=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	K) kmods+=("$OPTARG") ;;
	n) insmod=0 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || { echo "build-guest.sh: -o OUTDIR is required" >&2; exit 2; }
[ -n "$kver" ] || kver=$(ls /lib/modules 2>/dev/null | sort -V | tail -n1)
[ -n "$kver" ] && [ -f "/boot/vmlinuz-$kver" ] || {
	echo "build-guest.sh: no Debian kernel found (install linux-image-amd64)" >&2; exit 1; }
busybox=/bin/busybox
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || {
	echo "build-guest.sh: $busybox is not static (install busybox-static)" >&2; exit 1; }

if [ -z "$ko" ]; then
	make -s -C "$repo/guest/kmod" KVER="$kver" >/dev/null
	ko=$repo/guest/kmod/mearas.ko
fi
[ -f "$ko" ] || { echo "build-guest.sh: $ko missing" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,lib/mearas}
cp "$busybox" "$root/bin/busybox"
cp "$ko" "$root/lib/mearas/mearas.ko"
# Copies the shared libraries (and loader) of a dynamic ELF file into the root.
copy_libs() {
	file -L "$1" | grep -q 'dynamically linked' || return 0
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	# Debian's loader path /lib64 must exist as in the host's layout.
	[ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$root/lib64/ld-linux-x86-64.so.2" ] && {
		mkdir -p "$root/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"; }
	return 0
}

for spec in "${files[@]+"${files[@]}"}"; do
	src=${spec%%:*}
	dest=/bin/$(basename "$src")
	[ "$spec" != "$src" ] && dest=${spec#*:}
	[ -f "$src" ] || { echo "build-guest.sh: $src missing" >&2; exit 1; }
	mkdir -p "$root$(dirname "$dest")"
	cp "$src" "$root$dest"
	copy_libs "$src"
done
printf '%s\n' "$cmd" > "$root/etc/mearas-cmd"

# -K: each module after its dependencies, into /lib/kmods, their order in
# /etc/mearas-kmods (the init loads them with busybox insmod: uncompressed)
: > "$root/etc/mearas-kmods"
add_kmod() {
	local name=$1 dep file
	grep -qx "$name" "$root/etc/mearas-kmods" && return 0
	file=$(modinfo -k "$kver" -F filename "$name" 2>/dev/null) || {
		echo "build-guest.sh: no module $name in kernel $kver" >&2; exit 1; }
	case $file in
	"(builtin)"|"") return 0 ;;
	esac
	for dep in $(modinfo -k "$kver" -F depends "$name" | tr ',' ' '); do
		add_kmod "$dep"
	done
	mkdir -p "$root/lib/kmods"
	case $file in
	*.ko) cp "$file" "$root/lib/kmods/$name.ko" ;;
	*.ko.xz) xz -dc "$file" > "$root/lib/kmods/$name.ko" ;;
	*.ko.zst) zstd -qdc "$file" > "$root/lib/kmods/$name.ko" ;;
	*) echo "build-guest.sh: $file: unknown module compression" >&2; exit 1 ;;
	esac
	echo "$name" >> "$root/etc/mearas-kmods"
}
for m in "${kmods[@]+"${kmods[@]}"}"; do
	add_kmod "${m//-/_}"
done

cat > "$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
for m in \$(cat /etc/mearas-kmods); do
	insmod /lib/kmods/\$m.ko || echo "MEARAS-MODULE-FAILED \$m"
done
if [ $insmod = 1 ]; then
	insmod /lib/mearas/mearas.ko || echo "MEARAS-INSMOD-FAILED"
fi
sh -c "\$(cat /etc/mearas-cmd)"
echo "MEARAS-EXIT \$?"
if dmesg | grep -E 'Oops|BUG:|general protection fault|Call Trace' > /tmp/oops; then
	sed 's/^/MEARAS-KERNEL-OOPS /' /tmp/oops
else
	echo "MEARAS-KERNEL-CLEAN"
fi
poweroff -f
INIT
chmod 755 "$root/init"

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initramfs.cpio.gz"
cp "/boot/vmlinuz-$kver" "$out/vmlinuz"

# Debian compresses the kernel with xz: unpack the ELF vmlinux for PVH boot.
offset=$(grep -abo $'\xfd7zXZ' "$out/vmlinuz" | head -n1 | cut -d: -f1 || true)
rm -f "$out/vmlinux"
if [ -n "$offset" ]; then
	tail -c +"$((offset + 1))" "$out/vmlinuz" | xz -dcq > "$out/vmlinux" 2>/dev/null || true
	file "$out/vmlinux" | grep -q ELF || rm -f "$out/vmlinux"
fi
echo "build-guest.sh: $out (kernel $kver$( [ -f "$out/vmlinux" ] && echo ', vmlinux')$(
	[ -s "$root/etc/mearas-kmods" ] && echo ", modules: $(tr '\n' ' ' < "$root/etc/mearas-kmods" | sed 's/ $//')"))"
