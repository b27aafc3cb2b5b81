#!/bin/sh
# Runs inside the guest (busybox), started by vmtests.sh "hostpy": programs
# of the host's own root (its Python and frameworks) on the guest's mearas
# libraries. The host (tests/vm-cuda/guestpy.py) shares its / read-only over
# virtio-9p and prepares a job folder JOB in it, named on the kernel command
# line (mearas_job=JOB; the 9p tag: mearas_share=TAG, default hostroot):
#   JOB/job   a shell fragment sourced here, calling `run NAME LIMIT_S ARGV...`
#   JOB/rw    an empty folder: a tmpfs goes over it (inside the chroot the
#             same path), holding lib/ (the guest's libcuda.so.1,
#             libcudart.so.13, libnvidia-ml.so.1), home/ and tmp/
# The share is mounted at /host, /dev (with a tmpfs /dev/shm), /proc and /sys
# go over the host's, and each run is `chroot /host ARGV` (the host writes
# ARGV as `/usr/bin/env -i VAR=... PROGRAM ARGS`: the environment is the
# host's choice), killed after LIMIT_S. Its stdout and stderr go to the console
# base64-encoded (tests/vm-cuda/guest_console.py decodes them):
#   MEARAS-BEGIN NAME / MEARAS-PID NAME PID / MEARAS-O <b64> / MEARAS-E <b64> /
#   MEARAS-TIME NAME SECONDS / MEARAS-END NAME RC
# then "MEARAS-HOSTPY-DONE N"; a setup failure prints "MEARAS-HOSTPY-ERROR
# <why>" and exits 1 (no hang: a missing share fails within 2 s).
tag=${mearas_share:-hostroot}
job=${mearas_job:-}
nruns=0

die() {
	echo "MEARAS-HOSTPY-ERROR $*"
	exit 1
}

[ -n "$job" ] || die "no job folder (mearas_job= on the kernel command line)"
grep -qw 9p /proc/filesystems ||
	die "this guest kernel has no 9p file system (guest image built without -K 9pnet_virtio -K 9p)"
mkdir -p /host
i=0
# the virtio device is probed when virtio_pci loads: a tag that is still
# missing after 2 s is not there
until mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose "$tag" /host 2> /tmp/mount.err; do
	i=$((i + 1))
	[ $i -ge 20 ] && die "cannot mount the host's share (9p tag $tag): $(tr '\n' ' ' < /tmp/mount.err)(QEMU needs -virtfs local,path=/,mount_tag=$tag,...)"
	sleep 0.1
done
[ -f "/host$job/job" ] || die "no job file $job/job in the host's share"
[ -d "/host$job/rw" ] || die "no folder $job/rw in the host's share"
rw=/host$job/rw
mount -t tmpfs -o mode=1777 tmpfs "$rw" || die "cannot mount a tmpfs at $job/rw"
mkdir -p "$rw/lib" "$rw/home" "$rw/tmp"
chmod 1777 "$rw/tmp"
for l in /usr/lib/mearas/*; do
	cp "$l" "$rw/lib/" || die "cannot copy $l"
done
ln -s libcuda.so.1 "$rw/lib/libcuda.so"
ln -s libnvidia-ml.so.1 "$rw/lib/libnvidia-ml.so"
mkdir -p /dev/shm
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -o bind /dev /host/dev || die "cannot bind /dev into the share"
mount -t tmpfs -o mode=1777 shm /host/dev/shm
mount -t proc proc /host/proc || die "cannot mount /proc in the share"
mount -t sysfs sysfs /host/sys || die "cannot mount /sys in the share"

# run NAME LIMIT_S ARGV...: ARGV in chroot /host, killed after LIMIT_S
run() {
	name=$1 limit=$2
	shift 2
	nruns=$((nruns + 1))
	echo "MEARAS-BEGIN $name"
	t0=$(cut -d' ' -f1 /proc/uptime)
	# timeout, chroot and the host's env exec in turn: one pid, the program's
	timeout -s KILL "$limit" chroot /host "$@" > /tmp/run.out 2> /tmp/run.err < /dev/null &
	pid=$!
	echo "MEARAS-PID $name $pid"
	wait $pid
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	base64 -w 0 /tmp/run.out | fold -w 76 | sed 's/^/MEARAS-O /'
	echo
	base64 -w 0 /tmp/run.err | fold -w 76 | sed 's/^/MEARAS-E /'
	echo
	echo "MEARAS-TIME $name $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")"
	echo "MEARAS-END $name $rc"
}

. "/host$job/job" || die "the job file $job/job failed"
echo "MEARAS-HOSTPY-DONE $nruns"
exit 0
