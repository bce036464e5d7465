"""The names of the files in a catalogue directory, apart from the code that builds or opens one.

Both the builder (`catalog_dir`) and the backends that read or extend a built directory
(`elastic_backend`, `stats`) need them; here neither has to import the other for a file name.
"""

META_FILE = "meta.json"
INDEX_DIR = "index"
STORE_DIR = "products.lmdb"
SHOPS_FILE = "shops.jsonl"
REJECTS_FILE = "rejects.jsonl"
ES_CONFIG_FILE = "es.json"
"""Where `catalog push-es` records the Elasticsearch server and index it loaded the catalogue into."""
