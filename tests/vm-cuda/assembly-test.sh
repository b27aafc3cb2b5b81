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

result_prefix=assembly/
. "$(dirname "$0")/lib.sh"
cleanup() {
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null
	for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
	return 0
}
trap cleanup EXIT
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

# Prometheus text from mearasd A's metrics endpoint into FILE; checked by promtool
scrape() {
	curl -sf --max-time 10 "http://127.0.0.1:$mport/metrics" > "$1" && promtool check metrics < "$1" > "$1.promtool" 2>&1
}
# A figure from a scrape file, through Prometheus' own Python parser:
# FILE NAME LABEL=VALUE... -> the sum of the samples of NAME with those labels
figure() {
	python3 - "$@" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, name, want = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
total = 0.0
with open(path) as f:
    for fam in text_string_to_metric_families(f.read()):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
                total += s.value
print(int(total))
EOF
}

mkdir -p "$work"
head -c 32 /dev/urandom | base64 > "$work/key"
port=$((41000 + $$ % 20000))
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$mearasd" --device=sim --socket="$work/b.sock" --control="$work/bc.sock" --node-name=node-b \
	--link-port=$port --link-bind=127.0.0.1 --cluster-key-file="$work/key" > "$work/b.log" 2>&1 &
pids+=($!) bpid=$!
"$mearasd" --device=sim --socket="$work/a.sock" --control="$work/ac.sock" --node-name=node-a \
	--vm-dir="$work/vm" --cluster-key-file="$work/key" --metrics-port=$mport > "$work/a.log" 2>&1 &
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
check metrics-before "scrape '$work/m0.txt'" "$(cat "$work/m0.txt.promtool" 2>/dev/null)"

vm_start "$work/vm/$dom.sock" "$work/console.log" "$work/qemu.err" assembly 2
qemu_wait 300
tr -d '\r' < "$work/console.log" > "$work/console.txt"
guest_lines guest/ '^  device ' "$work/console.txt"
check guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/console.txt'" "see $work/console.txt"
# the quotas are the guest's device memory: local 192 MiB, remote 320 MiB
check guest-sees-quotas "grep -q '^  device 0: .*, 192 MiB' '$work/console.txt' && grep -q '^  device 1: .*, 320 MiB' '$work/console.txt'"
# device printf of each vGPU reaches the guest process (the remote one's from node B)
check guest-printf-local "grep -q '^mearas-sim device printf: 100$' '$work/console.txt'"
check guest-printf-remote "grep -q '^mearas-sim device printf: 101$' '$work/console.txt'"
check remote-vgpu-linked "grep -q 'vGPU 1 -> remote 127.0.0.1:$port' '$work/a.log'"
check remote-node-served "grep -q 'open over tcp' '$work/b.log'"

# the guest's three memcpy runs (one, then two at once), each a round trip of
# every size on each vGPU: the sizes once to the device, twice back
sizes=33628236
vg() { figure "$1" "$2" owner=vm:$dom assembly=asm-vm vgpu="$3" "${@:4}"; }
# a slot worker's last counts are folded once it has exited: the guest's clients go to 0
check metrics-after-guest "wait_for 'scrape \"$work/m1.txt\" && [ \$(vg \"$work/m1.txt\" mearas_vgpu_clients 0) = 0 ]' 10" \
	"see $work/m1.txt and its .promtool"
for v in 0 1; do
	kind=local; [ $v = 1 ] && kind=remote
	h2d=$(( $(vg "$work/m1.txt" mearas_vgpu_copy_bytes_total $v direction=h2d kind=$kind) - $(vg "$work/m0.txt" mearas_vgpu_copy_bytes_total $v direction=h2d) ))
	d2h=$(( $(vg "$work/m1.txt" mearas_vgpu_copy_bytes_total $v direction=d2h kind=$kind) - $(vg "$work/m0.txt" mearas_vgpu_copy_bytes_total $v direction=d2h) ))
	calls=$(( $(vg "$work/m1.txt" mearas_vgpu_calls_total $v class=copy kind=$kind) - $(vg "$work/m0.txt" mearas_vgpu_calls_total $v class=copy) ))
	check metrics-vgpu$v-$kind-h2d "[ $h2d -ge $((3 * sizes)) ]" "grew by $h2d, the guest copied $((3 * sizes))"
	check metrics-vgpu$v-$kind-d2h "[ $d2h -ge $((6 * sizes)) ]" "grew by $d2h, the guest copied $((6 * sizes))"
	# 10 sizes: 3 copies each (to, within, from the device) and one back after a memset; 3 runs
	check metrics-vgpu$v-$kind-copy-calls "[ $calls -ge 120 ]" "grew by $calls"
done
out=$(ctl "$work/ac.sock" detach $dom) || fail detach "$out"
check detach-removes-socket "[ ! -e '$work/vm/$dom.sock' ]"
check detach-stops-vm-processes "wait_for '[ -z \"\$(pgrep -P $apid)\" ]' 10" "left: $(pgrep -P $apid | tr '\n' ' ')"
check remote-node-freed "wait_for '[ -z \"\$(pgrep -P $bpid)\" ]' 10" "left: $(pgrep -P $bpid | tr '\n' ' ')"
# the VM stopped: its vGPUs' counters stay where they were
check metrics-after-detach "scrape '$work/m2.txt'" "$(cat "$work/m2.txt.promtool" 2>/dev/null)"
kept=1
for m in "mearas_vgpu_calls_total class=copy" "mearas_vgpu_copy_bytes_total direction=h2d" \
	"mearas_vgpu_copy_bytes_total direction=d2h" mearas_vgpu_sync_latency_seconds_count; do
	for v in 0 1; do
		# shellcheck disable=SC2086
		[ "$(figure "$work/m2.txt" $m owner=vm:$dom vgpu=$v)" -ge "$(figure "$work/m1.txt" $m owner=vm:$dom vgpu=$v)" ] ||
			kept="$m vGPU $v went back"
	done
done
check metrics-kept-after-vm-stops "[ '$kept' = 1 ]" "$kept"
out=$(ctl "$work/ac.sock" release) || fail release "$out"
check mearasd-kept-running "kill -0 $apid"

# mearasd stops under a guest program holding memory on both vGPUs: its calls fail with a
# CUDA error within the heartbeat timeout, never hang; nothing of the VM is left on either node
out=$(ctl "$work/ac.sock" instantiate $dom 127.0.0.1:$port) || fail re-instantiate "$out"
out=$(ctl "$work/ac.sock" attach $dom "$work/vm/$dom.sock") || fail re-attach "$out"
vm_start "$work/vm/$dom.sock" "$work/dead.log" "$work/qemu-dead.err" dead 6
if wait_for "grep -qs GUEST-READY '$work/dead.log'" 120; then
	gpid=$(tr -d '\r' < "$work/dead.log" | sed -n 's/^GUEST-READY //p' | head -n1)
	out=$(ctl "$work/ac.sock" attachments)
	check list-shows-guest-process "[ \"\$out\" = 'asm-vm $dom:$gpid' ]" "$out (guest pid $gpid)"
	kids=$(pgrep -P $apid | tr '\n' ' ')
	kill "$apid"
	check mearasd-stop-takes-vm-along "wait_for '! kill -0 $apid 2>/dev/null && (for p in $kids; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0)' 15"
	check mearasd-stop-frees-remote "wait_for '[ -z \"\$(pgrep -P $bpid)\" ]' 10"
	qemu_wait 120
	tr -d '\r' < "$work/dead.log" > "$work/dead.txt"
	check dead/guest-call-fails "grep -q '^GUEST-PASS error-after-backend-death' '$work/dead.txt'" "$(grep GUEST- "$work/dead.txt" | tr '\n' ' ')"
	check dead/guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/dead.txt'"
else
	fail dead/guest-ready "no GUEST-READY"
fi
