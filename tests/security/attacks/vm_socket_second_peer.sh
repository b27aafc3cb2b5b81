# A second peer (root, so past the uid check) on a VM's ivshmem socket
# while the VM's QEMU is attached gets no shared memory fd; once the first
# peer is gone, a new one is served (by a fresh worker, fresh memory).
. "$SEC_DIR/lib.sh"
VM_SOCK=$SEC_TMP/vm.sock
SEC_WAIT_SOCKETS=$VM_SOCK sec_start_daemon main --vm=v1:$VM_SOCK:64:2 || exit 1
sec_start_healthy "$SOCK"
ok=1
"$SEC_BIN/vm_socket_second_peer" "$VM_SOCK" hold 60 >"$SEC_TMP/first.log" 2>&1 &
first=$!
for _ in $(seq 50); do grep -q attached "$SEC_TMP/first.log" && break; sleep 0.1; done
grep -q attached "$SEC_TMP/first.log" || { sec_log "the first peer was not served"; cat "$SEC_TMP/first.log"; ok=0; }
"$SEC_BIN/vm_socket_second_peer" "$VM_SOCK" probe
rc=$?
[ $rc = 0 ] || { sec_log "second peer not refused (exit $rc)"; ok=0; }
sec_expect_log 'VM v1: refused a second connection .*a guest is attached' || ok=0
kill "$first"; wait "$first" 2>/dev/null
# the first peer is gone: the next one is served
served=0
for _ in $(seq 50); do
	if "$SEC_BIN/vm_socket_second_peer" "$VM_SOCK" attach >/dev/null 2>&1; then served=1; break; fi
	sleep 0.2
done
[ $served = 1 ] || { sec_log "no new peer served after the first left"; ok=0; }
[ $ok = 1 ] && sec_refused
sec_finish
