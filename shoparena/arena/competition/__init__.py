"""The competition on top of the arena's gate (SPEC §6, issue 13): problem pools and their rotation,
qualifying, races with a committed seed, promotion with hysteresis, the winner's code embargo,
deterministic weights, Yuma-style consensus across validators, the chain adapter, the public API and
the season simulator.

`models` holds the shared records every part reads and writes (the contract); each part is its own
module beside it.
"""
