# Virtual memory management records from a hostile client: VMM memory counts
# against the user's quota with every connection's allocations (a log line
# when it is full); maps, unmaps and frees outside a reservation, over a
# mapping or an allocation, wrapping, with another vGPU's or a released
# handle are refused with a log line; an ended connection's memory counts no
# more. The healthy client keeps working.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --socket-group=nogroup --quota-mb=500 || exit 1
sec_start_healthy "$SOCK"
setpriv --reuid=65533 --regid=65534 --clear-groups "$SEC_BIN/vmm_bounds" "$SOCK" 500
sec_refused_when $? \
	"vGPU 0: allocation of [0-9]+ bytes refused: this user's clients hold its quota of 500 MiB together" \
	"vGPU 0: map of 0x[0-9a-f]+ bytes at 0x[0-9a-f]+ refused: not inside one reservation, or over another mapping" \
	"vGPU 0: map of 0x[0-9a-f]+ bytes at 0x[0-9a-f]+ from offset 0x[0-9a-f]+ of a 0x[0-9a-f]+-byte handle refused" \
	"vGPU 0: unmap of 0x[0-9a-f]+ bytes at 0x[0-9a-f]+ refused: not whole mappings end to end" \
	"vGPU 0: address free of 0x[0-9a-f]+ \(0x[0-9a-f]+ bytes\) refused"
sec_finish
