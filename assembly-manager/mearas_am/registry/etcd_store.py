"""Distributed registry on etcd v3 (through its JSON gateway, client etcd3gw).

Keys under PREFIX: nodes/<name> (profile, attached to the node's lease so a dead node
disappears), ledger/<node>/<gpu> (bookings of one GPU), assemblies/<id>. Bookings and
releases are single etcd transactions comparing the mod revision of every touched key."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import etcd3gw
from etcd3gw.exceptions import (ConnectionFailedError, ConnectionTimeoutError,
                                Etcd3Exception)
from etcd3gw.lease import Lease

from ..errors import RegistryError
from ..model import Assembly, GpuRef, NodeProfile
from .base import Ledger, Registry, Snapshot, ledgers_after_booking, ledgers_after_release

T = TypeVar("T")


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


class EtcdRegistry(Registry):
    def __init__(self, endpoints: tuple[str, ...], prefix: str, node_ttl: int,
                 timeout: float = 5.0) -> None:
        self._clients = []
        for ep in endpoints:
            host, sep, port = ep.rpartition(":")
            if not sep or not port.isdigit():
                raise RegistryError(f"bad etcd endpoint {ep!r}: expected HOST:PORT")
            self._clients.append(etcd3gw.Etcd3Client(host=host, port=int(port), timeout=timeout))
        self._endpoints = endpoints
        self._current = 0
        self._prefix = prefix
        self._ttl = node_ttl
        self._leases: dict[str, int] = {}  # node name -> lease keeping its record alive
        self._mutex = threading.Lock()

    def _call(self, fn: Callable[[Any], T]) -> T:
        """Runs FN on a client, failing over to the next endpoint when one is unreachable."""
        errors = []
        for i in range(len(self._clients)):
            idx = (self._current + i) % len(self._clients)
            try:
                result = fn(self._clients[idx])
                self._current = idx
                return result
            except (ConnectionFailedError, ConnectionTimeoutError) as e:
                errors.append(f"{self._endpoints[idx]}: {type(e).__name__} {e}".strip())
            except Etcd3Exception as e:  # reachable, but refused the request
                raise RegistryError(f"etcd {self._endpoints[idx]} refused a request: "
                                    f"{type(e).__name__} {e}") from None
            except (ValueError, KeyError) as e:
                errors.append(f"{self._endpoints[idx]}: bad reply: {e}")
        raise RegistryError("etcd unreachable (" + "; ".join(errors) + ")")

    def _key(self, *parts: str) -> str:
        return self._prefix + "/".join(parts)

    def _node_key(self, name: str) -> str:
        return self._key("nodes", name)

    def _ledger_key(self, ref: GpuRef) -> str:
        return self._key("ledger", ref.node, str(ref.index))

    def _asm_key(self, asm_id: str) -> str:
        return self._key("assemblies", asm_id)

    def publish_node(self, profile: NodeProfile) -> None:
        with self._mutex:
            lease_id = self._leases.get(profile.name)
            alive = False
            if lease_id is not None:
                held = lease_id
                alive = self._call(lambda c: Lease(held, c).refresh()) > 0
            if lease_id is None or not alive:
                lease_id = int(self._call(lambda c: c.lease(self._ttl).id))
                self._leases[profile.name] = lease_id
            value = json.dumps(profile.to_dict())
            self._call(lambda c: c.post(c.get_url("/kv/put"), json={
                "key": _b64(self._node_key(profile.name)), "value": _b64(value),
                "lease": lease_id}))

    def withdraw_node(self, name: str) -> None:
        self._call(lambda c: c.delete(self._node_key(name)))
        with self._mutex:
            lease_id = self._leases.pop(name, None)
        if lease_id is not None:
            self._call(lambda c: Lease(lease_id, c).revoke())

    def snapshot(self) -> Snapshot:
        kvs = self._call(lambda c: c.get_prefix(self._prefix))
        snap = Snapshot(nodes={}, ledgers={}, versions={}, assemblies={})
        for value, meta in kvs:
            key = meta["key"].decode()[len(self._prefix):]
            kind, _, rest = key.partition("/")
            try:
                data = json.loads(value)
                rev = int(meta["mod_revision"])
                if kind == "nodes":
                    snap.nodes[rest] = NodeProfile.from_dict(data)
                    snap.node_versions[rest] = rev
                elif kind == "ledger":
                    node, _, idx = rest.rpartition("/")
                    ref = GpuRef(node, int(idx))
                    snap.ledgers[ref] = {k: int(v) for k, v in data.items()}
                    snap.versions[ref] = rev
                elif kind == "assemblies":
                    snap.assemblies[rest] = Assembly.from_dict(data)
                    snap.assembly_versions[rest] = rev
            except (ValueError, KeyError, TypeError) as e:
                raise RegistryError(f"etcd key {key!r} holds bad data: {e}") from None
        return snap

    def _mod_equal(self, key: str, rev: int) -> dict[str, Any]:
        return {"key": _b64(key), "result": "EQUAL", "target": "MOD", "mod_revision": rev}

    def _put(self, key: str, value: str) -> dict[str, Any]:
        return {"request_put": {"key": _b64(key), "value": _b64(value)}}

    def _delete(self, key: str) -> dict[str, Any]:
        return {"request_delete_range": {"key": _b64(key)}}

    def _ledger_ops(self, snap: Snapshot, new: dict[GpuRef, Ledger]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        compare = [self._mod_equal(self._ledger_key(r), snap.versions.get(r, 0)) for r in new]
        ops = [self._delete(self._ledger_key(r)) if not led
               else self._put(self._ledger_key(r), json.dumps(led, sort_keys=True))
               for r, led in new.items()]
        return compare, ops

    def _txn(self, compare: list[dict[str, Any]], ops: list[dict[str, Any]]) -> bool:
        txn = {"compare": compare, "success": ops, "failure": []}
        result = self._call(lambda c: c.transaction(txn))
        return bool(result.get("succeeded", False))

    def commit_booking(self, snap: Snapshot, assembly: Assembly) -> bool:
        compare, ops = self._ledger_ops(snap, ledgers_after_booking(snap, assembly))
        compare.append({"key": _b64(self._asm_key(assembly.id)), "result": "EQUAL",
                        "target": "CREATE", "create_revision": 0})
        for node in sorted(assembly.nodes()):
            if node in snap.node_versions:  # alive and unchanged (not gone down since)
                compare.append(self._mod_equal(self._node_key(node), snap.node_versions[node]))
            else:  # still alive (its key exists)
                compare.append({"key": _b64(self._node_key(node)), "result": "GREATER",
                                "target": "VERSION", "version": 0})
        ops.append(self._put(self._asm_key(assembly.id), json.dumps(assembly.to_dict())))
        return self._txn(compare, ops)

    def commit_release(self, snap: Snapshot, assembly: Assembly) -> bool:
        compare, ops = self._ledger_ops(snap, ledgers_after_release(snap, assembly))
        compare.append(self._mod_equal(self._asm_key(assembly.id),
                                       snap.assembly_versions.get(assembly.id, 0)))
        ops.append(self._delete(self._asm_key(assembly.id)))
        return self._txn(compare, ops)

    def update_assembly(self, assembly: Assembly) -> bool:
        key = self._asm_key(assembly.id)
        compare = [{"key": _b64(key), "result": "GREATER", "target": "VERSION", "version": 0}]
        return self._txn(compare, [self._put(key, json.dumps(assembly.to_dict()))])

    def close(self) -> None:
        for c in self._clients:
            c.session.close()
