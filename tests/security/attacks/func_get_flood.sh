# FUNC_GET under fresh ids without end, module unloaded and loaded again
# (the records were never freed): refused at a bound with a log line, the
# same bound every round, the worker alive.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/func_get_flood" "$SOCK"; then
	sec_expect_log 'FUNC_GET refused: kernel records' && sec_refused
fi
sec_finish
