"""This node's profile, as the node agent publishes it: the GPUs and their load are what the
local mearasd reports (GetProfile): mearasd serves the GPUs, so its indices are the ones the
registry books and instantiation checks. Nothing else (config, NVML) is a second source.

The profile also says whether the node may be booked: `down` when mearasd cannot be asked or
its answer cannot be used (the GPUs of the last good answer are kept for people to see, not
for booking), `link_down` when other nodes cannot reach its GPUs over remote-link."""

from __future__ import annotations

import ipaddress
import time

from .config import Config
from .control.client import MearasdClient
from .errors import MearasdError
from .model import GpuProfile, LinkServer, NodeProfile

SOURCE = "mearasd"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def link_problem(address: str, link: LinkServer | None) -> str:
    """Why other nodes cannot use this node's GPUs through ADDRESS ("" when they can, or when
    mearasd is too old to say)."""
    if not address:
        return "no [node] address configured: other nodes cannot reach this node's GPUs"
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return f"[node] address {address!r} is not HOST:PORT"
    if link is None:
        return ""
    if link.port == 0:
        return "mearasd serves no remote-link port (start it with --link-port=PORT)"
    if link.port != int(port):
        return (f"mearasd serves remote-link on port {link.port}, but [node] address "
                f"{address} names port {port}")
    if not link.key_configured:
        return "mearasd has no cluster key (--cluster-key-file): it refuses every link"
    if link.bind and _is_loopback(link.bind) and not _is_loopback(host):
        return (f"mearasd's link server is bound to {link.bind}: other nodes cannot reach "
                f"[node] address {address}")
    return ""


def collect_profile(config: Config, mearasd: MearasdClient,
                    last: NodeProfile | None = None) -> NodeProfile:
    """This node's profile from mearasd's GetProfile reply. LAST (the previous profile this
    agent published) supplies the GPUs shown while mearasd cannot be asked."""
    node = config.node
    link_down = ""
    try:
        p = mearasd.profile()
    except MearasdError as e:
        gpus = tuple(GpuProfile(g.static, None) for g in last.gpus) if last else ()
        return NodeProfile(name=node.name, address=node.address,
                           max_vgpus_per_gpu=node.max_vgpus_per_gpu, gpus=gpus, source=SOURCE,
                           updated_at=last.updated_at if gpus and last else time.time(),
                           down=f"no profile from mearasd: {e}",
                           link_down=last.link_down if last is not None else "")
    if p.node != node.name:
        down = (f"mearasd serves node {p.node!r}, this agent publishes {node.name!r}: "
                "make [node] name and mearasd --node-name the same")
    elif not p.gpus:
        down = "mearasd reports no GPUs"
    else:
        down = ""
        link_down = link_problem(node.address, p.link)
    return NodeProfile(name=node.name, address=node.address,
                       max_vgpus_per_gpu=node.max_vgpus_per_gpu, gpus=p.gpus, source=SOURCE,
                       updated_at=time.time(), down=down, link_down=link_down)
