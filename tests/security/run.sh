#!/bin/bash
# The hostile-client suite: every attacks/NAME.sh runs against its own
# mearasd --device=sim with a healthy client beside the attacker. One line
# per attack, "N passed, N failed" last; the results go to
# experiments/results/security.json (its "attacks" part; report.py).
#   run.sh [NAME...]     (default: every attack)
set -u
SEC_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$SEC_DIR/../.." && pwd)
SEC_BIN=$SEC_DIR/build
SEC_RESULTS=$SEC_BIN/attacks.jsonl
export SEC_DIR SEC_BIN ROOT SEC_RESULTS
passed=0
failed=0
failed_names=()
: >"$SEC_RESULTS"
for f in "$SEC_DIR"/attacks/*.sh; do
	name=$(basename "$f" .sh)
	if [ $# -gt 0 ] && [[ ! " $* " == *" $name "* ]]; then
		continue
	fi
	SEC_TMP=$(mktemp -d /tmp/mearas-sec-$name.XXXXXX)
	chmod 0755 "$SEC_TMP"   # attacks run parts as an unprivileged user
	echo "---- $name"
	if SEC_NAME=$name SEC_TMP=$SEC_TMP timeout -k 5 300 bash "$f" >"$SEC_TMP.log" 2>&1; then
		cat "$SEC_TMP.log"
		echo "PASS $name"
		passed=$((passed + 1))
	else
		rc=$?
		cat "$SEC_TMP.log"
		grep -q "\"name\": \"$name\"" "$SEC_RESULTS" ||
			printf '{"name": "%s", "outcome": "error (exit %d)", "daemon_survived": false, "healthy_client_ok": false}\n' \
				"$name" "$rc" >>"$SEC_RESULTS"
		echo "FAIL $name (exit $rc)"
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
	rm -rf "$SEC_TMP" "$SEC_TMP.log"
done
if [ $# -eq 0 ]; then
	python3 "$SEC_DIR/report.py" attacks "$SEC_RESULTS" "$ROOT/experiments/results/security.json"
fi
[ $failed -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
