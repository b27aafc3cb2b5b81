#!/usr/bin/env bash
# Network namespaces joined by veth pairs, with iproute2 (`ip`) where it is on
# PATH, else with a static busybox (build/tools/busybox, or busybox on PATH):
# the GPU machine's image has no iproute2. The one recipe for namespaces in the
# project: scripts/gpu-remote.sh and the experiments harness
# (experiments/harness/mearas_exp/netns.py) both use it. Needs root.
#
#   netns-pair.sh tool                        prints "iproute2" or "busybox PATH"
#   netns-pair.sh add NS...                   new namespaces (/run/netns/NS), lo up
#   netns-pair.sh veth NS_A DEV_A NS_B DEV_B  a veth pair, DEV_A in NS_A and DEV_B in NS_B, both up
#   netns-pair.sh ip NS ARGS...               `ip ARGS` inside NS (busybox ip: link, addr, route)
#   netns-pair.sh exec NS CMD...              runs CMD inside NS (execs it: the PID is CMD's own)
#   netns-pair.sh del NS...                   removes namespaces (their veth ends go with them)
#   netns-pair.sh up NS_A NS_B ADDR_A ADDR_B  add NS_A NS_B, veth mxva (NS_A) - mxvb (NS_B), ADDR_x/24
#   netns-pair.sh down NS_A NS_B              the same as del
#
# MEARAS_NETNS_TOOL=iproute2|busybox picks the tool (default: iproute2 when `ip`
# is on PATH). Rate shaping (tc) is not here: busybox tc cannot add tbf; the
# harness shapes with iproute2's tc itself. Exit status: 0 ok, 1 failed (one
# line on stderr says why), 2 usage.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
NETNS_DIR=/run/netns

die() {
	echo "netns-pair: $*" >&2
	exit 1
}

pick_tool() {
	local want=${MEARAS_NETNS_TOOL:-}
	if [ -z "$want" ]; then
		if command -v ip >/dev/null; then want=iproute2; else want=busybox; fi
	fi
	case $want in
	iproute2)
		command -v ip >/dev/null || die "MEARAS_NETNS_TOOL=iproute2 but no \`ip\` on PATH"
		tool=iproute2 bb=
		;;
	busybox)
		tool=busybox
		if [ -x "$top/build/tools/busybox" ]; then
			bb=$top/build/tools/busybox
		else
			bb=$(command -v busybox) || die "neither \`ip\` (iproute2) nor busybox found (build/tools/busybox: make busybox)"
		fi
		;;
	*) die "MEARAS_NETNS_TOOL must be iproute2 or busybox, not '$want'" ;;
	esac
}

# `ip ARGS` inside namespace $1
nsip() {
	local ns=$1
	shift
	if [ $tool = iproute2 ]; then
		ip -n "$ns" "$@"
	else
		"$bb" nsenter --net="$NETNS_DIR/$ns" -- "$bb" ip "$@"
	fi
}

check_name() {
	case $1 in
	'' | *[!A-Za-z0-9_.-]*) die "bad name '$1' (letters, digits, '_', '.', '-')" ;;
	esac
}

add_ns() {
	local ns=$1
	check_name "$ns"
	[ -e "$NETNS_DIR/$ns" ] && die "namespace $ns exists already"
	if [ $tool = iproute2 ]; then
		ip netns add "$ns" || die "ip netns add $ns failed"
	else
		{ mkdir -p "$NETNS_DIR" && touch "$NETNS_DIR/$ns"; } || die "cannot create $NETNS_DIR/$ns"
		if ! "$bb" unshare --net="$NETNS_DIR/$ns" true; then
			rm -f "$NETNS_DIR/$ns"
			die "busybox unshare --net=$NETNS_DIR/$ns failed"
		fi
	fi
	if ! nsip "$ns" link set lo up; then
		del_ns "$ns"
		die "lo up in $ns failed"
	fi
}

del_ns() {
	local ns=$1 rc=0
	check_name "$ns"
	[ -e "$NETNS_DIR/$ns" ] || return 0
	if [ $tool = iproute2 ]; then
		ip netns del "$ns" || rc=1
	else
		"$bb" umount "$NETNS_DIR/$ns" || rc=1
		rm -f "$NETNS_DIR/$ns" || rc=1
	fi
	return $rc
}

# link names inside namespace $1, one a line
links() {
	nsip "$1" -o link show | sed -n 's/^[0-9]*: \([^:@]*\)[:@].*/\1/p'
}

add_veth() {
	local a=$1 da=$2 b=$3 db=$4
	check_name "$da"
	check_name "$db"
	{ [ -e "$NETNS_DIR/$a" ] && [ -e "$NETNS_DIR/$b" ]; } || die "veth: namespace $a or $b missing"
	if [ $tool = iproute2 ]; then
		ip -n "$a" link add "$da" type veth peer name "$db" netns "$b" || die "veth $da/$db failed"
	else
		# busybox ip ignores the peer's name (the kernel calls it vethN) and moves a
		# link only to a PID's namespace: find the new peer, name it, then move it
		# to a process that is checked to be inside NS_B
		local before peer holder want got i
		before=$(links "$a") || die "cannot list links in $a"
		nsip "$a" link add "$da" type veth peer name "$db" || die "veth: link add $da in $a failed (no veth support?)"
		peer=$(links "$a" | grep -vxF -e "$da" | grep -vxF -f <(echo "$before") || true)
		[ "$(echo "$peer" | wc -w)" = 1 ] || die "veth: cannot tell the peer of $da in $a (new links: ${peer:-none})"
		nsip "$a" link set "$peer" name "$db" || die "veth: cannot rename $peer to $db in $a"
		"$bb" nsenter --net="$NETNS_DIR/$b" -- "$bb" sleep 600 </dev/null >/dev/null 2>&1 &
		holder=$!
		want="net:[$(stat -L -c %i "$NETNS_DIR/$b")]"
		for i in $(seq 100); do
			got=$(readlink "/proc/$holder/ns/net" 2>/dev/null) || break
			[ "$got" = "$want" ] && break
			sleep 0.02
		done
		if [ "${got:-}" != "$want" ]; then
			kill "$holder" 2>/dev/null
			wait "$holder" 2>/dev/null
			die "veth: no process inside $b to move $db to"
		fi
		nsip "$a" link set "$db" netns "$holder"
		i=$?
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
		[ $i = 0 ] || die "veth: cannot move $db into $b"
	fi
	{ nsip "$a" link set "$da" up && nsip "$b" link set "$db" up; } || die "veth: cannot set $da/$db up"
}

[ $# -ge 1 ] || {
	sed -n '8,16s/^# //p' "$0" >&2
	exit 2
}
cmd=$1
shift
pick_tool
case $cmd in
tool)
	echo "$tool${bb:+ $bb}"
	;;
add)
	[ "$(id -u)" = 0 ] || die "namespaces need root"
	for ns in "$@"; do add_ns "$ns"; done
	;;
veth)
	[ $# = 4 ] || die "usage: veth NS_A DEV_A NS_B DEV_B"
	add_veth "$@"
	;;
ip)
	[ $# -ge 2 ] || die "usage: ip NS ARGS..."
	nsip "$@"
	;;
exec)
	[ $# -ge 2 ] || die "usage: exec NS CMD..."
	ns=$1
	shift
	check_name "$ns"
	[ -e "$NETNS_DIR/$ns" ] || die "no namespace $ns"
	if [ $tool = iproute2 ]; then
		exec ip netns exec "$ns" "$@"
	else
		exec "$bb" nsenter --net="$NETNS_DIR/$ns" -- "$@"
	fi
	;;
del | down)
	rc=0
	for ns in "$@"; do del_ns "$ns" || rc=1; done
	[ $rc = 0 ] || die "cannot remove all of: $*"
	;;
up)
	[ $# = 4 ] || die "usage: up NS_A NS_B ADDR_A ADDR_B"
	[ "$(id -u)" = 0 ] || die "namespaces need root"
	for ns in "$1" "$2"; do
		check_name "$ns"
		[ -e "$NETNS_DIR/$ns" ] && die "namespace $ns exists already"
	done
	# a failure inside leaves nothing behind
	if ! (add_ns "$1" && add_ns "$2" && add_veth "$1" mxva "$2" mxvb &&
		nsip "$1" addr add "$3/24" dev mxva && nsip "$2" addr add "$4/24" dev mxvb); then
		del_ns "$1"
		del_ns "$2"
		die "cannot join $1 and $2 by veth (with $tool)"
	fi
	;;
*)
	echo "netns-pair: unknown command '$cmd'" >&2
	exit 2
	;;
esac
