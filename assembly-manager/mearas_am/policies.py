"""Placement policies: turn an AssemblyRequest and a registry Snapshot into candidates.

Every candidate returned fits the snapshot's free capacity; candidates of one call are
equivalent for the policy (they differ only in how ties are broken), so concurrent bookers
spread over equal GPUs instead of all racing for the same one."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

from .errors import NoCapacityError, RequestError
from .model import AssemblyRequest, GpuRef, GpuStatic, VgpuPlacement
from .registry.base import Snapshot
from .units import format_size

POLICIES = ("local-first", "spread", "pack", "exact")
MAX_VGPUS = 64


@dataclass
class GpuState:
    ref: GpuRef
    static: GpuStatic
    address: str
    slots_total: int
    slots_used: int
    memory_used: int  # booked quotas
    utilization: int  # percent, 0 when unknown
    down: str = ""  # the node's reason to take no vGPU at all ("" = none)
    link_down: str = ""  # the node's reason to take no vGPU of another node

    @property
    def load(self) -> float:
        return (self.slots_used / self.slots_total
                + self.memory_used / max(self.static.memory_bytes, 1))

    def quota(self, request: AssemblyRequest) -> int:
        if request.memory_per_vgpu is not None:
            return request.memory_per_vgpu
        return self.static.memory_bytes // self.slots_total

    def fits(self, quota: int) -> bool:
        return (self.slots_used < self.slots_total
                and self.memory_used + quota <= self.static.memory_bytes)


def validate_request(r: AssemblyRequest) -> None:
    if not 1 <= r.vgpus <= MAX_VGPUS:
        raise RequestError(f"vgpus must be between 1 and {MAX_VGPUS}, not {r.vgpus}")
    if r.policy not in POLICIES:
        raise RequestError(f"unknown policy {r.policy!r}; choose one of {', '.join(POLICIES)}")
    if r.memory_per_vgpu is not None and r.memory_per_vgpu <= 0:
        raise RequestError("memory per vGPU must be positive")
    if r.max_remote is not None and r.max_remote < 0:
        raise RequestError("max remote vGPUs must be >= 0")
    if r.policy == "exact" and len(r.placement) != r.vgpus:
        raise RequestError(f"policy exact needs one GPU per vGPU: {r.vgpus} vGPUs but "
                           f"{len(r.placement)} placements given")
    if r.policy != "exact" and r.placement:
        raise RequestError("a placement list is only valid with policy exact")


def gpu_states(snap: Snapshot) -> dict[GpuRef, GpuState]:
    out = {}
    for node in snap.nodes.values():
        for g in node.gpus:
            ref = GpuRef(node.name, g.static.index)
            led = snap.ledger(ref)
            out[ref] = GpuState(
                ref=ref, static=g.static, address=node.address,
                slots_total=node.max_vgpus_per_gpu, slots_used=len(led),
                memory_used=sum(led.values()),
                utilization=g.load.utilization_percent if g.load else 0,
                down=node.down, link_down=node.link_down)
    return out


def _eligible(g: GpuState, r: AssemblyRequest, origin: str) -> str | None:
    """Why G cannot take a vGPU of R at all (None if it can, capacity aside)."""
    if g.down:
        return f"node {g.ref.node} is down ({g.down})"
    if g.link_down and g.ref.node != origin:
        return f"node {g.ref.node} takes no remote vGPUs ({g.link_down})"
    if r.nodes and g.ref.node not in r.nodes:
        return "not a requested node"
    if r.local_only and g.ref.node != origin:
        return "remote (local only)"
    if r.min_cc and g.static.compute_capability < r.min_cc:
        return "compute capability too low"
    if g.quota(r) > g.static.memory_bytes:
        return "GPU memory smaller than the quota"
    return None


ScoreFn = Callable[[GpuState, str, set[str]], tuple[float, ...]]

SCORES: dict[str, ScoreFn] = {
    # local GPUs first (least loaded among them), then remote ones, least loaded first
    "local-first": lambda g, origin, used: (g.ref.node != origin, g.load, g.utilization),
    # least loaded GPU anywhere; local wins a tie
    "spread": lambda g, origin, used: (g.load, g.utilization, g.ref.node != origin),
    # fewest nodes and GPUs: stay on nodes already used, fill the fullest GPU that fits
    "pack": lambda g, origin, used: (g.ref.node not in used, -g.load, g.ref.node != origin),
}


def _greedy(states: list[GpuState], r: AssemblyRequest, origin: str, score: ScoreFn,
            tiebreak: dict[GpuRef, float]) -> list[VgpuPlacement] | None:
    work = {g.ref: dataclasses.replace(g) for g in states}
    used_nodes: set[str] = set()
    remote = 0
    out = []
    for ordinal in range(r.vgpus):
        best: GpuState | None = None
        best_key: tuple[float, ...] = ()
        for g in work.values():
            if not g.fits(g.quota(r)):
                continue
            if g.ref.node != origin and r.max_remote is not None and remote >= r.max_remote:
                continue
            key = score(g, origin, used_nodes) + (tiebreak[g.ref],)
            if best is None or key < best_key:
                best, best_key = g, key
        if best is None:
            return None
        q = best.quota(r)
        best.slots_used += 1
        best.memory_used += q
        used_nodes.add(best.ref.node)
        is_remote = best.ref.node != origin
        remote += is_remote
        out.append(VgpuPlacement(ordinal, best.ref.node, best.ref.index, q,
                                 best.address if is_remote else ""))
    return out


def _exact(all_states: dict[GpuRef, GpuState], r: AssemblyRequest, origin: str
           ) -> list[VgpuPlacement]:
    out = []
    remote = 0
    for ordinal, ref in enumerate(r.placement):
        g = all_states.get(ref)
        if g is None:
            raise NoCapacityError(f"vGPU {ordinal}: GPU {ref} is not in the registry "
                                  "(unknown or dead node, or no such GPU index)")
        why = _eligible(g, r, origin)
        if why:
            raise NoCapacityError(f"vGPU {ordinal}: GPU {ref}: {why}")
        q = g.quota(r)
        if not g.fits(q):
            raise NoCapacityError(
                f"vGPU {ordinal}: GPU {ref} is full ({g.slots_used}/{g.slots_total} vGPUs, "
                f"{format_size(g.memory_used)} of {format_size(g.static.memory_bytes)} booked, "
                f"{format_size(q)} needed)")
        g.slots_used += 1
        g.memory_used += q
        is_remote = ref.node != origin
        remote += is_remote
        out.append(VgpuPlacement(ordinal, ref.node, ref.index, q, g.address if is_remote else ""))
    if r.max_remote is not None and remote > r.max_remote:
        raise NoCapacityError(f"placement has {remote} remote vGPUs, more than the "
                              f"allowed {r.max_remote}")
    return out


def _explain(snap: Snapshot, states: dict[GpuRef, GpuState], r: AssemblyRequest,
             origin: str) -> str:
    if not snap.nodes:
        return "no live nodes in the registry (is a node agent running?)"
    missing = [n for n in r.nodes if n not in snap.nodes]
    parts = [f"cannot place {r.vgpus} vGPU(s) with policy {r.policy}"]
    if missing:
        parts.append(f"requested node(s) not alive: {', '.join(missing)}")
    for n in sorted(snap.nodes.values(), key=lambda n: n.name):
        if n.down:
            parts.append(f"node {n.name} is down: {n.down}")
        elif n.link_down and n.name != origin:
            parts.append(f"node {n.name} takes no remote vGPUs: {n.link_down}")
    elig = [g for g in states.values() if _eligible(g, r, origin) is None]
    free_slots = sum(g.slots_total - g.slots_used for g in elig if g.fits(g.quota(r)))
    parts.append(f"{len(elig)} of {len(states)} GPU(s) on {len(snap.nodes)} live node(s) "
                 f"meet the constraints, with {free_slots} free vGPU slot(s) among them")
    if r.memory_per_vgpu:
        parts.append(f"{format_size(r.memory_per_vgpu)} per vGPU requested")
    if r.max_remote is not None:
        parts.append(f"at most {r.max_remote} remote vGPU(s) allowed")
    return "; ".join(parts)


def compose(snap: Snapshot, r: AssemblyRequest, origin: str, max_candidates: int = 4,
            rng: random.Random | None = None) -> list[list[VgpuPlacement]]:
    """Candidate placements for R, best first; NoCapacityError with the reason if none."""
    validate_request(r)
    states = gpu_states(snap)
    if r.policy == "exact":
        return [_exact(states, r, origin)]
    elig = [g for g in states.values() if _eligible(g, r, origin) is None]
    rng = rng or random.Random()
    score = SCORES[r.policy]
    seen: set[tuple[tuple[str, int], ...]] = set()
    out: list[list[VgpuPlacement]] = []
    for _ in range(max_candidates * 2):
        tiebreak = {g.ref: rng.random() for g in elig}
        cand = _greedy(elig, r, origin, score, tiebreak)
        if cand is None:
            break
        sig = tuple(sorted((v.node, v.gpu_index) for v in cand))
        if sig not in seen:
            seen.add(sig)
            out.append(cand)
        if len(out) >= max_candidates:
            break
    if not out:
        raise NoCapacityError(_explain(snap, states, r, origin))
    return out
