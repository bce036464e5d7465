"""Test fixtures for the public API and the leaderboard page: `MemoryCompetition`, a
`CompetitionReader` over lists the test fills with real competition records, and `Season`, a small
scripted state of the competition over a real arena (real ledger rows, real code in the code store).

The reader is a test fixture, not the arena's implementation (that is `competition.view`): it lets
these tests pin exactly what the API and the page must show for a given state.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from shoparena.arena.competition.models import (
    AgentDetail,
    AgentRaceResult,
    BucketScore,
    Freshness,
    LeaderboardEntry,
    Race,
    RaceResult,
    WeightVector,
)

XSS_NAME = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
XSS_HOTKEY = '"><img src=x onerror=alert(2)>'
T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


class MemoryCompetition:
    """A CompetitionReader over in-memory records (a test fixture); it notes the limits it was asked."""

    def __init__(self) -> None:
        self.entries: list[LeaderboardEntry] = []
        self.race_list: list[Race] = []
        self.agents: dict[str, AgentDetail] = {}
        self.weight: WeightVector | None = None
        self.fresh: Freshness | None = None
        self.asked_limits: list[int] = []

    def leaderboard(self) -> list[LeaderboardEntry]:
        return list(self.entries)

    def races(self, limit: int = 50) -> list[Race]:
        self.asked_limits.append(limit)
        return self.race_list[:limit]

    def race(self, race_id: str) -> Race | None:
        return next((race for race in self.race_list if race.race_id == race_id), None)

    def agent(self, submission_id: str) -> AgentDetail | None:
        return self.agents.get(submission_id)

    def weights(self) -> WeightVector | None:
        return self.weight

    def freshness(self) -> Freshness | None:
        return self.fresh


def commitment(seed: str) -> str:
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()


def submit_code(arena, hotkey: str, name: str, code: bytes, now: datetime) -> str:
    """A real submission: code into the arena's code store, a row in its ledger; returns its id."""
    sha256 = arena.code.put(code)
    return arena.ledger.record(
        hotkey=hotkey,
        name=name,
        code_sha256=sha256,
        code_size=len(code),
        violations=[],
        cooldown_s=0,
        now=now,
    )


@dataclass
class Season:
    """Three agents (the crowned one, a challenger with an attacker's name, one never raced), a
    complete race and a running one, and weights."""

    reader: MemoryCompetition
    champion: str
    challenger: str
    rookie: str
    codes: dict[str, bytes] = field(default_factory=dict)
    release_at: datetime = T0 + timedelta(days=1)
    complete_seed: str = "seed-of-race-1"
    running_seed: str = "seed-of-race-2"


def result(hotkey: str, uid: int, submission_id: str, score: float, name: str | None = None) -> RaceResult:
    return RaceResult(
        name=name,
        hotkey=hotkey,
        uid=uid,
        submission_id=submission_id,
        score=score,
        success_rate=min(1.0, score + 0.1),
        judge_coefficient=0.9,
        submitted_at=T0 - timedelta(days=2),
    )


def build_season(arena, champion_key: str, challenger_key: str, rookie_key: str) -> Season:
    """The scripted state over `arena`, whose metagraph holds the three hotkeys."""
    codes = {}
    ids = []
    for index, (hotkey, name) in enumerate(
        ((champion_key, "steady-pipeline"), (challenger_key, XSS_NAME), (rookie_key, "rookie"))
    ):
        code = f'"""agent {index}"""\n\n\ndef agent_main(problem_data):\n    return []\n'.encode()
        submission_id = submit_code(arena, hotkey, name, code, T0 - timedelta(days=3, minutes=index))
        codes[submission_id] = code
        ids.append(submission_id)
    champion, challenger, rookie = ids
    reader = MemoryCompetition()
    season = Season(reader, champion, challenger, rookie, codes)
    complete = Race(
        race_id="race-0001",
        state="RACE_COMPLETE",
        opened_at=T0 - timedelta(days=1),
        closed_at=T0,
        rotation_period=0,
        rotation_sha256="ab" * 32,
        seed_commitment=commitment(season.complete_seed),
        seed=season.complete_seed,
        problem_ids=["p-001", "p-002", "p-003"],
        race_clusters=["c-7"],
        open_clusters=["c-1", "c-2"],
        results=[
            result(champion_key, 1, champion, 0.71, "steady-pipeline"),
            result(challenger_key, 2, challenger, 0.64, XSS_NAME),
        ],
        incumbent_before=None,
        winner=champion_key,
        winner_submission_id=champion,
        winner_name="steady-pipeline",
        promoted=True,
        code_release_at=season.release_at,
    )
    running = Race(  # the reader hands over its secrets: the API must withhold them anyway
        race_id="race-0002",
        state="RACE_RUNNING",
        opened_at=T0 + timedelta(hours=1),
        rotation_period=0,
        rotation_sha256="ab" * 32,
        seed_commitment=commitment(season.running_seed),
        seed=season.running_seed,
        problem_ids=["p-secret-1", "p-secret-2"],
        race_clusters=["c-secret"],
        open_clusters=["c-1", "c-2"],
        incumbent_before=champion_key,
    )
    reader.race_list = [running, complete]
    reader.entries = [
        LeaderboardEntry(
            rank=1, hotkey=champion_key, uid=1, submission_id=champion, name="steady-pipeline",
            score=0.71, success_rate=0.8, judge_coefficient=0.9, incumbent=True, races=1, weight=0.25,
        ),
        LeaderboardEntry(
            rank=2, hotkey=challenger_key, uid=2, submission_id=challenger, name=XSS_NAME,
            score=0.64, success_rate=0.74, judge_coefficient=0.85, incumbent=False, races=1, weight=0.0,
        ),
    ]  # fmt: skip
    reader.agents = {
        champion: AgentDetail(
            submission_id=champion,
            hotkey=champion_key,
            uid=1,
            name="steady-pipeline",
            status="scored",
            qualified=True,
            qualifying_score=0.66,
            qualify_threshold=0.2,
            race_scores=[AgentRaceResult(**complete.results[0].model_dump(), race_id=complete.race_id)],
            by_bucket=[
                BucketScore(bucket="product", problems=10, success_rate=0.9),
                BucketScore(bucket="voucher", problems=5, success_rate=0.4),
            ],
            by_axis={"relevance": 0.8, "price": 0.6},
            judge_quality={"0.9": 6, "0.5": 3, "0.1": 1},
            incumbent=True,
            code_release_at=season.release_at,
        ),
        challenger: AgentDetail(
            submission_id=challenger, hotkey=challenger_key, uid=2, name=XSS_NAME, status="scored",
            qualified=True, qualifying_score=0.6, qualify_threshold=0.2,
            race_scores=[AgentRaceResult(**complete.results[1].model_dump(), race_id=complete.race_id)],
        ),
        rookie: AgentDetail(
            submission_id=rookie, hotkey=rookie_key, uid=None, name="rookie", status="queued",
            qualified=None, qualifying_score=None,
        ),
    }  # fmt: skip
    reader.weight = WeightVector(race_id="race-0001", uids=[0, 1, 2], weights=[0.5, 0.25, 0.25])
    return season
