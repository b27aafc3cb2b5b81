#!/usr/bin/env python3
"""Writes one part of experiments/results/security.json, keeping the other.

  report.py attacks RESULTS.jsonl SECURITY.json   the hostile suite's results
  report.py fuzz STATS.jsonl SECURITY.json        a fuzz campaign's targets

security.json: {"attacks": [{"name", "outcome", "daemon_survived",
"healthy_client_ok"}], "fuzz": [{"target", "seconds", "execs", "crashes"}],
"date"}. A fuzz entry replaces the entry of the same target only when it
ran at least as long, so a brief CI run never overwrites a campaign.
"""
from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from typing import Any


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def merge_fuzz(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_target = {e["target"]: e for e in old}
    for e in new:
        prev = by_target.get(e["target"])
        if prev is None or e["seconds"] >= prev["seconds"]:
            by_target[e["target"]] = e
    return sorted(by_target.values(), key=lambda e: e["target"])


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] not in ("attacks", "fuzz"):
        print(__doc__, file=sys.stderr)
        return 2
    part, src, dst = argv[1], Path(argv[2]), Path(argv[3])
    doc: dict[str, Any] = {"attacks": [], "fuzz": [], "date": ""}
    if dst.exists():
        doc.update(json.loads(dst.read_text()))
    entries = read_lines(src)
    if part == "attacks":
        doc["attacks"] = entries
    else:
        doc["fuzz"] = merge_fuzz(doc.get("fuzz", []), entries)
    doc["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"security.json: {part} part written ({len(entries)} entries) to {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
