"""Starts build/bin/mearasd --device=sim with private sockets; stops it by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from procs import kill_if_running as kill_if_running, wait_listening as wait_listening  # for the tests

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "assembly-manager"))
MEARASD = TOP / "build" / "bin" / "mearasd"
LIBDIR = TOP / "build" / "lib"
PROBE = TOP / "build" / "tests" / "control" / "assembly_probe"
NODE = "node-a"


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    data_socket: str
    control_socket: str
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run_probe(self, assembly: str | None, *args: str, vgpus: int | None = None,
                  timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PROBE), *args], env=self.client_env(assembly, vgpus),
                              capture_output=True, text=True, timeout=timeout)

    def client_env(self, assembly: str | None, vgpus: int | None = None) -> dict[str, str]:
        env = dict(os.environ, MEARAS_SOCKET=self.data_socket, LD_LIBRARY_PATH=str(LIBDIR),
                   MEARAS_DATA_MB="16")
        env.pop("MEARAS_ASSEMBLY", None)
        env.pop("MEARAS_VGPUS", None)
        if assembly is not None:
            env["MEARAS_ASSEMBLY"] = assembly
        if vgpus is not None:
            env["MEARAS_VGPUS"] = str(vgpus)
        return env


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 5) -> None:
    """SIGTERM to PROC (by its PID), SIGKILL when it has not exited within TIMEOUT s."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def running_mearasd(data: Path, control: Path, log: Path, *args: str) -> Iterator[Daemon]:
    """build/bin/mearasd --device=sim ARGS on the sockets DATA and CONTROL, its output into
    LOG, once both listen; stopped by PID at the end, its log then copied to stderr."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(MEARASD), "--device=sim", f"--socket={data}",
                                 f"--control={control}", *args], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_listening(str(control), proc)
        wait_listening(str(data), proc)
        yield Daemon(proc, str(data), str(control), log)
    finally:
        stop_process(proc)
        sys.stderr.write(log.read_text(errors="replace"))


@pytest.fixture
def mearasd(tmp_path: Path) -> Iterator[Daemon]:
    with running_mearasd(tmp_path / "d.sock", tmp_path / "c.sock", tmp_path / "mearasd.log",
                         f"--node-name={NODE}", "--quota-mb=1024") as d:
        yield d
