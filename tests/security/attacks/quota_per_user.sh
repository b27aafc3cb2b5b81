# The device-memory quota of a vGPU holds for all of one user's connections
# together (../shared security finding: each connection got a fresh quota).
# Allocations past it fail with cudaErrorMemoryAllocation and a log line;
# the healthy client (root) has its own quota and keeps working.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --socket-group=nogroup --quota-mb=500 || exit 1
sec_start_healthy "$SOCK"
setpriv --reuid=65533 --regid=65534 --clear-groups "$SEC_BIN/quota_per_user" "$SOCK" 500
sec_refused_when $? "vGPU 0: allocation of [0-9]+ bytes refused: this user's clients hold its quota of 500 MiB together"
sec_finish
