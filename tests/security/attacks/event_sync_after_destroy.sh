# EVENT_SYNC on an event that EVENT_DESTROY, or a device reset, frees while
# the wait is pending (mearasd kept polling the freed event): every wait
# ends with cudaSuccess, the event is destroyed after it, with a log line.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/event_sync_after_destroy" "$SOCK"; then
	sec_expect_log 'event destroyed while .* wait on it' && sec_refused
fi
sec_finish
