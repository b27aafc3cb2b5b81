"""Namespaces, veth pairs and tbf shaping; a mearasd node inside a namespace."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mearas_exp.config import Paths
from mearas_exp.netns import CLIENT_ADDR, Topology, list_ours, ns_exec, remote_addr
from mearas_exp.netprobe import tcp_rtt_us
from mearas_exp.nodes import Node
from mearas_exp.resultline import find_result

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("tc") is None,
                                reason="needs root and iproute2")

_SINK = ("import socket,sys\nl=socket.socket();l.bind((sys.argv[1],7801));l.listen(1)\n"
         "print('ready',flush=True)\nc,_=l.accept()\nwhile c.recv(1<<20): pass\n")
_SEND = ("import socket,sys,time\ns=socket.create_connection((sys.argv[1],7801))\n"
         "b=b'x'*(1<<20);t=time.perf_counter()\nfor i in range(60): s.sendall(b)\n"
         "s.shutdown(socket.SHUT_WR);s.recv(1)\nprint(60*8*(1<<20)/(time.perf_counter()-t)/1e9)\n")


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


def test_shaped_pair_and_cleanup() -> None:
    topo = Topology(2, "1gbit", tag="t1")
    topo.create()
    try:
        assert set(list_ours()) == {topo.client_ns, topo.remote_ns(0), topo.remote_ns(1)}
        q = subprocess.run([*ns_exec(topo.remote_ns(1)), "tc", "qdisc", "show", "dev", "v1r"],
                           capture_output=True, text=True, check=True).stdout
        assert "tbf" in q and "1Gbit" in q
        # both remote nodes reach the client node through the bridge, and each other
        assert tcp_rtt_us(remote_addr(1), 7700, topo.remote_ns(1), topo.client_ns, 200) > 0
        assert tcp_rtt_us(remote_addr(0), 7700, topo.remote_ns(0), topo.remote_ns(1), 200) > 0
        rate = gbit_per_s(topo)
        assert 0.2 < rate < 1.3, f"{rate:.2f} Gbit/s through a 1 Gbit/s tbf"
    finally:
        topo.destroy()
    assert list_ours() == []


def test_addresses_only_inside_namespaces() -> None:
    topo = Topology(1, None, tag="t2")
    topo.create()
    try:
        host = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        assert "10.250.2." not in host
        inside = subprocess.run(["ip", "-n", topo.remote_ns(0), "-o", "addr"], capture_output=True,
                                text=True).stdout
        assert remote_addr(0) in inside
    finally:
        topo.destroy()


def test_node_inside_a_namespace(tmp_path: Path) -> None:
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
