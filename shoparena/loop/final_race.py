"""The loop's last arena day: the distilled checkpoint goes back into the arena as a miner.

The miner file is the season's axis-A miner (`agentic_model`: the model emits every tool call through
the arena's inference proxy) rendered with three constants changed (a `season.variants.Variant`, as the
season's own variants are made): the model it asks for is `shoparena-distilled`, its system prompt is
the one the training rows are served with (`DEFAULT_SYSTEM_PROMPT`, which `hf:` and `model serve` add),
and it sends the model's reasoning back with each turn, so with its `tool` messages (`miner_sdk.
tool_message`: the real results, verified by the proxy) every prompt the served model is given is the
training rendering of the episode so far (`train.chat_render.render_row`), byte for byte. The final
race compares models under one policy. The checkpoint is served as an OpenAI-compatible
endpoint (`agents.model_server`: transformers in-process, or vLLM), and the validators' proxy
allowlist maps `shoparena-distilled` to it. Everything else is the season's machinery: a one-day
continuation of the season in a copy of its arena, the roster's miners racing with their latest
qualified files, the distilled miner submitted through the signed API, admitted, qualified, raced.
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from shoparena.loop.layout import (
    DISTILLED_MINER,
    DISTILLED_MODEL,
    UNTRAINED_MINER,
    UNTRAINED_MODEL,
    LoopLayout,
)

AXIS_A_MINER = "agentic_model"


def distilled_miner_source(model: str = DISTILLED_MODEL) -> str:
    """The season's axis-A miner file, asking for the distilled model instead of the reference one, with
    the system prompt the model was trained with and its reasoning kept in the history."""
    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
    from shoparena.season.roster import render_variant
    from shoparena.season.variants import Variant

    constants = {"MODEL": model, "SYSTEM": DEFAULT_SYSTEM_PROMPT, "KEEP_REASONING": True}
    return render_variant(Variant(template=AXIS_A_MINER, constants=constants))


def copy_arena(source: Path, target: Path) -> None:
    """The final race plays in a copy of the season's arena, so re-running it starts from the same state."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)


def fit_race_to_pool(arena_dir: Path, layout: LoopLayout, say, whole_pool: bool = False) -> None:
    """The final race draws from the firehose's pool (the fresh held-out problems of the rotation in force
    when it opens, kept out of training); when the pool holds fewer than the season's `race_problems`,
    the arena would postpone the race, so the copy races on the whole pool instead (and says so); with
    `whole_pool` (the loop's `final_race_whole_pool`) it races the whole pool whatever its size."""
    from shoparena.arena.config import read_config, write_config
    from shoparena.problems.io import read_problems

    pool_file = layout.firehose_dir / "final_race_pool.jsonl"
    pool = len(read_problems(pool_file).problems) if pool_file.is_file() else 0
    config = read_config(arena_dir)
    wanted = config.competition.race_problems
    if 0 < pool < wanted or (whole_pool and pool and pool != wanted):
        competition = config.competition.model_copy(update={"race_problems": pool})
        write_config(arena_dir, config.model_copy(update={"competition": competition}))
        say(
            f"    the final race's pool holds {pool} fresh held-out problems (the season raced {wanted}): it races all {pool}"
        )


def _serve(stack: ExitStack, checkpoint: Path, name: str, config, log: Path, say) -> str:
    """Start a model server for `checkpoint` as `name`; the upstream spec the proxy forwards to."""
    from shoparena.inference.model_server import start_model_server

    serve = config.serve
    say(f"    serving {checkpoint} as {name!r} ({serve.backend})")
    server = stack.enter_context(
        start_model_server(
            checkpoint,
            name=name,
            backend=serve.backend,
            max_new_tokens=serve.max_new_tokens,
            device=serve.device,
            log=log,
            **({"startup_timeout_s": serve.startup_timeout_s} if serve.backend == "vllm" else {}),
        )
    )
    upstream = server.upstream_spec()
    say(f"    the validators' inference proxy sends {name!r} to {upstream}")
    return upstream


def run_final_race(
    config, layout: LoopLayout, checkpoint: Path, say, untrained: Path | None = None
) -> dict[str, Any]:
    from shoparena.inference.proxy import DEFAULT_OFFLINE_MODELS
    from shoparena.season.driver import Season
    from shoparena.season.setup import Entrant

    arena_dir = layout.final_dir / "arena"
    copy_arena(layout.arena_dir, arena_dir)
    fit_race_to_pool(arena_dir, layout, say, whole_pool=config.final_race_whole_pool)
    source = distilled_miner_source()
    layout.distilled_miner.write_text(source, encoding="utf-8")
    with ExitStack() as stack:
        models = {DISTILLED_MODEL: _serve(stack, checkpoint, DISTILLED_MODEL, config, layout.server_log, say)}
        entrants = [Entrant(name=DISTILLED_MINER, source=source, about="the loop's distilled checkpoint")]
        if untrained is not None:
            log = layout.server_log.with_name(f"untrained-{layout.server_log.name}")
            models[UNTRAINED_MODEL] = _serve(stack, untrained, UNTRAINED_MODEL, config, log, say)
            entrants.append(
                Entrant(
                    name=UNTRAINED_MINER,
                    source=distilled_miner_source(UNTRAINED_MODEL),
                    about="the same model untrained: the random baseline",
                )
            )
        settings = config.season.model_copy(
            update={
                "days": 1,
                "roster_submits": False,
                "entrants": entrants,
                "inference_models": {**DEFAULT_OFFLINE_MODELS, **models},
            }
        )

        def day(progress) -> None:
            say(
                f"    final race: {progress.submitted} submitted ({progress.admitted} admitted), "
                f"{progress.race_jobs} race jobs, {progress.episodes} episodes, race {progress.state} "
                f"({progress.wall_s:.0f} s)"
            )

        season = Season(arena_dir, settings, progress=day).run()
    season.write(layout.final_season_file)
    from shoparena.loop.report_data import distilled_placement

    placed = distilled_placement(season)
    say(f"    the distilled agent {placed.text()}")
    summary = placed.model_dump(mode="json")
    if untrained is not None:
        baseline = distilled_placement(season, UNTRAINED_MINER)
        say(f"    the untrained model {baseline.text()}")
        summary["untrained"] = baseline.model_dump(mode="json")
    return summary
