"""A subnet-style miner that asks `/inference/chat/completions` with OpenAI `tools` and reads native
`tool_calls` (as miners on SN15 do when their model supports function calling), executing each
through the template's `execute_tool_call` and recording steps with `create_dialogue_step`."""

import json

from src.agent.agent_interface import Tool, create_dialogue_step, execute_tool_call
from src.agent.proxy_client import ProxyClient

proxy = ProxyClient(max_retries=1)


def schema(name: str, description: str, **parameters: str) -> dict:
    properties = {key: {"type": kind} for key, kind in parameters.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


TOOLS = [
    schema(
        "find_product",
        "Search products",
        q="string",
        page="integer",
        shop_id="string",
        price="string",
        sort="string",
        service="string",
    ),
    schema("view_product_information", "Product details", product_ids="string"),
    schema("recommend_product", "Recommend products once", product_ids="string"),
    schema("terminate", "End the dialogue", status="string"),
]


@Tool
def find_product(
    q: str,
    page: int = 1,
    shop_id: str | None = None,
    price: str | None = None,
    sort: str | None = None,
    service: str | None = None,
) -> list[dict]:
    params = {"q": q, "page": page, "shop_id": shop_id, "price": price, "sort": sort, "service": service}
    return proxy.get("/search/find_product", params) or []


@Tool
def view_product_information(product_ids: str) -> list[dict]:
    return proxy.get("/search/view_product_information", {"product_ids": product_ids}) or []


@Tool
def recommend_product(product_ids: str) -> str:
    return f"Having recommended the products to the user: {product_ids}."


@Tool
def terminate(status: str = "success") -> str:
    return f"The interaction has been completed with status: {status}"


def agent_main(problem_data: dict) -> list[dict]:
    query = problem_data["query"]
    messages = [{"role": "user", "content": query}]
    steps = []
    for step in range(1, 20):
        body = {"model": "Qwen/Qwen3-32B-TEE", "messages": messages, "tools": TOOLS, "temperature": 0}
        answer = proxy.post("/inference/chat/completions", json_data=body)
        if not answer:
            break
        message = answer["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
        results = []
        for call in calls:
            name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")
            try:
                result = execute_tool_call(name, arguments)
            except Exception as exc:  # as the template: the error is the observation
                result = {
                    "name": name,
                    "parameters": arguments,
                    "tool_call_id": call["id"],
                    "result": f"Error: {exc}",
                }
            results.append(result)
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result["result"])}
            )
        steps.append(create_dialogue_step(message.get("reasoning_content") or "", results, "", query, step))
        if not calls or any(c["function"]["name"] == "terminate" for c in calls):
            break
    return steps
