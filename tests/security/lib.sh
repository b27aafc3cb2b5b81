# Shared by every attack of the hostile suite (sourced by attacks/*.sh).
# An attack script starts its own mearasd (sim device) and a healthy client
# beside the attacker, runs the attack, then calls sec_finish, which checks
# that mearasd still serves, that the healthy client's results are intact,
# and records one JSON line for experiments/results/security.json.
#
# Set by run.sh: SEC_DIR (tests/security), SEC_BIN (its build dir), ROOT,
# SEC_TMP (a private scratch dir, removed after the attack), SEC_RESULTS
# (the JSON-lines file), SEC_NAME (the attack's name).
set -u
MEARASD=$ROOT/build/bin/mearasd
export LD_LIBRARY_PATH=$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset MEARAS_VGPUS MEARAS_DATA_MB MEARAS_SOCKET MEARAS_ASSEMBLY MEARAS_DEVICE
SEC_DAEMONS=()
SEC_HEALTHY_PID=
SEC_REFUSED=

sec_log() { echo "  [$SEC_NAME] $*"; }

. "$ROOT/tests/procs.sh" # workers_of, stop_daemon

sec_cleanup() {
	local pid
	[ -n "$SEC_HEALTHY_PID" ] && kill -KILL "$SEC_HEALTHY_PID" 2>/dev/null
	for pid in "${SEC_DAEMONS[@]}"; do stop_daemon "$pid"; done
	return 0
}
trap sec_cleanup EXIT

# sec_start_daemon NAME [mearasd args...]: mearasd --device=sim on
# $SEC_TMP/NAME.sock; sets DAEMON_PID, SOCK, DAEMON_LOG. Waits for the
# socket (or, with --vm, for every path given in SEC_WAIT_SOCKETS).
sec_start_daemon() {
	local name=$1 s
	shift
	SOCK=$SEC_TMP/$name.sock
	DAEMON_LOG=$SEC_TMP/$name-mearasd.log
	"$MEARASD" --device=sim --socket="$SOCK" --control="$SEC_TMP/$name-control.sock" "$@" \
		>"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	SEC_DAEMONS+=("$DAEMON_PID")
	for _ in $(seq 100); do
		local up=1
		for s in "$SOCK" ${SEC_WAIT_SOCKETS:-}; do [ -S "$s" ] || up=0; done
		[ $up = 1 ] && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "mearasd did not come up:"
	cat "$DAEMON_LOG"
	return 1
}

# sec_start_healthy SOCKET [SECONDS]: the healthy client in the background,
# until sec_finish stops it (or SECONDS, default 120, pass)
sec_start_healthy() {
	HEALTHY_SOCK=$1
	HEALTHY_STOP=$SEC_TMP/healthy.stop
	HEALTHY_LOG=$SEC_TMP/healthy.log
	rm -f "$HEALTHY_STOP"
	MEARAS_SOCKET=$1 "$SEC_BIN/healthy" "${2:-120}" "$HEALTHY_STOP" >"$HEALTHY_LOG" 2>&1 &
	SEC_HEALTHY_PID=$!
}

# sec_expect_log PATTERN [FILE]: the daemon's log (default DAEMON_LOG) has a
# line matching the extended regex within 5 s; prints it
sec_expect_log() {
	local pat=$1 file=${2:-$DAEMON_LOG}
	for _ in $(seq 50); do
		if grep -Eq "$pat" "$file"; then
			sec_log "log: $(grep -E "$pat" "$file" | head -1)"
			return 0
		fi
		sleep 0.1
	done
	sec_log "no log line matching '$pat' in $file:"
	sed 's/^/    | /' "$file" | tail -20
	return 1
}

# sec_refused: the attack was refused (call when every check of it held)
sec_refused() { SEC_REFUSED=1; }

# sec_refused_when STATUS PATTERN...: refused when STATUS (the attack
# program's exit status) is 0 and mearasd logged a line matching every
# PATTERN (sec_expect_log, each one looked for)
sec_refused_when() {
	local ok=1 pat
	[ "$1" = 0 ] || ok=0
	shift
	for pat in "$@"; do sec_expect_log "$pat" || ok=0; done
	[ $ok = 1 ] && sec_refused
	return 0
}

# sec_finish: checks the daemon and the healthy client, writes the result
# line; exit status 0 only if refused, survived and healthy
sec_finish() {
	local survived=false healthy=false outcome=not-refused rc
	[ -n "$SEC_REFUSED" ] && outcome=refused
	if kill -0 "$DAEMON_PID" 2>/dev/null && [ -S "$SOCK" ] &&
		MEARAS_SOCKET=$SOCK timeout 30 "$SEC_BIN/healthy" 0.2 >"$SEC_TMP/after.log" 2>&1; then
		survived=true
	else
		sec_log "mearasd no longer serves a new client:"
		sed 's/^/    | /' "$SEC_TMP/after.log" 2>/dev/null | tail -5
		sed 's/^/    | /' "$DAEMON_LOG" | tail -20
	fi
	if [ -n "$SEC_HEALTHY_PID" ]; then
		touch "$HEALTHY_STOP"
		wait "$SEC_HEALTHY_PID"
		rc=$?
		SEC_HEALTHY_PID=
		if [ $rc = 0 ] && grep -q 'rounds ok' "$HEALTHY_LOG"; then
			healthy=true
			sec_log "$(cat "$HEALTHY_LOG")"
		else
			sec_log "healthy client failed (exit $rc):"
			sed 's/^/    | /' "$HEALTHY_LOG" | tail -10
		fi
	else
		sec_log "no healthy client was started"
	fi
	printf '{"name": "%s", "outcome": "%s", "daemon_survived": %s, "healthy_client_ok": %s}\n' \
		"$SEC_NAME" "$outcome" "$survived" "$healthy" >>"$SEC_RESULTS"
	[ "$outcome" = refused ] && [ $survived = true ] && [ $healthy = true ]
}
