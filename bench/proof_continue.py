# Continue a finished CPU proof (`shoparena train proof --preset cpu`) on fresh teacher rows and re-evaluate:
#   PYTHONPATH=. .venv/bin/python bench/proof_continue.py MINUTES   (paths: /work/proof-cpu/run -> /work/proof-cpu/cont)
"""Continue the CPU proof's checkpoint on fresh teacher rows (more distinct rows, against memorising)."""

import json, sys, time
from pathlib import Path
from transformers import AutoModelForCausalLM, AutoTokenizer
from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
from shoparena.train.full_sft import FullSFTSettings, train_full
from shoparena.train import proof as P

run = Path("/work/proof-cpu/run")
work = run / "work"
out = Path("/work/proof-cpu/cont")
out.mkdir(exist_ok=True)
say = lambda m: print(m, flush=True)
P.shoparena(
    "problems",
    "generate",
    "--catalog",
    str(work / "catalog"),
    "--n",
    "9000",
    "--buckets",
    "product",
    "--seed",
    "77",
    "--out",
    str(out / "more-all.jsonl"),
    say=say,
)
heldout = P.read_jsonl(work / "heldout.jsonl")
more, dropped = P.leak_guard(P.read_jsonl(out / "more-all.jsonl"), heldout)
P.write_jsonl(out / "more.jsonl", more)
P.shoparena(
    "eval",
    "--catalog",
    str(work / "catalog"),
    "--problems",
    str(out / "more.jsonl"),
    "--agent",
    "reference:agentic",
    "--option",
    "style=concise",
    "--option",
    "protocol=qwen3",
    "--profile",
    "upstream4",
    "--mode",
    "strict",
    "--similarity",
    "lexical",
    "--out",
    str(out / "teacher"),
    "--quiet",
    say=say,
)
rows = P.rows_from_trajectories(out / "teacher" / "trajectories.jsonl", DEFAULT_SYSTEM_PROMPT)
say(f"{len(rows)} fresh rows ({dropped} leak-guarded out)")
tok = AutoTokenizer.from_pretrained(run / "checkpoint")
model = AutoModelForCausalLM.from_pretrained(run / "checkpoint")
log = train_full(
    model,
    tok,
    rows,
    FullSFTSettings(
        learning_rate=1.5e-3,
        minutes=float(sys.argv[1]),
        batch_tokens=8192,
        warmup_steps=10,
        device="cpu",
        seed=5,
    ),
    say=say,
    metrics_path=out / "metrics.jsonl",
)
model.save_pretrained(out / "checkpoint")
tok.save_pretrained(out / "checkpoint")
cfg = P.ProofConfig(out=run, preset="cpu")
res = P.eval_model(
    out / "checkpoint", work / "heldout.jsonl", work / "catalog", out / "eval", P.PRESETS["cpu"], cfg, say
)
json.dump(
    {"rows": len(rows), "training": log.model_dump(exclude={"curve"}), "curve": log.curve, "heldout": res},
    open(out / "cont.json", "w"),
    indent=2,
)
say(json.dumps(res))
