"""The synthetic marketplace's vocabulary: a category tree with per-leaf products, attributes and SKUs.

Modelled on a Southeast-Asian marketplace like the one behind ShoppingBench (prices in PHP,
LazMall-style `official` shops, COD): per-leaf attribute vocabularies and SKU dimensions make
attribute- and SKU-constrained tasks answerable, and per-leaf price medians give long-tailed prices.
"""

from __future__ import annotations

from dataclasses import dataclass

COLORS = [
    "black",
    "white",
    "red",
    "blue",
    "green",
    "pink",
    "grey",
    "beige",
    "navy",
    "brown",
    "yellow",
    "purple",
]
APPAREL_SIZES = ["xs", "s", "m", "l", "xl", "xxl", "free size"]
SHOE_SIZES = ["eu:36", "eu:37", "eu:38", "eu:39", "eu:40", "eu:41", "eu:42", "eu:43", "eu:44"]
MATERIALS_HARD = ["stainless steel", "aluminum alloy", "abs plastic", "wood", "glass", "ceramic", "bamboo"]
MATERIALS_SOFT = [
    "cotton",
    "polyester",
    "linen",
    "denim",
    "silk",
    "nylon",
    "spandex",
    "leather",
    "pu leather",
]
PATTERNS = ["plain", "striped", "floral", "plaid", "graphic print", "polka dot"]
WARRANTY = ["no warranty", "7 days", "1 month", "6 months", "1 year", "2 years"]
POWER = ["usb", "battery", "ac plug", "rechargeable"]

MARKETING_PREFIXES = [
    "【Ready Stock】",
    "[COD]",
    "Original",
    "Hot Sale",
    "NEW",
    "Best Seller",
    "Authentic",
    "Local Seller",
    "Free Gift",
    "Premium",
    "2026 New",
    "Fast Delivery",
]
MARKETING_WORDS = frozenset(
    [
        "fast",
        "delivery",
        "new",
        "original",
        "hot",
        "sale",
        "ready",
        "stock",
        "cod",
        "free",
        "shipping",
        "best",
        "seller",
        "promo",
        "authentic",
        "high",
        "quality",
        "cheap",
        "premium",
    ]
)
"""Listing filler that says nothing about what a product is (titles carry it; users don't repeat it)."""
PACK_SUFFIXES = ["1pc", "2pcs", "3pcs", "5pcs", "Set", "Bundle", "Pack of 2", "10pcs"]


@dataclass(frozen=True)
class Leaf:
    """A leaf category: what it sells, how those things are described, and what they cost."""

    path: str
    nouns: tuple[str, ...]
    adjectives: tuple[str, ...]
    attributes: tuple[tuple[str, tuple[str, ...]], ...]
    sku_dims: tuple[tuple[str, tuple[str, ...]], ...]
    price_median: float
    price_sigma: float
    brands: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path.rsplit(" > ", 1)[-1]


def _leaf(path, nouns, adjectives, attributes, sku_dims, median, sigma, brands) -> Leaf:
    return Leaf(
        path=path,
        nouns=tuple(nouns),
        adjectives=tuple(adjectives),
        attributes=tuple((k, tuple(v)) for k, v in attributes.items()),
        sku_dims=tuple((k, tuple(v)) for k, v in sku_dims.items()),
        price_median=median,
        price_sigma=sigma,
        brands=tuple(brands),
    )


LEAVES: tuple[Leaf, ...] = (
    _leaf(
        "Fashion > Women Clothing > Dresses",
        ["maxi dress", "midi dress", "bodycon dress", "wrap dress", "shirt dress", "sundress"],
        ["korean style", "elegant", "casual", "vintage", "boho", "sleeveless"],
        {
            "clothing_material": MATERIALS_SOFT[:6],
            "fa_pattern": PATTERNS,
            "sleeve_length": ["sleeveless", "short sleeve", "long sleeve"],
            "occasion": ["casual", "party", "office", "beach"],
        },
        {"color_family": COLORS, "size": APPAREL_SIZES},
        350,
        0.7,
        ["Zara Lane", "Bench Woman", "Penshoppe", "Kashieca", "Sunnies Wear"],
    ),
    _leaf(
        "Fashion > Women Clothing > Jeans",
        ["jeans", "wide leg jeans", "skinny jeans", "mom jeans", "denim shorts"],
        ["high waist", "ripped", "stretchable", "vintage", "korean", "baggy"],
        {
            "jeans_fit_type": ["baggy fit", "skinny fit", "straight fit", "wide leg"],
            "waist_type": ["high", "mid", "low"],
            "clothing_material": ["denim", "cotton", "spandex"],
            "fa_pattern": ["plain", "ripped", "washed"],
        },
        {
            "size": ["eu:26", "eu:27", "eu:28", "eu:29", "eu:30", "eu:31", "eu:32"],
            "color_family": ["light blue", "dark blue", "black", "grey"],
        },
        420,
        0.6,
        ["Levi's", "Bench", "Penshoppe", "Oxygen", "Folded & Hung"],
    ),
    _leaf(
        "Fashion > Men Clothing > T-Shirts",
        ["t-shirt", "polo shirt", "oversized tee", "graphic tee", "v-neck shirt"],
        ["cotton", "breathable", "oversized", "slim fit", "unisex", "basic"],
        {
            "clothing_material": ["cotton", "polyester", "cotton blend", "dri-fit"],
            "fa_pattern": PATTERNS,
            "neckline": ["crew neck", "v-neck", "collar"],
        },
        {"color_family": COLORS, "size": APPAREL_SIZES},
        220,
        0.6,
        ["Bench", "Uniqlo Basics", "Human", "Jag", "Cotton Ink"],
    ),
    _leaf(
        "Fashion > Men Shoes > Sneakers",
        ["sneakers", "running shoes", "canvas shoes", "slip-on shoes", "high cut sneakers"],
        ["lightweight", "breathable", "non-slip", "classic", "chunky", "casual"],
        {
            "shoe_material": ["canvas", "mesh", "pu leather", "suede"],
            "closure_type": ["lace-up", "slip-on", "velcro"],
            "sole_material": ["rubber", "eva", "tpr"],
        },
        {"size": SHOE_SIZES, "color_family": ["black", "white", "grey", "navy", "beige"]},
        900,
        0.8,
        ["World Balance", "Converse", "Adidas", "Nike", "Skechers", "Vans"],
    ),
    _leaf(
        "Fashion > Bags > Backpacks",
        ["backpack", "laptop backpack", "school bag", "travel backpack", "anti-theft backpack"],
        ["waterproof", "large capacity", "lightweight", "usb charging", "minimalist"],
        {
            "bag_material": ["nylon", "canvas", "pu leather", "oxford cloth", "polyester"],
            "laptop_size": ["13 inch", "14 inch", "15.6 inch", "17 inch"],
            "closure_type": ["zipper", "buckle", "drawstring"],
        },
        {"color_family": COLORS[:8]},
        650,
        0.7,
        ["Hawk", "Jansport", "Herschel", "Deuter", "Anello"],
    ),
    _leaf(
        "Fashion > Bags > Waist Bags",
        ["waist bag", "belt bag", "sling bag", "chest bag", "fanny pack"],
        ["waterproof", "crossbody", "sporty", "compact", "multi-pocket"],
        {
            "bag_material": ["nylon", "eva", "pu leather", "canvas"],
            "usage": ["motorcycle", "running", "travel", "daily"],
        },
        {"color_family": COLORS[:6]},
        280,
        0.6,
        ["Hosport", "Hawk", "Jansport", "Kipling"],
    ),
    _leaf(
        "Fashion > Accessories > Watches",
        ["analog watch", "digital watch", "smart watch band", "quartz watch", "couple watch"],
        ["waterproof", "luminous", "minimalist", "luxury", "sporty"],
        {
            "watch_strap_material": ["stainless steel", "leather", "silicone", "nylon"],
            "water_resistance": ["30m", "50m", "100m", "not water resistant"],
            "display_type": ["analog", "digital", "analog-digital"],
        },
        {"color_family": ["black", "silver", "gold", "rose gold", "blue"]},
        1200,
        1.0,
        ["Casio", "Seiko", "Curren", "Skmei", "Fossil"],
    ),
    _leaf(
        "Electronics > Mobile Accessories > Phone Cases",
        ["phone case", "shockproof case", "clear case", "wallet case", "magsafe case"],
        ["shockproof", "transparent", "slim", "matte", "anti-yellowing"],
        {
            "compatible_model": [
                "iphone 15",
                "iphone 14",
                "iphone 13",
                "galaxy s24",
                "redmi note 13",
                "oppo a78",
                "vivo y36",
            ],
            "case_material": ["tpu", "silicone", "pc", "leather"],
        },
        {"color_family": ["clear", "black", "pink", "blue", "purple"]},
        120,
        0.6,
        ["Spigen", "Baseus", "Ugreen", "Rock", "Nillkin"],
    ),
    _leaf(
        "Electronics > Mobile Accessories > Chargers & Cables",
        ["fast charger", "usb-c cable", "lightning cable", "wireless charger", "car charger"],
        ["fast charging", "braided", "durable", "pd", "gan"],
        {
            "connector_type": ["usb-c", "lightning", "micro usb", "usb-a"],
            "cable_length": ["0.5m", "1m", "1.5m", "2m", "3m"],
            "output_power": ["10w", "20w", "33w", "65w", "100w"],
        },
        {"color_family": ["white", "black"], "length": ["1m", "2m"]},
        250,
        0.8,
        ["Anker", "Baseus", "Ugreen", "Xiaomi", "Remax"],
    ),
    _leaf(
        "Electronics > Mobile Accessories > Power Banks",
        ["power bank", "magnetic power bank", "mini power bank", "solar power bank"],
        ["fast charging", "slim", "portable", "high capacity", "digital display"],
        {
            "battery_capacity": ["5000mah", "10000mah", "20000mah", "30000mah"],
            "output_power": ["10w", "20w", "22.5w", "65w"],
            "connector_type": ["usb-c", "usb-a", "lightning"],
        },
        {"color_family": ["white", "black", "blue", "pink"]},
        850,
        0.6,
        ["Anker", "Romoss", "Xiaomi", "Baseus", "Remax"],
    ),
    _leaf(
        "Electronics > Audio > Earphones",
        [
            "wireless earbuds",
            "bluetooth earphones",
            "wired earphones",
            "neckband earphones",
            "gaming earbuds",
        ],
        ["noise cancelling", "bass boosted", "waterproof", "low latency", "in-ear"],
        {
            "connectivity": ["bluetooth 5.3", "bluetooth 5.0", "3.5mm jack", "usb-c"],
            "noise_cancellation": ["anc", "enc", "none"],
            "water_resistance": ["ipx4", "ipx5", "ipx7", "none"],
        },
        {"color_family": ["black", "white", "blue", "pink"]},
        900,
        0.9,
        ["Sony", "JBL", "Soundcore", "QCY", "Edifier", "Lenovo"],
    ),
    _leaf(
        "Electronics > Audio > Speakers",
        ["bluetooth speaker", "portable speaker", "party speaker", "soundbar", "mini speaker"],
        ["waterproof", "loud", "rgb", "portable", "deep bass"],
        {
            "connectivity": ["bluetooth 5.3", "aux", "usb", "wifi"],
            "speaker_power": ["5w", "10w", "20w", "40w", "100w"],
            "water_resistance": ["ipx5", "ipx7", "none"],
        },
        {"color_family": ["black", "blue", "red", "grey"]},
        1500,
        0.9,
        ["JBL", "Sony", "Tronsmart", "Xiaomi", "Anker"],
    ),
    _leaf(
        "Electronics > Computer Accessories > Keyboards & Mice",
        [
            "mechanical keyboard",
            "wireless mouse",
            "gaming mouse",
            "keyboard and mouse combo",
            "ergonomic mouse",
        ],
        ["rgb", "silent", "wireless", "rechargeable", "compact"],
        {
            "connectivity": ["usb receiver", "bluetooth", "wired usb", "tri-mode"],
            "switch_type": ["red switch", "blue switch", "brown switch", "membrane"],
            "layout": ["60%", "75%", "tkl", "full size"],
        },
        {"color_family": ["black", "white", "pink", "grey"]},
        800,
        0.9,
        ["Logitech", "Rakk", "Razer", "A4Tech", "Royal Kludge"],
    ),
    _leaf(
        "Electronics > Computer Accessories > Storage",
        ["usb flash drive", "micro sd card", "external ssd", "external hard drive"],
        ["high speed", "durable", "compact", "metal", "waterproof"],
        {
            "storage_capacity": ["32gb", "64gb", "128gb", "256gb", "512gb", "1tb", "2tb"],
            "interface": ["usb 3.0", "usb 3.2", "usb-c", "microsd"],
        },
        {"storage_capacity": ["64gb", "128gb", "256gb", "512gb", "1tb"]},
        700,
        1.0,
        ["SanDisk", "Kingston", "Samsung", "Seagate", "WD"],
    ),
    _leaf(
        "Home & Living > Kitchen > Cookware",
        ["non-stick frying pan", "wok", "casserole", "sauce pan", "rice cooker pot", "grill pan"],
        ["non-stick", "induction ready", "heavy duty", "heat resistant", "granite coated"],
        {
            "cookware_material": ["stainless steel", "cast iron", "aluminum alloy", "granite", "ceramic"],
            "pan_size": ["20cm", "24cm", "26cm", "28cm", "30cm", "32cm"],
            "stove_compatibility": ["gas", "induction", "all stoves"],
        },
        {"size": ["20cm", "24cm", "28cm", "32cm"], "color_family": ["black", "grey", "red"]},
        600,
        0.8,
        ["Masflex", "Tefal", "Carote", "Kyowa", "Hanabishi"],
    ),
    _leaf(
        "Home & Living > Kitchen > Food Storage",
        ["food container", "lunch box", "airtight jar", "vacuum flask", "water bottle"],
        ["leak proof", "bpa free", "microwave safe", "stackable", "insulated"],
        {
            "container_material": ["glass", "pp plastic", "stainless steel", "silicone"],
            "capacity": ["350ml", "500ml", "750ml", "1l", "1.5l", "2l"],
            "set_size": ["1pc", "3pcs", "5pcs", "10pcs"],
        },
        {"capacity": ["500ml", "750ml", "1l"], "color_family": ["blue", "pink", "green", "white"]},
        250,
        0.7,
        ["Lock & Lock", "Tupperware", "Aqua Flask", "Hydro Flask", "Glasslock"],
    ),
    _leaf(
        "Home & Living > Bedding > Bed Sheets",
        ["bed sheet set", "fitted sheet", "comforter", "pillow case", "blanket"],
        ["soft", "breathable", "hotel quality", "cooling", "wrinkle free"],
        {
            "bedding_material": ["cotton", "microfiber", "linen", "bamboo fiber", "polyester"],
            "bed_size": ["single", "double", "queen", "king"],
            "fa_pattern": PATTERNS,
        },
        {"bed_size": ["single", "double", "queen", "king"], "color_family": COLORS[:8]},
        550,
        0.7,
        ["Uratex", "Dreamland", "Canadian Hotel", "Mandaue Foam"],
    ),
    _leaf(
        "Home & Living > Furniture > Chairs",
        ["office chair", "gaming chair", "dining chair", "folding chair", "bar stool", "seat cushion"],
        ["ergonomic", "adjustable", "reclining", "sturdy", "foldable"],
        {
            "furniture_material": ["mesh", "pu leather", "wood", "metal", "plastic"],
            "max_load": ["100kg", "120kg", "150kg", "200kg"],
            "assembly_required": ["yes", "no"],
        },
        {"color_family": ["black", "white", "grey", "pink", "brown"]},
        2500,
        0.8,
        ["Ergodynamics", "Gamdias", "Mandaue Foam", "Ikea Style"],
    ),
    _leaf(
        "Home & Living > Storage & Organisation > Shelves",
        ["storage rack", "wall shelf", "shoe rack", "kitchen rack", "sword stand"],
        ["space saving", "multi-layer", "rust proof", "easy assembly", "wall mounted"],
        {
            "material": ["metal", "wood", "bamboo", "plastic", "brass chrome"],
            "number_of_layers": ["2", "3", "4", "5", "6"],
            "pattern": ["plain", "plaid", "wood grain"],
        },
        {"color_family": ["black", "white", "wood", "a1", "a2"]},
        450,
        0.8,
        ["Speed", "Ikea Style", "Home Basics", "Sunbeams"],
    ),
    _leaf(
        "Home & Living > Tools & Home Improvement > Hand Tools",
        ["screwdriver set", "pipe tap", "wrench set", "pliers", "hammer", "tape measure", "caliper"],
        ["heavy duty", "professional", "multi-function", "anti-slip", "magnetic"],
        {
            "tool_material": ["hss", "chrome vanadium", "carbon steel", "stainless steel"],
            "measuring_type": ["caliper", "tape", "ruler", "digital"],
            "set_size": ["1pc", "6pcs", "12pcs", "24pcs", "46pcs"],
        },
        {"color_family": ["g1/2", "g3/4", "m8", "m10", "red", "black"]},
        300,
        0.9,
        ["Stanley", "Bosch", "Ingco", "Total", "Speed"],
    ),
    _leaf(
        "Home & Living > Tools & Home Improvement > Wheels & Casters",
        ["rubber wheel", "caster wheel", "pushcart wheel", "trolley wheel"],
        ["heavy duty", "solid rubber", "swivel", "silent", "with brake"],
        {
            "wheel_material": ["solid rubber", "polyurethane", "nylon", "pneumatic"],
            "load_capacity": ["50kg", "100kg", "200kg", "300kg"],
        },
        {"size": ["6 inch", "8 inch", "10 inch", "12 inch"]},
        350,
        0.7,
        ["Speed", "Ingco", "Total", "Hardware Pro"],
    ),
    _leaf(
        "Beauty > Skincare > Toners & Serums",
        ["toner", "face serum", "essence", "facial mist", "ampoule"],
        ["hydrating", "brightening", "gentle", "fragrance free", "niacinamide"],
        {
            "skin_type": ["oily", "dry", "combination", "sensitive", "all skin types"],
            "volume": ["30ml", "50ml", "100ml", "150ml", "200ml"],
            "key_ingredient": ["niacinamide", "hyaluronic acid", "vitamin c", "centella", "retinol"],
        },
        {"volume": ["30ml", "100ml", "200ml"]},
        380,
        0.8,
        ["The Ordinary", "Cosrx", "Luxe Organix", "Psph Beauty", "Some By Mi", "Celeteque"],
    ),
    _leaf(
        "Beauty > Makeup > Lipsticks",
        ["matte lipstick", "lip tint", "lip gloss", "lip liner", "lip balm"],
        ["long lasting", "transfer proof", "moisturizing", "velvet", "waterproof"],
        {
            "finish": ["matte", "glossy", "satin", "velvet"],
            "lip_product_form": ["stick", "liquid", "cream", "pencil"],
        },
        {"shade": ["01 nude", "02 rose", "03 red", "04 berry", "05 coral", "06 mauve"]},
        250,
        0.7,
        ["Maybelline", "Careline", "Issy", "Colourette", "Vice Cosmetics"],
    ),
    _leaf(
        "Beauty > Hair Care > Shampoo",
        ["shampoo", "conditioner", "hair mask", "hair oil", "scalp treatment"],
        ["anti-dandruff", "sulfate free", "keratin", "moisturizing", "anti-hairfall"],
        {
            "hair_type": ["all hair types", "dry", "oily", "colored", "curly"],
            "volume": ["180ml", "340ml", "500ml", "1l"],
        },
        {"volume": ["180ml", "340ml", "1l"]},
        280,
        0.6,
        ["Palmolive", "Sunsilk", "Dove", "Head & Shoulders", "Cream Silk"],
    ),
    _leaf(
        "Health > Supplements > Vitamins",
        ["vitamin c tablets", "multivitamins", "fish oil capsules", "collagen drink", "zinc supplement"],
        ["immune boosting", "sugar free", "halal", "fda approved", "chewable"],
        {
            "dosage_form": ["tablet", "capsule", "powder", "gummies", "liquid"],
            "pack_size": ["30s", "60s", "100s", "120s"],
        },
        {"pack_size": ["30s", "60s", "100s"]},
        450,
        0.8,
        ["Enervon", "Centrum", "Ceelin", "Now Foods", "Nature's Bounty"],
    ),
    _leaf(
        "Groceries > Pantry > Spices & Seasonings",
        ["chili powder", "black pepper", "garlic powder", "seasoning mix", "paprika", "cinnamon powder"],
        ["pure", "organic", "spicy", "premium", "bulk"],
        {
            "packaging_type": ["bag", "bottle", "jar", "sachet"],
            "pack_type": ["single", "bundle", "multipack"],
            "net_weight": ["50g", "100g", "250g", "500g", "1kg"],
        },
        {"net_weight": ["100g", "250g", "500g", "1kg"]},
        150,
        0.9,
        ["Hyco", "McCormick", "Mama Sita's", "Ajinomoto", "Knorr"],
    ),
    _leaf(
        "Groceries > Beverages > Coffee",
        ["ground coffee", "coffee beans", "instant coffee", "3 in 1 coffee", "cold brew"],
        ["arabica", "robusta", "barako", "dark roast", "decaf"],
        {
            "roast_level": ["light", "medium", "dark"],
            "net_weight": ["100g", "250g", "500g", "1kg"],
            "packaging_type": ["bag", "jar", "box", "sachet"],
        },
        {"net_weight": ["250g", "500g", "1kg"]},
        320,
        0.7,
        ["Nescafe", "Kopiko", "Great Taste", "Figaro", "Bo's Coffee"],
    ),
    _leaf(
        "Mother & Baby > Diapering > Diapers",
        ["baby diapers", "pants diapers", "newborn diapers", "adult diapers", "swim diapers"],
        ["ultra thin", "leak guard", "breathable", "overnight", "hypoallergenic"],
        {
            "diaper_size": ["newborn", "small", "medium", "large", "xl", "xxl"],
            "pack_size": ["20s", "40s", "64s", "80s"],
        },
        {"diaper_size": ["small", "medium", "large", "xl"]},
        600,
        0.5,
        ["EQ", "Pampers", "Huggies", "MamyPoko", "Drypers"],
    ),
    _leaf(
        "Mother & Baby > Feeding > Bottles",
        ["feeding bottle", "sippy cup", "breast pump", "bottle sterilizer", "pacifier"],
        ["anti-colic", "bpa free", "wide neck", "soft silicone", "easy grip"],
        {
            "bottle_material": ["pp plastic", "glass", "silicone", "ppsu"],
            "capacity": ["120ml", "150ml", "240ml", "300ml"],
        },
        {"capacity": ["150ml", "240ml"], "color_family": ["blue", "pink", "clear", "yellow"]},
        450,
        0.8,
        ["Pigeon", "Avent", "Tommee Tippee", "Dr. Brown's"],
    ),
    _leaf(
        "Toys & Games > Building Toys > Blocks",
        ["building blocks", "brick set", "magnetic tiles", "puzzle", "lego compatible set"],
        ["educational", "creative", "stem", "non-toxic", "colorful"],
        {
            "recommended_age": ["3+", "6+", "8+", "12+", "14+"],
            "number_of_pieces": ["50", "100", "500", "1000", "2000"],
        },
        {"variant": ["set a", "set b", "set c"]},
        700,
        1.0,
        ["Lego", "Qman", "Mega Bloks", "Sluban"],
    ),
    _leaf(
        "Sports & Outdoors > Fitness > Yoga & Gym",
        ["yoga mat", "dumbbell set", "resistance band", "jump rope", "ab roller", "gym gloves"],
        ["non-slip", "thick", "adjustable", "portable", "eco friendly"],
        {
            "material": ["tpe", "nbr", "pvc", "rubber", "latex", "cast iron"],
            "thickness": ["4mm", "6mm", "8mm", "10mm", "15mm"],
        },
        {"color_family": ["purple", "black", "blue", "pink", "green"]},
        500,
        0.9,
        ["Decathlon", "Everlast", "Domyos", "Reebok", "Keep"],
    ),
    _leaf(
        "Sports & Outdoors > Cycling > Bike Parts",
        ["bike light", "bike lock", "bicycle helmet", "bike pump", "bicycle bell", "inner tube"],
        ["rechargeable", "waterproof", "lightweight", "anti-theft", "ultra bright"],
        {
            "bike_size": ["26 inch", "27.5 inch", "29 inch", "700c"],
            "material": ["aluminum alloy", "steel", "abs plastic", "silicone"],
        },
        {"color_family": ["black", "red", "white", "blue"]},
        400,
        0.9,
        ["Shimano", "Giant", "Rockbros", "Trinx", "Foxter"],
    ),
    _leaf(
        "Automotive > Motorcycle Accessories > Helmets",
        ["full face helmet", "half face helmet", "modular helmet", "helmet visor", "kids helmet"],
        ["dual visor", "icc certified", "lightweight", "ventilated", "dot approved"],
        {
            "helmet_type": ["full face", "half face", "modular", "open face"],
            "certification": ["icc", "dot", "ece", "snell"],
        },
        {"size": ["s", "m", "l", "xl"], "color_family": ["matte black", "white", "red", "grey"]},
        1800,
        0.7,
        ["Spyder", "Gille", "EVO", "KYT", "LS2", "Zebra"],
    ),
    _leaf(
        "Automotive > Car Care > Cleaning",
        ["car shampoo", "microfiber towel", "car wax", "tire black", "interior cleaner", "car vacuum"],
        ["ph neutral", "streak free", "waterless", "high gloss", "quick dry"],
        {"volume": ["250ml", "500ml", "1l", "4l"], "pack_size": ["1pc", "3pcs", "5pcs", "10pcs"]},
        {"variant": ["250ml", "500ml", "1l"]},
        300,
        0.8,
        ["Turtle Wax", "Meguiar's", "Armor All", "Autoglym"],
    ),
    _leaf(
        "Media, Music & Books > Musical Instruments > Musical Accessories",
        ["violin bow", "guitar strings", "capo", "guitar picks", "tuner", "cymbal", "drum sticks"],
        ["handmade", "professional", "durable", "beginner", "cast bronze"],
        {
            "music_accessories_function": ["tuning", "playing", "protection", "maintenance"],
            "model": ["violin bow", "crash cymbal", "acoustic strings", "clip tuner"],
            "instrument_material": [
                "b20 cast bronze",
                "carbon fiber",
                "brazilwood",
                "nickel",
                "phosphor bronze",
            ],
        },
        {"size": ["1/4", "1/2", "3/4", "4/4", "16 inch", "18 inch"]},
        500,
        1.1,
        ["Heart String", "Arborea", "D'Addario", "Ernie Ball", "Alice"],
    ),
    _leaf(
        "Media, Music & Books > Music > CDs & Vinyl",
        ["audio cd", "vinyl record", "cassette tape", "box set", "album"],
        ["brand new", "sealed", "original", "limited edition", "remastered"],
        {
            "music_genre": ["pop", "rock", "opm", "jazz", "classical", "hip hop"],
            "condition": ["new", "sealed", "pre-owned"],
        },
        {"format": ["cd", "vinyl", "cassette"]},
        900,
        0.8,
        ["Universal", "Sony Music", "Warner", "Star Music"],
    ),
    _leaf(
        "Pets > Pet Food > Dog Food",
        ["dry dog food", "wet dog food", "dog treats", "puppy food", "dental chews"],
        ["grain free", "high protein", "for puppies", "for adult dogs", "natural"],
        {
            "pet_life_stage": ["puppy", "adult", "senior", "all life stages"],
            "net_weight": ["400g", "1kg", "3kg", "8kg", "20kg"],
            "flavor": ["beef", "chicken", "lamb", "salmon"],
        },
        {"net_weight": ["1kg", "3kg", "8kg"]},
        700,
        0.9,
        ["Pedigree", "Royal Canin", "Vitality", "Top Breed", "Aozi"],
    ),
    _leaf(
        "Stationery > Art Supplies > Crayons & Paints",
        ["oil pastels", "crayons", "watercolor set", "acrylic paint", "color pencils", "markers"],
        ["non-toxic", "washable", "vibrant", "artist grade", "junior"],
        {
            "type_of_inks": ["oil-based", "water-based", "wax", "acrylic"],
            "number_of_colors": ["12", "24", "36", "48", "50", "72"],
        },
        {"number_of_colors": ["12", "24", "50"]},
        250,
        0.8,
        ["Sakura", "Faber-Castell", "Crayola", "Pentel", "Deli"],
    ),
)

JUNK_BRAND_RATE = 0.15
"""Share of listings with no real brand (upstream's `brand` is "" for those)."""
