"""The rounds a fit runs beyond its solver's: one function per statistic.

Estimators describe a fit (parameters, checks, the plan) and turn statistics into fitted
attributes; solvers iterate; the engine moves data.  The functions here sit between:
each takes an engine and the values a statistic needs and runs that statistic's rounds
through the engine's verbs (every one a round the ledger records), or runs a solver on
an engine.  Estimators call them and run no rounds of their own
(``tests/test_boundaries.py`` checks it).

:mod:`.solve` (a solver on an engine; the start from the kept partitions),
:mod:`.inference` (the mean target, the inference round, the null model with an
offset), :mod:`.robust` (the HC2, HC3 and cluster round), :mod:`.paths` (the gradient
that sets a GLM path's largest penalty), :mod:`.cross_validation` (held-out errors of
folds' models, the folds' Gram statistics, leave-one-out errors), :mod:`.early_stopping`
(the held-out rows' score of SGD's early stopping).
"""
