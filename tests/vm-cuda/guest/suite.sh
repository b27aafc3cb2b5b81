#!/bin/sh
# Runs inside the guest (busybox), started by vmtests.sh "suite": a warm-up,
# the microbenchmark's synchronizing round trips alone (the first slot report
# of the VM worker with >= 3000 such calls: the host time per call), then every
# program of /opt/suite (the tests/cuda suite), the same programs built with
# nvcc's static runtime from /opt/suite-static (NVIDIA's runtime over
# mearas's libcuda.so.1; named static-NAME), then the whole microbenchmark
# twice. Files do not come back from the guest, so each run's stdout and
# stderr go to the console base64-encoded between markers, decoded on the
# host by tests/vm-cuda/guest_console.py:
#   MEARAS-BEGIN NAME / MEARAS-O <base64> / MEARAS-E <base64> / MEARAS-END NAME RC
# With ROUNDS=remote (gpu-suite.sh --remote: a VM whose vGPU 0 is local and
# vGPU 1 remote), every program sees one vGPU (MEARAS_VISIBLE_VGPUS): all of
# the above on vGPU 0, then the suite, its static builds and the whole
# microbenchmark twice again on vGPU 1, named remote-NAME.
# usage: suite.sh COPY_MB TIMEOUT_S [ROUNDS]
copy_mb=${1:-256}
limit=${2:-200}
rounds=${3:-}
export LD_LIBRARY_PATH=/usr/lib/mearas

# run NAME PROGRAM ARGS...: killed after $limit s (exit 137, a timeout for run-suite.sh)
run() {
	name=$1
	shift
	echo "MEARAS-BEGIN $name"
	timeout -s KILL "$limit" "$@" > /tmp/run.out 2> /tmp/run.err < /dev/null
	rc=$?
	base64 -w 0 /tmp/run.out | fold -w 76 | sed 's/^/MEARAS-O /'
	echo
	base64 -w 0 /tmp/run.err | fold -w 76 | sed 's/^/MEARAS-E /'
	echo
	echo "MEARAS-END $name $rc"
}

# programs PREFIX: the suite and its static-runtime builds
programs() {
	for p in /opt/suite/*; do
		[ -x "$p" ] && run "$1$(basename "$p")" "$p"
	done
	for p in /opt/suite-static/*; do
		[ -x "$p" ] && run "${1}static-$(basename "$p")" "$p"
	done
}

case $rounds in
"") ;;
remote) export MEARAS_VISIBLE_VGPUS=0 ;;
*) echo "suite.sh: unknown ROUNDS '$rounds'"; exit 2 ;;
esac
# the first claim opens the slot's devices and registers the whole BAR with
# the GPU (the library waits 10 s at most): done by a short program first
run warmup /opt/suite/device_query
run microbench-sync /bin/microbench --only sync_roundtrip
programs ""
run microbench-1 /bin/microbench --copy-mb "$copy_mb"
run microbench-2 /bin/microbench --copy-mb "$copy_mb"
if [ "$rounds" = remote ]; then
	export MEARAS_VISIBLE_VGPUS=1
	run remote-warmup /opt/suite/device_query
	programs remote-
	run remote-microbench-1 /bin/microbench --copy-mb "$copy_mb"
	run remote-microbench-2 /bin/microbench --copy-mb "$copy_mb"
fi
exit 0
