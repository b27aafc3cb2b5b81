#!/usr/bin/env bash
# A remote vGPU on the sim device, CPU only: two mearasd over loopback (the
# serving node and the forwarding node with vGPU 0 remote, as the GPU lane's
# scripts/gpu-remote.sh runs them) and the microbenchmarks through it, with
# link encryption on (the default) and off in the same run. Prints
# "MEASURE sim-remote ..." lines: sync round trip (median us), pinned copies
# (GB/s) and the CPU seconds both mearasd spent during the copies (the copies
# are the same work each run: unlike the rates, the CPU time does not depend
# on what else the machine runs); and the link's line (how it is encrypted).
#   experiments/linkbench/sim_remote.sh [MEARASD]   (from the repository's top;
#   needs `make` and `make build/experiments/microbench`; default build/bin/mearasd)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
md=${1:-build/bin/mearasd}
bench=build/experiments/microbench
if [ ! -x "$md" ] || [ ! -x "$bench" ]; then
	echo "build first: make; make $bench"
	exit 2
fi
tmp=$(mktemp -d /tmp/mearas-simremote.XXXXXX)
key=$tmp/cluster.key
head -c 32 /dev/urandom | base64 >"$key"
chmod 600 "$key"
r='' c=''
cleanup() {
	# shellcheck disable=SC2086 # empty ones drop out
	kill $r $c 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
cpu() { awk '{ s += $14 + $15 } END { printf "%.2f", s / 100 }' "/proc/$r/stat" "/proc/$c/stat"; }
bad=0
for enc in on off; do
	port=$((27000 + RANDOM % 2000))
	"$md" --device=sim --socket="$tmp/r.sock" --control="$tmp/rctl.sock" --link-port=$port \
		--cluster-key-file="$key" --max-data-mb 1024 --link-encryption=$enc >"$tmp/r-$enc.log" 2>&1 &
	r=$!
	for _ in $(seq 100); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null && break
		sleep 0.1
	done
	"$md" --device=sim --socket="$tmp/c.sock" --control="$tmp/cctl.sock" --vgpus=1 \
		--remote=0=127.0.0.1:$port/0 --cluster-key-file="$key" --max-data-mb 1024 \
		--link-encryption=$enc >"$tmp/c-$enc.log" 2>&1 &
	c=$!
	for _ in $(seq 50); do [ -S "$tmp/c.sock" ] && [ -S "$tmp/r.sock" ] && break; sleep 0.1; done
	run() { LD_LIBRARY_PATH=build/lib MEARAS_SOCKET=$tmp/c.sock CUDA_VISIBLE_DEVICES= timeout 120 "$bench" "$@"; }
	sync=$(run --only sync_roundtrip | awk '$2 == "sync_roundtrip_us" { print $4 }')
	c0=$(cpu)
	copies=$(run --only copies --copy-mb 256)
	c1=$(cpu)
	h2d=$(echo "$copies" | awk '$2 == "h2d_pinned_gbps" { print $4 }')
	d2h=$(echo "$copies" | awk '$2 == "d2h_pinned_gbps" { print $4 }')
	if [ -z "$sync" ] || [ -z "$h2d" ] || [ -z "$d2h" ]; then bad=1; fi
	echo "MEASURE sim-remote encryption $enc: sync round trip ${sync:-?} us, h2d ${h2d:-?} GB/s, d2h ${d2h:-?} GB/s;" \
		"both mearasd $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') CPU seconds during the copies"
	echo "MEASURE sim-remote encryption $enc: link $(grep -m1 -o 'open over tcp, .*' "$tmp/r-$enc.log")"
	kill $r $c 2>/dev/null
	wait $r $c 2>/dev/null
	r='' c=''
	rm -f "$tmp"/*.sock
done
exit $bad
