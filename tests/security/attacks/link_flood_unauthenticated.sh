# Hundreds of idle TCP connections to the link port of a mearasd limited to
# 256 fds (../shared security repro flood.py, with room for two remote vGPUs): each used to get a thread and
# an fd before the handshake, until accept hit EMFILE and mearasd exited with
# every client's worker. Now at most --link-max-pending wait in the handshake,
# a quarter of them from one host (the rest are closed at once, logged),
# each for --link-handshake-ms; the remote vGPU of the healthy client keeps
# working, a local client is served during the flood, and a new link is
# admitted after it.
. "$SEC_DIR/lib.sh"
. "$SEC_DIR/lib_remote.sh"
sec_start_remote_pair || exit 1
prlimit --pid "$DAEMON_PID" --nofile=256:256 || exit 1
sec_start_healthy "$CLIENT_SOCK"
sec_remote_vgpu_open 1 || exit 1
ok=1
"$SEC_BIN/link_flood_unauthenticated" "$LINK_PORT" 300 5 >"$SEC_TMP/flood.out" 2>&1 &
flood=$!
sleep 1
# a local client of the attacked node while the flood holds its connections
if ! MEARAS_SOCKET=$SOCK timeout 30 "$SEC_BIN/healthy" 0.5 >"$SEC_TMP/during.log" 2>&1; then
	sec_log "a local client during the flood failed: $(tail -2 "$SEC_TMP/during.log")"
	ok=
fi
wait "$flood" || ok=
cat "$SEC_TMP/flood.out"
kill -0 "$DAEMON_PID" 2>/dev/null || { sec_log "the remote node died"; ok=; }
sec_expect_log 'refused: 4 connections from that host already in the handshake' || ok=
sec_expect_log 'dropped: handshake not done within 3000 ms' || ok=
# a new authenticated link once the flood is over
if ! MEARAS_SOCKET=$CLIENT_SOCK timeout 30 "$SEC_BIN/healthy" 0.5 >"$SEC_TMP/newlink.log" 2>&1; then
	sec_log "a new remote vGPU after the flood failed: $(tail -2 "$SEC_TMP/newlink.log")"
	ok=
fi
[ -n "$ok" ] && sec_refused
sec_finish
