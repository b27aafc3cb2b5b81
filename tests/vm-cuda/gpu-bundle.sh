#!/usr/bin/env bash
# Packs what the GPU machine lacks for the VM test (it has no QEMU): this
# machine's QEMU with its non-glibc libraries and firmware, mearasd, and the
# guest image, plus the tests/cuda programs and microbench for the native runs
# (suite/), the library programs and driver-API builds that the guest runs
# over a share of the host (share-programs/), and the assembly manager's package with its generated protobuf
# modules (am/: gpu-suite.sh --remote attaches the VM through the control
# socket with it), into OUT/vmgpu.tar.gz; gpu-suite.sh (or OUT/gpu-run.sh)
# runs it there.
#   gpu-bundle.sh OUT_DIR     (after make -C tests/vm-cuda all)
set -euo pipefail
out=${1:?usage: gpu-bundle.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,lib,share,guest,suite,suite-static} "$out"
copy_libs() {
	local lib
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		case $(basename "$lib") in
		libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) continue ;;
		esac
		cp -nL "$lib" "$stage/lib/"
	done
}
cp -L "$(command -v qemu-system-x86_64)" "$stage/bin/"
copy_libs "$stage/bin/qemu-system-x86_64"
cp -L "$repo/build/bin/mearasd" "$stage/bin/"
strip --strip-debug "$stage/bin/mearasd"
copy_libs "$stage/bin/mearasd"
cp -rL /usr/share/qemu "$stage/share/qemu"
# other machines' firmware (PowerPC, SPARC, s390, RISC-V, PA-RISC, Alpha, ARM
# boards): an x86 TCG guest loads none of it, and the bundle must stay small
rm -f "$stage"/share/qemu/{openbios-*,skiboot.lid,slof.bin,vof*.bin,s390-*,opensbi-*,hppa-firmware.img,palcode-*} \
	"$stage"/share/qemu/{*.dtb,npcm7xx_bootrom.bin,u-boot*,qemu_vga.ndrv} \
	"$stage/share/qemu/QEMU,cgthree.bin" "$stage/share/qemu/QEMU,tcx.bin"
cp -rL /usr/share/seabios "$stage/share/seabios" # Debian keeps the PC BIOS there
# Debian's QEMU loads its accelerators (TCG too) as modules
mkdir -p "$stage/lib/qemu"
cp -L /usr/lib/x86_64-linux-gnu/qemu/*.so "$stage/lib/qemu/" 2>/dev/null || true
for m in "$stage"/lib/qemu/*.so; do [ -e "$m" ] && copy_libs "$m"; done
cp "$here/build/guest/vmlinuz" "$stage/guest/"
# the guest image recompressed with zstd (a third of its gzip -1 size: the
# bundle must fit the device tool's carry with the tree); the kernel takes an
# initramfs by its compression's magic number (CONFIG_RD_ZSTD), so the name
# the scripts and guestpy.py boot stays
zcat "$here/build/guest/initramfs.cpio.gz" | zstd -19 -q -T0 -c >"$stage/guest/initramfs.cpio.gz"
# the same binaries the guest image holds (run-suite.sh's `programs`, not the
# library programs, stripped by tests/vm-cuda's guest-image), for the native runs
programs=$("$repo/tests/cuda/run-suite.sh" --list core)
for p in $programs; do
	cp "$here/build/suite-stripped/$p" "$stage/suite/"
	cp "$here/build/suite-stripped/static/$p" "$stage/suite-static/"
done
cp "$repo/build/experiments/microbench" "$stage/suite/"
# the library programs and driver-API builds, which the guest runs from the
# host's share (gpu-suite.sh's second boot), stripped by guest-image
cp -r "$here/build/share-programs" "$stage/share-programs"
[ -f "$repo/assembly-manager/mearas_am/generated/control_pb2.py" ] ||
	{ echo "gpu-bundle: no generated protobuf modules: make -C assembly-manager proto" >&2; exit 1; }
mkdir -p "$stage/am"
tar -C "$repo/assembly-manager" --exclude=__pycache__ -cf - mearas_am | tar -C "$stage/am" -xf -
tar -C "$stage" -czf "$out/vmgpu.tar.gz" .
cp "$here/gpu-run.sh" "$out/"
echo "gpu-bundle: $out/vmgpu.tar.gz ($(du -h "$out/vmgpu.tar.gz" | cut -f1))"
