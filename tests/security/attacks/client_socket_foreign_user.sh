# A local user outside the client socket's group (../shared security
# finding: the client socket was 0666 and identity never checked): connect()
# is denied by the socket's mode, and when the mode is opened to everyone
# (chmod 0666), mearasd still refuses the caller from SO_PEERCRED. Members
# of the group, by primary or supplementary group, are served.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --socket-group=nogroup || exit 1
sec_start_healthy "$SOCK"
P=$SEC_BIN/client_socket_foreign_user
FOREIGN="setpriv --reuid=65533 --regid=65533 --clear-groups"
ok=1
mode=$(stat -c '%a %G' "$SOCK")
sec_log "client socket: $mode"
[ "$mode" = "660 nogroup" ] || { sec_log "want mode 660, group nogroup"; ok=0; }
setpriv --reuid=65532 --regid=65534 --clear-groups "$P" "$SOCK" ok || ok=0
setpriv --reuid=65531 --regid=65531 --groups=65534 "$P" "$SOCK" ok || ok=0
$FOREIGN "$P" "$SOCK" denied || ok=0
chmod 0666 "$SOCK"
$FOREIGN "$P" "$SOCK" refused || ok=0
sec_expect_log 'client uid 65533 gid 65533 pid [0-9]+ refused: uid 65533 is not root and not in the group' || ok=0
[ $ok = 1 ] && sec_refused
sec_finish
