#!/usr/bin/env bash
# Checks run-suite.sh itself without a GPU: fake programs (shell scripts) that
# pass, fail, hang or print differently exercise --run and --compare.
# Prints "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=$here/run-suite.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

expect() { # expect NAME EXPECTED_RC ACTUAL_RC OUTPUT_FILE PATTERN... (!PATTERN: absent)
	local name=$1 want=$2 got=$3 file=$4
	shift 4
	local ok=1 pat
	[ "$want" = "$got" ] || ok=0
	for pat in "$@"; do
		if [ "${pat:0:1}" = '!' ]; then # !PATTERN: must not match
			! grep -Eq -- "${pat:1}" "$file" || { ok=0; echo "  unexpected: ${pat:1}"; }
		else
			grep -Eq -- "$pat" "$file" || { ok=0; echo "  missing: $pat"; }
		fi
	done
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		echo "ok   $name"
	else
		failed=$((failed + 1))
		echo "FAIL $name (rc $got, wanted $want)"
		sed 's/^/  | /' "$file"
	fi
}

make_prog() { # make_prog DIR NAME BODY
	printf '#!/bin/sh\n%s\n' "$3" >"$1/$2"
	chmod +x "$1/$2"
}

mkdir -p "$work/good" "$work/bad"
make_prog "$work/good" vector_add 'echo "n=1 sum=2"; echo PASS'
make_prog "$work/good" misuse 'echo "x: cudaErrorInvalidValue"; echo PASS'
make_prog "$work/good" templates 'echo PASS'
make_prog "$work/bad" vector_add 'echo "n=1 sum=3"; echo PASS'
make_prog "$work/bad" misuse 'echo "FAIL: broken"; exit 1'
make_prog "$work/bad" templates 'sleep 30; echo PASS'

"$suite" --run "$work/a" --build "$work/good" vector_add misuse templates >"$work/log1" 2>&1
expect "run: all pass" 0 $? "$work/log1" '^vector_add +PASS' '^3 passed, 0 failed$'

"$suite" --run "$work/b" --build "$work/bad" --timeout 1 vector_add misuse templates >"$work/log2" 2>&1
expect "run: failure and timeout detected" 1 $? "$work/log2" '^misuse +FAIL\(rc=1\)' \
	'^templates +TIMEOUT' '^1 passed, 2 failed$'

"$suite" --run "$work/c" --build "$work/empty" vector_add >"$work/log3" 2>&1
expect "run: missing binary is a failure" 1 $? "$work/log3" '^vector_add +FAIL\(rc=127\)' '^0 passed, 1 failed$'

"$suite" --compare "$work/a" "$work/a" >"$work/log4" 2>&1
expect "compare: identical runs pass" 0 $? "$work/log4" '^misuse +PASS +PASS +identical' '^3 passed, 0 failed$'

"$suite" --compare "$work/a" "$work/b" >"$work/log5" 2>&1
expect "compare: differing output fails" 1 $? "$work/log5" '^vector_add +PASS +PASS +DIFFERS' \
	'^< n=1 sum=2' '^> n=1 sum=3' '^0 passed, 3 failed$'

rm "$work/b/templates.out"
"$suite" --compare "$work/a" "$work/b" >"$work/log6" 2>&1
expect "compare: missing output fails" 1 $? "$work/log6" '^templates +PASS +MISSING'

"$suite" --run "$work/d" --build "$work/good" no_such_program >"$work/log7" 2>&1
expect "run: unknown program name rejected" 2 $? "$work/log7" 'unknown program'

"$suite" --compare "$work/a" >"$work/log8" 2>&1
expect "usage error" 2 $? "$work/log8" 'usage|run-suite.sh --run'

# --set: the lists as run-suite.sh holds them, a passing fake for each
list() { sed -n "/^$1=(/,/)/p" "$suite" | tr -d '()' | sed "s/$1=//" | tr -s ' \t\n' ' '; }
core=$(list programs)
libs=$(list libraries)
mkdir -p "$work/full"
for p in $core $libs; do make_prog "$work/full" "$p" 'echo PASS'; done
ncore=$(wc -w <<<"$core")
nlibs=$(wc -w <<<"$libs")

"$suite" --run "$work/e" --build "$work/full" >"$work/log9" 2>&1
expect "run: default set is core" 0 $? "$work/log9" '^vector_add +PASS' '!^lib_' \
	"^$ncore passed, 0 failed$"

"$suite" --run "$work/f" --build "$work/full" --set libraries >"$work/log10" 2>&1
expect "run: --set libraries" 0 $? "$work/log10" '^lib_cublas +PASS' '^lib_nvrtc +PASS' \
	'!^vector_add' "^$nlibs passed, 0 failed$"

"$suite" --run "$work/g" --build "$work/full" --set all >"$work/log11" 2>&1
expect "run: --set all" 0 $? "$work/log11" '^vector_add +PASS' '^lib_cudnn +PASS' \
	"^$((ncore + nlibs)) passed, 0 failed$"

"$suite" --run "$work/h" --build "$work/good" --set libraries >"$work/log12" 2>&1
expect "run: unbuilt library programs fail" 1 $? "$work/log12" '^lib_cufft +FAIL\(rc=127\)' \
	"^0 passed, $nlibs failed$"

"$suite" --run "$work/i" --build "$work/full" lib_curand vector_add >"$work/log13" 2>&1
expect "run: names from both sets" 0 $? "$work/log13" '^lib_curand +PASS' '^2 passed, 0 failed$'

"$suite" --run "$work/j" --build "$work/full" --set gpu >"$work/log14" 2>&1
expect "run: unknown set rejected" 2 $? "$work/log14" 'unknown set'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
