# Tensor map records from a hostile client (raw rings): descriptors of
# another connection's buffer or past an allocation's end, absurd ranks,
# calls, enums, dimensions and strides, cut or oversized arguments, maps
# outside the data area: every one refused with a log line, nothing written;
# a valid record still works, the healthy client keeps working.
. "$SEC_DIR/lib.sh"
sec_start_daemon main || exit 1
sec_start_healthy "$SOCK"
"$SEC_BIN/tensor_map_bounds" "$SOCK"
sec_refused_when $? \
	"vGPU 0: tiled tensor map of 0x[0-9a-f]+ bytes at 0x[0-9a-f]+ refused: not inside device memory of this client" \
	"vGPU 0: tiled tensor map at 0x[0-9a-f]+ refused: its dimensions and strides span past 2\^64" \
	"vGPU 0: tiled tensor map of rank [0-9]+ refused: rank not 1 to 5" \
	"vGPU 0: tensor map refused: [0-9]+ bytes of arguments, not 184" \
	"vGPU 0: tensor map refused: its [0-9]+ bytes at data offset 0x[0-9a-f]+ are not one map inside the data area"
sec_finish
