"""The page routes: `/`, `/agents/{submission_id}`, `/races/{race_id}`, `/weights`, `/firehose` (the
HTML views of `/v1/weights` and `/v1/trajectories`, whose JSON stays as it is) and the two static files.

Each route reads the competition through the reader, shapes what the templates need (bars, release
state, links) here rather than in template logic, and renders with autoescaping. Handlers are plain
functions, so FastAPI runs them in its thread pool (the reader may block on the database).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, urlencode

import orjson
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape
from pydantic import ValidationError

from shoparena import __version__
from shoparena.arena.api.public import plausible_submission_id, sealed
from shoparena.arena.api.services import ArenaServices, Services
from shoparena.arena.competition.firehose import BadCursor, read_page
from shoparena.arena.competition.models import AgentDetail, Race
from shoparena.arena.errors import ArenaError
from shoparena.store import RecordFilter

HERE = Path(__file__).parent
STATIC = {
    "site.css": ("text/css; charset=utf-8", (HERE / "static" / "site.css").read_bytes()),
    "site.js": ("text/javascript; charset=utf-8", (HERE / "static" / "site.js").read_bytes()),
}
RECENT_RACES = 10
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
BAR_WIDTH = 240
"""Pixels of a full (1.0) bar."""
QUALITY_CHART_HEIGHT = 80


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(("html",), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = lambda value: "–" if value is None else f"{value:.3f}"
    env.filters["pct"] = lambda value: "–" if value is None else f"{100 * value:.1f}%"
    env.filters["short"] = lambda text, n=12: text if len(text) <= n else f"{text[: n - 1]}…"
    env.filters["when"] = lambda value: "–" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")
    env.filters["iso"] = lambda value: value.isoformat(timespec="seconds") if value else ""
    env.filters["path"] = lambda value: quote(value, safe="")
    env.filters["breakable"] = breakable
    env.filters["query"] = lambda value: quote(value, safe=":")
    return env


def breakable(text: str) -> Markup:
    """The text escaped, with a line-break opportunity after each `_ : . - /` (long agent names wrap at
    their parts in narrow table cells, not in the middle of a word)."""
    return Markup(re.sub(r"([_:.\-/])", r"\1<wbr>", str(escape(text))))


def bar(value: float | None, width: int = BAR_WIDTH) -> int:
    """Pixels for a score in [0, 1] (0 for none)."""
    return 0 if value is None else round(max(0.0, min(1.0, value)) * width)


def quality_chart(judge_quality: dict[str, int]) -> list[dict]:
    """One column per judge quality level, highest count = full height, levels in numeric order."""
    levels = sorted(judge_quality.items(), key=lambda item: _as_float(item[0]))
    top = max((count for _level, count in levels), default=0)
    columns = []
    for index, (level, count) in enumerate(levels):
        height = round(QUALITY_CHART_HEIGHT * count / top) if top else 0
        columns.append({"level": level, "count": count, "x": 8 + index * 36, "height": height})
    return columns


def _as_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")


def code_state(detail: AgentDetail, now: datetime) -> str:
    """released | embargoed | never."""
    if detail.code_release_at is None:
        return "never"
    return "released" if now >= detail.code_release_at else "embargoed"


ENV = _environment()
web_router = APIRouter()


def render(services: ArenaServices, template: str, status: int = 200, **context) -> HTMLResponse:
    context.setdefault("now", services.now())
    title = services.arena.dir.name or "arena"
    page = ENV.get_template(template).render(arena_name=title, version=__version__, **context)
    return HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS)


def guarded(services: ArenaServices, make: Callable[[], HTMLResponse]) -> HTMLResponse:
    try:
        return make()
    except ArenaError as exc:
        return render(
            services, "error.html", 503, heading="The arena cannot serve this page now", detail=str(exc)
        )


@web_router.get("/", response_class=HTMLResponse)
def index(services: Services) -> HTMLResponse:
    def make() -> HTMLResponse:
        board = services.reader.leaderboard()
        entries = [entry for entry in board if not entry.provisional]
        provisional = [entry for entry in board if entry.provisional]
        races: list[Race] = [sealed(race) for race in services.reader.races(RECENT_RACES)]
        incumbent = next((entry for entry in entries if entry.incumbent), None)
        fresh = services.reader.freshness()
        return render(
            services,
            "index.html",
            entries=entries,
            provisional=provisional,
            incumbent=incumbent,
            races=races,
            bar=bar,
            fresh=fresh,
            arena_dir=services.arena.dir.name or "ARENA",
        )

    return guarded(services, make)


@web_router.get("/agents/{submission_id}", response_class=HTMLResponse)
def agent_page(services: Services, submission_id: str) -> HTMLResponse:
    def make() -> HTMLResponse:
        reader = services.reader
        detail = reader.agent(submission_id) if plausible_submission_id(submission_id) else None
        if detail is None:
            return render(
                services,
                "error.html",
                404,
                heading="No such agent",
                detail=f"There is no submission {submission_id[:80]} in this arena.",
            )
        return render(
            services,
            "agent.html",
            agent=detail,
            bar=bar,
            quality=quality_chart(detail.judge_quality),
            quality_height=QUALITY_CHART_HEIGHT,
            code=code_state(detail, services.now()),
        )

    return guarded(services, make)


@web_router.get("/races/{race_id}", response_class=HTMLResponse)
def race_page(services: Services, race_id: str) -> HTMLResponse:
    def make() -> HTMLResponse:
        found = services.reader.race(race_id)
        if found is None:
            return render(
                services,
                "error.html",
                404,
                heading="No such race",
                detail=f"There is no race {race_id[:80]}.",
            )
        return render(services, "race.html", race=sealed(found), bar=bar)

    return guarded(services, make)


@web_router.get("/weights", response_class=HTMLResponse)
def weights_page(services: Services) -> HTMLResponse:
    """`GET /v1/weights` for people: the latest consensus weights by uid (with the agent holding each
    uid, where the ranking names one), or why there are none yet and what starts them."""

    def make() -> HTMLResponse:
        reader = services.reader
        found = reader.weights()
        holders = {entry.uid: entry for entry in reader.leaderboard() if entry.uid is not None}
        rows = []
        if found is not None:
            for uid, weight in sorted(zip(found.uids, found.weights, strict=True), key=lambda kv: -kv[1]):
                rows.append({"uid": uid, "weight": weight, "holder": holders.get(uid)})
        races = reader.races(1)
        return render(
            services,
            "weights.html",
            weights=found,
            rows=rows,
            fresh=reader.freshness(),
            latest=sealed(races[0]) if races else None,
            burn_uid=services.arena.config.competition.burn_uid,
            arena_dir=services.arena.dir.name or "ARENA",
            bar=bar,
        )

    return guarded(services, make)


FIREHOSE_PAGE = 20
"""Records per page of the firehose's HTML view (the JSONL endpoint serves up to `MAX_LIMIT`)."""


def firehose_row(line: bytes) -> dict:
    """What the firehose page shows of one canonical record (its JSONL line)."""
    record = orjson.loads(line)
    agent, problem = record.get("agent") or {}, record.get("problem") or {}
    score, outcome, judge = record.get("score") or {}, record.get("outcome") or {}, record.get("judge") or {}
    spec = agent.get("spec") or ""
    return {
        "record_id": record.get("record_id", ""),
        "agent": spec,
        "submission_id": spec.removeprefix("arena:") if spec.startswith("arena:") else None,
        "problem_id": problem.get("problem_id") or "",
        "bucket": problem.get("bucket") or "",
        "success": score.get("success"),
        "rule": score.get("rule"),
        "quality": judge.get("quality"),
        "steps": outcome.get("steps_used"),
        **firehose_end(score.get("success"), outcome),
        "validator": record.get("validator_hotkey") or "",
    }


def firehose_end(success: bool | None, outcome: dict) -> dict:
    """The End cell: the outcome the validator's harness scored first (`end`), then how the episode
    ended as secondary text (`end_note`). An agent's `terminate` status is its own word (a miner can
    make it say "success" on a failure), so it is labelled as the agent's and never reads as the
    outcome; an error or a harness stop (step cap, time-out) is the harness's and shows as such."""
    verdict = "–" if success is None else ("succeeded" if success else "failed")
    if error := outcome.get("error"):
        return {"end": f"{verdict}: {error}", "end_note": ""}
    reason = outcome.get("end_reason") or ""
    if reason and outcome.get("terminated") is not None:
        reason = f"agent said: {reason}"
    return {"end": verdict, "end_note": reason}


@web_router.get("/firehose", response_class=HTMLResponse)
def firehose_page(
    services: Services, since: str | None = None, agent: str | None = None, miner: str | None = None
) -> HTMLResponse:
    """`GET /v1/trajectories` for people: a page of the firehose's records as a table, the link to the
    same page as JSONL and to the next page; filters and cursors are the JSONL endpoint's."""

    def make() -> HTMLResponse:
        filters = {key: value for key, value in (("agent", agent), ("miner", miner)) if value}
        try:
            page = read_page(services.arena.store, since, FIREHOSE_PAGE, RecordFilter(**filters))
        except (BadCursor, ValidationError) as exc:
            return render(services, "error.html", 400, heading="Not a firehose page", detail=str(exc))
        rows = [firehose_row(line) for line in page.body.splitlines() if line]
        ledger = services.arena.ledger
        names = {}  # each agent by the name its miner gave it, as every other page shows it
        for sid in {row["submission_id"] for row in rows if row["submission_id"]}:
            if (view := ledger.get(sid)) is not None:
                names[sid] = view.name
        for row in rows:
            row["name"] = names.get(row["submission_id"])
        here = {**({"since": since} if since else {}), **filters, "limit": FIREHOSE_PAGE}
        following = urlencode({"since": page.next_cursor, **filters})
        return render(
            services,
            "firehose.html",
            rows=rows,
            filters=filters,
            more=page.more,
            jsonl=f"/v1/trajectories?{urlencode(here)}",
            next_page=f"/firehose?{following}",
            started=bool(since),
        )

    return guarded(services, make)


@web_router.get("/static/{name}")
def static(name: str) -> Response:
    found = STATIC.get(name)
    if found is None:
        return Response(b"not found\n", status_code=404, media_type="text/plain")
    media_type, data = found
    headers = {"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}
    return Response(data, media_type=media_type, headers=headers)
