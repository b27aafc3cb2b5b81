"""Starts the real mearasd (build/bin/mearasd --device=sim) with private sockets for the
manager's tests; stops it by its PID. `make test` builds it first."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from procs import wait_listening

TOP = Path(__file__).resolve().parents[2]
MEARASD = TOP / "build" / "bin" / "mearasd"


@dataclass
class RealMearasd:
    node: str
    control_socket: str
    client_socket: str
    link_port: int  # 0: started without a link server
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, tmp: Path, key: bool = True) -> RealMearasd:
        if not MEARASD.exists():
            raise RuntimeError(f"{MEARASD} is not built (make -C {TOP} build/bin/mearasd)")
        args = [str(MEARASD), "--device=sim", f"--socket={self.client_socket}",
                f"--control={self.control_socket}", f"--node-name={self.node}"]
        if self.link_port:
            args.append(f"--link-port={self.link_port}")
        if key:
            keyfile = tmp / f"{self.node}.key"
            keyfile.write_text("test cluster key 0123456789abcdef\n")
            args.append(f"--cluster-key-file={keyfile}")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        for path in (self.control_socket, self.client_socket):
            wait_listening(path, self.proc, log=self.log)
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_mearasd(tmp: Path, node: str = "node-a", link: bool = True) -> RealMearasd:
    return RealMearasd(node, str(tmp / f"{node}-control.sock"), str(tmp / f"{node}.sock"),
                       free_tcp_port() if link else 0, tmp / f"{node}-mearasd.log")


def dump_log(d: RealMearasd) -> None:
    if d.log.exists():
        sys.stderr.write(d.log.read_text(errors="replace"))
