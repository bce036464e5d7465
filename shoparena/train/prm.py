"""A process-reward head on the per-axis rule decomposition (SPEC §11): `shoparena train prm`.

At each decision point of a trajectory (an assistant turn about to make calls), the head reads the
conversation so far — rendered as the policy sees it (the checkpoint's chat template, the inference prompt) — and predicts
the step labels of `prm_labels`: the rule score of the best candidate the agent has seen so far and its
per-axis hit ratios (title, price, service, SKU/attributes). Those need the problem's reward; the head
does not, so it can score a live rollout step by step, or rank sampled trajectories, where no reward is
at hand.

The head is a linear layer on the base model's last hidden state at the prompt's final token (the
position the policy's next turn would start from), trained with a masked binary cross-entropy on the
soft labels (an axis a problem asks nothing of is left out of the loss). The base model is frozen: its
features are computed once, so the head trains in seconds on a CPU and the checkpoint is a few KB beside
a pointer to the base. Problems are split into train and eval by a seeded hash of their id (all steps of
a problem on one side); the report compares the head's mean absolute error on eval with the train
mean's (a head that learned nothing matches it) and, on eval episodes, how well its last prediction of
the rule score ranks successful episodes above failed ones (AUC).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar

import orjson
from pydantic import BaseModel, Field

from shoparena.index.staging import staged_file
from shoparena.records.options import CliFlag, SimilarityName
from shoparena.train.config import StageConfig, StageResult, cleans_up
from shoparena.train.prm_labels import OUTPUTS, StepLabel, labelled_steps

HEAD_DIR = "head"
HEAD_WEIGHTS = "head.pt"
HEAD_CONFIG = "prm.json"
METRICS = "metrics.jsonl"
REPORT = "report.md"


class PRMStageConfig(StageConfig):
    """The process-reward head (`shoparena train prm`)."""

    stage: ClassVar[str] = "prm"

    model: Path = Field(description="Base checkpoint directory whose hidden states the head reads (frozen).")
    trajectories: Annotated[list[Path], CliFlag(flag="--trajectories", type=list[Path])] = Field(
        description="A run directory or trajectories JSONL file; repeat the flag for more."
    )
    problems: Annotated[list[Path], CliFlag(flag="--problems", type=list[Path])] = Field(
        description="A problem file with rewards (the labels need them); repeat the flag for more."
    )
    catalog: Path = Field(description="The catalogue the trajectories ran on.")
    similarity: SimilarityName = Field("lexical", description="Title similarity of the labels.")
    title_threshold: float = Field(0.7, gt=0, le=1, description="Title hit threshold (strict: 0.7).")
    eval_fraction: float = Field(0.2, ge=0, lt=1, description="Share of problems held out for evaluation.")
    max_length: int = Field(2048, ge=16, description="Prompt tokens read per step (the most recent kept).")
    epochs: int = Field(300, ge=1, description="Passes of the head over the cached features.")
    learning_rate: float = Field(1e-2, gt=0, description="AdamW learning rate of the head.")
    weight_decay: float = Field(1e-4, ge=0, description="AdamW weight decay of the head.")
    batch_size: int = Field(64, ge=1, description="Steps per optimiser update.")
    device: str = Field("auto", description="auto (cuda when there is one), cpu or cuda.")


class StepPrediction(BaseModel):
    message_index: int
    values: dict[str, float]
    """`OUTPUTS` name → predicted value in [0, 1]."""


def _is_eval(problem_id: str, seed: int, fraction: float) -> bool:
    digest = hashlib.sha256(f"{seed}:{problem_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < fraction


def _device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Features:
    """The frozen base model's last hidden state at the end of a step's prompt."""

    def __init__(self, model_dir: Path, max_length: int, device: str = "auto"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = _device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).to(
            self.device
        )
        self.model.eval()
        self.max_length = max_length
        self.hidden_size = int(self.model.config.hidden_size)

    def prompt(self, messages: list[dict], tools: list[dict] | None) -> str:
        """The inference prompt, through the checkpoint's own chat template (as the `hf:` agent renders)."""
        return self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=True
        )

    def __call__(self, messages: list[dict], tools: list[dict] | None):
        import torch

        ids = self.tokenizer(self.prompt(messages, tools), add_special_tokens=False)["input_ids"]
        ids = ids[-self.max_length :]
        with torch.no_grad():
            out = self.model(torch.tensor([ids], device=self.device), output_hidden_states=True)
        return out.hidden_states[-1][0, -1].float().cpu()


def _head(hidden_size: int):
    import torch

    return torch.nn.Linear(hidden_size, len(OUTPUTS))


def _targets(labels: list[StepLabel]):
    import torch

    values = torch.tensor([[v if v is not None else 0.0 for v in label.values] for label in labels])
    mask = torch.tensor([[v is not None for v in label.values] for label in labels], dtype=torch.float32)
    return values, mask


def _loss(logits, values, mask):
    import torch

    raw = torch.nn.functional.binary_cross_entropy_with_logits(logits, values, reduction="none")
    return (raw * mask).sum() / mask.sum().clamp(min=1)


def auc(scores: list[float], positives: list[bool]) -> float | None:
    """Probability that a positive scores above a negative (ties count half); None without both."""
    pos = [s for s, p in zip(scores, positives, strict=True) if p]
    neg = [s for s, p in zip(scores, positives, strict=True) if not p]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _read_records(paths: list[Path]):
    from shoparena.corpus.rewrite import iter_trajectories
    from shoparena.records.trajectory import TrajectoryRecord

    for label, line in iter_trajectories(paths):
        try:
            yield TrajectoryRecord.model_validate_json(line)
        except ValueError as exc:
            raise ValueError(f"{label}: not a trajectory record: {exc}") from None


@cleans_up
def run_prm(config: PRMStageConfig) -> StageResult:
    """Label every decision point, cache the base model's features, train and evaluate the head."""
    import torch

    from shoparena.index.catalog_dir import open_catalog
    from shoparena.problems.io import read_problems
    from shoparena.scoring.similarity import make_similarity

    started = time.perf_counter()
    for path, what in ((config.model, "model directory"), (config.catalog, "catalogue directory")):
        if not Path(path).is_dir():
            raise ValueError(f"{path}: no such {what}")
    for path in [*config.trajectories, *config.problems]:
        if not Path(path).exists():
            raise ValueError(f"{path}: no such file or run directory")
    torch.manual_seed(config.seed)
    config.out.mkdir(parents=True, exist_ok=True)
    resolved = config.write_resolved()
    problems = {}
    for path in config.problems:
        for problem in read_problems(path).problems:
            problems[problem.problem_id] = problem
    catalog = open_catalog(config.catalog)
    try:
        steps = list(
            labelled_steps(
                _read_records(config.trajectories),
                problems,
                catalog,
                make_similarity(config.similarity),
                config.title_threshold,
            )
        )
    finally:
        catalog.close()
    if not steps:
        raise ValueError(
            "no decision point to learn from: no trajectory's problem is in --problems (with its reward), "
            "or no trajectory made a call"
        )
    features = Features(config.model, config.max_length, config.device)
    rows = [features(record.messages[: label.message_index], record.tools or None) for record, label in steps]
    labels = [label for _, label in steps]
    is_eval = [_is_eval(label.problem_id, config.seed, config.eval_fraction) for label in labels]
    train_idx = [i for i, e in enumerate(is_eval) if not e]
    eval_idx = [i for i, e in enumerate(is_eval) if e]
    if not train_idx:
        raise ValueError(f"every problem fell in eval (eval_fraction {config.eval_fraction}); lower it")
    x = torch.stack(rows)
    values, mask = _targets(labels)
    head = _head(features.hidden_size)
    optimiser = torch.optim.AdamW(
        head.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    metrics_path = config.out / METRICS
    generator = torch.Generator().manual_seed(config.seed)
    train_t = torch.tensor(train_idx)
    eval_t = torch.tensor(eval_idx, dtype=torch.long)
    step = 0
    last_train = last_eval = None
    from shoparena.train.reporting import Reporter

    reporter = Reporter(config.report_to, config.out, config.stage, config.model_dump(mode="json"))
    with metrics_path.open("wb") as sink, reporter:
        for epoch in range(config.epochs):
            order = train_t[torch.randperm(len(train_t), generator=generator)]
            total = 0.0
            for batch in order.split(config.batch_size):
                loss = _loss(head(x[batch]), values[batch], mask[batch])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                total += float(loss.detach()) * len(batch)
                step += 1
                if config.max_steps is not None and step >= config.max_steps:
                    break
            with torch.no_grad():
                last_train = total / len(train_t)
                last_eval = float(_loss(head(x[eval_t]), values[eval_t], mask[eval_t])) if eval_idx else None
            line = {"epoch": epoch + 1, "step": step, "loss": last_train, "eval_loss": last_eval}
            sink.write(orjson.dumps(line) + b"\n")
            reporter.log(line)
            if config.max_steps is not None and step >= config.max_steps:
                break
    evaluation = _evaluate(head, x, values, mask, labels, train_idx, eval_idx)
    head_dir = config.out / HEAD_DIR
    head_dir.mkdir(parents=True, exist_ok=True)
    torch.save(head.state_dict(), head_dir / HEAD_WEIGHTS)
    (head_dir / HEAD_CONFIG).write_bytes(
        orjson.dumps(
            {
                "base_model": str(Path(config.model).resolve()),
                "outputs": list(OUTPUTS),
                "hidden_size": features.hidden_size,
                "max_length": config.max_length,
                "feature": "last hidden state at the final token of the step's inference prompt",
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    details = {
        "steps_labelled": len(labels),
        "train_steps": len(train_idx),
        "eval_steps": len(eval_idx),
        "problems": len({label.problem_id for label in labels}),
        **evaluation,
    }
    report = _write_report(config, details)
    return StageResult(
        stage="prm",
        out=config.out,
        checkpoint=head_dir,
        metrics=metrics_path,
        report=report,
        config=resolved,
        steps=step,
        train_loss=last_train,
        eval_loss=last_eval,
        seconds=time.perf_counter() - started,
        details=details,
    )


def _evaluate(
    head, x, values, mask, labels: list[StepLabel], train_idx: list[int], eval_idx: list[int]
) -> dict[str, Any]:
    """Per-output MAE on eval against the train mean's, and the last-step rule AUC on eval episodes."""
    import torch

    if not eval_idx:
        return {"eval_mae": None, "baseline_mae": None, "last_step_auc": None}
    with torch.no_grad():
        predicted = torch.sigmoid(head(x[eval_idx]))
    train_mask = mask[train_idx]
    train_mean = (values[train_idx] * train_mask).sum(0) / train_mask.sum(0).clamp(min=1)
    eval_mask = mask[eval_idx]
    target = values[eval_idx]
    mae, baseline = {}, {}
    for k, name in enumerate(OUTPUTS):
        present = eval_mask[:, k] > 0
        if present.any():
            mae[name] = round(float((predicted[present, k] - target[present, k]).abs().mean()), 4)
            baseline[name] = round(float((train_mean[k] - target[present, k]).abs().mean()), 4)
    last: dict[str, tuple[int, float, bool | None]] = {}
    for row, i in enumerate(eval_idx):
        label = labels[i]
        if label.record_id not in last or label.message_index > last[label.record_id][0]:
            last[label.record_id] = (label.message_index, float(predicted[row, 0]), label.success)
    judged = [(score, success) for _, score, success in last.values() if success is not None]
    return {
        "eval_mae": mae,
        "baseline_mae": baseline,
        "last_step_auc": auc([s for s, _ in judged], [bool(ok) for _, ok in judged]) if judged else None,
    }


def _write_report(config: PRMStageConfig, details: dict[str, Any]) -> Path:
    lines = [
        "# Process-reward head",
        "",
        f"Base model {config.model} (frozen); {details['steps_labelled']} decision points of "
        f"{details['problems']} problems: {details['train_steps']} train, {details['eval_steps']} eval.",
        "",
        "| output | eval MAE | train-mean MAE |",
        "|---|---:|---:|",
    ]
    for name in OUTPUTS:
        mae = (details.get("eval_mae") or {}).get(name)
        base = (details.get("baseline_mae") or {}).get(name)
        if mae is not None:
            lines.append(f"| {name} | {mae:.4f} | {base:.4f} |")
    auc_value = details.get("last_step_auc")
    lines += [
        "",
        "Last-step AUC (the head's last rule prediction ranks successful eval episodes above failed ones): "
        + ("n/a (eval lacks a success or a failure)" if auc_value is None else f"{auc_value:.3f}"),
        "",
    ]
    path = config.out / REPORT
    path.write_text("\n".join(lines))
    return path


class ProcessRewardModel:
    """A trained head with its base model: predictions for every decision point of a trajectory."""

    def __init__(self, head_dir: Path, device: str = "auto"):
        import torch

        meta = orjson.loads((Path(head_dir) / HEAD_CONFIG).read_bytes())
        if meta.get("outputs") != list(OUTPUTS):
            raise ValueError(
                f"{head_dir}: a head for outputs {meta.get('outputs')}, this code predicts {OUTPUTS}"
            )
        self.features = Features(Path(meta["base_model"]), int(meta["max_length"]), device)
        self.head = _head(self.features.hidden_size)
        self.head.load_state_dict(
            torch.load(Path(head_dir) / HEAD_WEIGHTS, map_location="cpu", weights_only=True)
        )
        self.head.eval()

    def predict(self, messages: list[dict], tools: list[dict] | None = None) -> list[StepPrediction]:
        import torch

        out = []
        for index, message in enumerate(messages):
            if message.get("role") == "assistant" and message.get("tool_calls"):
                with torch.no_grad():
                    values = torch.sigmoid(self.head(self.features(messages[:index], tools)))
                out.append(
                    StepPrediction(
                        message_index=index,
                        values={name: round(float(v), 6) for name, v in zip(OUTPUTS, values, strict=True)},
                    )
                )
        return out


class ScoredTrajectory(BaseModel):
    """One line of `score_file`'s output: the head's predictions at every decision point of a record."""

    record_id: str
    problem_id: str
    success: bool | None
    steps: list[StepPrediction]

    @property
    def last_rule(self) -> float | None:
        return self.steps[-1].values["rule"] if self.steps else None


def score_file(
    head_dir: Path, inputs: list[Path], out: Path, device: str = "auto", progress=None
) -> list[ScoredTrajectory]:
    """Step-by-step predictions for every record of `inputs` into `out` (JSONL, one record a line),
    no reward needed: e.g. to find the near misses of a firehose (a good candidate seen, not chosen)."""
    model = ProcessRewardModel(head_dir, device)
    scored: list[ScoredTrajectory] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with staged_file(out) as partial, partial.open("wb") as sink:
        for record in _read_records(inputs):
            line = ScoredTrajectory(
                record_id=record.record_id,
                problem_id=record.problem.problem_id,
                success=record.score.success,
                steps=model.predict(record.messages, record.tools or None),
            )
            sink.write(line.model_dump_json().encode() + b"\n")
            scored.append(line)
            if progress:
                progress(1)
    return scored
