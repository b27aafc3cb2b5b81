"""The one place that knows how mearasd is told about remote vGPUs.

Planned interface (branch h-remote, not merged yet):
  remote node:  mearasd --link-port=P --cluster-key-file=F
  client node:  mearasd --remote=VGPU=HOST:PORT --cluster-key-file=F
(vGPU VGPU of every client of the client node is backed by the remote node's GPU).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RemoteVgpu:
    vgpu: int
    host: str
    port: int


def remote_link_args(key_file: Path, *, link_port: int | None = None,
                     remotes: tuple[RemoteVgpu, ...] = ()) -> list[str]:
    """mearasd options: serve the link on link_port (remote node) and/or
    back the listed vGPUs by remote nodes (client node)."""
    args = [f"--link-port={link_port}"] if link_port is not None else []
    args += [f"--remote={r.vgpu}={r.host}:{r.port}" for r in remotes]
    return args + [f"--cluster-key-file={key_file}"] if args else []


def write_cluster_key(path: Path) -> Path:
    """A fresh 32-byte key, hex, readable by the owner only."""
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path
