"""mearasd as an operator runs it: --version on every tool, one log format with levels (stderr,
syslog), systemd's notifications and unit files, refusal of a socket a live mearasd holds, and
a clear exit when no GPU can be used."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import BIN, MEARASD, TOP, kill_if_running, start, stop, wait_listening

# 2026-11-25T23:32:32.123Z mearasd[1234]: warning: message
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?P<who>[\w-]+)\[(?P<pid>\d+)\]: "
                  r"(?P<level>error|warning|info|debug): (?P<msg>.+)$")


def version() -> str:
    return subprocess.run([str(TOP / "scripts" / "version.sh")], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_version_everywhere() -> None:
    v = version()
    assert re.match(r"^\d+\.\d+\.\d+( \(git [0-9a-f]+(-dirty)?\))?$", v), v
    assert (TOP / "VERSION").read_text().strip() == v.split()[0]
    env = dict(os.environ, PYTHONPATH=str(TOP / "assembly-manager"))
    for cmd, name in (([str(MEARASD)], "mearasd"),
                      ([str(BIN / "mearas-ivshmem-serve")], "mearas-ivshmem-serve"),
                      ([sys.executable, "-m", "mearas_am.cli"], "mearas"),
                      ([sys.executable, "-m", "mearas_am.cli", "node-agent"], "mearas node-agent")):
        r = subprocess.run([*cmd, "--version"], capture_output=True, text=True, env=env,
                           timeout=30)
        assert (r.returncode, r.stdout) == (0, f"{name} {v}\n"), (cmd, r.stdout, r.stderr)


def log_lines(log: Path) -> list[re.Match[str]]:
    lines = log.read_text().splitlines()
    matches = [LINE.match(line) for line in lines]
    bad = [line for line, m in zip(lines, matches) if m is None]
    assert not bad, f"lines not in the log format: {bad}"
    return [m for m in matches if m is not None]


def test_log_format_and_levels(tmp_path: Path) -> None:
    # info: the startup lines; remote-link's own warning (a link port without a cluster key)
    # comes through mearasd's log in the same format
    link = ["--link-bind=127.0.0.1", f"--link-port={20000 + os.getpid() % 20000}"]
    proc, log = start(tmp_path, "--log-level=info", *link, name="info")
    wait_listening(tmp_path / "info.sock", proc)
    assert stop(proc) == 0
    lines = log_lines(log)
    assert {m["who"] for m in lines} == {"mearasd"} and str(proc.pid) in {m["pid"] for m in lines}
    assert any(m["level"] == "info" and m["msg"].startswith("device=sim") for m in lines)
    assert any(m["level"] == "warning" and "no cluster key configured" in m["msg"]
               for m in lines), log.read_text()
    # warn: no info lines; the warning stays
    proc, log = start(tmp_path, "--log-level=warn", *link, name="warn")
    wait_listening(tmp_path / "warn.sock", proc)
    assert stop(proc) == 0
    lines = log_lines(log)
    assert lines and {m["level"] for m in lines} == {"warning"}, log.read_text()
    # error: nothing for a clean start and stop
    proc, log = start(tmp_path, "--log-level=error", *link, name="error")
    wait_listening(tmp_path / "error.sock", proc)
    assert stop(proc) == 0
    assert log.read_text() == ""
    r = subprocess.run([str(MEARASD), "--log-level=loud"], capture_output=True, text=True)
    assert r.returncode == 2 and "bad --log-level 'loud'" in r.stderr


def test_remote_link_own_log_format(tmp_path: Path) -> None:
    """remote-link's writer for programs that give it no log callback: the same format."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    r = subprocess.run([str(TOP / "build" / "remote-link" / "link_node"), "call", "127.0.0.1",
                        str(port), "key"], capture_output=True, text=True, timeout=30)
    (tmp_path / "link.log").write_text(r.stderr)
    lines = log_lines(tmp_path / "link.log")
    assert [(m["who"], m["level"]) for m in lines] == [("remote-link", "error")], r.stderr
    assert lines[0]["msg"] == f"link to 127.0.0.1:{port} failed: cannot connect to peer"


def with_dev_log(tmp: Path, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """ARGV in a private mount namespace whose /dev (an overlay over the real one) has
    /dev/log pointing at TMP/log.sock: syslog(3) writes there; the host's /dev is untouched."""
    for d in ("upper", "work"):
        (tmp / d).mkdir(exist_ok=True)
    script = ("mount --make-rprivate / && mount -t overlay overlay -o lowerdir=/dev,"
              f"upperdir={tmp}/upper,workdir={tmp}/work /dev && mount -t tmpfs tmpfs /dev/shm && "
              f"ln -sf {tmp}/log.sock /dev/log && exec \"$@\"")
    with open(tmp / "stderr", "wb") as err:
        return subprocess.Popen(["unshare", "-m", "sh", "-c", script, "sh", *argv], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)


def syslog_messages(rx: socket.socket, until: str, timeout: float = 10) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not any(until in m for m in got):
        rx.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            got.append(rx.recv(4096).decode())
        except TimeoutError:
            raise AssertionError(f"no syslog message with {until!r}: {got}") from None
    return got


@pytest.mark.parametrize("how", ["--log=syslog", "JOURNAL_STREAM"])
def test_log_to_syslog(tmp_path: Path, how: str) -> None:
    if not shutil.which("unshare") or with_dev_log(tmp_path, ["true"], dict(os.environ)).wait(20):
        pytest.skip("no private mount namespace with an overlay /dev here: cannot give mearasd "
                    f"its own /dev/log ({(tmp_path / 'stderr').read_text().strip()})")
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(str(tmp_path / "log.sock"))
    env = dict(os.environ)
    args = [str(MEARASD), "--config=", "--device=sim", f"--socket={tmp_path}/s.sock",
            f"--control={tmp_path}/c.sock"]
    if how == "JOURNAL_STREAM":
        # --log=auto (the default): stderr is the journal stream systemd gave -> syslog
        st = os.stat(tmp_path / "stderr")
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    else:
        args.append(how)
    proc = with_dev_log(tmp_path, args, env)
    try:
        got = syslog_messages(rx, "device=sim")
        os.kill(proc.pid, 15)
        got += syslog_messages(rx, "stopped")
        assert proc.wait(10) == 0
    finally:
        kill_if_running(proc)
        rx.close()
    # "<PRI>Mmm dd hh:mm:ss mearasd[PID]: message", facility daemon (3), level info (6)
    info = next(m for m in got if "device=sim" in m)
    assert re.match(r"^<30>\w{3} [ \d]\d \d\d:\d\d:\d\d mearasd\[\d+\]: device=sim", info), info
    # nothing on stderr: every line went to syslog
    assert (tmp_path / "stderr").read_text() == ""


def test_notify_ready_after_listening_and_stopping(tmp_path: Path) -> None:
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(str(tmp_path / "notify.sock"))
    rx.settimeout(15)
    proc, log = start(tmp_path, name="n",
                      env=dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify.sock")))
    try:
        first = rx.recv(4096).decode()
        # READY=1 comes once the client and control sockets accept connections
        for s in ("n.sock", "n-ctl.sock"):
            assert stat.S_ISSOCK(os.lstat(tmp_path / s).st_mode)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.connect(str(tmp_path / s))
        assert "READY=1" in first.split("\n"), first
        os.kill(proc.pid, 15)
        assert "STOPPING=1" in rx.recv(4096).decode().split("\n")
        assert proc.wait(10) == 0
    finally:
        stop(proc)
        rx.close()
    # no NOTIFY_SOCKET: nothing is sent and nothing complains
    assert "sd_notify" not in log.read_text()


def test_live_socket_is_refused_stale_one_replaced(tmp_path: Path) -> None:
    live, log = start(tmp_path, name="live")
    try:
        wait_listening(tmp_path / "live.sock", live)
        wait_listening(tmp_path / "live-ctl.sock", live)
        ino = os.lstat(tmp_path / "live.sock").st_ino
        # the client socket of a live mearasd: refused, left as it is
        r = subprocess.run([str(MEARASD), "--config=", "--device=sim",
                            f"--socket={tmp_path}/live.sock", f"--control={tmp_path}/other.sock"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0
        assert f"{tmp_path}/live.sock is served by a live process (pid {live.pid})" in r.stderr
        # its control socket: refused too
        r = subprocess.run([str(MEARASD), "--config=", "--device=sim",
                            f"--socket={tmp_path}/other.sock", f"--control={tmp_path}/live-ctl.sock"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0
        assert f"control socket {tmp_path}/live-ctl.sock is served by another process already " \
               f"(pid {live.pid})" in r.stderr
        assert not (tmp_path / "other.sock").exists()
        # the first one kept both and still serves
        assert os.lstat(tmp_path / "live.sock").st_ino == ino
        wait_listening(tmp_path / "live.sock", live, timeout=1)
        wait_listening(tmp_path / "live-ctl.sock", live, timeout=1)
    finally:
        assert stop(live) == 0
    # the probe connections are not client errors in the live one's log
    assert "sent no hello" not in log.read_text()
    # a stale socket (its server gone: connections refused) is replaced
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / "stale.sock"))
    stale.close()
    proc, _ = start(tmp_path, f"--socket={tmp_path}/stale.sock", name="stale")
    try:
        wait_listening(tmp_path / "stale.sock", proc)
    finally:
        assert stop(proc) == 0


def test_live_vm_socket_is_refused(tmp_path: Path) -> None:
    vm = tmp_path / "vm.sock"
    live, _ = start(tmp_path, f"--vm=a:{vm}:64", name="vmlive")
    try:
        wait_listening(tmp_path / "vmlive.sock", live)
        deadline = time.monotonic() + 10
        while not vm.exists():  # the VM server starts in a process of its own
            assert time.monotonic() < deadline and live.poll() is None, "no VM socket"
            time.sleep(0.05)
        ino = os.lstat(vm).st_ino
        proc, log = start(tmp_path, f"--vm=b:{vm}:64", name="vmsecond")
        assert proc.wait(20) != 0
        assert f"VM b: {vm} is served by a live process already" in log.read_text()
        # neither its client socket nor the VM's was touched
        assert not (tmp_path / "vmsecond.sock").exists()
        assert os.lstat(vm).st_ino == ino and live.poll() is None
    finally:
        assert stop(live) == 0


def test_no_usable_gpu_exits(tmp_path: Path) -> None:
    # --device=cuda (the default) where the driver cannot be loaded
    env = dict(os.environ, MEARAS_CUDA_DRIVER=str(tmp_path / "no-libcuda.so.1"))
    t0 = time.monotonic()
    r = subprocess.run([str(MEARASD), "--config=", f"--socket={tmp_path}/g.sock",
                        f"--control={tmp_path}/g-ctl.sock"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "mearasd: no usable GPU: cannot load the CUDA driver" in r.stderr
    assert "--device=sim runs without one" in r.stderr
    assert time.monotonic() - t0 < 30
    # it never listened
    assert not (tmp_path / "g.sock").exists() and not (tmp_path / "g-ctl.sock").exists()
    # with --remote vGPUs (other nodes' GPUs) it serves those, and says so
    proc, log = start(tmp_path, "--device=cuda", "--remote=0=127.0.0.1:9", name="remote", env=env)
    try:
        wait_listening(tmp_path / "remote.sock", proc)
    finally:
        assert stop(proc) == 0
    assert "warning: no usable local GPU (cannot load the CUDA driver" in log.read_text()


UNITS = [TOP / "host-backend" / "systemd" / "mearasd.service",
         TOP / "assembly-manager" / "systemd" / "mearas-agent.service"]


def test_units_verify() -> None:
    """systemd-analyze verify on the shipped units (as written) with their ExecStart programs
    in place: the built mearasd at /usr/local/sbin and a `mearas` entry point at
    /usr/local/bin, on tmpfs mounts of a private mount namespace (the host is untouched)."""
    if not shutil.which("systemd-analyze") or not shutil.which("unshare"):
        pytest.skip("systemd-analyze or unshare missing")
    mearas = (f"#!/bin/sh\nPYTHONPATH={TOP}/assembly-manager exec {sys.executable} "
              "-m mearas_am.cli \"$@\"\n")
    script = ("mount --make-rprivate / && mount -t tmpfs tmpfs /usr/local/sbin && "
              f"cp {MEARASD} /usr/local/sbin/mearasd && mount -t tmpfs tmpfs /usr/local/bin && "
              "printf '%s' \"$1\" >/usr/local/bin/mearas && chmod 755 /usr/local/bin/mearas && "
              "/usr/local/bin/mearas --version && shift && exec systemd-analyze verify \"$@\"")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", mearas, *map(str, UNITS)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mearas "), r.stdout
    # verify exits 0 on unknown keys and bad values too: its warnings fail the test
    assert r.stderr == "", r.stderr
    for unit in UNITS:
        text = unit.read_text()
        assert re.search(r"^Type=notify$", text, re.M), unit
        assert re.search(r"^Restart=on-failure$", text, re.M), unit
    assert re.search(r"^RuntimeDirectory=mearas$", UNITS[0].read_text(), re.M)


def test_sigterm_as_the_accept_loop_begins_stops_it(tmp_path: Path) -> None:
    # a SIGTERM that came between the accept loop's test of its stop flag and its wait used to
    # leave mearasd asleep in poll until the next connection (systemd would SIGKILL it after
    # its stop timeout): signals now reach it only inside ppoll. The log line that comes just
    # before the loop is where the race is widest.
    for i in range(20):
        proc, log = start(tmp_path, name=f"s{i}")
        deadline = time.monotonic() + 10
        while "per user:" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGTERM)
        try:
            assert proc.wait(3) == 0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"start {i}: mearasd still running 3 s after SIGTERM") from None
