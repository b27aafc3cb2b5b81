"""verdict.py: steps, fatal steps, and the verdict line of a check."""
from __future__ import annotations

import json

import pytest

from verdict import Verdict, run_check


def test_failed_step_is_named_and_later_steps_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    def body(v: Verdict) -> None:
        v.step("first", lambda: 1)
        v.step("second", lambda: 1 / 0)
        v.step("third", lambda: {"x": 2})

    assert run_check(Verdict("demo"), body) == 1
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["check"] == "demo" and out["pass"] is False
    assert out["error"] == "second: ZeroDivisionError: division by zero"
    assert [(s["name"], s["ok"]) for s in out["steps"]] == [("first", True), ("second", False), ("third", True)]
    assert out["steps"][2]["detail"] == {"x": 2}


def test_fatal_step_ends_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    def body(v: Verdict) -> None:
        v.step("devices", lambda: (_ for _ in ()).throw(RuntimeError("no device\nmore")), fatal=True)
        v.step("never", lambda: 1)

    assert run_check(Verdict("demo"), body) == 1
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [s["name"] for s in out["steps"]] == ["devices"]
    assert out["error"] == "devices: RuntimeError: no device"


def test_all_steps_passing_passes(capsys: pytest.CaptureFixture[str]) -> None:
    def body(v: Verdict) -> None:
        v.step("one", lambda: object())

    assert run_check(Verdict("demo"), body) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["pass"] is True and out["error"] is None and isinstance(out["steps"][0]["detail"], str)
