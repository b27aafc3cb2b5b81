# A client shrinks (or grows) the shared region's memfd that mearasd sent it:
# shrunk, its worker died of SIGBUS at its next look at the rings. Refused:
# the memfd is sealed at its size.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/region_resize" "$SOCK"; then
	sec_refused
fi
sec_finish
