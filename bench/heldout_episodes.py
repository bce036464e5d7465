"""What a distilled model does in its held-out product episodes: does it copy the request into the
search, recommend an id it was shown, pick the first hit, finish? The loss cannot tell memorising from
copying; these counts can (docs/benchmarks.md, the learn loop's runs).

    python bench/heldout_episodes.py RUN_DIR_OR_TRAJECTORIES_JSONL
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _arguments(call: dict) -> dict:
    try:
        arguments = json.loads(call["function"]["arguments"])
    except (ValueError, TypeError):
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _ids(value) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [str(part) for part in value or []]


def _listed_ids(content: str) -> list[str]:
    try:
        items = json.loads(content)
    except (ValueError, TypeError):
        return []
    return [str(item["product_id"]) for item in items if isinstance(item, dict) and "product_id" in item]


def episode_facts(record: dict) -> dict[str, bool]:
    """One product episode: what its first search asked, what it recommended, where the ids came from."""
    query = record["problem"]["query"]
    first_query, first_page, shown, recommended, terminated = None, [], set(), [], False
    for message in record["messages"]:
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or []:
                name, arguments = call["function"]["name"], _arguments(call)
                if name == "find_product" and first_query is None:
                    first_query = arguments.get("q")
                elif name == "recommend_product":
                    recommended += _ids(arguments.get("product_ids") or arguments.get("product_id"))
                elif name == "terminate":
                    terminated = True
        elif message["role"] == "tool" and message.get("name") == "find_product":
            listed = _listed_ids(message.get("content") or "")
            first_page = first_page or listed
            shown.update(listed)
    return {
        "query_copied_exactly": first_query == query,
        "recommended": bool(recommended),
        "every_recommended_id_shown": bool(recommended) and all(i in shown for i in recommended),
        "first_hit_recommended": bool(recommended and first_page) and recommended[0] == first_page[0],
        "terminated": terminated,
        "success": bool((record.get("score") or {}).get("success")),
    }


def main(path: Path) -> dict[str, int]:
    file = path / "trajectories.jsonl" if path.is_dir() else path
    facts = [
        episode_facts(record)
        for record in map(json.loads, file.read_text().splitlines())
        if record["problem"]["bucket"] == "product"
    ]
    counts = {"product episodes": len(facts)}
    for key in facts[0] if facts else []:
        counts[key] = sum(fact[key] for fact in facts)
    counts["success among first-hit picks"] = sum(f["success"] and f["first_hit_recommended"] for f in facts)
    return counts


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, count in main(Path(sys.argv[1])).items():
        print(f"{name:>32}: {count}")
