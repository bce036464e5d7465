"""Stage 1 of the build: the row-local work (normalise, gates, ranking signals, axis) in worker
processes over chunks of input lines.

A worker writes a chunk's rejects, axis-B rows and axis-A survivors to the chunk's own files and sends
back only a small `ChunkResult`: the chunk's tally, its survivors' and axis-B rows' rank-table rows and
the files' names. The main process appends the reject files to the outputs in input order (hashed
from a memory map, copied by the kernel), leaves the survivors and the axis-B files where they are for
ranking and export to read back, and puts their rows in the rank table. Axis-B rows wait for export
because whether a row may be written at all depends on its problem's leak cluster (never-touch
suites), which is known only once every problem has been seen.
"""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

try:
    import simdjson
except ImportError:  # pragma: no cover - a dependency; without it every record is parsed by orjson
    simdjson = None

from shoparena.corpus import gates as gate_mod
from shoparena.corpus import spill
from shoparena.corpus.axis import classify_axis
from shoparena.corpus.config import CorpusConfig
from shoparena.corpus.export import HashingWriter, trl_messages
from shoparena.corpus.models import UNREADABLE, CorpusRow, RejectedRow, RowMetadata, row_json
from shoparena.corpus.normalise import NormaliseError, from_trajectory, is_trajectory, normalise_record
from shoparena.corpus.rank import compute_signals, rank_key
from shoparena.corpus.ranktable import CandidateRow, RankTable
from shoparena.corpus.sources import iter_records, line_ranges, read_line_range, resolve_inputs
from shoparena.corpus.tally import Tally
from shoparena.corpus.tokens import TokenCounter
from shoparena.corpus.trace import trace_calls

CHUNK = 256
"""Records a chunk holds at most; also spaces the chunks' `seq` numbers apart."""

Source = list[tuple[str, bytes]] | tuple[Path, int, int, int]
"""A chunk as a worker gets it: (label, record bytes) pairs, or a line range of a JSONL file that the
worker reads itself (`sources.line_ranges`)."""


# -- what one record becomes ----------------------------------------------------------------------------
class Rejected(NamedTuple):
    reason: str
    bucket: str | None
    unjudged: bool
    """Rejected with no judge score at all (counted apart in the report)."""
    line: bytes
    """The rejects.jsonl line (`RejectedRow.to_json`)."""


class AxisB(NamedTuple):
    """A row whose calls code emitted: bound for axis_b.jsonl (unless its problem is never-touch),
    never ranked."""

    meta: RowMetadata
    line: bytes
    """The canonical row JSON (`models.row_json`)."""


class Survivor(NamedTuple):
    """An axis-A row that passed every gate, bound for ranking."""

    meta: RowMetadata
    data: bytes
    """The canonical row JSON (`models.row_json`)."""
    trl: bytes
    """Its messages in TRL form (`export.trl_messages`), made here in parallel for export to splice in."""


Outcome = Rejected | AxisB | Survivor


class RowWork:
    """Normalise, gate and classify one record at a time; one per worker process."""

    def __init__(self, config: CorpusConfig):
        self.config = config
        self.counter = TokenCounter(config.tokenizer)
        self._lazy = simdjson.Parser() if simdjson is not None else None
        self.catalog = None
        if config.catalog is not None:
            from shoparena.index.catalog_dir import open_catalog

            self.catalog = open_catalog(config.catalog)

    def run(self, chunk: list[tuple[str, bytes]]) -> list[Outcome]:
        """One outcome per record, in order. Rows are finished one at a time (parse to serialised
        output) so each row's ~200 KB of Python objects is freed before the next is built, and the
        cyclic GC is paused meanwhile: rows are trees without cycles, and at 20+ messages a row its
        generation-0 passes cost ~80 µs a row (~15% of the stage)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return [self.one(source, raw) for source, raw in chunk]
        finally:
            if paused:
                gc.enable()

    def _parse(self, raw: bytes, source: str) -> CorpusRow:
        """Our canonical records take the lazy path (simdjson: only messages, tools and the small
        fields become Python objects; the call log's repeated results are never built); every other
        shape, and anything simdjson refuses, is parsed in full by orjson for `normalise_record`. (One
        difference: an object with a repeated key gives simdjson's reading the first value, orjson's
        the last; the runner never writes one.)"""
        if self._lazy is not None and raw[:1] == b"{":
            try:
                document = self._lazy.parse(raw)
            except ValueError:
                document = None
            if document is not None:
                try:
                    if is_trajectory(document):
                        return from_trajectory(document, source)
                finally:
                    del document  # the parser is reused: no proxy into it may outlive this call
        return normalise_record(orjson.loads(raw), source)

    def one(self, source: str, raw: bytes) -> Outcome:
        try:
            row = self._parse(raw, source)
        except orjson.JSONDecodeError as exc:
            text = raw.decode("utf-8", "replace")[:2000]
            return _rejected(
                RejectedRow(reason=UNREADABLE, detail=f"not JSON: {exc}", source=source, raw=text)
            )
        except NormaliseError as exc:
            return _rejected(
                RejectedRow(reason=exc.reason, detail=exc.detail, source=source, raw=orjson.loads(raw))
            )
        calls = trace_calls(row.messages)
        meta = row.metadata
        meta.signals = compute_signals(row, calls)
        meta.axis, meta.axis_method = classify_axis(row, calls)
        failure = (
            gate_mod.quality_gate(row, self.config.min_quality)
            or gate_mod.outcome_gate(row, self.config.require_success)
            or gate_mod.pairing_gate(row.messages)
            or gate_mod.recommend_gates(calls, self.catalog)
            or gate_mod.grounding_gate(row)
            or gate_mod.ending_gate(row.messages, calls)
        )
        if failure is None:
            meta.token_count = tokens = self.counter.count(row.messages, row.tools)
            failure = gate_mod.length_gate(tokens, self.config.max_length)
        if failure is not None:
            reject = RejectedRow(
                reason=failure.reason,
                detail=failure.detail,
                source=source,
                problem_id=meta.problem_id,
                row=orjson.Fragment(row_json(row)),
            )
            return _rejected(reject, meta.bucket, unjudged=meta.judge_quality is None)
        data = row_json(row)
        if meta.axis == "B":
            return AxisB(meta, data)
        return Survivor(meta, data, trl_messages(row.messages))


def _rejected(reject: RejectedRow, bucket: str | None = None, unjudged: bool = False) -> Rejected:
    return Rejected(reason=reject.reason, bucket=bucket, unjudged=unjudged, line=reject.to_json())


# -- one chunk, spooled to its files ----------------------------------------------------------------------
class SpoolFile(NamedTuple):
    path: Path
    rows: int


class ChunkResult(NamedTuple):
    """What a worker sends back for one chunk: small, whatever the rows' size."""

    records: int
    tally: Tally
    candidates: list[CandidateRow]
    aside: list[CandidateRow]
    """The axis-B rows, each at its place in the `axis_b` file."""
    rejects: SpoolFile
    axis_b: SpoolFile


def _candidate(
    meta: RowMetadata, seq: int, place: tuple[int, int, int, int, int], ranked: bytes | None
) -> CandidateRow:
    """`meta`'s rank-table row stored at `place` (chunk, offset, length, TRL length, stored length).
    Its rank key and digest are made only for a row ranking will read (`ranked`: its canonical JSON);
    axis-B rows are never ranked, so hashing their ~66 KB would be wasted."""
    chunk, offset, length, trl_length, stored = place
    return CandidateRow(
        seq=seq,
        problem_id=meta.problem_id,
        bucket=meta.bucket,
        query=meta.query,
        hint=meta.leak_cluster_id,
        key=orjson.dumps(rank_key(meta.signals, meta.judge_quality)).decode() if ranked is not None else "",
        shape=meta.signals.shape if ranked is not None and meta.signals else "",
        digest=hashlib.sha256(ranked).hexdigest()[:16] if ranked is not None else "",
        chunk=chunk,
        offset=offset,
        length=length,
        trl_length=trl_length,
        stored=stored,
    )


def spool(work: RowWork, index: int, chunk: list[tuple[str, bytes]], scratch: Path) -> ChunkResult:
    """Stage 1 over one chunk, its bulky output written to the chunk's own files in `scratch`: reject
    lines, axis-B lines and the survivors' spill (addressed by offset, not by line). A row's `seq` is
    its place in the input: chunk `index` numbers its records from `index * CHUNK`."""
    if len(chunk) > CHUNK:
        raise ValueError(
            f"chunk {index} holds {len(chunk)} records; more than {CHUNK} would reuse seq numbers"
        )
    tally = Tally()
    rejects: list[bytes] = []
    axis_b: list[bytes] = []
    candidates: list[CandidateRow] = []
    aside: list[CandidateRow] = []
    offset = axis_b_offset = 0
    with spill.chunk_path(scratch, index, "cand").open("wb") as stored:
        for position, outcome in enumerate(work.run(chunk)):
            if isinstance(outcome, Rejected):
                rejects.append(outcome.line)
                tally.reject(outcome.reason, outcome.bucket, outcome.unjudged)
            elif isinstance(outcome, AxisB):
                meta, line = outcome
                axis_b.append(line)
                seq = index * CHUNK + position
                aside.append(_candidate(meta, seq, (index, axis_b_offset, len(line), 0, len(line)), None))
                axis_b_offset += len(line) + 1
            else:
                meta, data, trl = outcome
                packed = spill.pack(data + trl)
                stored.write(packed)
                seq = index * CHUNK + position
                place = (index, offset, len(data), len(trl), len(packed))
                candidates.append(_candidate(meta, seq, place, data))
                offset += len(packed)
    return ChunkResult(
        records=len(chunk),
        tally=tally,
        candidates=candidates,
        aside=aside,
        rejects=_write_lines(spill.chunk_path(scratch, index, "rejects"), rejects),
        axis_b=_write_lines(spill.chunk_path(scratch, index, "axis_b"), axis_b),
    )


def _write_lines(path: Path, lines: list[bytes]) -> SpoolFile:
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line)
            handle.write(b"\n")
    return SpoolFile(path, len(lines))


_WORKER: tuple[RowWork, Path] | None = None


def _init_worker(config: CorpusConfig, scratch: Path) -> None:
    global _WORKER
    _WORKER = (RowWork(config), scratch)


def _work(task: tuple[int, Source]) -> ChunkResult:
    assert _WORKER is not None
    index, chunk = task
    if isinstance(chunk, tuple):
        chunk = read_line_range(*chunk)
    return spool(_WORKER[0], index, chunk, _WORKER[1])


def _warm_imports(report: bool) -> None:
    """Imports the later, serial stages need (LSH clustering, the funnel plot: ~1 s together), done
    while the main process waits on the workers instead of after them."""
    try:
        import datasketch  # noqa: F401

        if report:
            import matplotlib.figure  # noqa: F401
    except ImportError:  # the stage that needs it reports the missing package
        pass


def chunks(inputs: list[Path], ranges: bool = False) -> Iterator[Source]:
    """Chunks of at most `CHUNK` records, in input order. With `ranges`, a `.jsonl` file is cut into
    line ranges (path, start, end, first line number) that the worker reads itself: the main process
    then moves no record bytes to the workers, which at 66 KB a row was a large part of its time."""
    chunk: list[tuple[str, bytes]] = []
    for path in resolve_inputs(inputs):
        if ranges and path.suffix == ".jsonl":
            if chunk:
                yield chunk
                chunk = []
            for start, end, number in line_ranges(path, CHUNK):
                yield (path, start, end, number)
            continue
        for item in iter_records(path):
            chunk.append(item)
            if len(chunk) >= CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


# -- the stage --------------------------------------------------------------------------------------------
class GateResult(NamedTuple):
    inputs: int
    candidates: int
    """Axis-A rows that passed every gate, now in the rank table."""
    axis_b: int
    """Axis-B rows that passed every gate, now in the rank table's `axis_b` (export decides their fate)."""
    tally: Tally


def read_and_gate(
    config: CorpusConfig,
    scratch: Path,
    table: RankTable,
    rejects: HashingWriter,
    progress: Callable[[int], None] | None = None,
) -> GateResult:
    """Every input record through `RowWork`, in `config.workers` processes when more than one; rejects
    appended to their output in input order, survivors and axis-B rows to `table` (their chunk files
    stay in `scratch` for export; an empty axis-B file is removed at once)."""
    tally = Tally()
    inputs = candidates = axis_b = 0

    def consume(result: ChunkResult) -> None:
        nonlocal inputs, candidates, axis_b
        inputs += result.records
        candidates += len(result.candidates)
        axis_b += len(result.aside)
        tally.merge(result.tally)
        for row in result.candidates:
            table.candidates.add(row)
        for row in result.aside:
            table.axis_b.add(row)
        rejects.append_file(result.rejects.path, result.rejects.rows)
        result.rejects.path.unlink()
        if not result.axis_b.rows:
            result.axis_b.path.unlink()
        if progress is not None:
            progress(result.records)

    spill.codec()  # loaded once here, inherited by the workers
    tasks = enumerate(chunks(config.inputs, ranges=config.workers > 1))
    if config.workers > 1:
        context = multiprocessing.get_context("fork")
        with context.Pool(config.workers, initializer=_init_worker, initargs=(config, scratch)) as pool:
            threading.Thread(target=_warm_imports, args=(config.report,), daemon=True).start()
            # Pool.imap would read the whole input ahead into its task queue; a bounded window of
            # chunks in flight keeps memory flat however large the input is.
            window: deque[Any] = deque()
            for task in tasks:
                window.append(pool.apply_async(_work, (task,)))
                if len(window) >= 3 * config.workers:
                    consume(window.popleft().get())
            while window:
                consume(window.popleft().get())
    else:
        work = RowWork(config)
        for index, chunk in tasks:
            consume(spool(work, index, chunk, scratch))  # type: ignore[arg-type]
    return GateResult(inputs, candidates, axis_b, tally)
