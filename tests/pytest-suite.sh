#!/usr/bin/env bash
# Runs one pytest suite of tests/ (its `make test`) from the top of the
# checkout: mypy --strict through the suite's mypy.ini, then pytest; the last
# line "N passed, M failed[, K skipped]" counted from pytest's JUnit report
# (build/tests/NAME/junit.xml); the exit status mypy's when it fails, else pytest's.
# Usage: tests/pytest-suite.sh tests/NAME
set -uo pipefail
dir=${1:?usage: pytest-suite.sh tests/NAME}
cd "$(dirname "$0")/.."
python3 -m mypy --config-file "$dir/mypy.ini" "$dir" || exit $?
xml=build/$dir/junit.xml
rc=0
python3 -m pytest -p no:cacheprovider -q "$dir" --junitxml="$xml" || rc=$?
python3 - "$xml" <<'PY'
import sys
import xml.etree.ElementTree as E

s = E.parse(sys.argv[1]).getroot()
s = s if s.tag == "testsuite" else s[0]
t, f, e, k = (int(s.get(x, 0)) for x in ("tests", "failures", "errors", "skipped"))
print(f"{t - f - e - k} passed, {f + e} failed" + (f", {k} skipped" if k else ""))
PY
exit $rc
