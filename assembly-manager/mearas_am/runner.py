"""`mearas run`: book an assembly for a plain process, run it with the runtime library, and
release the booking when it exits, also when mearas is interrupted by a signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType

from .errors import MearasError
from .manager import Manager
from .model import Assembly, AssemblyRequest

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def process_owner(node: str, pid: int) -> str:
    return f"pid:{pid}@{node}"


def user_identity(uid: int) -> str:
    """The identity mearasd binds a process assembly to: the uid the program runs as (mearasd
    learns a client's uid from the kernel, SO_PEERCRED)."""
    return f"uid:{uid}"


def app_env(assembly: Assembly, libdir: str, base: dict[str, str],
            client_socket: str) -> dict[str, str]:
    """The program's environment: its assembly, the runtime library, and mearasd's client
    socket from the config (a MEARAS_SOCKET the user set wins)."""
    env = dict(base)
    env.setdefault("MEARAS_SOCKET", client_socket)
    env["MEARAS_ASSEMBLY"] = assembly.id
    env["MEARAS_VGPUS"] = str(len(assembly.vgpus))
    old = base.get("LD_LIBRARY_PATH", "")
    env["LD_LIBRARY_PATH"] = f"{libdir}:{old}" if old else libdir
    return env


def run_app(mgr: Manager, request: AssemblyRequest, argv: list[str]) -> int:
    if not argv:
        raise MearasError("mearas run: no command given (usage: mearas run --vgpus N -- APP ...)")
    a = mgr.start(request, process_owner(mgr.node, os.getpid()), user_identity(os.getuid()))
    child: subprocess.Popen[bytes] | None = None
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child is not None:
            child.send_signal(signum)
        else:
            pending.append(signum)

    old = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        try:
            child = subprocess.Popen(argv, env=app_env(a, mgr.config.libdir, dict(os.environ),
                                                      mgr.config.mearasd.client_socket))
        except OSError as e:
            print(f"mearas run: cannot execute {argv[0]}: {e}", file=sys.stderr)
            return 127
        for s in pending:
            child.send_signal(s)
        rc = child.wait()
        return 128 - rc if rc < 0 else rc
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _, problems = mgr.stop(a.id)
        for p in problems:
            print(f"mearas run: warning: {p}", file=sys.stderr)
