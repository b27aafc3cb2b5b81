"""NVIDIA's Python bindings (nvidia-ml-py's pynvml) over mearas's
libnvidia-ml.so.1: the library an NVML program finds first on its library
path. Run by run-tests.sh with LD_LIBRARY_PATH at build/lib and MEARAS_SOCKET
at a mearasd --device=sim --vgpus=2 --quota-mb=QUOTA.
    python3 pynvml_check.py QUOTA_MB"""
import re
import sys

import pynvml as nv  # type: ignore[import-untyped]  # no type information shipped


def main() -> int:
    quota = int(sys.argv[1]) << 20
    nv.nvmlInit()
    n = nv.nvmlDeviceGetCount()
    assert n == 2, n
    uuids = set()
    for i in range(n):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        uuid = nv.nvmlDeviceGetUUID(h)
        assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", uuid), uuid
        uuids.add(uuid)
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        assert mem.total == quota and mem.free + mem.used == mem.total, (mem.total, mem.free, mem.used)
        assert nv.nvmlDeviceGetIndex(nv.nvmlDeviceGetHandleByUUID(uuid)) == i
        bus = nv.nvmlDeviceGetPciInfo(h).busId
        assert nv.nvmlDeviceGetIndex(nv.nvmlDeviceGetHandleByPciBusId(bus)) == i
        try:
            nv.nvmlDeviceGetUtilizationRates(h)
            raise AssertionError("utilization answered")
        except nv.NVMLError as e:
            assert e.value == nv.NVML_ERROR_NOT_SUPPORTED, e.value
        print(f"GPU {i}: {nv.nvmlDeviceGetName(h)} (UUID: {uuid}) {bus} {mem.total >> 20} MiB")
    assert len(uuids) == n
    assert nv.nvmlSystemGetCudaDriverVersion_v2() == 13000
    nv.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
