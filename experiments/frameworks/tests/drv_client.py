#!/usr/bin/env python3
"""A CUDA driver-API client in ctypes standing in for a framework in the
suite's tests (on mearasd --device=sim): it prints one JSON line as gpt.py and
the checks do.
  drv_client.py copies        context, allocation, 20 copies each way, checked
  drv_client.py bypass        says ok without touching CUDA (a framework that
                              went around mearas would look like this to mearasd)
  drv_client.py unsupported   calls cuCheckpointProcessCheckpoint, which mearas
                              does not serve, and reports only the error number
  drv_client.py ranks         two processes, rank r copies on device r; prints their pids
  drv_client.py hang          sleeps (for the runner's timeout)
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time


def cuda() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    check(lib.cuInit(0), "cuInit")
    return lib


def check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} returned {rc}")


def copies(device: int) -> None:
    lib = cuda()
    n = ctypes.c_int()
    check(lib.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    dev = ctypes.c_int()
    check(lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    size = 1 << 16
    ptr = ctypes.c_uint64()
    check(lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), "cuMemAlloc")
    src = (ctypes.c_ubyte * size)(*[i & 0xFF for i in range(size)])
    dst = (ctypes.c_ubyte * size)()
    for _ in range(20):
        check(lib.cuMemcpyHtoD_v2(ptr, src, ctypes.c_size_t(size)), "cuMemcpyHtoD")
        check(lib.cuMemcpyDtoH_v2(dst, ptr, ctypes.c_size_t(size)), "cuMemcpyDtoH")
    if bytes(dst) != bytes(src):
        raise RuntimeError("copies differ")
    check(lib.cuMemFree_v2(ptr), "cuMemFree")


def main() -> int:
    mode = sys.argv[1]
    out: dict[str, object] = {"ok": True, "pid": os.getpid()}
    try:
        if mode == "copies":
            copies(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
        elif mode == "unsupported":
            rc = cuda().cuCheckpointProcessCheckpoint(os.getpid(), None)
            if rc != 0:
                raise RuntimeError(f"checkpoint failed with error {rc}")
        elif mode == "ranks":
            procs = [subprocess.Popen([sys.executable, __file__, "copies", str(r)], stdout=subprocess.PIPE)
                     for r in range(2)]
            out["pids"] = [p.pid for p in procs]
            if any(p.wait() != 0 for p in procs):
                raise RuntimeError("a rank failed")
        elif mode == "hang":
            time.sleep(60)
        elif mode != "bypass":
            raise ValueError(mode)
    except Exception as e:
        out = {"ok": False, "pid": os.getpid(), "error": str(e)}
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
