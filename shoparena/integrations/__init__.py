"""integrations stage (see docs/architecture.md): shoparena seen from other ecosystems' frameworks.

Each module here adapts the harness, the rule scorer, the judge and the trajectory record to one
outside framework and imports it lazily: `verifiers` (PrimeIntellect's environments, optional extra
`[verifiers]`).
"""
