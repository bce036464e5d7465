"""The corpus pipeline (SPEC §8): trajectories of any supported shape → a leak-guarded, TRL-ready corpus.

`build_corpus(CorpusConfig(...))` runs normalise → gates → axis → rank → split → export; the stages are
also usable alone: `normalise.normalise_record`, `gates`, `rank.compute_signals`/`choose`,
`axis.classify_axis`, `split.plan_split`/`check_disjoint`, `export`.
"""
