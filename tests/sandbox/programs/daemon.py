"""A setsid double fork: the grandchild leaves the session and keeps reporting to the proxy socket (the
only channel out) for ever, long after the program has returned its result."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from attempts import report

marker = sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        beat = 0
        while True:
            beat += 1
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.connect(os.environ["SHOPARENA_PROXY_SOCKET"])
                    body = f"{marker} {beat}".encode()
                    conn.sendall(
                        b"POST /heartbeat HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    conn.recv(1024)
            except OSError:
                pass
            time.sleep(0.02)
    os._exit(0)
os.wait()
time.sleep(0.3)  # let the daemon beat a few times while the run is still on
report(daemonised=True)
if sys.argv[1] == "linger":
    time.sleep(3600)
