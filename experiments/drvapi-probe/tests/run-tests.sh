#!/bin/sh
# CPU test of drvapi-probe (make test): runs probe_test against the fake
# driver three ways, checks the logs, type-checks the Python, and prints
# "N passed, M failed". Exit status 1 when anything failed.
set -u
B=${B:-build}
PY=${PYTHON:-python3}
T=$(cd "$B/test" && pwd)
PROBE_DIR=$(cd "$B/probe" && pwd)
FAKE=$T/libfakecuda.so
OUT=$T/results.txt
rm -f "$T"/*.jsonl "$OUT"


echo "-- probe_test (plain)" | tee -a "$OUT"
env LD_LIBRARY_PATH="$PROBE_DIR" PROBE_REAL_LIBCUDA="$FAKE" PROBE_LOG="$T/plain.jsonl" \
    "$T/probe_test" 2>&1 | tee -a "$OUT"

echo "-- probe_test (PROBE_WRAP_PROCS=1)" | tee -a "$OUT"
env LD_LIBRARY_PATH="$PROBE_DIR" PROBE_REAL_LIBCUDA="$FAKE" PROBE_LOG="$T/wrap.jsonl" \
    PROBE_WRAP_PROCS=1 "$T/probe_test" 2>&1 | sed 's/^\(PASS\|FAIL\) /\1 wrap: /' | tee -a "$OUT"

echo "-- probe_test (PROBE_WRAP_PROCS=2: calling thunks that log errors)" | tee -a "$OUT"
env LD_LIBRARY_PATH="$PROBE_DIR" PROBE_REAL_LIBCUDA="$FAKE" PROBE_LOG="$T/errors.jsonl" \
    PROBE_WRAP_PROCS=2 "$T/probe_test" 2>&1 | sed 's/^\(PASS\|FAIL\) /\1 errors: /' | tee -a "$OUT"

echo "-- PROBE_REAL_LIBCUDA naming the probe itself" | tee -a "$OUT"
env LD_LIBRARY_PATH="$PROBE_DIR" PROBE_REAL_LIBCUDA="$PROBE_DIR/libcuda.so.1" \
    PROBE_LOG="$T/self.jsonl" "$T/probe_test" --call-init >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "PASS self: the probe refuses to load itself and the call aborts (exit $rc)" | tee -a "$OUT"
else
    echo "FAIL self: exit 0" | tee -a "$OUT"
fi

echo "-- log checks" | tee -a "$OUT"
"$PY" tests/check_log.py "$T/plain.jsonl" "$T/wrap.jsonl" "$T/self.jsonl" "$T/errors.jsonl" 2>&1 | tee -a "$OUT"

echo "-- mypy --strict" | tee -a "$OUT"
if command -v mypy >/dev/null 2>&1; then
    if m=$(mypy --strict summarize.py tests/check_log.py gen/gen_forwarders.py 2>&1); then
        echo "PASS mypy --strict: $m" | tee -a "$OUT"
    else
        echo "FAIL mypy --strict:" | tee -a "$OUT"
        echo "$m" | tee -a "$OUT"
    fi
else
    echo "SKIP mypy not installed" | tee -a "$OUT"
fi

np=$(grep -c '^PASS' "$OUT")
nf=$(grep -c '^FAIL' "$OUT")
echo "$np passed, $nf failed"
[ "$nf" -eq 0 ]
