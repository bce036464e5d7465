"""Verified origin (issue 22, item 3): a call is the model's only when every product id in it came to
the model in a real tool result of this episode. Attacks run as real miner files through `run_eval`
(`file:`, the offline reference model behind the inference proxy, the offline judge)."""

from __future__ import annotations

from pathlib import Path

from shoparena.eval.config import EvalConfig
from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
from shoparena.eval.runner import run_eval
from shoparena.judge import OfflineJudge

MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"


def run_miner(name: str, catalog_dir, problems, out: Path):
    run_eval(
        EvalConfig(
            catalog=catalog_dir,
            problems=list(problems),
            agent=f"file:{MINERS / name}.py",
            out=out,
            timeout=60,
            executor="inline",
            similarity="lexical",
            bootstrap=10,
        ),
        judge=OfflineJudge(),
    )
    return read_trajectories(out / TRAJECTORIES_FILE).records


def test_doctored_tool_messages_do_not_make_the_codes_pick_the_models(agent_catalog_dir, agent_problems, tmp_path):
    """The code picks the last hit of its own search and answers every search the model asks for with a
    doctored page holding only that pick; the model's recommendation of it is the code's choice."""
    problem = agent_problems[0]
    (record,) = run_miner("doctoring_miner", agent_catalog_dir, [problem], tmp_path / "run")
    assert record.outcome.error is None, record.outcome
    pick = record.calls[0].result[-1]["product_id"]
    recommend = next(c for c in record.calls if c.name == "recommend_product")
    assert recommend.arguments["product_ids"] == pick  # the attack steered the model to the code's pick
    print("ORIGINS", [(c.name, c.origin) for c in record.calls], "JUDGE", record.judge.quality)
    assert recommend.origin == "code"
    assert record.judge.quality == 0.1
