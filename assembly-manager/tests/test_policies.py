import random
from collections import Counter

import pytest

from mearas_am.errors import NoCapacityError, RequestError
from mearas_am.model import AssemblyRequest, GpuRef
from mearas_am.policies import compose
from mearas_am.registry.base import Snapshot

from .conftest import GiB, make_profile


def snap(**ledgers: dict[str, int]) -> Snapshot:
    nodes = {n: make_profile(n) for n in ("a", "b", "c")}
    nodes["c"] = make_profile("c", cc=(8, 0))
    led = {GpuRef.parse(k.replace("_", ":")): v for k, v in ledgers.items()}
    return Snapshot(nodes=nodes, ledgers=led, versions={}, assemblies={})


def gpus_of(cand: list) -> Counter[tuple[str, int]]:  # type: ignore[type-arg]
    return Counter((v.node, v.gpu_index) for v in cand)


def test_local_first_fills_local_then_spills() -> None:
    cands = compose(snap(), AssemblyRequest(vgpus=6, policy="local-first"), "a")
    c = cands[0]
    local = [v for v in c if v.node == "a"]
    assert len(local) == 4  # 2 GPUs x factor 2
    assert all(v.remote_address == "" for v in local)
    remote = [v for v in c if v.node != "a"]
    assert len(remote) == 2 and all(v.remote_address.endswith(":7100") for v in remote)
    assert [v.ordinal for v in c] == list(range(6))


def test_spread_uses_least_loaded() -> None:
    s = snap(a_0={"x/0": 40 * GiB, "x/1": 40 * GiB}, a_1={"y/0": 40 * GiB})
    c = compose(s, AssemblyRequest(vgpus=4, policy="spread"), "a")[0]
    got = gpus_of(c)
    assert ("a", 0) not in got and ("a", 1) not in got  # the loaded GPUs are avoided
    assert max(got.values()) == 1  # one vGPU per GPU while empty GPUs remain


def test_pack_uses_fewest_gpus() -> None:
    c = compose(snap(), AssemblyRequest(vgpus=4, policy="pack"), "b")[0]
    assert set(gpus_of(c).values()) == {2}
    assert {v.node for v in c} == {"b"}


def test_pack_fills_partially_used_gpu_first() -> None:
    s = snap(c_1={"x/0": 40 * GiB})
    c = compose(s, AssemblyRequest(vgpus=1, policy="pack"), "a")[0]
    assert (c[0].node, c[0].gpu_index) == ("c", 1)


def test_constraints() -> None:
    s = snap()
    c = compose(s, AssemblyRequest(vgpus=4, policy="spread", min_cc=(9, 0)), "a")[0]
    assert all(v.node != "c" for v in c)
    c = compose(s, AssemblyRequest(vgpus=2, policy="spread", nodes=("c",)), "a")[0]
    assert {v.node for v in c} == {"c"}
    c = compose(s, AssemblyRequest(vgpus=5, policy="spread", max_remote=1), "a")[0]
    assert sum(v.node != "a" for v in c) == 1
    c = compose(s, AssemblyRequest(vgpus=2, policy="spread", memory_per_vgpu=10 * GiB), "a")[0]
    assert all(v.memory_quota_bytes == 10 * GiB for v in c)
    with pytest.raises(NoCapacityError, match="1 remote"):
        compose(s, AssemblyRequest(vgpus=6, policy="spread", max_remote=1), "a")
    with pytest.raises(NoCapacityError, match="0 of 6 GPU"):
        compose(s, AssemblyRequest(vgpus=1, policy="spread", local_only=True), "z")


def test_memory_quota_limits_sharing() -> None:
    # 60 GiB per vGPU: only one vGPU per 80 GiB GPU although the factor is 2
    c = compose(snap(), AssemblyRequest(vgpus=6, policy="spread", memory_per_vgpu=60 * GiB),
                "a")[0]
    assert max(gpus_of(c).values()) == 1
    with pytest.raises(NoCapacityError):
        compose(snap(), AssemblyRequest(vgpus=7, memory_per_vgpu=60 * GiB), "a")


def test_exact() -> None:
    req = AssemblyRequest(vgpus=2, policy="exact",
                          placement=(GpuRef("b", 1), GpuRef("b", 1)))
    c = compose(snap(), req, "a")
    assert len(c) == 1 and gpus_of(c[0]) == Counter({("b", 1): 2})
    full = snap(b_1={"x/0": 40 * GiB, "x/1": 40 * GiB})
    with pytest.raises(NoCapacityError, match="GPU b:1 is full"):
        compose(full, AssemblyRequest(vgpus=1, policy="exact", placement=(GpuRef("b", 1),)), "a")
    with pytest.raises(NoCapacityError, match="not in the registry"):
        compose(snap(), AssemblyRequest(vgpus=1, policy="exact", placement=(GpuRef("q", 0),)),
                "a")
    with pytest.raises(RequestError, match="one GPU per vGPU"):
        compose(snap(), AssemblyRequest(vgpus=2, policy="exact", placement=(GpuRef("a", 0),)),
                "a")


def test_candidates_are_equivalent_and_distinct() -> None:
    cands = compose(snap(), AssemblyRequest(vgpus=2, policy="spread"), "elsewhere",
                    rng=random.Random(1))
    assert len(cands) > 1
    sigs = {tuple(sorted(gpus_of(c).items())) for c in cands}
    assert len(sigs) == len(cands)
    for c in cands:  # spread on an empty cluster: always two distinct GPUs
        assert max(gpus_of(c).values()) == 1


@pytest.mark.parametrize("req,msg", [
    (AssemblyRequest(vgpus=0), "between 1 and"),
    (AssemblyRequest(vgpus=2, policy="roundrobin"), "unknown policy"),
    (AssemblyRequest(vgpus=2, memory_per_vgpu=0), "positive"),
])
def test_bad_requests(req: AssemblyRequest, msg: str) -> None:
    with pytest.raises(RequestError, match=msg):
        compose(snap(), req, "a")


def test_no_nodes() -> None:
    empty = Snapshot(nodes={}, ledgers={}, versions={}, assemblies={})
    with pytest.raises(NoCapacityError, match="no live nodes"):
        compose(empty, AssemblyRequest(vgpus=1), "a")
