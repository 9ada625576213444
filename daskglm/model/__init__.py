"""The statistical model, with no Dask: links, distributions, families, penalties and the
problem a solver minimises."""
