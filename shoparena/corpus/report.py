"""report.md and funnel.png: what every stage kept and dropped, and why (SPEC §8.7)."""

from __future__ import annotations

from shoparena.corpus.models import ALL_REASONS, GATE_REASONS, NORMALISE_REASONS, CorpusResult

REASON_TEXT = {
    "unreadable": "the line is not JSON",
    "unknown_shape": "the record is none of the supported source shapes",
    "malformed_record": "a supported shape with a broken part",
    "judge_below_threshold": "judge quality below --min-quality (unjudged rows count as below)",
    "outcome_failed": "the episode failed (with --successful)",
    "unpaired_tool_call": "a tool call without its tool response (or a response without its call)",
    "recommend_count": "not exactly one recommend_product",
    "recommend_unresolved": "recommend_product arguments unparseable or ids not in the catalogue",
    "recommend_ungrounded": "the recommendation names products no search of the episode returned",
    "think_then_stop": "ends on a thinking/other-tool turn without recommend_product/terminate",
    "too_long": "more tokens than --max-length under the tokenizer",
    "dedup_ranked_out": "ranked below the per-problem quota",
    "never_touch": "problem (or its leak cluster) belongs to a never-touch suite",
}


def funnel_stages(result: CorpusResult) -> list[tuple[str, int]]:
    counts, reasons = result.counts, result.reasons
    remaining = counts["inputs"]
    stages = [("inputs", remaining)]
    remaining -= sum(reasons.get(r, 0) for r in NORMALISE_REASONS)
    stages.append(("normalised", remaining))
    for reason in GATE_REASONS:
        remaining -= reasons.get(reason, 0)
        stages.append((f"after {reason}", remaining))
    # the rest split by axis; never-touch rows of either axis leave after ranking
    stages.append(("axis A", counts["axis_a_candidates"]))
    stages.append(("after dedup/rank", counts["axis_a_candidates"] - counts["deduplicated"]))
    stages.append(("train + eval", counts["train"] + counts["eval"]))
    return stages


def _plot(stages: list[tuple[str, int]], path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [name for name, _ in stages][::-1]
    values = [value for _, value in stages][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(stages) + 1))
    ax.barh(labels, values, color="#4472c4")
    for i, value in enumerate(values):
        ax.text(value, i, f" {value:,}", va="center", fontsize=8)
    ax.set_xlabel("rows")
    ax.set_title("corpus funnel")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_report(result: CorpusResult) -> str:
    counts, reasons, manifest = result.counts, result.reasons, result.manifest
    stages = funnel_stages(result)
    plotted = _plot(stages, result.out / "funnel.png")
    lines = ["# Corpus build report", ""]
    kept = counts["train"] + counts["eval"]
    lines += [
        f"Inputs **{counts['inputs']:,}** = kept {kept:,} (train {counts['train']:,}, eval {counts['eval']:,})"
        f" + rejected {counts['rejected']:,} + axis-B {counts['axis_b']:,} + deduplicated "
        f"{counts['deduplicated']:,} — conservation checked.",
        "",
        f"Tokenizer: `{manifest['config']['tokenizer']}`, max_length {manifest['config']['max_length']}, "
        f"min_quality {manifest['config']['min_quality']}, per_problem {manifest['config']['per_problem']}, "
        f"seed {manifest['config']['seed']}.",
        "",
        f"Unjudged rows are never passed by the quality gate: {counts['unjudged_rejected']:,} of the "
        f"{reasons.get('judge_below_threshold', 0):,} `judge_below_threshold` rejects had no judge score.",
        "",
        f"Built in {result.timing()}.",
        "",
        "## Funnel",
        "",
    ]
    if plotted:
        lines += ["![funnel](funnel.png)", ""]
    lines += ["| stage | rows |", "|---|---:|"] + [f"| {name} | {value:,} |" for name, value in stages] + [""]
    lines += ["## Rejects by reason", "", "| reason | rows | meaning |", "|---|---:|---|"]
    for reason in ALL_REASONS:
        lines.append(f"| `{reason}` | {reasons.get(reason, 0):,} | {REASON_TEXT[reason]} |")
    lines += [
        "",
        "## By bucket",
        "",
        "| bucket | train | eval | axis-B | rejected |",
        "|---|---:|---:|---:|---:|",
    ]
    for bucket, c in manifest["by_bucket"].items():
        lines.append(
            f"| {bucket} | {c.get('train', 0):,} | {c.get('eval', 0):,} | {c.get('axis_b', 0):,} | "
            f"{c.get('rejected', 0):,} |"
        )
    lines += [
        "",
        "## Axis",
        "",
        f"Axis-A rows reaching ranking: {counts['axis_a_candidates']:,}; axis-B rows set aside: "
        f"{counts['axis_b']:,} (axis_b.jsonl) of the {counts['axis_b_candidates']:,} that passed every "
        "gate (the others belong to never-touch problems).",
        "",
        "## Split",
        "",
        f"{counts['problems']:,} problems (axis A and B) in {counts['clusters']:,} leak clusters; eval "
        f"target {counts['eval_target']:,} rows, stratified by bucket; train ∩ eval verified empty (problem "
        "ids and clusters).",
        "",
    ]
    lines += [f"Note: {note}" for note in result.notes] + [f"**Warning:** {w}" for w in result.warnings]
    if result.notes or result.warnings:
        lines.append("")
    lines += [
        "## Files",
        "",
        "| file | rows | sha256 |",
        "|---|---:|---|",
    ]
    for name, info in manifest["files"].items():
        lines.append(f"| {name} | {info['rows']:,} | `{info['sha256'][:16]}…` |")
    text = "\n".join(lines) + "\n"
    (result.out / "report.md").write_text(text)
    return text
