# Sourced by the suites' shell scripts (tests/sim/run-tests.sh,
# tests/security/lib.sh): the child processes of a mearasd, and stopping it
# with them. Reads /proc (no procps needed). Bash.

# workers_of PID: the child processes of PID, one a line
workers_of() {
	local f line fields
	for f in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$f" || continue
		fields=(${line##*) }) # after the command name, which may hold spaces
		if [ "${fields[1]}" = "$1" ]; then
			f=${f#/proc/}
			echo "${f%/stat}"
		fi
	done
}

# stop_daemon PID: SIGTERM, up to 5 s to exit, then SIGKILL to its
# children and to it; reaps it when it is this shell's child
stop_daemon() {
	local pid=$1 w
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	for w in $(workers_of "$pid"); do kill -KILL "$w" 2>/dev/null; done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}
