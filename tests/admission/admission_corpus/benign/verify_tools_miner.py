"""An agent that leans on the verification tools: check_product_match for product tasks and
calculate_voucher for voucher tasks, with a narration built from a template."""

import contextlib
import re
from decimal import ROUND_HALF_UP, Decimal
from string import Template

import miner_sdk

NARRATION = Template("Chose $ids: $why (checked with $tool).")
ATTRIBUTE = re.compile(r"\b(?P<key>color|colour|size|volume|material)\s*(?:is|:)?\s*(?P<value>[\w\-]+)", re.I)


def money(value):
    return Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def requirements(query):
    found = {
        m.group("key").lower().replace("colour", "color"): m.group("value") for m in ATTRIBUTE.finditer(query)
    }
    return found or {"keywords": " ".join(query.split()[:5])}


def agent_main(problem_data):
    query = problem_data["query"]
    hits = miner_sdk.call_tool("find_product", q=" ".join(query.split()[:10]))["result"] or []
    steps = [{"completion": {"message": {"think": f"{len(hits)} hits"}}}]
    if not hits:
        miner_sdk.call_tool("terminate", status="failure")
        return steps
    choice, tool, why = hits[0], "nothing", "first hit"
    if problem_data.get("bucket") == "voucher" and problem_data.get("voucher"):
        voucher = problem_data["voucher"]
        result = miner_sdk.call_tool(
            "calculate_voucher",
            product_prices=str(money(choice["price"])),
            voucher_type=voucher.get("discount_type") or "fixed",
            discount_value=float(voucher.get("face_value") or voucher.get("discount") or 0),
            threshold=float(voucher.get("threshold") or 0),
            budget=float(voucher.get("budget") or 0),
        )
        tool, why = "calculate_voucher", f"total after voucher {result.get('result')}"
    else:
        with contextlib.suppress(KeyError, TypeError):
            result = miner_sdk.call_tool(
                "check_product_match", product_id=choice["product_id"], requirements=requirements(query)
            )
            tool, why = "check_product_match", str(result["result"])[:120]
    miner_sdk.call_tool("recommend_product", product_ids=choice["product_id"])
    miner_sdk.call_tool("terminate", status="success")
    steps.append(
        {
            "completion": {
                "message": {"think": NARRATION.substitute(ids=choice["product_id"], why=why, tool=tool)}
            }
        }
    )
    return steps
