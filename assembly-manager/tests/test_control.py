"""The control-socket client against the schema-following test double of mearasd."""

import dataclasses
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from mearas_am.control.client import SocketMearasdClient
from mearas_am.control.framing import FramingError, recv_frame, send_frame
from mearas_am.control.pb import control_pb2
from mearas_am.errors import MearasdError
from mearas_am.model import Assembly, VgpuPlacement

from .fake_mearasd import FakeMearasd


def asm(aid: str = "asm1") -> Assembly:
    return Assembly(aid, "vm:test", "node-a", "spread",
                    (VgpuPlacement(0, "node-a", 0, 8 << 30, ""),
                     VgpuPlacement(1, "node-b", 1, 8 << 30, "node-b.example:7100")), time.time(),
                    identity="vm:test")


def test_roundtrips(fake_mearasd: FakeMearasd) -> None:
    c = SocketMearasdClient(fake_mearasd.path, 2)
    assert c.hello() == ("node-a", (1, 0))
    c.instantiate(asm())
    node, gpus = c.get_profile()
    assert node == "node-a" and len(gpus) == 2
    assert gpus[0].static.memory_bytes == 80 << 30 and gpus[0].static.cc_major == 9
    assert gpus[0].load is not None and len(gpus[0].load.vgpus) == 1
    assert gpus[0].load.vgpus[0].calls_per_second == 100.0
    (listed,) = c.list_assemblies()
    assert listed[0] == "asm1" and listed[1] == "vm:test"
    assert listed[2][1] == VgpuPlacement(1, "node-b", 1, 8 << 30, "node-b.example:7100")
    c.release("asm1")
    assert c.list_assemblies() == []


def test_error_replies_become_clear_errors(fake_mearasd: FakeMearasd) -> None:
    c = SocketMearasdClient(fake_mearasd.path, 2)
    with pytest.raises(MearasdError, match="ERROR_NOT_FOUND: no assembly nope"):
        c.release("nope")
    c.instantiate(asm())
    with pytest.raises(MearasdError, match="ERROR_ALREADY_EXISTS"):
        c.instantiate(asm())
    fake_mearasd.refuse_instantiate = "GPU 1 is gone"
    with pytest.raises(MearasdError, match="ERROR_NO_RESOURCES: GPU 1 is gone"):
        c.instantiate(asm("asm2"))


def test_booking_without_identity_is_not_sent(fake_mearasd: FakeMearasd) -> None:
    c = SocketMearasdClient(fake_mearasd.path, 2)
    for bad in ("", "pid:12@node-a", "uid:", "uid:-1", "vm:"):
        with pytest.raises(MearasdError, match="no usable identity"):
            c.instantiate(dataclasses.replace(asm(), identity=bad))
    assert "instantiate" not in fake_mearasd.requests
    c.instantiate(dataclasses.replace(asm(), identity="uid:1000"))
    assert fake_mearasd.identities["asm1"] == "uid:1000"


def test_no_daemon(tmp_path: Path) -> None:
    with pytest.raises(MearasdError, match="does not exist .is mearasd running"):
        SocketMearasdClient(str(tmp_path / "none.sock")).hello()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "dead.sock"))
    s.close()  # bound, never listening: connection refused
    with pytest.raises(MearasdError, match="refused the connection"):
        SocketMearasdClient(str(tmp_path / "dead.sock")).hello()


def _server(path: str, behave: str) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            recv_frame(conn)
            if behave == "garbage":
                send_frame(conn, b"\xff\xff\xff\xff")
            elif behave == "wrong":
                send_frame(conn, control_pb2.ControlReply(
                    released=control_pb2.ReleaseAssemblyReply()).SerializeToString())
            elif behave == "silent":
                time.sleep(2)
    threading.Thread(target=run, daemon=True).start()
    return srv


@pytest.mark.parametrize("behave,msg", [
    ("garbage", "undecodable reply"),
    ("wrong", "answered hello with released"),
    ("close", "closed .* without answering hello"),
    ("silent", "did not answer hello within 0.5 s"),
])
def test_misbehaving_daemon(tmp_path: Path, behave: str, msg: str) -> None:
    path = str(tmp_path / f"{behave}.sock")
    srv = _server(path, behave)
    try:
        with pytest.raises(MearasdError, match=msg):
            SocketMearasdClient(path, 0.5).hello()
    finally:
        srv.close()


def test_framing_limits() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(struct.pack("<I", 1 << 30))
        with pytest.raises(FramingError, match="exceeds"):
            recv_frame(b)
    a, b = socket.socketpair()
    with a, b:
        a.sendall(struct.pack("<I", 10) + b"abc")
        a.shutdown(socket.SHUT_WR)
        with pytest.raises(FramingError, match="after 3 of 10"):
            recv_frame(b)
    a, b = socket.socketpair()
    with a, b:
        send_frame(a, b"hello")
        assert recv_frame(b) == b"hello"
        a.close()
        assert recv_frame(b) is None
