"""`AppThread`: an app served from a background thread; stopping it mid-request is quiet, not a crash."""

from __future__ import annotations

import logging
import threading

import httpx
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from shoparena.harness import loopback
from shoparena.harness.loopback import AppThread


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_request_cancelled_by_a_forced_stop_is_not_logged_as_an_error(monkeypatch):
    monkeypatch.setattr(loopback, "STOP_GRACE_S", 0.2)
    entered, release = threading.Event(), threading.Event()
    app = FastAPI()

    @app.get("/slow")
    async def slow() -> dict:
        entered.set()
        await run_in_threadpool(release.wait, 10)
        return {}

    @app.get("/broken")
    async def broken() -> dict:
        raise RuntimeError("a real bug")

    server = AppThread(app).start()
    collect = Collect()
    logging.getLogger("uvicorn.error").addHandler(collect)
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(httpx.get(f"{server.url}/slow", timeout=10).status_code)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    try:
        assert httpx.get(f"{server.url}/broken", timeout=10).status_code == 500
        caller.start()
        assert entered.wait(10)
        server.stop()  # past the grace: uvicorn cancels the request in flight
    finally:
        release.set()
        caller.join(10)
        logging.getLogger("uvicorn.error").removeHandler(collect)
    errors = [r for r in collect.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "a real bug" in str(errors[0].exc_info[1])  # real errors still show
    assert outcome and outcome[0] != 200
