# 2D copy/memset ranges whose pitch*(height-1)+width wraps (../shared
# security repro exp_2d): refused with cudaErrorInvalidValue, no byte of
# another vGPU's window read, the worker alive.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --vgpus=2 || exit 1
sec_start_healthy "$SOCK"
if MEARAS_SOCKET=$SOCK "$SEC_BIN/copy_2d_overflow" "$SOCK"; then
	sec_expect_log '2D|pitch|span' && sec_refused
fi
sec_finish
