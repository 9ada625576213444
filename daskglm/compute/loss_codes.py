"""The codes by which the compiled row loops (:mod:`.fused_loops`, :mod:`.sgd_loops`) know
a family's loss, and the names families give them (:meth:`Family.compiled_loss`).

Kept apart from the loops so that choosing a loop does not load numba.
"""

from __future__ import annotations

__all__ = ["GAUSSIAN", "BINOMIAL", "POISSON", "GAMMA_LOG", "TWEEDIE_LOG",
           "NEGATIVE_BINOMIAL_LOG", "CODES", "MAX_COMPILED_POWER", "loss_code"]

#: The canonical Gaussian, Binomial and Poisson, and with the log link the Gamma, the
#: Tweedie (power in (1, 2) or (2, :data:`MAX_COMPILED_POWER`], the loops' ``parameter``;
#: scikit-learn's GammaRegressor and TweedieRegressor) and the negative binomial
#: (``alpha``).
GAUSSIAN, BINOMIAL, POISSON, GAMMA_LOG, TWEEDIE_LOG, NEGATIVE_BINOMIAL_LOG = 0, 1, 2, 3, 4, 5

#: A family's :meth:`~daskglm.model.families.Family.compiled_loss` name, to its code.
CODES = {"gaussian": GAUSSIAN, "binomial": BINOMIAL, "poisson": POISSON,
         "gamma_log": GAMMA_LOG, "tweedie_log": TWEEDIE_LOG,
         "negative_binomial_log": NEGATIVE_BINOMIAL_LOG}

#: Tweedie powers with a compiled loss (with the log link): the compound Poisson-Gamma
#: range and powers above 2 up to this (its ``exp`` arguments stay in range).
MAX_COMPILED_POWER = 10.0


def loss_code(family):
    """``(code, parameter)`` of ``family``'s loss in the compiled loops, or None when they
    have none (the family's :meth:`compiled_loss` names none, or a Tweedie power beyond
    :data:`MAX_COMPILED_POWER`); losses that are not GLM families (SGD's) have none."""
    named = getattr(family, "compiled_loss", lambda: None)()
    if named is None:
        return None
    name, parameter = named
    if name == "tweedie_log" and parameter > MAX_COMPILED_POWER:
        return None
    return CODES[name], float(parameter)
