"""The arena server against hostile clients on loopback (issue 22, attack 7): slow-loris connections,
more connections than it allows, and request heads over the cap however they arrive."""

from __future__ import annotations

import contextlib
import pickle
import socket
import time

import pytest

from shoparena.arena.api.app import ARENA_UVICORN, ArenaProtocol, create_app, running
from shoparena.harness.guarded_http import MAX_HEAD_BYTES, guarded_protocol
from tests.arena.auth.test_auth_api import raw_request

HEALTH = b"GET /v1/health HTTP/1.1\r\nhost: arena\r\n\r\n"


def connect(url: str, timeout: float = 10.0) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed its end (a read returns EOF or the connection is reset)."""
    sock.settimeout(0.05)
    try:
        return sock.recv(65536) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def healthy(url: str) -> bool:
    with connect(url) as sock:
        sock.sendall(HEALTH)
        return sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_the_served_protocol_carries_the_limits():
    """`arena serve` (one worker or many) parses with the guarded protocol; workers get it pickled."""
    assert ARENA_UVICORN["http"] is ArenaProtocol
    assert ArenaProtocol.head_timeout_s == 10.0 and ArenaProtocol.max_connections == 1000
    assert ArenaProtocol.max_head_bytes == MAX_HEAD_BYTES == 16 * 1024
    assert pickle.loads(pickle.dumps(ArenaProtocol)) is ArenaProtocol


def test_slow_loris_connections_are_closed_after_the_head_timeout(arena):
    """300 connections trickling a head a byte at a time were held for as long as the client liked."""
    protocol = guarded_protocol(head_timeout_s=1.0, name="ShortHeadTimeout")
    with running(create_app(arena), http=protocol) as url:
        held = [connect(url) for _ in range(100)]
        try:
            for sock in held:
                sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                for sock in held:
                    with contextlib.suppress(OSError):
                        sock.sendall(b"x")  # a byte at a time: never a whole head
                open_now = [sock for sock in held if not closed_by_server(sock)]
                if not open_now:
                    break
                time.sleep(0.2)
            assert not open_now, f"{len(open_now)} of {len(held)} slow connections still open"
            assert time.monotonic() < deadline
        finally:
            for sock in held:
                sock.close()
        assert healthy(url)


def test_connections_past_the_cap_are_refused_with_503(arena):
    protocol = guarded_protocol(max_connections=8, name="EightConnections")
    with running(create_app(arena), http=protocol) as url:
        held = [connect(url) for _ in range(8)]
        try:
            time.sleep(0.2)  # the server has accepted them all
            with connect(url) as extra:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    extra.sendall(HEALTH)
                answer = b""
                with contextlib.suppress(OSError):
                    while chunk := extra.recv(65536):
                        answer += chunk
            assert answer.startswith(b"HTTP/1.1 503") and b"too many open connections" in answer, answer
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.2)
        assert healthy(url)


@pytest.mark.parametrize("size", [MAX_HEAD_BYTES + 1, 60 * 1024])
def test_a_head_over_the_cap_is_refused_even_in_one_write(server, size):
    """h11 bounds only an incomplete head: a 60 KiB head sent in one write was served."""
    start = b"GET /v1/health HTTP/1.1\r\nhost: arena\r\nconnection: close\r\nx-pad: "
    head = start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"
    answer = raw_request(server.url, head)
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 431")), answer[:200]
    at_cap = start + b"a" * (MAX_HEAD_BYTES - len(start) - 4) + b"\r\n\r\n"
    assert raw_request(server.url, at_cap).startswith(b"HTTP/1.1 200")
