#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian 12 machine.
# Each area lists its Debian packages in scripts/deps/apt-*.txt and its PyPI
# packages in scripts/deps/pip-*.txt (one per line, '#' comments allowed).
# Idempotent: packages already present are not fetched again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want_apt=$(cat "$here"/deps/apt-*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \n' '\n' | sort -u)
missing=()
for p in $want_apt; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: apt: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
want_pip=$(cat "$here"/deps/pip-*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \n' '\n' | sort -u)
if [ -n "$want_pip" ]; then
	# shellcheck disable=SC2086
	python3 -m pip install -q --disable-pip-version-check $want_pip
fi
# QEMU guests started through libvirt (the VM and assembly-manager tests): in
# a container, libvirt cannot give QEMU its own mount namespace ("Unable to
# move ... null mount to /dev/null") and no domain starts; there, QEMU runs
# in the host's. Only where the line is not set already, and only in a
# container.
conf=/etc/libvirt/qemu.conf
in_container() {
	[ -f /.dockerenv ] || [ -f /run/.containerenv ] ||
		grep -qaE 'container=|docker|lxc|kubepods' /proc/1/environ /proc/1/cgroup 2>/dev/null
}
if [ -w "$conf" ] && in_container && ! grep -qE '^[[:space:]]*namespaces[[:space:]]*=' "$conf"; then
	echo "install-deps: $conf: namespaces = [] (a container: QEMU gets no mount namespace of its own)"
	echo 'namespaces = []' >>"$conf"
fi
