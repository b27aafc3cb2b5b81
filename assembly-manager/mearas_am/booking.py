"""Composing, booking and releasing assemblies against a Registry (retries on conflicts)."""

from __future__ import annotations

import dataclasses
import random
import time
import uuid

from .errors import BookingConflictError
from .model import ASSEMBLY_DEGRADED, Assembly, AssemblyRequest, VgpuPlacement
from .policies import compose
from .registry.base import Registry, Snapshot

MAX_ATTEMPTS = 60


def dry_run(registry: Registry, request: AssemblyRequest, origin: str
            ) -> list[list[VgpuPlacement]]:
    return compose(registry.snapshot(), request, origin)


def book(registry: Registry, request: AssemblyRequest, owner: str, origin: str,
         rng: random.Random | None = None, max_attempts: int = MAX_ATTEMPTS,
         identity: str = "") -> Assembly:
    """Books one assembly for OWNER atomically, usable by IDENTITY ("uid:<N>" or "vm:<name>").
    Raises NoCapacityError when the request cannot fit, BookingConflictError when concurrent
    bookers won MAX_ATTEMPTS times in a row."""
    rng = rng or random.Random()
    asm_id = uuid.uuid4().hex[:16]
    for attempt in range(max_attempts):
        snap = registry.snapshot()
        # a commit whose reply was lost (endpoint failover) may have landed after all
        if asm_id in snap.assemblies:
            return snap.assemblies[asm_id]
        for cand in compose(snap, request, origin, rng=rng):
            assembly = Assembly(id=asm_id, owner=owner, origin=origin, policy=request.policy,
                                vgpus=tuple(cand), created_at=time.time(), identity=identity)
            if registry.commit_booking(snap, assembly):
                return assembly
        time.sleep(rng.uniform(0, 0.005 * min(attempt + 1, 20)))
    raise BookingConflictError(f"booking for {owner} lost {max_attempts} races with "
                               "concurrent bookers; try again")


def release(registry: Registry, assembly_id: str) -> Assembly | None:
    """Frees the booking; returns the released assembly, or None if it did not exist."""
    for _ in range(MAX_ATTEMPTS):
        snap = registry.snapshot()
        a = snap.assemblies.get(assembly_id)
        if a is None:
            return None
        if registry.commit_release(snap, a):
            return a
        time.sleep(random.uniform(0, 0.01))
    raise BookingConflictError(f"release of {assembly_id} kept conflicting; try again")


def with_health(snap: Snapshot, a: Assembly) -> Assembly:
    """Marks A degraded when a node holding one of its GPUs is no longer alive."""
    lost = tuple(sorted(n for n in a.nodes() if n not in snap.nodes))
    if lost:
        return dataclasses.replace(a, state=ASSEMBLY_DEGRADED, lost_nodes=lost)
    return a


def list_assemblies(registry: Registry, owner: str | None = None) -> list[Assembly]:
    snap = registry.snapshot()
    out = [with_health(snap, a) for a in snap.assemblies.values()
           if owner is None or a.owner == owner]
    return sorted(out, key=lambda a: (a.created_at, a.id))
