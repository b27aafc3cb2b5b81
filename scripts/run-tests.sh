#!/usr/bin/env bash
# The CPU lane: every test suite of the project, one after another, each
# printing its own "N passed, M failed[, K skipped]" line; a summary table and
# the total come last. A suite fails when it exits non-zero, when it prints no
# such count line (it did not say what it ran) or when its line says 0 passed
# (it ran nothing). Exit status: non-zero if any suite failed.
#   scripts/run-tests.sh [SUITE...]      (default: all)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# name | directory with a Makefile whose `test` target runs the suite
suites=(
	"unit|tests/unit"
	"fatbin|tests/fatbin"
	"sim|tests/sim"
	"nvml|tests/nvml"
	"cuda-harness|tests/cuda:check"
	"remote-link|remote-link"
	"remote-link-san|remote-link:test-san"
	"remote-vgpu|tests/remote"
	"security|tests/security"
	"vm|tests/vm"
	"vm-cuda|tests/vm-cuda"
	"assembly-manager|assembly-manager"
	"control|tests/control"
	"daemon|tests/daemon"
	"experiments|experiments/harness"
	"drvapi-probe|experiments/drvapi-probe"
)

want=("$@")
logdir=$top/build/test-logs
mkdir -p "$logdir"
total_pass=0
total_fail=0
total_skip=0
rows=()
for entry in "${suites[@]}"; do
	name=${entry%%|*}
	spec=${entry#*|}
	dir=${spec%%:*}
	target=test
	[[ $spec == *:* ]] && target=${spec#*:}
	if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then
		continue
	fi
	if [ ! -f "$dir/Makefile" ]; then
		rows+=("$(printf '%-18s %8s %8s %8s %8s  %s' "$name" - - - - "missing: $dir/Makefile")")
		total_fail=$((total_fail + 1))
		continue
	fi
	echo "==== $name ($dir: make $target)"
	start=$(date +%s)
	make -C "$dir" "$target" 2>&1 | tee "$logdir/$name.log"
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	# the suite's own closing count (pytest prints "N passed, M failed in Xs")
	line=$(grep -E '[0-9]+ passed' "$logdir/$name.log" | tail -1)
	p=$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || true)
	f=$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || true)
	k=$(echo "$line" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+' || true)
	p=${p:-0}
	f=${f:-0}
	why=
	if [ "$rc" -ne 0 ]; then
		why="exit $rc"
	elif [ -z "$line" ]; then
		why="no 'N passed, M failed' line"
	elif [ "$p" -eq 0 ]; then
		why="0 passed"
	elif [ "$f" -gt 0 ]; then
		why="$f failed"
	fi
	if [ -n "$why" ] && [ "$f" -eq 0 ]; then
		f=1 # the suite failed without counting it: count the suite itself
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + ${k:-0}))
	status=ok
	[ -n "$why" ] && status="FAILED ($why, log build/test-logs/$name.log)"
	rows+=("$(printf '%-18s %8s %8s %8s %7ss  %s' "$name" "$p" "$f" "${k:--}" "$secs" "$status")")
done
echo
printf '%-18s %8s %8s %8s %8s  %s\n' suite passed failed skipped time status
printf '%s\n' "${rows[@]}"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
