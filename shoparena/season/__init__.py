"""A season on one machine (issue 13): the simulated clock, the miner roster, the season driver and the
season file. `shoparena arena simulate` is its command."""
