"""Manager configuration, read from a TOML file (see README for the format)."""

from __future__ import annotations

import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .model import GpuStatic
from .units import parse_cc, parse_size

DEFAULT_CONFIG_PATH = "/etc/mearas/am.toml"
CONFIG_ENV = "MEARAS_CONFIG"


@dataclass(frozen=True)
class NodeConfig:
    name: str
    address: str
    max_vgpus_per_gpu: int
    use_nvml: bool
    gpus: tuple[GpuStatic, ...]


@dataclass(frozen=True)
class RegistryConfig:
    backend: str  # "file" or "etcd"
    path: str
    endpoints: tuple[str, ...]
    prefix: str
    node_ttl: int
    timeout: float


@dataclass(frozen=True)
class MearasdConfig:
    control_socket: str
    timeout: float


@dataclass(frozen=True)
class VmConfig:
    """Where mearasd serves the VMs of the libvirt hook (its --vm-dir) and who QEMU runs as."""
    socket_dir: str
    qemu_user: str


DEFAULT_VM = VmConfig("/run/mearas/vm", "libvirt-qemu")


@dataclass(frozen=True)
class Config:
    node: NodeConfig
    registry: RegistryConfig
    mearasd: MearasdConfig
    libdir: str
    source: str = field(default="<defaults>")
    vm: VmConfig = field(default=DEFAULT_VM)


def _table(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise ConfigError(f"[{key}] must be a table")
    return v


def _gpu(i: int, g: Any) -> GpuStatic:
    if not isinstance(g, dict):
        raise ConfigError(f"node.gpus[{i}] must be a table")
    try:
        cc = parse_cc(g.get("compute_capability", ""))
        return GpuStatic(
            index=int(g.get("index", i)),
            name=str(g["name"]),
            cc_major=cc[0],
            cc_minor=cc[1],
            memory_bytes=parse_size(g["memory"]),
            sm_count=int(g.get("sm_count", 0)),
            interconnect=str(g.get("interconnect", "pcie")),
        )
    except KeyError as e:
        raise ConfigError(f"node.gpus[{i}]: missing key {e.args[0]!r}") from None
    except ValueError as e:
        raise ConfigError(f"node.gpus[{i}]: {e}") from None


def parse_config(d: dict[str, Any], source: str = "<dict>") -> Config:
    try:
        node = _table(d, "node")
        reg = _table(d, "registry")
        md = _table(d, "mearasd")
        rt = _table(d, "runtime")
        vm = _table(d, "vm")
        gpus_raw = node.get("gpus", [])
        if not isinstance(gpus_raw, list):
            raise ConfigError("node.gpus must be an array of tables ([[node.gpus]])")
        gpus = tuple(_gpu(i, g) for i, g in enumerate(gpus_raw))
        if len({g.index for g in gpus}) != len(gpus):
            raise ConfigError("node.gpus: duplicate GPU index")
        factor = int(node.get("max_vgpus_per_gpu", 1))
        if factor < 1:
            raise ConfigError("node.max_vgpus_per_gpu must be >= 1")
        backend = str(reg.get("backend", "file"))
        if backend not in ("file", "etcd"):
            raise ConfigError(f"registry.backend must be 'file' or 'etcd', not {backend!r}")
        endpoints = reg.get("endpoints", ["127.0.0.1:2379"])
        if not isinstance(endpoints, list) or not endpoints:
            raise ConfigError("registry.endpoints must be a non-empty array of 'host:port'")
        ttl = int(reg.get("node_ttl", 10))
        if ttl < 2:
            raise ConfigError("registry.node_ttl must be >= 2 seconds")
        vm_dir = str(vm.get("socket_dir", DEFAULT_VM.socket_dir)).rstrip("/")
        if not vm_dir.startswith("/"):
            raise ConfigError("vm.socket_dir must be an absolute path (mearasd's --vm-dir)")
        prefix = str(reg.get("prefix", "/mearas/"))
        if not prefix.endswith("/"):
            prefix += "/"
        return Config(
            node=NodeConfig(
                name=str(node.get("name", socket.gethostname())),
                address=str(node.get("address", "")),
                max_vgpus_per_gpu=factor,
                use_nvml=bool(node.get("use_nvml", True)),
                gpus=gpus,
            ),
            registry=RegistryConfig(
                backend=backend,
                path=str(reg.get("path", "/var/lib/mearas/registry.json")),
                endpoints=tuple(str(e) for e in endpoints),
                prefix=prefix,
                node_ttl=ttl,
                timeout=float(reg.get("timeout", 5.0)),
            ),
            mearasd=MearasdConfig(
                control_socket=str(md.get("control_socket", "/run/mearas/control.sock")),
                timeout=float(md.get("timeout", 10.0)),
            ),
            libdir=str(rt.get("libdir", "/usr/local/lib/mearas")),
            source=source,
            vm=VmConfig(socket_dir=vm_dir, qemu_user=str(vm.get("qemu_user", DEFAULT_VM.qemu_user))),
        )
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{source}: {e}") from None
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(path: str | None = None) -> Config:
    """Reads PATH, else $MEARAS_CONFIG, else /etc/mearas/am.toml; a missing default file means
    built-in defaults (file registry, no GPUs configured)."""
    explicit = path or os.environ.get(CONFIG_ENV)
    p = Path(explicit or DEFAULT_CONFIG_PATH)
    if not p.exists():
        if explicit:
            raise ConfigError(f"config file {p} does not exist")
        return parse_config({}, "<defaults>")
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read config {p}: {e}") from None
    return parse_config(data, str(p))
