#!/usr/bin/env python3
"""How many TCP connections a mearasd node's links used for one program:
runs the program and, until it ends, samples the established TCP connections
of the node's process tree (mearasd and its workers) whose peer port is the
link port, leaving out those open before the program started (an earlier
client's link still closing); writes the most seen at once to OUT as
"METRIC link_streams streams N" (scripts/gpu-remote.sh: iperf3 then runs with
as many streams). Exits with the program's status.

  link_streams.py --node PID --port PORT --out OUT -- PROGRAM [ARGS...]
"""
from __future__ import annotations

import argparse
import os
import subprocess
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


def links(node: int, port: int) -> set[str]:
    """Socket inodes of the node's tree's established connections to PORT,
    read in the node's own network namespace (/proc/NODE/net)."""
    inodes = socket_inodes(tree(node))
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{node}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            # sl local rem st ... uid timeout inode
            if len(f) > 9 and f[3] == ESTABLISHED and int(f[2].rsplit(":", 1)[1], 16) == port and f[9] in inodes:
                found.add(f[9])
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", type=int, required=True, help="the forwarding mearasd's PID")
    ap.add_argument("--port", type=int, required=True, help="the remote node's link port")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("command", nargs="+", help="the program (after --)")
    a = ap.parse_args()
    before = links(a.node, a.port)
    prog = subprocess.Popen(a.command)  # its output where ours goes
    most = 0
    while prog.poll() is None:
        most = max(most, len(links(a.node, a.port) - before))
        time.sleep(a.interval)
    a.out.write_text(f"METRIC link_streams streams {most}\n")
    return prog.returncode


if __name__ == "__main__":
    sys.exit(main())
