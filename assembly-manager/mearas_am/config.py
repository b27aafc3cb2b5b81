"""Manager configuration, read from a TOML file (see README for the format)."""

from __future__ import annotations

import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULT_CONFIG_PATH = "/etc/mearas/am.toml"
CONFIG_ENV = "MEARAS_CONFIG"
DEFAULT_CLIENT_SOCKET = "/run/mearas/mearasd.sock"
# keys of older configs that nothing reads any more: the GPUs are mearasd's (GetProfile)
_RETIRED_NODE_KEYS = ("gpus", "use_nvml")


@dataclass(frozen=True)
class NodeConfig:
    name: str
    address: str
    max_vgpus_per_gpu: int


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
    client_socket: str  # where programs reach mearasd: `mearas run` sets MEARAS_SOCKET to it
    timeout: float
    metrics_url: str = ""  # mearasd's metrics endpoint (mearasd --metrics-port), for `mearas top`


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
    warnings: tuple[str, ...] = ()  # things in the file that are ignored, for the user
    vm: VmConfig = field(default=DEFAULT_VM)


def _table(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise ConfigError(f"[{key}] must be a table")
    return v


def _metrics_url(v: Any) -> str:
    url = str(v)
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"mearasd.metrics_url must be an http:// URL, not {url!r}")
    return url


def parse_config(d: dict[str, Any], source: str = "<dict>") -> Config:
    try:
        node = _table(d, "node")
        reg = _table(d, "registry")
        md = _table(d, "mearasd")
        rt = _table(d, "runtime")
        vm = _table(d, "vm")
        warnings = tuple(
            f"{source}: [node] {k} is ignored: the node agent publishes the GPUs mearasd "
            "reports (its GetProfile reply); remove it" for k in _RETIRED_NODE_KEYS if k in node)
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
                client_socket=str(md.get("client_socket", DEFAULT_CLIENT_SOCKET)),
                timeout=float(md.get("timeout", 10.0)),
                metrics_url=_metrics_url(md.get("metrics_url", "")),
            ),
            libdir=str(rt.get("libdir", "/usr/local/lib/mearas")),
            source=source,
            warnings=warnings,
            vm=VmConfig(socket_dir=vm_dir, qemu_user=str(vm.get("qemu_user", DEFAULT_VM.qemu_user))),
        )
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{source}: {e}") from None
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(path: str | None = None) -> Config:
    """Reads PATH, else $MEARAS_CONFIG, else /etc/mearas/am.toml. A missing file is an error:
    without one the manager would look at a registry no node agent publishes to."""
    explicit = path or os.environ.get(CONFIG_ENV)
    p = Path(explicit or DEFAULT_CONFIG_PATH)
    if not p.exists():
        if explicit:
            raise ConfigError(f"config file {p} does not exist")
        raise ConfigError(f"no config: {p} does not exist (give --config FILE or set "
                          f"${CONFIG_ENV}; every key is described in am.toml.example)")
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read config {p}: {e}") from None
    return parse_config(data, str(p))
