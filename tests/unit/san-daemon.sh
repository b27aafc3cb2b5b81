#!/bin/sh
# Sanitizer run of the real daemon and runtime library: mearasd and
# libcudart.so.13 built with ASan+UBSan (top-level Makefile, BUILD under
# tests/unit/build/san-daemon), mearasd --device=sim on a private socket, and
# CUDA programs built by nvcc (-cudart shared) run against it. Passes when
# san_client prints PASS and no sanitizer report appears in any log.
# device_query and misuse from tests/cuda run too; their own verdicts are
# logged (the model runs no kernels) but only sanitizer reports fail this.
# tests/sim's drv_vmm (virtual memory management; the daemon gives 2 vGPUs by
# default) must pass too, and so must graph_nodes and drv_graph_nodes (graphs
# built node by node, through both front ends), and tests/sim's drv_tensormap
# in each of its modes that reach mearasd (tensor map records, refused and not).
cd "$(dirname "$0")" || exit 1
ROOT=$(cd ../.. && pwd)
BUILD=$ROOT/tests/unit/build/san-daemon
OUT=$PWD/build/san-run
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
SAN_OPTS="abort_on_error=1:detect_leaks=1"
fail=0

rm -rf "$OUT"
mkdir -p "$OUT"
[ -x "$BUILD/bin/mearasd" ] && [ -e "$BUILD/lib/libcudart.so.13" ] ||
	{ echo "sanitizer build missing: make -C tests/unit san-daemon" >&2; exit 1; }
"$NVCC" -O1 -cudart shared -gencode arch=compute_90,code=sm_90 -o "$OUT/san_client" san_client.cu || exit 1
for p in device_query misuse; do
	"$NVCC" -O1 -std=c++17 -cudart shared -gencode arch=compute_90,code=sm_90 \
		-o "$OUT/$p" "$ROOT/tests/cuda/src/$p.cu" || exit 1
done
"$NVCC" -O1 -std=c++17 -cudart shared -gencode arch=compute_90,code=sm_90 \
	-o "$OUT/drv_vmm" "$ROOT/tests/sim/drv_vmm.cu" -lcuda || exit 1
"$NVCC" -O1 -std=c++17 -cudart shared -gencode arch=compute_90,code=sm_90 \
	-o "$OUT/graph_nodes" "$ROOT/tests/sim/graph_nodes.cu" || exit 1
${CC:-cc} -std=gnu11 -O1 -I"$(dirname "$NVCC")/../include" -o "$OUT/drv_graph_nodes" \
	"$ROOT/tests/sim/drv_graph_nodes.c" -L"$BUILD/lib" -lcuda || exit 1
${CC:-cc} -std=gnu11 -O1 -I"$(dirname "$NVCC")/../include" -I"$ROOT/include" -o "$OUT/drv_tensormap" \
	"$ROOT/tests/sim/drv_tensormap.c" -L"$BUILD/lib" -lcuda || exit 1
TMAP_MODES="encode replace refuse_enums refuse_memory refuse_rules wide"

LIBASAN=$(gcc -print-file-name=libasan.so)
SOCK=$OUT/mearasd.sock
ASAN_OPTIONS=$SAN_OPTS UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	"$BUILD/bin/mearasd" --device=sim --socket="$SOCK" --data-mb=64 >"$OUT/mearasd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || { echo "mearasd did not create $SOCK"; cat "$OUT/mearasd.log"; kill "$PID"; exit 1; }

# the programs are not instrumented: libasan is preloaded for the library
for p in san_client device_query misuse drv_vmm graph_nodes drv_graph_nodes; do
	vgpus=
	[ "$p" = drv_graph_nodes ] && vgpus=MEARAS_VGPUS=2 # it uses a second device
	env $vgpus MEARAS_SOCKET=$SOCK LD_LIBRARY_PATH=$BUILD/lib LD_PRELOAD=$LIBASAN \
		ASAN_OPTIONS=$SAN_OPTS UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 120 "$OUT/$p" >"$OUT/$p.log" 2>&1
	echo "$p: exit $? ($(tail -n 1 "$OUT/$p.log"))"
	# its worker gone before the next program starts (as tests/sim's prog
	# does): memory a program leaves behind stays charged to this user (root)
	# until then, and the next one's cudaMemGetInfo would count it
	for _ in $(seq 100); do
		pgrep -P "$PID" >/dev/null || break
		sleep 0.1
	done
done
for m in $TMAP_MODES; do
	env MEARAS_SOCKET=$SOCK LD_LIBRARY_PATH=$BUILD/lib LD_PRELOAD=$LIBASAN \
		ASAN_OPTIONS=$SAN_OPTS UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout 60 "$OUT/drv_tensormap" "$m" >"$OUT/drv_tensormap_$m.log" 2>&1
	echo "drv_tensormap $m: exit $? ($(tail -n 1 "$OUT/drv_tensormap_$m.log"))"
	for _ in $(seq 100); do
		pgrep -P "$PID" >/dev/null || break
		sleep 0.1
	done
done
for p in san_client drv_vmm graph_nodes drv_graph_nodes $(for m in $TMAP_MODES; do echo "drv_tensormap_$m"; done); do
	grep -q '^PASS$' "$OUT/$p.log" || { echo "$p did not pass"; fail=1; }
done

kill -TERM "$PID"
wait "$PID"
echo "mearasd: exit $? after SIGTERM"
if grep -l -E 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$OUT"/*.log; then
	echo "sanitizer reports found (files above):"
	grep -h -A 30 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$OUT"/*.log | head -80
	fail=1
fi
[ $fail -eq 0 ] && echo "no sanitizer reports"
exit $fail
