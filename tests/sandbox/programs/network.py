"""Try to reach the host's network: PostgreSQL and Redis on loopback, a listener the test started, the
host's other addresses, DNS, and a UDP datagram."""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(__file__))
from attempts import attempt, params, report


def connect(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=2) as conn:
        return f"connected to {conn.getpeername()}"


def udp(host: str, port: int) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"escape", (host, port))
        return "datagram sent"


args = params()
attempt("postgres 127.0.0.1:5432", lambda: connect("127.0.0.1", 5432))
attempt("redis 127.0.0.1:6379", lambda: connect("127.0.0.1", 6379))
for host in ["127.0.0.1", *args["hosts"]]:
    attempt(f"listener {host}:{args['port']}", lambda h=host: connect(h, args["port"]))
    attempt(f"udp {host}:{args['udp_port']}", lambda h=host: udp(h, args["udp_port"]))
attempt("dns", lambda: socket.getaddrinfo("pypi.org", 443))


def abstract(name: str) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect("\0" + name)  # abstract sockets have no file: only a network namespace hides them
        return "connected"


attempt("abstract unix socket", lambda: abstract(args["abstract"]))
report(interfaces=[name for _, name in socket.if_nameindex()])
