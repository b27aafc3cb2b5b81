"""mearasd processes ("nodes"): start, wait until ready, stop by PID."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import HarnessError
from .netns import ns_exec


@dataclass
class Node:
    name: str
    args: list[str]
    socket: Path
    log: Path
    netns: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise HarnessError(f"node {self.name} is not running")
        return self.proc.pid

    def command(self, mearasd: Path) -> list[str]:
        return [*ns_exec(self.netns), str(mearasd), f"--socket={self.socket}", *self.args]

    def start(self, mearasd: Path) -> None:
        env = {**os.environ, **self.env}
        env.pop("MEARAS_SOCKET", None)
        with open(self.log, "wb") as log:
            # netns-pair.sh exec execs the program, so the PID is mearasd's own
            self.proc = subprocess.Popen(self.command(mearasd), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)

    def wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise HarnessError(f"mearasd node {self.name} exited ({self.proc.returncode}): "
                                   f"{self.log_tail()}")
            if self.socket.is_socket():
                return
            time.sleep(0.05)
        raise HarnessError(f"mearasd node {self.name} not ready after {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.socket.unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PROBE = ("import socket,sys\n"
          "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=1)\n"
          "s.close()\n")


def wait_tcp(host: str, port: int, netns: str | None, node: Node, timeout: float = 15.0) -> None:
    """Wait until host:port accepts a connection as seen from namespace netns."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not node.alive():
            raise HarnessError(f"node {node.name} exited: {node.log_tail()}")
        r = subprocess.run([*ns_exec(netns), "python3", "-c", _PROBE, host, str(port)],
                           capture_output=True, timeout=10)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    raise HarnessError(f"{host}:{port} of node {node.name} not reachable after {timeout:.0f} s")
