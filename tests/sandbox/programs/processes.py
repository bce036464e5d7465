"""Look for other processes: every /proc entry's command line and environment, their memory; signal
and ptrace the parent and the host pids the test handed over; kill everything visible."""

import ctypes
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
from attempts import attempt, params, report

args = params()
PTRACE_ATTACH = 16
libc = ctypes.CDLL(None, use_errno=True)


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(65536)


def read_mem(pid: int) -> str:
    maps = read(f"/proc/{pid}/maps").decode().splitlines()
    start, end = (int(x, 16) for x in maps[0].split()[0].split("-"))
    with open(f"/proc/{pid}/mem", "rb") as handle:
        handle.seek(start)
        return f"read {len(handle.read(min(4096, end - start)))} bytes of {pid}"


def ptrace(pid: int) -> str:
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return f"attached to {pid}"


seen = {}
for entry in os.listdir("/proc"):
    if entry.isdigit():
        seen[entry] = {
            "cmdline": (
                attempt(f"cmdline {entry}", lambda e=entry: read(f"/proc/{e}/cmdline").decode()) or ""
            ),
            "environ": (
                attempt(f"environ {entry}", lambda e=entry: read(f"/proc/{e}/environ").decode()) or ""
            ),
        }
ppid = os.getppid()  # 0: the program is its namespace's init, its parent is outside
for name, pid in (("host parent", args["host_pid"]), ("decoy", args["decoy_pid"])):
    attempt(f"{name} cmdline", lambda p=pid: read(f"/proc/{p}/cmdline").decode())
    attempt(f"{name} environ", lambda p=pid: read(f"/proc/{p}/environ").decode())
    attempt(f"{name} mem", lambda p=pid: read_mem(p))
    attempt(f"ptrace {name}", lambda p=pid: ptrace(p))
    attempt(f"signal {name}", lambda p=pid: os.kill(p, signal.SIGKILL) or "sent")
for entry in seen:
    if int(entry) != os.getpid():
        attempt(f"ptrace {entry}", lambda e=entry: ptrace(int(e)))
attempt("signal every process", lambda: os.kill(-1, signal.SIGKILL) or "sent")
report(processes=seen, ppid=ppid, pid=os.getpid())
