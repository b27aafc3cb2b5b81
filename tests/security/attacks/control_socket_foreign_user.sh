# A local user outside the control socket's group (audit finding: the
# control socket was protected by its mode alone, bound before its mode was
# set, and no peer was ever checked): connect() is denied by the socket's
# mode, and when the mode is opened to everyone (chmod 0666) mearasd still
# refuses the caller from SO_PEERCRED with an Error reply, before reading
# any request (ListAssemblies would name every tenant's bookings). Members
# of the socket's group, by primary or supplementary group, are served.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
CTL=$SEC_TMP/main-control.sock
P=$SEC_BIN/control_socket_foreign_user
FOREIGN="setpriv --reuid=65533 --regid=65533 --clear-groups"
ok=1
mode=$(stat -c '%a %g' "$CTL")
sec_log "control socket: $mode"
[ "${mode%% *}" = 660 ] || { sec_log "want mode 660"; ok=0; }
GID=${mode##* }
"$P" "$CTL" ok || ok=0
setpriv --reuid=65532 --regid=65532 --groups="$GID" "$P" "$CTL" ok || ok=0
$FOREIGN "$P" "$CTL" denied || ok=0
chmod 0666 "$CTL"
$FOREIGN "$P" "$CTL" refused || ok=0
sec_expect_log "control: refused: uid 65533 gid 65533 pid [0-9]+: not root, .*not in the control socket's group" || ok=0
"$P" "$CTL" ok || ok=0
[ $ok = 1 ] && sec_refused
sec_finish
