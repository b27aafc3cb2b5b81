"""Registry backends behind one interface, chosen by registry.backend in the config."""

from ..config import Config
from .base import Registry, Snapshot
from .etcd_store import EtcdRegistry
from .file_store import FileRegistry


def open_registry(config: Config) -> Registry:
    r = config.registry
    if r.backend == "etcd":
        return EtcdRegistry(r.endpoints, r.prefix, r.node_ttl, r.timeout)
    return FileRegistry(r.path, r.node_ttl)


__all__ = ["Registry", "Snapshot", "EtcdRegistry", "FileRegistry", "open_registry"]
