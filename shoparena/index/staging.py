"""Build a directory beside its target and move it into place only when it is complete.

A build that fails (bad input, a full disk, Ctrl-C) must leave nothing behind: no half-written
directory that a later `--force` would have to guess about. The new tree is made in a hidden sibling
(same filesystem, so the final move is a rename) and renamed onto the target at the end. Replacing an
existing tree swaps the two in one step (Linux `renameat2(RENAME_EXCHANGE)`) where the OS allows, so
a reader sees the old tree or the new one, never neither; elsewhere it is two renames.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_STAGE_TAGS = ("building", "replaced")


def _stage_prefix(target: Path, tag: str) -> str:
    return f".{target.name}.{tag}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_stages(target: Path) -> list[Path]:
    """Delete staging siblings of `target` left by builds that were killed (their process is gone)."""
    removed = []
    for tag in _STAGE_TAGS:
        for stage in target.parent.glob(f".{glob.escape(target.name)}.{tag}-*"):
            pid_text = stage.name.removeprefix(f".{target.name}.{tag}-").split("-", 1)[0]
            if pid_text.isdigit() and not _pid_alive(int(pid_text)):
                shutil.rmtree(stage, ignore_errors=True)
                removed.append(stage)
    return removed


def make_stage(target: Path) -> Path:
    """A fresh empty directory beside `target` (creating its parents) to build into, with the mode a
    plain `mkdir` gets under this process's umask: `tempfile.mkdtemp` makes it private (0700), and the
    finished catalogue or corpus must stay readable by whoever could read a directory made the plain
    way (training jobs, validators and the sandbox's own user). The mode is read from a probe
    directory: setting the umask to learn it would race with other threads."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_stages(target)
    stage = Path(tempfile.mkdtemp(prefix=_stage_prefix(target, "building"), dir=target.parent))
    probe = stage / ".mode"
    probe.mkdir()
    mode = probe.stat().st_mode & 0o777
    probe.rmdir()
    stage.chmod(mode)
    return stage


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two paths; False where the OS or filesystem cannot (the caller falls back)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def move_into_place(stage: Path, target: Path) -> None:
    """Make the complete `stage` become `target`, replacing whatever tree is there (checked by the caller)."""
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    if not target.exists():
        os.rename(stage, target)
        return
    if _exchange(stage, target):
        # it now holds the replaced tree; the new one is in place, so a failure here is no failure
        # (a later build removes what is left, once this process is gone)
        shutil.rmtree(stage, ignore_errors=True)
        return
    old = Path(tempfile.mkdtemp(prefix=_stage_prefix(target, "replaced"), dir=target.parent))
    os.rename(target, old / target.name)
    try:
        os.rename(stage, target)
    except OSError:
        os.rename(old / target.name, target)
        raise
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)


@contextlib.contextmanager
def staged_build(out: Path, check: Callable[[Path], None], error: type[Exception]) -> Iterator[Path]:
    """An empty directory beside `out` to build into, moved onto `out` only when the build completes (an
    existing tree is replaced only then, whole, so no file of it outlives it), deleted if anything
    fails (so a failed build leaves no empty or partial files behind). `check(out)` raises when `out`
    may not be replaced; it runs before the build and again before the move (another build may have
    finished there meanwhile). A stage that cannot be made is `error`, naming `out`."""
    if out.is_symlink():  # replace what the link points at, so the link keeps working
        out = out.resolve()
    check(out)
    try:
        stage = make_stage(out)
    except OSError as exc:
        raise error(f"cannot create a build directory beside {out}: {exc.strerror or exc}") from None
    try:
        yield stage
        check(out)
        move_into_place(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


@contextlib.contextmanager
def staged_file(out: Path) -> Iterator[Path]:
    """The file counterpart of `staged_build`: yields a hidden sibling path to write; on success it is
    renamed onto `out` (one step), on any failure removed, so `out` is the old file or the whole new one."""
    out = Path(out)
    partial = out.with_name(f".{out.name}.partial")
    try:
        yield partial
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
