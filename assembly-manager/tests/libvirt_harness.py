"""Runs a real libvirtd (and virtlogd) as root for the hook tests, with the mearas hook
installed before libvirtd starts (libvirt only looks for hooks at startup)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HOOK = Path("/etc/libvirt/hooks/qemu")
URI = "qemu:///system"
STATE = Path("/run/mearas-test")  # PIDs of daemons this harness started, for crash recovery
PKG_ROOT = Path(__file__).resolve().parents[1]


def virsh(*args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"virsh {' '.join(args)}: {r.stderr.strip()}")
    return r


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _stop(pid: int) -> None:
    if not _pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


class Libvirt:
    def __init__(self, hook_config: Path) -> None:
        self.hook_config = hook_config
        self.started: dict[str, int] = {}
        self.hook_backup: Path | None = None

    def _cleanup_leftovers(self) -> None:
        for name in ("libvirtd", "virtlogd"):
            pid = _read_pid(STATE / f"{name}.pid")
            if pid is not None:
                _stop(pid)  # left over by a crashed run of this harness
                (STATE / f"{name}.pid").unlink()
        pid = _read_pid(Path("/run/libvirtd.pid"))
        if pid is not None and _pid_alive(pid):
            raise RuntimeError(f"a libvirtd not started by these tests runs (pid {pid}); stop "
                               "it so the test can start one with the mearas hook installed")

    def start(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("the libvirt tests need root (libvirtd qemu:///system)")
        self._cleanup_leftovers()
        STATE.mkdir(parents=True, exist_ok=True)
        VM_DIR.mkdir(mode=0o755, exist_ok=True)
        if HOOK.exists():
            self.hook_backup = STATE / "qemu-hook.backup"
            shutil.copy2(HOOK, self.hook_backup)
        subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(self.hook_config),
                        "install-hook", "--force", "--hook-path", str(HOOK), "--pythonpath",
                        str(PKG_ROOT)], check=True, capture_output=True,
                       env=dict(os.environ, PYTHONPATH=str(PKG_ROOT)))
        for name, cmd in (("virtlogd", ["virtlogd", "-d"]), ("libvirtd", ["libvirtd", "-d"])):
            pidfile = Path(f"/run/{name}.pid")
            old = _read_pid(pidfile)
            if name == "virtlogd" and old is not None and _pid_alive(old):
                continue  # a running virtlogd serves us as well
            subprocess.run(cmd, check=True)
            for _ in range(100):
                pid = _read_pid(pidfile)
                if pid is not None and pid != old and _pid_alive(pid):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"{name} did not start")
            self.started[name] = pid
            (STATE / f"{name}.pid").write_text(str(pid))
        deadline = time.monotonic() + 90
        while virsh("version").returncode != 0:  # the first connection probes QEMU (~10 s)
            if time.monotonic() > deadline:
                raise RuntimeError("libvirtd did not answer within 90 s")
            time.sleep(0.3)

    def stop(self, domain_prefix: str) -> None:
        r = virsh("list", "--all", "--name")
        for name in r.stdout.split():
            if name.startswith(domain_prefix):
                virsh("destroy", name)
                virsh("undefine", name)
        for name in ("libvirtd", "virtlogd"):
            pid = self.started.get(name)
            if pid is not None:
                _stop(pid)
                (STATE / f"{name}.pid").unlink(missing_ok=True)
        if self.hook_backup is not None:
            shutil.copy2(self.hook_backup, HOOK)
        else:
            HOOK.unlink(missing_ok=True)


VM_DIR = STATE / "vm"  # the hook's [vm] socket_dir in these tests (QEMU must reach it)


def shmem_xml(name: str, model: str = "ivshmem-doorbell", vectors: int = 2,
              path: str | None = None) -> str:
    return (f"<shmem name='mearas-{name}'><model type='{model}'/>"
            f"<server path='{path or VM_DIR / (name + '.sock')}'/>"
            f"<msi vectors='{vectors}' ioeventfd='on'/></shmem>")


def domain_xml(name: str, assembly_attrs: str | None, shmem: str | None = None) -> str:
    """A domain with the metadata ASSEMBLY_ATTRS (when given) and, with it, its mearas device
    (shmem_xml(), unless SHMEM says otherwise: "" for none)."""
    meta = ("" if assembly_attrs is None else
            '<metadata><mearas:assembly xmlns:mearas="https://mearas.dev/xmlns/assembly/1" '
            f"{assembly_attrs}/></metadata>")
    if shmem is None:
        shmem = "" if assembly_attrs is None else shmem_xml(name)
    # no disk, no guest OS: SeaBIOS finds nothing to boot, QEMU keeps running (TCG)
    return f"""<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  {meta}
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    {shmem}
    <memballoon model='none'/>
  </devices>
</domain>
"""
