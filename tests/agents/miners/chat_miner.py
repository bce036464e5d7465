"""A model-driven miner: asks the inference proxy's model for the next turn, runs the tool calls it
was given exactly as given, and feeds the results back, until the model stops calling tools."""

import json

import miner_sdk


def agent_main(problem_data):
    tools = miner_sdk.list_tools()
    messages = [{"role": "user", "content": problem_data["query"]}]
    steps = []
    for _ in range(40):
        response = miner_sdk.chat(messages, tools=tools, temperature=0)
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
            if result["ended"]:
                break
        steps.append(
            {"completion": {"message": {"think": message.get("reasoning_content"), "tool_call": done}}}
        )
        if result["ended"]:
            break
    return steps
