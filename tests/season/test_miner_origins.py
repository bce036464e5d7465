"""The roster's model-driven miners keep their calls the model's under verified origin: they send the
model real results (`miner_sdk.tool_message`), so every call, the recommendation included, is `llm`."""

from __future__ import annotations

import pytest

from shoparena.agents.base import ProblemView
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.season.roster import miner_source


@pytest.mark.parametrize("stem", ["agentic_model", "tagged_agentic", "frugal_agentic"])
def test_model_driven_roster_miners_stay_llm(stem, agent_catalog, agent_problems, tmp_path, sandbox_ready):
    path = tmp_path / f"{stem}.py"
    path.write_text(miner_source(stem), encoding="utf-8")
    agent = make_file_agent(str(path), timeout_s=60)
    try:
        for problem in agent_problems:
            episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
            assert run.error is None, run.error
            origins = {(c.name, c.origin) for c in episode.calls}
            # a loop out of turns ends the episode itself: that terminate is the code's, by design
            chosen = (
                episode.calls[:-1] if episode.calls[-1].arguments == {"status": "failure"} else episode.calls
            )
            assert {c.origin for c in chosen} == {"llm"}, origins
            assert run.inference.unshown_id_calls == 0
            assert all(e.unverified_tool_messages == 0 for e in run.inference.entries)
            if stem != "frugal_agentic":
                assert episode.recommended_product_ids, [c.name for c in episode.calls]
    finally:
        agent.close()
