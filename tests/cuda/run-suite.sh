#!/usr/bin/env bash
# Runs the GPU-lane programs or compares two sets of their outputs.
#
#   run-suite.sh --run OUTDIR [--build DIR] [--timeout SECONDS] [--set SET] [NAME...]
#       Runs every program of SET (or the NAMEs given, from any set) from DIR
#       (default: build/ next to this script) under `timeout`, writing
#       OUTDIR/NAME.out (stdout), OUTDIR/NAME.err (stderr) and OUTDIR/NAME.rc
#       (exit status). SET: core (default), libraries (the lib_* programs
#       calling cuBLAS, cuFFT, cuDNN, ...), driver (the programs built with the
#       driver API alone, in build/driver) or all. The environment is
#       inherited, so LD_LIBRARY_PATH selects which libcudart.so.13 (native
#       or mearas) the programs load.
#   run-suite.sh --list SET
#       Prints the names of SET's programs, one line, blank-separated.
#   run-suite.sh --compare DIR_A DIR_B
#       A program passes when both runs exited 0, ended with PASS and wrote
#       byte-identical stdout. Prints a table, the differences, and a final
#       "N passed, N failed" line; exits non-zero if anything failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
programs=(vector_add matmul_tiled streams_events multithread multidevice graph_capture
	templates rdc thrust_sort atomics coop_groups device_printf memory_api device_query
	stream_callbacks per_thread_stream misuse limits_pools cluster_launch portable_flag portable_uva vmm_api launch_attrs
	graph_nodes graph_events graph_generic tma_tiled stress_mix managed managed_vars textures modules api_queries graph_mem dyn_parallel stream_memops)
# --set driver: the programs built with the driver API alone (build/driver)
drivers=(modules drv_textures)
# --set libraries: programs calling NVIDIA's CUDA libraries. Kept apart from
# `programs`, the list the VM guest image is built from (tests/vm-cuda), which
# has no room for the libraries.
libraries=(lib_cublas lib_cublaslt lib_cufft lib_curand lib_cusparse lib_cusolver lib_cudnn
	lib_nvrtc lib_nvml)

usage() {
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# Prints PASS, FAIL, TIMEOUT or MISSING for one recorded run.
verdict() {
	local dir=$1 name=$2
	if [ ! -f "$dir/$name.out" ] || [ ! -f "$dir/$name.rc" ]; then
		echo MISSING
		return
	fi
	local rc
	rc=$(cat "$dir/$name.rc")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo TIMEOUT
	elif [ "$rc" = 0 ] && [ "$(tail -n 1 "$dir/$name.out")" = PASS ]; then
		echo PASS
	else
		echo "FAIL(rc=$rc)"
	fi
}

# set_names SET: the programs of SET, one per line
set_names() {
	case $1 in
	core) printf '%s\n' "${programs[@]}" ;;
	libraries) printf '%s\n' "${libraries[@]}" ;;
	driver) printf '%s\n' "${drivers[@]}" ;;
	all) printf '%s\n' "${programs[@]}" "${libraries[@]}" ;;
	*) echo "run-suite: unknown set: $1 (core, libraries, driver or all)" >&2; exit 2 ;;
	esac
}

run_mode() {
	local outdir=$1 build=$2 limit=$3 set=$4
	shift 4
	local names=("$@")
	[ ${#names[@]} -gt 0 ] || mapfile -t names < <(set_names "$set")
	mkdir -p "$outdir" || exit 2
	local passed=0 failed=0 name v
	printf '%-20s %s\n' PROGRAM RESULT
	for name in "${names[@]}"; do
		if [ ! -x "$build/$name" ]; then
			echo "not built: $build/$name" >"$outdir/$name.err"
			: >"$outdir/$name.out"
			echo 127 >"$outdir/$name.rc"
		else
			timeout -k 5 "$limit" "$build/$name" >"$outdir/$name.out" 2>"$outdir/$name.err" </dev/null
			echo $? >"$outdir/$name.rc"
		fi
		v=$(verdict "$outdir" "$name")
		printf '%-20s %s\n' "$name" "$v"
		if [ "$v" = PASS ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			tail -n 3 "$outdir/$name.out" "$outdir/$name.err" 2>/dev/null | sed 's/^/    /'
		fi
	done
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

compare_mode() {
	local a=$1 b=$2
	[ -d "$a" ] && [ -d "$b" ] || { echo "run-suite: not a directory: $a or $b" >&2; exit 2; }
	local names
	names=$( (ls "$a" "$b" | sed -n 's/\.out$//p') | sort -u)
	[ -n "$names" ] || { echo "run-suite: no *.out files in $a or $b" >&2; exit 2; }
	local passed=0 failed=0 name va vb same diffs=""
	printf '%-20s %-14s %-14s %s\n' PROGRAM A B OUTPUT
	for name in $names; do
		va=$(verdict "$a" "$name")
		vb=$(verdict "$b" "$name")
		if [ -f "$a/$name.out" ] && [ -f "$b/$name.out" ] && cmp -s "$a/$name.out" "$b/$name.out"; then
			same=identical
		else
			same=DIFFERS
		fi
		printf '%-20s %-14s %-14s %s\n' "$name" "$va" "$vb" "$same"
		if [ "$va" = PASS ] && [ "$vb" = PASS ] && [ "$same" = identical ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			[ "$same" = DIFFERS ] && diffs="$diffs $name"
		fi
	done
	for name in $diffs; do
		echo "--- $name: diff $a/$name.out $b/$name.out (first 20 lines)"
		diff "$a/$name.out" "$b/$name.out" 2>&1 | head -n 20
	done
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

[ $# -ge 1 ] || usage
case $1 in
--run)
	[ $# -ge 2 ] || usage
	outdir=$2
	shift 2
	build=$here/build
	limit=120
	set=core
	while [ $# -gt 0 ]; do
		case $1 in
		--build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
		--timeout) [ $# -ge 2 ] || usage; limit=$2; shift 2 ;;
		--set) [ $# -ge 2 ] || usage; set=$2; shift 2 ;;
		-*) usage ;;
		*) break ;;
		esac
	done
	set_names "$set" >/dev/null || exit 2
	for name in "$@"; do
		printf '%s\n' "${programs[@]}" "${libraries[@]}" "${drivers[@]}" | grep -qx -- "$name" ||
			{ echo "run-suite: unknown program: $name" >&2; exit 2; }
	done
	run_mode "$outdir" "$build" "$limit" "$set" "$@"
	;;
--list)
	[ $# -eq 2 ] || usage
	names=$(set_names "$2") || exit 2
	echo $names
	;;
--compare)
	[ $# -eq 3 ] || usage
	compare_mode "$2" "$3"
	;;
*)
	usage
	;;
esac
