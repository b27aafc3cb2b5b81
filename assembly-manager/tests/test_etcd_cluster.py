"""A 3-member etcd cluster on loopback: bookings stay exact while a member dies, and a node
whose lease expires disappears with its assemblies reported degraded."""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mearas_am import booking
from mearas_am.model import AssemblyRequest
from mearas_am.registry import EtcdRegistry, Registry

from .conftest import make_profile
from .etcd_harness import EtcdCluster
from .test_concurrency import NODES, book_concurrently, check_invariants, publish_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[EtcdCluster]:
    base = Path(tempfile.mkdtemp(prefix="mearas-etcd3-", dir="/dev/shm"))
    c = EtcdCluster(base, 3)
    c.start()
    yield c
    c.stop()


def rotating_factory(c: EtcdCluster, prefix: str, alive: list[int]
                     ) -> tuple[Iterator[int], Callable[[], Registry]]:
    """Clients whose endpoint lists start at a different member each."""
    counter = itertools.count()

    def make() -> Registry:
        i = next(counter)
        eps = [c.members[j].endpoint for j in alive]
        k = i % len(eps)
        return EtcdRegistry(tuple(eps[k:] + eps[:k]), prefix, 10, timeout=3)
    return counter, make


def test_cluster_booking_survives_member_loss(cluster: EtcdCluster) -> None:
    prefix = "/cluster-a/"
    all_eps = cluster.endpoints
    reg = EtcdRegistry(all_eps, prefix, 10, timeout=3)
    publish_cluster(reg)
    _, make = rotating_factory(cluster, prefix, [0, 1, 2])
    out = book_concurrently(make, [AssemblyRequest(vgpus=4, policy="spread")] * 10,
                            [NODES[i % 3] for i in range(10)])
    assert not out.other_errors and len(out.booked) == 6
    check_invariants(reg)
    cluster.kill_member(cluster.members[0])  # clients listing member 0 first must fail over
    for a in out.booked[:3]:
        assert booking.release(reg, a.id) is not None
    _, make = rotating_factory(cluster, prefix, [0, 1, 2])  # still names the dead member
    out2 = book_concurrently(make, [AssemblyRequest(vgpus=4, policy="pack")] * 5,
                             [NODES[i % 3] for i in range(5)])
    assert not out2.other_errors, out2.other_errors
    assert len(out2.booked) == 3 and out2.refused == 2
    check_invariants(reg)
    cluster.start_member(cluster.members[0])
    cluster.wait_healthy(cluster.members[0])
    only0 = EtcdRegistry((cluster.members[0].endpoint,), prefix, 10)
    assert len(booking.list_assemblies(only0)) == 6  # the restarted member caught up


def test_cluster_lease_expiry_degrades(cluster: EtcdCluster) -> None:
    prefix = "/cluster-b/"
    agent_a = EtcdRegistry(cluster.endpoints, prefix, 2)
    agent_b = EtcdRegistry(cluster.endpoints[::-1], prefix, 2)
    agent_a.publish_node(make_profile("a"))
    agent_b.publish_node(make_profile("b"))
    asm = booking.book(agent_a, AssemblyRequest(vgpus=2, policy="spread", nodes=("b",)),
                       "vm:x", "a")
    assert booking.list_assemblies(agent_a)[0].state == "booked"
    t0 = time.monotonic()
    while "b" in agent_a.snapshot().nodes:  # agent b stopped refreshing: its lease runs out
        agent_a.publish_node(make_profile("a"))
        assert time.monotonic() - t0 < 10, "lease of b never expired"
        time.sleep(0.2)
    (listed,) = booking.list_assemblies(agent_a)
    assert listed.id == asm.id and listed.state == "degraded" and listed.lost_nodes == ("b",)
    assert "a" in agent_a.snapshot().nodes  # refreshed lease kept a alive
    agent_b.publish_node(make_profile("b"))  # b comes back: new lease, bookings still counted
    assert booking.list_assemblies(agent_a)[0].state == "booked"
