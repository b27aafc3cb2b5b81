#!/usr/bin/env bash
# Runs every benchmark application once and collects its RESULT line.
#
#   run-apps.sh [--build DIR] [--timeout SECONDS] [--results FILE] [-- APP_ARGS...]
#
# APP_ARGS (for example `--seconds 5` or `--device 1`) go to every app. The
# BinomialOptions --launches 25 variant runs as its own entry. An entry passes
# when the app exits 0 and prints exactly one RESULT line with check=ok.
# RESULT lines are appended to FILE (default: stdout only). The environment
# is inherited, so LD_LIBRARY_PATH picks the native or the mearas runtime.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/build
limit=600
results=
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--) shift; break ;;
	*) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

errfile=$(mktemp)
trap 'rm -f "$errfile"' EXIT
entries=("binomialoptions" "binomialoptions --launches 25" "blackscholes" "matrixmul" "mri_fhd" "cp")
passed=0
failed=0
for entry in "${entries[@]}"; do
	read -r -a cmd <<<"$entry"
	out=$(timeout -k 5 "$limit" "$build/${cmd[0]}" "${cmd[@]:1}" "$@" 2>"$errfile")
	rc=$?
	lines=$(printf '%s\n' "$out" | grep -c '^RESULT ')
	if [ $rc = 0 ] && [ "$lines" = 1 ] && printf '%s\n' "$out" | grep -q '^RESULT .* check=ok$'; then
		passed=$((passed + 1))
		echo "PASS  $entry"
	else
		failed=$((failed + 1))
		echo "FAIL  $entry (rc=$rc)"
		tail -n 5 "$errfile" | sed 's/^/    /'
	fi
	printf '%s\n' "$out" | grep '^RESULT ' | sed 's/^/    /'
	if [ -n "$results" ]; then
		printf '%s\n' "$out" | grep '^RESULT ' >>"$results"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
