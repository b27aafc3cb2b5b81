"""systemd's service notifications (sd_notify(3)) for Type=notify units: one datagram with
newline-separated KEY=VALUE assignments to the unix socket named by $NOTIFY_SOCKET (a path,
or an abstract name written with a leading '@'). Nothing is sent when it is not set."""

from __future__ import annotations

import os
import socket
import sys


def notify(state: str) -> bool:
    """Sends STATE (e.g. "READY=1"); True when it was sent."""
    addr = os.environ.get("NOTIFY_SOCKET", "")
    if not addr:
        return False
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    elif not addr.startswith("/"):
        print(f"mearas: NOTIFY_SOCKET={addr!r}: only unix socket addresses are supported",
              file=sys.stderr)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.sendto(state.encode(), addr)
    except OSError as e:
        print(f"mearas: notifying systemd ({state.splitlines()[0]}): {e}", file=sys.stderr)
        return False
    return True
