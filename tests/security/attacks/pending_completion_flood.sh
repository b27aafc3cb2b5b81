# Completions queued behind a stream that never finishes (they grew without
# bound): refused past the bound with cudaErrorMemoryAllocation and a log
# line, rate-limited (a few lines, not 20000), the worker alive.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --vgpus=2 || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/pending_completion_flood" "$SOCK" &&
	sec_expect_log 'completions already wait on the device'; then
	n=$(grep -c 'completions already wait on the device' "$DAEMON_LOG")
	sec_log "$n refusal lines logged for 16100 refused records"
	[ "$n" -le 40 ] && sec_refused
fi
sec_finish
