"""`POST /v1/miner/submit` and `GET /v1/miner/submissions[/{id}]` through the real server: admission,
sizes, bad bodies, cooldowns, concurrency, ownership, results, and PostgreSQL behind it all."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import orjson
import pytest

from shoparena.admission import Violation, check_submission
from shoparena.arena import ProblemResultIn, ResultIn
from shoparena.arena.codestore import code_sha256
from tests.arena.arena_helpers import BANNED, BENIGN, Key, make_arena, parallel
from tests.arena.auth.test_auth_api import raw_request, refused, submit_body

MIB = 1024 * 1024


def submit(server, key: Key, code: bytes = BENIGN, name: str = "agent") -> httpx.Response:
    return server.signed("POST", "/v1/miner/submit", key, submit_body(code, name))


def status(server, key: Key, submission_id: str) -> httpx.Response:
    return server.signed("GET", f"/v1/miner/submissions/{submission_id}", key)


def test_benign_file_is_admitted_stored_and_queued(server, miner):
    response = submit(server, miner, name="my agent v1")
    assert response.status_code == 202, response.text
    answer = response.json()
    assert answer["status"] == "admitted" and answer["code_sha256"] == code_sha256(BENIGN)
    assert server.arena.code.get(answer["code_sha256"]) == BENIGN
    view = status(server, miner, answer["submission_id"]).json()
    assert view["status"] == "queued" and view["name"] == "my agent v1" and view["code_size"] == len(BENIGN)
    assert view["violations"] == [] and view["results"] == []
    assert [e["status"] for e in view["events"]] == ["queued"]
    audit = server.arena.audit.entries(limit=1)[0]
    assert (audit.status, audit.reason, audit.submission_id) == (202, "ok", answer["submission_id"])


def test_banned_file_is_rejected_with_violations_and_a_short_cooldown(server, miner):
    response = submit(server, miner, BANNED)
    assert response.status_code == 422
    answer = response.json()
    assert answer["status"] == "rejected"
    violation = answer["violations"][0]
    assert set(violation) == {"rule", "kind", "line", "col", "message"}
    assert violation["kind"] == "security" and violation["line"] == 1
    view = status(server, miner, answer["submission_id"]).json()
    assert view["status"] == "rejected" and view["violations"] == answer["violations"]
    again = submit(server, miner)
    assert again.status_code == 429
    assert 590 <= again.json()["retry_after_s"] <= 600  # security: the arena's shorter cooldown (600 s here)
    assert again.headers["Retry-After"] == str(again.json()["retry_after_s"])


@pytest.mark.parametrize(("kind", "cooldown"), [("integrity", 43200), ("security", 600), ("format", 60)])
def test_cooldown_by_kind_of_rejection(arena, server_factory, miner, kind, cooldown):
    def checker(code: bytes) -> list[Violation]:
        return [Violation(rule=f"{kind}.planted", kind=kind, line=2, col=0, message="planted by the test")]

    server = server_factory(arena, check=checker)
    assert submit(server, miner).status_code == 422
    retry = submit(server, miner).json()["retry_after_s"]
    assert cooldown - 10 <= retry <= cooldown
    server.clock.advance(cooldown + 1)
    assert submit(server, miner).status_code == 422  # the cooldown ended: a new submission is judged


def test_admitted_submission_starts_the_full_cooldown(server, miner, miner2):
    assert submit(server, miner).status_code == 202
    blocked = submit(server, miner)
    assert blocked.status_code == 429 and 43190 <= blocked.json()["retry_after_s"] <= 43200
    assert submit(server, miner2).status_code == 202  # per hotkey
    server.clock.advance(43200)
    assert submit(server, miner).status_code == 202
    assert len(server.arena.ledger.list_for(miner.hotkey)) == 2


def test_format_rejections(server, miner):
    response = submit(server, miner, b"def helper(:\n    pass\n")
    assert response.status_code == 422
    assert response.json()["violations"][0]["kind"] == "format"
    server.clock.advance(61)
    response = submit(server, miner, b"def main(x):\n    return x\n")
    assert response.json()["violations"][0]["rule"] == "format.agent_main"


def test_concurrent_submissions_of_one_hotkey_admit_exactly_one(server, miner):
    bodies = [submit_body(BENIGN + f"# v{i}\n".encode()) for i in range(10)]
    requests = [(body, miner.headers(body, "POST", "/v1/miner/submit")) for body in bodies]
    statuses = parallel(
        10,
        lambda i: (
            httpx.post(
                server.url + "/v1/miner/submit", content=requests[i][0], headers=requests[i][1], timeout=60
            ).status_code
        ),
    )
    assert sorted(statuses) == [202] + [429] * 9
    assert len(server.arena.ledger.list_for(miner.hotkey)) == 1


def test_declared_oversize_body_is_refused_before_it_is_sent(server, miner):
    headers = "".join(f"{k}: {v}\r\n" for k, v in miner.headers(b"", "POST", "/v1/miner/submit").items())
    request = (
        f"POST /v1/miner/submit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {50 * MIB}\r\n{headers}\r\n"
    ).encode()
    answer = raw_request(server.url, request)  # not one byte of the body is sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert server.arena.audit.entries(limit=1)[0].reason == "too_large"


def test_streamed_oversize_body_is_cut_off(server, miner):
    sent = []

    def chunks():
        for _ in range(64):  # 64 MiB offered, chunked: no Content-Length to refuse by
            sent.append(MIB)
            yield b" " * MIB

    body_for_signature = b""
    try:
        response = server.http.post(
            "/v1/miner/submit",
            content=chunks(),
            headers=miner.headers(body_for_signature, "POST", "/v1/miner/submit"),
        )
        assert response.status_code == 413
    except httpx.HTTPError:
        pass  # the server may close the connection while the client is still sending
    assert server.arena.audit.entries(limit=1)[0].reason == "too_large"
    assert len(sent) < 64


def test_code_over_one_mib_is_413_even_within_the_body_cap(server, miner):
    code = b"# " + b"x" * MIB + b"\ndef agent_main(problem_data):\n    return []\n"
    response = submit(server, miner, code)
    assert response.status_code == 413 and "code is" in response.json()["message"]
    assert server.arena.ledger.list_for(miner.hotkey) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"name": "a", "code": 42}', "code"),
        (b'{"name": "a", "code": ["x"]}', "code"),
        (b'{"code": "def agent_main(p): pass"}', "name"),
        (b'{"name": "a", "code": "x", "extra": 1}', "extra"),
        (b'{"name": "", "code": "x"}', "name"),
        (b'{"name": "a\\u0000b", "code": "x"}', "name"),
        (b'{"name": "a", "code": "\\ud800"}', "surrogate"),  # not text: refused by the JSON parser
        (b'{"name": "a", "code": "x"', "not JSON"),
        (b'\xff\xfe{"name": "a"}', "not JSON"),
    ],
)
def test_bad_bodies_are_400(server, miner, body, message):
    response = server.signed("POST", "/v1/miner/submit", miner, body)
    assert response.status_code == 400, response.text
    assert message in response.json()["message"]
    assert server.arena.ledger.list_for(miner.hotkey) == []


def test_submissions_are_private_to_their_miner(server, miner, miner2, validator):
    submission_id = submit(server, miner).json()["submission_id"]
    assert status(server, miner, submission_id).status_code == 200
    other = status(server, miner2, submission_id)
    assert other.status_code == 404 and other.json()["error"] == "not_found"
    refused(status(server, validator, submission_id), "wrong_role")
    for bad in ("0" * 32, "x" * 200, "..%2F..%2Fetc", submission_id.upper()):
        assert status(server, miner, bad).status_code == 404
    listed = server.signed("GET", "/v1/miner/submissions", miner).json()
    assert [s["submission_id"] for s in listed] == [submission_id]
    assert server.signed("GET", "/v1/miner/submissions", miner2).json() == []


def test_scored_submission_shows_results(server, miner, validator):
    submission_id = submit(server, miner).json()["submission_id"]
    ledger = server.arena.ledger
    ledger.add_event(submission_id, "running", actor=validator.hotkey, job_id="job-1")
    assert status(server, miner, submission_id).json()["status"] == "running"
    problems = [
        ProblemResultIn(problem_id="p1", bucket="product", success=True, rule_score=1.0, judge_quality=0.9),
        ProblemResultIn(problem_id="p2", bucket="voucher", success=False, rule_score=0.25, judge_quality=0.7),
    ]
    ledger.add_result(
        ResultIn(
            submission_id=submission_id,
            job_id="job-1",
            validator_hotkey=validator.hotkey,
            scoring_pipeline_version="prod-strict-1",
            problems=problems,
        )
    )
    view = status(server, miner, submission_id).json()
    assert view["status"] == "scored"
    result = view["results"][0]
    assert (result["asr"], result["successes"], result["problems"]) == (0.5, 1, 2)
    assert result["judge_quality"] == pytest.approx(0.8) and result["coefficient"] == 1.0
    assert result["final_score"] == pytest.approx(0.5)
    assert [p["problem_id"] for p in result["per_problem"]] == ["p1", "p2"]
    assert result["per_problem"][1]["rule_score"] == 0.25


def test_end_to_end_on_postgresql(tmp_path, small_catalog_dir, problems_file, server_factory, pg_store_url):
    miner = Key()
    arena = make_arena(
        tmp_path / "arena", small_catalog_dir, problems_file, {"miner": [miner]}, store=pg_store_url
    )
    try:
        assert arena.store.dialect == "postgresql"
        server = server_factory(arena)
        answer = submit(server, miner).json()
        assert status(server, miner, answer["submission_id"]).json()["status"] == "queued"
        assert submit(server, miner).status_code == 429
        refused(server.signed("GET", "/v1/whoami", Key()), "unknown_hotkey")
        assert [e.reason for e in arena.audit.entries()] == ["unknown_hotkey", "cooldown", "ok"]
    finally:
        arena.close()


def test_the_admission_interface_the_server_calls():
    assert check_submission(BENIGN) == []
    violation = check_submission(BANNED)[0]
    assert (violation.kind, violation.line) == ("security", 1)
    assert check_submission(b"\xff\xfe")[0].rule == "format.encoding"
    assert check_submission(b"x" * (MIB + 1))[0].rule == "format.size"


def test_next_submission_time_is_reported(server, miner):
    answer = submit(server, miner).json()
    next_at = datetime.fromisoformat(answer["next_submission_at"])
    assert abs((next_at - datetime.now(UTC)).total_seconds() - 43200) < 30
    assert orjson.loads(orjson.dumps(answer))["status"] == "admitted"


def test_refusal_before_the_body_closes_the_connection(server, miner):
    stranger = Key()
    body = submit_body()
    response = server.http.post(
        "/v1/miner/submit", content=body, headers=stranger.headers(body, "POST", "/v1/miner/submit")
    )
    assert response.status_code == 401 and response.headers["connection"] == "close"
    accepted = server.signed("GET", "/v1/whoami", miner)
    assert accepted.headers.get("connection") != "close"  # keep-alive for good requests
