"""TEST DOUBLE of mearasd's control socket (the real one is C, in host-backend).

Follows proto/control.proto and the framing exactly, keeps instantiated assemblies in memory,
and can be told to refuse instantiation, so the manager's client, hook and `mearas run` can be
tested without a GPU. Runnable as a program for tests that need it in another process."""

from __future__ import annotations

import argparse
import os
import socket
import struct
import threading
from pathlib import Path

from mearas_am.control.client import identity_of, vgpu_spec
from mearas_am.control.framing import FramingError, recv_frame, send_frame
from mearas_am.control.pb import common_pb2, control_pb2
from mearas_am.model import LinkServer, VgpuPlacement

E = control_pb2


def _stop_listening(sock: socket.socket, acceptor: threading.Thread) -> None:
    """Wakes the thread blocked in accept() (shutdown makes it fail), waits for it, then closes.
    Closing first is not enough: the thread may have read the descriptor's number and not yet
    entered accept(); the next test's listening socket can get that number, and this server's
    thread would then take, and answer with this server's state, the next test's connections."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # never listened, or already shut down
    if acceptor.ident is not None and acceptor is not threading.current_thread():
        acceptor.join(timeout=10)
        if acceptor.is_alive():
            raise RuntimeError("the test double's accept thread did not stop")
    sock.close()


class FakeVmServer:
    """Stands in for mearasd's VM server so that QEMU's ivshmem-doorbell device can start: the
    server side of QEMU's ivshmem protocol (version, the peer's id, the shared memory fd, then
    one eventfd per vector for the host and for the peer), nothing of mearas behind it."""

    VECTORS = 2

    def __init__(self, path: str, size: int, uid: int, gid: int) -> None:
        self.path = path
        self.memfd = os.memfd_create("fake-vm")
        os.ftruncate(self.memfd, size)
        self.peers: list[socket.socket] = []
        self.fds: list[int] = []
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chown(path, uid, gid)
        os.chmod(path, 0o600)
        self.sock.listen(4)
        self.closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _msg(self, conn: socket.socket, value: int, fd: int = -1) -> None:
        data = struct.pack("<q", value)
        if fd < 0:
            conn.sendall(data)
        else:
            socket.send_fds(conn, [data], [fd])

    def _serve(self) -> None:
        peer_id = 1
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                self._msg(conn, 0)
                self._msg(conn, peer_id)
                self._msg(conn, -1, self.memfd)
                for who in (0, peer_id):
                    for _ in range(self.VECTORS):
                        fd = os.eventfd(0)
                        self.fds.append(fd)
                        self._msg(conn, who, fd)
            except OSError:
                conn.close()
                continue
            self.peers.append(conn)
            peer_id += 1

    def close(self) -> None:
        self.closed = True
        _stop_listening(self.sock, self._thread)
        for c in self.peers:
            c.close()
        for fd in [self.memfd, *self.fds]:
            os.close(fd)
        Path(self.path).unlink(missing_ok=True)


class FakeMearasd:
    def __init__(self, path: str, node: str = "node-a", gpus: int = 2) -> None:
        self.path = path
        self.node = node
        self.gpus = gpus
        self.assemblies: dict[str, tuple[str, list[VgpuPlacement]]] = {}
        self.identities: dict[str, str] = {}  # assembly id -> "uid:<N>" / "vm:<domain>"
        self.identity_log: dict[str, str] = {}  # the same, kept after release
        self.refuse_instantiate: str | None = None  # message of an ERROR_NO_RESOURCES reply
        self.refuse_attach: str | None = None  # message of an ERROR_NO_RESOURCES AttachVm reply
        self.vms: dict[str, tuple[str, FakeVmServer]] = {}  # domain -> (assembly, server)
        self.requests: list[str] = []
        # what GetProfile says of the link server (None: leave the field out, as an older
        # mearasd does); the tests' configs give node addresses on port 7100
        self.link: LinkServer | None = LinkServer(7100, "", True)
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self._sock.bind(path)
        os.chmod(path, 0o666)
        self._sock.listen(16)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._closed = False

    def start(self) -> FakeMearasd:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed = True
        _stop_listening(self._sock, self._thread)
        Path(self.path).unlink(missing_ok=True)
        for _, vm in self.vms.values():
            vm.close()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = recv_frame(conn)
                except (FramingError, OSError):
                    return
                if data is None:
                    return
                send_frame(conn, self.handle(data).SerializeToString())

    def _error(self, code: int, msg: str) -> control_pb2.ControlReply:
        return E.ControlReply(error=E.Error(code=code, message=msg))  # type: ignore[arg-type]

    def handle(self, data: bytes) -> control_pb2.ControlReply:
        req = E.ControlRequest()
        try:
            req.ParseFromString(data)
        except Exception as e:
            return self._error(E.ERROR_BAD_REQUEST, f"undecodable request: {e}")
        kind = req.WhichOneof("body")
        with self._lock:
            self.requests.append(str(kind))
            if kind == "hello":
                if req.hello.version.major != 1:
                    return self._error(E.ERROR_VERSION_MISMATCH, "need major 1")
                return E.ControlReply(hello=E.HelloReply(
                    version=common_pb2.Version(major=1, minor=0), node=self.node))
            if kind == "get_profile":
                return E.ControlReply(profile=self._profile())
            if kind == "instantiate":
                r = req.instantiate
                if self.refuse_instantiate:
                    return self._error(E.ERROR_NO_RESOURCES, self.refuse_instantiate)
                if r.assembly_id in self.assemblies:
                    return self._error(E.ERROR_ALREADY_EXISTS, r.assembly_id)
                if not r.vgpus:
                    return self._error(E.ERROR_BAD_REQUEST, "assembly without vGPUs")
                if not identity_of(r.identity):
                    return self._error(E.ERROR_BAD_REQUEST, "the booking names no identity")
                self.identities[r.assembly_id] = identity_of(r.identity)
                self.identity_log[r.assembly_id] = identity_of(r.identity)
                self.assemblies[r.assembly_id] = (r.owner, [
                    VgpuPlacement(v.ordinal, v.node, v.gpu_index, v.memory_quota_bytes,
                                  v.remote_address) for v in r.vgpus])
                return E.ControlReply(
                    instantiated=E.InstantiateAssemblyReply(assembly_id=r.assembly_id))
            if kind == "release":
                aid = req.release.assembly_id
                self.identities.pop(aid, None)
                if self.assemblies.pop(aid, None) is None:
                    return self._error(E.ERROR_NOT_FOUND, f"no assembly {aid}")
                return E.ControlReply(released=E.ReleaseAssemblyReply(assembly_id=aid))
            if kind == "attach_vm":
                v = req.attach_vm
                if self.refuse_attach:
                    return self._error(E.ERROR_NO_RESOURCES, self.refuse_attach)
                if v.domain in self.vms:
                    return self._error(E.ERROR_ALREADY_EXISTS, f"VM {v.domain} is attached already")
                if self.identities.get(v.assembly_id) != f"vm:{v.domain}":
                    return self._error(E.ERROR_NOT_FOUND, f"no assembly {v.assembly_id} for "
                                       f"vm:{v.domain}")
                try:
                    vm = FakeVmServer(v.socket, v.bar_size_bytes, v.qemu_uid, v.qemu_gid)
                except OSError as e:
                    return self._error(E.ERROR_NO_RESOURCES, f"cannot serve {v.socket}: {e}")
                self.vms[v.domain] = (v.assembly_id, vm)
                return E.ControlReply(vm_attached=E.AttachVmReply(
                    domain=v.domain, socket=v.socket,
                    vgpus=len(self.assemblies[v.assembly_id][1]), slots=8))
            if kind == "detach_vm":
                gone = self.vms.pop(req.detach_vm.domain, None)
                if gone is None:
                    return self._error(E.ERROR_NOT_FOUND, f"no VM {req.detach_vm.domain}")
                gone[1].close()
                return E.ControlReply(vm_detached=E.DetachVmReply(domain=req.detach_vm.domain))
            if kind == "list":
                return E.ControlReply(assemblies=E.ListAssembliesReply(assemblies=[
                    E.AssemblyInfo(assembly_id=k, owner=o, vgpus=[vgpu_spec(v) for v in vs])
                    for k, (o, vs) in self.assemblies.items()]))
        return self._error(E.ERROR_BAD_REQUEST, f"unknown request {kind}")

    def _profile(self) -> control_pb2.GetProfileReply:
        gpus = [E.GpuStatic(index=i, name="Fake GPU", cc_major=9, cc_minor=0,
                            memory_bytes=80 << 30, sm_count=132, interconnect="pcie")
                for i in range(self.gpus)]
        load = []
        for i in range(self.gpus):
            attached = [E.VgpuLoad(assembly_id=aid, ordinal=v.ordinal, calls_per_second=100.0)
                        for aid, (_, vs) in self.assemblies.items() for v in vs
                        if v.node == self.node and v.gpu_index == i]
            load.append(E.GpuDynamic(index=i, free_memory_bytes=(80 << 30) - (i << 30),
                                     utilization_percent=10 * i, vgpus=attached))
        link = None if self.link is None else E.LinkServer(
            port=self.link.port, bind=self.link.bind, key_configured=self.link.key_configured)
        return E.GetProfileReply(node=self.node, gpus=gpus, load=load, link=link)


def main() -> None:
    ap = argparse.ArgumentParser(description="test double of mearasd's control socket")
    ap.add_argument("--socket", required=True)
    ap.add_argument("--node", default="node-a")
    ap.add_argument("--refuse", help="refuse every instantiation with this message")
    a = ap.parse_args()
    srv = FakeMearasd(a.socket, a.node)
    srv.refuse_instantiate = a.refuse
    srv.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
