# Sourced by the host-side scripts of tests/vm-cuda: their PASS/FAIL lines
# and waiting. Set result_prefix (e.g. "assembly/") before sourcing to print
# "PASS assembly/NAME"; passed and failed count the lines printed.
passed=${passed:-0} failed=${failed:-0}
pass() { echo "PASS ${result_prefix:-}$1"; passed=$((passed + 1)); }
fail() { echo "FAIL ${result_prefix:-}$1${2:+: $2}"; failed=$((failed + 1)); }
# check NAME COMMAND [WHY]: PASS NAME when COMMAND (eval'd) succeeds, else FAIL NAME: WHY
check() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }

# wait_for COMMAND [SECS]: waits (up to SECS, default 20) until COMMAND (eval'd) succeeds
wait_for() {
	local i=0
	while ! eval "$1"; do
		i=$((i + 1))
		[ $i -gt $(( ${2:-20} * 10 )) ] && return 1
		sleep 0.1
	done
}

# vm_start SOCKET CONSOLE ERRLOG ARG [SECS]: boots the test guest ($qemu,
# $kernel, $guest/initramfs.cpio.gz; TCG) in the background on the ivshmem
# server at SOCKET, its console into CONSOLE; the guest runs
# `vmtests.sh ARG SECS` (guest/vmtests.sh). Sets qpid.
vm_start() {
	"$qemu" -accel tcg -m 256 -smp 1 -nodefaults -display none -no-reboot -net none \
		-serial "file:$2" -kernel "$kernel" -initrd "$guest/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet panic=-1 mearas_arg=$4 mearas_secs=${5:-0}" \
		-chardev "socket,path=$1,id=ivs" \
		-device ivshmem-doorbell,chardev=ivs,vectors=2 > "$3" 2>&1 &
	qpid=$!
}

# qemu_wait [SECS]: waits (up to SECS, default 180) for the guest of $qpid to
# power off, kills it after that; clears qpid
qemu_wait() {
	local i=0
	while kill -0 "$qpid" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt $(( ${1:-180} * 10 )) ]; then kill -9 "$qpid"; echo "  (guest timed out)"; fi
		sleep 0.1
	done
	wait "$qpid" 2>/dev/null
	qpid=""
}

# guest_lines PREFIX SHOW FILE: the guest's lines in the console FILE (\r
# stripped): GUEST-PASS/GUEST-FAIL NAME as results PREFIX+NAME, other lines
# matching the regular expression SHOW echoed
guest_lines() {
	local prefix=$1 show=$2 line
	while IFS= read -r line; do
		case $line in
		GUEST-PASS*) pass "$prefix${line#GUEST-PASS }" ;;
		GUEST-FAIL*) line=${line#GUEST-FAIL }; fail "$prefix${line%%:*}" "${line#*: }" ;;
		*) if [[ $line =~ $show ]]; then echo "$line"; fi ;;
		esac
	done < <(tr -d '\r' < "$3")
}
