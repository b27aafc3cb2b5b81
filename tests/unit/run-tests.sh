#!/bin/sh
# Runs every unit test (plain, ASan+UBSan, TSan), the fuzzers for a bounded
# time, and the sanitizer build of mearasd with real programs. Each test's
# output goes to build/logs/NAME.log (shown when it fails). A test program
# counts its cases (its "N passed, M failed, K skipped" line, tests/check.h);
# any other command counts as one. Last line: "N passed, M failed, K skipped";
# exit status 1 when anything failed.
# Environment: FUZZ_SECONDS (per fuzz target, default 25), WAKEUP_RECORDS.
cd "$(dirname "$0")" || exit 1
B=build
LOGS=$B/logs
FUZZ_SECONDS=${FUZZ_SECONDS:-25}
WAKEUP_RECORDS=${WAKEUP_RECORDS:-2000000}
FATBIN=$B/kernels.fatbin
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
passed=0
failed=0
skipped=0
failed_names=
mkdir -p $LOGS/plain $LOGS/asan $LOGS/tsan $LOGS/fuzz $LOGS/san-daemon

# run NAME TIMEOUT_S COMMAND...: passes when the command exits 0 in time
run() {
	name=$1 limit=$2
	shift 2
	start=$(date +%s)
	timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	report "$name" "$rc" "$start" counted
}

# expect_fail NAME TIMEOUT_S PATTERN COMMAND...: the command must fail and say PATTERN
expect_fail() {
	name=$1 limit=$2 pattern=$3
	shift 3
	start=$(date +%s)
	timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "$pattern" "$LOGS/$name.log"; then
		rc=0
	else
		echo "expected a failure saying '$pattern', got exit status $rc" >>"$LOGS/$name.log"
		rc=1
	fi
	report "$name" "$rc" "$start"
}

# report NAME RC START [counted]: with counted, the count line of the log
# (when there is one) gives the cases; otherwise the command counts as one
report() {
	secs=$(( $(date +%s) - $3 ))
	p=1 f=1 k=0 cases= line=
	[ "${4:-}" = counted ] &&
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$LOGS/$1.log" | tail -1)
	if [ -n "$line" ]; then
		p=${line%% passed*} f=${line#*, } k=${line##*, }
		f=${f%% failed*} k=${k%% skipped}
		cases=" ($p passed, $k skipped)"
		[ "$f" -eq 0 ] && { [ "$2" -ne 0 ] || [ "$p" -eq 0 ]; } && f=1 # no case ran, or a crash
	elif [ "$2" -ne 0 ]; then
		p=0
	fi
	passed=$((passed + p))
	skipped=$((skipped + k))
	if [ "$2" -eq 0 ] && { [ -z "$line" ] || [ "$f" -eq 0 ]; }; then
		printf 'PASS  %-34s %4ss%s\n' "$1" "$secs" "$cases"
	else
		failed=$((failed + f))
		failed_names="$failed_names $1"
		[ "$2" -eq 124 ] && echo "(timed out)" >>"$LOGS/$1.log"
		printf 'FAIL  %-34s %4ss (exit %s)\n' "$1" "$secs" "$2"
		sed 's/^/    | /' "$LOGS/$1.log" | tail -40
	fi
}

for v in plain asan; do
	n=$WAKEUP_RECORDS
	[ $v = asan ] && n=$((WAKEUP_RECORDS / 2))
	run $v/ring_wrap 60 $B/$v/test_ring_wrap
	run $v/ring_full 60 $B/$v/test_ring_full
	run $v/ring_order 120 $B/$v/test_ring_order --records=1000000
	run $v/ring_wakeup 300 $B/$v/test_ring_wakeup --records=$n
	run $v/vaheap 120 $B/$v/test_vaheap --steps=20000
	run $v/handles 60 $B/$v/test_handles
	run $v/tenant 120 $B/$v/test_tenant
	run $v/vgpustats 60 $B/$v/test_vgpustats
	run $v/pcie_link 60 $B/$v/test_pcie_link
	# sanitizer builds keep their own fault handlers (fatal.c steps aside there)
	[ $v = plain ] && run $v/fatal 60 $B/$v/test_fatal
	run $v/exec_framing 60 $B/$v/test_exec_framing
	run $v/exec_memory 60 $B/$v/test_exec_memory
	run $v/exec_vmm 60 $B/$v/test_exec_vmm
	run $v/exec_objects 60 $B/$v/test_exec_objects --fatbin=$FATBIN
	run $v/fatbin_padding 60 $B/$v/test_fatbin_padding --fatbin=$B/kernels_tmap.fatbin
	run $v/exec_order 60 $B/$v/test_exec_order
	run $v/exec_lifetimes 120 $B/$v/test_exec_lifetimes
	run $v/remote_mapped 60 $B/$v/test_remote_mapped
	run $v/poller 60 $B/$v/test_poller
	run $v/watchdog 60 $B/$v/test_watchdog
	run $v/fatbin_empty 60 $B/$v/test_fatbin_empty
	run $v/dataheap 60 $B/$v/test_dataheap
	run $v/vm_output 60 $B/$v/test_vm_output
	run $v/ops_spec 60 $B/$v/test_ops_spec
	run $v/cu_procaddr 60 $B/$v/test_cu_procaddr
	run $v/cu_integrity 60 $B/$v/test_cu_integrity
	run $v/kmd_version 60 $B/$v/test_kmd_version
	run $v/hostfn_done 60 $B/$v/test_hostfn_done
	run $v/region_address 60 $B/$v/test_region_address
	run $v/printf_flush 60 $B/$v/test_printf_flush
	run $v/exec_link 60 $B/$v/test_exec_link
	run $v/exec_array 60 $B/$v/test_exec_array
	run $v/cpus 60 $B/$v/test_cpus
done
# every test program the Makefile builds is run above
unlisted=
for t in $(make -s --no-print-directory print-tests); do
	grep -q "run \$v/${t#test_} " run-tests.sh || unlisted="$unlisted $t"
done
start=$(date +%s)
[ -z "$unlisted" ] || echo "built but not run by run-tests.sh:$unlisted" >"$LOGS/tests_listed.log"
report tests_listed "$([ -z "$unlisted" ]; echo $?)" "$start"
# the op generator's refusals of a malformed spec
run opgen 120 python3 -m pytest -q -p no:cacheprovider ../opgen
run opgen_types 120 python3 -m mypy --strict ../../scripts/opgen.py ../opgen/test_opgen.py
# the cuGetProcAddress table generator's refusals, and its types
run procgen 120 python3 -m pytest -q -p no:cacheprovider ../procgen
run procgen_types 120 python3 -m mypy --strict ../../scripts/procgen.py ../procgen/test_procgen.py
# the GPU lane's record of driver-API programs (scripts/drvapi_programs.py)
run drvapi_programs 120 python3 -m pytest -q -p no:cacheprovider ../drvapi
run drvapi_programs_types 120 python3 -m mypy --strict ../../scripts/drvapi_programs.py ../drvapi/test_drvapi_programs.py
# no include loop between host-backend's modules, and the check itself
run include_graph 60 python3 ../../scripts/include_graph.py
run include_graph_types 120 python3 -m mypy --strict ../../scripts/include_graph.py
expect_fail include_graph_detects_loop 60 "include loop: a -> b -> a" python3 ../../scripts/include_graph.py --root include_loop
# the lost-wakeup detector itself: wakeups dropped on purpose must be caught
expect_fail plain/ring_wakeup_detects_loss 60 "lost wakeup" $B/plain/test_ring_wakeup --records=200000 --drop-wakeups

run tsan/ring_order 300 $B/tsan/test_ring_order --records=1000000
run tsan/ring_wakeup 300 $B/tsan/test_ring_wakeup --records=$((WAKEUP_RECORDS / 2))
run tsan/poller 120 $B/tsan/test_poller
run tsan/exec_framing 60 $B/tsan/test_exec_framing
run tsan/exec_memory 120 $B/tsan/test_exec_memory

run fuzz/regress 120 ../fuzz/replay.sh
run fuzz/exec $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh exec "$FUZZ_SECONDS"
run fuzz/fatbin $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh fatbin "$FUZZ_SECONDS"
run fuzz/link_msg $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh link_msg "$FUZZ_SECONDS"
run fuzz/link_handshake $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh link_handshake "$FUZZ_SECONDS"
run fuzz/remote_records $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh remote_records "$FUZZ_SECONDS"
run fuzz/vm_slot $((FUZZ_SECONDS + 60)) ../fuzz/run-fuzz.sh vm_slot "$FUZZ_SECONDS"

run san-daemon/programs 300 ./san-daemon.sh

[ -n "$failed_names" ] && echo "failed:$failed_names (logs in tests/unit/$LOGS)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
