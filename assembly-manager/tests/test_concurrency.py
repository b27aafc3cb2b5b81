"""Concurrent bookers never over-book: 10 VMs x 4 vGPUs at once over a simulated 3-node
cluster, and a hypothesis property over random requests, releases and node deaths. Every
booker is its own registry client (own connection / own file descriptor), on a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mearas_am import booking
from mearas_am.errors import NoCapacityError
from mearas_am.model import Assembly, AssemblyRequest
from mearas_am.policies import POLICIES
from mearas_am.registry import Registry
from mearas_am.registry.base import ledger_key

from .conftest import GiB, make_profile, registry_factory
from .etcd_harness import EtcdCluster

NODES = ("a", "b", "c")
GPUS_PER_NODE = 4
FACTOR = 2  # 3 nodes x 4 GPUs x 2 = 24 vGPU slots


def check_invariants(reg: Registry) -> None:
    snap = reg.snapshot()
    expected: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for a in snap.assemblies.values():
        for v in a.vgpus:
            expected[(v.node, v.gpu_index)][ledger_key(a.id, v.ordinal)] = v.memory_quota_bytes
    actual = {(r.node, r.index): led for r, led in snap.ledgers.items() if led}
    assert actual == dict(expected), "ledgers and assembly records disagree"
    for (node, idx), led in actual.items():
        prof = make_profile(node, gpus=GPUS_PER_NODE, factor=FACTOR)
        gpu = prof.gpu(idx)
        assert gpu is not None
        assert len(led) <= FACTOR, f"{node}:{idx} holds {len(led)} vGPUs > {FACTOR}"
        assert sum(led.values()) <= gpu.static.memory_bytes, f"{node}:{idx} memory over-booked"


@dataclass
class Outcome:
    booked: list[Assembly]
    refused: int
    other_errors: list[BaseException]


def book_concurrently(make_reg: Callable[[], Registry], requests: list[AssemblyRequest],
                      origin_of: list[str], releases: tuple[str, ...] = ()) -> Outcome:
    """Books REQUESTS (and releases RELEASES) all at once, each on its own thread and client."""
    out = Outcome([], 0, [])
    lock = threading.Lock()
    barrier = threading.Barrier(len(requests) + len(releases))

    def one(i: int) -> None:
        reg = make_reg()
        try:
            barrier.wait()
            if i >= len(requests):
                assert booking.release(reg, releases[i - len(requests)]) is not None
                return
            a = booking.book(reg, requests[i], f"vm:vm{i}", origin_of[i])
            with lock:
                out.booked.append(a)
        except NoCapacityError:
            with lock:
                out.refused += 1
        except BaseException as e:  # noqa: BLE001 - reported by the test
            with lock:
                out.other_errors.append(e)
        finally:
            reg.close()

    threads = [threading.Thread(target=one, args=(i,))
               for i in range(len(requests) + len(releases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def publish_cluster(reg: Registry) -> None:
    for n in NODES:
        reg.publish_node(make_profile(n, gpus=GPUS_PER_NODE, factor=FACTOR))


@pytest.mark.parametrize("policy", ["spread", "local-first", "pack"])
def test_ten_vms_of_four_vgpus(backend: str, policy: str, tmp_path: Path,
                               etcd: EtcdCluster) -> None:
    make = registry_factory(backend, tmp_path, etcd)
    reg = make()
    publish_cluster(reg)
    reqs = [AssemblyRequest(vgpus=4, policy=policy) for _ in range(10)]
    out = book_concurrently(make, reqs, [NODES[i % 3] for i in range(10)])
    assert not out.other_errors, out.other_errors
    assert len(out.booked) == 6 and out.refused == 4  # 24 slots / 4 = 6 fit exactly
    assert len({a.id for a in out.booked}) == 6
    check_invariants(reg)
    used = {(v.node, v.gpu_index, a.id, v.ordinal) for a in out.booked for v in a.vgpus}
    assert len(used) == 24


request_st = st.builds(
    AssemblyRequest,
    vgpus=st.integers(1, 4),
    policy=st.sampled_from([p for p in POLICIES if p != "exact"]),
    memory_per_vgpu=st.sampled_from([None, 10 * GiB, 30 * GiB, 50 * GiB]),
)
scenario_st = st.fixed_dictionaries({
    "first": st.lists(request_st, min_size=10, max_size=10),
    "release": st.lists(st.booleans(), min_size=10, max_size=10),
    "dead": st.sampled_from([None, "a", "b", "c"]),
    "second": st.lists(request_st, min_size=1, max_size=10),
})


def run_scenario(make: Callable[[], Registry], sc: dict[str, Any]) -> None:
    reg = make()
    publish_cluster(reg)
    origins = [NODES[i % 3] for i in range(10)]
    out = book_concurrently(make, sc["first"], origins)
    assert not out.other_errors, out.other_errors
    check_invariants(reg)
    if sc["dead"]:
        reg.withdraw_node(sc["dead"])  # what an expired lease does, at once
    releases = tuple(a.id for a, rel in zip(sorted(out.booked, key=lambda a: a.id),
                                            sc["release"]) if rel)
    out2 = book_concurrently(make, sc["second"], origins[:len(sc["second"])], releases)
    assert not out2.other_errors, out2.other_errors
    for a in out2.booked:
        assert sc["dead"] not in a.nodes(), "booked on a dead node"
    check_invariants(reg)
    assert len(booking.list_assemblies(reg)) == len(out.booked) - len(releases) + len(out2.booked)
    degraded = [a for a in booking.list_assemblies(reg) if a.state == "degraded"]
    assert all(sc["dead"] in a.nodes() for a in degraded)
    assert {a.id for a in degraded} == {a.id for a in booking.list_assemblies(reg)
                                       if sc["dead"] in a.nodes()}


SETTINGS = settings(max_examples=15, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(sc=scenario_st)
def test_property_never_overbooks_etcd(sc: dict[str, Any], tmp_path: Path,
                                       etcd: EtcdCluster) -> None:
    run_scenario(registry_factory("etcd", tmp_path, etcd), sc)


@SETTINGS
@given(sc=scenario_st)
def test_property_never_overbooks_file(sc: dict[str, Any], tmp_path: Path) -> None:
    run_scenario(registry_factory("file", tmp_path, None), sc)
