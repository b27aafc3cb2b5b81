#!/usr/bin/env python3
"""Run by the host's Python inside the VM guest (guest/hostpy.sh, chroot into
the host's root over virtio-9p) with mearas's libcuda.so.1 first on the
library path: the driver API through the VM transport, in ctypes. One
GUEST-PASS / GUEST-FAIL line per step (tests/vm-cuda/hostpy-test.sh collects
them); exit status 1 on a failure.
  hostpy_check.py [BYTES]     (default 1 MiB round trip)
"""
from __future__ import annotations

import ctypes
import os
import sys


class Failed(Exception):
    pass


def main() -> int:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    failed = 0

    def step(name: str, ok: bool, why: str = "") -> None:
        nonlocal failed
        if ok:
            print(f"GUEST-PASS {name}", flush=True)
        else:
            failed += 1
            print(f"GUEST-FAIL {name}: {why}", flush=True)
            raise Failed(name)

    def call(name: str, rc: int) -> None:
        step(name, rc == 0, f"returned {rc}")

    try:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            step("load-libcuda", False, str(e))
        # the library the loader picked: the one in the first folder of the
        # library path (hostpy.sh's copy of the guest's), not a driver's
        with open("/proc/self/maps") as f:
            where = sorted({ln.split()[-1] for ln in f if ln.rstrip().endswith("/libcuda.so.1")})
        want = os.environ.get("LD_LIBRARY_PATH", "").split(":")[0] + "/libcuda.so.1"
        step("libcuda-from-library-path", where == [want], f"loaded {where}, want {want}")
        call("cuInit", lib.cuInit(0))
        n = ctypes.c_int()
        call("cuDeviceGetCount", lib.cuDeviceGetCount(ctypes.byref(n)))
        step("device-count", n.value >= 1, f"{n.value} devices")
        dev = ctypes.c_int()
        call("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), 0))
        name = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", lib.cuDeviceGetName(name, 256, dev))
        print(f"  device 0: {name.value.decode(errors='replace')}", flush=True)
        ctx = ctypes.c_void_p()
        call("cuDevicePrimaryCtxRetain", lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
        call("cuCtxSetCurrent", lib.cuCtxSetCurrent(ctx))
        ptr = ctypes.c_uint64()
        call("cuMemAlloc", lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))
        pattern = bytes((i * 7 + 3) & 0xFF for i in range(251))  # a prime period: no page repeats
        src = ctypes.create_string_buffer((pattern * (size // 251 + 1))[:size], size)
        dst = ctypes.create_string_buffer(size)
        call("cuMemcpyHtoD", lib.cuMemcpyHtoD_v2(ptr, src, ctypes.c_size_t(size)))
        call("cuMemcpyDtoH", lib.cuMemcpyDtoH_v2(dst, ptr, ctypes.c_size_t(size)))
        same = dst.raw == src.raw
        step("round-trip-equal", same, "" if same else
             f"{sum(a != b for a, b in zip(dst.raw, src.raw))} of {size} bytes differ")
        call("cuMemFree", lib.cuMemFree_v2(ptr))
        call("cuDevicePrimaryCtxRelease", lib.cuDevicePrimaryCtxRelease_v2(dev))
    except Failed:
        pass
    print(f"guest pid {os.getpid()}, {'ok' if not failed else 'FAILED'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
