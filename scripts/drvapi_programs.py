#!/usr/bin/env python3
"""Write experiments/results/drvapi-programs.json from the GPU lane's
comparisons (tests/cuda/run-suite.sh --compare outputs): one record per
program, build and place, {"program", "build", "place", "pass", "device",
"date"}; a program passes when both runs passed with identical output.
With --merge the records of FILE stay, but for the (program, build, place)
given again (the VM guest's comparisons come from a separate run).
    drvapi_programs.py [--merge] --device NAME --out FILE BUILD:PLACE:COMPARE_TXT..."""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

BUILDS = {"static", "shared", "driver"}
PLACES = {"local", "remote", "guest"}
ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(identical|DIFFERS)$")


def rows(path: Path) -> list[tuple[str, bool]]:
    """(program, passed) for each row of a --compare table."""
    out = []
    for line in path.read_text().splitlines():
        m = ROW.match(line)
        if m and m.group(1) != "PROGRAM":
            out.append((m.group(1), m.group(2) == "PASS" and m.group(3) == "PASS" and m.group(4) == "identical"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--merge", action="store_true", help="keep FILE's other records")
    ap.add_argument("runs", nargs="+", help="BUILD:PLACE:COMPARE_TXT")
    args = ap.parse_args()
    date = datetime.date.today().isoformat()
    records = []
    for run in args.runs:
        build, place, txt = run.split(":", 2)
        if build not in BUILDS or place not in PLACES:
            print(f"drvapi_programs: bad run {run!r}: BUILD one of {sorted(BUILDS)}, PLACE one of {sorted(PLACES)}",
                  file=sys.stderr)
            return 2
        if not Path(txt).is_file():
            print(f"drvapi_programs: no comparison at {txt} (its step did not run)", file=sys.stderr)
            return 1
        found = rows(Path(txt))
        if not found:
            print(f"drvapi_programs: no programs in {txt}", file=sys.stderr)
            return 1
        records += [{"program": p, "build": build, "place": place, "pass": ok, "device": args.device, "date": date}
                    for p, ok in found]
    if args.merge and args.out.is_file():
        new = {(r["program"], r["build"], r["place"]) for r in records}
        kept = [r for r in json.loads(args.out.read_text()) if (r["program"], r["build"], r["place"]) not in new]
        records = kept + records
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=1) + "\n")
    passed = sum(r["pass"] is True for r in records)
    places = sorted({f'{r["build"]}/{r["place"]}' for r in records})
    print(f"drvapi programs: {', '.join(places)}")
    print(f"drvapi programs: {passed} of {len(records)} passed")
    return 0 if passed == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
