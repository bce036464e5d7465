"""A defensive agent: retries tool calls that never reached the server, with jittered backoff, and
logs what it does to stderr (the runner keeps a tail of it)."""

import logging
import os
import random
import sys
import time

import miner_sdk

RETRIES = int(os.getenv("AGENT_RETRIES", "3"))
BASE_DELAY_S = 0.2
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
log = logging.getLogger(os.path.basename("retry_backoff_agent"))
jitter = random.Random(7)


def call(name, **arguments):
    for attempt in range(RETRIES + 1):
        try:
            return miner_sdk.call_tool(name, **arguments)
        except miner_sdk.ToolServerError as exc:
            if attempt == RETRIES or exc.status not in (0, 502, 503):
                raise
            delay = BASE_DELAY_S * (2**attempt) * (1 + jitter.uniform(-0.25, 0.25))
            log.info("retrying %s in %.2fs after %s", name, delay, exc)
            time.sleep(delay)
    raise RuntimeError("unreachable")


def agent_main(problem_data):
    query = problem_data["query"]
    words = [w for w in query.replace(",", " ").split() if w.isalpha() and len(w) > 3]
    hits = []
    for width in (8, 5, 3):
        hits = call("find_product", q=" ".join(words[:width]))["result"] or []
        log.info("query of %d words: %d hits", width, len(hits))
        if hits:
            break
    chosen = hits[0]["product_id"] if hits else None
    if chosen:
        call("view_product_information", product_ids=chosen)
        call("recommend_product", product_ids=chosen)
    call("terminate", status="success" if chosen else "failure")
    return [{"completion": {"message": {"think": f"picked {chosen}"}}}]
