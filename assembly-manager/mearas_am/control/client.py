"""Client side of the mearasd control protocol, behind the MearasdClient interface."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.message import DecodeError

from .. import PROTOCOL_MAJOR, PROTOCOL_MINOR, __version__
from ..errors import MearasdError
from ..model import (Assembly, GpuLoad, GpuProfile, GpuStatic, LinkServer, MearasdProfile,
                     VgpuLoad, VgpuPlacement)
from .framing import FramingError, recv_frame, send_frame
from .pb import common_pb2, control_pb2



class MearasdClient(Protocol):
    """What the manager needs from mearasd; tests may supply another implementation."""

    def hello(self) -> tuple[str, tuple[int, int]]: ...
    def get_profile(self) -> tuple[str, list[GpuProfile]]: ...
    def profile(self) -> MearasdProfile: ...
    def instantiate(self, assembly: Assembly) -> None: ...
    def release(self, assembly_id: str) -> None: ...
    def list_assemblies(self) -> list[tuple[str, str, list[VgpuPlacement]]]: ...
    def attachments(self) -> dict[str, list[tuple[int, str]]]: ...
    def attach_vm(self, vm: VmAttachment) -> tuple[int, int]: ...
    def detach_vm(self, domain: str) -> None: ...


@dataclass(frozen=True)
class VmAttachment:
    """What mearasd needs to serve a domain's QEMU: its ivshmem-doorbell socket (a file in
    mearasd's --vm-dir), the shared memory size (the <shmem> <size>), and the user QEMU runs as."""
    domain: str
    assembly_id: str
    socket: str
    bar_size_bytes: int
    qemu_uid: int = 0
    qemu_gid: int = 0


def vgpu_spec(v: VgpuPlacement) -> control_pb2.VgpuSpec:
    return control_pb2.VgpuSpec(ordinal=v.ordinal, node=v.node, gpu_index=v.gpu_index,
                                memory_quota_bytes=v.memory_quota_bytes,
                                remote_address=v.remote_address)


def identity_message(identity: str) -> control_pb2.Identity:
    """"uid:<N>" / "vm:<domain>" -> the Identity mearasd binds the assembly to."""
    kind, _, value = identity.partition(":")
    if kind == "uid" and value.isdigit():
        return control_pb2.Identity(uid=int(value))
    if kind == "vm" and value:
        return control_pb2.Identity(vm=value)
    raise MearasdError(f"assembly has no usable identity ({identity!r}): expected uid:<N> or "
                       "vm:<domain> (booked by an older manager? release and book it again)")


def identity_of(m: control_pb2.Identity) -> str:
    who = m.WhichOneof("who")
    return f"uid:{m.uid}" if who == "uid" else f"vm:{m.vm}" if who == "vm" else ""


def placement_of(s: control_pb2.VgpuSpec) -> VgpuPlacement:
    return VgpuPlacement(s.ordinal, s.node, s.gpu_index, s.memory_quota_bytes, s.remote_address)


class SocketMearasdClient:
    """One connection per request; every call raises MearasdError with the reason on failure."""

    def __init__(self, path: str, timeout: float = 10.0) -> None:
        self._path = path
        self._timeout = timeout

    def _roundtrip(self, req: control_pb2.ControlRequest, want: str) -> control_pb2.ControlReply:
        what = req.WhichOneof("body")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(self._timeout)
                s.connect(self._path)
                send_frame(s, req.SerializeToString())
                data = recv_frame(s)
        except FileNotFoundError:
            raise MearasdError(f"mearasd control socket {self._path} does not exist "
                               "(is mearasd running?)") from None
        except ConnectionRefusedError:
            raise MearasdError(f"mearasd refused the connection on {self._path} "
                               "(is mearasd running?)") from None
        except socket.timeout:
            raise MearasdError(f"mearasd did not answer {what} within {self._timeout:g} s "
                               f"on {self._path}") from None
        except (OSError, FramingError) as e:
            raise MearasdError(f"control socket {self._path}: {what}: {e}") from None
        if data is None:
            raise MearasdError(f"mearasd closed {self._path} without answering {what}")
        reply = control_pb2.ControlReply()
        try:
            reply.ParseFromString(data)
        except DecodeError as e:
            raise MearasdError(f"mearasd sent an undecodable reply to {what}: {e}") from None
        got = reply.WhichOneof("body")
        if got == "error":
            name = control_pb2.ErrorCode.Name(reply.error.code)
            raise MearasdError(f"mearasd refused {what}: {name}: {reply.error.message}")
        if got != want:
            raise MearasdError(f"mearasd answered {what} with {got or 'an empty reply'}, "
                               f"expected {want}")
        return reply

    def hello(self) -> tuple[str, tuple[int, int]]:
        req = control_pb2.ControlRequest(hello=control_pb2.HelloRequest(
            version=common_pb2.Version(major=PROTOCOL_MAJOR, minor=PROTOCOL_MINOR),
            client=f"mearas-am {__version__}"))
        r = self._roundtrip(req, "hello").hello
        if r.version.major != PROTOCOL_MAJOR:
            raise MearasdError(f"mearasd speaks control protocol {r.version.major}."
                               f"{r.version.minor}, this manager {PROTOCOL_MAJOR}.{PROTOCOL_MINOR}")
        return r.node, (r.version.major, r.version.minor)

    def get_profile(self) -> tuple[str, list[GpuProfile]]:
        p = self.profile()
        return p.node, list(p.gpus)

    def profile(self) -> MearasdProfile:
        req = control_pb2.ControlRequest(get_profile=control_pb2.GetProfileRequest())
        p = self._roundtrip(req, "profile").profile
        loads = {d.index: d for d in p.load}
        gpus = []
        for g in p.gpus:
            d = loads.get(g.index)
            load = None if d is None else GpuLoad(
                d.free_memory_bytes, d.utilization_percent,
                tuple(VgpuLoad(v.assembly_id, v.ordinal, v.calls_per_second) for v in d.vgpus))
            gpus.append(GpuProfile(GpuStatic(g.index, g.name, g.cc_major, g.cc_minor,
                                             g.memory_bytes, g.sm_count, g.interconnect), load))
        link = (LinkServer(p.link.port, p.link.bind, p.link.key_configured)
                if p.HasField("link") else None)
        return MearasdProfile(p.node, tuple(gpus), link)

    def instantiate(self, assembly: Assembly) -> None:
        req = control_pb2.ControlRequest(instantiate=control_pb2.InstantiateAssemblyRequest(
            assembly_id=assembly.id, owner=assembly.owner,
            vgpus=[vgpu_spec(v) for v in assembly.vgpus],
            identity=identity_message(assembly.identity)))
        r = self._roundtrip(req, "instantiated")
        if r.instantiated.assembly_id != assembly.id:
            raise MearasdError(f"mearasd instantiated {r.instantiated.assembly_id!r}, "
                               f"asked for {assembly.id!r}")

    def release(self, assembly_id: str) -> None:
        req = control_pb2.ControlRequest(
            release=control_pb2.ReleaseAssemblyRequest(assembly_id=assembly_id))
        self._roundtrip(req, "released")

    def list_assemblies(self) -> list[tuple[str, str, list[VgpuPlacement]]]:
        req = control_pb2.ControlRequest(list=control_pb2.ListAssembliesRequest())
        r = self._roundtrip(req, "assemblies").assemblies
        return [(a.assembly_id, a.owner, [placement_of(v) for v in a.vgpus])
                for a in r.assemblies]

    def attachments(self) -> dict[str, list[tuple[int, str]]]:
        """Assembly id -> the processes mearasd serves its vGPUs to now: (pid, VM), VM "" for a
        process client, else the guest process's pid (the guest's word) in that VM."""
        req = control_pb2.ControlRequest(list=control_pb2.ListAssembliesRequest())
        r = self._roundtrip(req, "assemblies").assemblies
        return {a.assembly_id: [(p.pid, p.vm) for p in a.attached] for a in r.assemblies}

    def attach_vm(self, vm: VmAttachment) -> tuple[int, int]:
        """Has mearasd serve the domain's VM socket with the assembly's vGPUs; returns
        (vGPUs per guest process, guest processes served at once)."""
        req = control_pb2.ControlRequest(attach_vm=control_pb2.AttachVmRequest(
            domain=vm.domain, assembly_id=vm.assembly_id, socket=vm.socket,
            bar_size_bytes=vm.bar_size_bytes, qemu_uid=vm.qemu_uid, qemu_gid=vm.qemu_gid))
        r = self._roundtrip(req, "vm_attached").vm_attached
        return r.vgpus, r.slots

    def detach_vm(self, domain: str) -> None:
        req = control_pb2.ControlRequest(detach_vm=control_pb2.DetachVmRequest(domain=domain))
        self._roundtrip(req, "vm_detached")
