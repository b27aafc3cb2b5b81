"""Registry semantics, run against both backends (file store, and a real etcd member)."""

import dataclasses
import time
from pathlib import Path

import pytest

from mearas_am import booking
from mearas_am.errors import NoCapacityError, RegistryError
from mearas_am.model import ASSEMBLY_DEGRADED, AssemblyRequest
from mearas_am.registry import EtcdRegistry, FileRegistry

from .conftest import make_profile, new_registry
from .etcd_harness import EtcdCluster


def test_publish_and_snapshot(backend: str, tmp_path: Path, etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd)
    reg.publish_node(make_profile("a"))
    reg.publish_node(make_profile("b", gpus=4))
    snap = reg.snapshot()
    assert sorted(snap.nodes) == ["a", "b"]
    assert len(snap.nodes["b"].gpus) == 4
    assert snap.nodes["a"] == make_profile("a").__class__.from_dict(snap.nodes["a"].to_dict())
    reg.withdraw_node("a")
    assert sorted(reg.snapshot().nodes) == ["b"]


def test_book_release_and_capacity(backend: str, tmp_path: Path, etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd)
    reg.publish_node(make_profile("a"))  # 2 GPUs x 2 vGPUs
    a1 = booking.book(reg, AssemblyRequest(vgpus=3), "vm:one", "a")
    assert len(a1.vgpus) == 3
    a2 = booking.book(reg, AssemblyRequest(vgpus=1), "vm:two", "a")
    with pytest.raises(NoCapacityError, match="0 free vGPU slot"):
        booking.book(reg, AssemblyRequest(vgpus=1), "vm:three", "a")
    listed = booking.list_assemblies(reg)
    assert [a.id for a in listed] == [a1.id, a2.id]
    assert booking.list_assemblies(reg, "vm:two")[0].id == a2.id
    assert booking.release(reg, a1.id) == a1
    assert booking.release(reg, a1.id) is None
    snap = reg.snapshot()
    assert sum(len(led) for led in snap.ledgers.values()) == 1
    booking.book(reg, AssemblyRequest(vgpus=3), "vm:three", "a")


def test_stale_snapshot_commit_is_refused(backend: str, tmp_path: Path,
                                          etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd)
    reg.publish_node(make_profile("a", gpus=1, factor=1))
    stale = reg.snapshot()
    booking.book(reg, AssemblyRequest(vgpus=1), "vm:first", "a")
    from mearas_am.model import Assembly, VgpuPlacement
    late = Assembly("late", "vm:late", "a", "spread",
                    (VgpuPlacement(0, "a", 0, 1 << 30, ""),), time.time())
    assert reg.commit_booking(stale, late) is False  # the GPU's ledger moved on
    assert len(booking.list_assemblies(reg)) == 1


def test_booking_on_dead_node_is_refused(backend: str, tmp_path: Path,
                                         etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd)
    reg.publish_node(make_profile("a"))
    reg.publish_node(make_profile("b"))
    snap = reg.snapshot()
    reg.withdraw_node("b")
    from mearas_am.model import Assembly, VgpuPlacement
    a = Assembly("x", "vm:x", "a", "spread", (VgpuPlacement(0, "b", 0, 1 << 30, "b:1"),),
                 time.time())
    assert reg.commit_booking(snap, a) is False


def test_node_gone_down_since_the_snapshot_is_not_booked(backend: str, tmp_path: Path,
                                                         etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd)
    reg.publish_node(make_profile("a"))
    snap = reg.snapshot()
    reg.publish_node(dataclasses.replace(make_profile("a"), down="no profile from mearasd"))
    from mearas_am.model import Assembly, VgpuPlacement
    a = Assembly("x", "vm:x", "a", "spread", (VgpuPlacement(0, "a", 0, 1 << 30, ""),),
                 time.time())
    assert reg.commit_booking(snap, a) is False
    with pytest.raises(NoCapacityError, match="node a is down: no profile from mearasd"):
        booking.book(reg, AssemblyRequest(vgpus=1), "vm:y", "a")
    assert booking.list_assemblies(reg) == []


def test_expired_node_disappears_and_assemblies_degrade(backend: str, tmp_path: Path,
                                                        etcd: EtcdCluster) -> None:
    reg = new_registry(backend, tmp_path, etcd, ttl=2)
    reg.publish_node(make_profile("a"))
    reg.publish_node(make_profile("b"))  # b: published once, never refreshed
    asm = booking.book(reg, AssemblyRequest(vgpus=6, policy="spread"), "vm:x", "a")
    assert {v.node for v in asm.vgpus} == {"a", "b"}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # keep a alive, let b's lease run out
        reg.publish_node(make_profile("a"))
        if "b" not in reg.snapshot().nodes:
            break
        time.sleep(0.3)
    assert sorted(reg.snapshot().nodes) == ["a"]
    (listed,) = booking.list_assemblies(reg)
    assert listed.state == ASSEMBLY_DEGRADED and listed.lost_nodes == ("b",)
    with pytest.raises(NoCapacityError):  # b's capacity is gone, a's is full
        booking.book(reg, AssemblyRequest(vgpus=1), "vm:y", "a")
    assert booking.release(reg, asm.id) is not None  # degraded ones can still be released
    booking.book(reg, AssemblyRequest(vgpus=4), "vm:y", "a")


def test_file_registry_corrupt_file(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text("{not json")
    with pytest.raises(RegistryError, match="corrupt"):
        FileRegistry(str(p), 10).snapshot()


def test_etcd_unreachable_is_a_clear_error() -> None:
    from .etcd_harness import free_port
    reg = EtcdRegistry((f"127.0.0.1:{free_port()}",), "/x/", 10, timeout=1)
    with pytest.raises(RegistryError, match="etcd unreachable"):
        reg.snapshot()
    with pytest.raises(RegistryError, match="bad etcd endpoint"):
        EtcdRegistry(("nohostport",), "/x/", 10)


def test_etcd_rejected_request_is_not_reported_as_unreachable(etcd: EtcdCluster) -> None:
    reg = EtcdRegistry(etcd.endpoints, "/x/", 10)
    with pytest.raises(RegistryError, match="refused a request"):
        reg._txn([{"key": "not base64!", "result": "BOGUS"}], [])


def test_file_registry_shows_lapsed_nodes_for_a_day(tmp_path: Path) -> None:
    now = [1000.0]
    reg = FileRegistry(str(tmp_path / "r.json"), 10, clock=lambda: now[0])
    reg.publish_node(make_profile("a"))
    now[0] += 11
    snap = reg.snapshot()
    assert snap.nodes == {} and snap.lapsed["a"][1] == 1000.0  # lapsed at its last heartbeat
    now[0] += 86400
    reg.publish_node(make_profile("b"))  # any write forgets nodes lapsed for a day
    assert "a" not in reg.snapshot().lapsed and "b" in reg.snapshot().nodes
