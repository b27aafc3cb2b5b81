# One user's pinned data areas, all its connections together, are capped
# (../shared security finding: every connection could get up to 16 GiB).
# Past --user-data-mb the hello is refused with a log line; the healthy
# client (root, another identity) has its own budget and keeps working.
. "$SEC_DIR/lib.sh"
sec_start_daemon main --socket-group=nogroup --user-data-mb=512 --max-data-mb=128 --data-mb=64 || exit 1
sec_start_healthy "$SOCK"
setpriv --reuid=65533 --regid=65534 --clear-groups "$SEC_BIN/data_area_cap_per_user" "$SOCK" 128 512
sec_refused_when $? 'client refused: uid 65533 holds 512 MiB of data areas already; 128 MiB more exceed the 512 MiB'
sec_finish
