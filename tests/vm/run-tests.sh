#!/usr/bin/env bash
# Runs every VM test scenario; prints "N passed, N failed" last and exits
# non-zero on any failure. Usage: run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR}
command -v "${MEARAS_QEMU:-qemu-system-x86_64}" >/dev/null || {
	echo "run-tests.sh: qemu-system-x86_64 not found (scripts/deps/apt-vm.txt)" >&2
	echo "0 passed, 1 failed"; exit 1; }
# Short directory: QEMU's and the server's socket paths must fit sun_path.
work=$(mktemp -d /tmp/mearas-vm.XXXXXX)
passed=0 failed=0

run() {
	local name=$1; shift
	local out rc
	echo "== $name"
	out=$("$@" 2>&1); rc=$?
	printf '%s\n' "$out"
	local p f
	p=$(grep -c '^PASS ' <<<"$out")
	f=$(grep -c '^FAIL ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name/exit-status: $rc"
		f=1
	elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name/ran-nothing: no PASS or FAIL line"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
}

start=$(date +%s)
xml_check() {
	command -v virt-xml-validate >/dev/null || { echo "FAIL xml/virt-xml-validate-missing"; return 1; }
	if virt-xml-validate "$(dirname "$0")/../../vm-configs/mearas-vm.xml" domain; then
		echo "PASS xml/mearas-vm.xml-validates"
	else
		echo "FAIL xml/mearas-vm.xml-validates"
	fi
}
run xml xml_check
run proto "$build/ivshmem_proto_test" "$work"
run plain "$build/ivshmem_host_test" plain "$build/guest" "$work"
run doorbell "$build/ivshmem_host_test" doorbell "$build/guest" "$work"
run kill "$build/ivshmem_host_test" kill "$build/guest" "$work"
run serve "$(dirname "$0")/serve-test.sh" "$build" "$work"
echo "== took $(( $(date +%s) - start )) s"
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "guest logs kept in $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
