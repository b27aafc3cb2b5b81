#!/usr/bin/env bash
# GPU lane, remote part: a second mearasd (the remote node) serves its GPU over
# remote-link and the forwarding node's vGPU 0 is remote. The two nodes run in two
# network namespaces joined by a veth pair (scripts/netns-pair.sh: iproute2, or
# the busybox carried in build/tools where the GPU machine has no `ip`); the
# programs, the microbenchmarks and the raw TCP yardstick (tcp_bench, between
# the same two namespaces, in the same run) run in the forwarding node's namespace
# and reach the client mearasd by its unix socket. Where namespaces cannot be
# made (not root, no veth, no tool), it says so loudly and uses loopback TCP in
# the host's namespace. Some programs run again with the link shaped (tc tbf on
# the veth pair; see "shaped" below). Runs the program suite through the remote vGPU
# (compared with the native outputs in NATIVE_DIR) and the microbenchmarks, and
# writes experiments/results/remote.json (its "network" field says which).
# The standard yardstick too: iperf3 (Debian's, carried with its libraries in
# build/tools/iperf3 by `make tools`, else one on PATH; MEARAS_IPERF3=PATH picks
# another) between the same namespaces and addresses, after each run of the
# microbenchmarks: one stream each way, and as many streams as the link used
# (experiments/microbench/link_streams.py counts the forwarding node's
# connections to the link port while the microbenchmarks run); IPERF3_SECONDS
# each (default 3). Where iperf3 is missing or cannot start, the records say why.
#   scripts/gpu-remote.sh OUTDIR NATIVE_DIR MICRO_NATIVE DEVICE_NAME
# GPU_LINK_ARGS adds mearasd link options to both nodes (e.g.
# "--link-streams=8", to compare settings; remote.json records the options).
# MEARAS_REMOTE_DEVICE=sim runs the nodes on the host-memory model (a dry run
# of the orchestration on a machine without a GPU; the numbers mean nothing,
# and remote.json goes to OUTDIR instead).
# Before the nodes start, scripts/remote-latency.sh measures issue 15's round
# trip as the issue does (loopback, host's namespace): sync_roundtrip_loopback_us.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$1 native=$2 micro_native=$3 device=$4
kind=${MEARAS_REMOTE_DEVICE:-cuda}
results=experiments/results/remote.json
[ "$kind" = cuda ] || results=$out/remote.json
rsock=/tmp/mearas-remote-node.$$.sock csock=/tmp/mearas-client-node.$$.sock
key=$out/cluster.key
port=$((20000 + $$ % 20000)) tport=$((40000 + $$ % 20000)) iport=$((40000 + ($$ + 1) % 20000))
iperf3_secs=${IPERF3_SECONDS:-3}
read -r -a link_args <<<"${GPU_LINK_ARGS:-}"
opts=${GPU_LINK_ARGS:+; mearasd $GPU_LINK_ARGS}
for a in "${link_args[@]}"; do
	[[ "$a" == --link-* ]] || { echo "GPU_LINK_ARGS: '$a' is not a mearasd --link-... option" >&2; exit 2; }
done
rns=mxgr$$ cns=mxgc$$ netns_dir=/run/netns # netns-pair.sh's
head -c 32 /dev/urandom | base64 >"$key"
# two GPUs: the remote node serves the second, so each node has its own GPU
# (native runs use the first)
rgpu=0
if [ "$kind" = cuda ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
	rgpu=1
fi

if scripts/netns-pair.sh up $rns $cns 10.251.0.1 10.251.0.2 2>"$out/netns.txt"; then
	tool=$(scripts/netns-pair.sh tool)
	network="veth between namespaces (${tool%% *})"
	host=10.251.0.1
	rx=(scripts/netns-pair.sh exec "$rns") cx=(scripts/netns-pair.sh exec "$cns")
else
	network=loopback host=127.0.0.1 rx=() cx=() rns='' cns=
	for _ in 1 2 3; do
		echo "!!! gpu-remote: NO NETWORK NAMESPACES ($(tail -1 "$out/netns.txt")): remote nodes talk over loopback TCP" >&2
	done
fi

rnode='' cnode='' sink=''
# raw_tcp NAME FROM_NS TO_NS TO_ADDR BUFFER_MB FILE: tcp_bench's sink in TO_NS,
# its sender in FROM_NS (the host's namespace and loopback without them)
raw_tcp() {
	local from=() to=() addr=$4
	if [ -n "$rns" ]; then
		from=(scripts/netns-pair.sh exec "$2") to=(scripts/netns-pair.sh exec "$3")
	else
		addr=127.0.0.1
	fi
	"${to[@]}" build/tests/gpu/tcp_bench --buffer-mb "$5" --listen "$addr:$tport" >"$6.sink" 2>&1 &
	sink=$!
	"${from[@]}" timeout 60 build/tests/gpu/tcp_bench --buffer-mb "$5" --connect "$addr:$tport" 4096 >"$6" 2>&1
	kill $sink 2>/dev/null
	wait $sink 2>/dev/null
	sink=''
}
# iperf3: the carried copy (its libraries beside it), else Debian's on PATH;
# iperf3_why says why it cannot run
iperf3_cmd=() iperf3_why=
if [ -n "${MEARAS_IPERF3:-}" ]; then
	iperf3_cmd=("$MEARAS_IPERF3")
elif [ -x build/tools/iperf3/iperf3 ]; then
	iperf3_cmd=(env "LD_LIBRARY_PATH=$top/build/tools/iperf3/lib" "$top/build/tools/iperf3/iperf3")
elif command -v iperf3 >/dev/null; then
	iperf3_cmd=("$(command -v iperf3)")
fi
if [ ${#iperf3_cmd[@]} -eq 0 ]; then
	iperf3_why="no iperf3 (neither build/tools/iperf3, made by 'make tools', nor iperf3 on PATH)"
elif ! "${iperf3_cmd[@]}" --version >"$out/iperf3-version.txt" 2>&1; then
	iperf3_why="iperf3 does not start: $(grep -m1 . "$out/iperf3-version.txt")"
fi
# iperf3_run FROM_NS TO_NS TO_ADDR STREAMS DIRECTION FILE: the server in TO_NS
# (the remote node's), the client in FROM_NS connecting to TO_ADDR, as the
# link does; DIRECTION up: the client sends (as host-to-device), down: the
# server sends (-R, as device-to-host). FILE: iperf3's JSON, or why not
iperf3_run() {
	local from=() to=() addr=$3 rev=()
	[ "$5" = down ] && rev=(-R)
	if [ -n "$iperf3_why" ]; then
		echo "iperf3 not run: $iperf3_why" >"$6"
		return
	fi
	if [ -n "$rns" ]; then
		from=(scripts/netns-pair.sh exec "$1") to=(scripts/netns-pair.sh exec "$2")
	else
		addr=127.0.0.1
	fi
	"${to[@]}" "${iperf3_cmd[@]}" -s -1 -B "$addr" -p $iport >"$6.server" 2>&1 &
	sink=$!
	for _ in $(seq 50); do grep -q 'listening' "$6.server" 2>/dev/null && break; sleep 0.1; done
	"${from[@]}" timeout $((iperf3_secs + 30)) "${iperf3_cmd[@]}" -c "$addr" -p $iport -t "$iperf3_secs" \
		-P "$4" "${rev[@]}" -J >"$6" 2>"$6.err" || { [ -s "$6" ] || echo "iperf3 failed: $(grep -m1 . "$6.err")" >"$6"; }
	kill $sink 2>/dev/null
	wait $sink 2>/dev/null
	sink=''
}
cleanup() {
	# shellcheck disable=SC2086 # empty ones drop out
	kill $rnode $cnode $sink 2>/dev/null
	wait 2>/dev/null
	rm -f $rsock $csock
	[ -z "$rns" ] && return
	# a namespace still there after a delete is deleted again, and said
	for _ in 1 2 3 4 5; do
		scripts/netns-pair.sh down "$rns" "$cns"
		[ -e "$netns_dir/$rns" ] || [ -e "$netns_dir/$cns" ] || return
		sleep 0.2
	done
	echo "!!! gpu-remote: namespaces $rns $cns could not be deleted: $(ls "$netns_dir" 2>&1 | tr '\n' ' ')" >&2
}
trap cleanup EXIT
# start_nodes LOGSUFFIX [mearasd link args...]: the remote node and the forwarding node
start_nodes() {
	local sfx=$1
	shift
	rm -f $rsock $csock
	"${rx[@]}" build/bin/mearasd --device="$kind" --socket=$rsock --control=/tmp/mearas-rctl.$$.sock --link-port=$port \
		--cluster-key-file="$key" --max-data-mb 4096 "${link_args[@]}" "$@" >"$out/remote-node$sfx.log" 2>&1 &
	rnode=$!
	for _ in $(seq 100); do
		"${cx[@]}" python3 -c "import socket; socket.create_connection(('$host', $port), 1).close()" 2>/dev/null && break
		sleep 0.1
	done
	"${cx[@]}" build/bin/mearasd --device="$kind" --socket=$csock --control=/tmp/mearas-cctl.$$.sock --vgpus=1 \
		--remote=0=$host:$port/$rgpu --cluster-key-file="$key" --max-data-mb 4096 "${link_args[@]}" "$@" \
		>"$out/client-node$sfx.log" 2>&1 &
	cnode=$!
	for _ in $(seq 50); do [ -S "$csock" ] && [ -S "$rsock" ] && break; sleep 0.1; done
}
stop_nodes() {
	kill $rnode $cnode 2>/dev/null
	wait $rnode $cnode 2>/dev/null
	rnode='' cnode=''
}
# how the link was protected: the remote node's log line of the link
link_security() { grep -m1 -o 'open over tcp, .*' "$1" | sed 's/^open over tcp, //'; }
# Issue 15's latency target as the issue measures it: two mearasd over loopback
# TCP in the host's namespace, native in the same run (scripts/remote-latency.sh:
# median of 3 runs' medians each), before the nodes of this script start; the
# records carry it (sync_roundtrip_loopback_us) and report the round trip over
# the veth pair beside it. Not on the sim (no native figure there).
lat_args=()
if [ "$kind" = cuda ]; then
	scripts/remote-latency.sh 3 >"$out/remote-latency.txt" 2>&1 ||
		echo "!!! gpu-remote: scripts/remote-latency.sh failed ($out/remote-latency.txt)" >&2
	lat_args=(--loopback-latency "$out/remote-latency.txt")
fi
start_nodes ''

lib=$top/build/lib
LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh --run "$out/remote" --set all --timeout 120 \
	>"$out/suite-remote.txt" 2>&1
tests/cuda/run-suite.sh --compare "$native" "$out/remote" >"$out/suite-remote-compare.txt" 2>&1
tail -1 "$out/suite-remote-compare.txt" | sed 's/^/remote suite: /'
# the static-runtime builds through mearas's libcuda.so.1, against their
# native run of scripts/gpu-drvapi.sh (when it ran)
if [ -d "$out/static-native" ]; then
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh \
		--run "$out/static-remote" --set all --build tests/cuda/build/static --timeout 120 >"$out/static-suite-remote.txt" 2>&1
	tests/cuda/run-suite.sh --compare "$out/static-native" "$out/static-remote" \
		>"$out/static-suite-remote-compare.txt" 2>&1
	tail -1 "$out/static-suite-remote-compare.txt" | sed 's/^/remote static-runtime suite: /'
fi
# the driver-API-only builds, against their native run of gpu-drvapi.sh
if [ -d "$out/driver-native" ]; then
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh \
		--run "$out/driver-remote" --set driver --build tests/cuda/build/driver --timeout 120 \
		>"$out/driver-suite-remote.txt" 2>&1
	tests/cuda/run-suite.sh --compare "$out/driver-native" "$out/driver-remote" \
		>"$out/driver-suite-remote-compare.txt" 2>&1
	tail -1 "$out/driver-suite-remote-compare.txt" | sed 's/^/remote driver-API suite: /'
fi
# nvidia-smi -L over mearas's libnvidia-ml.so.1 on the remote vGPU: native's
# line of the GPU the remote node serves, as GPU 0 (the only one it shows)
if [ "$kind" = cuda ] && command -v nvidia-smi >/dev/null; then
	nvidia-smi -L 2>&1 | sed -n "s/^GPU $rgpu: /GPU 0: /p" >"$out/smi-remote-expected.txt"
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" timeout 60 nvidia-smi -L \
		>"$out/smi-remote.txt" 2>"$out/smi-remote.err"
	smi_rc=$?
	if [ $smi_rc -eq 0 ] && [ -s "$out/smi-remote.txt" ] && cmp -s "$out/smi-remote-expected.txt" "$out/smi-remote.txt"; then
		echo "remote nvidia-smi -L: as native ($(head -n 1 "$out/smi-remote.txt"))"
	else
		echo "remote nvidia-smi -L: DIFFERS (exit $smi_rc; expected: $(head -n 1 "$out/smi-remote-expected.txt"); got: $(head -n 1 "$out/smi-remote.txt"))"
	fi
fi

# Programs of the suite (GPU_SHAPED_PROGRAMS, default every program of the
# lane's suite, the stress mix among them) again through the remote vGPU with
# the veth pair shaped:
# tc tbf, SHAPED_RATE (default 1gbit) each way. iproute2's tc, carried in
# build/tools/tc with its libraries by `make tools`, else tc on PATH (busybox's
# tc cannot add tbf). Compared with their native outputs in NATIVE_DIR. Without
# namespaces, tc or tbf in the kernel it prints "remote shaped suite: skipped:
# REASON". The shaping is gone before the microbenchmarks.
shaped_rate=${SHAPED_RATE:-1gbit}
read -r -a shaped_progs <<<"${GPU_SHAPED_PROGRAMS:-$(tests/cuda/run-suite.sh --list all)}"
tc_cmd=()
if [ -x build/tools/tc/tc ]; then
	tc_cmd=(env "LD_LIBRARY_PATH=$top/build/tools/tc/lib" "$top/build/tools/tc/tc")
elif command -v tc >/dev/null; then
	tc_cmd=("$(command -v tc)")
fi
shaped_skip=
if [ -z "$rns" ]; then
	shaped_skip="no network namespaces ($(tail -1 "$out/netns.txt"))"
elif [ ${#tc_cmd[@]} -eq 0 ]; then
	shaped_skip="no tc (iproute2): neither build/tools/tc (make tools) nor tc on PATH"
else
	for dev in "$rns:mxva" "$cns:mxvb"; do
		if ! scripts/netns-pair.sh exec "${dev%%:*}" "${tc_cmd[@]}" qdisc add dev "${dev#*:}" root tbf \
			rate "$shaped_rate" burst 256kb latency 50ms >>"$out/shaped-tc.txt" 2>&1; then
			shaped_skip="tc cannot add tbf here: $(tail -1 "$out/shaped-tc.txt")"
			break
		fi
		scripts/netns-pair.sh exec "${dev%%:*}" "${tc_cmd[@]}" qdisc show dev "${dev#*:}" >>"$out/shaped-qdisc.txt" 2>&1
	done
fi
if [ -z "$shaped_skip" ]; then
	mkdir -p "$out/shaped-native"
	for p in "${shaped_progs[@]}"; do cp "$native/$p".* "$out/shaped-native/" 2>/dev/null; done
	LD_LIBRARY_PATH=$lib MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" tests/cuda/run-suite.sh \
		--run "$out/remote-shaped" --timeout 300 "${shaped_progs[@]}" >"$out/suite-remote-shaped.txt" 2>&1
	tests/cuda/run-suite.sh --compare "$out/shaped-native" "$out/remote-shaped" \
		>"$out/suite-remote-shaped-compare.txt" 2>&1
	echo "remote shaped suite (tbf $shaped_rate each way on the veth pair): $(tail -1 "$out/suite-remote-shaped-compare.txt")"
else
	echo "remote shaped suite: skipped: $shaped_skip"
fi
if [ -n "$rns" ] && [ ${#tc_cmd[@]} -gt 0 ]; then
	for dev in "$rns:mxva" "$cns:mxvb"; do
		scripts/netns-pair.sh exec "${dev%%:*}" "${tc_cmd[@]}" qdisc del dev "${dev#*:}" root >/dev/null 2>&1
	done
fi

for i in 1 2; do
	build/experiments/microbench >"$out/micro-rnative-$i.txt" 2>&1
	# and the link's TCP connections while it runs (the forwarding node's, to the link port)
	python3 experiments/microbench/link_streams.py --node "$cnode" --port $port --out "$out/link-streams-$i.txt" -- \
		env LD_LIBRARY_PATH="$lib" MEARAS_SOCKET=$csock CUDA_VISIBLE_DEVICES= "${cx[@]}" timeout 300 \
		build/experiments/microbench >"$out/micro-remote-$i.txt" 2>&1
	# raw TCP between the same namespaces: each direction between two 256 MiB
	# buffers, as the copies move them (up: client to remote node, as
	# host-to-device; down: as device-to-host), and from a 4 MiB buffer that
	# stays in the caches, for reference
	raw_tcp up "$cns" "$rns" 10.251.0.1 256 "$out/raw-tcp-up-$i.txt"
	raw_tcp down "$rns" "$cns" 10.251.0.2 256 "$out/raw-tcp-down-$i.txt"
	raw_tcp up "$cns" "$rns" 10.251.0.1 4 "$out/raw-tcp-hot-$i.txt"
	# iperf3, the standard yardstick: one stream, then as many as the link used
	streams=$(awk '$1 == "METRIC" && $2 == "link_streams" { print $4 }' "$out/link-streams-$i.txt")
	for way in up down; do
		iperf3_run "$cns" "$rns" 10.251.0.1 1 $way "$out/iperf3-$way-$i.json"
		if [ "${streams:-0}" -gt 1 ]; then
			iperf3_run "$cns" "$rns" 10.251.0.1 "$streams" $way "$out/iperf3-$way-multi-$i.json"
		fi
	done
done
# the yardstick's files: iperf3 with as many streams as the link used is iperf3
# with one stream where the link used one
yardstick() { # LINK_STREAMS_FILES_PREFIX
	local way multi=()
	for way in up down; do
		echo --iperf3-$way "$out"/iperf3-$way-?.json
		multi=("$out"/iperf3-$way-multi-?.json)
		[ -e "${multi[0]}" ] || multi=("$out"/iperf3-$way-?.json)
		echo --iperf3-$way-multi "${multi[@]}"
	done
	echo --link-streams "$1"-?.txt
}
# tls where the remote node's log says the link is encrypted, else tcp
transport() { case $(link_security "$1") in encrypted*) echo tls ;; *) echo tcp ;; esac; }
# shellcheck disable=SC2046 # file lists, no spaces in $out
python3 experiments/microbench/remote_compare.py --native "$micro_native" "$out"/micro-rnative-?.txt \
	--remote "$out"/micro-remote-?.txt --raw-tcp-up "$out"/raw-tcp-up-?.txt \
	--raw-tcp-down "$out"/raw-tcp-down-?.txt --raw-tcp-hot "$out"/raw-tcp-hot-?.txt $(yardstick "$out/link-streams") \
	--transport "$(transport "$out/remote-node.log")" "${lat_args[@]}" \
	--device "$device" --network "$network; link $(link_security "$out/remote-node.log")$opts" --out "$results"

# The same remote microbenchmarks with link encryption off on both nodes
# (mearasd --link-encryption=off; the run above has it on, the default),
# against the same native and raw TCP numbers: remote-encryption-off.json
# beside remote.json, in the same record format.
stop_nodes
start_nodes -encryption-off --link-encryption=off
for i in 1 2; do
	python3 experiments/microbench/link_streams.py --node "$cnode" --port $port \
		--out "$out/link-streams-encryption-off-$i.txt" -- env LD_LIBRARY_PATH="$lib" MEARAS_SOCKET=$csock \
		CUDA_VISIBLE_DEVICES= "${cx[@]}" timeout 300 build/experiments/microbench \
		>"$out/micro-remote-encryption-off-$i.txt" 2>&1
done
echo "== link encryption off (--link-encryption=off on both nodes)"
# shellcheck disable=SC2046 # file lists, no spaces in $out
python3 experiments/microbench/remote_compare.py --native "$micro_native" "$out"/micro-rnative-?.txt \
	--remote "$out"/micro-remote-encryption-off-?.txt --raw-tcp-up "$out"/raw-tcp-up-?.txt \
	--raw-tcp-down "$out"/raw-tcp-down-?.txt --raw-tcp-hot "$out"/raw-tcp-hot-?.txt $(yardstick "$out/link-streams-encryption-off") \
	--transport "$(transport "$out/remote-node-encryption-off.log")" "${lat_args[@]}" \
	--device "$device" --network "$network; link $(link_security "$out/remote-node-encryption-off.log")$opts" \
	--out "${results%.json}-encryption-off.json"
