"""Axis A: the model decides every tool call. A chat loop through the arena's inference proxy
(`miner_sdk.chat`, the offline `reference-agentic` model): each tool call the model emits is run as is,
so the arena verifies it as `llm`, and its result goes back into the conversation."""

import json

import miner_sdk

MODEL = "reference-agentic"
MAX_TURNS = 14
KEEP_REASONING = False  # send the model's reasoning back with its turns (the loop's distilled model)
SYSTEM = (
    "You are a shopping assistant. Find the products the customer describes with the tools you have, "
    "check their attributes and prices, recommend the best match and terminate."
)


def run_calls(message):
    recorded, results, ended = [], [], False
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        reply = miner_sdk.call_tool(function.get("name"), origin="llm", call_id=call.get("id"), **arguments)
        recorded.append(
            {"name": function.get("name"), "parameters": arguments, "tool_call_id": reply["call_id"]}
        )
        results.append(miner_sdk.tool_message(reply))  # the real result: the proxy verifies it
        ended = ended or bool(reply.get("ended"))
        if ended:
            break
    return recorded, results, ended


def agent_main(problem_data):
    tools = miner_sdk.list_tools()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": problem_data["query"]}]
    steps = []
    for _ in range(MAX_TURNS):
        message = miner_sdk.chat(messages, tools=tools, model=MODEL)["choices"][0]["message"]
        turn = {
            "role": "assistant",
            "content": message.get("content") or "",
            "tool_calls": message.get("tool_calls"),
        }
        if KEEP_REASONING and message.get("reasoning_content"):
            turn["reasoning_content"] = message["reasoning_content"]
        messages.append(turn)
        recorded, results, ended = run_calls(message)
        messages.extend(results)
        steps.append(
            {
                "completion": {
                    "message": {
                        "think": message.get("reasoning_content") or "",
                        "tool_call": recorded,
                        "response": message.get("content") or "",
                    }
                }
            }
        )
        if ended or not recorded:
            break
    else:
        miner_sdk.call_tool("terminate", status="failure")  # out of turns: end the episode honestly
    return steps
