"""gpt.py, suite.py and the capability checks without a GPU: their options,
the model's shapes, the environment gpt.py sets before CUDA starts, and the
checks' verdicts where their framework is missing (as on the CPU lane)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpt
import suite
import suitelib as sl

HERE = Path(__file__).resolve().parents[1]


def test_shapes_match_issue_14() -> None:
    small, gpt2 = gpt.SHAPES["small"], gpt.SHAPES["gpt2"]
    assert (small.d_model, small.layers, small.context, small.batch) == (256, 4, 256, 8)
    assert (gpt2.d_model, gpt2.layers, gpt2.context, gpt2.batch) == (768, 12, 1024, 8)
    # ~7M and ~160M parameters (issue 14's table)
    assert 6.5e6 < gpt.param_count(small) < 7.5e6
    assert 155e6 < gpt.param_count(gpt2) < 165e6


@pytest.mark.parametrize("argv", [
    ["--steps", "0"],
    ["--device", "cpu", "--compile"],
    ["--devices", "2", "--cuda-graphs", "whole"],
    ["--device", "cpu", "--async-allocator"],
    ["--compile", "--cuda-graphs", "callables"],
    ["--mode", "infer", "--cuda-graphs", "callables"],
])
def test_gpt_refuses_combinations_it_does_not_run(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        gpt.parse_args(argv)
    assert e.value.code == 2


def test_gpt_environment_before_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64")
    gpt.setup_env(gpt.parse_args(["--expandable-segments"]))
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:64,expandable_segments:True"


def test_gpt_async_allocator_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64")
    gpt.setup_env(gpt.parse_args(["--async-allocator", "--cuda-graphs", "whole"]))
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:64,backend:cudaMallocAsync"


def test_suite_options() -> None:
    a = suite.parse_args(["--only", "cupy,jax", "--repeats", "3", "--gpt2-steps", "7"])
    assert a.parts == ["cupy", "jax"] and a.repeats == 3
    assert suite.gpt_args(a, sl.Config("gpt2", "fp32"))[-4:] == ["--warmup", "3", "--steps", "7"]
    assert suite.gpt_args(a, sl.Config("small", "bf16", "infer"))[:6] == \
        ["--shape", "small", "--precision", "bf16", "--mode", "infer"]
    for bad in (["--only", "cupy,tensorflow"], ["--repeats", "0"]):
        with pytest.raises(SystemExit):
            suite.parse_args(bad)


@pytest.mark.parametrize("script,module", [("cupy_check.py", "cupy"), ("jax_check.py", "jax")])
def test_check_without_its_framework_fails_with_the_import_error(script: str, module: str) -> None:
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here: its check needs a GPU")
    r = subprocess.run([sys.executable, str(HERE / script)], capture_output=True, text=True, timeout=120)
    v = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 1 and v["pass"] is False
    assert v["error"] == f"import and devices: ModuleNotFoundError: No module named '{module}'"
    assert [s["name"] for s in v["steps"]] == ["import and devices"]  # fatal: nothing after it ran


def test_nccl_check_reports_each_rank() -> None:
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the NCCL check needs two GPUs")
    r = subprocess.run([sys.executable, str(HERE / "nccl_check.py"), "--timeout", "20"], capture_output=True,
                       text=True, timeout=120)
    v = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 1 and v["check"] == "torch_nccl" and v["pass"] is False
    assert [s["name"] for s in v["steps"]] == ["rank 0", "rank 1"] and len(v["pids"]) == 2
    assert v["error"] == "rank 0: ModuleNotFoundError: No module named 'torch'"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed on this machine (too big for the CPU lane): gpt.py runs "
                           "on the GPU lane")
def test_gpt_on_cpu_is_deterministic() -> None:
    outs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(HERE / "gpt.py"), "--device", "cpu", "--shape", "tiny",
                            "--precision", "fp32", "--warmup", "1", "--steps", "3"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert outs[0]["final_loss"] == outs[1]["final_loss"]
    assert len(outs[0]["step_times_s"]) == 3 and outs[0]["params"] == gpt.param_count(gpt.SHAPES["tiny"])
