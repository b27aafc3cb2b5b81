"""Namespaces, veth pairs and tbf shaping; a mearasd node inside a namespace.
Each test that can runs twice: with iproute2 and with busybox (the GPU
machine's way: no `ip` there), through scripts/netns-pair.sh."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mearas_exp.config import HarnessError, Paths, Unavailable
from mearas_exp.netns import (CLIENT_ADDR, NETNS_DIR, NETNS_SCRIPT, Topology, list_ours, ns_exec,
                              remote_addr)
from mearas_exp.netprobe import tcp_rtt_us
from mearas_exp.nodes import Node
from mearas_exp.resultline import find_result

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

_SINK = ("import socket,sys\nl=socket.socket();l.bind((sys.argv[1],7801));l.listen(1)\n"
         "print('ready',flush=True)\nc,_=l.accept()\nwhile c.recv(1<<20): pass\n")
_SEND = ("import socket,sys,time\ns=socket.create_connection((sys.argv[1],7801))\n"
         "b=b'x'*(1<<20);t=time.perf_counter()\nfor i in range(60): s.sendall(b)\n"
         "s.shutdown(socket.SHUT_WR);s.recv(1)\nprint(60*8*(1<<20)/(time.perf_counter()-t)/1e9)\n")


def busybox() -> str | None:
    local = Paths.default().mearasd.parents[1] / "tools/busybox"
    return str(local) if local.is_file() else shutil.which("busybox")


@pytest.fixture(params=["iproute2", "busybox"])
def tool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name: str = request.param
    if name == "iproute2" and shutil.which("ip") is None:
        pytest.skip("no iproute2")
    if name == "busybox" and busybox() is None:
        pytest.skip("no busybox (make busybox; Debian busybox-static)")
    monkeypatch.setenv("MEARAS_NETNS_TOOL", name)
    return name


def gbit_per_s(topo: Topology) -> float:
    sink = subprocess.Popen([*ns_exec(topo.client_ns), "python3", "-c", _SINK, CLIENT_ADDR],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
        r = subprocess.run([*ns_exec(topo.remote_ns(0)), "python3", "-c", _SEND, CLIENT_ADDR],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return float(r.stdout)
    finally:
        sink.wait(10)


def ns_inodes(topo: Topology) -> set[int]:
    return {os.stat(f"{NETNS_DIR}/{ns}").st_ino for ns in topo.created}


def assert_gone(inodes: set[int], host_links: set[str]) -> None:
    """No namespace of ours left, by name or held by a process; host links as before."""
    assert list_ours() == []
    held = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            held.add(os.stat(f"/proc/{pid}/ns/net").st_ino)
        except OSError:
            pass
    assert not inodes & held
    assert set(os.listdir("/sys/class/net")) == host_links


def test_two_namespaces_talk_tcp_and_teardown(tool: str) -> None:
    host_links = set(os.listdir("/sys/class/net"))
    topo = Topology(2, None, tag="t0")
    topo.create()
    inodes = ns_inodes(topo)
    try:
        assert topo.tool.split()[0] == tool
        assert set(list_ours()) == {topo.client_ns, topo.remote_ns(0), topo.remote_ns(1)}
        # both remote nodes reach the client node through the bridge, and each other
        assert tcp_rtt_us(CLIENT_ADDR, 7700, topo.client_ns, topo.remote_ns(0), 200) > 0
        assert tcp_rtt_us(remote_addr(1), 7700, topo.remote_ns(1), topo.client_ns, 200) > 0
        assert tcp_rtt_us(remote_addr(0), 7700, topo.remote_ns(0), topo.remote_ns(1), 200) > 0
        assert gbit_per_s(topo) > 0.5  # unshaped veth: several Gbit/s
    finally:
        topo.destroy()
    assert len(inodes) == 3
    assert_gone(inodes, host_links)


def test_busybox_when_no_ip_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU machine's case: PATH without iproute2's `ip` and `tc`."""
    if busybox() is None:
        pytest.skip("no busybox")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for name in os.listdir(d) if os.path.isdir(d) else []:
            if name not in ("ip", "tc") and not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(Path(d) / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("MEARAS_NETNS_TOOL", raising=False)
    assert shutil.which("ip") is None
    host_links = set(os.listdir("/sys/class/net"))
    topo = Topology(1, None, tag="t4")
    topo.create()
    inodes = ns_inodes(topo)
    try:
        assert topo.tool.startswith("busybox ")
        assert tcp_rtt_us(remote_addr(0), 7700, topo.remote_ns(0), topo.client_ns, 200) > 0
    finally:
        topo.destroy()
    assert_gone(inodes, host_links)
    with pytest.raises(Unavailable, match="tbf"):
        Topology(1, "1gbit", tag="t5").create()
    assert list_ours() == []


def test_shaping_refused_with_busybox(tool: str) -> None:
    if tool != "busybox":
        pytest.skip("busybox only")
    with pytest.raises(Unavailable, match="tbf"):
        Topology(1, "1gbit", tag="t6").create()
    assert list_ours() == []


def test_shaped_pair_and_cleanup(tool: str) -> None:
    if tool != "iproute2" or shutil.which("tc") is None:
        pytest.skip("shaping needs iproute2 and tc")
    topo = Topology(2, "1gbit", tag="t1")
    topo.create()
    try:
        q = subprocess.run([*ns_exec(topo.remote_ns(1)), "tc", "qdisc", "show", "dev", "v1r"],
                           capture_output=True, text=True, check=True).stdout
        assert "tbf" in q and "1Gbit" in q
        assert tcp_rtt_us(remote_addr(1), 7700, topo.remote_ns(1), topo.client_ns, 200) > 0
        rate = gbit_per_s(topo)
        assert 0.2 < rate < 1.3, f"{rate:.2f} Gbit/s through a 1 Gbit/s tbf"
    finally:
        topo.destroy()
    assert list_ours() == []


def test_addresses_only_inside_namespaces(tool: str) -> None:
    topo = Topology(1, None, tag="t2")
    topo.create()
    try:
        host = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        assert "10.250.2." not in host
        inside = subprocess.run([str(NETNS_SCRIPT), "ip", topo.remote_ns(0), "-o", "addr"],
                                capture_output=True, text=True).stdout
        assert remote_addr(0) in inside
    finally:
        topo.destroy()


def test_existing_namespace_left_alone(tool: str) -> None:
    topo = Topology(0, None, tag="t7")
    topo.create()
    try:
        again = Topology(0, None, tag="t7")
        with pytest.raises(HarnessError, match="exists"):
            again.create()
        assert list_ours() == [topo.client_ns]  # the first one's namespace is still there
    finally:
        topo.destroy()
    assert list_ours() == []


def test_node_inside_a_namespace(tool: str, tmp_path: Path) -> None:
    paths = Paths.default()
    topo = Topology(0, None, tag="t3")
    topo.create()
    node = Node("client", ["--device=sim", "--vgpus=1"], tmp_path / "c.sock", tmp_path / "c.log",
                netns=topo.client_ns)
    try:
        node.start(paths.mearasd)
        node.wait_ready()
        # the PID is mearasd's own, living in the namespace
        assert os.readlink(f"/proc/{node.pid}/exe") == str(paths.mearasd.resolve())
        assert os.readlink(f"/proc/{node.pid}/ns/net") != os.readlink("/proc/self/ns/net")
        env = {**os.environ, "LD_LIBRARY_PATH": str(paths.libdir), "MEARAS_SOCKET": str(node.socket)}
        r = subprocess.run([str(paths.app("cp")), "--no-check", "--iterations", "2"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert find_result(r.stdout).iterations == 2
    finally:
        node.stop()
        topo.destroy()
    assert not node.alive() and not node.socket.exists() and list_ours() == []
