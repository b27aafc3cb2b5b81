"""Starts real etcd members (Debian etcd-server) on loopback ports for the tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

ETCD = "/usr/bin/etcd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"


class EtcdCluster:
    def __init__(self, base: Path, size: int) -> None:
        self.members = [Member(f"m{i}", free_port(), free_port(), base / f"m{i}.etcd",
                               base / f"m{i}.log") for i in range(size)]

    @property
    def endpoints(self) -> tuple[str, ...]:
        return tuple(m.endpoint for m in self.members)

    def _initial_cluster(self) -> str:
        return ",".join(f"{m.name}=http://127.0.0.1:{m.peer_port}" for m in self.members)

    def start_member(self, m: Member) -> None:
        cmd = [ETCD, "--name", m.name, "--data-dir", str(m.data_dir),
               "--listen-client-urls", f"http://127.0.0.1:{m.client_port}",
               "--advertise-client-urls", f"http://127.0.0.1:{m.client_port}",
               "--listen-peer-urls", f"http://127.0.0.1:{m.peer_port}",
               "--initial-advertise-peer-urls", f"http://127.0.0.1:{m.peer_port}",
               "--initial-cluster", self._initial_cluster(),
               "--initial-cluster-state", "new", "--initial-cluster-token", "mearas-test",
               "--heartbeat-interval", "50", "--election-timeout", "500"]
        m.proc = subprocess.Popen(cmd, stdout=open(m.log, "ab"), stderr=subprocess.STDOUT)

    def start(self) -> None:
        for m in self.members:
            self.start_member(m)
        for m in self.members:
            self.wait_healthy(m)

    def wait_healthy(self, m: Member, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if m.proc is not None and m.proc.poll() is not None:
                raise RuntimeError(f"etcd {m.name} exited: {m.log.read_text()[-2000:]}")
            try:
                r = requests.get(f"http://{m.endpoint}/health", timeout=1)
                if r.ok and r.json().get("health") in ("true", True):
                    return
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"etcd {m.name} not healthy after {timeout}s: "
                           f"{m.log.read_text()[-2000:]}")

    def kill_member(self, m: Member) -> None:
        if m.proc is not None and m.proc.poll() is None:
            os.kill(m.proc.pid, signal.SIGKILL)
            m.proc.wait()

    def stop(self) -> None:
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None:
                m.proc.terminate()
                try:
                    m.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.kill_member(m)
