# An unprivileged local user connects to a VM's ivshmem socket (../shared
# security repro vmpeer): the socket belongs to the QEMU user (0600), and
# even loosened to 0666 mearasd checks the peer's uid (SO_PEERCRED) and
# hands it no shared memory fd.
. "$SEC_DIR/lib.sh"
VM_SOCK=$SEC_TMP/vm.sock
SEC_WAIT_SOCKETS=$VM_SOCK sec_start_daemon main --vm=v1:$VM_SOCK:64:2 || exit 1
sec_start_healthy "$SOCK"
ok=1
mode=$(stat -c '%a %U' "$VM_SOCK")
sec_log "socket: $mode"
[ "${mode%% *}" = 600 ] || { sec_log "the VM socket is not 0600"; ok=0; }
if setpriv --reuid=65534 --regid=65534 --clear-groups "$SEC_BIN/vm_socket_foreign_user" "$VM_SOCK" 2>&1 |
	grep -q 'Permission denied'; then
	sec_log "as it is, the socket refuses nobody (EACCES)"
else
	sec_log "nobody could connect to the 0600 socket"; ok=0
fi
chmod 0666 "$VM_SOCK"
setpriv --reuid=65534 --regid=65534 --clear-groups "$SEC_BIN/vm_socket_foreign_user" "$VM_SOCK"
rc=$?
[ $rc = 0 ] || { sec_log "foreign user not refused (exit $rc)"; ok=0; }
if [ $ok = 1 ] && sec_expect_log 'VM v1: refused a connection .* uid 65534: only the VM'\''s QEMU'; then
	sec_refused
fi
sec_finish
