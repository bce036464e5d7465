"""Axis-B → axis-A rewriting (SPEC §11): a trace whose tool calls code made becomes a training row in
which a model reasons before each of those calls — the calls, their results and the final answer the
real ones, only the reasoning text written.

Why: a code-driven miner (axis B) can search and verify well, but its trace teaches a model nothing
about deciding the calls, so the corpus keeps it aside (`axis_b.jsonl`). A rewriter that reads the
trace (and, when given, the agent's source) and writes what a model would have thought before each
call turns it into an agentic example.

What is trusted: only the record's verified call log and messages. The rewriter sees, for each turn
that made calls, the calls and the results returned before it; it answers one reasoning text per
turn, nothing else. The rewritten row is assembled here, not by the rewriter, and then checked
against the original (`verify_unchanged`: every message, call, argument, result and the final answer
identical; only assistant reasoning differs), and each text is refused if it carries protocol tags
(a `<tool_call>` inside reasoning would train the model to emit a call nobody made). The row is then
judged like any trace — the judge's gates read the new reasoning against what the verified log had
shown before it, so a text that cites a product before it was seen, or a price nobody showed, fails
them — and carries `rewrite` provenance (the original record, the rewriter). Its judge quality goes
with it into `corpus build`, whose gates, dedup and leak-guarded split then treat it like any axis-A
row.

Rewriters: `reference` (offline, named as such: deterministic text built from the results the trace
really saw — the candidates' titles, ids and prices, compared on how much of the request they cover)
and `openai:MODEL` (any OpenAI-compatible endpoint, given the trace and the agent's source).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson
from pydantic import BaseModel, Field, ValidationError

from shoparena.corpus.models import MALFORMED, UNREADABLE, CorpusRow, RejectedRow, RewriteProvenance, row_json
from shoparena.corpus.normalise import ENDING_TOOLS, NormaliseError, from_trajectory
from shoparena.corpus.sources import SourceError, resolve_inputs
from shoparena.index.staging import staged_file
from shoparena.records.trajectory import TokenUsage, TrajectoryRecord

NOT_AXIS_B = "not_axis_b"
NO_RECOMMENDATION = "no_recommendation"
REWRITER_FAILED = "rewriter_failed"
REWRITE_COUNT = "rewrite_count_mismatch"
REWRITE_EMPTY = "rewrite_empty"
REWRITE_TOO_LONG = "rewrite_too_long"
REWRITE_PROTOCOL = "rewrite_injects_protocol"
REWRITE_CHANGED = "rewrite_changed_trace"
JUDGE_FAILED = "judge_failed"
DUPLICATE = "duplicate_record"
REWRITE_REASONS = (
    UNREADABLE,
    MALFORMED,
    NOT_AXIS_B,
    NO_RECOMMENDATION,
    REWRITER_FAILED,
    REWRITE_COUNT,
    REWRITE_EMPTY,
    REWRITE_TOO_LONG,
    REWRITE_PROTOCOL,
    REWRITE_CHANGED,
    JUDGE_FAILED,
    DUPLICATE,
)
"""Stable reasons of the rewrite's rejects file (`not_axis_b`: the record is already agentic)."""
MAX_REASONING_CHARS = 4000
PROTOCOL_MARKERS = re.compile(
    r"</?(?:tool_call|tool_response|think|obs|response|user|function|tools)>|<\|im_(?:start|end)\|>",
    re.IGNORECASE,
)
REASONING_KEYS = ("reasoning_content", "reasoning")


class TurnCall(BaseModel):
    name: str
    arguments: dict[str, Any]


class SeenResult(BaseModel):
    """A verified call's result, as the rewriter is shown it."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None


class RewriteTurn(BaseModel):
    message_index: int
    calls: list[TurnCall]
    results_before: list[SeenResult]
    """Every verified result returned before this turn, oldest first."""


class RewriteRequest(BaseModel):
    record_id: str
    query: str
    bucket: str
    turns: list[RewriteTurn]
    source: str | None = None
    """The agent's code, when the caller has it (a miner file from the arena's code store)."""


class RewriteAnswer(BaseModel):
    texts: list[str]
    """One reasoning text per turn of the request, in order."""
    completion_tokens: int = 0
    model_calls: int = 0


class Rewriter(Protocol):
    name: str

    def __call__(self, request: RewriteRequest) -> RewriteAnswer: ...

    def close(self) -> None: ...


class RewriteRejected(ValueError):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# -- reading a record ----------------------------------------------------------------------------------
def is_axis_b(record: TrajectoryRecord) -> bool:
    """Code emitted at least half of the non-ending calls (the corpus's own rule, `corpus.axis`)."""
    working = [call for call in record.calls if call.name not in ENDING_TOOLS] or record.calls
    code = sum(1 for call in working if call.origin == "code")
    return bool(working) and code * 2 >= len(working)


def rewrite_request(record: TrajectoryRecord, source: str | None = None) -> RewriteRequest:
    """The turns that made calls, each with the verified results returned before it."""
    calls = {call.call_id: call for call in record.calls}
    seen: list[SeenResult] = []
    turns: list[RewriteTurn] = []
    for index, message in enumerate(record.messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            turn_calls = []
            for call in message["tool_calls"]:
                logged = calls.get(call.get("id"))
                if logged is None:
                    raise RewriteRejected(
                        MALFORMED, f"message {index}: call {call.get('id')!r} is not in the log"
                    )
                turn_calls.append(TurnCall(name=logged.name, arguments=logged.arguments or {}))
            turns.append(RewriteTurn(message_index=index, calls=turn_calls, results_before=list(seen)))
        elif role == "tool":
            logged = calls.get(message.get("tool_call_id"))
            if logged is not None:
                seen.append(
                    SeenResult(
                        name=logged.name,
                        arguments=logged.arguments or {},
                        result=logged.result,
                        error=logged.error,
                    )
                )
    return RewriteRequest(
        record_id=record.record_id,
        query=record.problem.query,
        bucket=record.problem.bucket,
        turns=turns,
        source=source,
    )


# -- checking and assembling -------------------------------------------------------------------------
def check_answer(request: RewriteRequest, answer: RewriteAnswer) -> None:
    if len(answer.texts) != len(request.turns):
        raise RewriteRejected(
            REWRITE_COUNT, f"{len(answer.texts)} reasoning text(s) for {len(request.turns)} turn(s)"
        )
    for turn, text in zip(request.turns, answer.texts, strict=True):
        where = f"turn at message {turn.message_index}"
        if not text.strip():
            raise RewriteRejected(REWRITE_EMPTY, f"{where}: empty reasoning")
        if len(text) > MAX_REASONING_CHARS:
            raise RewriteRejected(
                REWRITE_TOO_LONG, f"{where}: {len(text)} characters (> {MAX_REASONING_CHARS})"
            )
        marker = PROTOCOL_MARKERS.search(text)
        if marker:
            raise RewriteRejected(
                REWRITE_PROTOCOL, f"{where}: the reasoning holds the protocol marker {marker.group(0)!r}"
            )


def rewritten(
    record: TrajectoryRecord, request: RewriteRequest, answer: RewriteAnswer, rewriter: str
) -> TrajectoryRecord:
    """The record as if a model had written each text before its turn's calls: the texts as those turns'
    reasoning, those calls' origin `llm`, the rewriter's inference as the usage, no verdict yet. It is
    never stored as a record (it would claim calls a model did not make): it is judged, then becomes a
    corpus row with `rewrite` provenance."""
    messages = [dict(message) for message in record.messages]
    rewritten_ids: set[str] = set()
    for turn, text in zip(request.turns, answer.texts, strict=True):
        message = messages[turn.message_index]
        for key in REASONING_KEYS:
            message.pop(key, None)
        message["reasoning_content"] = text.strip()
        rewritten_ids.update(call["id"] for call in message["tool_calls"])
    calls = [
        call.model_copy(update={"origin": "llm"}) if call.call_id in rewritten_ids else call
        for call in record.calls
    ]
    digest = hashlib.sha256(orjson.dumps([record.record_id, rewriter, answer.texts])).hexdigest()[:24]
    return record.model_copy(
        update={
            "record_id": digest,
            "messages": messages,
            "calls": calls,
            "usage": TokenUsage(completion_tokens=answer.completion_tokens, model_calls=answer.model_calls),
            "inference": None,
            "judge": None,
        }
    )


def verify_unchanged(original: TrajectoryRecord, candidate: TrajectoryRecord) -> list[str]:
    """What differs between the two beyond assistant reasoning and call origins (empty: nothing)."""
    differences = []
    if len(original.messages) != len(candidate.messages):
        return [f"{len(original.messages)} messages became {len(candidate.messages)}"]
    for index, (before, after) in enumerate(zip(original.messages, candidate.messages, strict=True)):
        if before.get("role") == "assistant":
            before = {k: v for k, v in before.items() if k not in REASONING_KEYS}
            after = {k: v for k, v in after.items() if k not in REASONING_KEYS}
        if before != after:
            differences.append(f"message {index} ({before.get('role')}) changed")
    if len(original.calls) != len(candidate.calls):
        differences.append(f"{len(original.calls)} calls became {len(candidate.calls)}")
    else:
        for before, after in zip(original.calls, candidate.calls, strict=True):
            if before.model_dump(exclude={"origin"}) != after.model_dump(exclude={"origin"}):
                differences.append(f"call {before.call_id} ({before.name}) changed")
    for name in ("problem", "outcome", "score", "tools"):
        if getattr(original, name) != getattr(candidate, name):
            differences.append(f"{name} changed")
    return differences


# -- one record ----------------------------------------------------------------------------------------
class Rewritten(BaseModel):
    row: CorpusRow
    quality: float | None


def rewrite_record(
    record: TrajectoryRecord,
    rewriter: Rewriter,
    judge: Callable[[TrajectoryRecord], Any],
    source_label: str,
    source: str | None = None,
) -> Rewritten:
    """The corpus row of `record` rewritten, judged and checked; `RewriteRejected` says why not."""
    if not is_axis_b(record):
        raise RewriteRejected(NOT_AXIS_B, "the model emitted most of its calls already (axis A)")
    if not any(call.name == "recommend_product" and call.error is None for call in record.calls):
        raise RewriteRejected(NO_RECOMMENDATION, "the trace recommends nothing: no final answer to keep")
    request = rewrite_request(record, source)
    try:
        answer = rewriter(request)
    except RewriteRejected:
        raise
    except Exception as exc:  # a rewriter is foreign code or a remote model: its failure is this record's
        raise RewriteRejected(REWRITER_FAILED, f"{rewriter.name}: {type(exc).__name__}: {exc}") from None
    if not isinstance(answer, RewriteAnswer):
        raise RewriteRejected(
            REWRITER_FAILED, f"{rewriter.name} answered {type(answer).__name__}, not RewriteAnswer"
        )
    check_answer(request, answer)
    candidate = rewritten(record, request, answer, rewriter.name)
    differences = verify_unchanged(record, candidate)
    if differences:
        raise RewriteRejected(REWRITE_CHANGED, "; ".join(differences[:5]))
    try:
        verdict = judge(candidate)
    except Exception as exc:  # the LLM judge's transport errors, its circuit breaker
        raise RewriteRejected(JUDGE_FAILED, f"{type(exc).__name__}: {exc}") from None
    candidate = candidate.model_copy(update={"judge": verdict})
    try:
        row = from_trajectory(candidate.model_dump(mode="json"), source_label)
    except NormaliseError as exc:
        raise RewriteRejected(exc.reason, exc.detail) from None
    row.metadata.rewrite = RewriteProvenance(
        from_record=record.record_id, rewriter=rewriter.name, source_sha256=_sha256(source)
    )
    return Rewritten(row=row, quality=None if verdict is None else float(verdict.quality))


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


# -- a file --------------------------------------------------------------------------------------------
class Engines(NamedTuple):
    """What rewrites and judges, made once per process by `rewrite_file`'s factory."""

    rewriter: Rewriter
    judge: Callable[[TrajectoryRecord], Any]

    def close(self) -> None:
        self.rewriter.close()
        close = getattr(self.judge, "close", None)
        if close is not None:
            close()


class Outcome(NamedTuple):
    """One line's fate: a row's JSON and its quality, or a reject."""

    label: str
    record_id: str | None
    row: bytes | None = None
    quality: float | None = None
    reject: RejectedRow | None = None


class RewriteReport(BaseModel):
    read: int = 0
    rewritten: int = 0
    rejected: dict[str, int] = Field(default_factory=dict)
    """reason → count (`not_axis_b` included: those records were left as they are)."""
    qualities: dict[str, int] = Field(default_factory=dict)
    """Judge quality of the rewritten rows → count."""
    out: str
    rejects: str | None = None

    @property
    def skipped_lines(self) -> int:
        return self.rejected.get(UNREADABLE, 0) + self.rejected.get(MALFORMED, 0)


def iter_trajectories(paths: Iterable[Path]) -> Iterator[tuple[str, bytes]]:
    """(file:line, line) of every non-blank line; a run directory is its trajectories.jsonl
    (`sources.resolve_inputs`, which refuses a missing path by name with `SourceError`)."""
    for path in resolve_inputs(list(paths)):
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"{path}:{number}", line


def rewrite_line(
    engines: Engines, label: str, line: bytes, sources: Callable[[TrajectoryRecord], str | None]
) -> Outcome:
    record = None
    try:
        try:
            record = TrajectoryRecord.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            reason = UNREADABLE if first["type"] == "json_invalid" else MALFORMED
            raise RewriteRejected(reason, f"{where}: {first['msg']}") from None
        done = rewrite_record(record, engines.rewriter, engines.judge, label, sources(record))
    except RewriteRejected as exc:
        reject = RejectedRow(
            reason=exc.reason,
            detail=exc.detail,
            source=label,
            problem_id=None if record is None else record.problem.problem_id,
            raw=None if record is not None else line.decode("utf-8", "replace")[:2000],
        )
        return Outcome(label, None if record is None else record.record_id, reject=reject)
    return Outcome(label, record.record_id, row_json(done.row), done.quality)


# One process's engines and sources (a worker's, made by `_start_worker`).
_WORKER: tuple[Engines, Callable] | None = None
BATCH = 32
"""Lines a worker takes at a time."""


def _start_worker(make: Callable[[], Engines], sources: Callable) -> None:
    global _WORKER
    _WORKER = (make(), sources)


def _rewrite_batch(batch: list[tuple[str, bytes]]) -> list[Outcome]:
    assert _WORKER is not None
    engines, sources = _WORKER
    return [rewrite_line(engines, label, line, sources) for label, line in batch]


def _batches(lines: Iterator[tuple[str, bytes]], size: int) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    for item in lines:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _outcomes(
    lines: Iterator[tuple[str, bytes]], make: Callable[[], Engines], sources: Callable, workers: int
) -> Iterator[Outcome]:
    """Every line's outcome, in input order; with `workers` > 1 from a pool, a bounded window of batches
    in flight (the input is never read ahead whole)."""
    if workers <= 1:
        engines = make()
        try:
            for label, line in lines:
                yield rewrite_line(engines, label, line, sources)
        finally:
            engines.close()
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, initializer=_start_worker, initargs=(make, sources)) as pool:
        window: deque[Any] = deque()
        for batch in _batches(lines, BATCH):
            window.append(pool.apply_async(_rewrite_batch, (batch,)))
            if len(window) >= 3 * workers:
                yield from window.popleft().get()
        while window:
            yield from window.popleft().get()


def rewrite_file(
    inputs: list[Path],
    out: Path,
    make: Callable[[], Engines],
    *,
    rejects: Path | None = None,
    sources: Callable[[TrajectoryRecord], str | None] = lambda _record: None,
    limit: int | None = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> RewriteReport:
    """Rewrite every axis-B record of `inputs` into `out` (corpus rows, JSONL, in input order); the
    others, with the reason, to `rejects`. `make()` builds the rewriter and judge (once per process:
    with `workers` > 1 each worker makes its own, so it must be picklable with fork); `sources(record)`
    gives the agent's code when it is known. Written to a temporary file and moved into place at the
    end, so `out` is never half a run; inputs without one readable record are a `SourceError` and write
    nothing."""
    report = RewriteReport(out=str(out), rejects=str(rejects) if rejects else None)
    out.parent.mkdir(parents=True, exist_ok=True)
    reject_sink = rejects.open("wb") if rejects else None
    done_ids: set[str] = set()
    try:
        with staged_file(out) as partial, partial.open("wb") as sink:
            outcomes = _outcomes(iter_trajectories(inputs), make, sources, workers)
            try:
                for outcome in outcomes:
                    report.read += 1
                    if progress:
                        progress(1)
                    reject = outcome.reject
                    if reject is None and outcome.record_id in done_ids:
                        reject = RejectedRow(
                            reason=DUPLICATE,
                            detail=f"record {outcome.record_id} came earlier in the input",
                            source=outcome.label,
                        )
                    if reject is not None:
                        report.rejected[reject.reason] = report.rejected.get(reject.reason, 0) + 1
                        if reject_sink is not None:
                            reject_sink.write(reject.to_json() + b"\n")
                        continue
                    done_ids.add(outcome.record_id or "")
                    sink.write(outcome.row + b"\n")
                    report.rewritten += 1
                    level = "unjudged" if outcome.quality is None else f"{outcome.quality:.1f}"
                    report.qualities[level] = report.qualities.get(level, 0) + 1
                    if limit is not None and report.rewritten >= limit:
                        break
            finally:
                outcomes.close()
            if not report.rewritten and report.skipped_lines == report.read:
                # nothing was readable: an empty `out` would pass for a rewrite that found no axis-B trace
                named = ", ".join(str(p) for p in inputs)
                read = (
                    f"none of its {report.read} line(s) is a trajectory record"
                    if report.read
                    else "it is empty"
                )
                raise SourceError(f"--input {named}: {read}; nothing was written")
    finally:
        if reject_sink is not None:
            reject_sink.close()
    return report
