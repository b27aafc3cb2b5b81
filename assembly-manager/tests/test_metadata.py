"""Parsing the <mearas:assembly> request out of domain XML, including vm-configs examples."""

from pathlib import Path

import pytest

from mearas_am.config import DEFAULT_VM
from mearas_am.errors import RequestError
from mearas_am.metadata import parse_domain
from mearas_am.model import AssemblyRequest, GpuRef
from mearas_am.policies import compose
from mearas_am.registry.base import Snapshot
from mearas_am.vmdomain import vm_request

from .conftest import make_profile

VM_CONFIGS = Path(__file__).resolve().parents[2] / "vm-configs"
NS = 'xmlns:mearas="https://mearas.dev/xmlns/assembly/1"'


def dom(attrs: str) -> str:
    return (f"<domain type='qemu'><name>vm1</name><metadata><mearas:assembly {NS} {attrs}/>"
            "</metadata></domain>")


def test_full_request() -> None:
    name, req = parse_domain(dom(
        'vgpus="4" policy="spread" memory-per-vgpu="8GiB" min-compute-capability="8.6" '
        'local-only="no" max-remote="2" nodes="a, b"'))
    assert name == "vm1"
    assert req == AssemblyRequest(vgpus=4, policy="spread", memory_per_vgpu=8 << 30,
                                  min_cc=(8, 6), local_only=False, max_remote=2,
                                  nodes=("a", "b"))


def test_defaults_and_exact() -> None:
    _, req = parse_domain(dom('vgpus="2"'))
    assert req is not None and req.policy == "local-first" and req.memory_per_vgpu is None
    _, req = parse_domain(dom('vgpus="2" policy="exact" placement="a:0,b:1"'))
    assert req is not None and req.placement == (GpuRef("a", 0), GpuRef("b", 1))


def test_no_metadata() -> None:
    assert parse_domain("<domain><name>x</name></domain>") == ("x", None)
    other_ns = "<domain><name>x</name><metadata><foo xmlns='urn:x'/></metadata></domain>"
    assert parse_domain(other_ns) == ("x", None)


@pytest.mark.parametrize("attrs,msg", [
    ('policy="spread"', "vgpus is required"),
    ('vgpus="2" local-only="maybe"', "expected yes/no"),
    ('vgpus="2" memory-per-vgpu="lots"', "bad size"),
    ('vgpus="2" min-compute-capability="x"', "compute capability"),
    ('vgpus="2" placement="a0"', "NODE:INDEX"),
    ('vgpus="99"', "between 1 and 64"),
    ('vgpus="2" policy="exact" placement="a:0"', "one GPU per vGPU"),
])
def test_bad_metadata(attrs: str, msg: str) -> None:
    with pytest.raises(RequestError, match=msg):
        parse_domain(dom(attrs))


def test_bad_xml() -> None:
    with pytest.raises(RequestError, match="does not parse"):
        parse_domain("<domain><name>")


@pytest.mark.parametrize("path", sorted(VM_CONFIGS.glob("assembly-*.xml")),
                         ids=lambda p: p.name)
def test_vm_config_examples_compose(path: Path) -> None:
    name, req = parse_domain(path.read_text())
    assert req is not None and name.startswith("mearas-")
    nodes = {n: make_profile(n) for n in ("node-a", "node-b", "node-c")}
    snap = Snapshot(nodes=nodes, ledgers={}, versions={}, assemblies={})
    cand = compose(snap, req, "node-a")[0]
    assert len(cand) == req.vgpus


def test_vm_config_examples_exist() -> None:
    assert len(list(VM_CONFIGS.glob("assembly-*.xml"))) >= 4


@pytest.mark.parametrize("path", sorted(VM_CONFIGS.glob("*.xml")), ids=lambda p: p.name)
def test_vm_config_examples_device_agrees(path: Path) -> None:
    """Every example with assembly metadata has the <shmem> device the hook requires (the
    default [vm] socket_dir); the --vm example (mearas-vm.xml) has neither."""
    text = path.read_text()
    want = vm_request(DEFAULT_VM, text)
    if path.name == "mearas-vm.xml":
        assert want is None
        return
    assert want is not None and want.socket == f"/run/mearas/vm/{want.domain}.sock"
    assert want.shared_memory >= 256 << 20


def test_mismatched_device_named() -> None:
    text = (VM_CONFIGS / "assembly-spread.xml").read_text()
    with pytest.raises(RequestError, match="has <msi vectors='1'>, mearasd serves 2"):
        vm_request(DEFAULT_VM, text.replace("vectors='2'", "vectors='1'"))
    with pytest.raises(RequestError, match="model ivshmem-plain, mearas needs ivshmem-doorbell"):
        vm_request(DEFAULT_VM, text.replace("'ivshmem-doorbell'", "'ivshmem-plain'"))
    with pytest.raises(RequestError, match="two <shmem> devices|2 <shmem> devices"):
        dev = text[text.index("<shmem name"):text.index("</shmem>") + 8]
        vm_request(DEFAULT_VM, text.replace(dev, dev + dev))
