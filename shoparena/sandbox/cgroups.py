"""One cgroup per sandboxed run: it bounds the memory and the process count of the whole tree (rlimits
only bound one process each, and RLIMIT_NPROC does not bind uid 0 and counts a uid, not a tree), it
counts the OOM kills and refused forks the run caused, and it kills every process of the run at once.

Both hierarchies are supported. cgroup v2 (one unified tree) is used when its root offers `pids` and
`memory`; otherwise cgroup v1 with the `pids` and `memory` controllers mounted separately (a hybrid
machine, like this project's). Where run groups are made:
- v1: beneath the cgroup this process is in, per controller, so the session's own limits still hold;
- v2: beneath `$SHOPARENA_SANDBOX_CGROUP` (a cgroup directory with no processes of its own where this
  process may create children), else beneath a `shoparena-sandbox` group next to this process's own
  cgroup (v2 forbids handing controllers to children of a cgroup that holds processes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ENV = "SHOPARENA_SANDBOX_CGROUP"
CONTROLLERS = ("pids", "memory")
V2_PARENT_NAME = "shoparena-sandbox"


class CgroupUnavailable(RuntimeError):
    """No cgroup can bound this run; the message says what was tried."""


@dataclass(frozen=True)
class CgroupStats:
    oom_kills: int = 0
    pids_refused: int = 0
    memory_peak_bytes: int | None = None
    pids_peak: int | None = None


@dataclass
class RunCgroup:
    """The directories of one run's cgroup: one per v1 controller, or one unified v2 directory."""

    version: int
    dirs: dict[str, Path]  # controller -> directory; in v2 every controller maps to the same one
    _removed: bool = field(default=False, repr=False)

    # -- setup ---------------------------------------------------------------------------------------
    def set_limits(self, *, memory_bytes: int, pids: int) -> None:
        if self.version == 2:
            _write(self.dirs["pids"] / "pids.max", pids)
            _write(self.dirs["memory"] / "memory.max", memory_bytes)
            swap = self.dirs["memory"] / "memory.swap.max"
            if swap.exists():
                _write(swap, 0)
        else:
            _write(self.dirs["pids"] / "pids.max", pids)
            memory = self.dirs["memory"]
            _write(memory / "memory.limit_in_bytes", memory_bytes)
            memsw = memory / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # with swap accounting, swap must not extend the limit
                _write(memsw, memory_bytes)

    def attach(self, pid: int) -> None:
        for directory in self.unique_dirs():
            _write(directory / "cgroup.procs", pid)

    def unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    # -- teardown ------------------------------------------------------------------------------------
    def pids(self) -> list[int]:
        found: set[int] = set()
        for directory in self.unique_dirs():
            with contextlib.suppress(OSError):
                found.update(int(line) for line in (directory / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill(self, deadline_s: float = 5.0) -> bool:
        """SIGKILL every process of the run until none is left; True when the group is empty.

        v2 has `cgroup.kill`, which the kernel applies atomically (forks racing it included). v1 does
        not: processes are killed from `cgroup.procs` until a read finds none; a process forked between
        a read and the kills is found by the next read, and a killed process cannot fork again."""
        kill_file = self.dirs["pids"] / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            with contextlib.suppress(OSError):
                _write(kill_file, 1)
        deadline = time.monotonic() + deadline_s
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def stats(self) -> CgroupStats:
        pids_dir, memory_dir = self.dirs["pids"], self.dirs["memory"]
        if self.version == 2:
            oom = _keyed(memory_dir / "memory.events").get("oom_kill", 0)
            memory_peak = _int(memory_dir / "memory.peak")
        else:
            oom = _keyed(memory_dir / "memory.oom_control").get("oom_kill", 0)
            memory_peak = _int(memory_dir / "memory.max_usage_in_bytes")
        return CgroupStats(
            oom_kills=oom,
            pids_refused=_keyed(pids_dir / "pids.events").get("max", 0),
            memory_peak_bytes=memory_peak,
            pids_peak=_int(pids_dir / "pids.peak"),
        )

    def remove(self) -> None:
        """Remove the run's directories; a group that still holds processes is killed first."""
        if self._removed:
            return
        self.kill()
        for directory in self.unique_dirs():
            for _ in range(200):  # the last zombies are reaped a moment after the kill
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)
        self._removed = True


# -- discovery -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str
    fstype: str
    options: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        point = fields[4].replace("\\040", " ")
        mounts.append(_Mount(Path(point), fields[3], rest[0], frozenset(rest[2].split(","))))
    return mounts


def _own_paths() -> tuple[dict[str, str], str | None]:
    """This process's cgroup per v1 controller, and its v2 path (None when there is no `0::` line)."""
    v1: dict[str, str] = {}
    v2 = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and controllers == "":
            v2 = path
        for name in controllers.split(","):
            if name:
                v1[name] = path
    return v1, v2


def _inside(mount: _Mount, path: str) -> Path | None:
    root = mount.root.rstrip("/")
    if root and not (path == root or path.startswith(root + "/")):
        return None  # our cgroup is outside what this mount shows
    return mount.point / path[len(root) :].lstrip("/")


def detect() -> str:
    """Which hierarchy would be used: 'v2', 'v1', or a reason why none can be."""
    try:
        return _plan()[0]
    except CgroupUnavailable as exc:
        return str(exc)


def _plan() -> tuple[str, dict[str, Path]]:
    mounts = _mounts()
    v1_paths, v2_path = _own_paths()
    for mount in mounts:
        if mount.fstype != "cgroup2":
            continue
        offered = set(_read(mount.point / "cgroup.controllers").split())
        if set(CONTROLLERS) <= offered:
            return "v2", {"parent": _v2_parent(mount, v2_path)}
    found: dict[str, Path] = {}
    for controller in CONTROLLERS:
        mount = next((m for m in mounts if m.fstype == "cgroup" and controller in m.options), None)
        if mount is None or controller not in v1_paths:
            break
        own = _inside(mount, v1_paths[controller])
        if own is not None and own.is_dir():
            found[controller] = own
    if len(found) == len(CONTROLLERS):
        return "v1", found
    raise CgroupUnavailable(
        "no cgroup hierarchy offers both the pids and memory controllers here "
        "(checked cgroup2 and cgroup v1 mounts in /proc/self/mountinfo)"
    )


def _v2_parent(mount: _Mount, own: str | None) -> Path:
    configured = os.environ.get(CGROUP_ENV)
    if configured:
        return Path(configured)
    if own is None:
        raise CgroupUnavailable("cgroup2 is mounted but this process has no cgroup2 path")
    here = _inside(mount, own)
    if here is None:
        raise CgroupUnavailable(f"this process's cgroup {own} is not visible under {mount.point}")
    base = here if here == mount.point else here.parent
    return base / V2_PARENT_NAME


def _enable_v2(parent: Path) -> None:
    """Make `parent` a group whose children get pids and memory (creating it, and enabling them on the
    way down from its own parent, which must itself offer them)."""
    if not parent.is_dir():
        parent.mkdir()
    wanted = set(CONTROLLERS)
    enabled = set(_read(parent / "cgroup.subtree_control").split())
    if wanted <= enabled:
        return
    offered = set(_read(parent / "cgroup.controllers").split())
    if not wanted <= offered:
        _write(parent.parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(wanted)))
    _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(wanted)))


def create(*, memory_bytes: int, pids: int) -> RunCgroup:
    """A fresh cgroup for one run with its limits set; CgroupUnavailable says why there is none."""
    version, where = _plan()
    name = f"shoparena-sbx-{os.getpid()}-{secrets.token_hex(6)}"
    made: list[Path] = []
    try:
        if version == "v2":
            parent = where["parent"]
            _enable_v2(parent)
            directory = parent / name
            directory.mkdir()
            made.append(directory)
            group = RunCgroup(2, {c: directory for c in CONTROLLERS})
        else:
            dirs = {}
            for controller, base in where.items():
                directory = base / name
                directory.mkdir()
                made.append(directory)
                dirs[controller] = directory
            group = RunCgroup(1, dirs)
        group.set_limits(memory_bytes=memory_bytes, pids=pids)
        return group
    except OSError as exc:
        for directory in made:
            with contextlib.suppress(OSError):
                directory.rmdir()
        hint = f" (set ${CGROUP_ENV} to a cgroup2 directory this user may manage)" if version == "v2" else ""
        raise CgroupUnavailable(f"cannot create a {version} cgroup for the run: {exc}{hint}") from None


# -- small file helpers ----------------------------------------------------------------------------------
def _write(path: Path, value: object) -> None:
    with open(path, "w") as handle:
        handle.write(str(value))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _int(path: Path) -> int | None:
    text = _read(path).strip()
    return int(text) if text.isdigit() else None


def _keyed(path: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[key] = int(value)
    return values
