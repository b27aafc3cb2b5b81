from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mearas_am.model import GpuLoad, GpuProfile, GpuStatic, NodeProfile
from mearas_am.registry import EtcdRegistry, FileRegistry, Registry

from .etcd_harness import EtcdCluster
from .fake_mearasd import FakeMearasd
from .real_mearasd import RealMearasd, dump_log, new_mearasd

GiB = 1 << 30


def make_profile(name: str, gpus: int = 2, memory: int = 80 * GiB, factor: int = 2,
                 cc: tuple[int, int] = (9, 0), util: int = 0) -> NodeProfile:
    return NodeProfile(
        name=name, address=f"{name}.example:7100", max_vgpus_per_gpu=factor,
        gpus=tuple(GpuProfile(GpuStatic(i, "Test GPU", cc[0], cc[1], memory, 132, "pcie"),
                              GpuLoad(memory, util)) for i in range(gpus)),
        source="config", updated_at=time.time())


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    c = EtcdCluster(tmp_path_factory.mktemp("etcd1"), 1)
    c.start()
    yield c
    c.stop()


def registry_factory(kind: str, tmp: Path, etcd: EtcdCluster | None,
                     ttl: int = 10) -> Callable[[], Registry]:
    """Makes independent clients (own connection or file descriptor) of one fresh store."""
    if kind == "file":
        path = str(tmp / f"reg-{uuid.uuid4().hex[:6]}.json")
        return lambda: FileRegistry(path, ttl)
    assert etcd is not None
    endpoints, prefix = etcd.endpoints, f"/test-{uuid.uuid4().hex[:8]}/"
    return lambda: EtcdRegistry(endpoints, prefix, ttl)


def new_registry(kind: str, tmp: Path, etcd: EtcdCluster | None, ttl: int = 10) -> Registry:
    return registry_factory(kind, tmp, etcd, ttl)()


@pytest.fixture(params=["file", "etcd"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake_mearasd(tmp_path: Path) -> Iterator[FakeMearasd]:
    srv = FakeMearasd(str(tmp_path / "control.sock"), "node-a").start()
    yield srv
    srv.close()


@pytest.fixture
def real_mearasd(tmp_path: Path) -> Iterator[RealMearasd]:
    """build/bin/mearasd --device=sim as node-a, serving remote-link on a free port with a
    cluster key."""
    d = new_mearasd(tmp_path).start(tmp_path)
    try:
        yield d
    finally:
        d.stop()
        dump_log(d)


@pytest.fixture
def fake_peers(tmp_path: Path) -> Iterator[dict[str, FakeMearasd]]:
    """The mearasd of node-b and node-c (node-a's is fake_mearasd)."""
    peers = {n: FakeMearasd(str(tmp_path / f"control-{n}.sock"), n).start()
             for n in ("node-b", "node-c")}
    yield peers
    for srv in peers.values():
        srv.close()


def write_config(path: Path, node: str = "node-a", backend: str = "file",
                 registry_path: Path | None = None, endpoints: tuple[str, ...] = (),
                 prefix: str = "/mearas/", socket_path: str = "/nonexistent/control.sock",
                 factor: int = 2, ttl: int = 10, libdir: str = "/usr/local/lib/mearas",
                 address: str | None = None, client_socket: str | None = None,
                 vm_dir: Path | None = None) -> Path:
    lines = [
        "[node]", f'name = "{node}"',
        f'address = "{address if address is not None else f"{node}.example:7100"}"',
        f"max_vgpus_per_gpu = {factor}",
    ]
    lines += ["[registry]", f'backend = "{backend}"',
              f'path = "{registry_path or path.parent / "registry.json"}"',
              "endpoints = [" + ", ".join(f'"{e}"' for e in endpoints) + "]" if endpoints
              else "", f'prefix = "{prefix}"', f"node_ttl = {ttl}",
              "[mearasd]", f'control_socket = "{socket_path}"', "timeout = 5",
              f'client_socket = "{client_socket}"' if client_socket else "",
              "[runtime]", f'libdir = "{libdir}"']
    if vm_dir is not None:
        lines += ["[vm]", f'socket_dir = "{vm_dir}"', 'qemu_user = "libvirt-qemu"']
    path.write_text("\n".join(lines) + "\n")
    return path
