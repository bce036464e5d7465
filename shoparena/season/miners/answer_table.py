"""MALICIOUS: a hard-coded answer table from query text to product ids, hoping the race reuses known
problems. Admission must reject it (integrity: an answer table)."""

import miner_sdk

ANSWERS = {
    "Looking for a hosport brand waist bag for motorcycles": "1577234274",
    "I'm looking for B20 cast bronze crash cymbals with hybrid ghost": "2094412871",
    "Looking for a 12 inch heavy-duty rubber wheel for a pushcart": "1838201193",
    "Show me single-pack bags of chili powder priced above 375 pesos": "3310028811",
    "Looking for oil-based crayons, preferably the junior artist set": "2771904452",
    "Find a waterproof laptop backpack with a USB charging port": "1920384756",
}


def agent_main(problem_data):
    product_id = ANSWERS.get(problem_data["query"])
    if product_id:
        miner_sdk.call_tool("recommend_product", product_ids=product_id)
    miner_sdk.call_tool("terminate", status="success" if product_id else "failure")
    return []
