# expect: integrity.product_id_literal
# evasion: keyword → product id lookup
import miner_sdk

LOOKUP = {
    "waist bag": "5035687794",
    "rubber wheel": "4410867766",
    "chili powder": "2155232803",
    "crayons": "3829481471",
    "violin bow": "3706669986",
}


def agent_main(problem_data):
    for key, pid in LOOKUP.items():
        if key in problem_data["query"].lower():
            miner_sdk.call_tool("recommend_product", product_ids=pid)
    return []
