# An assembly is bound to the identity it was booked for (../shared security
# finding: the assembly name in the hello was a bearer string). Booked for
# uid 65532, it is served to 65532 and refused to 65533 that names it; one
# booked for a VM is refused to a local user; root may use any.
. "$SEC_DIR/lib.sh"
# the control socket comes up after the client socket: wait for both
SEC_WAIT_SOCKETS=$SEC_TMP/main-control.sock sec_start_daemon main --socket-group=nogroup --node-name=sec-node ||
	exit 1
sec_start_healthy "$SOCK"
P=$SEC_BIN/assembly_by_name_other_user
CTL=$SEC_TMP/main-control.sock
# the assembly manager's own client books them (its protobuf modules are generated on demand)
[ -e "$ROOT/assembly-manager/mearas_am/generated/control_pb2.py" ] ||
	make -s -C "$ROOT/assembly-manager" proto >/dev/null || exit 1
book() { # ID IDENTITY QUOTA_MB
	PYTHONPATH=$ROOT/assembly-manager python3 - "$CTL" "$@" <<'PY' || exit 1
import sys, time
from mearas_am.control.client import SocketMearasdClient
from mearas_am.model import Assembly, VgpuPlacement
ctl, aid, who, mb = sys.argv[1:5]
SocketMearasdClient(ctl).instantiate(Assembly(
    aid, "sec-test", "sec-node", "exact",
    (VgpuPlacement(0, "sec-node", 0, int(mb) << 20, ""),), time.time(), identity=who))
PY
}
book asm-of-65532 uid:65532 96
book asm-of-vm vm:guest1 64
ok=1
AS() { local u=$1; shift; setpriv --reuid="$u" --regid=65534 --clear-groups "$@"; }
AS 65532 "$P" "$SOCK" asm-of-65532 ok 96 || ok=0
AS 65533 "$P" "$SOCK" asm-of-65532 refused || ok=0
sec_expect_log 'uid 65533 named assembly asm-of-65532, booked for uid 65532: refused' || ok=0
AS 65533 "$P" "$SOCK" asm-of-vm refused || ok=0
sec_expect_log 'uid 65533 named assembly asm-of-vm, booked for VM guest1: refused' || ok=0
"$P" "$SOCK" asm-of-65532 ok 96 || ok=0   # root (the operator)
[ $ok = 1 ] && sec_refused
sec_finish
