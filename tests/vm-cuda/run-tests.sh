#!/usr/bin/env bash
# CUDA through a VM: mearasd --device=sim --vm=... as the guest's ivshmem
# server, plain QEMU (TCG) guests running nvcc-built programs on mearas'
# libcudart. Prints PASS/FAIL lines, then "N passed, N failed" last; exits
# non-zero on any failure. Usage: run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mearasd=$repo/build/bin/mearasd
guest=$build/guest
qemu=${MEARAS_QEMU:-qemu-system-x86_64}
kernel=$guest/vmlinux
[ -f "$kernel" ] || kernel=$guest/vmlinuz
work=$(mktemp -d /tmp/mvc.XXXXXX)   # short: socket paths must fit sun_path
log=$work/mearasd.log
passed=0 failed=0 mpid=""

. "$(dirname "$0")/lib.sh"

cleanup() {
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	[ -n "${qpid:-}" ] && kill -9 "$qpid" 2>/dev/null
	return 0
}
trap cleanup EXIT

# relay PREFIX COMMAND...: runs a sub-script, counting its PASS/FAIL lines
# here under PREFIX+NAME (its own closing count line is dropped)
relay() {
	local prefix=$1 line
	shift
	while IFS= read -r line; do
		case $line in
		PASS\ *) pass "$prefix${line#PASS }" ;;
		FAIL\ *) line=${line#FAIL }; fail "$prefix${line%%: *}" "${line#*: }" ;;
		*\ passed,\ *\ failed) ;;
		*) echo "$line" ;;
		esac
	done < <("$@" 2>&1)
}
serving() { grep -c 'VM a: serving' "$log"; }
worker_pid() { grep 'VM a: worker pid' "$log" | tail -n1 | awk '{print $NF}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# qemu_start NAME ARG [SECS]: boots the guest on mearasd's VM socket in the
# background (console in $work/NAME.log), sets qpid
qemu_start() { vm_start "$work/a.sock" "$work/$1.log" "$work/$1.err" "$2" "${3:-0}"; }
# the guest's own PASS/FAIL lines, its exit and a clean kernel
collect() {
	local name=$1 f=$work/$1.log
	guest_lines "$name/" '^  .*(round trip|MB/s|error after)' "$f"
	check "$name/guest-exit-0" "grep -q '^MEARAS-EXIT 0' '$f'"
	check "$name/guest-kernel-clean" "grep -q '^MEARAS-KERNEL-CLEAN' '$f'"
}

start=$(date +%s)
command -v "$qemu" >/dev/null || { echo "FAIL qemu: $qemu not found (scripts/deps/apt-vm.txt)"; echo "0 passed, 1 failed"; exit 1; }
: > "$log"
# MEARAS_TEST_PRINTF=1: the VM worker writes a marker to its stdout and
# stderr at every synchronizing completion (the sim device prints nothing),
# which must reach the guest program's stdout/stderr through its slot
MEARAS_TEST_PRINTF=1 "$mearasd" --device=sim --socket="$work/m.sock" --vm="a:$work/a.sock:256" > "$log" 2>&1 &
mpid=$!
check mearasd-serves-vm "wait_for '[ \$(serving) -ge 1 ] && [ -S $work/a.sock ]' 20"
check bad-vm-size-refused "! '$mearasd' --device=sim --socket=$work/x.sock --vm=b:$work/b.sock:100 2>/dev/null"

echo "== basic: properties, round trips, errors, two processes, killed processes, module unload"
qemu_start basic basic
qemu_wait 240
collect basic
check basic/device-stdout-carried "grep -q '^mearas test printf: slot [0-7] stdout' '$work/basic.log'"
check basic/device-stderr-carried "grep -q '^mearas test printf: slot [0-7] stderr' '$work/basic.log'"
check basic/device-output-not-in-mearasd-log "! grep -q 'mearas test printf' '$log'"
check basic/slots-given-back "[ \$(grep -c 'given back' '$log') -ge 14 ]" "$(grep -c 'given back' "$log") give-backs"

echo "== idle: a guest program sleeping with CUDA initialized"
wait_for "[ \$(serving) -ge 2 ]" 20
wpid=$(worker_pid)
qemu_start idle sleep 8
if wait_for "grep -qs GUEST-READY '$work/idle.log'" 90; then
	sleep 0.5
	t0=$(cpu_ticks "$wpid"); sleep 2; t1=$(cpu_ticks "$wpid")
	echo "  VM worker $wpid: $((t1 - t0)) clock ticks of CPU in 2 s while the guest program sleeps"
	check idle/worker-uses-no-cpu "[ $((t1 - t0)) -le 2 ]" "$((t1 - t0)) ticks in 2 s"
else
	fail idle/guest-ready "no GUEST-READY"
fi
qemu_wait 120
collect idle

echo "== kill: QEMU SIGKILLed while a guest program holds GPU memory"
wait_for "[ \$(serving) -ge 3 ]" 20
wpid=$(worker_pid)
before=$(grep -c 'freed' "$log")
qemu_start kill sleep 120
if wait_for "grep -qs GUEST-READY '$work/kill.log'" 90; then
	kill -9 "$qpid"; wait "$qpid" 2>/dev/null; qpid=""
	check kill/worker-exits "wait_for '! kill -0 $wpid 2>/dev/null' 10"
	check kill/slot-freed "[ \$(grep -c 'freed' '$log') -gt $before ]"
	check kill/disconnect-seen "grep -q 'guest disconnected' '$log'"
	check kill/next-worker-serves "wait_for '[ \$(serving) -ge 4 ]' 20"
else
	fail kill/guest-ready "no GUEST-READY"
	qemu_wait 1
fi

echo "== hostile: a guest program scribbling over its slot and the VM header"
wait_for "[ \$(serving) -ge 4 ]" 20
qemu_start hostile hostile
qemu_wait 120
collect hostile
check hostile/mearasd-alive "kill -0 $mpid"
check hostile/misbehaviour-logged "grep -q 'broke its rings' '$log'"
check hostile/next-worker-serves "wait_for '[ \$(serving) -ge 5 ]' 20"

echo "== next VM after the hostile one; a slot worker killed under one of two guest processes"
qemu_start next slotdead
if wait_for "grep -qs GUEST-VICTIM '$work/next.log'" 150; then
	vpid=$(tr -d '\r' < "$work/next.log" | sed -n 's/^GUEST-VICTIM //p' | head -n1)
	spid=$(grep "guest pid $vpid): slot worker" "$log" | tail -n1 | awk '{print $NF}')
	wpid=$(worker_pid)
	if [ -n "$spid" ] && kill -9 "$spid"; then
		pass next/slot-worker-killed
	else
		fail next/slot-worker-killed "no slot worker for guest pid $vpid"
	fi
	check next/slot-death-logged "wait_for \"grep -q 'slot [0-7] worker $spid killed by signal 9' '$log'\" 10"
	check next/vm-worker-survives "kill -0 $wpid"
else
	fail next/guest-victim "no GUEST-VICTIM"
fi
qemu_wait 150
collect next

echo "== dead: the VM worker is killed under a sleeping guest program"
wait_for "[ \$(serving) -ge 6 ]" 20
wpid=$(worker_pid)
qemu_start dead dead 6
if wait_for "grep -qs GUEST-READY '$work/dead.log'" 90; then
	kill -9 "$wpid"
	qemu_wait 120
	collect dead
else
	fail dead/guest-ready "no GUEST-READY"
	qemu_wait 1
fi
check dead/supervisor-restarts-worker "wait_for '[ \$(serving) -ge 7 ]' 20"

echo "== libvirt: a domain of type qemu (vm-configs/mearas-vm.xml) on mearasd's VM socket"
wait_for "[ \$(serving) -ge 7 ]" 20
relay "" "$(dirname "$0")/libvirt-test.sh" "$guest" "$work/a.sock" "$work"
check libvirt/next-worker-serves "wait_for '[ \$(serving) -ge 8 ]' 20"

echo "== orphan: the VM's supervisor and worker SIGKILLed under a sleeping guest program"
wait_for "[ \$(serving) -ge 8 ]" 20
wpid=$(worker_pid)
spid=$(ps -o ppid= -p "$wpid" | tr -d ' ')
qemu_start orphan dead 4
if wait_for "grep -qs GUEST-READY '$work/orphan.log'" 90; then
	kill -9 "$spid"
	check orphan/worker-dies-with-supervisor "wait_for '! kill -0 $wpid 2>/dev/null' 10"
	t0=$(date +%s)
	qemu_wait 120
	echo "  guest finished $(( $(date +%s) - t0 )) s after the kill (heartbeat timeout 5 s)"
	collect orphan
else
	fail orphan/guest-ready "no GUEST-READY"
	qemu_wait 1
fi

echo "== stop: mearasd's SIGTERM takes its VM processes along"
kids=$(pgrep -P "$mpid" | tr '\n' ' ')
kill "$mpid"
check stop/mearasd-exits "wait_for '! kill -0 $mpid 2>/dev/null' 10"
check stop/vm-processes-exit "wait_for '(for p in $kids; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0)' 10" "left: $kids"
check stop/socket-removed "wait_for '[ ! -e $work/a.sock ]' 5"
mpid=""

echo "== GPU-machine suite script (gpu-bundle.sh + gpu-suite.sh, local and --remote) against mearasd --device=sim"
relay "suite/" "$(dirname "$0")/suite-test.sh"

echo "== hostpy: this machine's python3 in a guest, over a virtio-9p share of its root (guestpy.py, guest/hostpy.sh)"
relay "" "$(dirname "$0")/hostpy-test.sh" "$guest" "$work"

echo "== assembly: a VM given 1 local + 1 remote vGPU by AttachVm on a running mearasd"
relay "" "$(dirname "$0")/assembly-test.sh" "$guest" "$work"

echo "== libvirt + hook: virsh create of domains with assembly metadata (1 local + 2 remote vGPUs, nodes in network namespaces), restarts, failures"
relay "" "$(dirname "$0")/libvirt-assembly-test.sh" "$guest" "$work"

echo "== took $(( $(date +%s) - start )) s"
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "logs kept in $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
