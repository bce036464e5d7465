"""problems stage (SPEC §2): the task surface.

- `models`: Problem / RewardSpec / Voucher (ShoppingBench's task format + our metadata);
- `io`: read/write ShoppingBench JSONL, the arena JSON list and frozen suites, with located rejects;
- `generator` + `templates`: answerable tasks sampled from a catalogue by the upstream rules;
- `suite`: versioned, content-hashed suites; `canonical`: hashes and leak-cluster fingerprints;
- `stats`: what a problem set is made of.
"""
