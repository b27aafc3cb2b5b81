"""Tables for people and JSON for programs."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .model import Assembly, NodeProfile, VgpuPlacement
from .registry.base import Snapshot
from .units import format_size


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class NodeView:
    """A node as `mearas nodes` shows it: its profile, its state and why."""
    profile: NodeProfile
    state: str  # "ready", "local-only" (no remote vGPUs), "down"
    why: str


def node_views(snap: Snapshot, now: float) -> list[NodeView]:
    views = [NodeView(n, n.state, n.why) for n in snap.nodes.values()]
    for n, beat in snap.lapsed.values():
        views.append(NodeView(n, "down", f"no heartbeat from its node agent for "
                                         f"{now - beat:.0f} s (agent stopped or stuck?)"))
    return sorted(views, key=lambda v: v.profile.name)


def nodes_json(views: list[NodeView]) -> str:
    return to_json([dict(v.profile.to_dict(), state=v.state, why=v.why) for v in views])


def nodes_table(views: list[NodeView], booked: dict[tuple[str, int], int], now: float) -> str:
    rows = []
    notes = []
    for v in views:
        n = v.profile
        for g in n.gpus:
            s = g.static
            load = g.load
            rows.append([
                n.name, str(s.index), s.name, f"{s.cc_major}.{s.cc_minor}",
                format_size(s.memory_bytes), str(s.sm_count), s.interconnect or "-",
                f"{booked.get((n.name, s.index), 0)}/{n.max_vgpus_per_gpu}",
                format_size(load.free_memory_bytes) if load else "-",
                f"{load.utilization_percent}%" if load else "-",
                f"{sum(x.calls_per_second for x in load.vgpus):.0f}" if load else "-",
                n.address or "-", v.state])
        if not n.gpus:
            rows.append([n.name] + ["-"] * 10 + [n.address or "-", v.state])
        if v.why:
            seen = (f" (GPUs as mearasd reported them {now - n.updated_at:.0f} s ago)"
                    if n.down and n.gpus else "")
            notes.append(f"{n.name}: {v.state}: {v.why}{seen}")
    out = table(["NODE", "GPU", "NAME", "CC", "MEMORY", "SMS", "LINK", "VGPUS", "FREE",
                 "UTIL", "CALLS/S", "ADDRESS", "STATE"], rows)
    return "\n".join([out, *notes]) if notes else out


def _vgpus(vs: tuple[VgpuPlacement, ...] | list[VgpuPlacement]) -> str:
    return " ".join(f"{v.ordinal}={v.node}:{v.gpu_index}{'(r)' if v.remote_address else ''}"
                    f"/{format_size(v.memory_quota_bytes)}" for v in vs)


def assemblies_table(assemblies: list[Assembly],
                     attached: dict[str, list[tuple[int, str]]] | None = None) -> str:
    """attached (this node's mearasd, when it answered): the processes on each assembly's
    vGPUs, every one of them on all of its vGPUs."""
    rows = [[a.id, a.owner, a.identity or "-", a.origin, a.policy,
             a.state + (f" (lost {','.join(a.lost_nodes)})" if a.lost_nodes else ""),
             _vgpus(a.vgpus)] for a in assemblies]
    head = ["ID", "OWNER", "FOR", "ORIGIN", "POLICY", "STATE", "VGPUS"]
    if attached is not None:
        head.append("ON EACH VGPU")
        for a, row in zip(assemblies, rows):
            procs = sorted(attached.get(a.id, []), key=lambda p: (p[1], p[0]))
            row.append(", ".join(f"{vm + ' ' if vm else ''}pid {pid}" for pid, vm in procs) or "-")
    return table(head, rows)


def candidates_text(cands: list[list[VgpuPlacement]]) -> str:
    return "\n".join(f"candidate {i}: {_vgpus(c)}" for i, c in enumerate(cands))


def to_json(obj: Any) -> str:
    def conv(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        raise TypeError(f"not serializable: {type(o)}")
    return json.dumps(obj, default=conv, indent=2, sort_keys=True)
