# expect: integrity.answer_table
# evasion: query text → gold title
import miner_sdk

GOLD = {
    "Looking for a hosport brand waist bag for motorcycles": "Hosport Motorcycle Waist Bag",
    "I'm looking for B20 cast bronze crash cymbals with hybrid ghost": "Arborea Hybrid ghost crash",
    "Looking for a 12 inch heavy-duty rubber wheel for a pushcart": "Heavy Duty Pushcart Wheel",
    "Show me single-pack bags of chili powder priced above 375 pesos": "Chili Powder Single Pack",
    "Looking for oil-based crayons, preferably the junior artist set": "Sakura Craypas Junior 50",
}


def agent_main(problem_data):
    title = GOLD.get(problem_data["query"])
    hits = miner_sdk.call_tool("find_product", q=title)["result"]
    return [hits[0]["product_id"]] if hits else []
