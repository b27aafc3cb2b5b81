"""What the CLI and the libvirt hook do: book + instantiate, and release, an assembly."""

from __future__ import annotations

import dataclasses
import pwd

from . import booking
from .config import Config
from .control.client import MearasdClient, SocketMearasdClient, VmAttachment
from .errors import MearasdError, MearasError
from .model import ASSEMBLY_ACTIVE, Assembly, AssemblyRequest, VgpuPlacement
from .registry import Registry, open_registry


class Manager:
    def __init__(self, config: Config, registry: Registry | None = None,
                 mearasd: MearasdClient | None = None) -> None:
        self.config = config
        self.registry = registry or open_registry(config)
        self.mearasd: MearasdClient = mearasd or SocketMearasdClient(
            config.mearasd.control_socket, config.mearasd.timeout)

    @property
    def node(self) -> str:
        return self.config.node.name

    def dry_run(self, request: AssemblyRequest) -> list[list[VgpuPlacement]]:
        return booking.dry_run(self.registry, request, self.node)

    def start(self, request: AssemblyRequest, owner: str, identity: str) -> Assembly:
        """Books an assembly and has the local mearasd instantiate it for IDENTITY ("uid:<N>":
        that user's processes, "vm:<domain>"); undoes the booking if mearasd fails, so a failed
        start never leaves capacity booked."""
        a = booking.book(self.registry, request, owner, self.node, identity=identity)
        try:
            self.mearasd.instantiate(a)
        except MearasdError as e:
            booking.release(self.registry, a.id)
            raise MearasdError(f"{e} (booking {a.id} released)") from None
        active = dataclasses.replace(a, state=ASSEMBLY_ACTIVE)
        self.registry.update_assembly(active)
        return active

    def stop(self, assembly_id: str) -> tuple[Assembly | None, list[str]]:
        """Tells mearasd to tear the assembly down, then frees the booking (always, even when
        mearasd is gone: a dead mearasd holds no GPU). Returns problems met on the way."""
        problems = []
        try:
            self.mearasd.release(assembly_id)
        except MearasError as e:
            problems.append(str(e))
        released = booking.release(self.registry, assembly_id)
        return released, problems

    def stop_owner(self, owner: str) -> tuple[list[Assembly], list[str]]:
        done, problems = [], []
        for a in booking.list_assemblies(self.registry, owner):
            r, p = self.stop(a.id)
            problems += p
            if r is not None:
                done.append(r)
        return done, problems

    def attachments(self) -> dict[str, list[tuple[int, str]]] | None:
        """What this node's mearasd serves each assembly to now; None when it cannot be asked."""
        try:
            return self.mearasd.attachments()
        except MearasdError:
            return None

    def qemu_ids(self) -> tuple[int, int]:
        """uid and gid of the user libvirt runs QEMU as ([vm] qemu_user); root when absent."""
        try:
            pw = pwd.getpwnam(self.config.vm.qemu_user)
        except KeyError:
            return 0, 0
        return pw.pw_uid, pw.pw_gid

    def start_vm(self, request: AssemblyRequest, domain: str, socket: str,
                 shared_memory: int) -> tuple[Assembly, int, int]:
        """Books and instantiates the domain's assembly (bound to "vm:<domain>"), then has mearasd
        serve the domain's VM socket with it. Whatever fails, nothing stays booked, instantiated
        or served. Returns the assembly, vGPUs per guest process and guest processes at once."""
        owner = f"vm:{domain}"
        self.stop_vm(domain)  # leftovers of a VM that died without its release
        a = self.start(request, owner, owner)
        uid, gid = self.qemu_ids()
        try:
            vgpus, slots = self.mearasd.attach_vm(VmAttachment(domain, a.id, socket, shared_memory,
                                                               uid, gid))
        except MearasError as e:
            _, problems = self.stop(a.id)
            more = "; ".join(problems)
            raise MearasdError(f"{e} (assembly {a.id} released{': ' + more if more else ''})") \
                from None
        return a, vgpus, slots

    def stop_vm(self, domain: str) -> tuple[list[Assembly], list[str]]:
        """mearasd stops serving the domain's VM, then its assemblies are released."""
        problems = []
        try:
            self.mearasd.detach_vm(domain)
        except MearasdError as e:
            if "ERROR_NOT_FOUND" not in str(e):
                problems.append(str(e))
        done, more = self.stop_owner(f"vm:{domain}")
        return done, problems + more

    def close(self) -> None:
        self.registry.close()
