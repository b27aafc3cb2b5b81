#!/usr/bin/env bash
# The host's Python in the guest (guest/hostpy.sh, driven by guestpy.py): a
# TCG guest gets this machine's / read-only over virtio-9p, chroots into it
# and runs this machine's python3 with guest/hostpy_check.py, a ctypes client
# of the guest's mearas libcuda.so.1 (cuInit, devices, primary context, an
# allocation, a 1 MiB round trip compared), served by mearasd --device=sim
# --vm; mearasd must log the records served to the guest pid the guest gave.
# Also: a run's exit status, stdout and stderr come back; the share cannot be
# written; without the share the guest says why at once and powers off.
# Prints PASS/FAIL lines, then "N passed, N failed".
#   hostpy-test.sh GUEST_DIR WORK_DIR     (run by run-tests.sh)
set -uo pipefail
guest=${1:?usage: hostpy-test.sh GUEST_DIR WORK_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${2:?usage: hostpy-test.sh GUEST_DIR WORK_DIR}/hostpy
mkdir -p "$work"
work=$(cd "$work" && pwd)
log=$work/mearasd.log
passed=0 failed=0 mpid=""
result_prefix=hostpy/
. "$here/lib.sh"
trap '[ -n "$mpid" ] && kill $mpid 2>/dev/null' EXIT

# the interpreter itself, not a wrapper (pyenv's shim is a bash script)
py=$(python3 -c 'import sys; print(sys.executable)')
"$repo/build/bin/mearasd" --device=sim --socket="$work/m.sock" --vm="p:$work/p.sock:256" > "$log" 2>&1 &
mpid=$!
if ! wait_for "grep -q 'VM p: serving' '$log' && [ -S '$work/p.sock' ]" 20; then
	fail mearasd-serves-vm "$(tail -n 2 "$log")"
	echo "$passed passed, $failed failed"
	exit 1
fi

echo "== share: this machine's python3 in the guest, chrooted into its root over virtio-9p"
probe=$work/written-by-guest
t0=$(date +%s)
python3 "$here/guestpy.py" --guest "$guest" --vm-socket "$work/p.sock" --work "$work/share" --timeout-s 150 \
	--run check "$py $here/guest/hostpy_check.py" \
	--run exit3 "$py -c 'import sys; print(\"to stdout\"); print(\"to stderr\", file=sys.stderr); sys.exit(3)'" \
	--run write "/bin/sh -c 'echo x > $probe'" > "$work/share.txt" 2>&1
echo "  guestpy.py: exit $? after $(( $(date +%s) - t0 )) s (1 expected: two runs exit non-zero)"
sed 's/^/  /' "$work/share.txt"
runs=$work/share/runs
guest_lines "share/" '^  device' "$runs/check.out"
check share/check-exit-0 "[ \"\$(cat '$runs/check.rc' 2>/dev/null)\" = 0 ]" "$(tail -n 3 "$runs/check.err" 2>/dev/null)"
check share/guest-clean-exit "grep -q '^guest: QEMU exit 0 after .*, guest exit 0, kernel clean' '$work/share.txt'"
check share/exit-status-carried "[ \"\$(cat '$runs/exit3.rc' 2>/dev/null)\" = 3 ]"
check share/stdout-carried "[ \"\$(cat '$runs/exit3.out' 2>/dev/null)\" = 'to stdout' ]"
check share/stderr-carried "[ \"\$(cat '$runs/exit3.err' 2>/dev/null)\" = 'to stderr' ]"
check share/read-only "[ \"\$(cat '$runs/write.rc' 2>/dev/null)\" != 0 ] && [ ! -e '$probe' ] && grep -qi 'read-only' '$runs/write.err'" \
	"exit $(cat "$runs/write.rc" 2>/dev/null): $(cat "$runs/write.err" 2>/dev/null)"
gpid=$(sed -n 's/^guest run check: .*(guest pid \([0-9]*\))$/\1/p' "$work/share.txt")
# the slot worker logs its report when it sees the slot given back
check share/records-served-to-guest-pid \
	"[ -n '$gpid' ] && wait_for \"grep -qE 'VM p slot [0-7] vGPU 0: [1-9][0-9]* records served.*\\(guest pid $gpid\\)$' '$log'\" 10" \
	"no report for guest pid '$gpid': $(grep 'records served' "$log" | tail -n 2)"
grep -E 'guest pid '"${gpid:-x}"'\)$' "$log" | sed 's/^.*info: /  mearasd: /'

echo "== no share: QEMU without -virtfs"
t0=$(date +%s)
python3 "$here/guestpy.py" --guest "$guest" --vm-socket "$work/p.sock" --work "$work/noshare" --timeout-s 90 \
	--no-share --run check "$py $here/guest/hostpy_check.py" > "$work/noshare.txt" 2>&1
rc=$? secs=$(( $(date +%s) - t0 ))
echo "  guestpy.py: exit $rc after $secs s"
sed 's/^/  /' "$work/noshare.txt"
check noshare/fails "[ $rc != 0 ]"
check noshare/says-why "grep -q \"^guest error: MEARAS-HOSTPY-ERROR cannot mount the host's share (9p tag hostroot)\" '$work/noshare.txt'"
check noshare/powers-off "grep -q '^guest: QEMU exit 0 after' '$work/noshare.txt' && [ $secs -lt 60 ]" "after $secs s"
check noshare/nothing-run "grep -q '^guest run check: did not finish$' '$work/noshare.txt'"

kill "$mpid"
wait "$mpid" 2>/dev/null
mpid=""
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
