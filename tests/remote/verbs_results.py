#!/usr/bin/env python3
"""The figures of tests/remote/verbs_guest.sh's guest (its console lines on
stdin) as experiments/results/remote-verbs.json records on stdout: the sync
4-byte D2H round trip and the 64 MiB pinned copy bandwidth of a remote vGPU
over verbs and over TCP between the same two mearasd on the same Soft-RoCE
address, in the same guest run."""
import datetime
import json
import re
import sys

NOTE = ("measured in a QEMU TCG guest (emulated CPU, Soft-RoCE doing its work in software, on a 2-core "
        "machine shared with other jobs: figures vary by several times between runs): they compare the "
        "two transports of one run and say nothing about real RDMA or GPU speed")
DEVICE = "sim in a TCG guest (Soft-RoCE)"
NETWORK = ("one rxe0 device on the guest's virtio NIC, both nodes in the guest at 10.250.0.1, link "
           "encryption off on both (verbs links are not encrypted); TCP to that address takes the "
           "guest kernel's local path")


def parse(lines: list[str]) -> dict[str, dict[str, float]]:
    """{transport: {figure: value}} from the 'GUEST bench_T: BENCH ...' lines."""
    out: dict[str, dict[str, float]] = {}
    for line in lines:
        m = re.search(r"GUEST bench_(verbs|tcp): BENCH (local|remote) sync-4B-d2h-latency-us ([0-9.]+)", line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2) + "_us"] = float(m.group(3))
            continue
        m = re.search(r"GUEST bench_(verbs|tcp): BENCH pinned-65536KiB h2d-MB/s ([0-9.]+) d2h-MB/s ([0-9.]+)",
                      line)
        if m:
            out.setdefault(m.group(1), {}).update(h2d=float(m.group(2)), d2h=float(m.group(3)))
    return out


def records(fig: dict[str, dict[str, float]], date: str) -> list[dict[str, object]]:
    common: dict[str, object] = {"network": NETWORK, "device": DEVICE, "date": date, "note": NOTE}
    recs: list[dict[str, object]] = []
    for tr in ("verbs", "tcp"):
        f = fig[tr]
        recs.append({"metric": "sync_roundtrip_us", "unit": "us", "transport": tr, "native": f["local_us"],
                     "mearas": f["remote_us"], "ratio": round(f["remote_us"] / f["local_us"], 4),
                     "baseline": "native: the forwarding node's local vGPU (sim) in the same program run",
                     "mearas_vs_tcp": round(f["remote_us"] / fig["tcp"]["remote_us"], 4), **common})
    for d in ("h2d", "d2h"):
        for tr in ("verbs", "tcp"):
            recs.append({"metric": f"{d}_mbps_64MiB_pinned", "unit": "MB/s", "transport": tr,
                         "value": fig[tr][d], "ratio": round(fig[tr][d] / fig["tcp"][d], 4),
                         "baseline": "ratio: over the same copy on a TCP link between the same two mearasd "
                                     "in the same guest run", **common})
    return recs


def main() -> int:
    fig = parse(sys.stdin.read().splitlines())
    need = {"local_us", "remote_us", "h2d", "d2h"}
    missing = [t for t in ("verbs", "tcp") if not need <= set(fig.get(t, {}))]
    if missing:
        print(f"verbs_results: no bench figures for {', '.join(missing)}", file=sys.stderr)
        return 1
    json.dump(records(fig, datetime.date.today().isoformat()), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
