"""Embedded registry: one JSON file guarded by an exclusive flock (single node, no daemon).

Writers take the lock and replace the file atomically (rename), so readers need no lock:
reading (snapshot) creates nothing, neither the directory nor the lock file."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from ..model import Assembly, GpuRef, NodeProfile
from .base import Registry, Snapshot, ledgers_after_booking, ledgers_after_release


LAPSED_KEPT_S = 86400  # how long `mearas nodes` keeps showing a node whose heartbeat lapsed


class FileRegistry(Registry):
    def __init__(self, path: str, node_ttl: int, clock: Callable[[], float] = time.time) -> None:
        self._path = Path(path)
        self._lock_path = Path(path + ".lock")
        self._ttl = node_ttl
        self._clock = clock

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """Yields the whole state under the lock; changes to it are written back on exit."""
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RegistryError(
                f"cannot create registry directory {self._path.parent}: {e}") from None
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise RegistryError(f"cannot open registry lock {self._lock_path}: {e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = self._read()
            before = json.dumps(state, sort_keys=True)
            yield state
            if json.dumps(state, sort_keys=True) != before:
                self._write(state)
        finally:
            os.close(fd)

    def _read(self) -> dict[str, Any]:
        try:
            text = self._path.read_text()
        except FileNotFoundError:
            return {"nodes": {}, "ledgers": {}, "assemblies": {}}
        except OSError as e:
            raise RegistryError(f"cannot read registry {self._path}: {e}") from None
        try:
            state = json.loads(text)
            if not isinstance(state, dict):
                raise ValueError("top level is not an object")
            for k in ("nodes", "ledgers", "assemblies"):
                state.setdefault(k, {})
            return state
        except ValueError as e:
            raise RegistryError(f"registry file {self._path} is corrupt: {e}") from None

    def _write(self, state: dict[str, Any]) -> None:
        tmp = self._path.with_suffix(self._path.suffix + ".tmp")
        try:
            tmp.write_text(json.dumps(state, sort_keys=True))
            os.replace(tmp, self._path)
        except OSError as e:
            raise RegistryError(f"cannot write registry {self._path}: {e}") from None

    def _live(self, state: dict[str, Any]) -> dict[str, NodeProfile]:
        now = self._clock()
        return {
            name: NodeProfile.from_dict(rec["profile"])
            for name, rec in state["nodes"].items()
            if rec["expires_at"] > now
        }

    def publish_node(self, profile: NodeProfile) -> None:
        with self._locked() as st:
            # a node lapsed for a day is forgotten (etcd forgets it with its lease at once)
            forget = self._clock() - LAPSED_KEPT_S
            for name in [n for n, rec in st["nodes"].items() if rec["expires_at"] < forget]:
                del st["nodes"][name]
            st["nodes"][profile.name] = {
                "profile": profile.to_dict(),
                "published_at": self._clock(),
                "expires_at": self._clock() + self._ttl,
            }

    def withdraw_node(self, name: str) -> None:
        with self._locked() as st:
            st["nodes"].pop(name, None)

    def snapshot(self) -> Snapshot:
        return self._snapshot_of(self._read())

    def _snapshot_of(self, st: dict[str, Any]) -> Snapshot:
        ledgers = {}
        versions = {}
        for key, rec in st["ledgers"].items():
            ref = GpuRef.parse(key)
            ledgers[ref] = {k: int(v) for k, v in rec["entries"].items()}
            versions[ref] = int(rec["version"])
        assemblies = {k: Assembly.from_dict(v) for k, v in st["assemblies"].items()}
        now = self._clock()
        lapsed = {name: (NodeProfile.from_dict(rec["profile"]),
                         float(rec.get("published_at", rec["expires_at"] - self._ttl)))
                  for name, rec in st["nodes"].items() if rec["expires_at"] <= now}
        return Snapshot(
            nodes=self._live(st),
            ledgers=ledgers,
            versions=versions,
            assemblies=assemblies,
            assembly_versions={k: 1 for k in assemblies},
            lapsed=lapsed,
        )

    def _unchanged(self, st: dict[str, Any], snap: Snapshot, refs: list[GpuRef]) -> bool:
        for ref in refs:
            rec = st["ledgers"].get(str(ref))
            if (int(rec["version"]) if rec else 0) != snap.versions.get(ref, 0):
                return False
        return True

    def _store_ledgers(self, st: dict[str, Any], new: dict[GpuRef, dict[str, int]]) -> None:
        for ref, entries in new.items():
            rec = st["ledgers"].get(str(ref))
            version = (int(rec["version"]) if rec else 0) + 1
            st["ledgers"][str(ref)] = {"version": version, "entries": entries}

    def commit_booking(self, snap: Snapshot, assembly: Assembly) -> bool:
        new = ledgers_after_booking(snap, assembly)
        with self._locked() as st:
            if assembly.id in st["assemblies"] or not self._unchanged(st, snap, list(new)):
                return False
            live = self._live(st)
            # alive, and not gone down since SNAP (a new snapshot says why, if it did)
            if any(n not in live or live[n].down for n in assembly.nodes()):
                return False
            if any(v.node != assembly.origin and live[v.node].link_down
                   for v in assembly.vgpus):
                return False
            self._store_ledgers(st, new)
            st["assemblies"][assembly.id] = assembly.to_dict()
            return True

    def commit_release(self, snap: Snapshot, assembly: Assembly) -> bool:
        new = ledgers_after_release(snap, assembly)
        with self._locked() as st:
            if assembly.id not in st["assemblies"] or not self._unchanged(st, snap, list(new)):
                return False
            self._store_ledgers(st, new)
            del st["assemblies"][assembly.id]
            return True

    def update_assembly(self, assembly: Assembly) -> bool:
        with self._locked() as st:
            if assembly.id not in st["assemblies"]:
                return False
            st["assemblies"][assembly.id] = assembly.to_dict()
            return True
