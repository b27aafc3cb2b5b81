# A host function captured into a graph, the graph launched 200 times
# (its request was freed by the first run: the worker used freed memory),
# then host functions captured without end: each launch asks once, the
# flood is refused at the limit with a log line, the worker keeps serving.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/host_func_graph_relaunch" "$SOCK"; then
	sec_expect_log 'host function refused: .* captured in graphs already' && sec_refused
fi
sec_finish
