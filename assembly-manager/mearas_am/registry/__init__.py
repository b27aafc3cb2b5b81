"""Registry backends behind one interface, chosen by registry.backend in the config.
The etcd client (and its HTTP stack) is imported only when the etcd backend is used."""

from typing import TYPE_CHECKING, Any

from ..config import Config
from .base import Registry, Snapshot
from .file_store import FileRegistry

if TYPE_CHECKING:
    from .etcd_store import EtcdRegistry


def open_registry(config: Config) -> Registry:
    r = config.registry
    if r.backend == "etcd":
        from .etcd_store import EtcdRegistry
        return EtcdRegistry(r.endpoints, r.prefix, r.node_ttl, r.timeout)
    return FileRegistry(r.path, r.node_ttl)


def __getattr__(name: str) -> Any:
    if name == "EtcdRegistry":
        from .etcd_store import EtcdRegistry
        return EtcdRegistry
    raise AttributeError(name)


__all__ = ["Registry", "Snapshot", "EtcdRegistry", "FileRegistry", "open_registry"]
