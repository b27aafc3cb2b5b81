"""A domain's mearas device: the <shmem> ivshmem-doorbell device on the domain's socket in
mearasd's VM directory ([vm] socket_dir = mearasd's --vm-dir). It must agree with the domain's
<mearas:assembly> metadata: the hook refuses a domain that has one without the other, or a
device on another socket, model or vector count. The size of the shared memory (the device's
BAR) is the server's to choose with ivshmem-doorbell (libvirt refuses a <size> there): it is the
metadata's shared-memory attribute (default 256MiB). `mearas vm attach/detach` edit both in the
persistent domain XML through libvirt (virsh)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from .config import VmConfig
from .errors import MearasError, RequestError
from .metadata import XMLNS, parse_domain
from .model import AssemblyRequest
from .units import parse_size

VECTORS = 2                      # mearasd's VM servers: a slot vector and a wake vector
MiB = 1 << 20
DEFAULT_SHARED_MEMORY = 256 * MiB
MIN_SHARED_MEMORY, MAX_SHARED_MEMORY = 4 * MiB, 1 << 40  # mearasd's AttachVm limits
URI = "qemu:///system"


def socket_path(vm: VmConfig, domain: str) -> str:
    """The domain's ivshmem socket: a file directly in socket_dir named after the domain
    (characters mearasd does not take in a socket name become '_')."""
    safe = re.sub(r"[^A-Za-z0-9._+-]", "_", domain)
    if safe.startswith("."):
        safe = "_" + safe[1:]
    return f"{vm.socket_dir}/{safe}.sock"


@dataclass(frozen=True)
class ShmemDevice:
    name: str
    model: str
    server: str
    vectors: int | None


def shmem_devices(root: ET.Element) -> list[ShmemDevice]:
    out = []
    for el in root.findall("devices/shmem"):
        model = el.find("model")
        server = el.find("server")
        msi = el.find("msi")
        vectors = msi.get("vectors") if msi is not None else None
        out.append(ShmemDevice(
            name=el.get("name", ""), model=model.get("type", "") if model is not None else "ivshmem",
            server=server.get("path", "") if server is not None else "",
            vectors=int(vectors) if vectors is not None and vectors.isdigit() else None))
    return out


@dataclass(frozen=True)
class VmRequest:
    domain: str
    request: AssemblyRequest
    socket: str
    shared_memory: int


def shared_memory_of(root: ET.Element) -> int:
    el = root.find(f"metadata/{{{XMLNS}}}assembly")
    text = el.get("shared-memory") if el is not None else None
    if text is None:
        return DEFAULT_SHARED_MEMORY
    try:
        size = parse_size(text)
    except ValueError as e:
        raise RequestError(f"mearas:assembly: shared-memory={text!r}: {e}") from None
    check_shared_memory(size, f"mearas:assembly: shared-memory={text!r}")
    return size


def check_shared_memory(size: int, what: str) -> None:
    if size & (size - 1) or not MIN_SHARED_MEMORY <= size <= MAX_SHARED_MEMORY:
        raise RequestError(f"{what}: the VM's shared memory must be a power of two of "
                           "4MiB..1TiB")


def vm_request(vm: VmConfig, xml_text: str) -> VmRequest | None:
    """What the hook gives mearasd for the domain, or None when it is not a mearas VM;
    RequestError naming any disagreement between the metadata and the device."""
    name, req, dev = check_domain(vm, xml_text)
    if req is None or dev is None:
        return None
    return VmRequest(name, req, dev.server, shared_memory_of(ET.fromstring(xml_text)))


def check_domain(vm: VmConfig, xml_text: str) -> tuple[str, AssemblyRequest | None,
                                                       ShmemDevice | None]:
    """(name, request, device): both or neither; RequestError naming any disagreement."""
    name, req = parse_domain(xml_text)
    root = ET.fromstring(xml_text)
    want = socket_path(vm, name)
    ours = [d for d in shmem_devices(root)
            if d.server == want or d.server.startswith(vm.socket_dir + "/")]
    if req is None:
        if ours:
            raise RequestError(
                f"domain {name} has a mearas <shmem> device (server {ours[0].server}) but no "
                f"mearas:assembly metadata: its guest would get no vGPU (`mearas vm attach {name} "
                "--vgpus N` adds the metadata, `mearas vm detach` removes both)")
        return name, None, None
    if not ours:
        raise RequestError(
            f"domain {name} asks for {req.vgpus} vGPU(s) (mearas:assembly) but has no <shmem> "
            f"ivshmem-doorbell device on {want}: its guest would see none (`mearas vm attach "
            f"{name} --vgpus {req.vgpus}` adds both)")
    if len(ours) > 1:
        raise RequestError(f"domain {name} has {len(ours)} <shmem> devices on mearas sockets "
                           f"({', '.join(d.server for d in ours)}); it needs exactly one")
    d = ours[0]
    if d.server != want:
        raise RequestError(f"domain {name}: <shmem name='{d.name}'> serves on {d.server}, but "
                           f"mearasd serves this domain on {want}")
    if d.model != "ivshmem-doorbell":
        raise RequestError(f"domain {name}: <shmem name='{d.name}'> has model {d.model}, "
                           "mearas needs ivshmem-doorbell")
    if d.vectors != VECTORS:
        raise RequestError(f"domain {name}: <shmem name='{d.name}'> has <msi vectors='"
                           f"{d.vectors if d.vectors is not None else ''}'>, mearasd serves "
                           f"{VECTORS}")
    return name, req, d


def shmem_xml(vm: VmConfig, domain: str) -> str:
    el = ET.Element("shmem", name=f"mearas-{domain}")
    ET.SubElement(el, "model", type="ivshmem-doorbell")
    ET.SubElement(el, "server", path=socket_path(vm, domain))
    ET.SubElement(el, "msi", vectors=str(VECTORS), ioeventfd="on")
    return ET.tostring(el, encoding="unicode")


def metadata_xml(req: AssemblyRequest, shared_memory: int) -> str:
    """The <assembly> element `virsh metadata --set` stores under XMLNS."""
    a = {"vgpus": str(req.vgpus), "policy": req.policy,
         "shared-memory": f"{shared_memory >> 20}MiB"}
    if req.memory_per_vgpu is not None:
        a["memory-per-vgpu"] = str(req.memory_per_vgpu)
    if req.min_cc is not None:
        a["min-compute-capability"] = f"{req.min_cc[0]}.{req.min_cc[1]}"
    if req.local_only:
        a["local-only"] = "yes"
    if req.max_remote is not None:
        a["max-remote"] = str(req.max_remote)
    if req.nodes:
        a["nodes"] = ",".join(req.nodes)
    if req.placement:
        a["placement"] = ",".join(str(p) for p in req.placement)
    return ET.tostring(ET.Element("assembly", a), encoding="unicode")


def _virsh(*args: str) -> str:
    try:
        r = subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True,
                           timeout=60)
    except FileNotFoundError:
        raise MearasError("virsh is not installed (libvirt-clients)") from None
    if r.returncode != 0:
        raise MearasError(f"virsh {args[0]} {args[1] if len(args) > 1 else ''}: "
                          f"{r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def _write_temp(text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(text)
        return f.name


def attach(vm: VmConfig, domain: str, req: AssemblyRequest, size: int) -> str:
    """Puts the metadata and the device into DOMAIN's persistent XML (replacing a mearas device
    there); the running domain, if any, changes at its next start. Returns the socket."""
    check_shared_memory(size, f"--shared-memory {size >> 20}MiB")
    xml_text = _virsh("dumpxml", "--inactive", domain)
    root = ET.fromstring(xml_text)
    for d in shmem_devices(root):
        if d.server.startswith(vm.socket_dir + "/"):
            _detach_device(domain, root, d)
    _virsh("metadata", domain, "--uri", XMLNS, "--key", "mearas", "--set", metadata_xml(req, size),
           "--config")
    path = _write_temp(shmem_xml(vm, domain))
    try:
        _virsh("attach-device", domain, path, "--config")
    finally:
        os.unlink(path)
    return socket_path(vm, domain)


def _detach_device(domain: str, root: ET.Element, d: ShmemDevice) -> None:
    for el in root.findall("devices/shmem"):
        if el.get("name", "") == d.name:
            path = _write_temp(ET.tostring(el, encoding="unicode"))
            try:
                _virsh("detach-device", domain, path, "--config")
            finally:
                os.unlink(path)


def detach(vm: VmConfig, domain: str) -> bool:
    """Removes the metadata and the mearas device from DOMAIN's persistent XML; False when it
    had neither."""
    root = ET.fromstring(_virsh("dumpxml", "--inactive", domain))
    had = root.find(f"metadata/{{{XMLNS}}}assembly") is not None
    for d in shmem_devices(root):
        if d.server.startswith(vm.socket_dir + "/"):
            _detach_device(domain, root, d)
            had = True
    if root.find(f"metadata/{{{XMLNS}}}assembly") is not None:
        _virsh("metadata", domain, "--uri", XMLNS, "--remove", "--config")
    return had
