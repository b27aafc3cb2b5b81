#!/bin/bash
# The NVML suite (CPU lane): checks of mearas's libnvidia-ml.so.1 as built
# (its export list against nvml.symbols and NVIDIA's nvml.h, no symbol
# versions, libcuda.so.1 found beside it), then every case of nvml_query in a
# process of its own against one mearasd --device=sim --vgpus=2 with a memory
# quota, and a check through NVIDIA's Python bindings (pynvml_check.py).
# Prints PASS/FAIL lines and "N passed, N failed" last; exits non-zero
# when anything failed. The daemon is stopped by PID on exit.
#   NVML_INC=DIR run-tests.sh        (DIR: where NVIDIA's nvml.h is)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=$HERE/${OUT:-build}
LIB=$ROOT/build/lib/libnvidia-ml.so.1
MEARASD=$ROOT/build/bin/mearasd
QUOTA_MB=512
NVML_INC=${NVML_INC:-$("$ROOT/scripts/nvml-include.sh")}
unset MEARAS_VGPUS MEARAS_DATA_MB MEARAS_SOCKET MEARAS_DEVICE
TMP=$(mktemp -d /tmp/mearas-nvmltests.XXXXXX)
DAEMON=
passed=0
failed=0

cleanup() {
	if [ -n "$DAEMON" ] && kill -0 "$DAEMON" 2>/dev/null; then
		kill -TERM "$DAEMON"
		for _ in $(seq 50); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DAEMON" 2>/dev/null
		wait "$DAEMON" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# check NAME COMMAND...: one PASS or FAIL line, the output shown on failure
check() {
	local name=$1
	shift
	if "$@" >"$TMP/check.log" 2>&1; then
		passed=$((passed + 1))
		echo "PASS $name"
	else
		failed=$((failed + 1))
		echo "FAIL $name"
		sed 's/^/      | /' "$TMP/check.log" | tail -n 25
	fi
}

names() { sed 's/#.*//;s/[[:space:]]//g;/^$/d' "$ROOT/guest/libnvml/nvml.symbols" | LC_ALL=C sort; }

# nvml.symbols is NVIDIA's header's list, and the entry points it names
# beyond the header are the ones it says
symbols_match_header() {
	[ -n "$NVML_INC" ] || { echo "no nvml.h found (scripts/nvml-include.sh)"; return 1; }
	diff <(names | grep -vx 'nvmlInternalGetExportTable') \
		<("$ROOT/guest/libnvml/symbols_from_header.sh" "$NVML_INC")
}

# the library exports exactly nvml.symbols, and nothing under a version
exports_match_symbols() {
	diff <(names) <(nm -D --defined-only "$LIB" | awk '{print $3}' | LC_ALL=C sort) || return 1
	if nm -D --defined-only --with-symbol-versions "$LIB" | grep '@'; then
		echo "versioned exports (NVIDIA's are unversioned)"
		return 1
	fi
}

# the core comes from libcuda.so.1, found beside the library
finds_libcuda_beside_it() {
	readelf -d "$LIB" | grep -q 'NEEDED.*\[libcuda.so.1\]' || { echo "no NEEDED libcuda.so.1"; return 1; }
	readelf -d "$LIB" | grep -q 'R.*PATH.*\[\$ORIGIN\]' || { echo "no \$ORIGIN run path"; return 1; }
	env -u LD_LIBRARY_PATH ldd "$LIB" | grep "libcuda.so.1 => $ROOT/build/lib/libcuda.so.1"
}

check symbols_match_header symbols_match_header
check exports_match_symbols exports_match_symbols
check finds_libcuda_beside_it finds_libcuda_beside_it

SOCK=$TMP/mearasd.sock
"$MEARASD" --device=sim --vgpus=2 --quota-mb=$QUOTA_MB --socket="$SOCK" >"$TMP/mearasd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
if [ ! -S "$SOCK" ]; then
	echo "FAIL mearasd did not come up:"
	cat "$TMP/mearasd.log"
	failed=$((failed + 1))
	echo "$passed passed, $failed failed"
	exit 1
fi

# NVIDIA's Python bindings over the library (scripts/deps/pip-nvml.txt)
pynvml_lists_vgpus() {
	LD_LIBRARY_PATH=$ROOT/build/lib MEARAS_SOCKET=$SOCK timeout 60 python3 "$HERE/pynvml_check.py" $QUOTA_MB
}
check pynvml_lists_vgpus pynvml_lists_vgpus

# each case in its own process, one at a time (gpu_lost kills the daemon's
# workers): counts from its closing line
for c in $("$BIN/nvml_query" --list); do
	MEARAS_SOCKET=$SOCK timeout 60 "$BIN/nvml_query" --quota-mb=$QUOTA_MB --daemon-pid=$DAEMON "$c" >"$TMP/case.log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/case.log" | tail -1)
	p=$(echo "$line" | awk '{print $1}')
	if [ "$rc" -eq 0 ] && [ "${p:-0}" -eq 1 ]; then
		passed=$((passed + 1))
		grep -E '^PASS ' "$TMP/case.log"
		[ "${VERBOSE:-0}" = 1 ] && sed 's/^/      | /' "$TMP/case.log"
	else
		failed=$((failed + 1))
		echo "FAIL $c (exit $rc)"
		sed 's/^/      | /' "$TMP/case.log" | tail -n 25
	fi
done
if ! kill -0 "$DAEMON" 2>/dev/null; then
	echo "FAIL mearasd died during the suite:"
	tail -n 25 "$TMP/mearasd.log"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
