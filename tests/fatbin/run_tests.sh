#!/usr/bin/env bash
# Runs every fat binary test program of one build flavour and sums their
# "N passed, M failed, K skipped" lines (tests/check.h; a program without one,
# or with 0 passed, fails). Usage: run_tests.sh BUILD_DIR "WHOLE_VARIANTS" "RDC_VARIANTS"
set -uo pipefail
dir=$1
whole=$2
rdc=$3
fatbins=$(dirname "$dir")/fatbins
total_pass=0
total_fail=0
total_skip=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs a test program; adds the counts of its last "N passed, M failed, K skipped" line.
run() {
	local name=$1
	shift
	echo "== $name"
	"$@" >"$tmp/out" 2>&1
	local rc=$?
	cat "$tmp/out"
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$tmp/out" | tail -1)
	if [ -z "$line" ]; then
		echo "!! $name: exit $rc without a result line"
		total_fail=$((total_fail + 1))
		return
	fi
	local p f k
	p=$(echo "$line" | awk '{print $1}')
	f=$(echo "$line" | awk '{print $3}')
	k=$(echo "$line" | awk '{print $5}')
	# a crash, or nothing run, with no failure counted: one failure
	if [ "$f" -eq 0 ] && { [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; }; then
		echo "!! $name: exit $rc, $p passed"
		f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + k))
}

# One pass or one failure for a shell-level check.
check() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		echo "PASS $name"
		total_pass=$((total_pass + 1))
	else
		echo "FAIL $name"
		cat "$tmp/out"
		total_fail=$((total_fail + 1))
	fi
}

run unit "$dir/test_unit"
for v in $whole; do
	run "registration ($v)" "$dir/reg_$v" --wrapper-version=1
done
for v in $rdc; do
	run "registration ($v, device-linked)" "$dir/reg_$v" --wrapper-version=2
done

# Parsing the executables' whole .nv_fatbin sections gives the same kernels
# and layouts whatever the compression, archs or PTX/cubin mix.
for v in $whole $rdc; do
	check "dump $v" sh -c "'$dir/fatbin_dump' '$fatbins/$v.fatbin' > '$tmp/$v.dump'"
done
for v in $whole; do
	check "same layouts: default vs $v" diff "$tmp/default.dump" "$tmp/$v.dump"
done
check "same layouts: rdc vs rdcnocompress" diff "$tmp/rdc.dump" "$tmp/rdcnocompress.dump"
check "rdc dump holds the whole-program kernels too" \
	sh -c "grep -vE '^(rdc_k2|_Z6rdc_k1)' '$tmp/rdc.dump' | diff '$tmp/default.dump' -"

# The device memory a loaded module holds (mearas_module_footprint), from
# nvcc's own outputs of samples/vars.cu: its PTX defines 4218784 bytes of
# variables; a cubin holds them and its code and constants besides; a fat
# binary holds its largest entry.
vars=$(dirname "$dir")/vars
check "footprint: PTX text's variables" sh -c "test \$('$dir/fatbin_dump' --footprint '$vars/vars.ptx') -eq 4218784"
check "footprint: a cubin holds its variables and code" sh -c \
	"n=\$('$dir/fatbin_dump' --footprint '$vars/vars.cubin') && test \$n -gt 4218784 && test \$n -lt 4300000"
check "footprint: a compressed fat binary holds its largest entry" sh -c \
	"n=\$('$dir/fatbin_dump' --footprint '$vars/vars.fatbin') && test \$n -gt 4218784 && test \$n -lt 4300000"
# __managed__ variables (STO_CUDA_MANAGED in a cubin's symbols): the managed
# one alone, with its size, from a cubin and from a compressed fat binary
check "managed variables: a cubin lists the managed one" sh -c \
	"test \"\$('$dir/fatbin_dump' --managed '$vars/vars.cubin')\" = 'vars_managed 16384'"
check "managed variables: a fat binary lists it once" sh -c \
	"test \"\$('$dir/fatbin_dump' --managed '$vars/vars.fatbin')\" = 'vars_managed 16384'"

# A real-world fat binary: cuBLAS (thousands of kernels, many archs, PTX and
# compressed cubins) must index consistently.
cublas=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}/lib64/libcublas.so" 2>/dev/null || true)
if [ -n "$cublas" ] && [ -f "$cublas" ]; then
	check "cuBLAS .nv_fatbin indexes with > 1000 kernels" sh -c \
		"objcopy -O binary --only-section=.nv_fatbin '$cublas' '$tmp/cublas.fatbin' &&
		 '$dir/fatbin_dump' '$tmp/cublas.fatbin' > '$tmp/cublas.dump' &&
		 test \$(wc -l < '$tmp/cublas.dump') -gt 1000"
else
	echo "FAIL cuBLAS not found under \${CUDA_HOME:-/usr/local/cuda}/lib64"
	total_fail=$((total_fail + 1))
fi

fuzz_inputs=""
for v in nocompress default lz4all zstdsize ptxonly debug rdc rdcnocompress; do
	fuzz_inputs="$fuzz_inputs $fatbins/$v.fatbin"
done
# shellcheck disable=SC2086
run fuzz "$dir/test_fuzz" "${FUZZ_ITERS:-20000}" $fuzz_inputs

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
