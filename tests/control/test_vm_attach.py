"""AttachVm / DetachVm on a real mearasd (--device=sim): a VM server made at run time for a
domain's assembly, refused requests that leave nothing behind, and removal."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mearas_am.control.client import SocketMearasdClient, VmAttachment
from mearas_am.errors import MearasdError
from mearas_am.model import Assembly, VgpuPlacement

from .conftest import MEARASD, NODE, Daemon, running_mearasd, wait_listening

MiB = 1 << 20
NOBODY = 65534


class VmDaemon(Daemon):
    vm_dir: Path


@pytest.fixture
def vmd(tmp_path: Path) -> Iterator[VmDaemon]:
    vm_dir = tmp_path / "vm"
    with running_mearasd(tmp_path / "d.sock", tmp_path / "c.sock", tmp_path / "mearasd.log",
                         f"--node-name={NODE}", f"--vm-dir={vm_dir}") as base:
        d = VmDaemon(base.proc, base.data_socket, base.control_socket, base.log)
        d.vm_dir = vm_dir
        yield d


def vm_assembly(aid: str, domain: str, *quotas: int, identity: str | None = None) -> Assembly:
    return Assembly(aid, f"vm:{domain}", "test", "exact",
                    tuple(VgpuPlacement(i, NODE, i % 2, q, "") for i, q in enumerate(quotas)),
                    time.time(), identity=identity or f"vm:{domain}")


def children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def wait_until(cond: object, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(cond) and cond():
            return True
        time.sleep(0.05)
    return False


def attachment(d: VmDaemon, domain: str, aid: str, sock: str | None = None,
               size: int = 64 * MiB) -> VmAttachment:
    return VmAttachment(domain, aid, sock or str(d.vm_dir / f"{domain}.sock"), size, NOBODY, NOBODY)


def test_attach_serves_the_assembly_then_detach_removes_it(vmd: VmDaemon) -> None:
    c = SocketMearasdClient(vmd.control_socket, timeout=20)
    c.instantiate(vm_assembly("a1", "dom1", 256 * MiB, 512 * MiB, 128 * MiB))
    assert children(vmd.proc.pid) == set()
    vgpus, slots = c.attach_vm(attachment(vmd, "dom1", "a1"))
    assert vgpus == 3 and slots >= 1
    sock = vmd.vm_dir / "dom1.sock"
    st = sock.lstat()
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)  # only the domain's QEMU (and root)
    log = vmd.log.read_text()
    assert f"VM dom1: serving {sock}" in log and f"{slots} slot(s) of 3 vGPU(s)" in log
    server = children(vmd.proc.pid)
    assert len(server) == 1
    (sup,) = server
    assert len(children(sup)) == 1  # the VM worker, waiting for the QEMU
    # a second VM on the same assembly's domain, or another domain on the socket: refused
    with pytest.raises(MearasdError, match="ALREADY_EXISTS.*dom1 is attached already"):
        c.attach_vm(attachment(vmd, "dom1", "a1", str(vmd.vm_dir / "other.sock")))
    c.instantiate(vm_assembly("a2", "dom2", 64 * MiB))
    with pytest.raises(MearasdError, match="ALREADY_EXISTS.*serves VM dom1"):
        c.attach_vm(attachment(vmd, "dom2", "a2", str(sock)))
    c.detach_vm("dom1")
    assert not sock.exists()
    assert wait_until(lambda: not children(vmd.proc.pid))
    assert "control: VM dom1 detached" in vmd.log.read_text()
    with pytest.raises(MearasdError, match="NOT_FOUND.*no VM dom1"):
        c.detach_vm("dom1")
    # attached again after a detach: a fresh server; mearasd kept running throughout
    c.attach_vm(attachment(vmd, "dom1", "a1"))
    assert sock.exists() and vmd.alive()
    vmd.proc.terminate()
    assert vmd.proc.wait(10) == 0
    assert wait_until(lambda: not sock.exists(), 5)


@pytest.mark.parametrize("domain, aid, sock, size, code, words", [
    ("dom1", "a1", "/tmp/elsewhere.sock", 64 * MiB, "BAD_REQUEST", "not a file directly in"),
    ("dom1", "a1", "{vm}/../x.sock", 64 * MiB, "BAD_REQUEST", "not a file directly in"),
    ("dom1", "a1", "{vm}/.hidden", 64 * MiB, "BAD_REQUEST", "not a file directly in"),
    ("dom1", "a1", "{vm}/a b.sock", 64 * MiB, "BAD_REQUEST", "only letters"),
    ("dom/1", "a1", "{vm}/d.sock", 64 * MiB, "BAD_REQUEST", "domain name"),
    ("", "a1", "{vm}/d.sock", 64 * MiB, "BAD_REQUEST", "domain name"),
    ("dom1", "a1", "{vm}/d.sock", 100 * MiB, "BAD_REQUEST", "power of two"),
    ("dom1", "a1", "{vm}/d.sock", 2 * MiB, "BAD_REQUEST", "power of two"),
    ("dom1", "a1", "{vm}/d.sock", 4 * MiB, "NO_RESOURCES", "cannot hold one slot of 2 vGPU"),
    ("dom1", "nope", "{vm}/d.sock", 64 * MiB, "NOT_FOUND", "not instantiated"),
    ("dom2", "a1", "{vm}/d.sock", 64 * MiB, "BAD_REQUEST", "not booked for VM dom2"),
    ("dom1", "u1", "{vm}/d.sock", 64 * MiB, "BAD_REQUEST", "not booked for VM dom1"),
])
def test_bad_attach_refused_and_leaves_nothing(vmd: VmDaemon, domain: str, aid: str, sock: str,
                                               size: int, code: str, words: str) -> None:
    c = SocketMearasdClient(vmd.control_socket, timeout=20)
    c.instantiate(vm_assembly("a1", "dom1", 64 * MiB, 64 * MiB))
    c.instantiate(vm_assembly("u1", "dom1", 64 * MiB, identity=f"uid:{os.getuid()}"))
    path = sock.replace("{vm}", str(vmd.vm_dir))
    with pytest.raises(MearasdError, match=f"{code}.*{words}"):
        c.attach_vm(VmAttachment(domain, aid, path, size, NOBODY, NOBODY))
    assert children(vmd.proc.pid) == set()
    assert not Path(path).exists()
    assert vmd.alive()
    # the refusal changed nothing: the right request still works
    assert c.attach_vm(attachment(vmd, "dom1", "a1"))[0] == 2


def test_server_that_cannot_start_is_reported_and_removed(vmd: VmDaemon) -> None:
    """The worker fails after the fork (a file that is not a socket holds the path): the
    reason comes back, no process stays, and the file is left alone."""
    c = SocketMearasdClient(vmd.control_socket, timeout=20)
    c.instantiate(vm_assembly("a1", "dom1", 64 * MiB))
    vmd.vm_dir.mkdir(mode=0o755)
    blocker = vmd.vm_dir / "dom1.sock"
    blocker.write_text("not a socket\n")
    with pytest.raises(MearasdError, match="NO_RESOURCES.*VM dom1: cannot serve .*dom1.sock: File exists"):
        c.attach_vm(attachment(vmd, "dom1", "a1"))
    assert wait_until(lambda: not children(vmd.proc.pid), 5)
    assert blocker.read_text() == "not a socket\n"
    blocker.unlink()
    c.attach_vm(attachment(vmd, "dom1", "a1"))


def test_vm_dir_writable_by_others_refused(vmd: VmDaemon) -> None:
    c = SocketMearasdClient(vmd.control_socket, timeout=20)
    c.instantiate(vm_assembly("a1", "dom1", 64 * MiB))
    vmd.vm_dir.mkdir()
    vmd.vm_dir.chmod(0o777)
    with pytest.raises(MearasdError, match="NO_RESOURCES.*not be writable by others"):
        c.attach_vm(attachment(vmd, "dom1", "a1"))
    assert children(vmd.proc.pid) == set()


def test_remote_node_down_or_refusing_fails_attach(vmd: VmDaemon, tmp_path: Path) -> None:
    """The remote vGPUs' links are tried before the VM is served: a node that is down, or that
    does not admit this one (another cluster key), fails the attach with the reason."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = SocketMearasdClient(vmd.control_socket, timeout=30)
    c.instantiate(Assembly("r1", "vm:dom1", "test", "exact", (
        VgpuPlacement(0, NODE, 0, 64 * MiB, ""),
        VgpuPlacement(1, "node-b", 0, 64 * MiB, f"127.0.0.1:{port}")), time.time(),
        identity="vm:dom1"))
    with pytest.raises(MearasdError, match=f"NO_RESOURCES.*remote vGPU 1: link to 127.0.0.1:{port} "
                                           "failed"):
        c.attach_vm(attachment(vmd, "dom1", "r1"))
    assert children(vmd.proc.pid) == set() and not (vmd.vm_dir / "dom1.sock").exists()
    key = tmp_path / "b.key"
    key.write_text("a key this node's mearasd does not have\n")
    with open(tmp_path / "b.log", "wb") as out:
        b = subprocess.Popen([str(MEARASD), "--device=sim", f"--socket={tmp_path / 'b.sock'}",
                              f"--control={tmp_path / 'bc.sock'}", f"--link-port={port}",
                              "--link-bind=127.0.0.1", f"--cluster-key-file={key}"],
                             stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_listening(str(tmp_path / "bc.sock"), b)
        with pytest.raises(MearasdError, match="NO_RESOURCES.*link to .* failed"):
            c.attach_vm(attachment(vmd, "dom1", "r1"))
        assert children(vmd.proc.pid) == set() and not (vmd.vm_dir / "dom1.sock").exists()
    finally:
        b.terminate()
        b.wait(10)
