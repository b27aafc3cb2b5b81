#!/usr/bin/env bash
# Builds the Debian packages mearas-host and mearas-guest with dpkg-deb, from
# the install targets of the top Makefile (one file layout for both): run by
# `make deb` after the build. See docs/packaging.md.
#   scripts/mkdeb.sh OUTDIR VERSION
# mearas-host: mearasd, its systemd unit and config (when the tree has them),
#   the front-end libraries off the loader's path (/usr/lib/mearas, for
#   `mearas run`), the assembly manager in /usr/lib/python3/dist-packages on
#   Debian's python3-protobuf and python3-etcd3gw, the `mearas` command, the
#   node agent's unit, the libvirt hook /etc/libvirt/hooks/qemu.d/mearas and
#   /etc/mearas/am.toml.
# mearas-guest: the front-end libraries on the loader's path
#   (/usr/lib/<multiarch>/mearas + /etc/ld.so.conf.d/mearas-guest.conf) and the
#   kernel module as DKMS source (/usr/src/mearas-VERSION).
# Library dependencies come from dpkg-shlibdeps; files under /etc are conffiles;
# binaries are stripped.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 OUTDIR VERSION" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
version=$2
case $version in
[0-9]*) ;;
*) echo "mkdeb: version '$version' does not start with a digit" >&2; exit 1 ;;
esac
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
	command -v $tool >/dev/null || { echo "mkdeb: $tool missing (Debian package dpkg-dev)" >&2; exit 1; }
done
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
maintainer=${DEB_MAINTAINER:-mearas maintainers <mearas@localhost>}
make=${MAKE:-make}

stage=$(mktemp -d "${TMPDIR:-/tmp}/mearas-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
host=$stage/debian/mearas-host
guest=$stage/debian/mearas-guest
mkdir -p "$host/DEBIAN" "$guest/DEBIAN"
printf 'Source: mearas\n\nPackage: mearas-host\nArchitecture: any\n\nPackage: mearas-guest\nArchitecture: any\n' \
	>"$stage/debian/control"

$make -s --no-print-directory -C "$top" install DESTDIR="$host" PREFIX=/usr SYSCONFDIR=/etc \
	SYSTEMDUNITDIR=/lib/systemd/system PYTHON_SHEBANG=/usr/bin/python3 MEARAS_VERSION="$version"
$make -s --no-print-directory -C "$top" install-guest DESTDIR="$guest" PREFIX=/usr SYSCONFDIR=/etc \
	GUEST_LIBDIR="/usr/lib/$multiarch/mearas" MEARAS_VERSION="$version"

# stripped as Debian strips (dh_strip): no debugging sections, .comment, .note
find "$host" "$guest" -path '*/DEBIAN' -prune -o -type f -print | while read -r f; do
	[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	case $f in
	*.so.*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f" ;;
	*) strip --remove-section=.comment --remove-section=.note "$f" ;;
	esac
done

# the generated protobuf modules need a python3-protobuf at least as new as protoc
pbver=$(protoc --version | awk '{print $2}' | cut -d. -f1,2)

# control PACKAGE DEPENDS-EXTRA FIELDS...: writes DEBIAN/control, conffiles, scripts
control() {
	local pkg=$1 extra=$2 root=$stage/debian/$1 shlibs f
	shift 2
	mapfile -t elfs < <(find "$root" -path "$root/DEBIAN" -prune -o -type f -print |
		while read -r f; do [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"; done)
	shlibs=$(cd "$stage" && dpkg-shlibdeps -O -S"debian/$pkg" "${elfs[@]#$stage/}" | sed -n 's/^shlibs:Depends=//p')
	{
		echo "Package: $pkg"
		echo "Version: $version"
		echo "Architecture: $arch"
		echo "Maintainer: $maintainer"
		echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
		echo "Depends: $shlibs${extra:+, $extra}"
		printf '%s\n' "$@"
	} >"$root/DEBIAN/control"
	if [ -d "$root/etc" ]; then
		(cd "$root" && find etc -type f | sort | sed 's|^|/|') >"$root/DEBIAN/conffiles"
	fi
	for f in preinst postinst prerm postrm triggers; do
		[ -f "$top/scripts/deb/$pkg.$f" ] || continue
		sed "s/@VERSION@/$version/g" "$top/scripts/deb/$pkg.$f" >"$root/DEBIAN/$f"
		if [ "$f" = triggers ]; then chmod 0644 "$root/DEBIAN/$f"; else chmod 0755 "$root/DEBIAN/$f"; fi
	done
	rm -f "$out/${pkg}_${version}_$arch.deb"
	dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${pkg}_${version}_$arch.deb" >/dev/null
	echo "mkdeb: $out/${pkg}_${version}_$arch.deb"
}

# mearasd loads libsystemd (sd_notify: the unit is Type=notify) and libmicrohttpd
# (--metrics-port) with dlopen, which dpkg-shlibdeps does not see; `mearas top`
# parses the metrics with prometheus_client
control mearas-host "python3 (>= 3.11), python3-protobuf (>= $pbver), python3-etcd3gw, \
python3-prometheus-client, libsystemd0, passwd" \
	"Recommends: libvirt-daemon-system, libmicrohttpd12" \
	"Suggests: etcd-server" \
	"Section: admin" \
	"Priority: optional" \
	"Description: GPU virtualization for KVM guests (host side)" \
	" mearasd, the root daemon that runs the CUDA calls of guests and local" \
	" processes on this node's GPUs (or a host-memory model, --device=sim), the" \
	" mearas assembly manager (the mearas command and its node agent), the" \
	" libvirt qemu hook that books a VM's declared assembly, and a private copy" \
	" of the front-end libraries for \`mearas run\` (not on the loader's path)."
control mearas-guest "dkms" \
	"Conflicts: libcuda1, libnvidia-ml1" \
	"Section: misc" \
	"Priority: optional" \
	"Description: GPU virtualization for KVM guests (guest side)" \
	" The CUDA front-end libraries (libcuda.so.1, libcudart.so.13," \
	" libnvidia-ml.so.1) on the loader's path and the mearas kernel module as" \
	" DKMS source. Meant for VMs: on a machine with NVIDIA's driver the" \
	" libraries would shadow it."
