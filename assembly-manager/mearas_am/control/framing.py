"""Message framing on the control socket: 4-byte little-endian length, then the message."""

from __future__ import annotations

import socket
import struct

MAX_MESSAGE = 16 << 20  # refuse absurd lengths instead of allocating them


class FramingError(Exception):
    pass


def send_frame(sock: socket.socket, payload: bytes) -> None:
    if len(payload) > MAX_MESSAGE:
        raise FramingError(f"message of {len(payload)} bytes exceeds {MAX_MESSAGE}")
    sock.sendall(struct.pack("<I", len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise FramingError(f"peer closed the connection after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket) -> bytes | None:
    """The next message, or None if the peer closed cleanly between messages."""
    first = sock.recv(4)
    if not first:
        return None
    header = first + (_recv_exact(sock, 4 - len(first)) if len(first) < 4 else b"")
    (length,) = struct.unpack("<I", header)
    if length > MAX_MESSAGE:
        raise FramingError(f"frame length {length} exceeds {MAX_MESSAGE}")
    return _recv_exact(sock, length)
