"""The cache of the standings and the recent races (`competition.cache`, used by `CompetitionView`):
over a real arena (the job layer, real records, the race engine) on SQLite and on PostgreSQL, the cached
answer is always the one computed afresh, and it changes the moment a write changes it — a qualifying
result, a new submission, a race step and its outcome, new weights, a metagraph change, the
qualifying threshold — including a PostgreSQL row that commits after one with a higher id, and a write
landing while an answer is computed. Hypothesis plays random sequences of those writes. Concurrent
misses compute once; the cache is bounded and belongs to one view (one arena)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.cache import ReadCache
from shoparena.arena.competition.engine import CLOSED, RaceEngine, RacePostponed
from shoparena.arena.competition.models import WeightVector
from shoparena.arena.competition.view import CompetitionView
from shoparena.arena.db import writing
from tests.arena.competition.race_helpers import by_miner, make_racing


class RecordingChain:
    def __init__(self) -> None:
        self.vectors = []

    def set_weights(self, vector) -> None:
        self.vectors.append(vector)


@pytest.fixture
def make(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """Three miners, three validators that each run every qualifying job too (as a season's arena
    does); `store`: None (SQLite) or a PostgreSQL URL."""
    made = []

    def racing(store: str | None = None):
        made.append(
            make_racing(
                tmp_path / str(len(made)), small_catalog_dir, job_bank, race_bank, race_records, store=store,
                validators_per_submission=3,
            )
        )  # fmt: skip
        return made[-1]

    yield racing
    for racing in made:
        racing.arena.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def racing_on(request, make):
    """The arena's state on SQLite or on PostgreSQL."""
    return make(None if request.param == "sqlite" else request.getfixturevalue("pg_store_url"))


class Views:
    """The cached view under test and an uncached one over the same arena and engine."""

    def __init__(self, racing, cache_entries: int = 32):
        self.racing = racing
        self.engine = RaceEngine(racing.arena, clock=racing.clock, board=racing.board, chain=RecordingChain())
        self.cached = CompetitionView(racing.arena, self.engine, cache_entries=cache_entries)
        self.fresh = CompetitionView(racing.arena, self.engine, cache_entries=0)

    def check(self):
        """The cached answers equal the fresh ones; returns them (standings, recent races)."""
        board = self.cached.leaderboard()
        assert board == self.fresh.leaderboard()
        races = self.cached.races(10)
        assert races == self.fresh.races(10)
        assert self.cached.races(1) == self.fresh.races(1)
        return board, races

    def race_step(self) -> str:
        """Open, start or close the race, whichever is next."""
        self.racing.clock.advance(minutes=5)
        current = self.engine.current()
        if current is None or current.state in CLOSED:
            try:
                return self.engine.open_race().state
            except RacePostponed:  # every fresh held-out problem has been raced: nothing changes
                return "POSTPONED"
        if current.state == "QUALIFYING_OPEN":
            return self.engine.start_race().state
        return self.engine.close_race().state


def store_vector(racing, vector: WeightVector) -> None:
    with writing(racing.arena.store.engine) as connection:
        RaceEngine._store_vector(connection, vector, datetime.now(UTC))


def by_hotkey(board):
    return {entry.hotkey: entry for entry in board}


def test_a_read_again_is_a_hit_and_any_change_is_seen_at_once(racing_on):
    racing = racing_on
    a, b, c = racing.miners
    views = Views(racing)
    assert views.check() == ([], [])
    assert views.check() == ([], [])
    hits = views.cached.cache_info().hits
    assert hits >= 3  # the second round came from the cache

    # a submission: no result yet, so not on the board, but the standings' key moved (one miss); the
    # races do not read submissions (two hits)
    racing.submit(a, name="alpha.py")
    before = views.cached.cache_info()
    assert views.check() == ([], [])
    after = views.cached.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 2)

    # its qualifying results, one validator at a time: on the board once the quorum (two validators)
    # has reported, and each later one moves its score (the lower stake-weighted median of 0.0, 1.0;
    # 0.0, 1.0, 1.0). Only the first claim of a job writes its `jobs` row: the later results are new
    # `submission_results` rows only
    racing.evaluate(racing.validators[0], by_miner({a.hotkey: 1.0}))
    board, _ = views.check()
    assert board == []  # one report: no qualifying score yet
    racing.evaluate(racing.validators[1], by_miner({a.hotkey: 0.0}))
    board, _ = views.check()
    assert [(e.hotkey, e.name, e.uid) for e in board] == [(a.hotkey, "alpha.py", 1)]
    assert (board[0].score, board[0].success_rate) == (0.0, 0.0)
    racing.evaluate(racing.validators[2], by_miner({a.hotkey: 1.0}))
    board, _ = views.check()
    assert board[0].score > 0 and board[0].success_rate == 1.0

    # b and c qualify, with lower scores
    racing.submit(b)
    racing.submit(c)
    racing.drain(outcome=by_miner({b.hotkey: 0.5, c.hotkey: 0.0}))
    board, _ = views.check()
    assert [e.hotkey for e in board] == [a.hotkey, b.hotkey, c.hotkey]
    assert not any(e.incumbent or e.races or e.weight for e in board)

    # the threshold is part of the key (it lives in the configuration, not in the database)
    views.engine.config.qualify_threshold = 0.01
    board, _ = views.check()
    assert [e.hotkey for e in board] == [a.hotkey, b.hotkey]
    views.engine.config.qualify_threshold = 0.0
    board, _ = views.check()
    assert [e.hotkey for e in board] == [a.hotkey, b.hotkey, c.hotkey]

    # the metagraph: a miner's uid, then a validator's stake, then a miner removed
    racing.arena.metagraph.register(b.hotkey, "miner", 0.0, uid=42)
    board, _ = views.check()
    assert by_hotkey(board)[b.hotkey].uid == 42
    racing.arena.metagraph.register(racing.validators[0].hotkey, "validator", 25.0, uid=100)
    views.check()
    racing.arena.metagraph.remove(c.hotkey)
    board, _ = views.check()
    assert c.hotkey not in by_hotkey(board)
    racing.arena.metagraph.register(c.hotkey, "miner", 0.0, uid=3)
    board, _ = views.check()
    assert c.hotkey in by_hotkey(board)

    # the race: each step is a new row the recent races show, the close crowns and sets weights
    assert views.race_step() == "QUALIFYING_OPEN"
    _, races = views.check()
    assert [race.state for race in races] == ["QUALIFYING_OPEN"]
    assert views.race_step() == "RACE_RUNNING"
    _, races = views.check()
    assert [race.state for race in races] == ["RACE_RUNNING"]
    racing.drain(outcome=by_miner({a.hotkey: 0.5, b.hotkey: 1.0, c.hotkey: 0.0}))
    views.check()
    assert views.race_step() == "RACE_COMPLETE"
    board, races = views.check()
    assert races[0].state == "RACE_COMPLETE" and races[0].seed is not None
    assert board[0].hotkey == b.hotkey and board[0].incumbent and board[0].weight > 0
    assert all(entry.races == 1 for entry in board)

    # new consensus weights on their own (no race): the board's weights follow
    store_vector(racing, WeightVector(race_id=None, uids=[1], weights=[1.0], source="consensus"))
    board, _ = views.check()
    assert by_hotkey(board)[a.hotkey].weight == 1.0 and by_hotkey(board)[b.hotkey].weight == 0.0

    # a's new submission, qualified: a has raced, so its race result still stands for it
    newer = racing.submit(a, name="alpha-2.py", tweak="\n# v2\n")
    racing.drain(outcome=by_miner({a.hotkey: 0.0}))
    board, _ = views.check()
    assert by_hotkey(board)[a.hotkey].submission_id != newer

    # a race nobody evaluates is cancelled: no crown or weights change, and it has a result for nobody,
    # so it counts for nobody's races (each row's `races` is what its agent page lists)
    for state in ("QUALIFYING_OPEN", "RACE_RUNNING", "CANCELLED"):
        assert views.race_step() == state
        board, _ = views.check()
    assert board[0].hotkey == b.hotkey and all(entry.races == 1 for entry in board)
    assert all(len(views.fresh.agent(entry.submission_id).race_scores) == 1 for entry in board)


def test_a_row_committed_after_one_with_a_higher_id_is_seen_on_postgresql(make, pg_store_url):
    """PostgreSQL draws an id at insert and may commit it late: the newest id does not move, the count
    does. (SQLite has one writer: ids commit in order there.)"""
    racing = make(pg_store_url)
    views = Views(racing)
    racing.submit(racing.miners[0])
    racing.drain(outcome=by_miner({}))
    db = racing.arena.store.engine
    late = db.connect()
    try:
        transaction = late.begin()
        RaceEngine._store_vector(  # takes the lower id, commits last
            late, WeightVector(race_id=None, uids=[1], weights=[1.0], source="consensus"), datetime.now(UTC)
        )
        store_vector(
            racing,
            WeightVector(race_id=None, uids=[1], weights=[1.0], source="validator", validator_hotkey="v"),
        )
        board, _ = views.check()
        assert board[0].weight == 0.0
        transaction.commit()
    finally:
        late.close()
    board, _ = views.check()
    assert board[0].weight == 1.0


def test_the_answer_and_its_key_come_from_one_snapshot(racing_on):
    """A write landing between reading the key and computing the answer is not in the answer: else
    an answer for the new state would be kept under the old key, and served again once the metagraph
    is changed back (the one table whose version can return to an earlier value)."""
    racing = racing_on
    a = racing.miners[0]
    views = Views(racing)
    racing.submit(a)
    racing.drain(outcome=by_miner({}))
    compute = views.cached._leaderboard
    meddled = []

    def meddling(connection):
        if not meddled:
            meddled.append(racing.arena.metagraph.register(a.hotkey, "miner", 0.0, uid=42))
        return compute(connection)

    views.cached._leaderboard = meddling
    assert views.cached.leaderboard()[0].uid == 1  # as the snapshot its key was read in saw it
    assert meddled and views.fresh.leaderboard()[0].uid == 42
    assert views.check()[0][0].uid == 42
    racing.arena.metagraph.register(a.hotkey, "miner", 0.0, uid=1)
    assert views.check()[0][0].uid == 1


EVENT = st.one_of(
    st.tuples(st.just("submit"), st.integers(0, 2)),
    st.tuples(
        st.just("evaluate"),
        st.integers(0, 2),
        st.fixed_dictionaries({i: st.sampled_from([0.0, 0.5, 1.0]) for i in range(3)}),
    ),
    st.tuples(
        st.just("drain"),  # every validator takes every job it can
        st.fixed_dictionaries({i: st.sampled_from([0.0, 0.5, 1.0]) for i in range(3)}),
    ),
    st.tuples(st.just("race"), st.booleans()),  # the next race step; True: the race jobs are run first
    # stakes stay > 0 and uids distinct: the engine refuses a race whose reporting validators have no
    # stake, or whose racers share a uid (its own preconditions, not the cache's)
    st.tuples(st.just("stake"), st.integers(0, 2), st.sampled_from([1.0, 10.0, 30.0])),
    st.tuples(st.just("uid"), st.integers(0, 2), st.sampled_from([None, 0, 10])),
    st.tuples(st.just("remove"), st.integers(0, 2)),
    st.tuples(
        st.just("weights"),
        st.sampled_from(["consensus", "validator"]),
        st.lists(st.sampled_from([0, 1, 2, 3, 10, 11, 100]), min_size=1, max_size=4, unique=True),
    ),
    st.tuples(st.just("threshold"), st.sampled_from([0.0, 0.3, 0.6])),
)


def play(views: Views, event: tuple) -> None:
    racing = views.racing
    kind, *args = event
    if kind == "submit":
        racing.submit(racing.miners[args[0]], name=f"m{args[0]}.py", tweak=f"\n# {time.monotonic_ns()}\n")
    elif kind == "evaluate":
        rates = {racing.miners[i].hotkey: rate for i, rate in args[1].items()}
        racing.evaluate(racing.validators[args[0]], by_miner(rates))
    elif kind == "drain":
        racing.drain(outcome=by_miner({racing.miners[i].hotkey: rate for i, rate in args[0].items()}))
    elif kind == "race":
        current = views.engine.current()
        if args[0] and current is not None and current.state == "RACE_RUNNING":
            racing.drain(outcome=by_miner({}))
        views.race_step()
    elif kind == "stake":
        racing.arena.metagraph.register(
            racing.validators[args[0]].hotkey, "validator", args[1], uid=100 + args[0]
        )
    elif kind == "uid":
        uid = None if args[1] is None else args[0] + 1 + args[1]  # miner i: i + 1 (as made) or i + 11
        racing.arena.metagraph.register(racing.miners[args[0]].hotkey, "miner", 0.0, uid=uid)
    elif kind == "remove":
        hotkey = racing.miners[args[0]].hotkey
        if not racing.arena.metagraph.remove(hotkey):
            racing.arena.metagraph.register(hotkey, "miner", 0.0, uid=args[0] + 1)
    elif kind == "weights":
        source, uids = args
        uids = sorted(uids)
        store_vector(
            racing,
            WeightVector(
                race_id=None,
                uids=uids,
                weights=[1.0 / len(uids)] * len(uids),
                source=source,
                validator_hotkey=racing.validators[0].hotkey if source == "validator" else None,
            ),
        )
    elif kind == "threshold":
        views.engine.config.qualify_threshold = args[0]


def test_random_sequences_of_writes_never_leave_a_stale_answer(make):
    """One arena (SQLite) for every example (the state grows from one to the next, which only widens
    what is tried): after each write, the cached standings and races equal the ones computed afresh."""
    racing = make()
    views = Views(racing)
    racing.submit(racing.miners[0])
    racing.drain(outcome=by_miner({}))
    views.check()

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(EVENT, min_size=3, max_size=12))
    def writes(events):
        for event in events:
            play(views, event)
            views.check()

    writes()
    info = views.cached.cache_info()
    assert info.hits and info.misses  # each check's second read of races hits, each write misses


def test_concurrent_misses_compute_once_and_share_the_answer(racing):
    views = Views(racing)
    racing.submit(racing.miners[0])
    racing.drain(outcome=by_miner({}))
    view = views.cached
    computing, release = threading.Event(), threading.Event()
    calls = []
    original = view._leaderboard

    def slow(connection):
        calls.append(threading.get_ident())
        computing.set()
        assert release.wait(60)
        return original(connection)

    view._leaderboard = slow
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(view.leaderboard)
        assert computing.wait(60)
        others = [pool.submit(view.leaderboard) for _ in range(7)]
        deadline = time.monotonic() + 60
        while view.cache_info().waits < 7:  # each has found the computation under way
            assert time.monotonic() < deadline, view.cache_info()
            time.sleep(0.005)
        release.set()
        answers = [future.result(60) for future in (first, *others)]
    assert len(calls) == 1
    assert all(answer == answers[0] for answer in answers) and answers[0] == views.fresh.leaderboard()
    assert answers[0] is not answers[1]  # each caller gets its own list


def test_a_failed_computation_fails_its_waiters_and_is_not_kept(racing):
    views = Views(racing)
    view = views.cached
    original = view._leaderboard

    def failing(connection):
        raise RuntimeError("the database went away")

    view._leaderboard = failing
    with pytest.raises(RuntimeError, match="went away"):
        view.leaderboard()
    view._leaderboard = original
    assert view.leaderboard() == views.fresh.leaderboard() == []
    assert view.cache_info().entries == 1

    cache = ReadCache(4)
    assert cache.claim("k")[0] == "compute"
    state, future = cache.claim("k")
    assert state == "wait"
    cache.fail("k", ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        future.result(1)
    assert cache.claim("k")[0] == "compute"  # nothing kept: the next reader computes


def test_the_cache_is_bounded(racing):
    views = Views(racing, cache_entries=4)
    for limit in range(1, 20):
        assert views.cached.races(limit) == views.fresh.races(limit)
    assert views.cached.cache_info().entries == 4
    views.cached.races(10_000)  # longer than the public API's cap: not cached at all
    assert views.cached.cache_info().entries == 4
    views.cached.clear_cache()
    assert views.cached.cache_info().entries == 0


def test_each_arena_has_its_own_answers(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """Two arenas whose tables hold the same number of rows but other agents and other races: the
    races' keys are equal (same counts, no metagraph in them), the answers are not."""
    arenas = [
        make_racing(tmp_path / name, small_catalog_dir, job_bank, race_bank, race_records, miners=1)
        for name in ("one", "two")
    ]
    try:
        views = [Views(racing) for racing in arenas]
        for racing in arenas:
            racing.submit(racing.miners[0])
            racing.drain(outcome=by_miner({}))
        boards = [view.check()[0] for view in views]
        assert [[e.hotkey for e in board] for board in boards] == [[r.miners[0].hotkey] for r in arenas]
        for view in views:
            view.race_step()
        races = [view.check()[1] for view in views]
        assert races[0][0].seed_commitment != races[1][0].seed_commitment
    finally:
        for racing in arenas:
            racing.arena.close()
