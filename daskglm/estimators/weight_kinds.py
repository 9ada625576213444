"""The kind of the row weights for inference: ``fit(..., weights_kind=...)``.

The fit itself is the same for every kind (the weighted loss); the kind decides the
statistics of ``inference=True`` that count observations: ``nobs_``, ``df_resid_``, the
estimated dispersion and with it the standard errors, and the log-likelihood (``llf_``,
``aic_``, ``bic_``).  See :mod:`daskglm.model.weight_kinds` for the kinds, and the user
guide's section on weights for how each matches statsmodels and R.
"""

from __future__ import annotations

from ..model.weight_kinds import WEIGHTS_KINDS

__all__ = ["check_weights_kind", "observation_count"]


def check_weights_kind(weights_kind, family, classifier=False):
    """``weights_kind`` checked for ``family`` (None is ``"frequency"``): a ValueError,
    before any work, for an unknown kind, or for ``"trials"`` outside the binomial GLM
    (a classifier's targets are labels, not proportions)."""
    if weights_kind is None:
        return WEIGHTS_KINDS[0]
    if not isinstance(weights_kind, str) or weights_kind not in WEIGHTS_KINDS:
        raise ValueError(f"weights_kind must be one of {WEIGHTS_KINDS} (or None for "
                         f"'frequency'); got {weights_kind!r}.")
    if weights_kind == "trials" and not family.distribution.counts_trials:
        raise ValueError(f"weights_kind='trials' (weights that count binomial trials) needs "
                         f"the binomial family; got {family!r}.")
    if weights_kind == "trials" and classifier:
        raise ValueError("weights_kind='trials' is for proportions of successes: fit them "
                         "with GLM(family='binomial'); a classifier's targets are labels.")
    return weights_kind


def observation_count(sums, weights_kind):
    """The number of observations of the inference round's ``sums``: the total weight for
    frequency weights (statsmodels' ``wnobs``), the rows of positive weight otherwise."""
    if weights_kind == "frequency":
        return float(sums.weight)
    return float(sums.kind_sums[0])
