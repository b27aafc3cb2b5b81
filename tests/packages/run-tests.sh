#!/bin/bash
# Packages and install, CPU lane (root; docs/packaging.md):
#  - make install / uninstall (and the guest targets) into a DESTDIR and into
#    a PREFIX, with every mount of the machine read-only but one tmpfs (a
#    private mount namespace): a write outside DESTDIR/PREFIX fails the run;
#    uninstall leaves no file;
#  - the packages of `make deb` installed with apt into a fresh Debian root
#    (debootstrap --variant=minbase from the mirror this machine uses; the
#    root is cached as build/packages/root-*.tar.zst, downloaded .debs in
#    build/packages/apt-archives) and smoke-tested from there (in-root.sh).
# Expects the build, build/deb/*.deb and tests/sim/build/mem_roundtrip
# (make -C tests/packages all). One line per test, "N passed, M failed,
# K skipped" last; exits non-zero when anything failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=$("$ROOT/scripts/pkg-version.sh")
ARCH=$(dpkg --print-architecture)
PROG=$ROOT/tests/sim/build/mem_roundtrip
CACHE=$ROOT/build/packages
SUITE=${MEARAS_DEBIAN_SUITE:-bookworm}
# not under build/: the top Makefile includes every *.d file it finds there
TMP=$(mktemp -d /var/tmp/mearas-pkgtest.XXXXXX)
passed=0
failed=0
skipped=0
cleanup() {
	# the Debian root's mounts lived in a mount namespace that is gone
	rm -rf --one-file-system "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
# count the PASS/FAIL/SKIP lines of a nested run
tally() {
	local line
	while IFS= read -r line; do
		echo "$line"
		case $line in
		PASS\ *) passed=$((passed + 1)) ;;
		FAIL\ *) failed=$((failed + 1)) ;;
		SKIP\ *) skipped=$((skipped + 1)) ;;
		esac
	done
}

if [ "$(id -u)" != 0 ]; then
	echo "packages: needs root (mount namespaces, chroot)"
	echo "0 passed, 1 failed"
	exit 1
fi

# ro_world SCRIPT: runs bash SCRIPT with every mount read-only but a tmpfs
# at $W (exported) and the folders of generated code, build/ and the
# manager's (`make install` runs `make all` and `make proto`, which rewrite a
# generated file or two), in a private mount namespace; its "PASS/FAIL"
# lines on stdout
mkdir -p "$TMP/w"
ro_world() {
	W=$TMP/w ROOTDIR=$ROOT VERSION=$VERSION unshare -m bash -c '
		set -u
		mount --make-rprivate /
		rw="$ROOTDIR/build $ROOTDIR/assembly-manager/mearas_am/generated"
		for d in $rw; do mount --bind "$d" "$d"; done
		bad=
		while read -r mp; do
			[[ " $rw " == *" $mp "* ]] && continue
			mount -o remount,bind,ro "$mp" 2>/dev/null || bad="$bad $mp"
		done < <(awk "{print \$5}" /proc/self/mountinfo)
		mount -t tmpfs -o size=512m tmpfs "$W"
		mkdir "$W/tmp"
		export TMPDIR=$W/tmp # the compiler'"'"'s, should make rebuild anything
		if touch "$ROOTDIR/.ro-probe" 2>/dev/null || touch /etc/.mearas-ro-probe 2>/dev/null; then
			rm -f "$ROOTDIR/.ro-probe" /etc/.mearas-ro-probe
			echo "FAIL ro_world: the machine is still writable (not read-only:$bad)"
			exit 0
		fi
		'"$1"
}

# ---- 1. install into a DESTDIR writes there only and puts every part
ro_world '
	d=$W/d
	if ! make -s -C "$ROOTDIR" install install-guest DESTDIR="$d" >"$W/log" 2>&1; then
		echo "FAIL install_destdir: make install install-guest DESTDIR (a write outside it?)"
		tail -n 15 "$W/log" | sed "s/^/    | /"
		exit 0
	fi
	ma=$(gcc -print-multiarch)
	missing=
	for f in usr/local/sbin/mearasd usr/local/bin/mearas etc/mearas/am.toml etc/libvirt/hooks/qemu.d/mearas \
		usr/local/lib/mearas/python/mearas_am/cli.py usr/local/lib/mearas/python/mearas_am/generated/control_pb2.py \
		usr/local/lib/mearas/libcuda.so.1 usr/local/lib/mearas/libcudart.so.13 usr/local/lib/mearas/libnvidia-ml.so.1 \
		usr/local/lib/$ma/mearas/libcuda.so.1 usr/local/lib/$ma/mearas/libcudart.so.13 \
		usr/local/lib/$ma/mearas/libnvidia-ml.so.1 etc/ld.so.conf.d/mearas-guest.conf \
		usr/local/src/mearas-$VERSION/dkms.conf usr/local/src/mearas-$VERSION/Kbuild \
		usr/local/src/mearas-$VERSION/include/mearas/kmod_uapi.h; do
		[ -f "$d/$f" ] || missing="$missing $f"
	done
	if [ -n "$missing" ]; then
		echo "FAIL install_destdir: missing under DESTDIR:$missing"
	else
		echo "PASS install_destdir"
	fi
	# ---- 2. uninstall from the DESTDIR leaves no file and no mearas folder
	make -s -C "$ROOTDIR" uninstall uninstall-guest DESTDIR="$d" >"$W/log" 2>&1 || {
		echo "FAIL uninstall_destdir: make uninstall uninstall-guest failed"
		tail -n 15 "$W/log" | sed "s/^/    | /"
		exit 0
	}
	left=$(cd "$d" && { find . ! -type d; find . -type d -name "*mearas*"; } | head -5)
	if [ -n "$left" ]; then
		echo "FAIL uninstall_destdir: left:" $left
	else
		echo "PASS uninstall_destdir"
	fi
' > "$TMP/out"
tally < "$TMP/out"

# ---- 3. install into a PREFIX (no DESTDIR): the paths follow it, the mearas
# command runs from there; uninstall leaves nothing, its byte code included
ro_world '
	p=$W/p
	if ! make -s -C "$ROOTDIR" install PREFIX="$p" SYSCONFDIR="$p/etc" >"$W/log" 2>&1; then
		echo "FAIL install_prefix: make install PREFIX (a write outside it?)"
		tail -n 15 "$W/log" | sed "s/^/    | /"
		exit 0
	fi
	why=
	grep -q "^exec $p/bin/mearas --config $p/etc/mearas/am.toml hook-qemu" "$p/etc/libvirt/hooks/qemu.d/mearas" ||
		why="the hook does not run $p/bin/mearas with $p/etc/mearas/am.toml"
	grep -q "^libdir = \"$p/lib/mearas\"" "$p/etc/mearas/am.toml" || why="$why; am.toml libdir is not $p/lib/mearas"
	"$p/bin/mearas" --help >"$W/help" 2>&1 && grep -q node-agent "$W/help" || why="$why; $p/bin/mearas --help failed"
	"$p/sbin/mearasd" --help >/dev/null 2>&1 || why="$why; $p/sbin/mearasd --help failed"
	if [ -n "$why" ]; then echo "FAIL install_prefix: ${why#; }"; else echo "PASS install_prefix"; fi
	# the systemd units start the installed programs
	why=
	for u in "$ROOTDIR/host-backend/systemd/mearasd.service:$p/sbin/mearasd" \
		 "$ROOTDIR/assembly-manager/systemd/mearas-agent.service:$p/bin/mearas"; do
		src=${u%%:*}
		prog=${u#*:}
		if [ ! -f "$src" ]; then
			why="$why; no $src"
			continue
		fi
		f=$p/lib/systemd/system/$(basename "$src")
		exe=$(sed -n "s/^ExecStart=\([^ ]*\).*/\1/p" "$f" 2>/dev/null)
		[ "$exe" = "$prog" ] && [ -x "$exe" ] || why="$why; $(basename "$src") starts '"'"'$exe'"'"', not $prog"
	done
	if [ -n "$why" ]; then
		echo "FAIL units_prefix: ${why#; }"
	else
		echo "PASS units_prefix"
	fi
	make -s -C "$ROOTDIR" uninstall PREFIX="$p" SYSCONFDIR="$p/etc" >"$W/log" 2>&1
	left=$(cd "$p" && { find . ! -type d; find . -type d -name "*mearas*"; } | head -5)
	if [ -n "$left" ]; then echo "FAIL uninstall_prefix: left:" $left; else echo "PASS uninstall_prefix"; fi
' > "$TMP/out"
tally < "$TMP/out"

# ---- 4. a changed config survives install and uninstall
ro_world '
	d=$W/c
	make -s -C "$ROOTDIR" install DESTDIR="$d" >"$W/log" 2>&1 &&
		echo "# the operator'"'"'s line" >>"$d/etc/mearas/am.toml" &&
		make -s -C "$ROOTDIR" install DESTDIR="$d" >>"$W/log" 2>&1 &&
		make -s -C "$ROOTDIR" uninstall DESTDIR="$d" >>"$W/log" 2>&1 || {
		echo "FAIL keep_changed_config: make install/uninstall failed"
		tail -n 15 "$W/log" | sed "s/^/    | /"
		exit 0
	}
	left=$(cd "$d" && find . ! -type d)
	if [ "$left" = ./etc/mearas/am.toml ] && grep -q "operator.s line" "$d/etc/mearas/am.toml"; then
		echo "PASS keep_changed_config"
	else
		echo "FAIL keep_changed_config: left after uninstall: $(echo $left) (want the changed ./etc/mearas/am.toml only)"
	fi
' > "$TMP/out"
tally < "$TMP/out"

echo "    (install/uninstall tests: $SECONDS s)"

# ---- 5. the packages in a fresh Debian root
debs=("$ROOT"/build/deb/mearas-host_"${VERSION}"_"$ARCH".deb "$ROOT"/build/deb/mearas-guest_"${VERSION}"_"$ARCH".deb)
root_ok=1
for f in "${debs[@]}" "$PROG"; do
	if [ ! -f "$f" ]; then
		fail debian_root "$f missing (make -C tests/packages all)"
		root_ok=0
	fi
done
# the mirror and suites this machine's apt uses (deb822 or one-line format)
sources=/etc/apt/sources.list.d/debian.sources
if [ -f "$sources" ]; then
	mirror=$(awk '/^URIs:/ {print $2; exit}' "$sources")
else
	mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	sources=
fi
mirror=${MEARAS_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}
key=$(printf '%s\n' "$SUITE" "$mirror" "$(cat "$sources" 2>/dev/null)" | sha256sum | cut -c1-12)
tarball=$CACHE/root-$SUITE-minbase-$key.tar.zst
root=$TMP/root
mkdir -p "$CACHE/apt-archives/partial" "$root"
if [ $root_ok = 1 ] && [ ! -f "$tarball" ]; then
	start=$(date +%s)
	if debootstrap --variant=minbase "$SUITE" "$TMP/bootstrap" "$mirror" >"$TMP/debootstrap.log" 2>&1; then
		if [ -n "$sources" ]; then
			rm -f "$TMP/bootstrap/etc/apt/sources.list"
			cp "$sources" "$TMP/bootstrap/etc/apt/sources.list.d/"
		fi
		tar -C "$TMP/bootstrap" -cf - . | zstd -q -T0 >"$tarball.tmp" && mv "$tarball.tmp" "$tarball"
		rm -rf --one-file-system "$TMP/bootstrap"
		echo "debootstrap $SUITE from $mirror: $(($(date +%s) - start)) s, cached in ${tarball#$ROOT/}"
	else
		fail debian_root "debootstrap --variant=minbase $SUITE $mirror failed"
		tail -n 15 "$TMP/debootstrap.log" | sed 's/^/    | /'
		root_ok=0
	fi
fi
if [ $root_ok = 1 ] && ! zstd -dc "$tarball" | tar -C "$root" -xf -; then
	fail debian_root "cannot unpack $tarball"
	root_ok=0
fi
if [ $root_ok = 1 ]; then
	mkdir -p "$root/mearas-test"
	cp "${debs[@]}" "$PROG" "$HERE/in-root.sh" "$root/mearas-test/"
	# a root thrown away after the run: dpkg need not fsync every file it unpacks
	echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/mearas-test-unsafe-io"
	start=$(date +%s)
	R=$root unshare -m -p -f --kill-child bash -c '
		set -e
		mount --make-rprivate /
		mount -t proc proc "$R/proc"
		mount -t tmpfs tmpfs "$R/run"
		mount -t tmpfs tmpfs "$R/tmp"
		mkdir -p "$R/dev/shm" && mount -t tmpfs tmpfs "$R/dev/shm"
		mount --bind "'"$CACHE"'/apt-archives" "$R/var/cache/apt/archives"
		cp /etc/resolv.conf "$R/etc/resolv.conf"
		exec chroot "$R" /mearas-test/in-root.sh "'"$VERSION"'"
	' >"$TMP/out" 2>&1
	tally <"$TMP/out"
	echo "debian root: install, smoke test, removal: $(($(date +%s) - start)) s"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
