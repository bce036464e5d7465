"""A miner shaped like SN15's template agent (src/agent/agent.py), written for shoparena's tests.

Same structure and imports as the template: tools registered with `@Tool` that reach the search server
through `ProxyClient` (with its `default` sort/service handling and the shop-search fallbacks), a
ReAct loop asking `/inference/chat/completions` for `<think>` / `<tool_call>` / `<response>` tagged
answers under the template's default model, ids from `generate_tool_call_id`, the history replayed as
`<user>`, `<think>`, `<tool_call>`, `<obs>` tags, and steps made by `create_dialogue_step`.
"""

import json
import logging
import re
from os import getenv
from urllib.parse import quote_plus

from src.agent.agent_interface import Tool, create_dialogue_step, execute_tool_call, generate_tool_call_id
from src.agent.proxy_client import ProxyClient

logger = logging.getLogger(__name__)
MAX_STEPS = 25
proxy = ProxyClient(timeout=120, max_retries=2)


def search(params: dict) -> list[dict]:
    found = proxy.get("/search/find_product", params)
    return found if found is not None else []


@Tool
def find_product(
    q: str,
    page: int = 1,
    shop_id: str | None = None,
    price: str | None = None,
    sort: str | None = None,
    service: str | None = None,
) -> list[dict]:
    params = {
        "q": quote_plus(q),
        "page": page,
        "shop_id": shop_id,
        "price": price,
        "sort": sort,
        "service": service,
    }
    if params["sort"] == "default":
        del params["sort"]
    if params.get("service") == "default":
        del params["service"]
    elif params.get("service"):
        params["service"] = ",".join(s for s in params["service"].split(",") if s != "default")
    hits = search(params)
    if shop_id and not hits:  # within a shop: drop the service filter, then keep two words
        broader = {k: v for k, v in params.items() if k != "service"}
        hits = search(broader) if service else []
        if not hits and len(q.split()) > 2:
            hits = search({**broader, "q": quote_plus(" ".join(q.split()[:2]))})
    return hits


@Tool
def view_product_information(product_ids: str) -> list[dict]:
    found = proxy.get("/search/view_product_information", {"product_ids": product_ids})
    return found if found is not None else []


@Tool
def recommend_product(product_ids: str) -> str:
    return f"Having recommended the products to the user: {product_ids}."


@Tool
def terminate(status: str = "success") -> str:
    return f"The interaction has been completed with status: {status}"


@Tool("find_products_in_same_shop")
def same_shop(product_queries) -> dict:
    specs = json.loads(product_queries) if isinstance(product_queries, str) else product_queries
    first = search({"q": quote_plus(specs[0].get("q", "")), "page": 1, "price": specs[0].get("price")})
    for shop in dict.fromkeys(str(p.get("shop_id")) for p in first):
        picked = [next(p for p in first if str(p.get("shop_id")) == shop)]
        for spec in specs[1:]:
            hits = search(
                {"q": quote_plus(spec.get("q", "")), "page": 1, "shop_id": shop, "price": spec.get("price")}
            )
            if not hits:
                break
            picked.append(hits[0])
        if len(picked) == len(specs):
            return {"found": True, "shop_id": shop, "products": picked}
    return {"found": False, "error": "no single shop has them all"}


TOOLKIT_DESCRIPTIONS = """1. find_product(q, page=1, shop_id=None, price=None, sort=None, service=None): search products
2. view_product_information(product_ids): details of comma-separated product ids
3. recommend_product(product_ids): recommend products once
4. terminate(status='success'): end the dialogue
5. find_products_in_same_shop(product_queries): products all sold by one shop"""

SYSTEM_PROMPT = f"""# Role
You solve shopping tasks with tools.

# Available Tools
{TOOLKIT_DESCRIPTIONS}

# Output Format
Always answer with <think>...</think> and at least one of <tool_call>...</tool_call> or <response>...</response>.
Tool calls go in <tool_call>[{{"name": "tool name", "parameters": {{"parameter1": "value1"}}}}]</tool_call>."""


def parse_llm_output(content: str) -> dict:
    think = re.search(r"<think>(.+?)</think>", content, re.DOTALL)
    response = re.search(r"<response>(.+?)</response>", content, re.DOTALL)
    calls = []
    block = re.search(r"<tool_call>(.+?)</tool_call>", content, re.DOTALL)
    if block:
        try:
            items = json.loads(block.group(1).strip())
            for item in [items] if isinstance(items, dict) else items:
                parameters = item.get("parameters", {})
                calls.append(
                    {
                        "name": item["name"],
                        "parameters": parameters,
                        "tool_call_id": generate_tool_call_id(item["name"], parameters),
                    }
                )
        except (json.JSONDecodeError, KeyError):
            logger.warning("unreadable <tool_call>")
    return {
        "think": think.group(1).strip() if think else "",
        "tool_call": calls,
        "response": response.group(1).strip() if response else "",
    }


def tagged(role: str, content) -> str:
    return f"<{role}>{json.dumps(content) if isinstance(content, (dict, list)) else content}</{role}>"


def inference(model: str, messages: list[dict]) -> str:
    body = {"model": model, "temperature": 0.0, "messages": messages, "stream": False}
    result = proxy.post("/inference/chat/completions", json_data=body)
    if result and result.get("choices"):
        return result["choices"][0].get("message", {}).get("content") or ""
    return ""


def agent_main(problem_data: dict) -> list[dict]:
    query = problem_data.get("query", "")
    model = getenv("SANDBOX_MODEL", "deepseek-ai/DeepSeek-V3.2-TEE")
    history = [tagged("user", query)]
    steps = []
    for step_num in range(1, MAX_STEPS + 1):
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "# Dialogue Records History\n" + "\n\n".join(history)},
        ]
        parsed = parse_llm_output(inference(model, messages))
        if not (parsed["think"] or parsed["tool_call"] or parsed["response"]):
            break
        results, observations = [], []
        for call in parsed["tool_call"]:
            try:
                result = execute_tool_call(call["name"], call["parameters"])
            except Exception as exc:
                result = {**call, "result": f"Error: {exc}"}
            results.append(result)
            observations.append({"tool_call_id": call["tool_call_id"], "results": result["result"]})
        steps.append(create_dialogue_step(parsed["think"], results, parsed["response"], query, step_num))
        history.append(tagged("think", parsed["think"]))
        if parsed["tool_call"]:
            history.append(
                tagged(
                    "tool_call",
                    [{"name": c["name"], "parameters": c["parameters"]} for c in parsed["tool_call"]],
                )
            )
        if observations:
            history.append(tagged("obs", observations))
        if any(call["name"] == "terminate" for call in parsed["tool_call"]):
            break
    return steps
