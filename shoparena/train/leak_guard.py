"""The leak guard at sampling time (SPEC §8.6, §9.2): a training stage that samples episodes (rs,
teacher, grpo) must never touch a problem of the corpus' eval or never-touch pools, nor one in the
same leak cluster as such a problem — training on a paraphrase of an eval task leaks its answer.

`guard_problems(problems, corpus_dir)` reads the corpus' frozen manifest and its pools, then clusters
the candidate problems together with every problem the corpus knows, with the corpus split's own
clustering (`corpus.split.leak_clusters`: shared leak cluster / reward-spec fingerprint, near-duplicate
query text by MinHash LSH, never-touch suites by id, fingerprint and query). A candidate is dropped

- by id, when its problem id is an eval or never-touch problem (a candidate without an id is known by
  the id the corpus gives id-less rows, the hash of its query);
- by cluster, when its cluster holds an eval problem or is the never-touch cluster.

The eval pool is checked against the manifest's `eval_problems_sha256` first, so a corpus whose eval
file was edited after the build (or a directory that is not a corpus) is refused, loudly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict

from shoparena.corpus.models import NEVER_TOUCH, row_parts
from shoparena.corpus.normalise import stable_problem_id
from shoparena.corpus.pipeline import MANIFEST_SCHEMA, read_problem_files
from shoparena.corpus.split import NeverTouch, ProblemEntry, leak_clusters
from shoparena.problems.canonical import reward_fingerprint
from shoparena.problems.models import Problem

NEVER_TOUCH_CLUSTER = "never-touch"
"""The name `split.leak_clusters` gives the cluster of the never-touch suites."""
COMPUTED_CLUSTER_PREFIX = "lsh-"
"""Cluster names the split made up for rows without a leak cluster (not a fingerprint of their own)."""


class LeakGuardError(ValueError):
    """The corpus cannot be read as a frozen corpus (no manifest, tampered eval pool, missing suite)."""


class DroppedProblem(BaseModel):
    """One refused candidate and why: the pool it collides with and the cluster it was found in."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str
    pool: Literal["eval", "never_touch"]
    cluster: str
    reason: Literal["id", "cluster"]


class GuardReport(BaseModel):
    """What the guard kept and refused; `counts()` is what the stages print and record."""

    model_config = ConfigDict(extra="forbid")

    corpus: str
    manifest_sha256: str
    kept: list[Problem]
    dropped_by_id: list[DroppedProblem]
    dropped_by_cluster: list[DroppedProblem]
    eval_problems: int
    """Problems of the corpus' eval pool."""
    never_touch_problems: int
    """Problems of the never-touch suites and never-touch rows the corpus knows."""

    @property
    def candidates(self) -> int:
        return len(self.kept) + len(self.dropped_by_id) + len(self.dropped_by_cluster)

    def counts(self) -> dict[str, int]:
        return {
            "candidates": self.candidates,
            "kept": len(self.kept),
            "dropped_by_id": len(self.dropped_by_id),
            "dropped_by_cluster": len(self.dropped_by_cluster),
        }

    def summary(self) -> str:
        """One line for people: `leak guard: 12 candidates, 9 kept, 2 dropped by id, 1 by cluster`."""
        c = self.counts()
        return (
            f"leak guard: {c['candidates']} candidates, {c['kept']} kept, {c['dropped_by_id']} dropped by "
            f"id, {c['dropped_by_cluster']} by leak cluster (corpus {self.corpus}: {self.eval_problems} "
            f"eval, {self.never_touch_problems} never-touch problems)"
        )


class CorpusPools(BaseModel):
    """The problems a frozen corpus holds, by pool, with the data the split clustered them by."""

    manifest_sha256: str
    eval: dict[str, ProblemEntry]
    train: dict[str, ProblemEntry]
    never_touch_rows: dict[str, ProblemEntry]
    never_touch: NeverTouch
    known_fingerprints: dict[str, str]


def problem_key(problem: Problem) -> str:
    """The id the corpus knows a problem by: its id, else the hash of its query (as for id-less rows)."""
    return problem.problem_id or stable_problem_id(problem.query)


def _metadata_lines(path: Path) -> Iterator[dict]:
    """The metadata of every row of a TRL-form JSONL split, without parsing the messages."""
    if not path.is_file():
        return
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip(b"\n")
            if not line.strip():
                continue
            try:
                yield orjson.loads(row_parts(line)[2])
            except ValueError as exc:
                raise LeakGuardError(f"{path}:{number}: not a corpus row ({exc})") from None


def _entry(meta: dict) -> ProblemEntry:
    hint = meta.get("leak_cluster_id")
    if hint and (hint.startswith(COMPUTED_CLUSTER_PREFIX) or hint == NEVER_TOUCH_CLUSTER):
        hint = None  # the split named the cluster; the row had none of its own
    return ProblemEntry(
        problem_id=meta["problem_id"],
        bucket=meta.get("bucket"),
        query=meta["query"],
        cluster_hint=hint,
        rows=1,
    )


def _never_touch_rows(path: Path) -> Iterator[dict]:
    """Metadata of the rows the build refused as never-touch (the rejects file; only those lines parse)."""
    if not path.is_file():
        return
    prefix = b'{"reason":' + orjson.dumps(NEVER_TOUCH)
    with path.open("rb") as handle:
        for line in handle:
            if line.startswith(prefix):
                row = orjson.loads(line).get("row") or {}
                if isinstance(row.get("metadata"), dict):
                    yield row["metadata"]


def _resolve(path: str, corpus_dir: Path) -> Path:
    """A path the manifest names: as written (relative to the working directory), else beside the corpus."""
    candidate = Path(path)
    if candidate.exists() or candidate.is_absolute():
        return candidate
    for base in (corpus_dir, corpus_dir.parent):
        if (base / candidate).exists():
            return base / candidate
    return candidate


def read_pools(corpus_dir: Path | str, never_touch: Sequence[Path] | None = None) -> CorpusPools:
    """The pools of the corpus at `corpus_dir`. `never_touch` replaces the suites the manifest names
    (for a corpus moved away from them); a named suite that is not there is an error, never a skip."""
    corpus_dir = Path(corpus_dir)
    manifest_path = corpus_dir / "manifest.json"
    if not manifest_path.is_file():
        raise LeakGuardError(
            f"{corpus_dir}: no manifest.json; give the directory `shoparena corpus build` wrote"
        )
    manifest = orjson.loads(manifest_path.read_bytes())
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise LeakGuardError(
            f"{manifest_path}: schema {manifest.get('schema')!r}, expected {MANIFEST_SCHEMA!r}"
        )

    eval_ = {}
    for meta in _metadata_lines(corpus_dir / "eval.jsonl"):
        eval_.setdefault(meta["problem_id"], _entry(meta))
    digest = hashlib.sha256("\n".join(sorted(eval_)).encode()).hexdigest()
    if digest != manifest.get("eval_problems_sha256"):
        raise LeakGuardError(
            f"{corpus_dir}/eval.jsonl holds {len(eval_)} problems whose hash {digest[:12]}… is not the "
            f"manifest's {str(manifest.get('eval_problems_sha256'))[:12]}…: the eval pool changed after "
            "the build; rebuild the corpus"
        )
    train = {}
    for meta in _metadata_lines(corpus_dir / "train.jsonl"):
        train.setdefault(meta["problem_id"], _entry(meta))
    never_rows = {}
    for meta in _never_touch_rows(corpus_dir / "rejects.jsonl"):
        never_rows.setdefault(meta["problem_id"], _entry(meta))

    config = manifest.get("config") or {}
    if never_touch is None:
        never_touch = [_resolve(p, corpus_dir) for p in config.get("never_touch") or []]
    for path in never_touch:
        if not Path(path).is_file():
            raise LeakGuardError(
                f"the corpus' never-touch suite {path} is not there; without it the guard cannot refuse "
                "its problems (pass the suites explicitly with --never-touch)"
            )
    never_problems = read_problem_files([Path(p) for p in never_touch])
    known_paths = [_resolve(p, corpus_dir) for p in config.get("problems") or []]
    known = read_problem_files([p for p in known_paths if p.is_file()]) + never_problems
    return CorpusPools(
        manifest_sha256=str(manifest.get("manifest_sha256", "")),
        eval=eval_,
        train=train,
        never_touch_rows=never_rows,
        never_touch=NeverTouch.from_problems(never_problems),
        known_fingerprints={
            p.problem_id: p.leak_cluster_id or reward_fingerprint(p) for p in known if p.problem_id
        },
    )


def guard_problems(
    problems: Iterable[Problem], corpus_dir: Path | str, never_touch: Sequence[Path] | None = None
) -> GuardReport:
    """Keep the candidate problems that share neither an id nor a leak cluster with the corpus' eval and
    never-touch pools. Kept problems without an id get the corpus' id for them (`problem_key`), so a
    run over them keys episodes uniquely."""
    pools = read_pools(corpus_dir, never_touch)
    candidates = [
        p if p.problem_id else p.model_copy(update={"problem_id": problem_key(p)}) for p in problems
    ]
    entries: dict[str, ProblemEntry] = {}
    for pool in (pools.train, pools.never_touch_rows, pools.eval):  # eval last: its entry wins
        entries.update(pool)
    # Each candidate is a node of its own (the corpus may hold a row of the same id with another hint).
    nodes = [f"\x00candidate:{i}" for i in range(len(candidates))]
    for node, problem in zip(nodes, candidates, strict=True):
        entries[node] = ProblemEntry(
            problem_id=node,
            bucket=problem.bucket,
            query=problem.query,
            cluster_hint=problem.leak_cluster_id or reward_fingerprint(problem),
            rows=1,
        )
    cluster_of, never_clusters = leak_clusters(
        list(entries.values()), pools.known_fingerprints, pools.never_touch
    )
    eval_clusters = {cluster_of[pid] for pid in pools.eval}
    never_ids = {pid for pid in pools.never_touch.problem_ids if pid} | set(pools.never_touch_rows)

    kept: list[Problem] = []
    by_id: list[DroppedProblem] = []
    by_cluster: list[DroppedProblem] = []
    for node, problem in zip(nodes, candidates, strict=True):
        key = problem.problem_id or ""
        cluster = cluster_of[node]
        if key in never_ids or key in pools.eval:
            pool = "never_touch" if key in never_ids else "eval"
            by_id.append(DroppedProblem(problem_id=key, pool=pool, cluster=cluster, reason="id"))
        elif cluster in never_clusters or cluster in eval_clusters:
            pool = "never_touch" if cluster in never_clusters else "eval"
            by_cluster.append(DroppedProblem(problem_id=key, pool=pool, cluster=cluster, reason="cluster"))
        else:
            kept.append(problem)
    return GuardReport(
        corpus=str(corpus_dir),
        manifest_sha256=pools.manifest_sha256,
        kept=kept,
        dropped_by_id=by_id,
        dropped_by_cluster=by_cluster,
        eval_problems=len(pools.eval),
        never_touch_problems=len(never_ids),
    )
