"""A miner that asks the arena's served checkpoint (`shoparena-distilled`) for each turn, runs the
tool calls it answers exactly as given and feeds the results back, for at most three turns."""

import json

import miner_sdk


def agent_main(problem_data):
    tools = miner_sdk.list_tools()
    messages = [{"role": "user", "content": problem_data["query"]}]
    steps = []
    for _ in range(3):
        response = miner_sdk.chat(messages, tools=tools, model="shoparena-distilled", max_tokens=8)
        message = response["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            break
        done = []
        for call in calls:
            name = call["function"]["name"]
            arguments = json.loads(call["function"]["arguments"])
            result = miner_sdk.call_tool(name, **arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result["text"]})
            done.append({"name": name, "parameters": arguments, "tool_call_id": result["call_id"]})
        steps.append(
            {"completion": {"message": {"think": message.get("reasoning_content"), "tool_call": done}}}
        )
    return steps
