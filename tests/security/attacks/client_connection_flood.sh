# One user floods the client socket with connections (../shared security
# finding: no cap on connections, each a worker with a data area). Past
# --max-clients-per-user its hellos are refused with a log line; the healthy
# client (root, another identity) keeps working; slots of the user's workers
# that end, closed or killed, are given back.
. "$SEC_DIR/lib.sh"
CAP=6
sec_start_daemon main --socket-group=nogroup --max-clients-per-user=$CAP || exit 1
sec_start_healthy "$SOCK"
ok=1
FULL=$SEC_TMP/full
GO=$SEC_TMP/go
setpriv --reuid=65533 --regid=65534 --clear-groups \
	"$SEC_BIN/client_connection_flood" "$SOCK" 40 $CAP "$FULL" "$GO" &
ATTACKER=$!
for _ in $(seq 300); do [ -e "$FULL" ] && break; kill -0 $ATTACKER 2>/dev/null || break; sleep 0.1; done
# SIGKILL one of the attacker's workers (its pid is in its log lines' prefix)
victim=$(grep -E 'client uid 65533 pid [0-9]+: 1 vGPU' "$DAEMON_LOG" | tail -1 | sed -E 's/^[^ ]* mearasd\[([0-9]+)\]: .*/\1/')
if [ -n "$victim" ] && kill -0 "$victim" 2>/dev/null; then
	sec_log "killing worker $victim of uid 65533"
	kill -KILL "$victim"
else
	sec_log "no worker of uid 65533 found to kill"
	ok=0
fi
touch "$GO"
wait $ATTACKER || ok=0
sec_expect_log 'client uid 65533 gid 65534 pid [0-9]+ refused: uid 65533 has 6 clients connected already' || ok=0
[ $ok = 1 ] && sec_refused
sec_finish
