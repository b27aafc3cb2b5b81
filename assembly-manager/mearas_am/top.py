"""`mearas top`: a live view of mearasd's metrics endpoints (per node, GPU, vGPU and link).

Each endpoint is scraped over HTTP and its Prometheus text parsed with prometheus-client's
parser; the figures shown are the endpoint's own (counters as totals, rates from two scrapes).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from prometheus_client.parser import text_string_to_metric_families

from .errors import MearasError
from .render import table
from .units import format_size

SCRAPE_TIMEOUT = 5.0
MAX_BODY = 64 << 20  # an endpoint's exposition, at most
OP_CLASSES = ("launch", "copy", "sync", "memory", "other")


class TopError(MearasError):
    pass


@dataclass
class VgpuFigures:
    owner: str
    assembly: str
    vgpu: int
    gpu: int
    kind: str  # local | remote
    clients: int = 0
    calls: dict[str, float] = field(default_factory=dict)  # by op class
    bytes_h2d: float = 0
    bytes_d2h: float = 0
    errors: float = 0
    sync_count: float = 0
    sync_seconds: float = 0
    memory_used: float | None = None  # local vGPUs with clients only
    memory_quota: float | None = None
    calls_per_second: float | None = None  # from the previous scrape (live view)


@dataclass
class LinkFigures:
    peer: str
    owner: str
    assembly: str
    vgpu: int
    gpu: int
    up: int = 0
    broken: int = 0
    rtt_seconds: float | None = None
    bytes_sent: float = 0
    bytes_received: float = 0
    batches: float = 0
    messages: float = 0
    opened: float = 0


@dataclass
class GpuFigures:
    nvml_index: int
    name: str
    pci_bus_id: str
    utilization: float | None = None
    memory_used: float | None = None
    memory_total: float | None = None


@dataclass
class NodeFigures:
    url: str
    node: str = "?"
    device: str = "?"
    error: str | None = None
    gpus: list[GpuFigures] = field(default_factory=list)
    vgpus: list[VgpuFigures] = field(default_factory=list)
    links: list[LinkFigures] = field(default_factory=list)
    scraped_at: float = 0.0


def fetch(url: str, timeout: float = SCRAPE_TIMEOUT) -> str:
    """The endpoint's exposition text; TopError with the reason when it cannot be had."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (operator's URL)
            body: bytes = r.read(MAX_BODY + 1)
    except urllib.error.HTTPError as e:
        raise TopError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = e.reason if isinstance(e, urllib.error.URLError) else e
        raise TopError(f"{url}: cannot scrape: {reason}") from None
    if len(body) > MAX_BODY:
        raise TopError(f"{url}: answer larger than {MAX_BODY} bytes")
    return body.decode("utf-8", errors="replace")


def _vkey(lb: dict[str, str]) -> tuple[str, str, int, int, str]:
    return (lb.get("owner", ""), lb.get("assembly", ""), int(lb.get("vgpu", "0")),
            int(lb.get("gpu", "-1")), lb.get("kind", ""))


def _lkey(lb: dict[str, str]) -> tuple[str, str, str, int, int]:
    return (lb.get("peer", ""), lb.get("owner", ""), lb.get("assembly", ""),
            int(lb.get("vgpu", "0")), int(lb.get("gpu", "-1")))


# metric -> the figures it sets (vgpu, link or gpu) and which of them
_FIELDS: dict[str, tuple[str, str]] = {
    "mearas_vgpu_clients": ("vgpu", "clients"),
    "mearas_vgpu_errors_total": ("vgpu", "errors"),
    "mearas_vgpu_sync_latency_seconds_count": ("vgpu", "sync_count"),
    "mearas_vgpu_sync_latency_seconds_sum": ("vgpu", "sync_seconds"),
    "mearas_vgpu_memory_used_bytes": ("vgpu", "memory_used"),
    "mearas_vgpu_memory_quota_bytes": ("vgpu", "memory_quota"),
    "mearas_link_rtt_seconds": ("link", "rtt_seconds"),
    "mearas_link_opened_total": ("link", "opened"),
    "mearas_link_batches_total": ("link", "batches"),
    "mearas_link_messages_total": ("link", "messages"),
    "mearas_gpu_utilization_ratio": ("gpu", "utilization"),
    "mearas_gpu_memory_used_bytes": ("gpu", "memory_used"),
    "mearas_gpu_memory_total_bytes": ("gpu", "memory_total"),
}
# metric -> figures, the label that picks the field, its value for the first field, the first, the other
_SPLIT: dict[str, tuple[str, str, str, str, str]] = {
    "mearas_vgpu_copy_bytes_total": ("vgpu", "direction", "h2d", "bytes_h2d", "bytes_d2h"),
    "mearas_link_state": ("link", "state", "up", "up", "broken"),
    "mearas_link_bytes_total": ("link", "direction", "sent", "bytes_sent", "bytes_received"),
}
# the fields that count things (the others keep the sample's float)
_INTS = {"clients", "up", "broken"}


def parse(url: str, text: str) -> NodeFigures:
    """One endpoint's figures from its exposition (prometheus-client's parser)."""
    n = NodeFigures(url=url, scraped_at=time.time())
    vg: dict[tuple[str, str, int, int, str], VgpuFigures] = {}
    lk: dict[tuple[str, str, str, int, int], LinkFigures] = {}
    gp: dict[int, GpuFigures] = {}

    def vgpu(lb: dict[str, str]) -> VgpuFigures:
        k = _vkey(lb)
        if k not in vg:
            vg[k] = VgpuFigures(*k)
        return vg[k]

    def link(lb: dict[str, str]) -> LinkFigures:
        k = _lkey(lb)
        if k not in lk:
            lk[k] = LinkFigures(*k)
        return lk[k]

    def gpu(lb: dict[str, str]) -> GpuFigures:
        i = int(lb.get("nvml_index", "0"))
        if i not in gp:
            gp[i] = GpuFigures(i, lb.get("name", ""), lb.get("pci_bus_id", ""))
        return gp[i]

    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as e:
        raise TopError(f"{url}: not Prometheus text: {e}") from None
    for fam in families:
        for s in fam.samples:
            lb, v, name = s.labels, float(s.value), s.name
            if name == "mearas_info":
                n.node, n.device = lb.get("node", "?"), lb.get("device", "?")
            elif name == "mearas_vgpu_calls_total":
                vgpu(lb).calls[lb.get("class", "other")] = v
            elif name in _FIELDS or name in _SPLIT:
                if name in _SPLIT:
                    kind, label, first, attr, other = _SPLIT[name]
                    attr = attr if lb.get(label) == first else other
                else:
                    kind, attr = _FIELDS[name]
                fig: VgpuFigures | LinkFigures | GpuFigures = (
                    vgpu(lb) if kind == "vgpu" else link(lb) if kind == "link" else gpu(lb))
                setattr(fig, attr, int(v) if attr in _INTS else v)
    n.vgpus = sorted(vg.values(), key=lambda f: (f.owner, f.assembly, f.vgpu))
    n.links = sorted(lk.values(), key=lambda f: (f.peer, f.owner, f.assembly, f.vgpu))
    n.gpus = [gp[i] for i in sorted(gp)]
    return n


def scrape(url: str) -> NodeFigures:
    """An endpoint's figures, or its error (the view goes on with the other endpoints)."""
    try:
        return parse(url, fetch(url))
    except TopError as e:
        return NodeFigures(url=url, error=str(e), scraped_at=time.time())


def add_rates(now: list[NodeFigures], before: list[NodeFigures]) -> None:
    """Calls per second of each vGPU since the previous scrape of the same endpoint."""
    prev = {n.url: n for n in before if not n.error}
    for n in now:
        p = prev.get(n.url)
        if n.error or p is None or n.scraped_at <= p.scraped_at:
            continue
        dt = n.scraped_at - p.scraped_at
        old = {(v.owner, v.assembly, v.vgpu, v.gpu, v.kind): sum(v.calls.values()) for v in p.vgpus}
        for v in n.vgpus:
            o = old.get((v.owner, v.assembly, v.vgpu, v.gpu, v.kind))
            total = sum(v.calls.values())
            if o is not None and total >= o:
                v.calls_per_second = (total - o) / dt


def _size(v: float | None) -> str:
    return "-" if v is None else format_size(int(v))


def _gpu_summary(n: NodeFigures) -> str:
    """This node's GPUs as its local vGPUs use them (sums of the vGPU figures)."""
    by_gpu: dict[int, list[VgpuFigures]] = {}
    for v in n.vgpus:
        if v.kind == "local":
            by_gpu.setdefault(v.gpu, []).append(v)
    rows = []
    for g, vs in sorted(by_gpu.items()):
        rates = [v.calls_per_second for v in vs if v.calls_per_second is not None]
        used = [v.memory_used for v in vs if v.memory_used is not None]
        rows.append([str(g), str(sum(1 for v in vs if v.clients)), str(sum(v.clients for v in vs)),
                     f"{sum(sum(v.calls.values()) for v in vs):.0f}",
                     f"{sum(rates):.0f}" if rates else "-", _size(sum(used)) if used else "-"])
    return table(["GPU", "VGPUS-IN-USE", "CLIENTS", "CALLS", "CALLS/S", "MEM-USED"], rows) \
        if rows else "no local vGPU has been used"


def render_text(nodes: list[NodeFigures]) -> str:
    out: list[str] = []
    for n in nodes:
        if n.error:
            out.append(f"NODE ?  {n.error}")
            continue
        out.append(f"NODE {n.node}  device {n.device}  {n.url}")
        if n.gpus:
            out.append(table(["GPU", "NAME", "PCI", "UTIL", "MEMORY"], [
                [str(g.nvml_index), g.name, g.pci_bus_id,
                 "-" if g.utilization is None else f"{g.utilization * 100:.0f}%",
                 f"{_size(g.memory_used)}/{_size(g.memory_total)}"] for g in n.gpus]))
        else:
            out.append(f"GPU utilization: not measured (device {n.device}: NVML reads it on GPUs only)")
        out.append(_gpu_summary(n))
        rows = []
        for v in n.vgpus:
            rows.append([
                str(v.vgpu), v.owner, v.assembly or "-", str(v.gpu), v.kind, str(v.clients),
                *(f"{v.calls.get(c, 0):.0f}" for c in OP_CLASSES),
                "-" if v.calls_per_second is None else f"{v.calls_per_second:.0f}",
                _size(v.bytes_h2d), _size(v.bytes_d2h), f"{v.errors:.0f}",
                f"{v.sync_seconds / v.sync_count * 1e6:.0f}us" if v.sync_count else "-",
                "-" if v.memory_used is None else f"{_size(v.memory_used)}/{_size(v.memory_quota)}"])
        out.append(table(["VGPU", "OWNER", "ASSEMBLY", "GPU", "KIND", "CLIENTS",
                          *(c.upper() for c in OP_CLASSES), "CALLS/S", "H2D", "D2H", "ERRORS",
                          "SYNC-AVG", "MEM/QUOTA"], rows) if rows else "no vGPU has been used")
        if n.links:
            out.append(table(["LINK", "OWNER", "ASSEMBLY", "VGPU", "GPU", "UP", "BROKEN", "RTT",
                              "SENT", "RECEIVED", "BATCHES", "MESSAGES", "OPENED"], [
                [lk.peer, lk.owner, lk.assembly or "-", str(lk.vgpu), str(lk.gpu), str(lk.up),
                 str(lk.broken), "-" if lk.rtt_seconds is None else f"{lk.rtt_seconds * 1e6:.0f}us",
                 _size(lk.bytes_sent), _size(lk.bytes_received), f"{lk.batches:.0f}",
                 f"{lk.messages:.0f}", f"{lk.opened:.0f}"] for lk in n.links]))
        out.append("")
    return "\n".join(out).rstrip("\n")


def render_json(nodes: list[NodeFigures]) -> str:
    return json.dumps([dataclasses.asdict(n) for n in nodes], indent=2, sort_keys=True)


def run_top(urls: list[str], interval: float, once: bool, as_json: bool,
            out: TextIO = sys.stdout, sleep: Callable[[float], None] = time.sleep) -> int:
    """Scrapes every endpoint, prints, and (unless once) repeats every interval seconds.
    Exit status 1 when an endpoint could not be scraped in --once mode."""
    if not urls:
        raise TopError("no metrics endpoint: set metrics_url in the [mearasd] section of the config "
                       "(mearasd --metrics-port=N serves http://127.0.0.1:N/metrics) or pass --url")
    if interval <= 0:
        raise TopError("--interval must be positive")
    before: list[NodeFigures] = []
    while True:
        nodes = [scrape(u) for u in urls]
        add_rates(nodes, before)
        text = render_json(nodes) if as_json else render_text(nodes)
        if once:
            print(text, file=out)
            for n in nodes:
                if n.error:
                    print(f"mearas: error: {n.error}", file=sys.stderr)
            return 1 if any(n.error for n in nodes) else 0
        if out.isatty() and not as_json:
            out.write("\x1b[H\x1b[2J")  # home, clear
        stamp = time.strftime("%H:%M:%S")
        print(text if as_json else f"mearas top  {stamp}  every {interval:g} s  (Ctrl-C ends)\n{text}",
              file=out, flush=True)
        before = nodes
        sleep(interval)
