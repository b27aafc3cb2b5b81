#!/usr/bin/env python3
"""Speaks garbage and malformed hellos to mearasd's socket.

Every connection must end in bounded time: with a refusal (a welcome whose
status is the expected cudaError_t) or with mearasd closing it. Exit 0 when
all cases behave, 1 otherwise. Usage: garbage_client.py SOCKET
"""
import os
import re
import socket
import struct
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HELLO_MAGIC = 0x4F4C4C4548534D00
WELCOME_MAGIC = 0x454D4F434C454D00
# the protocol version, from its one definition: the number in region.h,
# the records' layout fingerprint in the generated ops.gen.h
_TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
with open(os.path.join(_TOP, "include", "mearas", "region.h"), encoding="utf-8") as _f:
    _m = re.search(r"#define MEARAS_PROTO_NUMBER\s+(\d+)u", _f.read())
assert _m, "MEARAS_PROTO_NUMBER not found in include/mearas/region.h"
with open(os.path.join(_TOP, "build", "gen", "mearas", "ops.gen.h"), encoding="utf-8") as _f:
    _l = re.search(r"#define MEARAS_OPS_LAYOUT\s+0x([0-9a-f]+)u", _f.read())
assert _l, "MEARAS_OPS_LAYOUT not found in build/gen/mearas/ops.gen.h"
VERSION = int(_m.group(1)) | (int(_l.group(1), 16) << 8)
HELLO_FMT = "<QIIQiI64s"  # struct mearas_hello: 96 bytes
WELCOME_HEAD = "<QIi"     # magic, version, status
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INSUFFICIENT_DRIVER = 35


def hello(magic: int = HELLO_MAGIC, version: int = VERSION, nvgpus: int = 0,
          data_size: int = 0) -> bytes:
    return struct.pack(HELLO_FMT, magic, version, nvgpus, data_size, os.getpid(), 0, b"")


def connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10.0)
    s.connect(path)
    return s


def read_until_close(s: socket.socket) -> bytes:
    """Everything mearasd sends until it closes (fds passed along are closed)."""
    data = b""
    while True:
        try:
            msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(4 * 128))
        except ConnectionResetError:  # closed with our bytes unread
            return data
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for i in range(len(payload) // 4):
                    os.close(struct.unpack_from("<i", payload, 4 * i)[0])
        if not msg:
            return data
        data += msg


def expect_refusal(path: str, payload: bytes, status: int, what: str) -> bool:
    s = connect(path)
    s.sendall(payload)
    data = read_until_close(s)
    s.close()
    if len(data) < 16:
        print(f"FAIL: {what}: no welcome ({len(data)} bytes)")
        return False
    magic, _, got = struct.unpack_from(WELCOME_HEAD, data)
    if magic != WELCOME_MAGIC or got != status:
        print(f"FAIL: {what}: welcome magic {magic:#x} status {got}, want status {status}")
        return False
    return True


def expect_closed(path: str, payload: bytes, what: str, linger: float = 0.0) -> bool:
    s = connect(path)
    if payload:
        s.sendall(payload)
    if linger:
        time.sleep(linger)
    start = time.monotonic()
    try:
        read_until_close(s)
    except (socket.timeout, OSError) as e:
        print(f"FAIL: {what}: connection not closed by mearasd ({e})")
        return False
    finally:
        s.close()
    print(f"{what}: closed after {time.monotonic() - start:.2f} s")
    return True


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    path = sys.argv[1]
    ok = True
    # gone before saying anything
    connect(path).close()
    # a few bytes, then gone
    s = connect(path)
    s.sendall(b"\x01\x02\x03garbage")
    s.close()
    ok &= expect_refusal(path, os.urandom(4096), CUDA_ERROR_INVALID_VALUE, "4 KiB of random bytes")
    ok &= expect_refusal(path, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 96, CUDA_ERROR_INVALID_VALUE,
                         "an HTTP request")
    ok &= expect_refusal(path, hello(magic=0x1234), CUDA_ERROR_INVALID_VALUE, "hello with bad magic")
    ok &= expect_refusal(path, hello(version=99), CUDA_ERROR_INSUFFICIENT_DRIVER, "hello with version 99")
    # the protocol's number right, the records' layout another build's
    ok &= expect_refusal(path, hello(version=VERSION ^ (1 << 8)), CUDA_ERROR_INSUFFICIENT_DRIVER,
                         "hello with another record layout")
    ok &= expect_refusal(path, hello(nvgpus=1000), CUDA_ERROR_INVALID_VALUE, "hello asking 1000 vGPUs")
    ok &= expect_refusal(path, hello(nvgpus=0xFFFFFFFF), CUDA_ERROR_INVALID_VALUE, "hello asking 2^32-1 vGPUs")
    ok &= expect_refusal(path, hello(data_size=1 << 62), CUDA_ERROR_INVALID_VALUE, "hello asking 4 EiB of data")
    ok &= expect_refusal(path, hello(data_size=4096), CUDA_ERROR_INVALID_VALUE, "hello asking 4 KiB of data")
    # a hello carrying file descriptors nobody asked for
    s = connect(path)
    r, w = os.pipe()
    s.sendmsg([hello(magic=7)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("<ii", r, w))])
    os.close(r)
    os.close(w)
    data = read_until_close(s)
    s.close()
    ok &= len(data) >= 16
    # half a hello, or nothing at all: mearasd gives up after its handshake
    # timeout (both wait at the same time)
    with ThreadPoolExecutor(max_workers=2) as pool:
        waits = [pool.submit(expect_closed, path, hello()[:40], "half a hello"),
                 pool.submit(expect_closed, path, b"", "silent client")]
        for wait in waits:
            ok &= wait.result()
    # a valid hello, then garbage after the welcome, then gone: the worker
    # must end (the test runner checks that no worker is left)
    s = connect(path)
    s.sendall(hello())
    msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(4 * 128))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for i in range(len(payload) // 4):
                os.close(struct.unpack_from("<i", payload, 4 * i)[0])
    if len(msg) < 16 or struct.unpack_from(WELCOME_HEAD, msg)[2] != 0:
        print("FAIL: valid hello was not welcomed")
        ok = False
    s.sendall(os.urandom(512))
    time.sleep(0.2)
    s.close()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
