"""Continue a finished CPU proof on fresh teacher rows, then re-evaluate it on the same held-out problems
(docs/benchmarks.md, "The learning proof": more distinct rows, against memorising).

    PYTHONPATH=. .venv/bin/python bench/proof_continue.py PROOF_DIR OUT_DIR MINUTES

Generates 9,000 more training problems on the proof's catalogue (leak-guarded against its held-out
problems), plays the concise teacher on them, trains the proof's checkpoint on the solved ones for
MINUTES, evaluates through `shoparena eval --agent hf:`, and writes OUT_DIR/cont.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
from shoparena.train import proof as P
from shoparena.train.full_sft import FullSFTSettings, train_full


def say(message: str) -> None:
    print(message, flush=True)


def main(run: Path, out: Path, minutes: float) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    work = run / "work"
    out.mkdir(parents=True, exist_ok=True)
    P.shoparena("problems", "generate", "--catalog", str(work / "catalog"), "--n", "9000",
                "--buckets", "product", "--seed", "77", "--out", str(out / "more-all.jsonl"), say=say)  # fmt: skip
    more, dropped = P.leak_guard(P.read_jsonl(out / "more-all.jsonl"), P.read_jsonl(work / "heldout.jsonl"))
    P.write_jsonl(out / "more.jsonl", more)
    P.shoparena("eval", "--catalog", str(work / "catalog"), "--problems", str(out / "more.jsonl"),
                "--agent", "reference:agentic", "--option", "style=concise", "--option", "protocol=qwen3",
                "--profile", "upstream4", "--mode", "strict", "--similarity", "lexical",
                "--out", str(out / "teacher"), "--quiet", say=say)  # fmt: skip
    rows = P.rows_from_trajectories(out / "teacher" / "trajectories.jsonl", DEFAULT_SYSTEM_PROMPT)
    say(f"{len(rows)} fresh rows ({dropped} leak-guarded out)")
    tokenizer = AutoTokenizer.from_pretrained(run / "checkpoint")
    model = AutoModelForCausalLM.from_pretrained(run / "checkpoint")
    settings = FullSFTSettings(
        learning_rate=1.5e-3, minutes=minutes, batch_tokens=8192, warmup_steps=10, device="cpu", seed=5
    )
    log = train_full(model, tokenizer, rows, settings, say=say, metrics_path=out / "metrics.jsonl")
    model.save_pretrained(out / "checkpoint")
    tokenizer.save_pretrained(out / "checkpoint")
    config = P.ProofConfig(out=run, preset="cpu")
    heldout = P.eval_model(
        out / "checkpoint",
        work / "heldout.jsonl",
        work / "catalog",
        out / "eval",
        P.PRESETS["cpu"],
        config,
        say,
    )
    result = {"rows": len(rows), "training": log.model_dump(exclude={"curve"}), "curve": log.curve,
              "heldout": heldout}  # fmt: skip
    (out / "cont.json").write_text(json.dumps(result, indent=2))
    say(json.dumps(heldout))
    return result


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]))
