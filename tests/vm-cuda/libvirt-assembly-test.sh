#!/usr/bin/env bash
# `virsh create` of vm-configs/mearas-assembly-vm.xml (domain type qemu, TCG)
# through the mearas libvirt hook, installed for this test before a libvirtd
# of its own starts, against two real mearasd on the sim device, each in a
# network namespace of its own joined by a veth pair (scripts/netns-pair.sh):
# node-a serves the VM (--vm-dir; its sockets are files, reached from the
# host's namespace), node-b the assembly's remote vGPUs over the veth (cluster
# key); both nodes are in a file registry. The hook books vGPU 0 on node-a and
# vGPUs 1 and 2 on node-b's two GPUs (policy exact), mearasd serves the
# domain's socket, the guest sees 3 vGPUs of the booked quota and moves data
# through each; the guest's poweroff, and `virsh destroy` of a second domain
# holding GPU memory, free everything on both nodes (the latter after libvirtd
# restarted under the running domain). mearasd restarting under a guest
# program: the program's calls fail with a CUDA error (never hang), and the
# domain's end frees everything. Ten domains of 1 vGPU started at once get the
# 8 vGPU slots there are, never more, and stopped at once free them all. A
# QEMU that died while libvirtd was down is released at libvirtd's restart. The
# examples vm-configs/assembly-*.xml start as they are. A domain whose device
# disagrees with its metadata, whose remote node refuses the cluster key or is
# down, or started while etcd or mearasd is down, does not start, `virsh
# create` says why, and nothing is left booked or served. Restores the
# previous hook and stops what it started (by PID). Usage:
# libvirt-assembly-test.sh GUEST_DIR WORK_DIR. Prints PASS/FAIL lines.
set -uo pipefail
guest=${1:?} work=${2:?}/lva
repo=$(cd "$(dirname "$0")/../.." && pwd)
mearasd=$repo/build/bin/mearasd
hook=/etc/libvirt/hooks/qemu uri=qemu:///system
dom=mearas-lva-$$
nsa=mlva-a-$$ nsb=mlva-b-$$ addra=10.231.7.1 addrb=10.231.7.2
netns=$repo/scripts/netns-pair.sh
started=() pids=() examples=() hook_backup="" ns_up=""

result_prefix=libvirt-assembly/
. "$(dirname "$0")/lib.sh"
cleanup() {
	for d in "$dom" "$dom-d" "$dom-m" "$dom-x" "$dom-k" "$dom-r" "$dom-e" "$dom-n" "$dom-l" "$dom"-c{0..9} "${examples[@]+"${examples[@]}"}"; do
		virsh -c "$uri" destroy "$d" >/dev/null 2>&1
	done
	for p in "${started[@]+"${started[@]}"}"; do kill "$p" 2>/dev/null; done
	if [ -n "$hook_backup" ]; then cp "$hook_backup" "$hook"; else rm -f "$hook"; fi
	for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
	if [ -n "$ns_up" ]; then sleep 0.5; "$netns" down "$nsa" "$nsb" 2>/dev/null; fi
	return 0
}
mearas() { PYTHONPATH=$repo/assembly-manager python3 -m mearas_am.cli "$@"; }

for b in libvirtd virtlogd virsh; do
	command -v $b >/dev/null || { fail available "$b missing (scripts/deps/apt-vm-cuda.txt)"; exit 0; }
done
if pgrep -x libvirtd >/dev/null; then
	fail own-libvirtd "a libvirtd runs already: the hook is read when libvirtd starts (stop it first)"
	exit 0
fi
trap cleanup EXIT
mkdir -p "$work/vm"
chmod 755 "$(dirname "$work")" "$work" "$work/vm"   # QEMU (libvirt-qemu) reaches its socket
cp "$guest/initramfs.cpio.gz" "$work/"
if [ -f "$guest/vmlinux" ]; then cp "$guest/vmlinux" "$work/kernel"; else cp "$guest/vmlinuz" "$work/kernel"; fi
chmod 644 "$work/kernel" "$work/initramfs.cpio.gz"

# the two nodes' network: a namespace each, joined by a veth pair
out=$("$netns" up "$nsa" "$nsb" $addra $addrb 2>&1) || { fail netns "$out"; exit 0; }
ns_up=1
echo "  network: namespaces $nsa ($addra) and $nsb ($addrb), veth, with $("$netns" tool)"
head -c 32 /dev/urandom | base64 > "$work/key"
port=$((42000 + $$ % 20000))
# start_b KEY_FILE LOG: node-b's mearasd in its namespace, serving links on the veth
start_b() {
	"$netns" exec "$nsb" "$mearasd" --device=sim --socket="$work/b.sock" --control="$work/bc.sock" \
		--node-name=node-b --link-port=$port --link-bind=$addrb --cluster-key-file="$1" > "$2" 2>&1 &
	pids+=($!) bpid=$!
	wait_for "[ -S '$work/bc.sock' ] && grep -q 'link server on port' '$2'" 20
}
# start_a: node-a's mearasd in its namespace (the VM's node), log appended to a.log
start_a() {
	"$netns" exec "$nsa" "$mearasd" --device=sim --socket="$work/a.sock" --control="$work/ac.sock" \
		--node-name=node-a --vm-dir="$work/vm" --cluster-key-file="$work/key" >> "$work/a.log" 2>&1 &
	pids+=($!) apid=$!
	wait_for "[ -S '$work/ac.sock' ]" 20
}
: > "$work/a.log"
{ start_b "$work/key" "$work/b.log" && start_a; } || { fail daemons-up "$(tail -n3 "$work/a.log" "$work/b.log")"; exit 0; }
for n in a b; do
	addr=""; [ $n = b ] && addr=$addrb:$port
	cat > "$work/$n.toml" <<EOF
[node]
name = "node-$n"
address = "$addr"
max_vgpus_per_gpu = 2
[registry]
backend = "file"
path = "$work/registry.json"
node_ttl = 3600
[mearasd]
control_socket = "$work/${n}c.sock"
[vm]
socket_dir = "$work/vm"
qemu_user = "libvirt-qemu"
EOF
	out=$(mearas --config "$work/$n.toml" node-agent --once 2>&1) || { fail "publish-node-$n" "$out"; exit 0; }
done
cp "$work/a.toml" "$work/view.toml"   # the registry as the hook's config (a.toml) had it first
[ -e "$hook" ] && { hook_backup=$work/qemu-hook.backup; cp "$hook" "$hook_backup"; }
out=$(mearas --config "$work/a.toml" install-hook --force --hook-path "$hook" \
	--pythonpath "$repo/assembly-manager" 2>&1) || { fail install-hook "$out"; exit 0; }
if ! pgrep -x virtlogd >/dev/null; then virtlogd -d; sleep 0.3; started+=("$(pgrep -nx virtlogd)"); fi
libvirtd -d; sleep 1; started+=("$(pgrep -nx libvirtd)")
wait_for "virsh -c $uri version >/dev/null 2>&1" 90 || { fail libvirtd-up; exit 0; }

# domain NAME CMDLINE_ARG METADATA_SED SOCKET_DIR VGPUS: the example with this test's paths
domain() {
	sed -e "s|<name>mearas-NAME</name>|<name>$1</name>|" \
	    -e "s|/var/lib/mearas/guest-NAME/vmlinux|$work/kernel|" \
	    -e "s|/var/lib/mearas/guest-NAME/initramfs.cpio.gz|$work/initramfs.cpio.gz|" \
	    -e "s|mearas_arg=props|mearas_arg=$2|" \
	    -e "s|/var/log/mearas/vm-NAME.console|$work/$1.console|" \
	    -e "s|<shmem name='mearas-mearas-NAME'>|<shmem name='mearas-$1'>|" \
	    -e "s|/run/mearas/vm/mearas-NAME.sock|${4:-$work/vm}/$1.sock|" \
	    -e "s|vgpus=\"2\"|vgpus=\"${5:-2}\" $3|" -e 's|policy="local-first"|policy="exact"|' \
	    -e 's|memory-per-vgpu="8GiB"|memory-per-vgpu="1GiB"|' \
	    "$repo/vm-configs/mearas-assembly-vm.xml" > "$work/$1.xml"
}
booked() { mearas --config "$work/view.toml" assemblies --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
nothing_left() { # PIDs of the daemons: no VM or link processes, nothing booked, no socket
	[ "$(booked)" = 0 ] && [ -z "$(pgrep -P $apid)" ] && [ -z "$(pgrep -P $bpid)" ] && [ -z "$(ls "$work/vm")" ]
}

domain "$dom" "assembly mearas_secs=3" 'placement="node-a:1,node-b:0,node-b:1"' "" 3
if out=$(virsh -c "$uri" create "$work/$dom.xml" 2>&1); then pass domain-started; else fail domain-started "$out"; exit 0; fi
check assembly-booked "[ \"\$(booked)\" = 1 ]"
check vm-socket-served "grep -q 'control: VM $dom attached' '$work/a.log'"
# the domain's socket is its QEMU's ([vm] qemu_user) alone: mode 0600
quid=$(id -u libvirt-qemu 2>/dev/null || echo 0)
check vm-socket-for-its-qemu-only "[ \"\$(stat -c '%u %a' '$work/vm/$dom.sock')\" = '$quid 600' ]" "$(stat -c '%u %a' "$work/vm/$dom.sock" 2>&1)"
wait_for "! virsh -c $uri domstate $dom >/dev/null 2>&1" 300 || fail domain-finished "still running after 300 s"
tr -d '\r' < "$work/$dom.console" > "$work/$dom.txt" 2>/dev/null
guest_lines guest/ '^  device ' "$work/$dom.txt"
check guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/$dom.txt'" "see $work/$dom.console"
check guest-sees-quotas "[ \$(grep -c '^  device [012]: .*, 1024 MiB' '$work/$dom.txt') = 3 ]"
# bytes went to and back from each of the 3 vGPUs intact, in each of the guest's 3 runs
check data-through-each-vgpu "[ \$(grep -cE '^GUEST-PASS (two-procs-[AB]-)?memcpy-roundtrips-dev[012]\$' '$work/$dom.txt') = 9 ]"
check remote-vgpus-linked "grep -q 'vGPU 1 -> remote $addrb:$port GPU 0 ' '$work/a.log' && grep -q 'vGPU 2 -> remote $addrb:$port GPU 1 ' '$work/a.log'"
# node-b served both of its GPUs to node-a's VM over the veth
check remote-node-served-both-gpus "grep -q 'remote vGPU for $addra:[0-9]* (vm): GPU 0,' '$work/b.log' && grep -q 'remote vGPU for $addra:[0-9]* (vm): GPU 1,' '$work/b.log'"
check poweroff-frees-both-nodes "wait_for nothing_left 15" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' '); on b: $(pgrep -P $bpid | tr '\n' ' ')"

# virsh destroy while two guest programs hold GPU memory on both vGPUs
domain "$dom-d" "holders mearas_secs=120" 'placement="node-a:0,node-b:1"'
if out=$(virsh -c "$uri" create "$work/$dom-d.xml" 2>&1); then
	if wait_for "[ \$(grep -cs GUEST-READY '$work/$dom-d.console') = 2 ]" 120; then
		check destroy-holder-linked "[ -n \"\$(pgrep -P $bpid)\" ]"
		# the guest's two processes, in the order of their pids: the column ON EACH VGPU
		# of `mearas assemblies` lists both on the VM's assembly
		gpids=$(tr -d '\r' < "$work/$dom-d.console" | sed -n 's/^GUEST-READY //p' | sort -n | tr '\n' ' ')
		read -r gpid gpid2 <<< "$gpids"
		out=$(mearas --config "$work/a.toml" assemblies 2>&1)
		check assemblies-shows-guest-processes "grep -q 'vm:$dom-d .* $dom-d pid $gpid, $dom-d pid $gpid2\$' <<< \"\$out\"" "$out (guest pids $gpids)"
		# libvirtd restarts (the hook's `reconnect`): the domain keeps its assembly, mearasd its
		# guest processes, and the release hook of the new libvirtd frees them at the destroy below
		lpid=$(pgrep -nx libvirtd)
		kill "$lpid" && wait_for "! kill -0 $lpid 2>/dev/null" 20
		libvirtd -d; sleep 1; started+=("$(pgrep -nx libvirtd)")
		wait_for "virsh -c $uri version >/dev/null 2>&1" 90 || fail libvirtd-restarted
		out=$(mearas --config "$work/a.toml" assemblies 2>&1)
		check libvirtd-restart-keeps-vm "[ \"\$(virsh -c $uri domstate $dom-d)\" = running ] && [ \"\$(booked)\" = 1 ] && grep -q 'vm:$dom-d .* $dom-d pid $gpid, $dom-d pid $gpid2\$' <<< \"\$out\"" "$out"
		virsh -c "$uri" destroy "$dom-d" >/dev/null 2>&1
		check destroy-frees-both-nodes "wait_for nothing_left 15" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' '); on b: $(pgrep -P $bpid | tr '\n' ' ')"
	else
		fail destroy-guest-ready "no GUEST-READY"
	fi
else
	fail destroy-domain-started "$out"
fi

# mearasd (node-a) restarts under a guest program holding memory on a local and a remote
# vGPU: the VM's processes go with the old mearasd, node-b's links end, the program's next
# calls fail with a CUDA error (never hang), and the domain's poweroff frees its booking
domain "$dom-m" "dead mearas_secs=10" 'placement="node-a:0,node-b:0"'
if out=$(virsh -c "$uri" create "$work/$dom-m.xml" 2>&1); then
	if wait_for "grep -qs GUEST-READY '$work/$dom-m.console'" 120; then
		kids=$(pgrep -P $apid | tr '\n' ' ')
		kill "$apid"; wait "$apid" 2>/dev/null
		check restart/vm-processes-gone "wait_for '(for p in $kids; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0)' 10" "left: $kids"
		start_a || fail restart/mearasd-up "$(tail -n3 "$work/a.log")"
		check restart/remote-links-freed "wait_for '[ -z \"\$(pgrep -P $bpid)\" ]' 10"
		wait_for "! virsh -c $uri domstate $dom-m >/dev/null 2>&1" 120 || fail restart/domain-finished "still running after 120 s"
		tr -d '\r' < "$work/$dom-m.console" > "$work/$dom-m.txt"
		check restart/guest-call-fails "grep -q '^GUEST-PASS error-after-backend-death' '$work/$dom-m.txt'" "$(grep GUEST- "$work/$dom-m.txt" | tr '\n' ' ')"
		check restart/guest-exit-0 "grep -q '^MEARAS-EXIT 0' '$work/$dom-m.txt'"
		check restart/poweroff-frees-everything "wait_for nothing_left 15" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' '); on b: $(pgrep -P $bpid | tr '\n' ' ')"
	else
		fail restart/guest-ready "no GUEST-READY"
	fi
else
	fail restart/domain-started "$out"
fi

# ten domains (no guest OS) of 1 vGPU each start at once: the 8 vGPU slots of the two
# nodes (2 GPUs x 2 each) go to 8 of them, the other 2 are refused; never over-booked
bare() { # NAME: a domain with the metadata and its device, SeaBIOS idling
	cat > "$work/$1.xml" <<EOF
<domain type='qemu'><name>$1</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>
<metadata><mearas:assembly xmlns:mearas="https://mearas.dev/xmlns/assembly/1" vgpus="1"
 policy="spread" memory-per-vgpu="1GiB" shared-memory="16MiB"/></metadata>
<os><type arch='x86_64' machine='pc'>hvm</type></os><features><acpi/></features>
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>
<shmem name='mearas-$1'><model type='ivshmem-doorbell'/><server path='$work/vm/$1.sock'/>
<msi vectors='2' ioeventfd='on'/></shmem><memballoon model='none'/></devices></domain>
EOF
}
for i in 0 1 2 3 4 5 6 7 8 9; do bare "$dom-c$i"; done
creates=()
for i in 0 1 2 3 4 5 6 7 8 9; do
	virsh -c "$uri" create "$work/$dom-c$i.xml" > "$work/c$i.out" 2>&1 &
	creates+=($!)
done
wait "${creates[@]}"
up=$(virsh -c "$uri" list --name | grep -- "^$dom-c")
served=$(ls "$work/vm" | wc -l)
check concurrent-eight-start "[ \$(echo \"\$up\" | grep -c .) = 8 ] && [ \"\$(booked)\" = 8 ] && [ $served = 8 ]" "running: $(echo $up), booked $(booked), sockets $served"
check concurrent-others-refused "[ \$(cat $work/c?.out | grep -c 'cannot place 1 vGPU') = 2 ]" "$(grep -h mearas "$work"/c?.out | head -3)"
# and all ten stopped at once (the refused ones' destroy fails): every booking is freed
destroys=()
for d in "$dom"-c{0..9}; do
	virsh -c "$uri" destroy "$d" >/dev/null 2>&1 &
	destroys+=($!)
done
wait "${destroys[@]}"
check concurrent-all-freed "wait_for nothing_left 20" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' ')"

# QEMU dies while libvirtd is down: the restarted libvirtd finds it gone at its reconnect
# and runs the release hook, which frees everything
bare "$dom-l"
if out=$(virsh -c "$uri" create "$work/$dom-l.xml" 2>&1); then
	qemu_pid=$(cat "/run/libvirt/qemu/$dom-l.pid")
	lpid=$(pgrep -nx libvirtd)
	kill "$lpid" && wait_for "! kill -0 $lpid 2>/dev/null" 20
	kill -9 "$qemu_pid"
	libvirtd -d; sleep 1; started+=("$(pgrep -nx libvirtd)")
	wait_for "virsh -c $uri version >/dev/null 2>&1" 90 || fail libvirtd-restarted-again
	check qemu-dead-at-reconnect-frees "wait_for nothing_left 30" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' ')"
else
	fail qemu-dead-at-reconnect-started "$out"
fi

# the examples vm-configs/assembly-*.xml start as they are (only the socket directory is
# this test's [vm] socket_dir) on these two nodes, each booked and served, then all freed
for x in "$repo"/vm-configs/assembly-*.xml; do
	name=$(sed -n 's|.*<name>\(.*\)</name>.*|\1|p' "$x")
	sed "s|/run/mearas/vm/|$work/vm/|" "$x" > "$work/example.xml"
	examples+=("$name")
	if out=$(virsh -c "$uri" create "$work/example.xml" 2>&1); then
		check "example/${x##*/}" "[ \"\$(booked)\" = 1 ] && [ -S '$work/vm/$name.sock' ]" "booked $(booked)"
	else
		fail "example/${x##*/}" "$out"
	fi
	virsh -c "$uri" destroy "$name" >/dev/null 2>&1
	check "example/${x##*/}-freed" "wait_for nothing_left 15" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' ')"
done

# a device on another socket than the metadata's domain: refused, nothing booked
domain "$dom-x" "props" 'placement="node-a:1,node-b:0"' "$work/vm/other"
out=$(virsh -c "$uri" create "$work/$dom-x.xml" 2>&1)
check mismatch-refused "[[ \"\$out\" == *'mearas: cannot start domain $dom-x: '*'but mearasd serves this domain on $work/vm/$dom-x.sock'* ]]" "$out"
check mismatch-leaves-nothing nothing_left

# node-b with another cluster key: the link's handshake fails, so the start does
kill "$bpid"; wait "$bpid" 2>/dev/null
head -c 32 /dev/urandom | base64 > "$work/other.key"
start_b "$work/other.key" "$work/b2.log" || fail wrong-key-node-up "$(tail -n3 "$work/b2.log")"
domain "$dom-k" "props" 'placement="node-a:1,node-b:0"'
out=$(virsh -c "$uri" create "$work/$dom-k.xml" 2>&1)
check wrong-key-refused "[[ \"\$out\" == *'mearas: cannot start domain $dom-k: '*'link to $addrb:$port failed: authentication failed (cluster key'*released* ]]" "$out"
check wrong-key-leaves-nothing "wait_for nothing_left 15" "booked $(booked); left on a: $(pgrep -P $apid | tr '\n' ' ')"

# the remote node down: mearasd tries the link before it serves the VM, so the start fails
kill "$bpid"; wait "$bpid" 2>/dev/null
domain "$dom-r" "props mearas_secs=2" 'placement="node-a:1,node-b:0"'
out=$(virsh -c "$uri" create "$work/$dom-r.xml" 2>&1)
check remote-down-refused "[[ \"\$out\" == *'mearas: cannot start domain $dom-r: '*'link to $addrb:$port failed: cannot connect'*released* ]]" "$out"
check remote-down-leaves-nothing "wait_for '[ \"\$(booked)\" = 0 ] && [ -z \"\$(pgrep -P $apid)\" ]' 15"
check mearasd-kept-running "kill -0 $apid"

# the registry is etcd and etcd is down: nothing can be booked, the start fails saying so
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e 's|^backend = "file"|backend = "etcd"|' -e "s|^path = .*|endpoints = [\"127.0.0.1:$dead\"]|" "$work/view.toml" > "$work/a.toml"
domain "$dom-e" "props" 'placement="node-a:1"' "" 1
out=$(virsh -c "$uri" create "$work/$dom-e.xml" 2>&1)
check etcd-down-refused "[[ \"\$out\" == *'mearas: cannot start domain $dom-e: etcd unreachable'* ]]" "$out"
check etcd-down-leaves-nothing nothing_left
cp "$work/view.toml" "$work/a.toml"

# node-a's mearasd down: the booking is undone, the start fails saying so
kill "$apid"; wait "$apid" 2>/dev/null
domain "$dom-n" "props" 'placement="node-a:1"' "" 1
out=$(virsh -c "$uri" create "$work/$dom-n.xml" 2>&1)
check mearasd-down-refused "[[ \"\$out\" == *'mearas: cannot start domain $dom-n: '*'(is mearasd running?)'*released* ]]" "$out"
check mearasd-down-leaves-nothing "[ \"\$(booked)\" = 0 ] && [ -z \"\$(ls '$work/vm')\" ]" "booked $(booked)"
