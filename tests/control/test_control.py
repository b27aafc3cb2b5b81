"""mearasd's control socket, driven by the assembly manager's own client, and CUDA programs
that use the assemblies it instantiated (tests/control/assembly_probe.cu)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mearas_am.control.client import SocketMearasdClient
from mearas_am.control.pb import common_pb2, control_pb2
from mearas_am.errors import MearasdError
from mearas_am.model import Assembly, VgpuPlacement

from .conftest import LIBDIR, NODE, PROBE, TOP, Daemon, free_port, kill_if_running, running_mearasd

MiB = 1 << 20
SIM_MEMORY = 16 << 30
CUDA_ERROR_MEMORY_ALLOCATION = 2
CUDA_ERROR_NO_DEVICE = 100


ME = f"uid:{os.getuid()}"  # the tests' programs run as this user


def assembly(aid: str, *vgpus: tuple[int, int], remote: str = "", identity: str = ME) -> Assembly:
    """vgpus: (gpu_index, quota bytes) for ordinals 0, 1, ..."""
    return Assembly(aid, "pid:1@node-a", "test", "exact",
                    tuple(VgpuPlacement(i, NODE, g, q, remote) for i, (g, q) in enumerate(vgpus)),
                    time.time(), identity=identity)


def kv(out: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def client(d: Daemon) -> SocketMearasdClient:
    return SocketMearasdClient(d.control_socket, timeout=10)


# ---- (a) the protocol through the manager's client

def test_hello_and_profile(mearasd: Daemon) -> None:
    c = client(mearasd)
    assert c.hello() == (NODE, (1, 0))
    node, gpus = c.get_profile()
    assert node == NODE and len(gpus) == 2
    for i, g in enumerate(gpus):
        assert g.static.index == i and g.static.name.startswith("mearas-sim")
        assert (g.static.cc_major, g.static.cc_minor) == (9, 0)
        assert g.static.memory_bytes == SIM_MEMORY and g.static.sm_count == 132
        assert g.load is not None and g.load.free_memory_bytes == SIM_MEMORY
        assert g.load.vgpus == ()


def test_instantiate_list_profile_release(mearasd: Daemon) -> None:
    c = client(mearasd)
    c.instantiate(assembly("asm-1", (1, 256 * MiB), (0, 512 * MiB)))
    c.instantiate(assembly("asm-2", (1, 128 * MiB)))
    listed = {a: (o, v) for a, o, v in c.list_assemblies()}
    assert set(listed) == {"asm-1", "asm-2"}
    owner, vs = listed["asm-1"]
    assert owner == "pid:1@node-a"
    assert [(v.ordinal, v.node, v.gpu_index, v.memory_quota_bytes, v.remote_address)
            for v in vs] == [(0, NODE, 1, 256 * MiB, ""), (1, NODE, 0, 512 * MiB, "")]
    _, gpus = c.get_profile()
    assert gpus[0].load is not None and gpus[1].load is not None
    assert [(v.assembly_id, v.ordinal) for v in gpus[0].load.vgpus] == [("asm-1", 1)]
    assert sorted((v.assembly_id, v.ordinal) for v in gpus[1].load.vgpus) == \
        [("asm-1", 0), ("asm-2", 0)]
    c.release("asm-1")
    assert [a for a, _, _ in c.list_assemblies()] == ["asm-2"]
    _, gpus = c.get_profile()
    assert gpus[0].load is not None and gpus[0].load.vgpus == ()


@pytest.mark.parametrize("bad, code, words", [
    (assembly("dup", (0, MiB)), "ERROR_ALREADY_EXISTS", "already"),
    (assembly("far", (2, MiB)), "ERROR_NO_RESOURCES", "has 2 GPU"),
    (assembly("big", (0, 17 << 30)), "ERROR_NO_RESOURCES", "quota"),
    (assembly("rem", (0, MiB), remote="no-port-here"), "ERROR_BAD_REQUEST", "HOST:PORT"),
    (assembly("none"), "ERROR_BAD_REQUEST", "no vGPUs"),
    (assembly("has space", (0, MiB)), "ERROR_BAD_REQUEST", "printable"),
    (assembly("x" * 64, (0, MiB)), "ERROR_BAD_REQUEST", "printable"),
])
def test_instantiate_errors(mearasd: Daemon, bad: Assembly, code: str, words: str) -> None:
    c = client(mearasd)
    c.instantiate(assembly("dup", (0, MiB)))
    with pytest.raises(MearasdError, match=f"{code}.*{words}"):
        c.instantiate(bad)
    assert [a for a, _, _ in c.list_assemblies()] == ["dup"]


def test_owner_label_is_bounded_text(mearasd: Daemon) -> None:
    # the owner is kept for the assembly's life, in every list and log line: 16 MiB each
    # (a frame's worth, when frames were 16 MiB) made 1024 assemblies hold 16 GiB
    c = client(mearasd)
    for owner in ("o" * (60 << 10), "o" * 256, "pid:1@node-a\ninfo: forged line"):
        bad = Assembly("labelled", owner, "t", "exact", (VgpuPlacement(0, NODE, 0, MiB, ""),), 0.0,
                       identity=ME)
        with pytest.raises(MearasdError, match="BAD_REQUEST.*owner must be at most 255"):
            c.instantiate(bad)
    assert c.list_assemblies() == []
    c.instantiate(Assembly("labelled", "o" * 255, "t", "exact", (VgpuPlacement(0, NODE, 0, MiB, ""),),
                           0.0, identity=ME))
    assert [(a, o) for a, o, _ in c.list_assemblies()] == [("labelled", "o" * 255)]


def test_wrong_node_and_ordinals_refused(mearasd: Daemon) -> None:
    c = client(mearasd)
    other = Assembly("other", "o", "t", "exact", (VgpuPlacement(0, "node-z", 0, MiB, ""),), 0.0,
                     identity=ME)
    with pytest.raises(MearasdError, match="BAD_REQUEST.*node-z"):
        c.instantiate(other)
    twice = Assembly("twice", "o", "t", "exact", (VgpuPlacement(0, NODE, 0, MiB, ""),
                                                 VgpuPlacement(0, NODE, 1, MiB, "")), 0.0,
                     identity=ME)
    with pytest.raises(MearasdError, match="BAD_REQUEST.*ordinals"):
        c.instantiate(twice)


def test_release_unknown_and_version_mismatch(mearasd: Daemon) -> None:
    c = client(mearasd)
    with pytest.raises(MearasdError, match="ERROR_NOT_FOUND"):
        c.release("no-such-assembly")
    reply = raw_request(mearasd, control_pb2.ControlRequest(hello=control_pb2.HelloRequest(
        version=common_pb2.Version(major=2, minor=0), client="future")).SerializeToString())
    assert reply.error.code == control_pb2.ERROR_VERSION_MISMATCH


def instantiate_raw(d: Daemon, identity: control_pb2.Identity | None) -> control_pb2.ControlReply:
    q = control_pb2.InstantiateAssemblyRequest(
        assembly_id="raw", owner="o", vgpus=[control_pb2.VgpuSpec(ordinal=0, node=NODE, gpu_index=0,
                                                                  memory_quota_bytes=MiB)])
    if identity is not None:
        q.identity.CopyFrom(identity)
    return raw_request(d, control_pb2.ControlRequest(instantiate=q).SerializeToString())


def test_booking_without_identity_refused(mearasd: Daemon) -> None:
    for bad in (None, control_pb2.Identity(), control_pb2.Identity(vm=""),
                control_pb2.Identity(vm="v" * 64)):
        r = instantiate_raw(mearasd, bad)
        assert r.WhichOneof("body") == "error", bad
        assert r.error.code == control_pb2.ERROR_BAD_REQUEST and "no identity" in r.error.message
    assert client(mearasd).list_assemblies() == []
    assert "names no identity" in mearasd.log.read_text()


def test_list_reports_identity(mearasd: Daemon) -> None:
    assert instantiate_raw(mearasd, control_pb2.Identity(vm="guest1")).WhichOneof("body") == \
        "instantiated"
    client(mearasd).instantiate(assembly("u", (0, MiB), identity="uid:4242"))
    r = raw_request(mearasd, control_pb2.ControlRequest(
        list=control_pb2.ListAssembliesRequest()).SerializeToString())
    got = {a.assembly_id: a.identity for a in r.assemblies.assemblies}
    assert got["raw"].WhichOneof("who") == "vm" and got["raw"].vm == "guest1"
    assert got["u"].WhichOneof("who") == "uid" and got["u"].uid == 4242


# ---- (b) malformed input: the daemon answers or hangs up, and keeps serving

def send_frame(s: socket.socket, payload: bytes) -> None:
    s.sendall(struct.pack("<I", len(payload)) + payload)


def recv_reply(s: socket.socket) -> control_pb2.ControlReply | None:
    hdr = b""
    while len(hdr) < 4:
        chunk = s.recv(4 - len(hdr))
        if not chunk:
            return None
        hdr += chunk
    (n,) = struct.unpack("<I", hdr)
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        assert chunk, "connection closed inside a reply"
        body += chunk
    r = control_pb2.ControlReply()
    r.ParseFromString(body)
    return r


def raw_request(d: Daemon, payload: bytes) -> control_pb2.ControlReply:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(d.control_socket)
        send_frame(s, payload)
        r = recv_reply(s)
        assert r is not None
        return r


REQUEST_MAX = 64 << 10  # mearasd's largest request frame (host-backend/control/control.h)


def varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


HELLO = control_pb2.ControlRequest(hello=control_pb2.HelloRequest(
    version=common_pb2.Version(major=1, minor=0), client="test")).SerializeToString()


def test_garbage_gets_errors_on_a_live_connection(mearasd: Daemon) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(mearasd.control_socket)
        for junk in (b"\xff\xff\xff\xff\x0f garbage", b"", b"\x32\x00",  # bad varint, empty,
                     b"\x0a\x05\x0a\x03"):  # unknown field 6 / truncated submessage
            send_frame(s, junk)
            r = recv_reply(s)
            assert r is not None and r.WhichOneof("body") == "error"
            assert r.error.code == control_pb2.ERROR_BAD_REQUEST, junk
        send_frame(s, HELLO)  # several requests on one connection, the last one good
        r = recv_reply(s)
        assert r is not None and r.hello.node == NODE


def test_oversize_truncated_and_idle_connections(mearasd: Daemon) -> None:
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(mearasd.control_socket)  # says nothing: must not block others
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(mearasd.control_socket)
            s.sendall(struct.pack("<I", REQUEST_MAX + 1))
            assert s.recv(1) == b""  # closed, no allocation of it
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(mearasd.control_socket)
            s.sendall(struct.pack("<I", 1000) + b"only part")  # then gone
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(mearasd.control_socket)
            s.sendall(b"\x01\x00")  # half a header, then gone
        for _ in range(20):  # connections come and go
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(mearasd.control_socket)
        assert raw_request(mearasd, HELLO).hello.node == NODE
        assert client(mearasd).hello()[0] == NODE
        assert mearasd.alive()
    finally:
        idle.close()


def test_refused_connections_do_not_flood_the_log(mearasd: Daemon) -> None:
    # past its 64 connections each new one is refused with a log line; whoever may connect can
    # do that at will: at most 10 such lines a second, and the count of the rest
    held = []
    try:
        for _ in range(64):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(mearasd.control_socket)
            held.append(s)
        t0 = time.monotonic()
        for _ in range(300):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(mearasd.control_socket)
                s.settimeout(10)
                assert s.recv(1) == b""  # refused: closed
        seconds = time.monotonic() - t0
        time.sleep(1.1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # opens the next second
            s.connect(mearasd.control_socket)
            s.settimeout(10)
            assert s.recv(1) == b""
        time.sleep(0.2)
        log = mearasd.log.read_text()
        lines = log.count("connections open already, refusing another")
        assert 10 <= lines <= 10 * (int(seconds) + 3), (lines, seconds)
        dropped = [int(w) for line in log.splitlines() if "more refused connections not logged" in line
                   for w in line.split("control: ")[1].split()[:1]]
        assert dropped and lines + sum(dropped) == 301, (lines, dropped)
    finally:
        for s in held:
            s.close()
    assert raw_request(mearasd, HELLO).hello.node == NODE and mearasd.alive()


def test_max_size_frame_is_read_and_refused(mearasd: Daemon) -> None:
    # a 64 KiB frame (the limit) of an unknown field: read whole, answered with an error
    payload = b"\xba\x06" + varint(REQUEST_MAX) + bytes(REQUEST_MAX - 5)
    assert len(payload) == REQUEST_MAX
    r = raw_request(mearasd, payload)
    assert r.WhichOneof("body") == "error"
    assert mearasd.alive() and client(mearasd).hello()[0] == NODE


def peak_rss_kib(d: Daemon) -> int:
    for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in mearasd's /proc status")


def test_request_is_not_amplified_by_its_parse(mearasd: Daemon) -> None:
    # an InstantiateAssembly of 2-byte empty VgpuSpecs: protobuf-c makes each a message of its
    # own; a 16 MiB frame of them made mearasd (root) take about 1 GB to parse it
    inner = b"\x1a\x00" * ((16 << 20) // 2 - 8)
    msg = b"\x1a" + varint(len(inner)) + inner
    before = peak_rss_kib(mearasd)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(mearasd.control_socket)
        try:
            send_frame(s, msg)
            recv_reply(s)
        except OSError:
            pass  # refused at its length: closed before the body was sent
    grown = peak_rss_kib(mearasd) - before
    assert grown < 64 << 10, f"mearasd grew by {grown} KiB parsing a {len(msg)}-byte request"
    assert mearasd.alive() and client(mearasd).hello()[0] == NODE


# ---- (c) CUDA programs on assemblies

def test_program_gets_its_assembly(mearasd: Daemon) -> None:
    client(mearasd).instantiate(assembly("prog", (1, 256 * MiB), (0, 512 * MiB)))
    r = mearasd.run_probe("prog")
    assert r.returncode == 0, r.stderr
    out = kv(r.stdout)
    assert out["count"] == "2"
    # the sim's PCI bus id is 0x10 + the physical GPU: vGPU 0 is GPU 1, vGPU 1 is GPU 0
    assert (out["dev0_bus"], out["dev1_bus"]) == (str(0x11), str(0x10))
    assert (out["dev0_total"], out["dev1_total"]) == (str(256 * MiB), str(512 * MiB))
    for d in (0, 1):
        assert out[f"dev{d}_over_quota_status"] == str(CUDA_ERROR_MEMORY_ALLOCATION)
        assert out[f"dev{d}_within_quota_status"] == "0"
        assert out[f"dev{d}_memset_status"] == "0"


def test_matching_vgpu_count_accepted_other_refused(mearasd: Daemon) -> None:
    client(mearasd).instantiate(assembly("three", (0, 64 * MiB), (1, 64 * MiB), (0, 64 * MiB)))
    r = mearasd.run_probe("three", vgpus=3)
    assert r.returncode == 0 and kv(r.stdout)["count"] == "3", r.stderr
    r = mearasd.run_probe("three", vgpus=2)
    assert kv(r.stdout)["count_status"] == str(CUDA_ERROR_NO_DEVICE)
    assert "MEARAS_VGPUS=2 but assembly 'three' has 3" in r.stderr


def test_unknown_assembly_is_refused_quickly(mearasd: Daemon) -> None:
    start = time.monotonic()
    r = mearasd.run_probe("never-booked", timeout=30)
    assert time.monotonic() - start < 20
    assert r.returncode != 0
    assert kv(r.stdout)["count_status"] == str(CUDA_ERROR_NO_DEVICE)
    assert "assembly 'never-booked' is not instantiated" in r.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="root's privilege is what is tested")
def test_root_may_use_an_assembly_of_another_user(mearasd: Daemon) -> None:
    # the refusal for other users: tests/security attacks/assembly_by_name_other_user
    client(mearasd).instantiate(assembly("theirs", (0, 64 * MiB), identity="uid:4242"))
    r = mearasd.run_probe("theirs")
    assert r.returncode == 0, r.stderr
    assert kv(r.stdout)["dev0_total"] == str(64 * MiB)
    assert "uid 0 (privileged) uses assembly theirs, booked for uid 4242" in mearasd.log.read_text()


def test_client_without_assembly_keeps_defaults(mearasd: Daemon) -> None:
    r = mearasd.run_probe(None, vgpus=1)
    assert r.returncode == 0, r.stderr
    out = kv(r.stdout)
    assert out["count"] == "1" and out["dev0_total"] == str(1024 * MiB)  # --quota-mb=1024
    r = mearasd.run_probe(None)
    assert kv(r.stdout)["count"] == "2"  # sim default --vgpus


def test_release_keeps_running_client_refuses_new(mearasd: Daemon) -> None:
    c = client(mearasd)
    c.instantiate(assembly("short", (0, 128 * MiB)))
    p = subprocess.Popen([str(PROBE), "hold"], env=mearasd.client_env("short"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        lines = []
        for line in p.stdout:
            lines.append(line)
            if line.strip() == "ready":
                break
        assert kv("".join(lines))["dev0_total"] == str(128 * MiB)
        c.release("short")
        r = mearasd.run_probe("short")
        assert kv(r.stdout)["count_status"] == str(CUDA_ERROR_NO_DEVICE)
        out, err = p.communicate("go\n", timeout=30)
        assert p.returncode == 0, err
        assert kv(out)["after_release_malloc_status"] == "0"
        assert kv(out)["after_release_free_status"] == "0"
    finally:
        kill_if_running(p)


def test_profile_reports_call_rate(mearasd: Daemon) -> None:
    c = client(mearasd)
    c.instantiate(assembly("busy", (0, 64 * MiB), (1, 64 * MiB)))
    p = subprocess.Popen([str(PROBE), "busy", "4"], env=mearasd.client_env("busy"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if line.strip() == "ready":
                break
        time.sleep(2.5)  # the control thread samples the counters once a second
        _, gpus = c.get_profile()
        rates = {(v.assembly_id, v.ordinal, g.static.index): v.calls_per_second
                 for g in gpus if g.load for v in g.load.vgpus}
        assert set(rates) == {("busy", 0, 0), ("busy", 1, 1)}
        assert all(r > 10 for r in rates.values()), rates
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0, err
    finally:
        kill_if_running(p)
    time.sleep(2.5)
    _, gpus = c.get_profile()
    assert all(v.calls_per_second == 0 for g in gpus if g.load for v in g.load.vgpus)


# ---- (d) `mearas run` end to end: file registry, this mearasd, build/lib

def test_mearas_run_end_to_end(mearasd: Daemon, tmp_path: Path) -> None:
    cfg = tmp_path / "am.toml"
    cfg.write_text("\n".join([
        "[node]", f'name = "{NODE}"', 'address = "127.0.0.1:7100"', "max_vgpus_per_gpu = 2",
        "[registry]", 'backend = "file"', f'path = "{tmp_path / "registry.json"}"',
        "[mearasd]", f'control_socket = "{mearasd.control_socket}"',
        f'client_socket = "{mearasd.data_socket}"', "timeout = 10",
        "[runtime]", f'libdir = "{LIBDIR}"']) + "\n")
    # the GPUs come from mearasd's profile, the client socket from the config
    env = dict(os.environ, PYTHONPATH=str(TOP / "assembly-manager"), MEARAS_DATA_MB="16")
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("MEARAS_SOCKET", None)

    def mearas(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg),
                               *args], env=env, capture_output=True, text=True, timeout=120)

    r = mearas("node-agent", "--once")
    assert r.returncode == 0, r.stderr
    r = mearas("run", "--vgpus", "2", "--", str(PROBE))
    assert r.returncode == 0, r.stderr
    out = kv(r.stdout)
    assert out["count"] == "2"
    # the manager's quota: GPU memory / sharing factor, enforced by mearasd
    assert out["dev0_total"] == out["dev1_total"] == str(8 << 30)
    assert out["dev0_over_quota_status"] == str(CUDA_ERROR_MEMORY_ALLOCATION)
    assert out["dev0_within_quota_status"] == "0"
    assert client(mearasd).list_assemblies() == []  # released when the program ended
    # bound to the user `mearas run` ran as
    assert f"instantiated for uid {os.getuid()} (pid:" in mearasd.log.read_text()


def test_stop_leaves_no_socket(mearasd: Daemon) -> None:
    threading.Event().wait(0.1)
    mearasd.proc.terminate()
    assert mearasd.proc.wait(10) == 0
    assert not Path(mearasd.control_socket).exists()
    assert not Path(mearasd.data_socket).exists()


# ---- remote vGPUs in an assembly: a second mearasd serves its GPU over remote-link

def test_assembly_with_remote_vgpu(tmp_path: Path) -> None:
    key = tmp_path / "cluster.key"
    key.write_text("test cluster key 0123456789abcdef\n")
    port = free_port()
    with running_mearasd(tmp_path / "r.sock", tmp_path / "rc.sock", tmp_path / "remote.log",
                         f"--link-port={port}", f"--cluster-key-file={key}"), \
            running_mearasd(tmp_path / "d.sock", tmp_path / "c.sock", tmp_path / "client.log",
                            f"--node-name={NODE}", f"--cluster-key-file={key}") as d:
        c = client(d)
        mixed = Assembly("mix", "pid:1@node-a", "test", "exact",
                         (VgpuPlacement(0, NODE, 0, 256 * MiB, ""),
                          VgpuPlacement(1, "node-b", 0, 256 * MiB, f"127.0.0.1:{port}")), time.time(),
                         identity=ME)
        c.instantiate(mixed)
        listed = {a: v for a, _, v in c.list_assemblies()}
        assert [v.remote_address for v in listed["mix"]] == ["", f"127.0.0.1:{port}"]
        r = d.run_probe("mix")
        assert r.returncode == 0, r.stdout + r.stderr
        seen = kv(r.stdout)
        assert seen["count"] == "2"
        assert seen["dev0_total"] == str(256 * MiB)         # local: the quota
        assert seen["dev1_within_quota_status"] == "0"      # remote vGPU: allocations work
        assert seen["dev1_memset_status"] == "0"
        assert "remote" in d.log.read_text() or "link" in d.log.read_text()


def test_list_shows_the_processes_on_an_assembly(mearasd: Daemon) -> None:
    c = client(mearasd)
    c.instantiate(assembly("seen", (0, 64 * MiB), (1, 64 * MiB)))
    assert c.attachments() == {"seen": []}
    p = subprocess.Popen([str(PROBE), "hold"], env=mearasd.client_env("seen"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if line.strip() == "ready":
                break
        assert c.attachments() == {"seen": [(p.pid, "")]}  # the kernel's pid of the client
        p.communicate("go\n", timeout=30)
    finally:
        kill_if_running(p)
    deadline = time.monotonic() + 5
    while c.attachments()["seen"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert c.attachments() == {"seen": []}
