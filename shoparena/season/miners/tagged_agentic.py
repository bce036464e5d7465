"""Axis A in ShoppingBench's text protocol: the model (the offline `reference-agentic-tags`, through the
inference proxy) answers with `<think>` and a `<tool_call>[…]</tool_call>` list in plain text; this
file parses the tags, runs every call the model wrote (so the arena verifies them as `llm`) and sends
each result back as a `tool` message (`miner_sdk.tool_message`: the real result, which the proxy
verifies, so the model's choices from it stay the model's). The reference_agentic miner's
resubmission: only calls a model really emitted count as the model's."""

import json
import re

import miner_sdk

MODEL = "reference-agentic-tags"
MAX_TURNS = 14
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
THINK = re.compile(r"<think>\s*(.*?)\s*</think>", re.S)


def tagged_calls(text):
    calls = []
    for body in TOOL_CALL.findall(text or ""):
        try:
            items = json.loads(body)
        except json.JSONDecodeError:
            continue
        for item in items if isinstance(items, list) else [items]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                calls.append((item["name"], item.get("parameters") or item.get("arguments") or {}))
    return calls


def agent_main(problem_data):
    messages = [{"role": "user", "content": problem_data["query"]}]
    steps = []
    for _ in range(MAX_TURNS):
        text = miner_sdk.chat(messages, model=MODEL)["choices"][0]["message"].get("content") or ""
        messages.append({"role": "assistant", "content": text})
        calls = tagged_calls(text)
        observations, recorded, ended = [], [], False
        for name, arguments in calls:
            reply = miner_sdk.call_tool(name, origin="llm", **arguments)
            recorded.append({"name": name, "parameters": arguments, "tool_call_id": reply["call_id"]})
            observations.append(miner_sdk.tool_message(reply))
            ended = ended or bool(reply.get("ended"))
            if ended:
                break
        think = THINK.search(text)
        steps.append(
            {"completion": {"message": {"think": think.group(1) if think else "", "tool_call": recorded}}}
        )
        if ended or not calls:
            break
        messages.extend(observations)
    else:
        miner_sdk.call_tool("terminate", status="failure")
    return steps
