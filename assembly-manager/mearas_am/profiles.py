"""Node profiles: static GPU properties (NVML, else the config file) plus dynamic load
(NVML free memory/utilization, and the vGPUs and call rates mearasd reports)."""

from __future__ import annotations

import importlib
import time
from typing import Any

from .config import Config
from .control.client import MearasdClient
from .errors import MearasdError
from .model import GpuLoad, GpuProfile, GpuStatic, NodeProfile

# CUDA cores per SM by compute capability major (NVML reports cores, not SMs)
_CORES_PER_SM = {6: 64, 7: 64, 8: 128, 9: 128, 10: 128, 12: 128}
_CORES_PER_SM_EXACT = {(8, 0): 64}


def _nvml() -> Any | None:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def nvml_gpus() -> list[GpuProfile] | None:
    """Static and live properties from NVML; None when nvidia-ml-py or the driver is absent."""
    nv = _nvml()
    if nv is None:
        return None
    try:
        nv.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded...
        return None
    try:
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            name = nv.nvmlDeviceGetName(h)
            major, minor = nv.nvmlDeviceGetCudaComputeCapability(h)
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            try:
                cores = int(nv.nvmlDeviceGetNumGpuCores(h))
                per_sm = _CORES_PER_SM_EXACT.get((major, minor), _CORES_PER_SM.get(major, 0))
                sms = cores // per_sm if per_sm else 0
            except Exception:
                sms = 0
            try:
                nvlink = nv.nvmlDeviceGetNvLinkState(h, 0) == nv.NVML_FEATURE_ENABLED
            except Exception:
                nvlink = False
            try:
                util = int(nv.nvmlDeviceGetUtilizationRates(h).gpu)
            except Exception:
                util = 0
            static = GpuStatic(i, name.decode() if isinstance(name, bytes) else str(name),
                               int(major), int(minor), int(mem.total), sms,
                               "nvlink" if nvlink else "pcie")
            out.append(GpuProfile(static, GpuLoad(int(mem.free), util)))
        return out
    finally:
        nv.nvmlShutdown()


def collect_profile(config: Config, mearasd: MearasdClient | None) -> NodeProfile:
    """This node's profile. Load is left None where nothing measured it (no NVML and mearasd
    unreachable): the registry never shows invented numbers."""
    gpus = nvml_gpus() if config.node.use_nvml else None
    source = "nvml"
    if gpus is None:
        source = "config"
        gpus = [GpuProfile(s, None) for s in config.node.gpus]
    if mearasd is not None:
        try:
            _, reported = mearasd.get_profile()
        except MearasdError:
            reported = []
        by_index = {g.static.index: g.load for g in reported if g.load is not None}
        merged = []
        for g in gpus:
            live = by_index.get(g.static.index)
            if live is None:
                merged.append(g)
            elif g.load is not None:  # NVML numbers win; mearasd adds the vGPU call rates
                merged.append(GpuProfile(g.static, GpuLoad(g.load.free_memory_bytes,
                                                           g.load.utilization_percent,
                                                           live.vgpus)))
            else:
                merged.append(GpuProfile(g.static, live))
        gpus = merged
    return NodeProfile(name=config.node.name, address=config.node.address,
                       max_vgpus_per_gpu=config.node.max_vgpus_per_gpu, gpus=tuple(gpus),
                       source=source, updated_at=time.time())
