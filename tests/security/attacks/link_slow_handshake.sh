# Link connections that trickle their handshake (a valid hello sent a few
# bytes at a time, then a TLS ClientHello record one byte at a time): each
# message of the handshake used to have its own 3 s bound, so a connection
# held its thread and fd for as long as it kept the messages coming. Now the
# whole handshake has one deadline (--link-handshake-ms, 3000): every such
# connection is closed by then (with a log line), and the healthy client's
# remote vGPU keeps working.
. "$SEC_DIR/lib.sh"
. "$SEC_DIR/lib_remote.sh"
sec_start_remote_pair || exit 1
sec_start_healthy "$CLIENT_SOCK"
sec_remote_vgpu_open 1 || exit 1
ok=1
# 4 connections (the most one host may have in the handshake), each closed
# within 3 s + 1 s of slack
"$SEC_BIN/link_slow_handshake" "$LINK_PORT" 4 4.0 || ok=
sec_expect_log 'dropped: handshake not done within 3000 ms' || ok=
[ -n "$ok" ] && sec_refused
sec_finish
