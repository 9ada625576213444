"""Exponential-dispersion distributions in terms of their mean ``mu``.

A distribution knows the unit loss (negative log-likelihood up to terms free of ``mu``),
its variance function ``V(mu)``, the deviance, the support of the target and its
canonical link.  A new distribution is one :class:`Distribution` subclass; see
:mod:`daskglm.model.families` for how it meets a link.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import namespace
from .links import Identity, Link, Log, Logit
from .numerics import EPS, float64_array, gammaln, weighted_sum, xlogy

__all__ = ["Distribution", "GaussianDistribution", "BinomialDistribution", "PoissonDistribution"]


# --------------------------------------------------------------------------------------
# distributions


class Distribution:
    """An exponential-dispersion distribution in terms of its mean ``mu``.

    Subclasses implement :meth:`unit_loss`, :meth:`variance`, :meth:`deviance`, and set
    ``name`` and ``canonical_link``; :meth:`check_target` and :meth:`clip_mean` have
    permissive defaults, and ``start_mean`` is a mean inside the domain.
    """

    name = "distribution"
    #: The link that makes ``eta`` the natural parameter (the negative binomial and Tweedie
    #: distributions name their default, the log link: see :attr:`natural_canonical_link`).
    canonical_link: Link = Identity()
    #: Whether :attr:`canonical_link` makes ``eta`` the natural parameter, so that with it
    #: a family's ``d2loss`` is the loss's exact second derivative.
    natural_canonical_link = True
    #: Whether the unit loss is convex in ``eta = log(mu)`` at every target of the
    #: support: Newton's Hessian with the log link is then the exact one
    #: (:meth:`log_link_curvature`), not the Fisher weight.
    convex_in_log_link = False
    #: A typical mean inside the domain: a non-canonical family starts its fits from the
    #: intercept ``g(start_mean)``.
    start_mean = 1.0
    #: Whether the dispersion is 1, known rather than estimated (binomial, Poisson, negative
    #: binomial): the standard errors of ``inference=True`` are then not scaled by Pearson's
    #: chi-squared over the residual degrees of freedom.
    has_unit_dispersion = False
    #: Whether the unit loss is half the squared error ``(y - mu)**2 / 2`` and the deviance
    #: the sum of squared errors (the normal distribution): with the identity link the
    #: family is least squares (:attr:`~daskglm.model.families.Family.quadratic`), and with
    #: any link a regressor's ``score`` is scikit-learn's R^2 of the squared errors.
    squared_error = False
    #: Whether the support of the target takes negative values (the normal distribution),
    #: so that scikit-learn's tags do not mark the targets ``positive_only``.
    allows_negative_targets = False
    #: Whether a target may be a proportion of successes whose weight counts the trials
    #: (the binomial): ``weights_kind="trials"`` and two-column targets of successes and
    #: failures are then accepted.
    counts_trials = False

    def unit_loss(self, y, mu):
        """Per-row negative log-likelihood, up to terms free of ``mu``."""
        raise NotImplementedError

    def unit_loss_derivative(self, y, mu):
        """``d unit_loss / d mu``; ``(mu - y) / V(mu)`` for every exponential family."""
        return (mu - y) / self.variance(mu)

    def variance(self, mu):
        """The variance function ``V(mu)``."""
        raise NotImplementedError

    def variance_derivative(self, mu):
        """``dV/dmu``, for the observed information of a non-canonical link."""
        raise NotImplementedError

    def deviance(self, y, mu, weight=None):
        """Weighted sum of unit deviances ``2 * (loglik(y; y) - loglik(y; mu))``."""
        raise NotImplementedError

    def log_link_curvature(self, y, mu):
        """The unit loss's second derivative in ``eta = log(mu)``, where
        :attr:`convex_in_log_link` (never negative there)."""
        raise NotImplementedError

    def check_target(self, y):
        """Raise ValueError if ``y`` holds values outside the distribution's support."""

    def clip_mean(self, mu):
        """``mu`` moved into the domain of the mean (where the loss is finite)."""
        return mu

    def log_likelihood_sums(self, y, mu, weight=None):
        """Additive sums over rows from which :meth:`log_likelihood` gives the full
        log-likelihood at any dispersion; None when it has no closed form."""
        return None

    def log_likelihood(self, sums, scale):
        """The weighted log-likelihood from :meth:`log_likelihood_sums` at dispersion
        ``scale``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class GaussianDistribution(Distribution):
    """Normal distribution, unit loss ``(y - mu)**2 / 2``, ``V(mu) = 1``."""

    name = "gaussian"
    canonical_link = Identity()
    start_mean = 1.0
    squared_error = True
    allows_negative_targets = True

    def unit_loss(self, y, mu):
        return 0.5 * (y - mu) ** 2

    def unit_loss_derivative(self, y, mu):
        return mu - y

    def variance(self, mu):
        mu = float64_array(mu)
        return namespace(mu).ones_like(mu)

    def variance_derivative(self, mu):
        mu = float64_array(mu)
        return namespace(mu).zeros_like(mu)

    def deviance(self, y, mu, weight=None):
        return weighted_sum((y - mu) ** 2, weight)

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[sum w (y - mu)**2, sum w]``."""
        total = float(y.shape[0]) if weight is None else float(namespace(weight).sum(weight))
        return np.array([self.deviance(y, mu, weight), total])

    def log_likelihood(self, sums, scale):
        squares, total = sums
        return -0.5 * (squares / scale + total * math.log(2.0 * math.pi * scale))


class BinomialDistribution(Distribution):
    """Binomial distribution of a proportion in [0, 1] (Bernoulli for targets in {0, 1};
    the numbers of trials are the weights): unit loss ``-y log mu - (1 - y) log(1 - mu)``,
    ``V(mu) = mu (1 - mu)``; means are clipped to ``[eps, 1 - eps]``."""

    name = "binomial"
    canonical_link = Logit()
    start_mean = 0.5
    has_unit_dispersion = True
    counts_trials = True

    def unit_loss(self, y, mu):
        return -(xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu))

    def variance(self, mu):
        return mu * (1.0 - mu)

    def variance_derivative(self, mu):
        return 1.0 - 2.0 * mu

    def clip_mean(self, mu):
        return namespace(mu).clip(mu, EPS, 1.0 - EPS)

    def deviance(self, y, mu, weight=None):
        """``2 sum w (y log(y / mu) + (1 - y) log((1 - y) / (1 - mu)))``: for targets in
        {0, 1} the saturated terms are zero; for proportions they are not."""
        mu = namespace(mu).clip(mu, 1e-300, 1.0 - 1e-16)
        unit = -2.0 * (xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu)
                       - xlogy(y, y) - xlogy(1.0 - y, 1.0 - y))
        return weighted_sum(unit, weight)

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[sum w (y log mu + (1 - y) log(1 - mu)), -sum w (log Gamma(y + 1) +
        log Gamma(2 - y))]``: statsmodels' binomial log-likelihood of a target of one
        trial, whose second sum is zero for targets in {0, 1}."""
        mu = namespace(mu).clip(mu, 1e-300, 1.0 - 1e-16)
        constant = -(gammaln(y + 1.0) + gammaln(2.0 - y))
        return np.array([weighted_sum(xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu), weight),
                         weighted_sum(constant, weight)])

    def log_likelihood(self, sums, scale):
        return float(sums[0] + sums[1])

    def check_target(self, y):
        """Targets in [0, 1]: labels 0 and 1, or proportions of successes (with the
        numbers of trials as weights)."""
        xp = namespace(y)
        y = xp.asarray(y)
        if y.size and not bool(xp.all((y >= 0) & (y <= 1))):
            raise ValueError("Binomial family needs targets in [0, 1] (0/1 labels or "
                             "proportions of successes); got a value outside.")


class PoissonDistribution(Distribution):
    """Poisson distribution: unit loss ``mu - y log mu``, ``V(mu) = mu``; means are
    clipped at ``eps`` from below."""

    name = "poisson"
    canonical_link = Log()
    start_mean = 1.0
    has_unit_dispersion = True

    def unit_loss(self, y, mu):
        return mu - xlogy(y, mu)

    def unit_loss_derivative(self, y, mu):
        return 1.0 - y / mu

    def variance(self, mu):
        return mu

    def variance_derivative(self, mu):
        mu = float64_array(mu)
        return namespace(mu).ones_like(mu)

    def clip_mean(self, mu):
        return namespace(mu).maximum(mu, EPS)

    def deviance(self, y, mu, weight=None):
        unit = 2.0 * (xlogy(y, y) - xlogy(y, mu) - y + mu)
        return weighted_sum(unit, weight)

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[log-likelihood]``."""
        return np.array([weighted_sum(xlogy(y, mu) - mu - gammaln(y + 1.0), weight)])

    def log_likelihood(self, sums, scale):
        return float(sums[0])

    def check_target(self, y):
        xp = namespace(y)
        y = xp.asarray(y)
        if y.size and float(xp.min(y)) < 0:
            raise ValueError("Poisson family needs non-negative targets; got a negative value.")
