"""The minimal subnet miner of issue 23, as SN15's docs show one: the template's imports, its tools
called through `ProxyClient` on `/search/find_product` and `/search/view_product_information`, no
model. It reads `problem_data["category"]`, which the subnet's sandbox passes."""

from src.agent.agent_interface import Tool, create_dialogue_step, execute_tool_call
from src.agent.proxy_client import ProxyClient

proxy = ProxyClient()


@Tool
def find_product(q: str, page: int = 1, sort: str = "default") -> list[dict]:
    params = {"q": q, "page": page, "sort": None if sort == "default" else sort}
    return proxy.get("/search/find_product", params) or []


@Tool
def view_product_information(product_ids: str) -> list[dict]:
    return proxy.get("/search/view_product_information", {"product_ids": product_ids}) or []


@Tool("recommend_product")
def recommend(product_ids: str) -> str:
    return f"Having recommended the products to the user: {product_ids}."


def keywords(query: str) -> str:
    words = [w.strip(".,!?`") for w in query.split()]
    return " ".join(w for w in words if len(w) > 3 and w.isalpha())[:80]


def agent_main(problem_data: dict) -> list[dict]:
    query = problem_data["query"]
    category = problem_data["category"]
    found = execute_tool_call("find_product", {"q": keywords(query)})
    ids = [str(p["product_id"]) for p in found["result"][:3]]
    steps = [create_dialogue_step(f"{category} task: search", [found], "", query, 1)]
    if ids:
        seen = execute_tool_call("view_product_information", {"product_ids": ",".join(ids)})
        picked = execute_tool_call("recommend_product", {"product_ids": ids[0]})
        steps.append(create_dialogue_step("the top hit", [seen, picked], "Here it is.", query, 2))
    return steps
