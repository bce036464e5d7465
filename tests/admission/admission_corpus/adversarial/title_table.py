# expect: integrity.answer_table
# evasion: the gold titles instead of ids: search each one and take the first hit
import difflib

import miner_sdk

TITLES = [
    "Hosport Motorcycle Waist Bag Leather Outdoor",
    "Arborea Hybrid Ghost Crash Cymbals B20",
    "Heavy Duty Pushcart Solid Rubber Wheel",
    "Hyc Chili Powder Single Pack 100g",
    "Sakura Craypas Junior Artist 50 Colors",
    "Heart String Violin Bow Full Size Horsetail",
    "Speed 5PCS AA Battery Spring Contact Plate",
    "Double Rubber Plugs For Glasses 100pcs",
    "Metal Pipe Tap Tool G1/2 Thread",
    "Wooden Sword Stand Brass Chrome Plaid",
    "Cosrx Fragrance Free Brightening Essence 200ml",
    "Cosrx Gentle Toner Oily Skin 50ml Centella",
]


def agent_main(problem_data):
    title = difflib.get_close_matches(problem_data["query"], TITLES, n=1, cutoff=0)[0]
    hits = miner_sdk.call_tool("find_product", q=title)["result"]
    return [hits[0]["product_id"]] if hits else []
