#!/bin/sh
# Runs inside the guest (busybox): the scenario named by $1. Lines starting
# with GUEST-PASS / GUEST-FAIL are collected by the host.
export LD_LIBRARY_PATH=/usr/lib/mearas
t=/bin/vmcuda
pass() { echo "GUEST-PASS $1"; }
fail() { echo "GUEST-FAIL $1: $2"; }

# waits until file $1 holds GUEST-READY (up to 60 s)
wait_ready() {
	i=0
	while ! grep -q GUEST-READY "$1" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 600 ] && return 1; sleep 0.1
	done
}

# two guest processes running `vmcuda memcpy` at once, each in its own slot:
# their lines as two-procs-A-/two-procs-B-NAME, then two-processes
two_processes() {
	$t memcpy > /tmp/a.out 2>&1 & a=$!
	$t memcpy > /tmp/b.out 2>&1 & b=$!
	wait $a; ra=$?; wait $b; rb=$?
	sed 's/GUEST-\(PASS\|FAIL\) /&two-procs-A-/' /tmp/a.out | grep GUEST-
	sed 's/GUEST-\(PASS\|FAIL\) /&two-procs-B-/' /tmp/b.out | grep GUEST-
	[ $ra = 0 ] && [ $rb = 0 ] && pass two-processes || fail two-processes "exit $ra $rb"
}

case "$1" in
basic)
	[ -c /dev/mearas0 ] && pass device-node || fail device-node "no /dev/mearas0"
	$t props
	$t memcpy
	$t errors
	$t threads
	$t bench
	# two guest processes at once, each in its own slot
	two_processes
	# one of two processes reaching for the other's device memory
	sh /bin/vmtests.sh xslot
	# module unload while a CUDA process holds the device: refused
	$t hold 4 > /tmp/h.out 2>&1 & h=$!
	if wait_ready /tmp/h.out; then
		if rmmod mearas 2>/tmp/rmmod.err; then
			fail rmmod-busy-refused "rmmod succeeded while in use"
		else
			pass rmmod-busy-refused
			sed 's/^/  rmmod: /' /tmp/rmmod.err
		fi
	else
		fail rmmod-busy-refused "holder never got ready"
	fi
	wait $h; rh=$?
	grep GUEST- /tmp/h.out | sed 's/GUEST-\(PASS\|FAIL\) /&holder-/'
	[ $rh = 0 ] && pass holder-survived || fail holder-survived "exit $rh"
	# processes killed while holding a slot: the module gives their slots
	# back (more kills than the VM has slots, then a fresh process works)
	n=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		# (removed first: the background shell may truncate it only after
		# wait_ready looked, which then sees the previous holder's line)
		rm -f /tmp/k.out
		$t hold 60 > /tmp/k.out 2>&1 & k=$!
		wait_ready /tmp/k.out && n=$((n + 1))
		kill -9 $k; wait $k 2>/dev/null
		# a holder that printed GUEST-READY after a failed init is a failure
		grep -E 'GUEST-FAIL|mearas' /tmp/k.out | sed 's/GUEST-FAIL /&killed-holder-'$i'-/; s/^mearas/  holder '$i': mearas/'
	done
	[ $n = 10 ] && pass killed-holders-ready || fail killed-holders-ready "$n of 10 got ready"
	$t props | sed 's/GUEST-\(PASS\|FAIL\) /&after-kills-/'
	rmmod mearas && pass rmmod-idle || fail rmmod-idle "rmmod failed when idle"
	insmod /lib/mearas/mearas.ko && pass insmod-again || fail insmod-again "insmod failed"
	sleep 0.3
	$t props | sed 's/GUEST-\(PASS\|FAIL\) /&after-reload-/'
	;;
sleep)
	$t sleep "${2:-6}"
	;;
xslot)
	# two processes, each in its own slot: the reader tries to reach the
	# owner's device memory (on a GPU: a kernel read faults in the reader's
	# context only); the owner's bytes stay intact and it keeps working
	rm -f /tmp/o.out
	$t xowner 8 > /tmp/o.out 2>&1 & o=$!
	wait_ready /tmp/o.out || fail xslot-owner-ready "no GUEST-READY"
	ptr=$(sed -n 's/^GUEST-READY .* ptr //p' /tmp/o.out)
	$t xread "$ptr"
	wait $o; ro=$?
	grep -E 'GUEST-(PASS|FAIL)' /tmp/o.out
	[ $ro = 0 ] && pass xslot-owner-unharmed || fail xslot-owner-unharmed "exit $ro"
	;;
dead)
	$t dead "${2:-8}"
	;;
holders)
	# two guest processes, each holding memory on every vGPU, idle for $2 s
	# (libvirt-assembly-test.sh: `mearas assemblies` lists both)
	$t sleep "${2:-6}" & a=$!
	$t sleep "${2:-6}" & b=$!
	wait $a; wait $b
	;;
slotdead)
	# a VM after a hostile one works; then two processes, each in its own
	# slot: the host kills the slot worker of the first (GUEST-VICTIM), the
	# second must go on being served
	$t memcpy
	$t dead 20 > /tmp/a.out 2>&1 & a=$!
	wait_ready /tmp/a.out || fail slotdead-victim-ready "no GUEST-READY"
	$t sleep 12 > /tmp/b.out 2>&1 & b=$!
	wait_ready /tmp/b.out || fail slotdead-other-ready "no GUEST-READY"
	echo "GUEST-VICTIM $(sed -n 's/^GUEST-READY //p' /tmp/a.out)"
	wait $a; wait $b; rb=$?
	sed 's/GUEST-\(PASS\|FAIL\) /&victim-/' /tmp/a.out | grep GUEST-
	sed 's/GUEST-\(PASS\|FAIL\) /&other-slot-/' /tmp/b.out | grep GUEST-
	[ $rb = 0 ] && pass other-slot-serves || fail other-slot-serves "exit $rb"
	;;
hostile)
	/bin/hostile
	;;
assembly)
	# a VM attached to an assembly (assembly-test.sh): $2 vGPUs, their names and
	# memory (the quotas), data through each; then two guest processes at once
	WANT_DEVICES=${2:-2} $t props
	$t memcpy
	$t mapped
	$t printf
	two_processes
	;;
hostpy)
	# the host's programs (its Python) over a virtio-9p share of its root,
	# on this guest's mearas libraries (hostpy.sh; kernel command line
	# mearas_job=, mearas_share=); its exit status is the guest's
	exec sh /bin/hostpy.sh
	;;
suite)
	# $2: microbench copy size in MiB (kernel command line mearas_secs=);
	# mearas_rounds=remote on the kernel command line (in the environment):
	# every program on vGPU 0, then on vGPU 1 (suite.sh)
	sh /bin/suite.sh "${2:-256}" 200 "${mearas_rounds:-}"
	;;
*)
	$t "$@"
	;;
esac
exit 0
