"""Waiting for a mearasd that tests started to listen on a unix socket (tests/control,
tests/daemon and assembly-manager/tests put this folder on sys.path)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


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
