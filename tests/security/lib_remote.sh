# Two mearasd over loopback for the remote-link attacks (sourced after
# lib.sh): a forwarding node whose vGPU 0 is served by a remote node (--remote,
# --link-port, one cluster key). The remote node is the one attacked: it is
# started last, so DAEMON_PID, SOCK and DAEMON_LOG are its (sec_finish checks
# that it still serves). The healthy client runs on the forwarding node and uses
# the remote vGPU.

# a TCP port free on loopback now
sec_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# sec_start_remote_pair [remote-node args...]: sets LINK_PORT, CLIENT_SOCK,
# CLIENT_PID, CLIENT_LOG (and DAEMON_* for the remote node)
sec_start_remote_pair() {
	LINK_PORT=$(sec_free_port)
	echo "cluster-key-$SEC_NAME-$$-$RANDOM" >"$SEC_TMP/cluster.key"
	chmod 0600 "$SEC_TMP/cluster.key"
	sec_start_daemon client --vgpus=1 --remote=0=127.0.0.1:$LINK_PORT \
		--cluster-key-file="$SEC_TMP/cluster.key" || return 1
	CLIENT_SOCK=$SOCK
	CLIENT_PID=$DAEMON_PID
	CLIENT_LOG=$DAEMON_LOG
	sec_start_daemon remote --link-port=$LINK_PORT --cluster-key-file="$SEC_TMP/cluster.key" "$@" || return 1
	sec_expect_log "link server on port $LINK_PORT" >/dev/null
}

# sec_remote_vgpu_open N: the remote node serves N remote vGPUs (its log has
# N "remote vGPU for" lines) within 10 s
sec_remote_vgpu_open() {
	for _ in $(seq 100); do
		[ "$(grep -c 'remote vGPU for' "$DAEMON_LOG")" -ge "$1" ] && return 0
		sleep 0.1
	done
	sec_log "the remote node opened no remote vGPU:"
	sed 's/^/    | /' "$DAEMON_LOG" | tail -10
	sed 's/^/    | /' "$CLIENT_LOG" | tail -10
	return 1
}

# sec_rss_kib PID: resident memory of PID and its children (KiB)
sec_rss_kib() {
	local total=0 p kb
	for p in "$1" $(workers_of "$1"); do
		kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		total=$((total + ${kb:-0}))
	done
	echo "$total"
}
