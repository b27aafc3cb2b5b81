"""Network namespaces joined by veth pairs, optionally shaped with tc tbf.

Topology: one client namespace with a bridge at 10.250.2.1/24; one namespace
per remote node at 10.250.2.(10+j)/24, each joined to the bridge by a veth
pair. Shaping puts a tbf qdisc on both ends of every pair, so each direction
is limited. Addresses exist only inside the namespaces created here.
Namespaces and veth pairs come from scripts/netns-pair.sh (iproute2, or
busybox where `ip` is missing, as on the GPU machine); shaping needs
iproute2's tc.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .config import REPO, HarnessError, Unavailable

SUBNET = "10.250.2"
CLIENT_ADDR = f"{SUBNET}.1"
NS_PREFIX = "mxp"
NETNS_DIR = "/run/netns"
NETNS_SCRIPT = REPO / "scripts/netns-pair.sh"


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


def _script(*args: str) -> str:
    """scripts/netns-pair.sh ARGS (iproute2, or busybox where `ip` is missing)."""
    r = subprocess.run([str(NETNS_SCRIPT), *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise HarnessError(r.stderr.strip() or f"netns-pair.sh {' '.join(args)} failed")
    return r.stdout.strip()


def tool() -> str:
    """'iproute2' or 'busybox PATH': what scripts/netns-pair.sh uses here."""
    return _script("tool")


def _ip(ns: str, *args: str) -> None:
    _script("ip", ns, *args)


def _tc(ns: str, *args: str) -> None:
    r = subprocess.run([*ns_exec(ns), "tc", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise HarnessError(f"tc {' '.join(args)} in {ns}: {r.stderr.strip()}")


def ns_exec(ns: str | None) -> list[str]:
    """Command prefix that runs a program inside namespace ns (nothing for the host's);
    the script execs the program, so its PID is the program's own."""
    return [str(NETNS_SCRIPT), "exec", ns] if ns else []


def list_ours() -> list[str]:
    """Namespaces named by this harness (any run), for cleanup checks."""
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(NS_PREFIX))
    except FileNotFoundError:
        return []


@dataclass
class Topology:
    """Namespaces of one assembly: created by create(), removed by destroy()."""
    remotes: int
    rate: str | None
    tag: str = field(default_factory=lambda: f"{os.getpid() % 100000}")
    created: list[str] = field(default_factory=list)
    tool: str = ""  # what made the namespaces: iproute2 or busybox PATH

    @property
    def client_ns(self) -> str:
        return f"{NS_PREFIX}{self.tag}c"

    def remote_ns(self, j: int) -> str:
        return f"{NS_PREFIX}{self.tag}r{j}"

    def create(self) -> None:
        if os.geteuid() != 0:
            raise Unavailable("namespaces need root; use --network loopback")
        try:
            self.tool = tool()
        except HarnessError as e:
            raise Unavailable(f"no namespaces here: {e}; use --network loopback") from None
        if self.rate and (self.tool != "iproute2" or shutil.which("tc") is None):
            raise Unavailable(f"shaping to {self.rate} needs iproute2's `tc` (tbf); namespaces here "
                              f"come from {self.tool}, whose tc cannot add tbf: use --network veth")
        if self.rate and self.rate not in _BURST:
            raise HarnessError(f"no tbf burst known for rate {self.rate}")
        try:
            self._create()
        except BaseException:
            self.destroy()
            raise

    def _add(self, ns: str) -> None:
        _script("add", ns)  # leaves nothing behind when it fails
        self.created.append(ns)

    def _create(self) -> None:
        c = self.client_ns
        self._add(c)
        _ip(c, "link", "add", "br0", "type", "bridge")
        _ip(c, "addr", "add", f"{CLIENT_ADDR}/24", "dev", "br0")
        _ip(c, "link", "set", "br0", "up")
        for j in range(self.remotes):
            r = self.remote_ns(j)
            self._add(r)
            _script("veth", c, f"v{j}c", r, f"v{j}r")
            _ip(c, "link", "set", f"v{j}c", "master", "br0")
            _ip(r, "addr", "add", f"{remote_addr(j)}/24", "dev", f"v{j}r")
            if self.rate:
                burst = _BURST[self.rate]
                for ns, dev in ((c, f"v{j}c"), (r, f"v{j}r")):
                    _tc(ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", self.rate,
                        "burst", burst, "latency", "20ms")

    def destroy(self) -> None:
        """Deleting a namespace removes its veth ends and qdiscs too."""
        if self.created:
            r = subprocess.run([str(NETNS_SCRIPT), "del", *reversed(self.created)],
                               capture_output=True, text=True, timeout=60)
            self.created.clear()
            if r.returncode != 0:
                raise HarnessError(f"cannot delete namespaces: {r.stderr.strip()}")
