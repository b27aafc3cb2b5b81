#!/bin/sh
# campaign.sh SECONDS [TARGET...]: a fuzz campaign. Builds the targets, runs
# each (default: all six) for SECONDS on its seeds and kept crash inputs,
# one after the other, and writes the "fuzz" part of
# experiments/results/security.json through tests/security/report.py (which
# keeps the "attacks" part and replaces a target's entry only with a run at
# least as long). Per target: seconds run, libFuzzer's executed units
# (stat::number_of_executed_units), crashes (crash/leak/timeout/oom inputs
# written, or a non-zero exit that left none). Logs and corpora stay under
# build/campaign/. Exit status 1 when any target crashed.
# Environment: SECURITY_JSON (default experiments/results/security.json).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:?usage: campaign.sh SECONDS [TARGET...]}
shift
[ $# -gt 0 ] || set -- exec fatbin link_msg link_handshake remote_records vm_slot
out=$here/build/campaign
stats=$out/stats.jsonl
json=${SECURITY_JSON:-$root/experiments/results/security.json}

make -s -C "$here" all || exit 1
mkdir -p "$out"
: > "$stats"
export FUZZ_FATBIN="$here/../unit/build/kernels.fatbin"
failed=0
for t in "$@"; do
	[ -x "$here/build/fuzz_$t" ] || { echo "campaign: no target fuzz_$t" >&2; exit 2; }
	corpus=$out/corpus-$t art=$out/artifacts-$t log=$out/$t.log
	rm -rf "$art"
	mkdir -p "$corpus" "$art"
	regress=
	[ -d "$here/regress/$t" ] && regress=$here/regress/$t
	echo "== $t: $secs s"
	start=$(date +%s)
	(cd "$here" && "build/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$art/" "$corpus" "build/seeds-$t" $regress) > "$log" 2>&1
	rc=$?
	ran=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	[ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
	[ "$crashes" -gt 0 ] && failed=1
	echo "   $ran s, ${execs:-0} executions, $crashes crash(es) (log: $log)"
	printf '{"target": "fuzz_%s", "seconds": %d, "execs": %d, "crashes": %d}\n' "$t" "$ran" "${execs:-0}" "$crashes" >> "$stats"
done
python3 "$root/tests/security/report.py" fuzz "$stats" "$json" || exit 1
exit $failed
