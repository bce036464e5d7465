"""Run cgroups: the real hierarchy of this machine (create, limit, attach, kill, remove), and the
cgroup v2 file formats on a directory laid out like a v2 group (this machine's controllers are v1)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from shoparena.sandbox import cgroups
from shoparena.sandbox.models import MiB

HIERARCHY = cgroups.detect()


@pytest.mark.skipif(HIERARCHY not in ("v1", "v2"), reason=f"no usable cgroup here: {HIERARCHY}")
def test_a_run_group_limits_kills_and_removes_the_real_hierarchy():
    group = cgroups.create(memory_bytes=64 * MiB, pids=16)
    # the shell forks its two sleepers after it has been attached: children inherit the group
    sleeper = subprocess.Popen(["sh", "-c", "sleep 0.3; sleep 30 & sleep 30 & wait"])
    try:
        group.attach(sleeper.pid)
        deadline = time.monotonic() + 5
        while len(group.pids()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeper.pid in group.pids() and len(group.pids()) == 3
        pids_file = group.dirs["pids"] / "pids.max"
        assert pids_file.read_text().strip() == "16"
        assert group.kill()
        assert sleeper.wait(timeout=5) == -9
        assert group.pids() == []
        stats = group.stats()
        assert stats.oom_kills == 0 and stats.pids_refused == 0
    finally:
        sleeper.kill()
        sleeper.wait()
        group.remove()
    assert all(not d.exists() for d in group.unique_dirs())


@pytest.fixture
def v2_group(tmp_path: Path) -> cgroups.RunCgroup:
    directory = tmp_path / "shoparena-sbx-test"
    directory.mkdir()
    for name in ("pids.max", "memory.max", "memory.swap.max", "cgroup.procs", "cgroup.kill"):
        (directory / name).write_text("")
    (directory / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 0\n")
    (directory / "memory.peak").write_text("268435456\n")
    (directory / "pids.peak").write_text("16\n")
    (directory / "pids.events").write_text("max 5\n")
    return cgroups.RunCgroup(2, {c: directory for c in cgroups.CONTROLLERS})


def test_v2_limits_stats_and_kill_use_the_unified_files(v2_group):
    directory = v2_group.dirs["memory"]
    v2_group.set_limits(memory_bytes=512 * MiB, pids=64)
    assert (directory / "memory.max").read_text() == str(512 * MiB)
    assert (directory / "memory.swap.max").read_text() == "0"
    assert (directory / "pids.max").read_text() == "64"
    assert v2_group.stats() == cgroups.CgroupStats(
        oom_kills=2, pids_refused=5, memory_peak_bytes=268435456, pids_peak=16
    )
    assert v2_group.kill() and (directory / "cgroup.kill").read_text() == "1"
    assert v2_group.unique_dirs() == [directory]


def test_v2_parent_enables_the_controllers_for_its_children(tmp_path):
    parent = tmp_path / "shoparena-sandbox"
    (tmp_path / "cgroup.subtree_control").write_text("")
    parent.mkdir()
    (parent / "cgroup.controllers").write_text("cpu memory pids\n")
    (parent / "cgroup.subtree_control").write_text("")
    cgroups._enable_v2(parent)
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (tmp_path / "cgroup.subtree_control").read_text() == ""  # the parent already offered them
