# An on-path attacker on a node-to-node link (issue 11, item 6): two client
# nodes use the vGPU of one remote node over loopback with a cluster key; the
# link of one of them runs through link_tamper, a proxy that, once the link is
# up and busy, flips one bit of what the forwarding node sends on its main
# connection (first run) or on a data connection that carries its striped
# bulk (second run), or injects a forged RECORD message (third run). The
# attacked node stripes over two data connections on any machine (the default
# depends on the core count). The remote node must drop that
# link with a log line (the link's AEAD records refuse the bytes), run
# nothing of it, and the
# victim program must get an error, never wrong bytes. The healthy client
# uses the other forwarding node's remote vGPU over a clean link to the same
# remote node the whole time (and sec_finish links a new one afterwards).
. "$SEC_DIR/lib.sh"
key=$SEC_TMP/cluster.key
head -c 32 /dev/urandom | base64 >"$key"
rport=$((30000 + RANDOM % 20000))
pport=$((rport + 1))

sec_start_daemon remote --link-port=$rport --cluster-key-file="$key" || exit 1
RPID=$DAEMON_PID RLOG=$DAEMON_LOG
sec_start_daemon attacked --vgpus=1 --remote=0=127.0.0.1:$pport --link-streams=2 --cluster-key-file="$key" || exit 1
APID=$DAEMON_PID ASOCK=$SOCK ALOG=$DAEMON_LOG
# last: sec_finish checks this node (and, through it, the remote node)
sec_start_daemon main --vgpus=1 --remote=0=127.0.0.1:$rport --cluster-key-file="$key" || exit 1
sec_start_healthy "$SOCK"

ok=1
for mode in flip flip-data inject; do
	arm=$SEC_TMP/arm-$mode
	refused_before=$(grep -c 'refused data from the peer' "$RLOG")
	broken_before=$(grep -c 'closed: link broken' "$RLOG")
	"$SEC_BIN/link_tamper" $pport $rport $mode "$arm" >"$SEC_TMP/proxy-$mode.log" 2>&1 &
	proxy=$!
	for _ in $(seq 50); do grep -q LISTENING "$SEC_TMP/proxy-$mode.log" 2>/dev/null && break; sleep 0.1; done
	# the victim: its vGPU is the remote one, through the proxy
	MEARAS_SOCKET=$ASOCK "$SEC_BIN/healthy" 30 >"$SEC_TMP/victim-$mode.log" 2>&1 &
	victim=$!
	sleep 1.5
	if ! grep -q "open over tcp, encrypted: TLSv1.3" "$RLOG"; then
		sec_log "the remote node logged no encrypted link:"
		sed 's/^/    | /' "$RLOG" | tail -10
		ok=0
	fi
	touch "$arm"
	wait $victim
	vrc=$?
	# a forged header can announce a record longer than what followed it:
	# it is refused once the link's next bytes (heartbeats) complete it, so
	# the proxy stays up for that (bounded), or its close would end the
	# record early (a broken link, not a refusal)
	for _ in $(seq 100); do
		[ "$(grep -c 'refused data from the peer' "$RLOG")" -gt "$refused_before" ] && break
		sleep 0.1
	done
	kill $proxy 2>/dev/null
	wait $proxy 2>/dev/null
	sec_log "proxy: $(grep TAMPERED "$SEC_TMP/proxy-$mode.log")"
	sec_log "victim (exit $vrc): $(tail -1 "$SEC_TMP/victim-$mode.log")"
	grep -q TAMPERED "$SEC_TMP/proxy-$mode.log" || { sec_log "$mode: the proxy changed nothing"; ok=0; }
	# refused: an error for the victim, never wrong bytes accepted as right
	if [ $vrc = 0 ] || grep -Eq 'differs|memset byte' "$SEC_TMP/victim-$mode.log"; then
		sec_log "$mode: the victim did not get an error (or got wrong bytes)"
		ok=0
	fi
	if [ "$(grep -c 'refused data from the peer' "$RLOG")" -gt "$refused_before" ]; then
		sec_log "$mode: remote node: $(grep -E 'link with 127\.0\.0\.1:[0-9]+: the link.s encryption refused data from the peer' "$RLOG" | tail -1)"
	elif [ "$(grep -c 'closed: link broken' "$RLOG")" -gt "$broken_before" ]; then
		# forged bytes, or a flipped bit in a record's length, make a
		# record longer than what follows: when the victim's link closes
		# (its node heard nothing for dead_ms) before the bytes add up to
		# one, the remote node sees it end mid-record (a broken link)
		# instead of refusing it; it ran nothing of it either way
		sec_log "$mode: the link ended inside the altered record (the remote node dropped it as broken)"
	else
		sec_log "$mode: no new refusal in the remote node's log:"
		sed 's/^/    | /' "$RLOG" | tail -12
		ok=0
	fi
	kill -0 "$RPID" 2>/dev/null || { sec_log "the remote node died"; ok=0; }
	kill -0 "$APID" 2>/dev/null || { sec_log "the attacked forwarding node died"; ok=0; }
done
[ $ok = 1 ] && sec_refused
sec_finish
