"""TCP round trip of a 64-byte message between two namespaces (or over loopback)."""
from __future__ import annotations

import subprocess
import time

from .config import HarnessError
from .netns import ns_exec

_SERVER = ("import socket,sys\n"
           "l=socket.socket();l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
           "l.bind((sys.argv[1],int(sys.argv[2])));l.listen(1);print('ready',flush=True)\n"
           "c,_=l.accept();c.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1)\n"
           "while True:\n"
           " d=c.recv(64)\n"
           " if not d: break\n"
           " c.sendall(d)\n")

_CLIENT = ("import socket,sys,time\n"
           "s=socket.create_connection((sys.argv[1],int(sys.argv[2])));"
           "s.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1)\n"
           "m=b'x'*64;t=[]\n"
           "for i in range(int(sys.argv[3])):\n"
           " a=time.perf_counter();s.sendall(m);n=0\n"
           " while n<64: n+=len(s.recv(64-n))\n"
           " t.append(time.perf_counter()-a)\n"
           "t.sort();print(t[len(t)//2]*1e6)\n")


def tcp_rtt_us(host: str, port: int, server_ns: str | None, client_ns: str | None,
               rounds: int = 2000) -> float:
    """Median 64-byte TCP round trip, Python on both ends (includes Python's own cost)."""
    srv = subprocess.Popen([*ns_exec(server_ns), "python3", "-c", _SERVER, host, str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        if srv.stdout.readline().strip() != "ready":
            raise HarnessError(f"tcp probe server did not start: {srv.stderr.read() if srv.stderr else ''}")
        r = subprocess.run([*ns_exec(client_ns), "python3", "-c", _CLIENT, host, str(port),
                            str(rounds)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise HarnessError(f"tcp probe failed: {r.stderr.strip()}")
        return float(r.stdout.strip())
    finally:
        deadline = time.monotonic() + 5
        while srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if srv.poll() is None:
            srv.kill()
        srv.wait()
