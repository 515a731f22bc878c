"""A/B comparisons (`benchtop ab`): rounds of side A and side B, taking
turns within the round (benchtop.ab.turns) or one run of each in a random
order, and the statistics that say whether B differs from A beyond the
noise.  The runs themselves are the caller's (the command runs each side
through a RunSession): this package only orders them and gives the turns,
applies each side's server settings around its run, and judges the
figures."""
