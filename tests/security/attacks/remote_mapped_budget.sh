# HOST_MAPPED records for a remote vGPU at 16 new offsets, each ~64 MiB
# (../shared security repro exp_mapped): the remote node's main process
# used to grow by a shadow copy per record (1.1 GB), freed only at link
# close. Now the link's budget (--link-mem-mb; default its data area + 64
# MiB = 128 MiB here, 96 MiB on the remote node) bounds it on both nodes:
# the calls over it fail with cudaErrorMemoryAllocation and a log line, the
# memory of both nodes stays bounded (the forwarding node's worker keeps shadows
# too), the budget comes back when ranges are unmapped, and the healthy
# client's remote vGPU keeps working.
. "$SEC_DIR/lib.sh"
. "$SEC_DIR/lib_remote.sh"
# the remote node's budget below the forwarding node's (its default, 64 + 64 MiB):
# the remote node refuses from the second range on, the forwarding node from the third
sec_start_remote_pair --link-mem-mb=96 || exit 1
sec_start_healthy "$CLIENT_SOCK"
sec_remote_vgpu_open 1 || exit 1
sleep 0.5
before=$(sec_rss_kib "$DAEMON_PID")
cbefore=$(sec_rss_kib "$CLIENT_PID")
ok=1
"$SEC_BIN/remote_mapped_budget" "$CLIENT_SOCK" 16 3 >"$SEC_TMP/attack.out" 2>&1 &
attack=$!
for _ in $(seq 300); do grep -q HOLDING "$SEC_TMP/attack.out" && break; sleep 0.1; done
peak=$(sec_rss_kib "$DAEMON_PID")
cpeak=$(sec_rss_kib "$CLIENT_PID")
wait "$attack" || ok=
cat "$SEC_TMP/attack.out"
grow=$(((peak - before) / 1024))
# the budget (128 MiB) + the data area the node copies from (64 MiB) + slack
sec_log "remote node (mearasd and its workers): $((before / 1024)) MiB before, $((peak / 1024)) MiB at the peak (+$grow MiB)"
[ "$grow" -lt 320 ] || { sec_log "the remote node grew by $grow MiB"; ok=; }
# the forwarding node's worker of the attacker keeps shadows too, within the same bound
cgrow=$(((cpeak - cbefore) / 1024))
sec_log "forwarding node (mearasd and its workers): $((cbefore / 1024)) MiB before, $((cpeak / 1024)) MiB at the peak (+$cgrow MiB)"
[ "$cgrow" -lt 320 ] || { sec_log "the forwarding node grew by $cgrow MiB"; ok=; }
sec_expect_log 'over its memory budget: a mapped-range shadow' || ok=
sec_expect_log 'over its memory budget: a mapped-range shadow' "$CLIENT_LOG" || ok=
[ -n "$ok" ] && sec_refused
sec_finish
