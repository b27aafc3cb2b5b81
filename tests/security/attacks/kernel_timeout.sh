# A tenant's kernels never end (spinning on every stream it can): with
# --kernel-timeout-ms the worker tears the tenant's context down, its calls
# fail with cudaErrorLaunchTimeout, the log names the tenant, vGPU, kernel
# and time; the healthy client beside it keeps its throughput (copy rounds
# per second after the limit fired at least half of its rate alone).
. "$SEC_DIR/lib.sh"
LIMIT_MS=500

# rounds per second of a healthy client: the best of three one-second runs
# (this machine's other load varies from second to second)
healthy_rate() {
	local best= r
	for _ in 1 2 3; do
		r=$(MEARAS_SOCKET=$SOCK "$SEC_BIN/healthy" 1 2>&1 | sed -n 's/^healthy: \([0-9]*\) rounds ok$/\1/p')
		[ -n "$r" ] && { [ -z "$best" ] || [ "$r" -gt "$best" ]; } && best=$r
	done
	echo "$best"
}

sec_start_daemon main --vgpus=2 --kernel-timeout-ms=$LIMIT_MS || exit 1
sec_start_healthy "$SOCK"
alone=$(healthy_rate)
sec_log "healthy client beside an idle tenant: ${alone:-?} rounds/s"
if MEARAS_SOCKET=$SOCK timeout 30 "$SEC_BIN/kernel_timeout" $LIMIT_MS; then
	after=$(healthy_rate)
	sec_log "healthy client after the limit fired: ${after:-?} rounds/s"
	if [ -n "$alone" ] && [ -n "$after" ] && [ $((after * 2)) -ge "$alone" ]; then
		sec_expect_log "GPU time limit: client pid [0-9]+, vGPU [01]: kernel mearas_sim_spin has run [0-9]+ ms, past the limit of $LIMIT_MS ms" &&
			sec_expect_log "worker exits to free its GPU context" && sec_refused
	else
		sec_log "the healthy client's throughput did not recover (${alone:-?} -> ${after:-?} rounds/s)"
	fi
fi
sec_finish
