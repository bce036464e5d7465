"""The race engine over a real SQLite arena and the real job layer: the state machine, qualifying, the
committed seed and the recomputable draw, promotion with hysteresis, cancellation, the embargo,
weights and consensus, and the append-only tables."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shoparena.arena.competition import rules
from shoparena.arena.competition.engine import RaceEngine, RaceError
from shoparena.arena.competition.view import CompetitionView, recompute_draw
from tests.arena.competition.race_helpers import by_miner, no_judge


class RecordingChain:
    """Collects what the engine sets (the local chain ledger is comp-weights' and tested there)."""

    def __init__(self) -> None:
        self.vectors = []

    def set_weights(self, vector) -> None:
        self.vectors.append(vector)


def engine_for(racing, **options) -> RaceEngine:
    return RaceEngine(racing.arena, clock=racing.clock, board=racing.board, **options)


def qualify(racing, *miners, tweak: str = "") -> list[str]:
    """Each miner submits; the validators run the qualifying jobs (every episode a success)."""
    ids = [racing.submit(miner, tweak=tweak) for miner in miners]
    racing.drain(outcome=by_miner({}))
    return ids


def run_race(racing, engine, outcome=None, seed: str | None = None, validators=None):
    engine.open_race(seed=seed)
    engine.start_race()
    racing.drain(validators, outcome)
    racing.clock.advance(minutes=5)
    return engine.close_race()


def test_a_race_runs_from_open_to_complete_and_reveals_its_seed(racing):
    a, b, c = racing.miners
    qualify(racing, a, b, c)
    chain = RecordingChain()
    engine = engine_for(racing, chain=chain)
    view = CompetitionView(racing.arena, engine)

    opened = engine.open_race(seed="the seed")
    assert opened.state == "QUALIFYING_OPEN"
    public = view.race(opened.race_id)
    assert public.seed_commitment == hashlib.sha256(b"the seed").hexdigest()
    assert (public.seed, public.problem_ids, public.race_clusters) == (None, None, None)
    with pytest.raises(RaceError, match="revealed when it closes"):
        recompute_draw(racing.arena, opened.race_id)
    with pytest.raises(RaceError, match="close it before opening"):
        engine.open_race()

    engine.start_race()
    assert view.race(opened.race_id).state == "RACE_RUNNING"
    with pytest.raises(RaceError, match="not QUALIFYING_OPEN"):
        engine.start_race()
    assert not engine.complete(opened.race_id)
    posted = racing.drain(outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.5, c.hotkey: 0.0}))
    assert posted == 3 * 3  # every validator evaluates every racer
    assert engine.complete(opened.race_id)

    race = engine.close_race()
    assert race.state == "RACE_COMPLETE"
    assert race.seed == "the seed" and rules.seed_commitment(race.seed) == race.seed_commitment
    assert [r.hotkey for r in race.results] == [a.hotkey, b.hotkey, c.hotkey]
    assert all(len(r.by_validator) == 3 for r in race.results)
    assert (race.winner, race.promoted, race.incumbent_before) == (a.hotkey, True, None)
    assert race.code_release_at == rules.code_release_at(racing.clock.at)
    served = view.race(race.race_id)  # as closed, plus the submissions' names people read
    names = {"winner_name": True, "incumbent_before_name": True, "results": {"__all__": {"name"}}}
    assert served.model_dump(exclude=names) == race.model_dump(exclude=names)
    assert served.winner_name and all(r.name for r in served.results)

    again, draw, matches = recompute_draw(racing.arena, race.race_id)
    assert matches and draw.problem_ids == race.problem_ids == again.problem_ids

    weights = view.weights()
    assert weights.source == "consensus" and sum(weights.weights) == pytest.approx(1.0)
    assert weights.as_dict()[1] == pytest.approx(racing.arena.config.competition.winner_share)
    assert 0 in weights.uids  # the rest burns
    assert chain.vectors == [weights]

    board = view.leaderboard()
    assert (board[0].rank, board[0].hotkey, board[0].incumbent) == (1, a.hotkey, True)
    detail = view.agent(race.winner_submission_id)
    assert detail.incumbent and detail.qualified and detail.code_release_at == race.code_release_at
    assert detail.race_scores[0].score == race.results[0].score
    # the qualifying run by the quorum of two validators, the race by all three
    assert sum(bucket.problems for bucket in detail.by_bucket) == 2 * 2 + 3 * 2


def test_a_hotkey_races_its_latest_qualified_submission_only(racing):
    a, b, _ = racing.miners
    engine = engine_for(racing, chain=RecordingChain())
    racing.arena.config.competition.qualify_threshold = 0.01
    first = qualify(racing, a, b)
    # a's second submission qualifies too, b's second fails its qualifying run
    second_a = racing.submit(a, tweak="\n# v2\n")
    second_b = racing.submit(b, tweak="\n# v2\n")
    racing.drain(outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.0}))
    racers = {q.hotkey: q.submission_id for q in engine.qualifiers()}
    assert racers == {a.hotkey: second_a, b.hotkey: first[1]}
    assert second_b not in racers.values()
    race = run_race(racing, engine)
    assert {(r.hotkey, r.submission_id) for r in race.results} == set(racers.items())


def test_the_incumbent_keeps_the_crown_inside_the_margin(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    engine = engine_for(racing, chain=RecordingChain())
    first = run_race(racing, engine, by_miner({a.hotkey: 1.0, b.hotkey: 0.5}))
    assert (first.winner, first.promoted) == (a.hotkey, True)
    # b now scores as well as a: a tie (within the margin) keeps the incumbent
    racing.clock.advance(hours=1)
    second = run_race(racing, engine, by_miner({a.hotkey: 1.0, b.hotkey: 1.0}))
    assert (second.incumbent_before, second.winner, second.promoted) == (a.hotkey, a.hotkey, False)
    assert second.code_release_at == first.code_release_at
    # a clear win beyond the margin promotes the challenger
    racing.clock.advance(hours=1)
    third = run_race(racing, engine, by_miner({a.hotkey: 0.5, b.hotkey: 1.0}))
    assert (third.incumbent_before, third.winner, third.promoted) == (a.hotkey, b.hotkey, True)
    assert third.code_release_at == rules.code_release_at(racing.clock.at)


def test_too_few_validators_cancel_the_race_and_the_crown_stays(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    engine = engine_for(racing, chain=RecordingChain())
    racing.arena.config.competition.min_validators = 3
    first = run_race(racing, engine)
    assert first.state == "RACE_COMPLETE"
    racing.clock.advance(hours=1)
    weights = CompetitionView(racing.arena, engine).weights()
    second = run_race(racing, engine, validators=racing.validators[:2])
    assert second.state == "CANCELLED"
    assert "2 validator(s) reported" in second.cancel_reason
    assert (second.winner, second.promoted) == (first.winner, False)
    assert CompetitionView(racing.arena, engine).weights() == weights  # a cancelled race sets none


def test_failed_judge_calls_over_the_limit_cancel_the_race(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    engine = engine_for(racing, chain=RecordingChain())
    race = run_race(racing, engine, no_judge)
    assert race.state == "CANCELLED"
    assert "12 of 12 judge calls failed" in race.cancel_reason
    assert race.seed is not None  # revealed even so: anyone can check the draw


def crashed(_offer, _validator, record):
    """The record of an episode whose miner crashed, still carrying a verdict (a validator from before
    crashes went unjudged, or a forged record): the verdict must not count."""
    outcome = record.outcome.model_copy(
        update={"error": "agent_main failed: TypeError: boom", "recommended_product_ids": None}
    )
    return record.model_copy(
        update={"outcome": outcome, "score": record.score.model_copy(update={"success": False})}
    )


def test_crashed_episodes_are_not_judged_and_crashing_racers_cannot_cancel_the_race(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    engine = engine_for(racing, chain=RecordingChain())
    # validators leave a crashed episode unjudged: no judge call failed, so the race stands
    race = run_race(racing, engine, lambda offer, v, r: no_judge(offer, v, crashed(offer, v, r)))
    assert race.state == "RACE_COMPLETE", race.cancel_reason
    for result in race.results:
        assert result.success_rate == 0 and result.judge_coefficient is None and result.score == 0
        assert all((v.judge_failures, v.judge_calls) == (0, 0) for v in result.by_validator)
    # a verdict on a crashed episode is dropped at intake: it lifts no coefficient
    racing.clock.advance(hours=1)
    forged = run_race(racing, engine, crashed)
    assert forged.state == "RACE_COMPLETE", forged.cancel_reason
    assert all(result.judge_coefficient is None and result.score == 0 for result in forged.results)


def test_a_dishonest_validator_cannot_lift_its_favourite(racing):
    a, b, c = racing.miners
    qualify(racing, a, b, c)
    engine = engine_for(racing, chain=RecordingChain())
    liar = racing.validators[0].hotkey
    honest = {a.hotkey: 1.0, b.hotkey: 0.5, c.hotkey: 0.0}
    lie = {a.hotkey: 0.0, b.hotkey: 0.0, c.hotkey: 1.0}
    race = run_race(racing, engine, by_miner(honest, liar=liar, lie=lie))
    assert race.winner == a.hotkey
    favourite = next(r for r in race.results if r.hotkey == c.hotkey)
    assert favourite.score == 0.0
    assert [v.score for v in favourite.by_validator if v.validator_hotkey == liar] != [0.0]
    consensus = CompetitionView(racing.arena, engine).weights().as_dict()
    assert consensus.get(3, 0.0) == 0.0
    assert consensus[1] == pytest.approx(racing.arena.config.competition.winner_share)


def test_tick_advances_whatever_is_due(racing):
    a, _, _ = racing.miners
    qualify(racing, a)
    engine = engine_for(racing, chain=RecordingChain())
    assert engine.tick() == ["opened race-00001"]
    assert engine.tick() == []
    racing.clock.advance(minutes=30)  # half the hourly cadence: qualifying ends
    assert engine.tick() == ["started race-00001"]
    racing.drain()
    assert engine.tick() == ["closed race-00001 (RACE_COMPLETE)"]  # every result is in
    assert engine.tick() == []  # the next race opens an hour after this one opened
    racing.clock.advance(minutes=30)
    assert engine.tick() == ["opened race-00002"]
    racing.clock.advance(minutes=30)
    assert engine.tick() == ["started race-00002"]
    racing.clock.advance(minutes=30)  # the deadline passes with no result: too few validators
    assert engine.tick() == ["closed race-00002 (CANCELLED)", "opened race-00003"]


def test_the_competition_tables_are_append_only(racing):
    a, _, _ = racing.miners
    qualify(racing, a)
    engine = engine_for(racing, chain=RecordingChain())
    run_race(racing, engine)
    with racing.arena.store.engine.connect() as connection:
        for table in ("races", "race_events", "race_entries", "race_outcomes", "weight_vectors"):
            for statement in (f"UPDATE {table} SET id = id", f"DELETE FROM {table}"):
                with pytest.raises(DBAPIError, match="append-only"):
                    connection.execute(text(statement))
                connection.rollback()


def test_the_richness_term_pays_for_llm_emitted_calls(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    racing.arena.config.competition.richness_share = 0.5
    engine = engine_for(racing, chain=RecordingChain())

    def outcome(offer, validator, record):
        if offer.miner_hotkey != b.hotkey:
            return record  # the file agent's own calls: origin `code`
        calls = [call.model_copy(update={"origin": "llm"}) for call in record.calls]
        return record.model_copy(update={"calls": calls})

    race = run_race(racing, engine, outcome)
    scores = {r.hotkey: r for r in race.results}
    assert scores[a.hotkey].richness == 0.0 and scores[b.hotkey].richness == 1.0
    strict = rules.final_score(scores[a.hotkey].success_rate, scores[a.hotkey].judge_coefficient)
    assert scores[a.hotkey].score == pytest.approx(0.5 * strict)
    assert scores[b.hotkey].score == pytest.approx(0.5 * strict + 0.5)
    assert race.winner == b.hotkey
