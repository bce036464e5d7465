"""Episodes of a run, one at a time (`shoparena view`, and the episodes section of a run's report.html).

`load_episodes(path)` reads a run directory (its trajectories.jsonl) or a trajectories file and gives
one `EpisodeView` per recorded (problem, sample) — the newest record of each, the one that counts —
in the file's order. A view holds what a person asks of an episode: the query; each turn's reasoning
and its calls with their verified origin (llm | code) and abridged results; the recommendation; the
rule scorer's verdict per constraint (which one failed: `budget`, `price`, …); the judge's gate and
cited spans, or why the episode was not judged; and, for an episode that crashed, the error with the
miner's own traceback frame. `EpisodeRow` is its one-line summary: the per-problem table.

Renderings: `rows_table` (terminal) / `rows_text` (plain), `episode_lines` (terminal markup or plain),
`episodes_html` (a section of report.html, each row linked to its episode's anchor); `--json` dumps
the models.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field
from rich import box
from rich.markup import escape
from rich.table import Table

from shoparena.agents.miner.crash import Crash, parse_crash
from shoparena.eval.episodes import error_kind
from shoparena.eval.run_dir import RUN_FILE, TRAJECTORIES_FILE, read_trajectories
from shoparena.records.calls import CallRecord
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict
from shoparena.report.runs import ReportError
from shoparena.scoring.rules import AXES

RESULT_CHARS = 240
"""An abridged call result or argument list: this many characters (`full=True` shows them whole)."""
ERROR_CHARS = 160
HTML_EPISODES = 400
"""report.html shows at most this many episodes in full (the table lists every one)."""
CONSTRAINT_LABELS = {
    "finished": "the episode must end without an error",
    "answered": "a recommendation must be made",
    "scoreable": "the problem must ask something checkable",
    "grounded": "every recommended id must come from a search of the episode",
    "title": "the title must match what was asked",
    "price": "the price must be within the asked range",
    "service": "the asked services (COD, free shipping …) must be offered",
    "sku_attr": "the asked SKU options and attributes must be present",
    "knowledge": "the product must have the asked knowledge attribute",
    "shop": "every item must come from one shop",
    "budget": "the total, after the voucher, must be within the budget",
}
"""What each constraint requires, worded so it reads right beside both `ok` and `FAIL`."""


class ConstraintVerdict(BaseModel):
    name: str
    ok: bool
    detail: str = ""


class CallView(BaseModel):
    step: int
    name: str
    origin: str
    arguments: str
    result: str
    error: str | None = None
    counted: bool = True


class TurnView(BaseModel):
    number: int
    reasoning: str | None = None
    """The model's reasoning (its `reasoning_content`) or, for a code agent, what it narrated."""
    content: str | None = None
    calls: list[CallView] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    """What the harness told the agent after the turn (a format error, say)."""


class EpisodeRow(BaseModel):
    """One line of the per-problem table."""

    problem_id: str
    sample: int = 0
    bucket: str
    success: bool
    rule: float | None = None
    judge_gate: str | None = None
    judge_quality: float | None = None
    failing: list[str] = Field(default_factory=list)
    """The constraints the episode failed, in the order they are checked (`budget`, `price`, …)."""
    error: str | None = None
    """Why the episode failed to finish (one line), with the miner's frame where there is one."""
    error_kind: str | None = None
    """The error's kind (`agent crashed`, `timeout`, `endpoint` …: `eval.episodes.error_kind`)."""
    turns: int = 0
    anchor: str
    """The id of the episode's section in report.html."""


class EpisodeView(BaseModel):
    row: EpisodeRow
    record_id: str
    agent: str
    query: str
    turns: list[TurnView]
    recommendation: list[str] | None = None
    terminated: str | None = None
    end_reason: str | None = None
    constraints: list[ConstraintVerdict]
    judge: JudgeVerdict | None = None
    unjudged_reason: str | None = None
    error: str | None = None
    crash: Crash | None = None
    miner_file: str | None = None
    """The name the miner's frames are shown under (the agent file's own name where the run knows it)."""
    notes: list[str] = Field(default_factory=list)


class EpisodeSet(BaseModel):
    source: Path
    """The trajectories file read."""
    judged: bool
    """Whether the run judged its episodes (run.json's `judged`; True when there is no run.json and a
    record carries a verdict)."""
    episodes: list[EpisodeView]

    def find(self, problem: str) -> list[EpisodeView]:
        """The episodes of a problem id (or of the one problem id it is a unique prefix of)."""
        exact = [e for e in self.episodes if e.row.problem_id == problem]
        if exact:
            return exact
        ids = sorted({e.row.problem_id for e in self.episodes if e.row.problem_id.startswith(problem)})
        if len(ids) == 1:
            return [e for e in self.episodes if e.row.problem_id == ids[0]]
        return []

    def near(self, problem: str, n: int = 3) -> list[str]:
        """Problem ids close to `problem` (prefix matches first, then similar spellings)."""
        ids = list(dict.fromkeys(e.row.problem_id for e in self.episodes))
        prefixed = [pid for pid in ids if pid.startswith(problem)]
        if prefixed:
            return prefixed[:n]
        return difflib.get_close_matches(problem, ids, n=n, cutoff=0.5)


# -- reading ----------------------------------------------------------------------------------------


def trajectories_path(path: Path) -> Path:
    """The trajectories file of `path` (a run directory or the file itself), or a one-line ReportError."""
    if not path.exists():
        raise ReportError(f"{path}: no such run directory or trajectories file")
    if path.is_file():
        return path
    candidate = path / TRAJECTORIES_FILE
    if candidate.is_file():
        return candidate
    runs = sorted(p.parent.relative_to(path) for p in path.glob(f"*/**/{TRAJECTORIES_FILE}"))
    if runs:
        shown = ", ".join(str(path / run) for run in runs[:5]) + (" …" if len(runs) > 5 else "")
        raise ReportError(f"{path} holds no {TRAJECTORIES_FILE}; the runs under it: {shown}")
    raise ReportError(f"{path} holds no {TRAJECTORIES_FILE}: not an eval run directory")


def load_episodes(path: Path | str, miner_file: str | None = None, full: bool = False) -> EpisodeSet:
    """Every episode of a run directory or trajectories file (the newest record of each pair).

    `miner_file`: the name to show a miner's traceback frames under (default: the name run.json records
    for the file, `agent_file`, else the agent file's name from the run's agent spec, `file:PATH`);
    `full`: call results and arguments whole, not abridged."""
    from shoparena.agents.base import RunnerError

    source = trajectories_path(Path(path))
    try:
        log = read_trajectories(source)
    except RunnerError as exc:
        raise ReportError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{source}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if not log.records:
        raise ReportError(f"{source} holds no trajectory record")
    run = _run_config(source.parent)
    judged = bool(run.get("judged")) if run else any(r.judge is not None for r in log.records)
    recorded_file = run.get("agent_file")
    if miner_file is None and isinstance(recorded_file, str) and recorded_file:
        miner_file = recorded_file  # the author's name for the copy the run ran (`miner try`)
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    episodes = []
    for record in log.records:
        number = seen[record.problem.problem_id] = seen.get(record.problem.problem_id, 0) + 1
        anchor = _anchor(record.problem.problem_id, record.sample if number > 1 else None)
        while anchor in anchors:  # two ids that differ only in characters an anchor drops
            anchor += "-"
        anchors.add(anchor)
        episodes.append(episode_view(record, judged, anchor, miner_file, full))
    return EpisodeSet(source=source, judged=judged, episodes=episodes)


def _run_config(directory: Path) -> dict[str, Any]:
    try:
        data = orjson.loads((directory / RUN_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _anchor(problem_id: str, sample: int | None) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", problem_id).strip("-") or "problem"
    return f"ep-{slug}" + (f"-s{sample}" if sample is not None else "")


def _file_name(spec: str) -> str | None:
    if not spec.startswith("file:"):
        return None
    return Path(spec.removeprefix("file:")).name or None


def constraint_verdicts(score: ScoreSummary, error: str | None) -> list[ConstraintVerdict]:
    """The rule scorer's verdict per constraint, in the order they are checked: how the episode ended,
    then each axis the problem asks for (hits/checks), then one shop (a shop problem) or the budget (a
    voucher problem, whose success never asks for one shop)."""
    if error:  # nothing it recommended counts, so no constraint was checked
        return [
            ConstraintVerdict(
                name="finished", ok=False, detail=f"{error_kind(error)}: no answer counted, nothing checked"
            )
        ]
    verdicts = []
    if score.answered is not None:
        verdicts.append(
            ConstraintVerdict(
                name="answered",
                ok=score.answered and bool(score.product_ids),
                detail=", ".join(score.product_ids or []) or "nothing recommended",
            )
        )
    if score.scoreable is False:
        verdicts.append(ConstraintVerdict(name="scoreable", ok=False, detail="strict mode scores it 0"))
    if score.grounded is not None:
        verdicts.append(ConstraintVerdict(name="grounded", ok=score.grounded))
    for axis in AXES:
        checks = getattr(score, f"{axis}_checks")
        if checks:
            hits = getattr(score, f"{axis}_hits") or 0
            verdicts.append(ConstraintVerdict(name=axis, ok=hits >= checks, detail=f"{hits}/{checks}"))
    if score.budget is not None:
        # a voucher problem: one shop is no constraint of its own, only what a shop voucher needs to apply
        shops = {None: "", True: "items from one shop", False: "items from several shops"}[score.shop]
        verdicts.append(ConstraintVerdict(name="budget", ok=score.budget, detail=shops))
    elif score.shop is not None:
        verdicts.append(ConstraintVerdict(name="shop", ok=score.shop))
    return verdicts


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def abridge(value: Any, limit: int | None = RESULT_CHARS) -> str:
    """A call's result in a line: product lists as `N products: ID "title" price; …`, anything else as
    compact JSON, cut at `limit` characters (None: whole)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) and "product_id" in v for v in value):
        shown = []
        for item in value if limit is None else value[:3]:
            title = item.get("title")
            part = str(item["product_id"])
            if title:
                part += f' "{_one_line(str(title), 48 if limit else 10_000)}"'
            if item.get("price") is not None:
                part += f" {item['price']}"
            shown.append(part)
        more = len(value) - len(shown)
        text = f"{len(value)} product(s): " + "; ".join(shown) + (f" (+{more} more)" if more else "")
    else:
        text = _compact(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _turns(record: TrajectoryRecord, full: bool) -> list[TurnView]:
    calls = {call.call_id: call for call in record.calls}
    used: set[str] = set()
    turns: list[TurnView] = []
    for message in record.messages:  # the system prompt and the query come before the first turn
        role = message.get("role")
        if role == "assistant":
            turn = TurnView(
                number=len(turns) + 1,
                reasoning=_text(message.get("reasoning_content")),
                content=_text(message.get("content")),
            )
            for tool_call in message.get("tool_calls") or []:
                call = calls.get(str(tool_call.get("id")))
                if call is not None:
                    used.add(call.call_id)
                    turn.calls.append(_shown(call, full))
            turns.append(turn)
        elif role in ("user", "system") and turns:
            text = _text(message.get("content"))
            if text:
                turns[-1].feedback.append(text)
    leftover = [call for call in record.calls if call.call_id not in used]
    for step in sorted({call.step for call in leftover}):
        turn = TurnView(number=len(turns) + 1)
        turn.calls = [_shown(call, full) for call in leftover if call.step == step]
        turns.append(turn)
    return turns


def _shown(call: CallRecord, full: bool) -> CallView:
    """A call as the view lists it: its arguments and result abridged unless `full`."""
    limit = None if full else RESULT_CHARS
    arguments = _compact(call.arguments if call.arguments is not None else (call.raw_arguments or ""))
    if limit is not None and len(arguments) > limit:
        arguments = arguments[: limit - 1] + "…"
    return CallView(
        step=call.step,
        name=call.name,
        origin=call.origin,
        arguments=arguments,
        result=abridge(call.result, limit),
        error=call.error,
        counted=call.counted,
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):  # content parts
        value = " ".join(str(part.get("text", "")) for part in value if isinstance(part, dict))
    text = str(value).strip()
    return text or None


def unjudged_reason(record: TrajectoryRecord, judged: bool) -> str | None:
    if record.judge is not None:
        return None
    if record.outcome.error:
        return f"not judged: the episode failed ({error_kind(record.outcome.error)}), so it has no reasoning to grade"
    if not judged:
        return "not judged: the run was made without --judge"
    return "not judged: the judge failed on this episode (see the run's log)"


def error_line(error: str, crash: Crash | None, miner_file: str | None, limit: int = ERROR_CHARS) -> str:
    """The error in one line: its kind and message, and where the miner's code raised."""
    summary = crash.summary if crash is not None else error.splitlines()[0]
    exception = crash.exception if crash is not None else None
    if exception and exception not in summary:
        summary = f"{summary} — {exception}"
    where = crash.where(miner_file) if crash is not None else None
    text = _one_line(summary, limit)
    return f"{text} (at {where})" if where else text


def episode_view(
    record: TrajectoryRecord,
    judged: bool = True,
    anchor: str | None = None,
    miner_file: str | None = None,
    full: bool = False,
) -> EpisodeView:
    """What `shoparena view` shows of one record."""
    outcome = record.outcome
    error = outcome.error
    crash = parse_crash(error) if error else None
    shown_file = miner_file or _file_name(record.agent.spec)
    constraints = constraint_verdicts(record.score, error)
    turns = _turns(record, full)
    judge = record.judge
    row = EpisodeRow(
        problem_id=record.problem.problem_id,
        sample=record.sample,
        bucket=record.problem.bucket,
        success=bool(record.score.success),
        rule=record.score.rule,
        judge_gate=judge.gate if judge else None,
        judge_quality=judge.quality if judge else None,
        failing=[c.name for c in constraints if not c.ok],
        error=error_line(error, crash, shown_file) if error else None,
        error_kind=error_kind(error) if error else None,
        turns=sum(1 for t in turns if t.reasoning or t.content or t.calls),
        anchor=anchor or _anchor(record.problem.problem_id, None),
    )
    return EpisodeView(
        row=row,
        record_id=record.record_id,
        agent=record.agent.spec,
        query=record.problem.query,
        turns=turns,
        recommendation=outcome.recommended_product_ids,
        terminated=outcome.terminated,
        end_reason=outcome.end_reason,
        constraints=constraints,
        judge=judge,
        unjudged_reason=unjudged_reason(record, judged),
        error=error,
        crash=crash,
        miner_file=shown_file,
        notes=list(outcome.notes),
    )


# -- rendering ----------------------------------------------------------------------------------------

ROW_HEADER = ["problem", "bucket", "ok", "rule", "judge", "failing", "turns", "error"]
NUMERIC = (3, 6)
"""The columns aligned right (rule, turns)."""


def row_cells(row: EpisodeRow, samples: bool = False) -> list[str]:
    judge = "" if row.judge_gate is None else f"{row.judge_gate} {row.judge_quality:.1f}"
    failing = row.error_kind or "" if row.error else ", ".join(row.failing)
    problem = row.problem_id + (f" #{row.sample}" if samples else "")
    return [
        problem,
        row.bucket,
        "yes" if row.success else "no",
        "" if row.rule is None else f"{row.rule:.2f}",
        judge or ("–" if row.error else ""),
        failing,
        str(row.turns),
        row.error or "",
    ]


def _samples(rows: Sequence[EpisodeRow]) -> bool:
    return any(row.sample for row in rows)


def rows_table(rows: Sequence[EpisodeRow], title: str | None = None) -> Table:
    """The per-problem table for a terminal: every column but the error, which `error_lines` lists
    below it (a long error in a column would squash the rest); an errored row's `failing` is its kind."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    many = _samples(rows)
    shown = [i for i, name in enumerate(ROW_HEADER) if name != "error"]
    for i in shown:
        column = ROW_HEADER[i]
        if column == "failing":
            table.add_column(column, min_width=8, ratio=1)
        else:  # whole: the problem id is what `view RUN PROBLEM` takes
            table.add_column(column, no_wrap=True, justify="right" if i in NUMERIC else "left")
    for row in rows:
        styled = [escape(cell) for cell in row_cells(row, many)]
        styled[2] = "[green]yes[/]" if row.success else "[red]no[/]"
        table.add_row(*(styled[i] for i in shown))
    return table


def error_lines(rows: Sequence[EpisodeRow]) -> list[str]:
    """The rows' errors, each distinct one once with the problems it ended."""
    by_error: dict[str, list[str]] = {}
    for row in rows:
        if row.error:
            by_error.setdefault(row.error, []).append(
                row.problem_id + (f" #{row.sample}" if row.sample else "")
            )
    lines = []
    for error, problems in by_error.items():
        shown = ", ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        lines.append(f"error on {len(problems)} episode(s) ({shown}): {error}")
    return lines


def rows_text(rows: Sequence[EpisodeRow]) -> str:
    """The per-problem table as plain aligned columns (for pipes and files): one line per episode,
    nothing wrapped, the error column last but one and the rest padded."""
    many = _samples(rows)
    lines = [ROW_HEADER, *(row_cells(row, many) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(ROW_HEADER))]
    out = []
    for line in lines:
        cells = [
            cell.rjust(w) if i in NUMERIC else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def summary_line(episodes: Sequence[EpisodeView]) -> str:
    rows = [e.row for e in episodes]
    ok = sum(r.success for r in rows)
    failed = sum(1 for r in rows if r.error)
    judged = sum(1 for r in rows if r.judge_gate)
    return (
        f"{len(rows)} episode(s): {ok} succeeded, {failed} ended in an error, {judged} judged · "
        "`shoparena view RUN PROBLEM` shows one"
    )


def agent_label(view: EpisodeView) -> str:
    """The agent as the episode's header names it: its spec, led by the author's own file name where
    the run ran a copy under another (`my_bot.py (run as file:…/agent.py)`)."""
    copied = _file_name(view.agent)
    if view.miner_file and copied and view.miner_file != copied:
        return f"{view.miner_file} (run as {view.agent})"
    return view.agent


def episode_lines(view: EpisodeView, markup: bool = False) -> list[str]:
    """One episode as lines of text: rich markup when `markup`, plain otherwise."""

    def e(text: str) -> str:
        return escape(text) if markup else text

    def label(text: str, style: str = "bold") -> str:
        return f"[{style}]{text}[/]" if markup else text

    row = view.row
    verdict = label("success", "bold green") if row.success else label("failure", "bold red")
    rule = "" if row.rule is None else f" · rule {row.rule:.2f}"
    sample = f" · sample {row.sample}" if row.sample else ""
    lines = [
        f"{label('episode')} {e(row.problem_id)}{sample} · {e(row.bucket)} · {verdict}{rule} · "
        f"{e(agent_label(view))}",
        f"{label('query')}: {e(view.query)}",
    ]
    for turn in view.turns:
        lines.append(label(f"turn {turn.number}", "bold cyan"))
        if turn.reasoning:
            lines.append(f"  {label('reasoning', 'dim')}: {e(turn.reasoning)}")
        if turn.content:
            lines.append(f"  {label('says', 'dim')}: {e(turn.content)}")
        for call in turn.calls:
            origin = label(call.origin, "magenta" if call.origin == "llm" else "yellow")
            uncounted = " (not counted: the episode had ended)" if not call.counted else ""
            lines.append(f"  → [{origin}] {e(call.name)}({e(call.arguments)}){uncounted}")
            if call.error:
                lines.append(f"    {label('error', 'red')}: {e(call.error)}")
            elif call.result:
                lines.append(f"    = {e(call.result)}")
        for text in turn.feedback:
            lines.append(f"  {label('harness', 'dim')}: {e(text)}")
    rec = ", ".join(view.recommendation) if view.recommendation else "nothing"
    lines.append(f"{label('recommendation')}: {e(rec)}")
    ended = view.end_reason or (f"terminated ({view.terminated})" if view.terminated else "")
    if ended and not view.error:  # an error's end reason repeats it: shown whole below
        lines.append(f"{label('ended')}: {e(ended)}")
    lines.append(label("constraints"))
    for constraint in view.constraints:
        mark = label("ok  ", "green") if constraint.ok else label("FAIL", "bold red")
        detail = f" ({constraint.detail})" if constraint.detail else ""
        meaning = CONSTRAINT_LABELS.get(constraint.name, "")
        lines.append(f"  {mark} {e(constraint.name)}{e(detail)} — {e(meaning)}")
    if view.judge is not None:
        judge = view.judge
        lines.append(
            f"{label('judge')}: gate {e(judge.gate)} · quality {judge.quality:.1f} · {e(judge.judge_model)}"
        )
        lines.append(f"  {e(judge.explanation)}")
        for span in judge.cited_spans:
            lines.append(f"  cited: “{e(_one_line(span, 300))}”")
    else:
        lines.append(f"{label('judge')}: {e(view.unjudged_reason or 'not judged')}")
    if view.error:
        lines.append(f"{label('error', 'bold red')}: {e(view.error.splitlines()[0])}")
        crash = view.crash
        if crash is not None and crash.miner_frames:
            lines.append(
                f"  {label('your code', 'bold')} ({e(view.miner_file or crash.miner_frames[-1].name)}):"
            )
            lines += [f"  {e(line)}" for line in crash.miner_text(view.miner_file).splitlines()]
        elif crash is not None and crash.frames:
            lines += [f"  {e(line)}" for frame in crash.frames for line in frame.text().splitlines()]
            if crash.exception:
                lines.append(f"  {e(crash.exception)}")
    for note in view.notes:
        lines.append(f"{label('note', 'dim')}: {e(note)}")
    return lines


def episodes_html(episodes: EpisodeSet, limit: int = HTML_EPISODES) -> str:
    """report.html's section: the per-problem table, each problem id a link to its episode below."""
    views = episodes.episodes
    many = _samples([v.row for v in views])
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ROW_HEADER)
    body = []
    for index, view in enumerate(views):
        cells = row_cells(view.row, many)
        first = html.escape(cells[0])
        if index < limit:
            first = f'<a href="#{view.row.anchor}">{first}</a>'
        rest = "".join(
            f'<td class="{"num" if i in NUMERIC else ""}">{html.escape(c)}</td>'
            for i, c in enumerate(cells[1:], 1)
        )
        style = "" if view.row.success else ' class="failed"'
        body.append(f"<tr{style}><td>{first}</td>{rest}</tr>")
    parts = [
        "<h2 id='episodes'>Episodes</h2>",
        "<p class='note'>One row per episode; the problem id links to the episode: each turn's reasoning "
        "and calls (origin llm or code), the recommendation, the verdict per constraint, the judge's "
        "gate and cited spans, and the error with the miner's own frame. In the terminal: "
        f"<code>shoparena view {html.escape(str(episodes.source.parent))} PROBLEM</code>.</p>",
        f"<table class='episodes'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>",
    ]
    if len(views) > limit:
        parts.append(
            f"<p class='note'>The first {limit} episodes are shown below; the rest in the terminal.</p>"
        )
    for view in views[:limit]:
        text = "\n".join(episode_lines(view))
        parts.append(
            f"<section class='episode' id='{view.row.anchor}'><h3>{html.escape(view.row.problem_id)}"
            f"{' · sample ' + str(view.row.sample) if view.row.sample else ''}</h3>"
            f"<pre>{html.escape(text)}</pre><p><a href='#episodes'>↑ episodes</a></p></section>"
        )
    return "".join(parts)


EPISODE_STYLE = (
    "pre{white-space:pre-wrap;word-break:break-word;background:#fafafa;border:1px solid #eee;padding:.6em;"
    "font-size:.85em}table.episodes tr.failed td:first-child{border-left:3px solid #c0392b}"
    "section.episode{margin-top:1.5em}"
)
