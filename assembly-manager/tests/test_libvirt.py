"""`virsh start` through a real libvirtd with the mearas hook: assemblies are booked before
QEMU starts, released when the domain stops, and every failure makes `virsh start` fail
with mearas' message. 10 domains of 4 vGPUs start concurrently over a simulated 3-node
cluster (the randomized property runs against the registry, in test_concurrency.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mearas_am import booking
from mearas_am.config import load_config
from mearas_am.registry import EtcdRegistry, FileRegistry, Registry
from mearas_am.vmdomain import vm_request

from .conftest import make_profile, write_config
from .etcd_harness import EtcdCluster, free_port
from .fake_mearasd import FakeMearasd
from .test_concurrency import check_invariants
from .libvirt_harness import PKG_ROOT, VM_DIR, Libvirt, domain_xml, shmem_xml, virsh

PREFIX = "mearas-test-"


@pytest.fixture(scope="module")
def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="mearas-lv-"))


@pytest.fixture(scope="module")
def libvirt(workdir: Path) -> Iterator[Libvirt]:
    hook_cfg = workdir / "hook.toml"
    write_config(hook_cfg, vm_dir=VM_DIR)
    lv = Libvirt(hook_cfg)
    try:
        lv.start()
        yield lv
    finally:
        lv.stop(PREFIX)


@pytest.fixture
def mearasd(workdir: Path) -> Iterator[FakeMearasd]:
    srv = FakeMearasd(str(workdir / f"control-{uuid.uuid4().hex[:6]}.sock"), "node-a").start()
    yield srv
    srv.close()


def define(name: str, attrs: str | None, shmem: str | None = None) -> str:
    full = PREFIX + name
    path = Path(tempfile.mkstemp(suffix=".xml")[1])
    path.write_text(domain_xml(full, attrs, shmem))
    virsh("define", str(path), check=True)
    return full


def etcd_cluster_registry(lv: Libvirt, etcd: EtcdCluster, sock: str,
                          gpus: int = 2) -> Registry:
    """Hook config for node-a on etcd; nodes a, b, c (GPUS GPUs x 2 vGPUs each) published."""
    prefix = f"/lv-{uuid.uuid4().hex[:6]}/"
    write_config(lv.hook_config, backend="etcd", endpoints=etcd.endpoints, prefix=prefix,
                 socket_path=sock, vm_dir=VM_DIR)
    reg = EtcdRegistry(etcd.endpoints, prefix, 120)
    for n in ("node-a", "node-b", "node-c"):
        reg.publish_node(make_profile(n, gpus=gpus))
    return reg


def test_ten_concurrent_vm_starts_never_overbook(libvirt: Libvirt, etcd: EtcdCluster,
                                                 mearasd: FakeMearasd) -> None:
    # 3 nodes x 4 GPUs x 2 vGPUs = 24 slots: exactly 6 of the 10 VMs of 4 vGPUs fit
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path, gpus=4)
    names = [define(f"vm{i}", 'vgpus="4" policy="spread"') for i in range(10)]
    results: dict[str, tuple[int, str]] = {}

    def start(n: str) -> None:
        r = virsh("start", n, timeout=180)
        results[n] = (r.returncode, r.stderr)

    threads = [threading.Thread(target=start, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(200)
    started = sorted(n for n, (rc, _) in results.items() if rc == 0)
    refused = {n: err for n, (rc, err) in results.items() if rc != 0}
    assert len(started) == 6 and len(refused) == 4, results
    for n, err in refused.items():
        assert f"mearas: cannot start domain {n}: " in err
        assert "cannot place 4 vGPU(s) with policy spread" in err
        assert "running" not in virsh("domstate", n).stdout
    running = set(virsh("list", "--name").stdout.split())
    assert set(started) <= running and not set(refused) & running
    asms = booking.list_assemblies(reg)
    assert sorted(a.owner for a in asms) == [f"vm:{n}" for n in started]
    assert all(a.state == "active" and len(a.vgpus) == 4 for a in asms)
    assert set(mearasd.assemblies) == {a.id for a in asms}  # instantiated on the socket
    # each started domain's QEMU is served on its own socket with its own assembly
    assert {d: aid for d, (aid, _) in mearasd.vms.items()} == \
        {a.owner.removeprefix("vm:"): a.id for a in asms}
    assert all((VM_DIR / f"{n}.sock").is_socket() for n in started)
    check_invariants(reg)
    snap = reg.snapshot()
    assert sorted(len(led) for led in snap.ledgers.values()) == [2] * 12  # 24 of 24 slots

    for n in started[:2]:
        virsh("destroy", n, check=True)
    assert len(booking.list_assemblies(reg)) == 4 and len(mearasd.assemblies) == 4
    late = list(refused)[:2]
    for n in late:  # the freed capacity takes two of the refused VMs
        assert virsh("start", n).returncode == 0
    for n in started[2:] + late:
        virsh("destroy", n, check=True)
    assert booking.list_assemblies(reg) == []
    assert mearasd.assemblies == {} and mearasd.vms == {}
    assert not any(VM_DIR.iterdir())


def test_embedded_registry_and_plain_domains(libvirt: Libvirt, workdir: Path,
                                             mearasd: FakeMearasd) -> None:
    regfile = workdir / f"reg-{uuid.uuid4().hex[:6]}.json"
    write_config(libvirt.hook_config, registry_path=regfile, socket_path=mearasd.path,
                 vm_dir=VM_DIR)
    reg = FileRegistry(str(regfile), 120)
    reg.publish_node(make_profile("node-a"))
    vm = define("embedded", 'vgpus="2" policy="local-first" memory-per-vgpu="16GiB" '
                            'min-compute-capability="8.0" local-only="yes"')
    plain = define("plain", None)
    assert virsh("start", vm).returncode == 0
    assert virsh("start", plain).returncode == 0  # no metadata: nothing booked
    (a,) = booking.list_assemblies(reg)
    assert a.owner == f"vm:{vm}" and {v.memory_quota_bytes for v in a.vgpus} == {16 << 30}
    meta = virsh("metadata", vm, "https://mearas.dev/xmlns/assembly/1").stdout
    assert 'vgpus="2"' in meta
    assert list(mearasd.vms) == [vm] and mearasd.vms[vm][0] == a.id
    assert mearasd.vms[vm][1].path == str(VM_DIR / f"{vm}.sock")
    # leftovers of a crashed run first, then book and serve; the plain domain asks nothing
    assert mearasd.requests == ["detach_vm", "instantiate", "attach_vm"]
    virsh("destroy", vm, check=True)
    virsh("destroy", plain, check=True)
    assert booking.list_assemblies(reg) == [] and mearasd.vms == {}
    assert mearasd.requests[3:] == ["detach_vm", "release"]  # the plain one's release: none


FAILURES = [
    ("badcount", 'vgpus="many"', "attribute vgpus='many': expected an integer"),
    ("badpolicy", 'vgpus="1" policy="random"', "unknown policy 'random'"),
    ("badattr", 'vgpus="1" colour="blue"', "unknown attribute(s) colour"),
    ("toomany", 'vgpus="13" policy="spread"', "cannot place 13 vGPU(s)"),
    ("oldgpu", 'vgpus="1" min-compute-capability="10.0"', "0 of 6 GPU(s)"),
    ("exact", 'vgpus="1" policy="exact" placement="node-z:0"', "GPU node-z:0 is not in"),
]


@pytest.mark.parametrize("name,attrs,message", FAILURES)
def test_bad_requests_fail_virsh_start(libvirt: Libvirt, etcd: EtcdCluster,
                                       mearasd: FakeMearasd, name: str, attrs: str,
                                       message: str) -> None:
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    vm = define(name, attrs)
    r = virsh("start", vm)
    assert r.returncode != 0 and "Hook script execution failed" in r.stderr
    assert f"mearas: cannot start domain {vm}: " in r.stderr and message in r.stderr
    assert booking.list_assemblies(reg) == [] and mearasd.assemblies == {}


def test_infrastructure_failures_fail_virsh_start(libvirt: Libvirt, etcd: EtcdCluster,
                                                  workdir: Path, mearasd: FakeMearasd) -> None:
    vm = define("infra", 'vgpus="2"')
    reg = etcd_cluster_registry(libvirt, etcd, str(workdir / "no-mearasd.sock"))
    r = virsh("start", vm)
    assert r.returncode != 0 and "is mearasd running?" in r.stderr
    assert "released" in r.stderr and booking.list_assemblies(reg) == []

    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    mearasd.refuse_instantiate = "remote link to node-b is down"
    r = virsh("start", vm)
    assert r.returncode != 0
    assert "ERROR_NO_RESOURCES: remote link to node-b is down" in r.stderr
    assert booking.list_assemblies(reg) == []
    mearasd.refuse_instantiate = None

    write_config(libvirt.hook_config, backend="etcd", endpoints=(f"127.0.0.1:{free_port()}",),
                 socket_path=mearasd.path, vm_dir=VM_DIR)
    r = virsh("start", vm)
    assert r.returncode != 0 and "etcd unreachable" in r.stderr

    libvirt.hook_config.write_text("[registry\nbackend=")
    r = virsh("start", vm)
    assert r.returncode != 0 and "cannot read config" in r.stderr

    assert "running" not in virsh("domstate", vm).stdout


MISMATCHES = [
    ("nodevice", 'vgpus="1"', "", "asks for 1 vGPU(s) (mearas:assembly) but has no <shmem> "
     "ivshmem-doorbell device on " + str(VM_DIR)),
    ("nometa", None, "S", "has a mearas <shmem> device (server " + str(VM_DIR)),
    ("vectors", 'vgpus="1"', "V1", "has <msi vectors='1'>, mearasd serves 2"),
    ("otherpath", 'vgpus="1"', "P", "serves on " + str(VM_DIR / "elsewhere.sock") +
     ", but mearasd serves this domain on"),
    ("oddsize", 'vgpus="1" shared-memory="6MiB"', "S",
     "shared-memory='6MiB': the VM's shared memory must be a power of two"),
]


@pytest.mark.parametrize("name,attrs,device,message", MISMATCHES)
def test_metadata_and_device_must_agree(libvirt: Libvirt, etcd: EtcdCluster,
                                        mearasd: FakeMearasd, name: str, attrs: str | None,
                                        device: str, message: str) -> None:
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    full = PREFIX + name
    shmem = {"": "", "S": shmem_xml(full), "V1": shmem_xml(full, vectors=1),
             "P": shmem_xml(full, path=str(VM_DIR / "elsewhere.sock"))}[device]
    vm = define(name, attrs, shmem)
    r = virsh("start", vm)
    assert r.returncode != 0 and f"mearas: cannot start domain {vm}: " in r.stderr
    assert message in r.stderr, r.stderr
    assert booking.list_assemblies(reg) == [] and mearasd.assemblies == {} and mearasd.vms == {}


def test_refused_attach_fails_start_and_releases(libvirt: Libvirt, etcd: EtcdCluster,
                                                 mearasd: FakeMearasd) -> None:
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    vm = define("noattach", 'vgpus="2"')
    mearasd.refuse_attach = "VM server cannot start: out of memory"
    r = virsh("start", vm)
    assert r.returncode != 0
    assert "ERROR_NO_RESOURCES: VM server cannot start: out of memory" in r.stderr
    assert "released" in r.stderr
    assert booking.list_assemblies(reg) == [] and mearasd.assemblies == {} and mearasd.vms == {}
    mearasd.refuse_attach = None
    assert virsh("start", vm).returncode == 0
    virsh("destroy", vm, check=True)
    assert booking.list_assemblies(reg) == [] and mearasd.vms == {}


def mearas(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mearas_am.cli", *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(PKG_ROOT)))


def test_vm_attach_and_detach_edit_the_domain(libvirt: Libvirt, etcd: EtcdCluster,
                                              mearasd: FakeMearasd) -> None:
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    vm = define("cli", None)
    cfg = str(libvirt.hook_config)
    r = mearas("--config", cfg, "vm", "attach", vm, "--vgpus", "2", "--memory", "8GiB",
               "--shared-memory", "8MiB")
    assert r.returncode == 0, r.stderr
    xml = virsh("dumpxml", "--inactive", vm, check=True).stdout
    want = vm_request(load_config(cfg).vm, xml)
    assert want is not None and (want.request.vgpus, want.request.memory_per_vgpu) == (2, 8 << 30)
    assert (want.socket, want.shared_memory) == (str(VM_DIR / f"{vm}.sock"), 8 << 20)
    assert virsh("start", vm).returncode == 0
    (a,) = booking.list_assemblies(reg)
    assert a.owner == f"vm:{vm}" and {v.memory_quota_bytes for v in a.vgpus} == {8 << 30}
    assert list(mearasd.vms) == [vm]
    virsh("destroy", vm, check=True)
    # attaching again replaces the request and the device, never adds a second one
    r = mearas("--config", cfg, "vm", "attach", vm, "--vgpus", "1", "--shared-memory", "4MiB")
    assert r.returncode == 0, r.stderr
    xml = virsh("dumpxml", "--inactive", vm, check=True).stdout
    assert xml.count("<shmem") == 1 and xml.count("vgpus=") == 1 and 'vgpus="1"' in xml
    r = mearas("--config", cfg, "vm", "detach", vm)
    assert r.returncode == 0 and "removed" in r.stdout, r.stderr
    xml = virsh("dumpxml", "--inactive", vm, check=True).stdout
    assert "<shmem" not in xml and "mearas.dev" not in xml
    assert virsh("start", vm).returncode == 0  # a plain domain now: nothing booked
    assert booking.list_assemblies(reg) == [] and mearasd.vms == {}
    virsh("destroy", vm, check=True)
    r = mearas("--config", cfg, "vm", "attach", "no-such-domain", "--vgpus", "1")
    assert r.returncode != 0 and "no-such-domain" in r.stderr


def test_qemu_crash_frees_everything(libvirt: Libvirt, etcd: EtcdCluster,
                                     mearasd: FakeMearasd) -> None:
    """QEMU killed under a running domain: libvirt runs the release hook, which detaches the
    VM and releases its assembly."""
    reg = etcd_cluster_registry(libvirt, etcd, mearasd.path)
    vm = define("crash", 'vgpus="2"')
    assert virsh("start", vm).returncode == 0
    assert len(booking.list_assemblies(reg)) == 1 and list(mearasd.vms) == [vm]
    pid = int(Path(f"/run/libvirt/qemu/{vm}.pid").read_text().strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while (mearasd.vms or booking.list_assemblies(reg)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "running" not in virsh("domstate", vm).stdout
    assert booking.list_assemblies(reg) == [] and mearasd.vms == {} and mearasd.assemblies == {}
    assert not (VM_DIR / f"{vm}.sock").exists()
