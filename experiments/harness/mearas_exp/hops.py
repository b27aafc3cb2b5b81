"""Where a synchronous remote call's time goes, hop by hop.

Reads the stamps a hop-trace build of mearasd (``make hoptrace``; the format
is include/mearas/hoptrace.h's: DIR/PID.HOP, a u64 count, then u64 ns stamps)
wrote while a program made synchronous calls through a remote vGPU with both
nodes on this machine, and prints the median time of each hop of a call:

    python3 -m mearas_exp.hops DIR

Each forwarding process (it has fwd_pick stamps) is matched with the serving
node and the serving worker whose stamps overlap it in time. A call's chain
starts at a fwd_pick and takes, hop after hop, the first stamp of the next hop
at or after the previous one; a chain that does not finish before the next
fwd_pick is left out (calls must be one at a time, as in
``microbench --only sync_roundtrip``). The rows add up to the total but for
the asides (a send system call: the other node may read the message before it
returns). The client's row: from the completion in its ring to the forwarder
taking its next record.
"""
from __future__ import annotations

import argparse
import bisect
import statistics
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

# (what the hop is, whose stamp ends it, the stamp's name, aside): the order
# a call passes them. Roles: fwd = the forwarding node's worker process, srv =
# the serving mearasd (link and session threads), wrk = the serving node's
# worker. An aside row is timed from the row before it but the chain goes on
# from that row's stamp: the other node may read a message before the send
# system call that carried it has returned (loopback), so a send's end is no
# step of the call, only a cost seen beside it.
CHAIN: tuple[tuple[str, str, str, bool], ...] = (
    ("forwarder: record onto the link batch", "fwd", "fwd_posted", False),
    ("forwarder: to the link send", "fwd", "send_start", False),
    ("forwarder: sealed (encrypted link)", "fwd", "send_sealed", False),
    ("  (aside: its send system call)", "fwd", "send_end", True),
    ("serving node: its receive returns", "srv", "recv", False),
    ("serving node: to the record", "srv", "srv_feed", False),
    ("serving node: into the worker's ring", "srv", "srv_fed", False),
    ("worker: takes it", "wrk", "wrk_exec", False),
    ("worker: runs it (the GPU call)", "wrk", "wrk_posted", False),
    ("serving node: reads the completion", "srv", "srv_collected", False),
    ("serving node: to the reply send", "srv", "send_start", False),
    ("serving node: sealed (encrypted link)", "srv", "send_sealed", False),
    ("  (aside: its send system call)", "srv", "send_end", True),
    ("forwarding node: its receive returns", "fwd", "recv", False),
    ("forwarding node: completion matched", "fwd", "fwd_applied", False),
    ("forwarding node: into the client's ring", "fwd", "wrk_posted", False),
)
CLIENT_ROW = "client: sees it, makes the next call, forwarder takes it"
TOTAL_ROW = "total (one call, record to record)"
MAX_STAMPS = 1 << 20  # HOPTRACE_MAX


class HopError(Exception):
    pass


def read_stamps(path: Path) -> list[int]:
    raw = path.read_bytes()
    if len(raw) < 8:
        raise HopError(f"{path}: shorter than its count")
    (n,) = struct.unpack_from("<Q", raw)
    n = min(n, MAX_STAMPS, (len(raw) - 8) // 8)
    return sorted(struct.unpack_from(f"<{n}Q", raw, 8))


def load(folder: Path) -> dict[int, dict[str, list[int]]]:
    """{pid: {hop: sorted stamps}} of every PID.HOP file in folder."""
    procs: dict[int, dict[str, list[int]]] = {}
    for f in sorted(folder.iterdir()):
        pid, _, hop = f.name.partition(".")
        if not pid.isdigit() or not hop:
            continue
        stamps = read_stamps(f)
        if stamps:
            procs.setdefault(int(pid), {})[hop] = stamps
    return procs


@dataclass
class Row:
    label: str
    values_ns: list[int]

    def line(self) -> str:
        v = sorted(self.values_ns)
        return (f"{self.label:<58} {statistics.median(v) / 1e3:8.2f} {v[len(v) // 10] / 1e3:8.2f} "
                f"{v[len(v) * 9 // 10] / 1e3:8.2f}")


def _span(stamps: dict[str, list[int]]) -> tuple[int, int]:
    return min(v[0] for v in stamps.values()), max(v[-1] for v in stamps.values())


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return min(a[1], b[1]) - max(a[0], b[0])


def runs(procs: dict[int, dict[str, list[int]]]) -> list[dict[str, int]]:
    """One {role: pid} per forwarding process, with the serving node and
    worker that overlap it most."""
    out = []
    for fwd in sorted((p for p in procs if "fwd_pick" in procs[p]), key=lambda p: _span(procs[p])[0]):
        span = _span(procs[fwd])
        role = {"fwd": fwd}
        for name, mark in (("srv", "srv_feed"), ("wrk", "wrk_exec")):
            cands = [p for p in procs if mark in procs[p] and _overlap(_span(procs[p]), span) > 0]
            if not cands:
                raise HopError(f"forwarding process {fwd}: no process with {mark} stamps beside it")
            role[name] = max(cands, key=lambda p: _overlap(_span(procs[p]), span))
        out.append(role)
    if not out:
        raise HopError("no fwd_pick stamps: was mearasd a hop-trace build (make hoptrace) "
                       "with MEARAS_HOPTRACE_DIR set, and a call made through a remote vGPU?")
    return out


def chains(procs: dict[int, dict[str, list[int]]], role: dict[str, int]) -> list[Row]:
    steps = [(label, procs[role[r]][hop], aside) for label, r, hop, aside in CHAIN if hop in procs[role[r]]]
    picks = procs[role["fwd"]]["fwd_pick"]
    rows = [Row(label, []) for label, _, _ in steps] + [Row(CLIENT_ROW, []), Row(TOTAL_ROW, [])]
    for start, end in zip(picks, picks[1:]):
        at, gaps = start, []
        for _, stamps, aside in steps:
            i = bisect.bisect_left(stamps, at)
            if i == len(stamps) or stamps[i] > end:
                break
            gaps.append(stamps[i] - at)
            if not aside:
                at = stamps[i]
        else:
            for row, gap in zip(rows, gaps + [end - at, end - start]):
                row.values_ns.append(gap)
    if not rows[-1].values_ns:
        raise HopError(f"forwarding process {role['fwd']}: no call's chain completes "
                       "(calls made one at a time, e.g. microbench --only sync_roundtrip?)")
    return rows


def report(folder: Path) -> str:
    procs = load(folder)
    lines = []
    for role in runs(procs):
        rows = chains(procs, role)
        lines.append(f"== forwarding pid {role['fwd']}, serving pid {role['srv']}, its worker {role['wrk']}: "
                     f"{len(rows[-1].values_ns)} calls")
        lines.append(f"{'hop':<58} {'median':>8} {'p10':>8} {'p90':>8}  (us)")
        lines.extend(r.line() for r in rows)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mearas_exp.hops", description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="MEARAS_HOPTRACE_DIR of the run")
    a = ap.parse_args(argv)
    try:
        print(report(a.folder))
    except (HopError, OSError) as e:
        print(f"hops: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
