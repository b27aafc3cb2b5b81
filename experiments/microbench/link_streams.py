#!/usr/bin/env python3
"""How many TCP connections a mearasd node's links used: samples, until a
process ends, the established TCP connections of the node's process tree
(mearasd and its workers) whose peer port is the link port, and prints the
most seen at once as "METRIC link_streams streams N" (scripts/gpu-remote.sh:
iperf3 then runs with as many streams).

  link_streams.py --node PID --port PORT --until PID [--interval S]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ESTABLISHED = "01"


def tree(root: int) -> list[int]:
    """root and its descendants, from /proc/PID/stat."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        # after the command name, which may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        parent[int(d)] = int(fields[1])
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return out


def socket_inodes(pids: list[int]) -> set[str]:
    inodes: set[str] = set()
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    return inodes


def count(node: int, port: int) -> int:
    """Established connections of the node's tree to PORT, read in the node's
    own network namespace (/proc/NODE/net)."""
    inodes = socket_inodes(tree(node))
    n = 0
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{node}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            # sl local rem st ... uid timeout inode
            if len(f) > 9 and f[3] == ESTABLISHED and int(f[2].rsplit(":", 1)[1], 16) == port and f[9] in inodes:
                n += 1
    return n


def running(pid: int) -> bool:
    """Alive and not a zombie (the shell may not have reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", type=int, required=True, help="the forwarding mearasd's PID")
    ap.add_argument("--port", type=int, required=True, help="the remote node's link port")
    ap.add_argument("--until", type=int, required=True, help="sample until this process ends")
    ap.add_argument("--interval", type=float, default=0.05)
    a = ap.parse_args()
    most = 0
    while running(a.until):
        most = max(most, count(a.node, a.port))
        time.sleep(a.interval)
    print(f"METRIC link_streams streams {most}")
    return 0 if most else 1


if __name__ == "__main__":
    sys.exit(main())
