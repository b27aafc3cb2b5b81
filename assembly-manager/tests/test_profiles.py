"""Profile collection: NVML (through a TEST DOUBLE of the pynvml module, since this machine
has no GPU), the config fallback, and merging mearasd's live vGPU load."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from mearas_am.config import load_config
from mearas_am.control.client import SocketMearasdClient
from mearas_am.profiles import collect_profile

from .conftest import write_config
from .fake_mearasd import FakeMearasd


def fake_pynvml(gpus: list[dict[str, Any]], init_error: bool = False) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVML_FEATURE_ENABLED = 1  # type: ignore[attr-defined]

    def init() -> None:
        if init_error:
            raise RuntimeError("NVML Shared Library Not Found")
    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(gpus)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: gpus[i]  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: h["name"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetCudaComputeCapability = lambda h: h["cc"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        total=h["total"], free=h["free"])
    m.nvmlDeviceGetNumGpuCores = lambda h: h["cores"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetNvLinkState = lambda h, link: h["nvlink"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        gpu=h["util"])
    return m


H200 = {"name": b"NVIDIA H200", "cc": (9, 0), "total": 150754820096, "free": 150109880320,
        "cores": 16896, "nvlink": 0, "util": 7}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "total": 80 << 30, "free": 70 << 30,
        "cores": 6912, "nvlink": 1, "util": 50}


def test_nvml_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([H200, A100]))
    cfg = load_config(str(write_config(tmp_path / "c.toml", gpus=1)))
    cfg = cfg.__class__(**{**cfg.__dict__, "node": cfg.node.__class__(
        **{**cfg.node.__dict__, "use_nvml": True})})
    p = collect_profile(cfg, None)
    assert p.source == "nvml" and len(p.gpus) == 2  # NVML wins over the configured GPU
    h200, a100 = p.gpus
    assert (h200.static.name, h200.static.sm_count, h200.static.interconnect) == (
        "NVIDIA H200", 132, "pcie")  # 16896 cores / 128 per SM; values seen on a real H200
    assert (a100.static.sm_count, a100.static.interconnect) == (108, "nvlink")
    assert h200.load is not None and h200.load.free_memory_bytes == 150109880320
    assert a100.load is not None and a100.load.utilization_percent == 50


def test_nvml_unusable_falls_back_to_config(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([H200], init_error=True))
    cfg = load_config(str(write_config(tmp_path / "c.toml", gpus=3)))
    cfg = cfg.__class__(**{**cfg.__dict__, "node": cfg.node.__class__(
        **{**cfg.node.__dict__, "use_nvml": True})})
    p = collect_profile(cfg, None)
    assert p.source == "config" and len(p.gpus) == 3
    assert all(g.load is None for g in p.gpus)  # nothing measured: no invented load


def test_mearasd_load_merged(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfg = load_config(str(write_config(tmp_path / "c.toml", gpus=2,
                                       socket_path=fake_mearasd.path)))
    client = SocketMearasdClient(fake_mearasd.path)
    from .test_control import asm
    client.instantiate(asm())
    p = collect_profile(cfg, client)
    assert p.gpus[0].load is not None and p.gpus[0].load.vgpus[0].assembly_id == "asm1"
    assert p.gpus[1].load is not None and p.gpus[1].load.utilization_percent == 10
    fake_mearasd.close()  # mearasd gone: profile still published, without live load
    p = collect_profile(cfg, client)
    assert [g.load for g in p.gpus] == [None, None]
