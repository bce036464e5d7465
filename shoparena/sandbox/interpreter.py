"""What of the host a sandboxed Python needs, and nothing more: the interpreter binary, its shared
library, its standard library, and the system's shared libraries — never its site-packages (the host's
installed packages, shoparena's own virtualenv included, stay out of reach).

The sandbox runs as an unprivileged uid. When that uid cannot reach the interpreter (pyenv under a 0700
/root, as on this project's machines), the parts it needs are staged once into a world-readable cache
of hard links (copies across file systems) and bound from there onto their original paths, so the
interpreter inside sees exactly the layout it was built for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from shoparena.sandbox.models import SandboxUnavailable

CACHE_ENV = "SHOPARENA_SANDBOX_CACHE"
DEFAULT_CACHE = Path("/var/cache/shoparena-sandbox")
STAGE_SKIP = frozenset({"site-packages", "dist-packages", "test", "idlelib", "tkinter"})
# System libraries the interpreter and its extension modules link against (libc, libssl, libffi, …).
SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32")
SYSTEM_LINKS = ("/lib", "/lib64", "/lib32")
SYSTEM_FILES = ("/etc/ld.so.cache",)

_PROBE = r"""
import json, os, site, sys, sysconfig
cv = sysconfig.get_config_var
libs = []
if cv("Py_ENABLE_SHARED") and cv("LIBDIR") and cv("INSTSONAME"):
    libs.append(os.path.join(cv("LIBDIR"), cv("INSTSONAME")))
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": "%d.%d" % sys.version_info[:2],
    "stdlib": os.path.realpath(sysconfig.get_path("stdlib")),
    "dynload": os.path.realpath(cv("DESTSHARED") or sysconfig.get_path("platstdlib")),
    "libraries": [os.path.realpath(p) for p in libs],
    "site_dirs": sorted({os.path.realpath(p) for p in site.getsitepackages([sys.base_prefix])}),
}))
"""


class Interpreter(BaseModel):
    """The host paths one interpreter needs inside the sandbox (all resolved, no symlinks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executable: Path
    version: str
    stdlib: Path
    dynload: Path
    libraries: list[Path]
    site_dirs: list[Path]

    def needed(self) -> list[Path]:
        """Binds the interpreter needs, beyond the system libraries."""
        paths = [self.executable, self.stdlib, *self.libraries]
        if not _within(self.dynload, self.stdlib):
            paths.append(self.dynload)
        return paths


class Bind(BaseModel):
    """One read-only bind: host `source` appears at `dest` inside the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Path
    dest: Path


class MountPlan(BaseModel):
    """Everything of the host the sandbox shows: read-only binds, symlinks, and empty read-only masks
    laid over directories that a bind would otherwise expose (site-packages)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    binds: list[Bind]
    symlinks: dict[str, str]  # dest -> target
    masks: list[Path]
    executable: Path
    staged: bool = False


@functools.lru_cache(maxsize=8)
def probe(python: str) -> Interpreter:
    """Ask `python` where its parts are (once per process)."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=30, env={"LANG": "C.UTF-8"}
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"cannot run the sandbox's interpreter {python}: {exc}") from None
    if done.returncode != 0:
        raise SandboxUnavailable(f"the sandbox's interpreter {python} failed to start: {done.stderr[-500:]}")
    return Interpreter.model_validate(json.loads(done.stdout))


def default_python() -> str:
    """The interpreter behind this one (a virtualenv's base), so the sandbox needs no virtualenv."""
    import sys

    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def reachable(path: Path, uid: int, gids: set[int], *, read: bool = True) -> bool:
    """Whether `uid` can walk to `path` and read it (directories: list and enter; with read=False a
    directory need only be enterable)."""
    if uid == 0:
        return True
    path = Path(os.path.abspath(path))
    try:
        for ancestor in reversed(path.parents):
            if not allows(ancestor.stat(), uid, gids, execute=True, read=False):
                return False
        info = path.stat()
    except OSError:
        return False
    return allows(info, uid, gids, execute=stat.S_ISDIR(info.st_mode), read=read)


def allows(
    info: os.stat_result, uid: int, gids: set[int], *, execute: bool, read: bool, write: bool = False
) -> bool:
    """Whether the mode bits of the class `uid` falls in (owner, group, other: the first that
    matches, as the kernel picks) grant every access asked for."""
    if info.st_uid == uid:
        shift = 6
    elif info.st_gid in gids:
        shift = 3
    else:
        shift = 0
    bits = (info.st_mode >> shift) & 0o7
    return (
        (not read or bool(bits & 0o4))
        and (not write or bool(bits & 0o2))
        and (not execute or bool(bits & 0o1))
    )


def plan(python: str, uid: int, gids: set[int]) -> MountPlan:
    """The mounts that give `uid` a working `python` and nothing else of the host."""
    interpreter = probe(python)
    binds: list[Bind] = []
    symlinks: dict[str, str] = {}
    for directory in SYSTEM_DIRS:
        if Path(directory).is_dir() and not Path(directory).is_symlink():
            binds.append(Bind(source=Path(directory), dest=Path(directory)))
    for link in SYSTEM_LINKS:
        path = Path(link)
        if path.is_symlink():
            symlinks[link] = os.readlink(path)
        elif path.is_dir():
            binds.append(Bind(source=path, dest=path))
    binds.extend(Bind(source=Path(f), dest=Path(f)) for f in SYSTEM_FILES if Path(f).is_file())
    for bind in binds:
        if not reachable(bind.source, uid, gids):
            raise SandboxUnavailable(f"the sandbox uid {uid} cannot read the system path {bind.source}")

    needed = interpreter.needed()
    staged = not all(reachable(p, uid, gids) for p in needed)
    if staged:
        root = stage(interpreter)
        sources = {p: root / _key_path(p) for p in needed}
    else:
        sources = {p: p for p in needed}
    covered = [b.dest for b in binds]
    for path in needed:
        if not any(_within(path, c) for c in covered):
            binds.append(Bind(source=sources[path], dest=path))
    masks = []
    for site_dir in interpreter.site_dirs:  # hidden where a bind would show it (staging left it out)
        cover = next((b for b in binds if _within(site_dir, b.dest)), None)
        if cover is not None and (cover.source / site_dir.relative_to(cover.dest)).is_dir():
            masks.append(site_dir)
    return MountPlan(
        binds=binds, symlinks=symlinks, masks=masks, executable=interpreter.executable, staged=staged
    )


# -- staging ---------------------------------------------------------------------------------------------
def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def stage(interpreter: Interpreter) -> Path:
    """A world-readable copy (hard links where possible) of the interpreter's parts, made once and
    reused: `<cache>/py-<key>/<original path without the leading />`."""
    exe = interpreter.executable.stat()
    key = hashlib.sha256(
        json.dumps([interpreter.model_dump(mode="json"), exe.st_mtime_ns, exe.st_size]).encode()
    ).hexdigest()[:16]
    root = cache_root()
    final = root / f"py-{key}"
    if final.is_dir():
        return final
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)
        building = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        os.chmod(building, 0o755)
        for path in interpreter.needed():
            _stage_path(path, building / _key_path(path))
        _open_dirs(building)
        try:
            building.rename(final)
        except OSError:  # another process staged it first
            shutil.rmtree(building, ignore_errors=True)
    except OSError as exc:
        raise SandboxUnavailable(
            f"the sandbox uid cannot read the interpreter {interpreter.executable}, and staging a readable "
            f"copy under {root} failed: {exc} (set ${CACHE_ENV} to a writable directory every user can "
            f"enter, or use an interpreter outside private directories)"
        ) from None
    return final


def _stage_path(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        for current, dirnames, filenames in os.walk(source):
            dirnames[:] = [d for d in dirnames if d not in STAGE_SKIP]
            target = dest / Path(current).relative_to(source)
            target.mkdir(parents=True, exist_ok=True)
            for name in filenames:
                _stage_file(Path(current) / name, target / name)
    else:
        _stage_file(source, dest)


def _stage_file(source: Path, dest: Path) -> None:
    if source.is_symlink():
        os.symlink(os.readlink(source), dest)
        return
    info = source.stat()
    if info.st_mode & stat.S_IROTH:
        try:
            os.link(source, dest)
            return
        except OSError:
            pass
    shutil.copy2(source, dest)
    os.chmod(dest, (info.st_mode & 0o755) | 0o444)


def _open_dirs(root: Path) -> None:
    for current, dirnames, _ in os.walk(root):
        for name in dirnames:
            os.chmod(Path(current) / name, 0o755)


def _key_path(path: Path) -> Path:
    return Path(str(path).lstrip("/"))


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
