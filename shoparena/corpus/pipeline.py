"""`build_corpus`: sources → normalise → gates → axis → rank → split → export, streaming.

Stage 1 (normalise, gates, signals, axis) is row-local and runs in worker processes over chunks of
input lines. A worker writes a chunk's rejects, axis-B rows and axis-A survivors to the chunk's own
files and sends back only small tuples; the main process appends the reject and axis-B files to the
outputs in input order (hashed from a memory map, copied by the kernel), leaves the survivors where
they are, and puts their small ranking tuples in a SQLite table keyed by problem id. Stage 2 reads that
table sorted by problem (SQLite sorts on disk), keeps `per_problem` rows per problem and rejects the
rest as `dedup_ranked_out`. Stage 3 clusters the problems (memory O(problems)) and plans the split;
stage 4 streams the kept rows, in input order, into train / eval (JSONL and Parquet) and never-touch
rows into the rejects. Nothing is lost: inputs = kept + rejected + axis-B + deduplicated is checked on
the files actually written, every run, and a mismatch raises.

Ranking happens after the axis split, so an axis-B row never takes one of a problem's slots from an
axis-A row.
"""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import sqlite3
import tempfile
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

try:
    import simdjson
except ImportError:  # pragma: no cover - a dependency; without it every record is parsed by orjson
    simdjson = None
from pydantic import BaseModel, ConfigDict, Field

from shoparena.corpus import gates as gate_mod
from shoparena.corpus import spill
from shoparena.corpus.axis import classify_axis
from shoparena.corpus.export import HashingWriter, ParquetSink, trl_messages
from shoparena.corpus.models import (
    DEDUP_RANKED_OUT,
    JUDGE_BELOW_THRESHOLD,
    NEVER_TOUCH,
    UNREADABLE,
    CorpusRow,
    RejectedRow,
    join_row,
    row_json,
    row_parts,
)
from shoparena.corpus.normalise import NormaliseError, from_trajectory, is_trajectory, normalise_record
from shoparena.corpus.rank import Candidate, choose, compute_signals, rank_key
from shoparena.corpus.sources import iter_records, line_ranges, read_line_range, resolve_inputs
from shoparena.corpus.split import NeverTouch, ProblemEntry, check_disjoint, plan_split
from shoparena.corpus.tokens import TokenCounter
from shoparena.corpus.trace import trace_calls

CHUNK = 256
MANIFEST_SCHEMA = "shoparena.corpus-manifest/1"
OUTPUT_FILES = ("train.jsonl", "eval.jsonl", "axis_b.jsonl", "rejects.jsonl")


class CorpusConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[Path]
    out: Path
    catalog: Path | None = None
    min_quality: float = gate_mod.DEFAULT_MIN_QUALITY
    max_length: int = gate_mod.DEFAULT_MAX_LENGTH
    tokenizer: str | None = None
    per_problem: int = Field(default=2, ge=1)
    eval_size: int | None = None
    never_touch: list[Path] = Field(default_factory=list)
    problems: list[Path] = Field(default_factory=list)
    """Problem files whose reward-spec fingerprints name the leak clusters of their problems."""
    seed: int = 0
    workers: int = 1
    parquet: bool = True
    report: bool = True


class ConservationError(RuntimeError):
    pass


class CorpusResult(BaseModel):
    counts: dict[str, int]
    reasons: dict[str, int]
    manifest: dict[str, Any]
    out: Path
    seconds: float
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    """Wall time per stage (read+gates, rank, split, export, report): where a build spends its time."""

    def timing(self) -> str:
        """`12.3 s (4,567 rows/s; read+gates 9.1 s, rank 0.4 s, …)` for people to read."""
        stages = ", ".join(f"{name.replace('_', '+')} {s:.1f} s" for name, s in self.stage_seconds.items())
        return (
            f"{self.seconds:.1f} s ({self.counts['inputs'] / max(self.seconds, 1e-9):,.0f} rows/s; {stages})"
        )


# -- stage 1: row-local work (runs in workers) -----------------------------------------------------------
class _Stage1:
    def __init__(self, config: CorpusConfig):
        self.config = config
        self.counter = TokenCounter(config.tokenizer)
        self._lazy = simdjson.Parser() if simdjson is not None else None
        self.catalog = None
        if config.catalog is not None:
            from shoparena.index.catalog_dir import open_catalog

            self.catalog = open_catalog(config.catalog)

    def run(self, chunk: list[tuple[str, bytes]]) -> list[tuple]:
        """One outcome tuple per record, in order. Rows are finished one at a time (parse to
        serialised output) so each row's ~200 KB of Python objects is freed before the next is built,
        and the cyclic GC is paused meanwhile: rows are trees without cycles, and at 20+ messages a row
        its generation-0 passes cost ~80 µs a row (~15% of the stage)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return [self._one(source, raw) for source, raw in chunk]
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

    def _one(self, source: str, raw: bytes) -> tuple:
        try:
            row = self._parse(raw, source)
        except orjson.JSONDecodeError as exc:
            text = raw.decode("utf-8", "replace")[:2000]
            return _reject(UNREADABLE, f"not JSON: {exc}", source, None, None, text)
        except NormaliseError as exc:
            return _reject(exc.reason, exc.detail, source, None, None, orjson.loads(raw))
        calls = trace_calls(row.messages)
        meta = row.metadata
        meta.signals = compute_signals(row, calls)
        meta.axis, meta.axis_method = classify_axis(row, calls)
        failure = (
            gate_mod.quality_gate(row, self.config.min_quality)
            or gate_mod.pairing_gate(row.messages)
            or gate_mod.recommend_gates(calls, self.catalog)
            or gate_mod.ending_gate(row.messages, calls)
        )
        if failure is None:
            meta.token_count = tokens = self.counter.count(row.messages, row.tools)
            failure = gate_mod.length_gate(tokens, self.config.max_length)
        if failure is not None:
            return _reject(failure.reason, failure.detail, source, meta.problem_id, row, None)
        data = row_json(row)
        if meta.axis == "B":
            return ("axis_b", meta.bucket, data)
        return (
            "cand",
            meta.problem_id,
            meta.bucket,
            meta.query,
            meta.leak_cluster_id,
            orjson.dumps(rank_key(meta.signals, meta.judge_quality)),
            meta.signals.shape,
            hashlib.sha256(data).hexdigest()[:16],
            data,
            trl_messages(row.messages),  # the TRL form, made here in parallel for stage 4 to splice in
        )


def _reject(
    reason: str, detail: str, source: str, problem_id: str | None, row: CorpusRow | None, raw: Any
) -> tuple:
    bucket = row.metadata.bucket if row is not None else None
    line = RejectedRow(
        reason=reason,
        detail=detail,
        source=source,
        problem_id=problem_id,
        row=orjson.Fragment(row_json(row)) if row is not None else None,
        raw=raw,
    ).to_json()
    unjudged = row is not None and row.metadata.judge_quality is None
    return ("reject", reason, bucket, line, unjudged)


def _spool(
    stage: _Stage1, index: int, chunk: list[tuple[str, bytes]], scratch: Path
) -> tuple[list[tuple], dict]:
    """Stage 1 over one chunk, its bulky output written to the chunk's own files in `scratch`
    (reject lines, axis-B lines, candidate rows); what comes back to the main process is small: one
    tuple per record for the tally and the ranking table, and the files' names and line counts."""
    lines: dict[str, list[bytes]] = {"rejects": [], "axis_b": [], "cand": []}
    small: list[tuple] = []
    offset = 0
    for outcome in stage.run(chunk):
        kind = outcome[0]
        if kind == "reject":
            lines["rejects"].append(outcome[3])
            small.append(("reject", outcome[1], outcome[2], outcome[4]))
        elif kind == "axis_b":
            lines["axis_b"].append(outcome[2])
            small.append(("axis_b", outcome[1]))
        else:
            data, trl = outcome[8], outcome[9]
            packed = spill.pack(data + trl)
            lines["cand"].append(packed)
            small.append((*outcome[:8], offset, len(data), len(trl), len(packed)))
            offset += len(packed)
    files = {}
    for name, items in lines.items():
        path = spill.chunk_path(scratch, index, name)
        end = b"" if name == "cand" else b"\n"  # candidates are addressed by offset, not by line
        with path.open("wb") as handle:
            for item in items:
                handle.write(item)
                if end:
                    handle.write(end)
        files[name] = (path, len(items))
    files["index"] = index
    return small, files


_WORKER: tuple[_Stage1, Path] | None = None


def _init_worker(config: CorpusConfig, scratch: Path) -> None:
    global _WORKER
    _WORKER = (_Stage1(config), scratch)


def _work(task: tuple[int, list[tuple[str, bytes]] | tuple[Path, int, int, int]]) -> tuple[list[tuple], dict]:
    assert _WORKER is not None
    index, chunk = task
    if isinstance(chunk, tuple):
        chunk = read_line_range(*chunk)
    return _spool(_WORKER[0], index, chunk, _WORKER[1])


def _warm_imports(report: bool) -> None:
    """Imports the later, serial stages need (LSH clustering, the funnel plot: ~1 s together), done
    while the main process waits on the workers instead of after them."""
    try:
        import datasketch  # noqa: F401

        if report:
            import matplotlib.figure  # noqa: F401
    except ImportError:  # the stage that needs it reports the missing package
        pass


def _chunks(config: CorpusConfig, ranges: bool = False) -> Iterator[list[tuple[str, bytes]] | tuple]:
    """Chunks of `CHUNK` records, in input order. With `ranges`, a `.jsonl` file is cut into line
    ranges (path, start, end, first line number) that the worker reads itself: the main process then
    moves no record bytes to the workers, which at 66 KB a row was a large part of its time."""
    chunk: list[tuple[str, bytes]] = []
    for path in resolve_inputs(config.inputs):
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


# -- the build --------------------------------------------------------------------------------------------
class _Tally:
    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.buckets: dict[str, Counter[str]] = defaultdict(Counter)
        self.counts: Counter[str] = Counter()

    def add(self, what: str, bucket: str | None) -> None:
        self.buckets[bucket or "unknown"][what] += 1


def _load_problems(paths: list[Path]):
    from shoparena.problems.io import read_problems

    problems = []
    for path in paths:
        result = read_problems(path)
        if result.rejects and not result.problems:
            raise ValueError(f"{path}: no problem could be read ({len(result.rejects)} rejects)")
        problems.extend(result.problems)
    return problems


def build_corpus(config: CorpusConfig, progress: Callable[[int], None] | None = None) -> CorpusResult:
    started = time.perf_counter()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    tally = _Tally()
    writers = {name: HashingWriter(out / name) for name in OUTPUT_FILES}
    rejects, axis_b = writers["rejects.jsonl"], writers["axis_b.jsonl"]
    never_problems = _load_problems(config.never_touch)
    known = _load_problems(config.problems) + never_problems
    from shoparena.problems.canonical import reward_fingerprint

    fingerprints = {p.problem_id: p.leak_cluster_id or reward_fingerprint(p) for p in known}
    never = NeverTouch.from_problems(never_problems)
    counter_name = TokenCounter(config.tokenizer).name  # fail early on a bad tokenizer, before workers start

    with tempfile.TemporaryDirectory(prefix="corpus-", dir=out) as scratch:
        scratch_dir = Path(scratch)
        db = sqlite3.connect(str(scratch_dir / "rank.sqlite"))
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(
            "CREATE TABLE cand (seq INTEGER PRIMARY KEY, problem_id TEXT, bucket TEXT, query TEXT, hint TEXT, "
            "key TEXT, shape TEXT, digest TEXT, chunk INTEGER, offset INTEGER, length INTEGER, trl_length INTEGER, "
            "stored INTEGER)"
        )
        seq = 0
        inputs = 0
        batch: list[tuple] = []

        def consume(result: tuple[list[tuple], dict]) -> None:
            nonlocal seq, inputs
            outcomes, files = result
            chunk = files["index"]
            for outcome in outcomes:
                inputs += 1
                kind = outcome[0]
                if kind == "reject":
                    _, reason, bucket, unjudged = outcome
                    tally.reasons[reason] += 1
                    if unjudged and reason == JUDGE_BELOW_THRESHOLD:
                        tally.counts["unjudged"] += 1
                    tally.add("rejected", bucket)
                elif kind == "axis_b":
                    tally.add("axis_b", outcome[1])
                else:
                    (
                        _,
                        problem_id,
                        bucket,
                        query,
                        hint,
                        key,
                        shape,
                        digest,
                        offset,
                        length,
                        trl_length,
                        stored,
                    ) = outcome
                    batch.append(
                        (
                            seq,
                            problem_id,
                            bucket,
                            query,
                            hint,
                            key.decode(),
                            shape,
                            digest,
                            chunk,
                            offset,
                            length,
                            trl_length,
                            stored,
                        )
                    )
                    seq += 1
            for name, writer in (("rejects", rejects), ("axis_b", axis_b)):
                path, rows = files[name]
                writer.append_file(path, rows)
                path.unlink()
            if len(batch) >= 5000:
                db.executemany("INSERT INTO cand VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
                batch.clear()
            if progress is not None:
                progress(len(outcomes))

        spill.codec()  # loaded once here, inherited by the workers
        tasks = enumerate(_chunks(config, ranges=config.workers > 1))
        if config.workers > 1:
            context = multiprocessing.get_context("fork")
            with context.Pool(
                config.workers, initializer=_init_worker, initargs=(config, scratch_dir)
            ) as pool:
                threading.Thread(target=_warm_imports, args=(config.report,), daemon=True).start()
                # Pool.imap would read the whole input ahead into its task queue; a bounded window of
                # chunks in flight keeps memory flat however large the input is.
                window: deque = deque()
                for task in tasks:
                    window.append(pool.apply_async(_work, (task,)))
                    if len(window) >= 3 * config.workers:
                        consume(window.popleft().get())
                while window:
                    consume(window.popleft().get())
        else:
            stage = _Stage1(config)
            for index, chunk in tasks:
                consume(_spool(stage, index, chunk, scratch_dir))  # type: ignore[arg-type]
        if batch:
            db.executemany("INSERT INTO cand VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
        db.commit()
        tally.counts["inputs"] = inputs
        candidates = seq

        marks = {"read_gates": time.perf_counter()}
        # -- stage 2: rank per problem ----------------------------------------------------------------
        db.execute(
            "CREATE TABLE kept (seq INTEGER PRIMARY KEY, problem_id TEXT, chunk INTEGER, offset INTEGER, "
            "length INTEGER, trl_length INTEGER, stored INTEGER)"
        )
        db.execute(
            "CREATE TABLE dropped (seq INTEGER PRIMARY KEY, problem_id TEXT, chunk INTEGER, offset INTEGER, "
            "length INTEGER, trl_length INTEGER, stored INTEGER, detail TEXT)"
        )
        problems: list[ProblemEntry] = []
        kept_batch: list[tuple] = []
        dropped_batch: list[tuple] = []
        with spill.SpillReader(scratch_dir) as read_row:

            def finish(group: list[tuple]) -> None:
                cands = [
                    Candidate(seq=g[0], key=tuple(orjson.loads(g[5])), shape=g[6], digest=g[7]) for g in group
                ]
                kept, dropped = choose(cands, config.per_problem)
                by_seq = {g[0]: g for g in group}
                for cand in kept:
                    g = by_seq[cand.seq]
                    kept_batch.append((g[0], g[1], g[8], g[9], g[10], g[11], g[12]))
                if dropped:
                    winners = ", ".join(by_seq[k.seq][7] for k in kept)
                    detail = f"problem kept its {len(kept)} best-ranked rows ({winners})"
                for cand in dropped:
                    g = by_seq[cand.seq]
                    dropped_batch.append((g[0], g[1], g[8], g[9], g[10], g[11], g[12], detail))
                    tally.reasons[DEDUP_RANKED_OUT] += 1
                    tally.add("rejected", g[2])
                first = group[0]
                buckets = Counter(g[2] for g in group)
                problems.append(
                    ProblemEntry(
                        problem_id=first[1],
                        bucket=min(buckets, key=lambda b: (-buckets[b], b or "")),
                        query=first[3],
                        cluster_hint=next((g[4] for g in group if g[4]), None),
                        rows=len(kept),
                    )
                )
                if len(kept_batch) >= 5000:
                    db.executemany("INSERT INTO kept VALUES (?,?,?,?,?,?,?)", kept_batch)
                    kept_batch.clear()
                if len(dropped_batch) >= 5000:
                    db.executemany("INSERT INTO dropped VALUES (?,?,?,?,?,?,?,?)", dropped_batch)
                    dropped_batch.clear()

            group: list[tuple] = []
            cursor = db.execute("SELECT * FROM cand ORDER BY problem_id, seq")
            for record in cursor:
                if group and record[1] != group[0][1]:
                    finish(group)
                    group = []
                group.append(record)
            if group:
                finish(group)
            if kept_batch:
                db.executemany("INSERT INTO kept VALUES (?,?,?,?,?,?,?)", kept_batch)
            if dropped_batch:
                db.executemany("INSERT INTO dropped VALUES (?,?,?,?,?,?,?,?)", dropped_batch)
            db.commit()
            # Ranked-out rows are written in input order, so their rows are read back sequentially
            # (in problem order they were random reads across the spill, slow once it leaves the cache).
            dropped_rows = db.execute("SELECT * FROM dropped ORDER BY seq")
            for _, problem_id, chunk, off, length, trl_length, stored, detail in dropped_rows:
                data = read_row(chunk, off, stored, length + trl_length)[:length]
                rejects.write_line(
                    RejectedRow(
                        reason=DEDUP_RANKED_OUT,
                        detail=detail,
                        source=orjson.loads(row_parts(data)[2])["source"],
                        problem_id=problem_id,
                        row=orjson.Fragment(data),
                    ).to_json()
                )

            marks["rank"] = time.perf_counter()
            # -- stage 3: leak clusters and the split plan ------------------------------------------------
            plan = plan_split(problems, fingerprints, never, config.eval_size, config.seed)

            marks["split"] = time.perf_counter()
            # -- stage 4: export --------------------------------------------------------------------------
            parquet = {}
            if config.parquet:
                parquet = {
                    "train": ParquetSink(out / "train.parquet"),
                    "eval": ParquetSink(out / "eval.parquet"),
                }
            pairs: dict[str, set[tuple[str, str]]] = {"train": set(), "eval": set()}
            kept_rows = db.execute("SELECT * FROM kept ORDER BY seq")
            for _, problem_id, chunk, off, length, trl_length, stored in kept_rows:
                blob = read_row(chunk, off, stored, length + trl_length)
                messages, tools, metadata = row_parts(blob[:length])
                pool_name = plan.pool[problem_id]
                cluster = plan.cluster[problem_id]
                meta = orjson.loads(metadata)
                meta["split"] = pool_name
                meta["leak_cluster_id"] = meta.get("leak_cluster_id") or cluster
                metadata = orjson.dumps(meta)
                bucket = meta.get("bucket")
                if pool_name == "never_touch":
                    rejects.write_line(
                        RejectedRow(
                            reason=NEVER_TOUCH,
                            detail=f"problem is in never-touch cluster {cluster}",
                            source=meta["source"],
                            problem_id=problem_id,
                            row=orjson.Fragment(join_row(messages, tools, metadata)),
                        ).to_json()
                    )
                    tally.reasons[NEVER_TOUCH] += 1
                    tally.add("rejected", bucket)
                    continue
                writers[f"{pool_name}.jsonl"].write_line(join_row(blob[length:], tools, metadata))
                pairs[pool_name].add((problem_id, cluster))
                tally.add(pool_name, bucket)
                if pool_name in parquet:
                    parquet[pool_name].write_json(messages, tools, metadata)
        db.close()
        check_disjoint(pairs["train"], pairs["eval"])
        files = {name: writer.close() for name, writer in writers.items()}
        for name, sink in parquet.items():
            files[f"{name}.parquet"] = sink.close()
        marks["export"] = time.perf_counter()

    counts = {
        "inputs": inputs,
        "train": files["train.jsonl"]["rows"],
        "eval": files["eval.jsonl"]["rows"],
        "axis_b": files["axis_b.jsonl"]["rows"],
        "rejected": files["rejects.jsonl"]["rows"] - tally.reasons[DEDUP_RANKED_OUT],
        "deduplicated": tally.reasons[DEDUP_RANKED_OUT],
        "axis_a_candidates": candidates,
        "problems": len(plan.pool),
        "clusters": plan.clusters,
        "eval_target": plan.eval_target,
        "unjudged_rejected": tally.counts["unjudged"],
    }
    accounted = (
        counts["train"] + counts["eval"] + counts["rejected"] + counts["axis_b"] + counts["deduplicated"]
    )
    if accounted != inputs or sum(tally.reasons.values()) != files["rejects.jsonl"]["rows"]:
        raise ConservationError(
            f"count conservation failed: inputs {inputs} != kept {counts['train'] + counts['eval']} + rejected "
            f"{counts['rejected']} + axis-B {counts['axis_b']} + deduplicated {counts['deduplicated']} = {accounted}"
        )
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "config": {
            **config.model_dump(mode="json", exclude={"out", "workers", "report"}),
            "tokenizer": counter_name,
        },
        "counts": counts,
        "reasons": dict(sorted(tally.reasons.items())),
        "by_bucket": {b: dict(c) for b, c in sorted(tally.buckets.items())},
        "eval_problems_sha256": hashlib.sha256(
            "\n".join(sorted(p for p, _ in pairs["eval"])).encode()
        ).hexdigest(),
        "files": files,
    }
    manifest["manifest_sha256"] = hashlib.sha256(
        orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()
    (out / "manifest.json").write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    result = CorpusResult(
        counts=counts,
        reasons=dict(tally.reasons),
        manifest=manifest,
        out=out,
        seconds=time.perf_counter() - started,
    )
    _time_stages(result, started, marks)
    if config.report:
        from shoparena.corpus.report import write_report

        write_report(result)  # shows the stages before it
        marks["report"] = time.perf_counter()
        _time_stages(result, started, marks)
    return result


def _time_stages(result: CorpusResult, started: float, marks: dict[str, float]) -> None:
    previous = started
    for stage, at in marks.items():
        result.stage_seconds[stage] = round(at - previous, 3)
        previous = at
    result.seconds = previous - started


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
