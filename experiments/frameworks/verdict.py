"""Shared by the capability checks (cupy_check.py, jax_check.py,
nccl_check.py): named steps, each run and caught, and one JSON verdict line.

A verdict: {"check": NAME, "pass": bool, "pid": ..., "steps": [{"name", "ok",
"detail" | "error"}], "error": the first failed step's "name: Type: message"}.
Later steps still run after a failed one unless a step is marked fatal (the
ones the others need, such as finding a device).
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable


def one_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"


@dataclass
class Verdict:
    check: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def step(self, name: str, fn: Callable[[], object], fatal: bool = False) -> bool:
        """Runs fn; its return value is the step's detail (a failed assertion
        or any exception fails it). A failed fatal step ends the check."""
        try:
            detail = fn()
        except Exception as e:  # the error is the step's result
            traceback.print_exc(file=sys.stderr)
            self.steps.append({"name": name, "ok": False, "error": one_line(e)})
            if fatal:
                raise StopCheck() from e
            return False
        self.steps.append({"name": name, "ok": True, "detail": detail if _jsonable(detail) else str(detail)})
        return True

    def passed(self) -> bool:
        return bool(self.steps) and all(s["ok"] for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        failed = [s for s in self.steps if not s["ok"]]
        return {"check": self.check, "pass": self.passed(), "pid": os.getpid(), "steps": self.steps,
                "error": f"{failed[0]['name']}: {failed[0]['error']}" if failed else None, **self.extra}


class StopCheck(Exception):
    """A fatal step failed: the remaining steps cannot run."""


def _jsonable(x: object) -> bool:
    try:
        json.dumps(x)
        return True
    except (TypeError, ValueError):
        return False


def run_check(v: Verdict, body: Callable[[Verdict], None]) -> int:
    """Runs body (which adds the steps), prints the verdict as one JSON line
    and returns the exit status: 0 when every step passed, 1 otherwise."""
    try:
        body(v)
    except StopCheck:
        pass
    except Exception as e:  # outside any step (an import, say): a step of its own
        traceback.print_exc(file=sys.stderr)
        v.steps.append({"name": "setup", "ok": False, "error": one_line(e)})
    print(json.dumps(v.to_json()), flush=True)
    return 0 if v.passed() else 1
