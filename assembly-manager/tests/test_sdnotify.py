"""`mearas node-agent` under a Type=notify unit: READY=1 once it has published this node,
STOPPING=1 when it is told to stop ($NOTIFY_SOCKET, sd_notify(3)'s datagram)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mearas_am.sdnotify import notify
from procs import kill_if_running

from .conftest import write_config
from .fake_mearasd import FakeMearasd
from .test_cli import PKG_ROOT, mearas


def test_agent_notifies_ready_and_stopping(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfg = write_config(tmp_path / "a.toml", socket_path=fake_mearasd.path)
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(str(tmp_path / "notify.sock"))
    rx.settimeout(30)
    env = dict(os.environ, PYTHONPATH=str(PKG_ROOT), NOTIFY_SOCKET=str(tmp_path / "notify.sock"))
    agent = subprocess.Popen([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg),
                              "node-agent", "--interval", "0.5"], env=env)
    try:
        ready = rx.recv(4096).decode().split("\n")
        assert "READY=1" in ready and "STATUS=publishing node node-a every 0.5 s" in ready, ready
        # ready means published
        assert [n["name"] for n in json.loads(mearas(cfg, "nodes", "--json").stdout)] == ["node-a"]
        agent.send_signal(signal.SIGTERM)
        assert rx.recv(4096).decode() == "STOPPING=1"
        assert agent.wait(20) == 0
    finally:
        kill_if_running(agent)
        rx.close()


def test_notify_abstract_address_and_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"mearas-test-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as rx:
        rx.bind("\0" + name)
        rx.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify("READY=1")
        assert rx.recv(100) == b"READY=1"
        monkeypatch.delenv("NOTIFY_SOCKET")
        assert not notify("READY=1")
