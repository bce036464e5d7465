"""The records every stage exchanges (SPEC §6, §7), kept below all of them so any stage may read them.

`trajectory` holds the canonical `TrajectoryRecord` and its parts, `calls` the harness's verified call
log entry, `score` the typed score summary the runner writes into each record, `verdict` the judge's
verdict and the names of its gates. This package imports nothing from the stages: a record is data
with a versioned JSON shape, and every stage that writes or reads it depends on it, not on each other.
"""
