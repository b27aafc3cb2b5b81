#!/usr/bin/env bash
# Runs every remote-link test program and prints the combined "N passed, N failed,
# N skipped" (a program that prints no count line, or one of 0 passed, fails).
# GUEST=0 leaves out the QEMU guest test of the verbs transport (about 75 s).
#   tests/run_tests.sh [DIR]   DIR: the test programs (test_unit, link_node), from
#                              the repository's top or absolute (default build/remote-link)
set -u
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$here/../.." && cd "${1:-build/remote-link}" && pwd) || exit 1
total_pass=0 total_fail=0 total_skip=0
run() { # name command...
	local name=$1; shift
	echo "=== $name"
	local log; log=$(mktemp)
	timeout 300 "$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local line; line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -1)
	rm -f "$log"
	if [ -z "$line" ]; then
		echo "$name: no summary (exit $rc): counted as 1 failure"
		total_fail=$((total_fail + 1))
		return
	fi
	local p f k=0; p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
	case $line in *skipped) k=${line##*, }; k=${k%% skipped} ;; esac
	[ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
	[ "$p" = 0 ] && [ "$f" = 0 ] && f=1
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + k))
}
run unit "$BUILD/test_unit"
run stripe "$BUILD/test_stripe"
run records "$BUILD/test_records"
if [ "$(id -u)" = 0 ]; then
	run netns "$here/test_netns.sh" "$BUILD"
else
	echo "netns tests need root: counted as 1 failure"
	total_fail=$((total_fail + 1))
fi
if [ "${GUEST:-1}" = 1 ]; then
	run verbs-guest "$here/test_verbs_guest.sh" "$BUILD"
else
	echo "=== verbs-guest: not run in this configuration (GUEST=0)"
fi
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" = 0 ]
