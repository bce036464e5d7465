"""A miner's crash as its author reads it: the traceback an episode's error holds, split into frames,
with the harness's own frames (the runner that calls `agent_main`, the SDK, the subnet shims) told
apart from the miner's, so a viewer can show the miner's frame — the line of *their* code that raised —
under the name of *their* file rather than the name it had in the sandbox.

The error text is what the file agent records (`agent_main failed: TYPE: MESSAGE` and then Python's
traceback); an error without a traceback (a timeout, a reference agent's one-line crash) parses to a
`Crash` with no frames.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from shoparena.agents.miner.sandbox import RUNNER, SDK, SUBNET_FILES

HARNESS_FILES = frozenset({RUNNER.name, SDK.name, *(f.name for f in SUBNET_FILES)})
"""The harness's programs beside the miner's file in /app: their frames are not the miner's."""
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_TRACEBACK_HEAD = "Traceback (most recent call last):"


class Frame(BaseModel):
    file: str
    line: int
    function: str
    code: list[str] = Field(default_factory=list)
    """The source line Python printed under the frame (and its `^^^` marker line, when it gave one)."""

    @property
    def name(self) -> str:
        return PurePosixPath(self.file).name

    def text(self, file: str | None = None) -> str:
        """The frame as Python prints it, under `file` instead of its sandbox path when given."""
        head = f'  File "{file or self.file}", line {self.line}, in {self.function}'
        return "\n".join([head, *self.code])


class Crash(BaseModel):
    """What an errored episode's `outcome.error` says, read apart."""

    summary: str
    """The error's first line (`agent_main failed: TypeError: …`, `timeout: …`)."""
    exception: str | None = None
    """The traceback's last line (`TypeError: list indices must be integers …`)."""
    frames: list[Frame] = Field(default_factory=list)
    miner_frames: list[Frame] = Field(default_factory=list)
    """The frames in the miner's own file, outermost first."""

    @property
    def miner_frame(self) -> Frame | None:
        """The miner's innermost frame: the line of their code that raised (or called what raised)."""
        return self.miner_frames[-1] if self.miner_frames else None

    def miner_text(self, file: str | None = None) -> str:
        """The miner's frames and the exception, as Python would print them for their file alone."""
        lines = [frame.text(file) for frame in self.miner_frames]
        if self.exception:
            lines.append(self.exception)
        return "\n".join(lines)

    def where(self, file: str | None = None) -> str | None:
        """`my_bot.py:9 in agent_main`, the miner's innermost frame; None without one."""
        frame = self.miner_frame
        if frame is None:
            return None
        return f"{file or frame.name}:{frame.line} in {frame.function}"


def parse_crash(error: str) -> Crash:
    """Split an episode's error into its summary, frames and the miner's frames."""
    lines = error.splitlines()
    summary = lines[0] if lines else ""
    frames: list[Frame] = []
    exception = None
    in_traceback = False
    for line in lines[1:]:
        if line == _TRACEBACK_HEAD:
            in_traceback, frames, exception = True, [], None  # a chained traceback: the last counts
            continue
        if not in_traceback:
            continue
        match = _FRAME.match(line)
        if match:
            frames.append(Frame(file=match["file"], line=int(match["line"]), function=match["function"]))
        elif line.startswith("    ") and frames and exception is None:
            frames[-1].code.append(line)
        elif line and not line.startswith(" "):
            if line.startswith("---"):  # the stderr tail the file agent appends
                in_traceback = False
                continue
            exception = line
    return Crash(summary=summary, exception=exception, frames=frames, miner_frames=_miner_frames(frames))


def _miner_frames(frames: list[Frame]) -> list[Frame]:
    """Frames in the miner's file: beside the runner (its /app directory), not one of the harness's."""
    runner_dirs = {str(PurePosixPath(f.file).parent) for f in frames if f.name == RUNNER.name}
    return [
        frame
        for frame in frames
        if frame.name not in HARNESS_FILES
        and frame.file.endswith(".py")
        and (not runner_dirs or str(PurePosixPath(frame.file).parent) in runner_dirs)
    ]
