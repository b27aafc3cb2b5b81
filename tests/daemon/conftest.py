"""mearasd (build/bin/mearasd --device=sim) started on private sockets, stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from procs import kill_if_running as kill_if_running, wait_listening as wait_listening  # for the tests

TOP = Path(__file__).resolve().parents[2]
BIN = TOP / "build" / "bin"
MEARASD = BIN / "mearasd"


def start(tmp: Path, *args: str, name: str = "m", env: dict[str, str] | None = None,
          sockets: bool = True) -> tuple[subprocess.Popen[bytes], Path]:
    """mearasd --device=sim ARGS (with its own --socket/--control under TMP unless
    sockets=False), stderr to TMP/NAME.log; returns the process and the log's path."""
    log = tmp / f"{name}.log"
    own = [f"--socket={tmp / (name + '.sock')}", f"--control={tmp / (name + '-ctl.sock')}"] \
        if sockets else []
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(MEARASD), "--config=", "--device=sim", *own, *args],
                                stdout=out, stderr=out, env=env)
    return proc, log


def stop(proc: subprocess.Popen[bytes], timeout: float = 10) -> int:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError("mearasd did not stop on SIGTERM") from None
    return proc.returncode
