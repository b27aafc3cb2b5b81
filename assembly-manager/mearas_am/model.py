"""Data model shared by profiles, registry, policies and the CLI (JSON-serializable)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

ASSEMBLY_BOOKED = "booked"
ASSEMBLY_ACTIVE = "active"
ASSEMBLY_DEGRADED = "degraded"


@dataclass(frozen=True)
class GpuStatic:
    index: int
    name: str
    cc_major: int
    cc_minor: int
    memory_bytes: int
    sm_count: int
    interconnect: str

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.cc_major, self.cc_minor)


@dataclass(frozen=True)
class VgpuLoad:
    assembly_id: str
    ordinal: int
    calls_per_second: float


@dataclass(frozen=True)
class GpuLoad:
    free_memory_bytes: int
    utilization_percent: int
    vgpus: tuple[VgpuLoad, ...] = ()


@dataclass(frozen=True)
class GpuProfile:
    static: GpuStatic
    load: GpuLoad | None  # None: no live measurement (mearasd unreachable)


@dataclass(frozen=True)
class LinkServer:
    """mearasd's remote-link server as its GetProfile reply describes it."""
    port: int  # 0: mearasd serves no remote vGPUs
    bind: str  # "" : every address
    key_configured: bool  # without a cluster key every link is refused


@dataclass(frozen=True)
class MearasdProfile:
    """One GetProfile reply: the node mearasd serves, its GPUs with their load, and its link
    server (None from a mearasd that does not report it)."""
    node: str
    gpus: tuple[GpuProfile, ...]
    link: LinkServer | None


@dataclass(frozen=True)
class NodeProfile:
    name: str
    address: str  # remote-link endpoint other nodes use for remote vGPUs
    max_vgpus_per_gpu: int
    gpus: tuple[GpuProfile, ...]
    source: str  # where the GPUs came from: "mearasd" (its GetProfile reply)
    updated_at: float  # when mearasd last answered with these GPUs
    # why nothing may be booked here (no profile from mearasd, or an unusable one); "" = ready
    down: str = ""
    # why no vGPU of another node may be booked here (remote-link not served); "" = it may
    link_down: str = ""

    @property
    def state(self) -> str:
        return "down" if self.down else "local-only" if self.link_down else "ready"

    @property
    def why(self) -> str:
        return self.down or self.link_down

    def gpu(self, index: int) -> GpuProfile | None:
        for g in self.gpus:
            if g.static.index == index:
                return g
        return None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> NodeProfile:
        gpus = []
        for g in d["gpus"]:
            load = g.get("load")
            gpus.append(
                GpuProfile(
                    static=GpuStatic(**g["static"]),
                    load=None
                    if load is None
                    else GpuLoad(
                        free_memory_bytes=int(load["free_memory_bytes"]),
                        utilization_percent=int(load["utilization_percent"]),
                        vgpus=tuple(VgpuLoad(**v) for v in load.get("vgpus", ())),
                    ),
                )
            )
        return NodeProfile(
            name=str(d["name"]),
            address=str(d["address"]),
            max_vgpus_per_gpu=int(d["max_vgpus_per_gpu"]),
            gpus=tuple(gpus),
            source=str(d["source"]),
            updated_at=float(d["updated_at"]),
            down=str(d.get("down", "")),
            link_down=str(d.get("link_down", "")),
        )


@dataclass(frozen=True)
class GpuRef:
    node: str
    index: int

    def __str__(self) -> str:
        return f"{self.node}:{self.index}"

    @staticmethod
    def parse(text: str) -> GpuRef:
        node, sep, idx = text.rpartition(":")
        if not sep or not node or not idx.isdigit():
            raise ValueError(f"bad GPU reference {text!r}: expected NODE:INDEX")
        return GpuRef(node, int(idx))


@dataclass(frozen=True)
class AssemblyRequest:
    vgpus: int
    policy: str = "local-first"
    memory_per_vgpu: int | None = None  # bytes; None: GPU memory / sharing factor
    min_cc: tuple[int, int] | None = None
    local_only: bool = False
    max_remote: int | None = None
    nodes: tuple[str, ...] = ()  # only these nodes (empty: any)
    placement: tuple[GpuRef, ...] = ()  # for policy "exact": one GPU per vGPU


@dataclass(frozen=True)
class VgpuPlacement:
    ordinal: int
    node: str
    gpu_index: int
    memory_quota_bytes: int
    remote_address: str  # empty when the GPU is on the origin node

    @property
    def gpu(self) -> GpuRef:
        return GpuRef(self.node, self.gpu_index)


@dataclass(frozen=True)
class Assembly:
    id: str
    owner: str  # label of the booking: "vm:<name>", "pid:<pid>@<node>", "manual:<user>"
    origin: str  # node where the VM/process runs
    policy: str
    vgpus: tuple[VgpuPlacement, ...]
    created_at: float
    state: str = ASSEMBLY_BOOKED
    lost_nodes: tuple[str, ...] = field(default=())  # filled on read when nodes died
    # who mearasd lets use it: "uid:<N>" (a local user's processes) or "vm:<domain>"
    identity: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Assembly:
        return Assembly(
            id=str(d["id"]),
            owner=str(d["owner"]),
            origin=str(d["origin"]),
            policy=str(d["policy"]),
            vgpus=tuple(VgpuPlacement(**v) for v in d["vgpus"]),
            created_at=float(d["created_at"]),
            state=str(d.get("state", ASSEMBLY_BOOKED)),
            lost_nodes=tuple(d.get("lost_nodes", ())),
            identity=str(d.get("identity", "")),
        )

    def nodes(self) -> set[str]:
        return {v.node for v in self.vgpus}
