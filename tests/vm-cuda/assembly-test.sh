#!/usr/bin/env bash
# A TCG guest whose vGPUs are an assembly of 1 local and 1 remote vGPU, given
# to the VM through the control socket (AttachVm) of a running mearasd: node A
# (--device=sim, --vm-dir) forwards vGPU 1 to node B (a second mearasd on the
# sim device, over loopback, admitted by a cluster key). The guest program
# must see 2 vGPUs whose memory is the booked quotas, and move data through
# each, in two guest processes at once; DetachVm then removes the VM's
# processes on A and the link's on B, and mearasd A keeps running. Then
# mearasd A stops under a guest program of a VM attached again: the
# program's calls fail with a CUDA error (never hang), nothing is left.
# Usage: assembly-test.sh GUEST_DIR WORK_DIR. Prints PASS/FAIL lines.
set -uo pipefail
guest=${1:?} work=${2:?}/asm
repo=$(cd "$(dirname "$0")/../.." && pwd)
mearasd=$repo/build/bin/mearasd
qemu=${MEARAS_QEMU:-qemu-system-x86_64}
kernel=$guest/vmlinux
[ -f "$kernel" ] || kernel=$guest/vmlinuz
pids=() qpid=""

pass() { echo "PASS assembly/$1"; }
fail() { echo "FAIL assembly/$1${2:+: $2}"; }
check() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }
cleanup() {
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null
	for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
	return 0
}
trap cleanup EXIT
wait_for() {
	local i=0
	while ! eval "$1"; do
		i=$((i + 1))
		[ $i -gt $(( ${2:-20} * 10 )) ] && return 1
		sleep 0.1
	done
}
# the manager's own control client (assembly-manager/mearas_am), one request
ctl() {
	PYTHONPATH=$repo/assembly-manager python3 - "$@" <<'EOF'
import sys, time
from mearas_am.control.client import SocketMearasdClient, VmAttachment
from mearas_am.errors import MearasdError
from mearas_am.model import Assembly, VgpuPlacement
sock, what = sys.argv[1], sys.argv[2]
c = SocketMearasdClient(sock, timeout=30)
MiB = 1 << 20
try:
    if what == "instantiate":  # DOMAIN REMOTE_ADDR
        c.instantiate(Assembly("asm-vm", f"vm:{sys.argv[3]}", "test", "exact", (
            VgpuPlacement(0, "node-a", 1, 192 * MiB, ""),
            VgpuPlacement(1, "node-b", 0, 320 * MiB, sys.argv[4])), time.time(),
            identity=f"vm:{sys.argv[3]}"))
    elif what == "attach":  # DOMAIN SOCKET
        print(*c.attach_vm(VmAttachment(sys.argv[3], "asm-vm", sys.argv[4], 256 * MiB)))
    elif what == "detach":
        c.detach_vm(sys.argv[3])
    elif what == "release":
        c.release("asm-vm")
    elif what == "attachments":
        for aid, procs in sorted(c.attachments().items()):
            print(aid, *(f"{vm}:{pid}" for pid, vm in sorted(procs)))
except MearasdError as e:
    print(e)
    sys.exit(1)
EOF
}

mkdir -p "$work"
head -c 32 /dev/urandom | base64 > "$work/key"
port=$((41000 + $$ % 20000))
"$mearasd" --device=sim --socket="$work/b.sock" --control="$work/bc.sock" --node-name=node-b \
	--link-port=$port --link-bind=127.0.0.1 --cluster-key-file="$work/key" > "$work/b.log" 2>&1 &
pids+=($!) bpid=$!
"$mearasd" --device=sim --socket="$work/a.sock" --control="$work/ac.sock" --node-name=node-a \
	--vm-dir="$work/vm" --cluster-key-file="$work/key" > "$work/a.log" 2>&1 &
pids+=($!) apid=$!
if ! wait_for "[ -S '$work/ac.sock' ] && [ -S '$work/bc.sock' ] && grep -q 'link' '$work/b.log'" 20; then
	fail daemons-up "$(tail -n3 "$work/a.log" "$work/b.log")"
	exit 0
fi
dom=asm-guest
out=$(ctl "$work/ac.sock" instantiate $dom 127.0.0.1:$port) || { fail instantiate "$out"; exit 0; }
# a domain that was not booked the assembly gets nothing
out=$(ctl "$work/ac.sock" attach other-dom "$work/vm/o.sock")
check other-domain-refused "[[ \"\$out\" == *'not booked for VM other-dom'* ]]" "$out"
out=$(ctl "$work/ac.sock" attach $dom "$work/vm/$dom.sock") || { fail attach "$out"; exit 0; }
check attach-reply "[ '${out%% *}' = 2 ]" "$out"
check socket-served "[ -S '$work/vm/$dom.sock' ]"

"$qemu" -accel tcg -m 256 -smp 1 -nodefaults -display none -no-reboot -net none \
	-serial "file:$work/console.log" -kernel "$kernel" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 mearas_arg=assembly mearas_secs=2" \
	-chardev "socket,path=$work/vm/$dom.sock,id=ivs" \
	-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$work/qemu.err" 2>&1 &
qpid=$!
i=0
while kill -0 "$qpid" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 3000 ] && { kill -9 "$qpid"; echo "  (guest timed out)"; }
	sleep 0.1
done
wait "$qpid" 2>/dev/null
qpid=""
tr -d '\r' < "$work/console.log" > "$work/console.txt"
while IFS= read -r line; do
	case $line in
	GUEST-PASS*) pass "guest/${line#GUEST-PASS }" ;;
	GUEST-FAIL*) line=${line#GUEST-FAIL }; fail "guest/${line%%:*}" "${line#*: }" ;;
	"  device "*) echo "$line" ;;
	esac
done < "$work/console.txt"
check guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/console.txt'" "see $work/console.txt"
# the quotas are the guest's device memory: local 192 MiB, remote 320 MiB
check guest-sees-quotas "grep -q '^  device 0: .*, 192 MiB' '$work/console.txt' && grep -q '^  device 1: .*, 320 MiB' '$work/console.txt'"
check remote-vgpu-linked "grep -q 'vGPU 1 -> remote 127.0.0.1:$port' '$work/a.log'"
check remote-node-served "grep -q 'open over tcp' '$work/b.log'"

out=$(ctl "$work/ac.sock" detach $dom) || fail detach "$out"
check detach-removes-socket "[ ! -e '$work/vm/$dom.sock' ]"
check detach-stops-vm-processes "wait_for '[ -z \"\$(pgrep -P $apid)\" ]' 10" "left: $(pgrep -P $apid | tr '\n' ' ')"
check remote-node-freed "wait_for '[ -z \"\$(pgrep -P $bpid)\" ]' 10" "left: $(pgrep -P $bpid | tr '\n' ' ')"
out=$(ctl "$work/ac.sock" release) || fail release "$out"
check mearasd-kept-running "kill -0 $apid"

# mearasd stops under a guest program holding memory on both vGPUs: its calls fail with a
# CUDA error within the heartbeat timeout, never hang; nothing of the VM is left on either node
out=$(ctl "$work/ac.sock" instantiate $dom 127.0.0.1:$port) || fail re-instantiate "$out"
out=$(ctl "$work/ac.sock" attach $dom "$work/vm/$dom.sock") || fail re-attach "$out"
"$qemu" -accel tcg -m 256 -smp 1 -nodefaults -display none -no-reboot -net none \
	-serial "file:$work/dead.log" -kernel "$kernel" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 mearas_arg=dead mearas_secs=6" \
	-chardev "socket,path=$work/vm/$dom.sock,id=ivs" \
	-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$work/qemu-dead.err" 2>&1 &
qpid=$!
if wait_for "grep -qs GUEST-READY '$work/dead.log'" 120; then
	gpid=$(tr -d '\r' < "$work/dead.log" | sed -n 's/^GUEST-READY //p' | head -n1)
	out=$(ctl "$work/ac.sock" attachments)
	check list-shows-guest-process "[ \"\$out\" = 'asm-vm $dom:$gpid' ]" "$out (guest pid $gpid)"
	kids=$(pgrep -P $apid | tr '\n' ' ')
	kill "$apid"
	check mearasd-stop-takes-vm-along "wait_for '! kill -0 $apid 2>/dev/null && (for p in $kids; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0)' 15"
	check mearasd-stop-frees-remote "wait_for '[ -z \"\$(pgrep -P $bpid)\" ]' 10"
	i=0
	while kill -0 "$qpid" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 1200 ] && { kill -9 "$qpid"; echo "  (guest timed out)"; }
		sleep 0.1
	done
	qpid=""
	tr -d '\r' < "$work/dead.log" > "$work/dead.txt"
	check dead/guest-call-fails "grep -q '^GUEST-PASS error-after-backend-death' '$work/dead.txt'" "$(grep GUEST- "$work/dead.txt" | tr '\n' ' ')"
	check dead/guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/dead.txt'"
else
	fail dead/guest-ready "no GUEST-READY"
fi
