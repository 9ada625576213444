"""What a row weight means to the log-likelihood: the kinds of weights of
``fit(..., weights_kind=...)``.

``"frequency"``
    Row ``i`` stands for ``w_i`` identical observations (statsmodels' ``freq_weights``):
    the log-likelihood is ``sum_i w_i l(y_i; mu_i, scale)``, and the distributions' own
    ``log_likelihood_sums`` (called with the weights) give it.
``"analytic"``
    Row ``i`` is one observation of variance ``scale V(mu_i) / w_i`` (statsmodels'
    ``var_weights``, ``WLS`` weights, survey weights): the log-likelihood is
    ``sum_i l(y_i; mu_i, scale / w_i)``.  Where the dispersion is fixed at 1 (binomial,
    Poisson, negative binomial) that is the frequency kind's sum; otherwise it needs the
    sums of :func:`weighted_loglik_sums` too (for the Gamma, a sum of ``log Gamma(w_i /
    scale)``, :mod:`daskglm.model.log_gamma_sums`).
``"trials"``
    The binomial only: row ``i`` holds the proportion ``y_i`` of ``w_i`` trials, and the
    log-likelihood is R's (and statsmodels' with a two-column target), with the log
    binomial coefficient ``log C(w_i, w_i y_i)``.

For both non-frequency kinds the rows of zero weight are left out of the count of
observations (R's rule; statsmodels counts them), which is the first of their sums.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .distributions import GaussianDistribution
from .distributions_extra import GammaDistribution, InverseGaussianDistribution, TweedieDistribution
from .log_gamma_sums import log_gamma_sums, sum_log_gamma

__all__ = ["WEIGHTS_KINDS", "weighted_loglik_sums", "kind_sums_size", "log_likelihood_of_kind"]

#: The kinds of row weights, the first the default.
WEIGHTS_KINDS = ("frequency", "analytic", "trials")


def _exact(distribution):
    """The distribution whose formulas apply (a Tweedie of power 0, 2 or 3 is the
    Gaussian, Gamma or inverse Gaussian)."""
    if isinstance(distribution, TweedieDistribution):
        return distribution._exact() or distribution
    return distribution


def weighted_loglik_sums(distribution, y, mu, weight, kind):
    """Additive sums of the rows of positive weight that the log-likelihood of ``kind``
    (``"analytic"`` or ``"trials"``) needs beyond the distribution's own sums:
    ``[count, ...]``.  ``y``, ``mu`` and ``weight`` are numpy arrays (``weight`` None for
    unit weights)."""
    weight = np.ones_like(y, dtype=np.float64) if weight is None else np.asarray(weight)
    positive = weight > 0
    y, mu, weight = np.asarray(y)[positive], np.asarray(mu)[positive], weight[positive]
    count = [float(y.shape[0])]
    if kind == "trials":
        successes = weight * y
        log_choose = gammaln(weight + 1.0) - gammaln(successes + 1.0) \
            - gammaln(weight - successes + 1.0)
        return np.array(count + [float(log_choose.sum())])
    distribution = _exact(distribution)
    if isinstance(distribution, GaussianDistribution):
        return np.array(count + [float(np.log(weight).sum())])
    if isinstance(distribution, InverseGaussianDistribution):
        return np.array(count + [float(np.log(weight).sum()), float(np.log(y).sum())])
    if isinstance(distribution, GammaDistribution):
        return np.concatenate([count, [float(np.log(y).sum())], log_gamma_sums(weight)])
    return np.array(count)


def kind_sums_size(distribution, kind):
    """Entries of :func:`weighted_loglik_sums` of ``distribution`` for ``kind``: what the
    inference round returns besides the frequency kind's sums (0 for ``"frequency"``)."""
    if kind == "frequency":
        return 0
    empty = np.zeros(0)
    return int(weighted_loglik_sums(distribution, empty, empty, None, kind).size)


def log_likelihood_of_kind(distribution, frequency_sums, sums, scale, kind):
    """The log-likelihood at ``scale`` from the distribution's ``log_likelihood_sums``
    (``frequency_sums``, with the weights) and, for the ``"analytic"`` and ``"trials"``
    kinds, :func:`weighted_loglik_sums`' ``sums``."""
    if kind == "frequency":
        return float(distribution.log_likelihood(frequency_sums, scale))
    if kind == "trials":
        if not distribution.counts_trials:
            raise ValueError("weights_kind='trials' is for the binomial family.")
        return float(frequency_sums[0] + sums[1])
    count = sums[0]
    distribution = _exact(distribution)
    if isinstance(distribution, GaussianDistribution):
        squares = frequency_sums[0]
        return float(distribution.log_likelihood([squares, count], scale) + 0.5 * sums[1])
    if isinstance(distribution, InverseGaussianDistribution):
        deviance = frequency_sums[0]
        log_w, log_y = sums[1], sums[2]
        return float(-0.5 * (deviance / scale + count * np.log(2.0 * np.pi * scale)
                             + 3.0 * log_y - log_w))
    if isinstance(distribution, GammaDistribution):
        log_ratio, ratio = frequency_sums[0], frequency_sums[1]
        log_y, weights = sums[1], sums[2:]
        total, w_log_w = weights[1], weights[2]
        shape = 1.0 / scale
        return float(shape * (w_log_w - np.log(scale) * total + log_ratio - ratio)
                     - sum_log_gamma(weights, shape) - log_y)
    return float(distribution.log_likelihood(frequency_sums, scale))

