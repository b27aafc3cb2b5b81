# Shared by the QEMU TCG guests that run links over Soft-RoCE
# (remote-link/tests/test_verbs_guest.sh, tests/remote/verbs_guest.sh): a
# Debian kernel, a busybox initramfs with the rdma_rxe modules, the rxe
# verbs provider, the `rdma` tool and the caller's binaries with their
# libraries, run on one virtio NIC attached to an empty QEMU hub (no traffic
# leaves the guest). Source it, then:
#   guest_init                 checks the tools, fills $IR (the root) or exits with
#                              "FAIL guest_setup (why)" and a count line
#   guest_copy FILE...         FILE (absolute) and its libraries into the root, same paths
#   guest_pack INIT_SCRIPT     INIT_SCRIPT (a file) as /init; the initramfs
#   guest_run SECONDS MEM_MB CPUS   boots it; the console in $GUEST_WORK/console.log
#   guest_lines                the guest's GUEST/MEASURE/RESULT lines, escapes stripped
# The guest's init loads the modules with guest_modules_up (from /guest_lib_init.sh,
# sourced by the init) and adds rxe0 on eth0 (10.250.0.1/24) with guest_rxe_up.
KVER=${KVER:-$(ls /usr/lib/modules | sort | tail -1)}
GUEST_KERNEL=/boot/vmlinuz-$KVER
GUEST_WORK=$(mktemp -d)
IR=$GUEST_WORK/root

guest_fail_setup() { echo "FAIL guest_setup ($1)"; echo "0 passed, 1 failed"; exit 1; }

guest_copy() {
	local f lib
	for f in "$@"; do
		mkdir -p "$IR$(dirname "$f")" && cp -L "$f" "$IR$f" || return 1
		for lib in $(ldd "$f" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}'); do
			mkdir -p "$IR$(dirname "$lib")" && cp -Ln "$lib" "$IR$lib" 2>/dev/null
		done
	done
	return 0
}

guest_init() {
	local tool m f provider
	for tool in qemu-system-x86_64 busybox cpio modinfo; do
		command -v $tool >/dev/null || guest_fail_setup "$tool missing"
	done
	[ -r "$GUEST_KERNEL" ] || guest_fail_setup "no kernel $GUEST_KERNEL"
	# modules and their dependencies, dependencies first
	declare -gA guest_seen=()
	guest_order=()
	for m in crc32_generic virtio_pci virtio_net udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe; do
		guest_add_module $m
	done
	mkdir -p "$IR"/{bin,proc,sys,dev,tmp,modules,etc/libibverbs.d}
	cp /usr/bin/busybox "$IR/bin/busybox" || guest_fail_setup "busybox copy"
	provider=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
	[ -n "$provider" ] || guest_fail_setup "rxe provider (ibverbs-providers) missing"
	guest_copy /usr/bin/rdma "$provider" || guest_fail_setup "copy rdma"
	cp /etc/libibverbs.d/rxe.driver "$IR/etc/libibverbs.d/"
	for m in "${guest_order[@]}"; do
		f=$(modinfo -k "$KVER" -F filename "$m")
		case "$f" in
		*.ko) cp "$f" "$IR/modules/$m.ko" ;;
		*.ko.xz) xz -dc "$f" >"$IR/modules/$m.ko" ;;
		*) ;; # built into the kernel
		esac
		[ -f "$IR/modules/$m.ko" ] && echo "$m" >>"$IR/modules/order"
	done
	cat >"$IR/guest_lib_init.sh" <<'GINIT'
guest_modules_up() {
	/bin/busybox --install -s /bin
	mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
	for m in $(cat /modules/order); do insmod /modules/$m.ko || echo "GUEST insmod $m failed"; done
	ip link set lo up
	ip link set eth0 up && ip addr add 10.250.0.1/24 dev eth0
}
guest_rxe_up() {
	sleep 1
	/usr/bin/rdma link add rxe0 type rxe netdev eth0 && echo "GUEST rxe ready"
}
GINIT
}

guest_add_module() {
	[ -n "${guest_seen[$1]:-}" ] && return
	guest_seen[$1]=1
	local d
	for d in $(modinfo -k "$KVER" -F depends "$1" | tr ',' ' '); do guest_add_module "$d"; done
	guest_order+=("$1")
}

guest_pack() {
	cp "$1" "$IR/init" && chmod +x "$IR/init" || guest_fail_setup "init"
	(cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) >"$GUEST_WORK/initramfs.gz" || guest_fail_setup "cpio"
}

guest_run() {
	timeout "$1" qemu-system-x86_64 -accel tcg -m "$2" -smp "$3" -nographic -no-reboot \
		-kernel "$GUEST_KERNEL" -initrd "$GUEST_WORK/initramfs.gz" -append "console=ttyS0 panic=-1 quiet" \
		-netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0 >"$GUEST_WORK/console.log" 2>&1
}

guest_lines() {
	grep -E "GUEST|MEASURE|RESULT|remote-link" "$GUEST_WORK/console.log" | tr -d '\r' |
		sed -e 's/\x1bc//g' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g'
}
