#!/usr/bin/env bash
# Issue 15's latency figure, quickly: the synchronous 4-byte device-to-host
# copy (build/experiments/microbench --only sync_roundtrip, its median)
# natively, then through a remote vGPU over loopback TCP (two mearasd on this
# machine: one serves its GPU over remote-link, the other forwards its vGPU 0
# there), with the link encrypted and not; REPEATS runs of each (default 3),
# the median of their medians. About a minute on a GPU machine: for trying a
# change of the remote path between runs of the GPU lane, whose remote step
# (scripts/gpu-remote.sh) measures the same copy over veth between network
# namespaces and is the figure of record. Beside it, the same runs' launch
# rate (--only launch_rate, the median, as a ratio to native): a change that
# shortens the round trip must not cost the link its throughput (not with
# --hops, whose tables are the round trip's).
#   scripts/remote-latency.sh [REPEATS]
# MEARAS_LAT_ARGS adds mearasd options to both nodes (e.g. --spin-us=500);
# MEARAS_LAT_BIN names another mearasd for both nodes (an A/B of two builds);
# MEARAS_LAT_DEVICE=sim runs the nodes on the host-memory model (no native
# run; the numbers only show that it works). Logs: build/remote-latency/.
# Before the remote figures, the yardstick: a raw TCP round trip of 256 bytes
# over loopback with spinning receivers (build/tests/gpu/tcp_rtt), with one
# thread per end, and with a receive and a sending thread per end as the link
# has: what the kernel's TCP alone costs a call's two messages.
# --hops: the nodes are the hop-trace build (make hoptrace), and after each
# mode a table of where a call's time went, hop by hop, per run of the bench
# (experiments/harness/mearas_exp/hops.py; the stamps cost about 30 ns each).
#   scripts/remote-latency.sh [--hops] [REPEATS]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
hops=0
if [ "${1:-}" = --hops ]; then
	hops=1
	shift
fi
reps=${1:-3}
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "usage: remote-latency.sh [--hops] [REPEATS]" >&2; exit 2; }
kind=${MEARAS_LAT_DEVICE:-cuda}
read -r -a extra <<<"${MEARAS_LAT_ARGS:-}"
bin=${MEARAS_LAT_BIN:-$top/build/bin/mearasd}
[ $hops = 1 ] && bin=$top/build/hop/bin/mearasd
bench=$top/build/experiments/microbench
rtt_bin=$top/build/tests/gpu/tcp_rtt
for f in "$bin" "$bench" "$rtt_bin"; do
	[ -x "$f" ] || { echo "remote-latency: $f missing (make gpu-build$([ $hops = 1 ] && echo '; make hoptrace'))" >&2; exit 1; }
done
work=$top/build/remote-latency
rm -rf "$work" && mkdir -p "$work" || exit 1
echo "remote-latency-$$-$RANDOM" >"$work/key"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME ARGS...: a mearasd, waited for until its socket is there
start() {
	local name=$1
	shift
	"$bin" --device="$kind" --socket="$work/$name.sock" --cluster-key-file="$work/key" "${extra[@]}" "$@" \
		>"$work/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		[ -S "$work/$name.sock" ] && return 0
		sleep 0.1
	done
	echo "remote-latency: mearasd $name did not start (log: $work/$name.log)" >&2
	exit 1
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# metric NAME: the value of "METRIC NAME UNIT VALUE" lines on stdin
metric() { awk -v m="$1" '$1 == "METRIC" && $2 == m {print $4}'; }

# runs GROUP METRIC [ENV...]: REPEATS medians of the bench's METRIC (of its --only GROUP), one per line
runs() {
	local g=$1 m=$2
	shift 2
	for _ in $(seq "$reps"); do
		env "$@" timeout 120 "$bench" --only "$g" 2>>"$work/bench.err" | metric "$m"
	done
}

native=- native_rate=-
if [ "$kind" = cuda ]; then
	native=$(runs sync_roundtrip sync_roundtrip_us | median)
	[ $hops = 1 ] || native_rate=$(runs launch_rate launch_rate | median)
fi
printf '%-34s %10s %12s %14s %8s\n' "sync_roundtrip_us (median)" "us" "over native" "launch_rate/s" ratio
printf '%-34s %10s %12s %14s %8s\n' native "${native:--}" - "${native_rate:--}" -
# the sim's machine may have too few cores for 4 spinning threads: few rounds there
rounds=20000
[ "$kind" = cuda ] || rounds=200
rtt=$(timeout 120 "$rtt_bin" $rounds 2>>"$work/bench.err")
for shape in "raw_tcp_rtt_us:1 thread/end" "raw_tcp_rtt_2threads_us:2 threads/end"; do
	us=$(metric "${shape%%:*}" <<<"$rtt")
	printf '%-34s %10s %12s\n' "yardstick: TCP RTT, ${shape#*:}" "${us:-FAILED}" -
	[ -n "$us" ] || { echo "remote-latency: tcp_rtt gave no figure ($work/bench.err)" >&2; exit 1; }
done
for mode in encrypted unencrypted; do
	enc=()
	[ $mode = unencrypted ] && enc=(--link-encryption=off)
	port=$(free_port)
	if [ $hops = 1 ]; then
		export MEARAS_HOPTRACE_DIR=$work/hops-$mode
		mkdir -p "$MEARAS_HOPTRACE_DIR"
	fi
	start "serve-$mode" --link-port="$port" "${enc[@]}"
	start "client-$mode" --vgpus=1 --remote=0=127.0.0.1:"$port" "${enc[@]}"
	# the program never reaches the GPU itself: a bypass fails
	env=(CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH="$top/build/lib" MEARAS_SOCKET="$work/client-$mode.sock")
	us=$(runs sync_roundtrip sync_roundtrip_us "${env[@]}" | median)
	rate=-
	# the hop trace is the round trip's: no launch-rate runs among its tables
	[ $hops = 1 ] || rate=$(runs launch_rate launch_rate "${env[@]}" | median)
	over=- ratio=-
	[ -n "$us" ] && [ "$native" != - ] && [ -n "$native" ] && over=$(awk -v a="$us" -v b="$native" 'BEGIN {printf "+%.3f", a - b}')
	[ -n "$rate" ] && [ "$rate" != - ] && [ "$native_rate" != - ] && [ -n "$native_rate" ] &&
		ratio=$(awk -v a="$rate" -v b="$native_rate" 'BEGIN {printf "%.3f", a / b}')
	printf '%-34s %10s %12s %14s %8s\n' "remote, loopback, $mode" "${us:-FAILED}" "$over" "${rate:-FAILED}" "$ratio"
	[ -n "$us" ] && [ -n "$rate" ] ||
		{ echo "remote-latency: no figure through the remote vGPU ($work/bench.err, $work/*.log)" >&2; exit 1; }
	cleanup
	if [ $hops = 1 ]; then
		(cd "$top/experiments/harness" && python3 -m mearas_exp.hops "$MEARAS_HOPTRACE_DIR") || exit 1
	fi
	pids=()
done
