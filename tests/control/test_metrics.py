"""mearasd's metrics endpoint (--metrics-port) and `mearas top`, against mearasd --device=sim
running tests/control/metrics_probe.cu (known copies, launches and synchronizations)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mearas_am.control.client import SocketMearasdClient
from mearas_am.model import Assembly, VgpuPlacement

from .conftest import (LIBDIR, MEARASD, NODE, TOP, Daemon, free_port, kill_if_running, running_mearasd,
                       wait_listening)

PROBE = TOP / "build" / "tests" / "control" / "metrics_probe"
MiB = 1 << 20
ME = f"uid:{os.getuid()}"
Labels = tuple[tuple[str, str], ...]


@contextmanager
def daemon(tmp: Path, name: str, *args: str) -> Iterator[Daemon]:
    with running_mearasd(tmp / f"{name}.sock", tmp / f"{name}-c.sock", tmp / f"{name}.log",
                         "--quota-mb=1024", *args) as d:
        yield d


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Daemon, str]]:
    port = free_port()
    with daemon(tmp_path, "d", f"--node-name={NODE}", f"--metrics-port={port}") as d:
        yield d, f"http://127.0.0.1:{port}/metrics"


def endpoint(url: str) -> tuple[str, int]:
    """(host, port) of the metrics URL, for raw connections to it."""
    host, port = url[len("http://"):].split("/")[0].split(":")
    return host, int(port)


@contextmanager
def held_open(addr: tuple[str, int], n: int, first: bytes = b"", gap_s: float = 0.0) -> Iterator[None]:
    """n connections to addr, each sending first (and then nothing), gap_s apart; closed after."""
    held = []
    try:
        for _ in range(n):
            s = socket.create_connection(addr, timeout=10)
            s.sendall(first)
            held.append(s)
            time.sleep(gap_s)
        yield
    finally:
        for s in held:
            s.close()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        body: bytes = r.read()
        return body.decode()


def samples(text: str) -> dict[tuple[str, Labels], float]:
    """Every sample by name and labels, through Prometheus' Python parser."""
    out: dict[tuple[str, Labels], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def pick(ss: dict[tuple[str, Labels], float], name: str, **want: str) -> float:
    """The sum of the samples of name whose labels include want (0 when none)."""
    return sum(v for (n, lb), v in ss.items()
               if n == name and all(dict(lb).get(k) == x for k, x in want.items()))


def settled(url: str) -> str:
    """A scrape once no client is left (a worker's last counts land just after its client ends,
    and mearasd folds them when the worker has exited)."""
    deadline = time.monotonic() + 10
    while True:
        text = scrape(url)
        if pick(samples(text), "mearas_vgpu_clients") == 0 or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def scrape_until(url: str, ok: Callable[[dict[tuple[str, Labels], float]], bool]) -> dict[tuple[str, Labels], float]:
    """Scrapes until ok says the figures are in (workers publish some every 200 ms), 10 s at most."""
    deadline = time.monotonic() + 10
    while True:
        ss = samples(scrape(url))
        if ok(ss) or time.monotonic() > deadline:
            return ss
        time.sleep(0.05)


def promtool_check(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is not installed"
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def run_probe(d: Daemon, *args: str, assembly: str | None = None) -> subprocess.CompletedProcess[str]:
    env = d.client_env(assembly)
    return subprocess.run([str(PROBE), *args], env=env, capture_output=True, text=True, timeout=60)


def mearas(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(TOP / "assembly-manager"))
    return subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg), *args],
                          env=env, capture_output=True, text=True, timeout=60)


def listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A":  # LISTEN
                inodes.add(f[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


# ---- the endpoint

def test_metrics_off_by_default(tmp_path: Path) -> None:
    with daemon(tmp_path, "d") as d:
        r = run_probe(d, str(MiB), "1", "1")
        assert r.returncode == 0, r.stderr
        assert not socket_inodes(d.proc.pid) & listening_inodes()  # no TCP port open
        assert "metrics: http" not in d.log.read_text()


def test_metrics_name_the_host_without_node_name(tmp_path: Path) -> None:
    # the node label defaults to the host's name, as the control socket's
    # node does (a scrape crashed mearasd when the name was still unset)
    port = free_port()
    with daemon(tmp_path, "d", f"--metrics-port={port}") as d:
        text = scrape(f"http://127.0.0.1:{port}/metrics")
        assert d.proc.poll() is None
        nodes = {s.labels.get("node") for fam in text_string_to_metric_families(text) for s in fam.samples}
        assert socket.gethostname() in nodes, nodes


def test_metrics_pass_promtool_and_move_when_a_program_runs(served: tuple[Daemon, str]) -> None:
    d, url = served
    before_text = scrape(url)
    promtool_check(before_text)
    before = samples(before_text)
    assert pick(before, "mearas_info", node=NODE, device="sim") == 1
    r = run_probe(d, str(3 * MiB), "7", "4")
    assert r.returncode == 0, r.stderr
    after_text = settled(url)
    promtool_check(after_text)
    after = samples(after_text)

    def grew(name: str, **lb: str) -> float:
        return pick(after, name, owner=ME, vgpu="0", **lb) - pick(before, name, owner=ME, vgpu="0", **lb)

    # the probe's own work on vGPU 0: 3 MiB each way, 7 launches, 4 device synchronizations,
    # one allocation over the quota refused by mearasd
    assert grew("mearas_vgpu_copy_bytes_total", direction="h2d") == 3 * MiB
    assert grew("mearas_vgpu_copy_bytes_total", direction="d2h") == 3 * MiB
    assert grew("mearas_vgpu_calls_total", **{"class": "launch"}) == 7
    assert grew("mearas_vgpu_calls_total", **{"class": "sync"}) == 4
    assert grew("mearas_vgpu_calls_total", **{"class": "copy"}) == 2
    assert grew("mearas_vgpu_calls_total", **{"class": "memory"}) >= 3  # alloc, refused alloc, free
    assert grew("mearas_vgpu_errors_total") == 1
    # each synchronizing call lands in the histogram: at least the 4 syncs and 2 copies
    assert grew("mearas_vgpu_sync_latency_seconds_count") >= 6
    assert grew("mearas_vgpu_sync_latency_seconds_bucket", le="+Inf") == \
        grew("mearas_vgpu_sync_latency_seconds_count")
    assert grew("mearas_vgpu_sync_latency_seconds_sum") > 0
    # vGPU 1 was not used by the probe
    assert pick(after, "mearas_vgpu_calls_total", owner=ME, vgpu="1") == 0
    # sim: no made-up utilization
    assert pick(after, "mearas_gpu_utilization_ratio") == 0
    assert "no GPU utilization" in after_text


def test_metrics_report_live_memory_against_quota(served: tuple[Daemon, str]) -> None:
    d, url = served
    p = subprocess.Popen([str(PROBE), str(MiB), "1", "1", "hold"], env=d.client_env(None),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "ready"
        live = scrape_until(url, lambda ss: pick(ss, "mearas_vgpu_memory_used_bytes", owner=ME, vgpu="0") > 0)
        assert pick(live, "mearas_vgpu_clients", owner=ME, vgpu="0") == 1
        used = pick(live, "mearas_vgpu_memory_used_bytes", owner=ME, vgpu="0")
        assert 17 * MiB <= used < 64 * MiB  # 1 MiB + 16 MiB held, rounded up to the heap's granularity
        assert pick(live, "mearas_vgpu_memory_quota_bytes", owner=ME, vgpu="0") == 1024 * MiB
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.wait(30) == 0
    finally:
        kill_if_running(p)
    done = samples(settled(url))
    assert pick(done, "mearas_vgpu_clients", owner=ME, vgpu="0") == 0
    assert not [k for k in done if k[0] == "mearas_vgpu_memory_used_bytes"]
    assert pick(done, "mearas_vgpu_calls_total", owner=ME, vgpu="0", **{"class": "launch"}) == 1


def test_metrics_bad_requests_get_errors(served: tuple[Daemon, str]) -> None:
    d, url = served
    base = url.rsplit("/", 1)[0]
    for path in ("/", "/metricsx", "/metrics/../x", "/%00"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + path, timeout=10)
        assert e.value.code == 404, path
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(url, data=b"x" * 1000, method="POST"), timeout=10)
    assert e.value.code == 405
    addr = endpoint(url)
    for junk in (b"\x00\xff garbage\r\n\r\n", b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n",
                 b"GET /metrics HTTP/9.9\r\n\r\n"):
        with socket.create_connection(addr, timeout=10) as s:
            try:
                s.sendall(junk)
                answer = s.recv(4096)
            except OSError:
                answer = b""  # closed on us: also an answer
        assert not answer.startswith(b"HTTP/1.1 200"), junk[:40]
        assert answer == b"" or answer.split(b" ")[1][:1] in (b"4", b"5"), answer[:80]
    # idle connections up to the cap do not stop it from answering
    with held_open(addr, 3):
        assert "mearas_info" in scrape(url)
    assert d.alive()


def test_metrics_held_connections_do_not_keep_scrapers_out(served: tuple[Daemon, str]) -> None:
    # a local user (every one shares 127.0.0.1) opens connections and never ends their requests;
    # more than the server takes at once, and still the scraper is answered
    d, url = served
    # never the blank line that ends the request
    with held_open(endpoint(url), 24, b"GET /metrics HTTP/1.1\r\nHost: x\r\n", gap_s=0.01):
        t0 = time.monotonic()
        assert "mearas_info" in scrape(url)
        # not by waiting out the held ones' idle timeout (10 s)
        assert time.monotonic() - t0 < 6
    assert d.alive()


def test_metrics_answer_closes_the_connection(served: tuple[Daemon, str]) -> None:
    # a kept-alive connection would stay open, counted, after its answer
    _, url = served
    addr = endpoint(url)
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 200") and b"mearas_info" in got
    assert b"\r\nConnection: close\r\n" in got.split(b"\r\n\r\n", 1)[0] + b"\r\n"


def test_metrics_bind_refuses_a_bad_address(tmp_path: Path) -> None:
    r = subprocess.run([str(MEARASD), "--device=sim", f"--socket={tmp_path / 'd.sock'}",
                        f"--control={tmp_path / 'c.sock'}", "--metrics-port=9", "--metrics-bind=nowhere"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "--metrics-bind 'nowhere'" in r.stderr


def _mhd_library() -> str | None:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("libmicrohttpd.so.12 ") and "=>" in line:
            return line.split("=>", 1)[1].strip()
    return None


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs unshare and root (a private mount namespace)")
def test_metrics_without_the_http_library_say_so(tmp_path: Path) -> None:
    # mearasd loads libmicrohttpd only for --metrics-port: hidden in a private mount
    # namespace, the endpoint is refused with the package's name, and mearasd without
    # --metrics-port still starts
    lib = _mhd_library()
    assert lib, "libmicrohttpd.so.12 is a dependency of the control suite (scripts/deps)"
    base = [str(MEARASD), "--device=sim", f"--socket={tmp_path / 'd.sock'}", f"--control={tmp_path / 'c.sock'}"]
    hide = f"mount --bind /dev/null {lib} && exec \"$@\""
    r = subprocess.run(["unshare", "-m", "sh", "-c", hide, "sh", *base, f"--metrics-port={free_port()}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "--metrics-port needs libmicrohttpd.so.12 (Debian: libmicrohttpd12)" in r.stderr
    p = subprocess.Popen(["unshare", "-m", "sh", "-c", hide, "sh", *base], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_listening(str(tmp_path / "d.sock"), p, 15)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(10)


# ---- remote links

def test_assembly_of_remote_vgpus_only_is_served(tmp_path: Path) -> None:
    # every vGPU of the assembly on another node: the worker has no local device (it took
    # the daemon's --remote list, not the assembly's, for which vGPU is local, and died
    # registering its data area with a device it never opened)
    key = tmp_path / "cluster.key"
    key.write_text("test cluster key 0123456789abcdef\n")
    link_port = free_port()
    with daemon(tmp_path, "r", f"--link-port={link_port}", f"--cluster-key-file={key}"), \
            daemon(tmp_path, "d", f"--node-name={NODE}", f"--cluster-key-file={key}") as d:
        SocketMearasdClient(d.control_socket, timeout=10).instantiate(Assembly(
            "far-only", "pid:1@node-a", "test", "exact",
            (VgpuPlacement(0, "node-b", 0, 256 * MiB, f"127.0.0.1:{link_port}"),), time.time(), identity=ME))
        r = subprocess.run([str(PROBE), str(2 * MiB), "3", "2"], env=d.client_env("far-only"),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert d.alive()
        assert "vGPU 0 -> remote 127.0.0.1" in d.log.read_text()


def test_metrics_of_a_remote_link(tmp_path: Path) -> None:
    key = tmp_path / "cluster.key"
    key.write_text("test cluster key 0123456789abcdef\n")
    link_port, port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with daemon(tmp_path, "r", f"--link-port={link_port}", f"--cluster-key-file={key}"), \
            daemon(tmp_path, "d", f"--node-name={NODE}", f"--cluster-key-file={key}",
                   f"--metrics-port={port}") as d:
        peer = f"127.0.0.1:{link_port}"
        # vGPU 1 is the other node's GPU 0
        SocketMearasdClient(d.control_socket, timeout=10).instantiate(Assembly(
            "far", "pid:1@node-a", "test", "exact",
            (VgpuPlacement(0, NODE, 0, 256 * MiB, ""), VgpuPlacement(1, "node-b", 0, 256 * MiB, peer)),
            time.time(), identity=ME))
        p = subprocess.Popen([str(PROBE), str(2 * MiB), "3", "2", "hold", "1"], env=d.client_env("far"),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            assert p.stdout is not None and p.stdin is not None
            line = p.stdout.readline().strip()
            assert line == "ready", p.stderr.read() if p.stderr else ""
            lb = {"peer": peer, "owner": ME, "assembly": "far", "vgpu": "1"}
            # a quiet link sends heartbeats after 500 ms: their answers give the round trip
            live = scrape_until(url, lambda ss: pick(ss, "mearas_link_rtt_seconds", **lb) > 0)
            assert pick(live, "mearas_link_state", state="up", **lb) == 1
            assert pick(live, "mearas_link_state", state="broken", **lb) == 0
            assert 0 < pick(live, "mearas_link_rtt_seconds", **lb) < 1
            assert pick(live, "mearas_link_bytes_total", direction="sent", **lb) > 2 * MiB
            assert pick(live, "mearas_link_bytes_total", direction="received", **lb) > 2 * MiB
            assert pick(live, "mearas_link_batches_total", **lb) > 0
            assert pick(live, "mearas_link_messages_total", **lb) > 0
            assert pick(live, "mearas_vgpu_calls_total", kind="remote", assembly="far",
                        **{"class": "launch"}) == 3
            assert pick(live, "mearas_vgpu_copy_bytes_total", kind="remote", direction="h2d") == 2 * MiB
            p.stdin.write("\n")
            p.stdin.flush()
            assert p.wait(30) == 0, p.stderr.read() if p.stderr else ""
        finally:
            kill_if_running(p)
        done_text = settled(url)
        promtool_check(done_text)
        done = samples(done_text)
        assert pick(done, "mearas_link_opened_total", **lb) == 1
        assert pick(done, "mearas_link_bytes_total", direction="sent", **lb) > 2 * MiB
        assert not [k for k in done if k[0] == "mearas_link_state"]  # no live link


# ---- mearas top

def top_config(tmp: Path, url: str | None) -> Path:
    cfg = tmp / "am.toml"
    cfg.write_text("[mearasd]\n" + (f'metrics_url = "{url}"\n' if url else ""))
    return cfg


def test_top_once_json_matches_the_endpoint(served: tuple[Daemon, str], tmp_path: Path) -> None:
    d, url = served
    assert run_probe(d, str(MiB), "2", "2").returncode == 0
    settled(url)
    r = mearas(top_config(tmp_path, url), "top", "--once", "--json")
    assert r.returncode == 0, r.stderr
    ss = samples(settled(url))  # nothing runs: the same counters as top reads
    (node,) = json.loads(r.stdout)
    assert node["node"] == NODE and node["device"] == "sim" and node["error"] is None
    assert node["gpus"] == []
    assert {(v["owner"], v["vgpu"]) for v in node["vgpus"]} == {(ME, 0), (ME, 1)}
    for v in node["vgpus"]:
        lb = {"owner": v["owner"], "vgpu": str(v["vgpu"]), "gpu": str(v["gpu"]), "kind": v["kind"]}
        for cls, n in v["calls"].items():
            assert n == pick(ss, "mearas_vgpu_calls_total", **lb, **{"class": cls})
        assert v["bytes_h2d"] == pick(ss, "mearas_vgpu_copy_bytes_total", direction="h2d", **lb)
        assert v["bytes_d2h"] == pick(ss, "mearas_vgpu_copy_bytes_total", direction="d2h", **lb)
        assert v["errors"] == pick(ss, "mearas_vgpu_errors_total", **lb)
        assert v["sync_count"] == pick(ss, "mearas_vgpu_sync_latency_seconds_count", **lb)
        assert v["clients"] == pick(ss, "mearas_vgpu_clients", **lb) == 0
    v0 = next(v for v in node["vgpus"] if v["vgpu"] == 0)
    assert v0["calls"]["launch"] == 2 and v0["bytes_h2d"] == MiB


def test_top_once_prints_a_table(served: tuple[Daemon, str], tmp_path: Path) -> None:
    d, url = served
    assert run_probe(d, str(MiB), "4", "1").returncode == 0
    settled(url)
    r = mearas(top_config(tmp_path, None), "top", "--once", "--url", url)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"NODE {NODE}  device sim")
    assert "GPU utilization: not measured" in r.stdout
    ghead = next(i for i, line in enumerate(lines) if line.startswith("GPU  VGPUS-IN-USE"))
    head = next(i for i, line in enumerate(lines) if line.startswith("VGPU"))
    cols = lines[head].split()
    row = dict(zip(cols, lines[head + 1].split()))
    assert row["VGPU"] == "0" and row["OWNER"] == ME and row["LAUNCH"] == "4"
    assert row["H2D"] == "1.0MiB"
    # GPU 0 carries vGPU 0 alone: idle now, its calls so far
    calls = sum(int(row[c]) for c in ("LAUNCH", "COPY", "SYNC", "MEMORY", "OTHER"))
    assert lines[ghead + 1].split()[:4] == ["0", "0", "0", str(calls)]


def test_top_refreshes(served: tuple[Daemon, str], tmp_path: Path) -> None:
    _, url = served
    p = subprocess.Popen([sys.executable, "-m", "mearas_am.cli", "--config",
                          str(top_config(tmp_path, url)), "top", "--interval", "0.3"],
                         env=dict(os.environ, PYTHONPATH=str(TOP / "assembly-manager")),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # Ctrl-C as at a terminal, even where this runs with SIGINT
                         # ignored (a background job of a shell without job control)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: list[str] = []
    try:
        assert p.stdout is not None
        deadline = time.monotonic() + 20
        while sum(line.startswith(f"NODE {NODE}") for line in seen) < 3 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            seen.append(line)
    finally:
        p.send_signal(signal.SIGINT)
        rest, _ = p.communicate(timeout=30)
    out = "".join(seen) + rest
    assert p.returncode == 130
    assert out.count("mearas top") >= 3  # one header per refresh
    assert out.count(f"NODE {NODE}") >= 3


def test_top_without_endpoint_says_so(tmp_path: Path) -> None:
    r = mearas(top_config(tmp_path, None), "top", "--once")
    assert r.returncode == 1
    assert "no metrics endpoint" in r.stderr and "metrics_url" in r.stderr
    r = mearas(top_config(tmp_path, f"http://127.0.0.1:{free_port()}/metrics"), "top", "--once")
    assert r.returncode == 1
    assert "cannot scrape" in r.stderr
