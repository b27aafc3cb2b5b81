"""The registry interface: live node profiles, per-GPU booking ledgers and assemblies.

Booking uses optimistic concurrency: a booker reads a Snapshot, chooses a placement from it
and commits only if none of the ledgers it touches changed since (each ledger carries a
version). Both backends implement commit atomically (file lock / etcd transaction)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ..model import Assembly, GpuRef, NodeProfile

# A ledger maps "<assembly id>/<ordinal>" to the memory quota (bytes) booked on one GPU.
Ledger = dict[str, int]


def ledger_key(assembly_id: str, ordinal: int) -> str:
    return f"{assembly_id}/{ordinal}"


@dataclass
class Snapshot:
    nodes: dict[str, NodeProfile]  # live nodes only
    ledgers: dict[GpuRef, Ledger]
    versions: dict[GpuRef, int]  # opaque per-ledger version; 0 for a ledger never written
    assemblies: dict[str, Assembly]
    assembly_versions: dict[str, int] = field(default_factory=dict)
    node_versions: dict[str, int] = field(default_factory=dict)  # etcd: node key mod revision
    # nodes whose heartbeat lapsed, for people to see (never booked): name -> (last profile,
    # time of its last heartbeat). Only the file store keeps them; etcd drops them with the lease.
    lapsed: dict[str, tuple[NodeProfile, float]] = field(default_factory=dict)

    def ledger(self, ref: GpuRef) -> Ledger:
        return self.ledgers.get(ref, {})


def ledgers_after_booking(snap: Snapshot, assembly: Assembly) -> dict[GpuRef, Ledger]:
    out: dict[GpuRef, Ledger] = {}
    for v in assembly.vgpus:
        led = out.setdefault(v.gpu, dict(snap.ledger(v.gpu)))
        led[ledger_key(assembly.id, v.ordinal)] = v.memory_quota_bytes
    return out


def ledgers_after_release(snap: Snapshot, assembly: Assembly) -> dict[GpuRef, Ledger]:
    out: dict[GpuRef, Ledger] = {}
    for v in assembly.vgpus:
        led = out.setdefault(v.gpu, dict(snap.ledger(v.gpu)))
        led.pop(ledger_key(assembly.id, v.ordinal), None)
    return out


class Registry(ABC):
    """One interface over the file store (single node) and etcd (cluster)."""

    @abstractmethod
    def publish_node(self, profile: NodeProfile) -> None:
        """Stores PROFILE and keeps the node alive for the configured TTL from now."""

    @abstractmethod
    def withdraw_node(self, name: str) -> None:
        """Removes a node record at once (clean agent shutdown)."""

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """A consistent view of live nodes, ledgers and assemblies."""

    @abstractmethod
    def commit_booking(self, snap: Snapshot, assembly: Assembly) -> bool:
        """Atomically adds ASSEMBLY and its ledger entries if every touched ledger is unchanged
        since SNAP and every node it uses is still alive and as SNAP saw it (a node that went
        down since is not booked); False on a conflict."""

    @abstractmethod
    def commit_release(self, snap: Snapshot, assembly: Assembly) -> bool:
        """Atomically removes ASSEMBLY and its ledger entries if unchanged since SNAP."""

    @abstractmethod
    def update_assembly(self, assembly: Assembly) -> bool:
        """Rewrites an existing assembly record (e.g. its state); False if it is gone."""

    def close(self) -> None:
        """Releases connections; node records stay until their TTL runs out."""
