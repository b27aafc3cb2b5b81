"""The processes the Python test suites start (mearasd, clients, agents): waiting
for one to listen, and killing what a failed test left running; procs.sh is the
shell suites' side. tests/control, tests/daemon and assembly-manager/tests put
this folder on sys.path (their __init__.py)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any


def wait_listening(path: str | Path, proc: subprocess.Popen[bytes], timeout: float = 10,
                   log: Path | None = None) -> None:
    """Until something accepts on the unix socket at PATH; PROC (mearasd) exiting first, or
    TIMEOUT s passing, raises RuntimeError (with LOG's text, when given, after an exit)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = ": " + log.read_text(errors="replace") if log is not None else ""
            raise RuntimeError(f"mearasd exited with {proc.returncode} before listening on "
                               f"{path}{said}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(path))
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"mearasd did not listen on {path} within {timeout} s")


def kill_if_running(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL to PROC (by its PID) and reaped, when it has not exited: a test's finally."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
