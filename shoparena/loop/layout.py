"""Where the loop keeps each stage's files under `--out DIR` (the report reads the same layout).

```
DIR/loop.resolved.json            the loop config as run
DIR/loop.log                      what libraries and child processes printed while the loop ran
DIR/01-season/season.json         the season (`shoparena.arena-season/1`); its arena in 01-season/arena/
DIR/02-firehose/firehose.jsonl    every trajectory the store holds, exported (the public firehose bytes)
DIR/02-firehose/rewritten.jsonl   its axis-B traces rewritten as agentic rows (corpus.rewrite; the corpus
                                  stage makes it, with rewrite_rejects.jsonl beside it)
DIR/03-corpus/                    `corpus build` of the firehose (manifest.json, train/eval.jsonl …)
DIR/04-train/                     `train pipeline` (00-base, 01-sft …, eval/<stage> runs, report.md)
DIR/05-season-agents/<miner>/     `shoparena eval` of each admitted season miner file on the held-out split
DIR/06-final-race/season.json     one more race day in the same arena, the distilled miner entered
DIR/06-final-race/distilled.py    the distilled miner file (calls the inference proxy)
DIR/06-final-race/model_server.log
DIR/report.md, DIR/report.html    the loop's report
```

Each stage directory holds `stage_done.json` once finished (its config fingerprint): a re-run skips a
finished stage whose fingerprint is unchanged and redoes the first one that is not.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

RESOLVED = "loop.resolved.json"
STAGE_DONE = "stage_done.json"
DISTILLED_MODEL = "shoparena-distilled"
"""The public model name the distilled miner asks the inference proxy for."""
DISTILLED_MINER = "distilled"
"""The distilled miner's name in the final race's season file (`participants[].miner`)."""
UNTRAINED_MODEL = "shoparena-untrained"
UNTRAINED_MINER = "untrained"
"""The untrained base model, served and raced beside the distilled one (`race_untrained`): the random
baseline, with the same miner file."""


class LoopLayout(BaseModel):
    model_config = ConfigDict(frozen=True)

    out: Path

    @property
    def resolved(self) -> Path:
        return self.out / RESOLVED

    @property
    def season_dir(self) -> Path:
        return self.out / "01-season"

    @property
    def season_file(self) -> Path:
        return self.season_dir / "season.json"

    @property
    def arena_dir(self) -> Path:
        return self.season_dir / "arena"

    @property
    def catalog(self) -> Path:
        return self.arena_dir / "world" / "catalog"

    @property
    def firehose_dir(self) -> Path:
        return self.out / "02-firehose"

    @property
    def firehose(self) -> Path:
        return self.firehose_dir / "firehose.jsonl"

    @property
    def rewritten(self) -> Path:
        return self.firehose_dir / "rewritten.jsonl"

    @property
    def rewrite_rejects(self) -> Path:
        return self.firehose_dir / "rewrite_rejects.jsonl"

    @property
    def problems(self) -> Path:
        """Every problem the arena ran (its own suite and the race bank), with rewards: what the corpus
        build fingerprints and what the held-out evaluation reads."""
        return self.firehose_dir / "problems.jsonl"

    @property
    def corpus_dir(self) -> Path:
        return self.out / "03-corpus"

    @property
    def train_dir(self) -> Path:
        return self.out / "04-train"

    @property
    def season_agents_dir(self) -> Path:
        return self.out / "05-season-agents"

    @property
    def final_dir(self) -> Path:
        return self.out / "06-final-race"

    @property
    def final_season_file(self) -> Path:
        return self.final_dir / "season.json"

    @property
    def distilled_miner(self) -> Path:
        return self.final_dir / "distilled.py"

    @property
    def server_log(self) -> Path:
        return self.final_dir / "model_server.log"

    @property
    def report_md(self) -> Path:
        return self.out / "report.md"

    @property
    def report_html(self) -> Path:
        return self.out / "report.html"
