"""`mearas node-agent`: publishes this node's profile under its lease, keeps it alive, and
releases bookings of local `mearas run` processes that died without releasing."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from types import FrameType

from . import booking
from .manager import Manager
from .errors import MearasError
from .model import NodeProfile
from .profiles import collect_profile
from .sdnotify import notify

_PID_OWNER = re.compile(r"^pid:(\d+)@(.+)$")


def reap_dead_processes(mgr: Manager) -> list[str]:
    """Releases assemblies owned by processes of this node that no longer exist."""
    reaped = []
    for a in booking.list_assemblies(mgr.registry):
        m = _PID_OWNER.match(a.owner)
        if m and m.group(2) == mgr.node and not os.path.exists(f"/proc/{m.group(1)}"):
            mgr.stop(a.id)
            reaped.append(a.id)
    return reaped


def _report(prev: NodeProfile | None, now: NodeProfile) -> None:
    """One log line when the node's state or its reason changes, not one per publication."""
    if prev is not None and (prev.state, prev.why) == (now.state, now.why):
        return
    if now.state == "ready":
        print(f"mearas node-agent: {now.name} ready: {len(now.gpus)} GPU(s) from mearasd",
              flush=True)
    else:
        print(f"mearas node-agent: {now.name} {now.state}: {now.why}", file=sys.stderr,
              flush=True)


def _published(mgr: Manager) -> NodeProfile | None:
    """What an earlier agent of this node published, live or lapsed: its GPUs stay on show
    (not booked) while mearasd cannot be asked."""
    try:
        snap = mgr.registry.snapshot()
    except MearasError:
        return None
    if mgr.node in snap.nodes:
        return snap.nodes[mgr.node]
    lapsed = snap.lapsed.get(mgr.node)
    return lapsed[0] if lapsed else None


def run_agent(mgr: Manager, interval: float | None, once: bool) -> int:
    period = interval if interval is not None else max(mgr.config.registry.node_ttl / 3, 0.5)
    stop = threading.Event()

    def on_signal(_s: int, _f: FrameType | None) -> None:
        stop.set()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    last = _published(mgr)
    shown: NodeProfile | None = None  # what this agent logged last
    ready = False
    while True:
        status = f"publishing node {mgr.node} every {period:g} s"
        try:
            profile = collect_profile(mgr.config, mgr.mearasd, last)
            mgr.registry.publish_node(profile)
            _report(shown, profile)
            last = shown = profile
            for asm in reap_dead_processes(mgr):
                print(f"mearas node-agent: released {asm} (owner process gone)", flush=True)
        except MearasError as e:
            print(f"mearas node-agent: {e}", file=sys.stderr, flush=True)
            status = f"node {mgr.node}: {e}"
            if once:
                return 1
        if not once and not ready:
            # systemd (Type=notify): running once the first publication was tried
            notify(f"READY=1\nSTATUS={status}")
            ready = True
        if once or stop.wait(period):
            break
    if not once:
        notify("STOPPING=1")
        try:
            mgr.registry.withdraw_node(mgr.node)
        except MearasError as e:
            print(f"mearas node-agent: withdraw: {e}", file=sys.stderr)
    return 0
