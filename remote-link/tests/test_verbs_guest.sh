#!/usr/bin/env bash
# The verbs transport for real: a QEMU TCG guest (Debian kernel, busybox
# initramfs) loads Soft-RoCE (rdma_rxe) on a virtio NIC attached to an empty
# QEMU hub (no traffic leaves the guest); a link_node server and client in the
# guest talk over an RC queue pair. Prints "N passed, N failed".
set -u
# $1: the directory of link_node (absolute, or from the repository's top)
NODE=$(cd "$(dirname "$0")/../.." && cd "${1:-build/remote-link}" && pwd)/link_node
KVER=${KVER:-$(ls /usr/lib/modules | sort | tail -1)}
KERNEL=/boot/vmlinuz-$KVER
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
IR=$WORK/root
passed=0 failed=0

fail_setup() { echo "FAIL guest_setup ($1)"; echo "0 passed, 1 failed"; exit 1; }
for tool in qemu-system-x86_64 busybox cpio modinfo; do
	command -v $tool >/dev/null || fail_setup "$tool missing"
done
[ -r "$KERNEL" ] || fail_setup "no kernel $KERNEL"
[ -x "$NODE" ] || fail_setup "no $NODE"

copy_with_libs() {
	for f in "$@"; do
		mkdir -p "$IR$(dirname "$f")" && cp -L "$f" "$IR$f" || return 1
		for lib in $(ldd "$f" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}'); do
			mkdir -p "$IR$(dirname "$lib")" && cp -Ln "$lib" "$IR$lib" 2>/dev/null
		done
	done
}

# Modules and their dependencies, dependencies first.
declare -A seen
order=()
add_module() {
	[ -n "${seen[$1]:-}" ] && return
	seen[$1]=1
	local d
	for d in $(modinfo -k "$KVER" -F depends "$1" | tr ',' ' '); do add_module "$d"; done
	order+=("$1")
}
for m in crc32_generic virtio_pci virtio_net udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe; do
	add_module $m
done

mkdir -p "$IR"/{bin,proc,sys,dev,tmp,modules,etc/libibverbs.d}
cp /usr/bin/busybox "$IR/bin/busybox" || fail_setup "busybox copy"
provider=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
[ -n "$provider" ] || fail_setup "rxe provider (ibverbs-providers) missing"
copy_with_libs "$NODE" /usr/bin/rdma "$provider" || fail_setup "copy binaries"
cp /etc/libibverbs.d/rxe.driver "$IR/etc/libibverbs.d/"
mv "$IR$NODE" "$IR/link_node"
for m in "${order[@]}"; do
	f=$(modinfo -k "$KVER" -F filename "$m")
	case "$f" in
	*.ko) cp "$f" "$IR/modules/$m.ko" ;;
	*.ko.xz) xz -dc "$f" >"$IR/modules/$m.ko" ;;
	*) ;; # built into the kernel
	esac
	[ -f "$IR/modules/$m.ko" ] && echo "$m" >>"$IR/modules/order"
done

cat >"$IR/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do insmod /modules/$m.ko || echo "GUEST insmod $m failed"; done
ip link set lo up
ip link set eth0 up && ip addr add 10.250.0.1/24 dev eth0
sleep 1
/usr/bin/rdma link add rxe0 type rxe netdev eth0 && echo "GUEST rxe ready"
K=guest-cluster-key
# an emulated guest runs the first handshake of a process far slower than 3 s
export LINK_HANDSHAKE_MS=20000
# TLS covers TCP links only: verbs links run with link encryption off on both ends
export LINK_ENCRYPTION=off
/link_node serve 10.250.0.1 7700 $K >/tmp/srv.log 2>&1 &
SRV=$!
sleep 1
export LINK_TRANSPORT=verbs
/link_node call 10.250.0.1 7700 $K; echo "GUEST call_verbs rc=$?"
/link_node call 10.250.0.1 7700 wrong-key; echo "GUEST wrong_key_verbs rc=$?"
/link_node bulk 10.250.0.1 7700 $K 32; echo "GUEST bulk_verbs rc=$?"
/link_node rate 10.250.0.1 7700 $K 20000 on; echo "GUEST rate_on_verbs rc=$?"
/link_node rate 10.250.0.1 7700 $K 5000 off; echo "GUEST rate_off_verbs rc=$?"
LINK_TRANSPORT=tcp /link_node bulk 10.250.0.1 7700 $K 32; echo "GUEST bulk_tcp rc=$?"
# Server killed mid-transfer: the verbs client fails (side channel EOF), no hang.
/link_node cut 10.250.0.1 7700 $K >/tmp/cut.log 2>&1 &
CUT=$!
for i in $(seq 100); do grep -q STARTED /tmp/cut.log && break; sleep 0.2; done
kill -9 $SRV
wait $CUT; echo "GUEST cut_verbs rc=$?"
sed 's/^/GUEST cut: /' /tmp/cut.log
sed 's/^/GUEST server: /' /tmp/srv.log
/link_node serve 10.250.0.1 7700 $K >/tmp/srv2.log 2>&1 &
SRV=$!
sleep 1
/link_node call 10.250.0.1 7700 $K; echo "GUEST restart_call_verbs rc=$?"
kill $SRV; wait $SRV
echo "GUEST done"
poweroff -f
INIT
chmod +x "$IR/init"
(cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initramfs.gz" || fail_setup "cpio"

timeout 400 qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -nographic -no-reboot \
	-kernel "$KERNEL" -initrd "$WORK/initramfs.gz" -append "console=ttyS0 panic=-1 quiet" \
	-netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0 >"$WORK/console.log" 2>&1
grep -E "GUEST|MEASURE|RESULT|remote-link" "$WORK/console.log" | tr -d '\r' |
	sed -e 's/\x1bc//g' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/^/  /'

check() { # name pattern
	if grep -q "$2" "$WORK/console.log"; then passed=$((passed + 1)); echo "PASS $1"
	else failed=$((failed + 1)); echo "FAIL $1"; fi
}
check guest_rxe_ready "GUEST rxe ready"
check verbs_call "GUEST call_verbs rc=0"
check verbs_wrong_key_refused "RESULT -4 "
check verbs_bulk "GUEST bulk_verbs rc=0"
check verbs_rate_batching_on "GUEST rate_on_verbs rc=0"
check verbs_rate_batching_off "GUEST rate_off_verbs rc=0"
check verbs_server_saw_link_over_verbs "open over verbs"
check verbs_server_killed_client_fails "GUEST cut_verbs rc=0"
check verbs_restarted_server_accepts "GUEST restart_call_verbs rc=0"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
