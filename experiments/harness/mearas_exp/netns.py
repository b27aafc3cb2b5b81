"""Network namespaces joined by veth pairs, optionally shaped with tc tbf.

Topology: one client namespace with a bridge at 10.250.2.1/24; one namespace
per remote node at 10.250.2.(10+j)/24, each joined to the bridge by a veth
pair. Shaping puts a tbf qdisc on both ends of every pair, so each direction
is limited. Addresses exist only inside the namespaces created here.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .config import HarnessError, Unavailable

SUBNET = "10.250.2"
CLIENT_ADDR = f"{SUBNET}.1"
NS_PREFIX = "mxp"


@dataclass(frozen=True)
class NetworkClass:
    name: str
    netns: bool
    rate: str | None  # tc tbf rate, e.g. "1gbit"


NETWORKS: dict[str, NetworkClass] = {
    "loopback": NetworkClass("loopback", False, None),
    "veth": NetworkClass("veth", True, None),
    "veth-10gbit": NetworkClass("veth-10gbit", True, "10gbit"),
    "veth-1gbit": NetworkClass("veth-1gbit", True, "1gbit"),
}

# tbf needs a bucket of at least rate/HZ; these hold a few ms at each rate
_BURST = {"10gbit": "4mb", "1gbit": "512kb"}


def network(name: str) -> NetworkClass:
    try:
        return NETWORKS[name]
    except KeyError:
        raise HarnessError(f"unknown network class '{name}' (one of {', '.join(NETWORKS)})") from None


def remote_addr(j: int) -> str:
    return f"{SUBNET}.{10 + j}"


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise HarnessError(f"ip {' '.join(args)}: {r.stderr.strip()}")


def _tc(ns: str, *args: str) -> None:
    r = subprocess.run(["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        raise HarnessError(f"tc {' '.join(args)} in {ns}: {r.stderr.strip()}")


def ns_exec(ns: str | None) -> list[str]:
    """Command prefix that runs a program inside namespace ns (nothing for the host's)."""
    return ["ip", "netns", "exec", ns] if ns else []


def list_ours() -> list[str]:
    """Namespaces named by this harness (any run), for cleanup checks."""
    if shutil.which("ip") is None:
        return []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith(NS_PREFIX)]


@dataclass
class Topology:
    """Namespaces of one assembly: created by create(), removed by destroy()."""
    remotes: int
    rate: str | None
    tag: str = field(default_factory=lambda: f"{os.getpid() % 100000}")
    created: list[str] = field(default_factory=list)

    @property
    def client_ns(self) -> str:
        return f"{NS_PREFIX}{self.tag}c"

    def remote_ns(self, j: int) -> str:
        return f"{NS_PREFIX}{self.tag}r{j}"

    def create(self) -> None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise Unavailable("namespaces need root and iproute2 (`ip`); use --network loopback")
        if self.rate and shutil.which("tc") is None:
            raise Unavailable("shaping needs `tc` (iproute2)")
        if self.rate and self.rate not in _BURST:
            raise HarnessError(f"no tbf burst known for rate {self.rate}")
        try:
            self._create()
        except BaseException:
            self.destroy()
            raise

    def _create(self) -> None:
        c = self.client_ns
        _ip("netns", "add", c)
        self.created.append(c)
        _ip("-n", c, "link", "set", "lo", "up")
        _ip("-n", c, "link", "add", "br0", "type", "bridge")
        _ip("-n", c, "addr", "add", f"{CLIENT_ADDR}/24", "dev", "br0")
        _ip("-n", c, "link", "set", "br0", "up")
        for j in range(self.remotes):
            r = self.remote_ns(j)
            _ip("netns", "add", r)
            self.created.append(r)
            _ip("-n", r, "link", "set", "lo", "up")
            _ip("-n", c, "link", "add", f"v{j}c", "type", "veth", "peer", "name", f"v{j}r",
                "netns", r)
            _ip("-n", c, "link", "set", f"v{j}c", "master", "br0", "up")
            _ip("-n", r, "addr", "add", f"{remote_addr(j)}/24", "dev", f"v{j}r")
            _ip("-n", r, "link", "set", f"v{j}r", "up")
            if self.rate:
                burst = _BURST[self.rate]
                for ns, dev in ((c, f"v{j}c"), (r, f"v{j}r")):
                    _tc(ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", self.rate,
                        "burst", burst, "latency", "20ms")

    def destroy(self) -> None:
        """Deleting a namespace removes its veth ends and qdiscs too."""
        errors = []
        for ns in reversed(self.created):
            r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True,
                               timeout=30)
            if r.returncode != 0:
                errors.append(f"{ns}: {r.stderr.strip()}")
        self.created.clear()
        if errors:
            raise HarnessError("cannot delete namespaces: " + "; ".join(errors))
