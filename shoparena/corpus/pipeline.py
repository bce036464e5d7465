"""`build_corpus`: sources → normalise → gates → axis → rank → split → export, streaming.

The build is a chain of stages, each returning a typed result the next one reads:

1. `rowstage.read_and_gate` (row-local, in worker processes): normalise, gates, ranking signals and
   the axis split. Rejects go straight to their output; axis-A survivors stay in the chunks' spill
   files and axis-B rows in the chunks' axis-B files, their small fields in the rank table
   (`ranktable`).
2. `rank_problems`: reads that table sorted by problem (SQLite sorts on disk), keeps `per_problem`
   rows per problem and rejects the rest as `dedup_ranked_out`; axis-B rows are not ranked, but their
   problems join the list the split clusters.
3. `split.plan_split`: clusters the problems (memory O(problems)) and plans the leak-guarded split.
4. `export_rows`: streams the kept rows, in input order, into train / eval (JSONL and Parquet), the
   axis-B rows into axis_b.jsonl, and the rows of never-touch problems (either axis) into the rejects.
5. `summarise`: counts and the manifest. Nothing is lost: inputs = kept + rejected + axis-B +
   deduplicated is checked on the files actually written, every run, and a mismatch raises.
6. `report.write_report`, then the manifest, which names every file written.

Ranking happens after the axis split, so an axis-B row never takes one of a problem's slots from an
axis-A row. The never-touch guard runs after both, so it covers every pile.

The build writes into a hidden sibling of the output directory and moves it into place only when
complete (`staged`): a failed build leaves nothing, and a previous corpus is replaced (with `force`)
only by a finished one, never mixed with it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

from shoparena.corpus import spill
from shoparena.corpus.card import write_dataset_card
from shoparena.corpus.config import CorpusConfig
from shoparena.corpus.export import HashingWriter, ParquetSink
from shoparena.corpus.models import (
    DEDUP_RANKED_OUT,
    NEVER_TOUCH,
    NORMALISE_REASONS,
    CorpusResult,
    RejectedRow,
    join_row,
    row_parts,
)
from shoparena.corpus.rank import Candidate, choose
from shoparena.corpus.ranktable import RankedRow, RankTable
from shoparena.corpus.report import write_report
from shoparena.corpus.rowstage import GateResult, read_and_gate
from shoparena.corpus.sources import SourceError
from shoparena.corpus.split import NeverTouch, ProblemEntry, SplitPlan, check_disjoint, plan_split
from shoparena.corpus.tally import Tally
from shoparena.corpus.tokens import TokenCounter
from shoparena.index.staging import staged_build

if TYPE_CHECKING:
    from shoparena.problems.models import Problem

__all__ = [
    "ConservationError",
    "CorpusConfig",
    "CorpusDirError",
    "CorpusResult",
    "build_corpus",
    "default_workers",
]

MANIFEST_SCHEMA = "shoparena.corpus-manifest/2"
"""/2: each row's metadata records the system prompt it is served with (`RowMetadata.system_prompt`)."""
MANIFEST_FILE = "manifest.json"
OUTPUT_FILES = ("train.jsonl", "eval.jsonl", "axis_b.jsonl", "rejects.jsonl")


class ConservationError(RuntimeError):
    pass


class CorpusDirError(ValueError):
    """An output path a finished build could not replace; the message says why."""


# -- where the build writes ---------------------------------------------------------------------------------
def check_out(out: Path, force: bool) -> None:
    """Refuse, before any work, an output a finished build could not replace: a file, or a non-empty
    directory without `force`, or (even with it) one that holds no corpus — a build never deletes what
    it did not write (like `catalog build`)."""
    if out.exists() and not out.is_dir():
        raise CorpusDirError(f"{out} exists and is not a directory; give a directory path for the corpus")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise CorpusDirError(f"{out} is not empty; pass force (--force) to replace the corpus in it")
        if not (out / MANIFEST_FILE).is_file():
            raise CorpusDirError(
                f"{out} is not empty and holds no corpus (no {MANIFEST_FILE}); refusing to replace it"
            )


def staged(out: Path, force: bool):
    """The build directory of a corpus at `out` (`index.staging.staged_build`)."""
    return staged_build(out, lambda target: check_out(target, force), CorpusDirError)


# -- what the build writes ----------------------------------------------------------------------------------
class Outputs:
    """The output files: JSONL open for the whole build, Parquet for train and eval (if asked) opened
    by export, after the workers have forked (Arrow's threads and a fork do not mix)."""

    def __init__(self, out: Path, parquet: bool):
        self.out = out
        self.jsonl = {name: HashingWriter(out / name) for name in OUTPUT_FILES}
        self.rejects = self.jsonl["rejects.jsonl"]
        self.axis_b = self.jsonl["axis_b.jsonl"]
        self._want_parquet = parquet
        self.parquet: dict[str, ParquetSink] = {}

    def open_parquet(self) -> dict[str, ParquetSink]:
        if self._want_parquet and not self.parquet:
            self.parquet = {pool: ParquetSink(self.out / f"{pool}.parquet") for pool in ("train", "eval")}
        return self.parquet

    def close(self) -> dict[str, dict]:
        """Each file's rows, sha256 and size, JSONL first (the report lists them in this order)."""
        files = {name: writer.close() for name, writer in self.jsonl.items()}
        for pool, sink in self.parquet.items():
            files[f"{pool}.parquet"] = sink.close()
        return files


def _spilled(read: Callable[[int, int, int, int], bytes], row: RankedRow) -> tuple[bytes, bytes]:
    """(canonical row JSON, TRL messages JSON) of a survivor, read back from the spill."""
    blob = read(row.chunk, row.offset, row.stored, row.length + row.trl_length)
    return blob[: row.length], blob[row.length :]


# -- the leak guard's inputs --------------------------------------------------------------------------------
class LeakGuard(NamedTuple):
    fingerprints: dict[str, str]
    """problem id → leak cluster, for the problems of the problems and never-touch files."""
    never: NeverTouch


def read_problem_files(paths: list[Path]) -> list[Problem]:
    """The problems of every file; a file's unreadable records are skipped (the split only needs the
    problems it can read), but a file yielding none is an error: it was named for a reason."""
    from shoparena.problems.io import read_problems

    problems = []
    for path in paths:
        result = read_problems(path)
        if result.rejects and not result.problems:
            raise ValueError(f"{path}: no problem could be read ({len(result.rejects)} rejects)")
        problems.extend(result.problems)
    return problems


def leak_guard(config: CorpusConfig) -> LeakGuard:
    from shoparena.problems.canonical import reward_fingerprint

    never_problems = read_problem_files(config.never_touch)
    known = read_problem_files(config.problems) + never_problems
    fingerprints = {p.problem_id: p.leak_cluster_id or reward_fingerprint(p) for p in known}
    return LeakGuard(fingerprints, NeverTouch.from_problems(never_problems))


# -- stage 2: rank per problem ------------------------------------------------------------------------------
class RankResult(NamedTuple):
    problems: list[ProblemEntry]
    """One entry per problem, sorted by id, with the rows ranking kept."""
    tally: Tally
    """The `dedup_ranked_out` rejects."""


def rank_problems(
    table: RankTable, per_problem: int, read: Callable[[int, int, int, int], bytes], rejects: HashingWriter
) -> RankResult:
    """Keeps each problem's best `per_problem` candidates (`rank.choose`) in `table.kept`; writes the
    rest to the rejects. The problems of axis-B rows join the list with no kept rows of their own, so
    the split's leak guard (never-touch suites) decides about them too."""
    tally = Tally()
    problems: list[ProblemEntry] = []
    for group in table.by_problem():
        by_seq = {row.seq: row for row in group}
        kept, dropped = choose(
            [
                Candidate(seq=r.seq, key=tuple(orjson.loads(r.key)), shape=r.shape, digest=r.digest)
                for r in group
            ],
            per_problem,
        )
        for cand in kept:
            table.kept.add(by_seq[cand.seq].ranked())
        if dropped:
            winners = ", ".join(by_seq[k.seq].digest for k in kept)
            detail = f"problem kept its {len(kept)} best-ranked rows ({winners})"
        for cand in dropped:
            row = by_seq[cand.seq]
            table.dropped.add(row.ranked(detail))
            tally.reject(DEDUP_RANKED_OUT, row.bucket)
        buckets = Counter(row.bucket for row in group)
        problems.append(
            ProblemEntry(
                problem_id=group[0].problem_id,
                bucket=min(buckets, key=lambda b: (-buckets[b], b or "")),
                query=group[0].query,
                cluster_hint=next((row.hint for row in group if row.hint), None),
                rows=len(kept),
            )
        )
    # Ranked-out rows are written in input order, so their rows are read back sequentially (in
    # problem order they were random reads across the spill, slow once it leaves the cache).
    for row in table.dropped.rows("seq"):
        data, _ = _spilled(read, row)
        reject = RejectedRow(
            reason=DEDUP_RANKED_OUT,
            detail=row.detail or "",
            source=orjson.loads(row_parts(data)[2])["source"],
            problem_id=row.problem_id,
            row=orjson.Fragment(data),
        )
        rejects.write_line(reject.to_json())
    return RankResult(_with_axis_b_problems(table, problems), tally)


def _with_axis_b_problems(table: RankTable, problems: list[ProblemEntry]) -> list[ProblemEntry]:
    """`problems` and one entry (0 rows) per problem that only axis-B rows have; a problem's leak
    cluster hint comes from its axis-B rows where its axis-A rows carry none."""
    known = {entry.problem_id: entry for entry in problems}
    for group in table.by_problem(table.axis_b):
        hint = next((row.hint for row in group if row.hint), None)
        entry = known.get(group[0].problem_id)
        if entry is not None:
            entry.cluster_hint = entry.cluster_hint or hint
            continue
        buckets = Counter(row.bucket for row in group)
        known[group[0].problem_id] = ProblemEntry(
            problem_id=group[0].problem_id,
            bucket=min(buckets, key=lambda b: (-buckets[b], b or "")),
            query=group[0].query,
            cluster_hint=hint,
            rows=0,
        )
    return [known[problem_id] for problem_id in sorted(known)]


# -- stage 4: export --------------------------------------------------------------------------------------
class ExportResult(NamedTuple):
    train: set[tuple[str, str]]
    """(problem id, leak cluster) of every train row written."""
    eval: set[tuple[str, str]]
    tally: Tally
    """Train, eval and axis-B rows by bucket, and the `never_touch` rejects."""


def _placed(data: bytes, plan: SplitPlan, problem_id: str) -> tuple[bytes, bytes, bytes, dict]:
    """A canonical row's (messages, tools, metadata) JSON with its split and leak cluster filled in,
    and that metadata."""
    messages, tools, metadata = row_parts(data)
    meta = orjson.loads(metadata)
    meta["split"] = plan.pool[problem_id]
    meta["leak_cluster_id"] = meta.get("leak_cluster_id") or plan.cluster[problem_id]
    return messages, tools, orjson.dumps(meta), meta


def _never_touch_reject(
    messages: bytes, tools: bytes, metadata: bytes, meta: dict, cluster: str, outputs: Outputs, tally: Tally
) -> None:
    reject = RejectedRow(
        reason=NEVER_TOUCH,
        detail=f"problem is in never-touch cluster {cluster}",
        source=meta["source"],
        problem_id=meta["problem_id"],
        row=orjson.Fragment(join_row(messages, tools, metadata)),
    )
    outputs.rejects.write_line(reject.to_json())
    tally.reject(NEVER_TOUCH, meta.get("bucket"))


def export_rows(
    table: RankTable,
    plan: SplitPlan,
    read: Callable[[int, int, int, int], bytes],
    outputs: Outputs,
    scratch: Path,
) -> ExportResult:
    """The kept rows in input order, each with its split and leak cluster filled in, to its pool's
    files (the TRL form to JSONL, the canonical one to Parquet); then the axis-B rows to axis_b.jsonl
    (`export_axis_b`); the rows of never-touch problems of either axis to the rejects."""
    tally = Tally()
    pairs: dict[str, set[tuple[str, str]]] = {"train": set(), "eval": set()}
    parquet = outputs.open_parquet()
    for row in table.kept.rows("seq"):
        data, trl = _spilled(read, row)
        messages, tools, metadata, meta = _placed(data, plan, row.problem_id)
        pool = plan.pool[row.problem_id]
        cluster = plan.cluster[row.problem_id]
        if pool == "never_touch":
            _never_touch_reject(messages, tools, metadata, meta, cluster, outputs, tally)
            continue
        outputs.jsonl[f"{pool}.jsonl"].write_line(join_row(trl, tools, metadata))
        pairs[pool].add((row.problem_id, cluster))
        tally.add(pool, meta.get("bucket"))
        if pool in parquet:
            parquet[pool].write_json(messages, tools, metadata)
    export_axis_b(table, plan, outputs, scratch, tally)
    return ExportResult(pairs["train"], pairs["eval"], tally)


def export_axis_b(table: RankTable, plan: SplitPlan, outputs: Outputs, scratch: Path, tally: Tally) -> None:
    """The axis-B rows in input order, a chunk's file at a time: spliced in whole (kernel copy) when
    none of its rows is never-touch, else line by line with the never-touch rows (split and cluster
    filled in) sent to the rejects. Kept axis-B rows are written as stage 1 made them: they are in no
    split, so they carry none."""
    for chunk, group in groupby(table.axis_b.rows("seq"), key=lambda row: row.chunk):
        rows = list(group)  # one chunk's: at most `rowstage.CHUNK`
        path = spill.chunk_path(scratch, chunk, "axis_b")
        never = [plan.pool[row.problem_id] == "never_touch" for row in rows]
        if not any(never):
            outputs.axis_b.append_file(path, len(rows))
        else:
            lines = path.read_bytes()
            for row, is_never in zip(rows, never, strict=True):
                line = lines[row.offset : row.offset + row.length]
                if is_never:
                    messages, tools, metadata, meta = _placed(line, plan, row.problem_id)
                    _never_touch_reject(
                        messages, tools, metadata, meta, plan.cluster[row.problem_id], outputs, tally
                    )
                else:
                    outputs.axis_b.write_line(line)
        for row, is_never in zip(rows, never, strict=True):
            if not is_never:
                tally.add("axis_b", row.bucket)
        path.unlink()


# -- stage 5: counts and manifest ---------------------------------------------------------------------------
def summarise(
    config: CorpusConfig,
    tokenizer: str,
    gated: GateResult,
    plan: SplitPlan,
    exported: ExportResult,
    tally: Tally,
    files: dict[str, dict],
    out: Path,
) -> CorpusResult:
    """Counts from the files as written, checked for conservation (raises `ConservationError`), and
    the manifest (`write_manifest` writes it, once the report is there to be listed); the result's
    timings are the caller's to fill in."""
    deduplicated = tally.reasons[DEDUP_RANKED_OUT]
    counts = {
        "inputs": gated.inputs,
        "train": files["train.jsonl"]["rows"],
        "eval": files["eval.jsonl"]["rows"],
        "axis_b": files["axis_b.jsonl"]["rows"],
        "rejected": files["rejects.jsonl"]["rows"] - deduplicated,
        "deduplicated": deduplicated,
        "axis_a_candidates": gated.candidates,
        "axis_b_candidates": gated.axis_b,
        "problems": len(plan.pool),
        "clusters": plan.clusters,
        "eval_target": plan.eval_target,
        "unjudged_rejected": tally.unjudged,
    }
    accounted = (
        counts["train"] + counts["eval"] + counts["rejected"] + counts["axis_b"] + counts["deduplicated"]
    )
    if accounted != gated.inputs or sum(tally.reasons.values()) != files["rejects.jsonl"]["rows"]:
        raise ConservationError(
            f"count conservation failed: inputs {gated.inputs} != kept {counts['train'] + counts['eval']} + "
            f"rejected {counts['rejected']} + axis-B {counts['axis_b']} + deduplicated "
            f"{counts['deduplicated']} = {accounted}"
        )
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "config": {
            **config.model_dump(mode="json", exclude={"out", "workers", "report", "force"}),
            "tokenizer": tokenizer,
        },
        "counts": counts,
        "reasons": dict(sorted(tally.reasons.items())),
        "by_bucket": {b: dict(c) for b, c in sorted(tally.buckets.items())},
        "eval_problems_sha256": hashlib.sha256(
            "\n".join(sorted(p for p, _ in exported.eval)).encode()
        ).hexdigest(),
        "notes": plan.notes,
        "warnings": plan.warnings,
        "files": files,
    }
    return CorpusResult(
        counts=counts,
        reasons=dict(tally.reasons),
        manifest=manifest,
        out=out,
        seconds=0.0,
        notes=plan.notes,
        warnings=plan.warnings,
    )


def write_manifest(result: CorpusResult) -> None:
    """`manifest.json` in `result.out`, naming every other file there: the data files (in `files`, with
    rows, sha256 and bytes) and the report's (in `report_files`, by name only: they hold the build's
    timings, so a hash of them would differ between two identical builds). Then its own hash."""
    manifest = result.manifest
    manifest["report_files"] = sorted(
        p.name for p in result.out.iterdir() if p.name not in manifest["files"] and p.name != MANIFEST_FILE
    )
    manifest.pop("manifest_sha256", None)
    manifest["manifest_sha256"] = hashlib.sha256(
        orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()
    (result.out / MANIFEST_FILE).write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )


# -- the build --------------------------------------------------------------------------------------------
def check_readable(config: CorpusConfig, gated: GateResult) -> None:
    """Stop (`SourceError`, so the staged build is removed and nothing is written) when the inputs held
    nothing to build from: no record at all, or only records no normaliser could read. Rows that were
    read and then failed a gate are a corpus decision, reported, not an input error."""
    if gated.candidates or gated.axis_b:
        return
    named = ", ".join(str(path) for path in config.inputs)
    if not gated.inputs:
        raise SourceError(f"--input {named}: no records in the input; nothing was written")
    unread = {
        reason: gated.tally.reasons[reason] for reason in NORMALISE_REASONS if gated.tally.reasons[reason]
    }
    if sum(unread.values()) < gated.inputs:
        return
    reasons = ", ".join(f"{n} {reason}" for reason, n in unread.items())
    raise SourceError(
        f"--input {named}: none of its {gated.inputs} record(s) could be read ({reasons}); corpus build takes "
        "trajectories (an eval's run directory or trajectories.jsonl, a `store export`), arena step logs, "
        "upstream dialogues or chat messages; nothing was written"
    )


class _Clock:
    """When each stage ended, for `CorpusResult.stage_seconds`."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.marks: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        self.marks[stage] = time.perf_counter()

    def stamp(self, result: CorpusResult) -> None:
        previous = self.started
        for stage, at in self.marks.items():
            result.stage_seconds[stage] = round(at - previous, 3)
            previous = at
        result.seconds = previous - self.started


def build_corpus(config: CorpusConfig, progress: Callable[[int], None] | None = None) -> CorpusResult:
    """Build the corpus in `config.out` (see the module). Raises `CorpusDirError` for an output it
    must not replace (a non-empty one without `config.force`), before reading anything."""
    clock = _Clock()
    check_out(config.out, config.force)
    guard = leak_guard(config)
    tokenizer = TokenCounter(config.tokenizer).name  # fail early on a bad tokenizer, before workers start
    with staged(config.out, config.force) as stage:
        result = _build(config, stage, guard, tokenizer, clock, progress)
    result.out = config.out
    return result


def _build(
    config: CorpusConfig,
    stage: Path,
    guard: LeakGuard,
    tokenizer: str,
    clock: _Clock,
    progress: Callable[[int], None] | None,
) -> CorpusResult:
    """Every stage, writing into the empty directory `stage`."""
    outputs = Outputs(stage, config.parquet)
    with tempfile.TemporaryDirectory(prefix="corpus-", dir=stage) as scratch:
        table = RankTable(Path(scratch) / "rank.sqlite")
        try:
            gated = read_and_gate(config, Path(scratch), table, outputs.rejects, progress)
            check_readable(config, gated)
            clock.mark("read_gates")
            with spill.SpillReader(Path(scratch)) as read:
                ranked = rank_problems(table, config.per_problem, read, outputs.rejects)
                clock.mark("rank")
                plan = plan_split(
                    ranked.problems, guard.fingerprints, guard.never, config.eval_size, config.seed
                )
                clock.mark("split")
                exported = export_rows(table, plan, read, outputs, Path(scratch))
        finally:
            table.close()
        check_disjoint(exported.train, exported.eval)
        files = outputs.close()
        clock.mark("export")

    tally = Tally()
    for stage_tally in (gated.tally, ranked.tally, exported.tally):
        tally.merge(stage_tally)
    result = summarise(config, tokenizer, gated, plan, exported, tally, files, stage)
    clock.stamp(result)
    if config.report:
        write_report(result)  # shows the stages before it
        clock.mark("report")
        clock.stamp(result)
    write_dataset_card(result)  # README.md: the splits `datasets.load_dataset(DIR)` finds
    write_manifest(result)
    return result


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
