"""`arena serve --workers 2` on PostgreSQL: two worker processes behind one port, each running the race
scheduler, under concurrent signed submissions, claims and result posts. Nothing is lost or doubled,
and one process ticks the races. On SQLite more than one worker is refused."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from sqlalchemy import select

from shoparena.arena.canonical import canonical_record, problem_outcome
from shoparena.arena.models import ResultPost
from shoparena.arena.participants.client import ArenaClient
from shoparena.arena.schema import JobLease, RaceEvent, SubmissionResult
from tests.arena.competition.race_helpers import make_racing
from tests.arena.test_arena_cli import free_port, invoke

MINERS = 6
SHOPARENA = str(Path(sys.executable).with_name("shoparena"))


def _wait_for(url: str, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"the server at {url} did not answer within {seconds:g} s: {log.read_text()}")


def _both_workers_started(log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.read_text().count("Application startup complete") == 2:
            return
        time.sleep(0.1)
    raise AssertionError(f"two workers did not start within {seconds:g} s: {log.read_text()}")


def _open_race(url: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if httpx.get(f"{url}/v1/races", timeout=5).json():
            return
        time.sleep(0.2)
    raise AssertionError(f"no race opened within {seconds:g} s")


def test_two_workers_on_postgresql_lose_and_double_nothing(
    tmp_path, small_catalog_dir, job_bank, race_bank, race_records, pg_store_url
):
    racing = make_racing(
        tmp_path, small_catalog_dir, job_bank, race_bank, race_records, miners=MINERS, store=pg_store_url,
        qualifying_quorum=1,  # one validator a qualifying job: every job is leased and evaluated once
    )  # fmt: skip
    arena = racing.arena
    # The bank arrives once both workers run: without the ticker lock both would open the first race.
    bank = arena.dir / "race_bank.jsonl"
    held_back = bank.rename(tmp_path / "race_bank.jsonl")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "serve.log"
    command = [SHOPARENA, "arena", "serve", "--dir", str(arena.dir), "--port", str(port), "--workers", "2",
               "--tick-s", "0.1", "--log-level", "info"]  # fmt: skip
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    submitted_all = threading.Event()
    try:
        _wait_for(url, log_path)
        _both_workers_started(log_path)
        held_back.rename(bank)
        _open_race(url)

        def submit(index: int) -> str:
            miner = racing.miners[index]
            code = racing.code + f"\n# variant {index}\n"
            with ArenaClient(url, miner.keypair) as client:  # a connection of its own: any worker
                answer = client.submit(f"agent{index}.py", code)
            assert answer.status == "admitted", answer
            return answer.submission_id

        def validate(index: int) -> list[tuple[str, str]]:
            validator = racing.validators[index]
            done: list[tuple[str, str]] = []
            idle_since = None
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                with ArenaClient(url, validator.keypair) as client:
                    offer = client.claim()
                    if offer is None:
                        idle_since = idle_since or time.monotonic()
                        if submitted_all.is_set() and time.monotonic() - idle_since > 1.5:
                            return done
                        time.sleep(0.05)
                        continue
                    idle_since = None
                    assert client.code(offer.lease_id)[1] == offer.code_sha256
                    records = [
                        canonical_record(racing.records[problem["problem_id"]], offer, validator.hotkey)
                        for problem in offer.problems
                    ]
                    post = (
                        ResultPost(
                            lease_id=offer.lease_id,
                            job_id=offer.job_id,
                            outcomes=[problem_outcome(record) for record in records],
                            records=records,
                        )
                        .model_dump_json()
                        .encode()
                    )
                    first = client.request("POST", "/v1/validator/result", post)
                    again = client.request("POST", "/v1/validator/result", post)
                    assert (first.status_code, again.status_code) == (201, 200), first.text
                    done.append((offer.job_id, offer.submission_id))
            raise AssertionError(f"validator {index} still had work after 90 s")

        with ThreadPoolExecutor(MINERS + len(racing.validators)) as pool:
            checking = [pool.submit(validate, i) for i in range(len(racing.validators))]
            submitting = [pool.submit(submit, i) for i in range(MINERS)]
            submission_ids = [future.result() for future in submitting]
            submitted_all.set()
            evaluated = [pair for future in checking for pair in future.result()]
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = log_path.read_text()

    # Both workers served; one of them, and only one, took the ticker lock and opened the race (as the
    # workers stop one after the other, the last may take the lock over: by design, so not counted).
    serving = output.split("Received SIGTERM")[0]
    assert serving.count("Started server process") == 2, output
    assert serving.count("holds the ticker lock") == 1, output
    assert output.count("races: opened race-00001") == 1, output
    assert "tick failed" not in output, output
    with arena.store.engine.connect() as connection:
        events = connection.execute(select(RaceEvent.race_id, RaceEvent.state)).all()
        leases = Counter(connection.execute(select(JobLease.job_id)).scalars())
        results = Counter(connection.execute(select(SubmissionResult.job_id)).scalars())
    assert events and max(Counter(events).values()) == 1, events

    # Every submission stored once; every job leased once, evaluated once, its result stored once.
    assert len(set(submission_ids)) == MINERS
    stored = [view.submission_id for miner in racing.miners for view in arena.ledger.list_for(miner.hotkey)]
    assert sorted(stored) == sorted(submission_ids)
    assert sorted(submission for _job, submission in evaluated) == sorted(submission_ids)
    jobs = [job for job, _submission in evaluated]
    assert set(leases) == set(jobs) and set(leases.values()) == {1}, leases
    assert set(results) == set(jobs) and set(results.values()) == {1}, results
    assert {arena.ledger.get(submission).status for submission in submission_ids} == {"scored"}


def test_several_workers_are_refused_on_sqlite(racing):
    result = invoke("arena", "serve", "--dir", racing.arena.dir, "--workers", "2")
    assert result.exit_code == 2, result.output
    assert "--workers 2 needs the arena's state on PostgreSQL" in result.output
    assert "sqlite" in result.output


def test_tickers_take_turns_on_the_ticker_lock(
    tmp_path, small_catalog_dir, job_bank, race_bank, race_records, pg_store_url
):
    """Two `arena ticker` processes: one holds the lock and opens the race, the other waits; when the
    holder dies its session (and lock) goes, and the other takes over within a period."""
    racing = make_racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records, store=pg_store_url)
    logs = [tmp_path / f"ticker{i}.log" for i in range(2)]
    tickers = []
    for log_path in logs:
        with log_path.open("wb") as log:
            command = [SHOPARENA, "arena", "ticker", "--dir", str(racing.arena.dir), "--tick-s", "0.1"]
            tickers.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all("advancing the races" in p.read_text() for p in logs):
            time.sleep(0.1)
        time.sleep(1.0)  # ten periods for the waiting ticker to (wrongly) take the lock
        holding = [i for i, path in enumerate(logs) if "holds the ticker lock" in path.read_text()]
        assert len(holding) == 1, [path.read_text() for path in logs]
        holder, waiter = holding[0], 1 - holding[0]
        assert "races: opened race-00001" in logs[holder].read_text()
        tickers[holder].kill()
        tickers[holder].wait(timeout=20)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "holds the ticker lock" not in logs[waiter].read_text():
            time.sleep(0.1)
        assert "holds the ticker lock" in logs[waiter].read_text(), logs[waiter].read_text()
    finally:
        for ticker in tickers:
            ticker.terminate()
            ticker.wait(timeout=20)
    assert "races: opened" not in logs[waiter].read_text()  # the race it found open was not due to move


def test_a_tick_by_hand_is_refused_while_a_scheduler_holds_the_lock(
    tmp_path, small_catalog_dir, job_bank, race_bank, race_records, pg_store_url
):
    """`arena race tick` (cron) beside a running server's scheduler would open the same race twice;
    it takes the ticker lock too, so it does nothing while another process holds it."""
    from shoparena.arena.competition.scheduler import TickerLock

    racing = make_racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records, store=pg_store_url)
    holder = TickerLock(racing.arena.store.engine)
    assert holder.held()
    try:
        result = invoke("arena", "race", "tick", "--dir", racing.arena.dir)
        assert result.exit_code == 1, result.output
        assert "another process holds this arena's ticker lock" in result.output
        with racing.arena.store.engine.connect() as connection:
            assert connection.execute(select(RaceEvent)).all() == []
    finally:
        holder.release()
    result = invoke("arena", "race", "tick", "--dir", racing.arena.dir)
    assert result.exit_code == 0, result.output
    assert "opened race-00001" in result.output
