"""The codes by which the compiled row loops (:mod:`.fused_loops`, :mod:`.sgd_loops`) know
a family's loss, and the names families give them (:meth:`Family.compiled_loss`).

Kept apart from the loops so that choosing a loop does not load numba.
"""

from __future__ import annotations

__all__ = ["GAUSSIAN", "BINOMIAL", "POISSON", "GAMMA_LOG", "TWEEDIE_LOG",
           "NEGATIVE_BINOMIAL_LOG", "HINGE", "SQUARED_HINGE", "MODIFIED_HUBER", "HUBER",
           "EPSILON_INSENSITIVE", "SQUARED_EPSILON_INSENSITIVE", "ON_SIGNS", "CODES",
           "SIGNS_SUFFIX", "MAX_COMPILED_POWER", "loss_code"]

#: The canonical Gaussian, Binomial and Poisson, and with the log link the Gamma, the
#: Tweedie (power in (1, 2) or (2, :data:`MAX_COMPILED_POWER`], the loops' ``parameter``;
#: scikit-learn's GammaRegressor and TweedieRegressor) and the negative binomial
#: (``alpha``).
GAUSSIAN, BINOMIAL, POISSON, GAMMA_LOG, TWEEDIE_LOG, NEGATIVE_BINOMIAL_LOG = 0, 1, 2, 3, 4, 5

#: scikit-learn's SGD losses (:mod:`.sgd_losses`): the hinge and the squared hinge (their
#: threshold the ``parameter``: 1, or 0 for the perceptron), the modified Huber, and the
#: Huber, epsilon-insensitive and squared epsilon-insensitive losses (``epsilon``).
(HINGE, SQUARED_HINGE, MODIFIED_HUBER, HUBER, EPSILON_INSENSITIVE,
 SQUARED_EPSILON_INSENSITIVE) = 6, 7, 8, 9, 10, 11

#: Added to a regression loss's code: the loss of the signs ``2 y - 1`` of 0/1 labels
#: (:class:`~daskglm.compute.sgd_losses.OnSigns`), its derivative clipped as scikit-learn's.
ON_SIGNS = 16

#: A family's :meth:`~daskglm.model.families.Family.compiled_loss` name, to its code.
CODES = {"gaussian": GAUSSIAN, "binomial": BINOMIAL, "poisson": POISSON,
         "gamma_log": GAMMA_LOG, "tweedie_log": TWEEDIE_LOG,
         "negative_binomial_log": NEGATIVE_BINOMIAL_LOG, "hinge": HINGE,
         "squared_hinge": SQUARED_HINGE, "modified_huber": MODIFIED_HUBER, "huber": HUBER,
         "epsilon_insensitive": EPSILON_INSENSITIVE,
         "squared_epsilon_insensitive": SQUARED_EPSILON_INSENSITIVE}

#: The suffix of a compiled loss's name on the signs of 0/1 labels.
SIGNS_SUFFIX = "_on_signs"

#: Tweedie powers with a compiled loss (with the log link): the compound Poisson-Gamma
#: range and powers above 2 up to this (its ``exp`` arguments stay in range).
MAX_COMPILED_POWER = 10.0


def loss_code(family):
    """``(code, parameter)`` of ``family``'s loss in the compiled loops, or None when they
    have none (the family's :meth:`compiled_loss` names none, or a Tweedie power beyond
    :data:`MAX_COMPILED_POWER`); a name ending in :data:`SIGNS_SUFFIX` is its loss on the
    signs of 0/1 labels (:data:`ON_SIGNS` added to the code)."""
    named = getattr(family, "compiled_loss", lambda: None)()
    if named is None:
        return None
    name, parameter = named
    if name == "tweedie_log" and parameter > MAX_COMPILED_POWER:
        return None
    if name.endswith(SIGNS_SUFFIX):
        return CODES[name[: -len(SIGNS_SUFFIX)]] + ON_SIGNS, float(parameter)
    return CODES[name], float(parameter)
