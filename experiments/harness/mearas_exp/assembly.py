"""Assemblies: k local vGPUs on the client node plus m vGPUs backed by remote nodes.

vGPUs 0..k-1 are local (client node, physical GPUs `local_gpus`), vGPUs
k..k+m-1 are each backed by a remote node of their own (physical GPU
`remote_gpus[j]`, chosen with CUDA_VISIBLE_DEVICES). Mode "native" runs no
mearasd at all: each process uses its physical GPU directly.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .config import HarnessError, Paths, require_remote
from .netns import Topology, network, remote_addr
from .nodes import Node, free_port, wait_tcp
from .remote import RemoteVgpu, remote_link_args, write_cluster_key

LINK_PORT = 7600  # inside namespaces every node has its own port space


@dataclass(frozen=True)
class AssemblySpec:
    local_gpus: tuple[int, ...]
    remote_gpus: tuple[int, ...] = ()
    network: str = "loopback"
    mode: str = "mearas"  # or "native"
    device: str = "sim"   # mearasd --device
    client_extra: tuple[str, ...] = ()  # more options for the client node's mearasd

    def __post_init__(self) -> None:
        if self.mode not in ("mearas", "native"):
            raise HarnessError(f"unknown mode '{self.mode}' (mearas or native)")
        if self.device not in ("sim", "cuda"):
            raise HarnessError(f"unknown device '{self.device}' (sim or cuda)")
        if not self.local_gpus and not self.remote_gpus:
            raise HarnessError("an assembly needs at least one vGPU")
        if self.mode == "native" and self.remote_gpus:
            raise HarnessError("native mode has no remote vGPUs")
        if len(self.local_gpus) + len(self.remote_gpus) > 16:
            raise HarnessError("at most 16 vGPUs")
        network(self.network)

    @property
    def vgpus(self) -> int:
        return len(self.local_gpus) + len(self.remote_gpus)

    def describe(self) -> str:
        if self.mode == "native":
            return f"native gpus={','.join(map(str, self.local_gpus))}"
        return (f"{len(self.local_gpus)} local + {len(self.remote_gpus)} remote "
                f"({self.network}, {self.device})")


@dataclass(frozen=True)
class VgpuPlacement:
    vgpu: int
    kind: str  # local | remote | native
    gpu: int   # physical GPU index on its machine
    node: str


@dataclass
class RunningAssembly:
    spec: AssemblySpec
    placements: list[VgpuPlacement]
    nodes: list[Node]
    client_socket: Path | None
    paths: Paths
    namespaces: list[str]

    def client_env(self) -> dict[str, str]:
        """Environment of an application process that uses this assembly."""
        if self.spec.mode == "native" or self.client_socket is None:
            return {}
        lib = str(self.paths.libdir)
        prev = os.environ.get("LD_LIBRARY_PATH")
        # the GPU itself is out of the program's reach: a call that went
        # around mearas would fail instead of running natively
        return {"LD_LIBRARY_PATH": f"{lib}:{prev}" if prev else lib,
                "MEARAS_SOCKET": str(self.client_socket), "MEARAS_VGPUS": str(self.spec.vgpus),
                "CUDA_VISIBLE_DEVICES": ""}


def _visible(gpus: tuple[int, ...]) -> tuple[dict[str, str], list[int]]:
    """CUDA_VISIBLE_DEVICES for a node using `gpus`, and each one's index in that view."""
    distinct = sorted(set(gpus))
    env = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, distinct))}
    return env, [distinct.index(g) for g in gpus]


@contextmanager
def start_assembly(spec: AssemblySpec, paths: Paths, workdir: Path) -> Iterator[RunningAssembly]:
    """Start the nodes of spec; on exit stop every node, then remove its namespaces."""
    if spec.mode == "native":
        yield RunningAssembly(spec, [VgpuPlacement(i, "native", g, "native")
                                     for i, g in enumerate(spec.local_gpus)], [], None, paths, [])
        return
    paths.check_daemon()
    if spec.remote_gpus:
        require_remote(paths.mearasd)
    net = network(spec.network)
    topo = Topology(len(spec.remote_gpus), net.rate) if net.netns else None
    nodes: list[Node] = []
    tmp = Path(tempfile.mkdtemp(prefix="mx-", dir="/tmp"))  # short paths for unix sockets
    try:
        if topo is not None:
            topo.create()
        key = write_cluster_key(tmp / "cluster.key") if spec.remote_gpus else None
        remotes: list[RemoteVgpu] = []
        placements: list[VgpuPlacement] = []
        k = len(spec.local_gpus)
        for j, gpu in enumerate(spec.remote_gpus):
            assert key is not None
            host, port = ((remote_addr(j), LINK_PORT) if topo else ("127.0.0.1", free_port()))
            node = Node(f"remote{j}", [f"--device={spec.device}", "--vgpus=1",
                                       *remote_link_args(key, link_port=port)],
                        tmp / f"r{j}.sock", workdir / f"node-remote{j}.log",
                        netns=topo.remote_ns(j) if topo else None,
                        env={"CUDA_VISIBLE_DEVICES": str(gpu)})
            nodes.append(node)
            node.start(paths.mearasd)
            node.wait_ready()
            wait_tcp(host, port, topo.client_ns if topo else None, node)
            remotes.append(RemoteVgpu(k + j, host, port))
            placements.append(VgpuPlacement(k + j, "remote", gpu, node.name))
        env, gpu_map = _visible(spec.local_gpus) if spec.local_gpus else ({}, [])
        client_args = [f"--device={spec.device}", f"--vgpus={spec.vgpus}"]
        if gpu_map:
            client_args.append("--gpu-map=" + ",".join(map(str, gpu_map)))
        client_args += list(spec.client_extra)
        if remotes:
            assert key is not None
            client_args += remote_link_args(key, remotes=tuple(remotes))
        client = Node("client", client_args, tmp / "client.sock", workdir / "node-client.log",
                      netns=topo.client_ns if topo else None, env=env)
        nodes.insert(0, client)
        client.start(paths.mearasd)
        client.wait_ready()
        placements = [VgpuPlacement(i, "local", g, "client")
                      for i, g in enumerate(spec.local_gpus)] + placements
        yield RunningAssembly(spec, placements, nodes, client.socket, paths,
                              list(topo.created) if topo else [])
    finally:
        errors = []
        for node in nodes:
            try:
                node.stop()
            except Exception as e:  # keep stopping the others
                errors.append(f"{node.name}: {e}")
        if topo is not None:
            topo.destroy()
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
        if errors:
            raise HarnessError("cannot stop nodes: " + "; ".join(errors))

