#!/bin/bash
# Runs inside the fresh Debian root (chroot, private mount and PID
# namespaces: run-tests.sh sets them up): installs the packages from
# /mearas-test with apt, smoke-tests what they installed, removes and purges
# them. One line per test: "PASS name", "FAIL name: why" or "SKIP name: why".
#   in-root.sh VERSION
set -u
version=$1
T=/mearas-test
export DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
log=$T/log
mkdir -p "$log"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# last LINES lines of a log, indented, for a failure's context
show() { tail -n "${2:-15}" "$1" | sed 's/^/    | /'; }
# seconds since the previous mark, for the run's time budget
mark=$SECONDS
took() { echo "    ($1: $((SECONDS - mark)) s)"; mark=$SECONDS; }

# ---- the kernel headers first, as an operator would install them, so that
# the guest package's postinst has a kernel to build the module for; and
# etcd-server (mearas-host suggests it) for the cluster registry and
# libmicrohttpd12 (it recommends it) for the metrics endpoint
kver=-
if apt-get update -q >"$log/update" 2>&1 &&
	apt-get install -y -q --no-install-recommends linux-headers-amd64 etcd-server \
		libmicrohttpd12 >"$log/headers" 2>&1; then
	for b in /lib/modules/*/build; do [ -d "$b/" ] && kver=$(basename "$(dirname "$b")"); done
else
	echo "    (no linux-headers-amd64 or etcd-server from the mirror)"
	show "$log/headers" 5
fi

took "apt-get update, headers, etcd-server"
# ---- mearas-guest refuses a machine where NVIDIA's driver is loaded (its
# libraries would shadow the driver's): a /proc/driver/nvidia/version of
# our own, bound over /proc/driver
mkdir -p /tmp/fake-driver/nvidia
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module (fake, for the test)" >/tmp/fake-driver/nvidia/version
if ! mount --bind /tmp/fake-driver /proc/driver 2>"$log/nvidia"; then
	skip guest_refuses_nvidia "cannot bind a fake /proc/driver/nvidia: $(cat "$log/nvidia")"
else
	dpkg -i "$T"/mearas-guest_*.deb >"$log/nvidia" 2>&1
	rc=$?
	umount /proc/driver
	st=$(dpkg-query -W -f='${db:Status-Status}' mearas-guest 2>/dev/null)
	if [ $rc -ne 0 ] && grep -q "NVIDIA's driver runs on this machine" "$log/nvidia" &&
		{ [ -z "$st" ] || [ "$st" = not-installed ]; } && [ ! -e /etc/ld.so.conf.d/mearas-guest.conf ]; then
		pass guest_refuses_nvidia
	else
		fail guest_refuses_nvidia "dpkg -i mearas-guest beside NVIDIA's driver: exit $rc, state '$st'"
		show "$log/nvidia"
	fi
	dpkg --purge mearas-guest >/dev/null 2>&1
fi

# ---- apt resolves the packages' Depends from the mirror and installs them
if apt-get install -y -q --no-install-recommends "$T"/mearas-host_*.deb "$T"/mearas-guest_*.deb \
		>"$log/install" 2>&1; then
	pass apt_install
else
	fail apt_install "apt-get install ./mearas-host ./mearas-guest failed"
	show "$log/update" 5
	show "$log/install" 30
	exit 0
fi

took "install of the packages (dkms build included)"
# ---- mearasd: --help, --version (the package's version)
if /usr/sbin/mearasd --help >"$log/help" 2>&1 && grep -q -- '--device' "$log/help"; then
	pass mearasd_help
else
	fail mearasd_help "mearasd --help"
	show "$log/help"
fi
if v=$(/usr/sbin/mearasd --version 2>&1) && [[ $v == *"$version"* ]]; then
	pass mearasd_version
else
	fail mearasd_version "mearasd --version printed '$v', the package is $version"
fi

# ---- mearasd --device=sim on its default sockets, a CUDA program through
# the guest package's libraries (found by the loader: ld.so.conf.d)
# (on the node name of the shipped /etc/mearas/am.toml: `mearas run` below)
node=$(sed -n 's/^name *= *"\([^"]*\)".*/\1/p' /etc/mearas/am.toml | head -1)
mkdir -p /run/mearas
/usr/sbin/mearasd --device=sim --node-name="${node:-$(hostname)}" --metrics-port=9400 >"$log/mearasd" 2>&1 &
mpid=$!
for _ in $(seq 100); do [ -S /run/mearas/mearasd.sock ] && break; sleep 0.05; done
if [ ! -S /run/mearas/mearasd.sock ]; then
	fail mearasd_sim "no /run/mearas/mearasd.sock"
	show "$log/mearasd"
else
	pass mearasd_sim
	want=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/mearas
	got=$(ldd "$T/mem_roundtrip" | awk '$1 == "libcudart.so.13" {print $3}')
	if [ "$got" != "$want/libcudart.so.13" ]; then
		fail sim_program "the loader finds libcudart.so.13 at '$got', not in $want"
	elif "$T/mem_roundtrip" 1 4096 1048576 >"$log/prog" 2>&1; then
		pass sim_program
	else
		fail sim_program "mem_roundtrip through the installed libraries failed"
		show "$log/prog"
		show "$log/mearasd"
	fi
fi

# ---- mearas top reads mearasd's metrics (libmicrohttpd, Debian's
# python3-prometheus-client)
if mearas top --once --json --url http://127.0.0.1:9400/metrics >"$log/top" 2>&1 &&
	python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])) else 1)' "$log/top"; then
	pass metrics_top
else
	fail metrics_top "mearas top --once --json on mearasd --metrics-port"
	show "$log/top"
fi

# ---- the assembly manager on Debian's python3 packages
if mearas --help >"$log/mearas" 2>&1 && grep -q node-agent "$log/mearas"; then
	pass mearas_help
else
	fail mearas_help "mearas --help"
	show "$log/mearas"
fi
# every module imports (etcd3gw and the generated protobuf code included)
if python3 - >"$log/imports" 2>&1 <<'PY'
import importlib, pkgutil, mearas_am
for m in pkgutil.walk_packages(mearas_am.__path__, "mearas_am."):
    importlib.import_module(m.name)
PY
then
	pass manager_imports
else
	fail manager_imports "a mearas_am module does not import with Debian's packages"
	show "$log/imports"
fi

# ---- `mearas run`: the node agent publishes the node, run books an
# assembly through mearasd's control socket and runs the program on the host
# package's own copy of the libraries (the config's libdir), then releases it
if mearas node-agent --once >"$log/run" 2>&1 &&
	mearas run --vgpus 1 --memory 1GiB -- sh -c \
		'ldd "$0" | grep -q " /usr/lib/mearas/libcudart.so.13 " || exit 99; exec "$0" 1 4096' \
		"$T/mem_roundtrip" >>"$log/run" 2>&1; then
	if mearas assemblies --json 2>>"$log/run" | python3 -c 'import json, sys; sys.exit(1 if json.load(sys.stdin) else 0)'; then
		pass mearas_run
	else
		fail mearas_run "the assembly was not released after the program"
		show "$log/run"
	fi
else
	fail mearas_run "mearas run of a CUDA program on /usr/lib/mearas (99: not those libraries)"
	show "$log/run"
	show "$log/mearasd" 5
fi

# ---- the cluster registry on etcd through Debian's python3-etcd3gw: the
# agent publishes the node there and `mearas run` books on it
if ! command -v etcd >/dev/null; then
	skip etcd_registry "no etcd-server"
else
	etcd --name smoke --data-dir /tmp/etcd --listen-client-urls http://127.0.0.1:23790 \
		--advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
		--initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster smoke=http://127.0.0.1:23800 >"$log/etcd" 2>&1 &
	epid=$!
	sed -e 's/^backend = .*/backend = "etcd"/' -e 's/^endpoints = .*/endpoints = ["127.0.0.1:23790"]/' \
		/etc/mearas/am.toml >/tmp/am-etcd.toml
	for _ in $(seq 50); do
		mearas --config /tmp/am-etcd.toml node-agent --once >"$log/etcd-run" 2>&1 && break
		sleep 0.2
	done
	if mearas --config /tmp/am-etcd.toml run --vgpus 1 --memory 1GiB -- "$T/mem_roundtrip" 1 >>"$log/etcd-run" 2>&1 &&
		mearas --config /tmp/am-etcd.toml nodes --json 2>>"$log/etcd-run" |
		python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin) else 1)'; then
		pass etcd_registry
	else
		fail etcd_registry "node-agent/run/nodes on etcd"
		show "$log/etcd-run"
		show "$log/etcd" 5
	fi
	kill "$epid" 2>/dev/null
	wait "$epid" 2>/dev/null
fi

took "mearasd, programs, mearas run, etcd"
# ---- the libvirt hook drop-in, as libvirtd runs it (arguments, the
# domain's XML on stdin, no environment): "prepare begin" books the
# assembly the XML declares for vm:<domain> and has mearasd serve the
# domain's socket, which its <shmem> device names; "release end" frees it
xml='<domain type="kvm"><name>smoke</name><metadata><mearas:assembly
 xmlns:mearas="https://mearas.dev/xmlns/assembly/1" vgpus="1" memory-per-vgpu="1GiB"/></metadata>
 <devices><shmem name="mearas-smoke"><model type="ivshmem-doorbell"/>
 <server path="/run/mearas/vm/smoke.sock"/><msi vectors="2" ioeventfd="on"/></shmem></devices></domain>'
hook=/etc/libvirt/hooks/qemu.d/mearas
owners() { mearas assemblies --json 2>>"$log/hook" | python3 -c 'import json, sys; print(" ".join(sorted(a["owner"] for a in json.load(sys.stdin))))'; }
mearas node-agent --once >"$log/hook" 2>&1 # as the running agent would: the node is live
if ! echo "$xml" | env -i "$hook" smoke prepare begin - >>"$log/hook" 2>&1; then
	fail libvirt_hook "$hook smoke prepare begin failed"
	show "$log/hook"
elif [ "$(owners)" != vm:smoke ]; then
	fail libvirt_hook "after prepare begin the bookings are '$(owners)', not vm:smoke"
	show "$log/hook"
elif [ ! -S /run/mearas/vm/smoke.sock ]; then
	fail libvirt_hook "after prepare begin mearasd serves no /run/mearas/vm/smoke.sock"
	show "$log/hook"
	show "$log/mearasd" 5
elif ! echo "$xml" | env -i "$hook" smoke release end - >>"$log/hook" 2>&1 || [ -n "$(owners)" ] ||
	[ -e /run/mearas/vm/smoke.sock ]; then
	fail libvirt_hook "release end did not free vm:smoke's assembly and socket"
	show "$log/hook"
else
	pass libvirt_hook
fi

# ---- the kernel module: the DKMS source, built by the package's postinst
# for the kernel whose headers are bound in
src=/usr/src/mearas-$version
if [ -f "$src/dkms.conf" ] && [ -f "$src/Kbuild" ] && [ -f "$src/include/mearas/kmod_uapi.h" ]; then
	pass dkms_source
else
	fail dkms_source "$src lacks dkms.conf, Kbuild or include/mearas/kmod_uapi.h"
fi
ko=/lib/modules/$kver/updates/dkms/mearas.ko
if [ "$kver" = - ]; then
	skip dkms_build "linux-headers-amd64 could not be installed"
elif [ -f "$ko" ] || [ -f "$ko.xz" ]; then
	if dkms status -m mearas -v "$version" -k "$kver" 2>/dev/null | grep -q installed; then
		pass dkms_build
	else
		fail dkms_build "$ko there, but dkms status does not say installed"
	fi
else
	fail dkms_build "the postinst did not build $ko"
	show "$log/install" 20
	show /var/lib/dkms/mearas/"$version"/build/make.log 10
fi

took "hook, dkms checks"
# ---- removal: every file the packages shipped goes, but the conffiles;
# the loader forgets the libraries; dkms forgets the module. Purge: the rest.
kill "$mpid" 2>/dev/null
wait "$mpid" 2>/dev/null
dpkg-query -L mearas-host mearas-guest >"$log/files" 2>/dev/null
cat /var/lib/dpkg/info/mearas-host.conffiles /var/lib/dpkg/info/mearas-guest.conffiles >"$log/conffiles"
# what python3 compiled for the manager goes with it too
if dpkg -r mearas-guest mearas-host >"$log/remove" 2>&1; then
	left=$(while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && ! grep -qxF "$f" "$log/conffiles" && echo "$f"; done <"$log/files")
	pycache=$(find /usr/lib/python3/dist-packages/mearas_am 2>/dev/null | head -3)
	if [ -n "$left$pycache" ]; then
		fail remove "left after dpkg -r: $(echo $left $pycache)"
	elif ldconfig -p | grep -q mearas; then
		fail remove "ldconfig still lists mearas libraries"
	elif [ -e /var/lib/dkms/mearas ] || [ -e "$ko" ]; then
		fail remove "dkms still has the module (/var/lib/dkms/mearas or $ko)"
	elif ! [ -f /etc/mearas/am.toml ]; then
		fail remove "dpkg -r removed the conffile /etc/mearas/am.toml"
	else
		pass remove
	fi
else
	fail remove "dpkg -r failed"
	show "$log/remove"
fi
if dpkg --purge mearas-guest mearas-host >"$log/purge" 2>&1; then
	left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done <"$log/conffiles")
	if [ -n "$left" ]; then
		fail purge "left after dpkg --purge: $(echo $left)"
	elif [ -e /etc/mearas ] || [ -e /usr/src/mearas-$version ] || [ -e /usr/lib/mearas ]; then
		fail purge "a mearas folder is left: $(ls -d /etc/mearas /usr/src/mearas-$version /usr/lib/mearas 2>/dev/null)"
	else
		pass purge
	fi
else
	fail purge "dpkg --purge failed"
	show "$log/purge"
fi
took "remove, purge"
