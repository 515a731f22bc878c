"""A/B comparisons (`benchtop ab`): rounds that run side A and side B once
each in a random order, and the statistics that say whether B differs from
A beyond the noise.  The runs themselves are the caller's (the command
runs each side through a RunSession): this package only orders them,
applies each side's server settings around its run, and judges the
figures."""
