"""A corpus made the real way, for the training tests and `bench/train_bench.py`: a reference-agent
eval run over a problems file, judged offline, through `build_corpus` (normalise, gates, dedup,
leak-guarded split, TRL export). One place, so the fixtures differ only in what they choose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.judge.offline import OfflineJudge


def reference_corpus(
    root: Path,
    catalog: Path,
    problems: Path,
    *,
    run_name: str = "run_agentic",
    profile: str = "oro7",
    bootstrap: int = 0,
    **corpus: Any,
) -> tuple[Path, Path]:
    """(run directory, corpus directory) under `root`; `corpus` goes to `CorpusConfig` as is."""
    judge = OfflineJudge()
    run = root / run_name
    run_eval(
        EvalConfig(
            catalog=catalog,
            problems=problems,
            agent="reference:agentic",
            profile=profile,
            out=run,
            executor="inline",
            similarity="lexical",
            bootstrap=bootstrap,
        ),
        judge=lambda record, problem: judge(record, problem),
    )
    out = root / "corpus"
    build_corpus(CorpusConfig(inputs=[run], out=out, catalog=catalog, problems=[problems], **corpus))
    return run, out
