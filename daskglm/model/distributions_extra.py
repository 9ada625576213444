"""More exponential-dispersion distributions: Gamma, inverse Gaussian, Tweedie and the
negative binomial with a fixed ``alpha``.

Each is one :class:`~daskglm.model.distributions.Distribution` subclass, written as the
ones in :mod:`daskglm.model.distributions`: the unit loss is the half unit deviance up to
terms free of ``mu`` (so that the mean loss differs from scikit-learn's mean half deviance
by a constant only), ``variance`` is ``V(mu)``, ``deviance`` statsmodels' and scikit-learn's.
``log_likelihood_sums`` and ``log_likelihood`` give the full log-likelihood at a dispersion
(the statistics of :mod:`daskglm.compute.inference` and the estimators' ``aic_``).

``canonical_link`` of each is the default link of statsmodels' family of the same name:
the inverse for the Gamma, ``1 / mu**2`` for the inverse Gaussian (both canonical up to a
constant factor), and the log for the negative binomial and the Tweedie, where it is the
default link but not the canonical one (that depends on ``alpha`` or ``power``;
``natural_canonical_link`` says so, and ``Family.exact_d2loss`` follows it).  Under the log
link the Gamma, negative binomial and Tweedie (power in [1, 2]) losses are convex in the
predictor at every target: ``log_link_curvature`` is their exact second derivative, which
Newton's Hessian takes (``Family.hessian_d2loss``).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from ..backend import namespace
from .distributions import Distribution, GaussianDistribution, PoissonDistribution
from .links import Inverse, Log, Power
from .numerics import EPS, gammaln, weighted_sum, xlogy

__all__ = [
    "GammaDistribution", "InverseGaussianDistribution", "TweedieDistribution",
    "NegativeBinomialDistribution",
]


def _positive_target(y, name):
    xp = namespace(y)
    y = xp.asarray(y)
    if y.size and float(xp.min(y)) <= 0:
        raise ValueError(f"{name} family needs strictly positive targets; got a value <= 0.")


def _weights_sum(y, weight):
    return float(y.shape[0]) if weight is None else float(namespace(weight).sum(weight))


class GammaDistribution(Distribution):
    """Gamma distribution: unit loss ``y / mu + log(mu)``, ``V(mu) = mu**2``, targets > 0;
    means are clipped at ``eps`` from below."""

    name = "gamma"
    canonical_link = Inverse()
    start_mean = 1.0
    convex_in_log_link = True

    def log_link_curvature(self, y, mu):
        return y / mu

    def unit_loss(self, y, mu):
        return y / mu + namespace(mu).log(mu)

    def unit_loss_derivative(self, y, mu):
        return (mu - y) / mu**2

    def variance(self, mu):
        return mu**2

    def variance_derivative(self, mu):
        return 2.0 * mu

    def clip_mean(self, mu):
        return namespace(mu).maximum(mu, EPS)

    def deviance(self, y, mu, weight=None):
        ratio = y / mu
        return weighted_sum(2.0 * (ratio - namespace(ratio).log(ratio) - 1.0), weight)

    def check_target(self, y):
        _positive_target(y, "Gamma")

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[sum w log(y / mu), sum w y / mu, sum w log y, sum w]``."""
        xp = namespace(mu)
        return np.array([weighted_sum(xp.log(y / mu), weight), weighted_sum(y / mu, weight),
                         weighted_sum(xp.log(y), weight), _weights_sum(y, weight)])

    def log_likelihood(self, sums, scale):
        log_ratio, ratio, log_y, total = sums
        shape = 1.0 / scale
        return (shape * log_ratio - shape * math.log(scale) * total - shape * ratio
                - total * gammaln(shape) - log_y)


class InverseGaussianDistribution(Distribution):
    """Inverse Gaussian distribution: unit loss ``y / (2 mu**2) - 1 / mu``,
    ``V(mu) = mu**3``, targets > 0; means are clipped at ``eps`` from below."""

    name = "inverse_gaussian"
    canonical_link = Power(-2.0)
    start_mean = 1.0

    def unit_loss(self, y, mu):
        return y / (2.0 * mu**2) - 1.0 / mu

    def unit_loss_derivative(self, y, mu):
        return (mu - y) / mu**3

    def variance(self, mu):
        return mu**3

    def variance_derivative(self, mu):
        return 3.0 * mu**2

    def clip_mean(self, mu):
        return namespace(mu).maximum(mu, EPS)

    def deviance(self, y, mu, weight=None):
        return weighted_sum((y - mu) ** 2 / (y * mu**2), weight)

    def check_target(self, y):
        _positive_target(y, "Inverse Gaussian")

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[deviance, sum w log y, sum w]``."""
        log_y = namespace(y).log(y)
        return np.array([self.deviance(y, mu, weight), weighted_sum(log_y, weight),
                         _weights_sum(y, weight)])

    def log_likelihood(self, sums, scale):
        deviance, log_y, total = sums
        return -0.5 * (deviance / scale + total * math.log(2.0 * math.pi * scale) + 3.0 * log_y)


class NegativeBinomialDistribution(Distribution):
    """Negative binomial distribution with a fixed ``alpha`` (statsmodels'
    ``NegativeBinomial(alpha)`` family): ``V(mu) = mu + alpha mu**2``, unit loss
    ``(y + 1 / alpha) log(1 + alpha mu) - y log mu``, counts >= 0.

    Parameters
    ----------
    alpha : float, default=1.0
        The ancillary parameter, > 0 (statsmodels' default is 1).
    """

    name = "negative_binomial"
    canonical_link = Log()
    natural_canonical_link = False  # the natural link is log(mu / (mu + 1 / alpha))
    convex_in_log_link = True
    start_mean = 1.0
    has_unit_dispersion = True

    def __init__(self, alpha=1.0):
        if isinstance(alpha, bool) or not isinstance(alpha, Real) or not alpha > 0 \
                or not math.isfinite(alpha):
            raise ValueError(f"Negative binomial alpha must be a finite number > 0; got {alpha!r}.")
        self.alpha = float(alpha)

    def unit_loss(self, y, mu):
        return (y + 1.0 / self.alpha) * namespace(mu).log1p(self.alpha * mu) - xlogy(y, mu)

    def variance(self, mu):
        return mu + self.alpha * mu**2

    def log_link_curvature(self, y, mu):
        return (self.alpha * y + 1.0) * mu / (1.0 + self.alpha * mu) ** 2

    def variance_derivative(self, mu):
        return 1.0 + 2.0 * self.alpha * mu

    def clip_mean(self, mu):
        return namespace(mu).maximum(mu, EPS)

    def deviance(self, y, mu, weight=None):
        inv = 1.0 / self.alpha
        log = namespace(mu).log
        unit = 2.0 * (xlogy(y, y / mu)
                      - (y + inv) * log((1.0 + self.alpha * y) / (1.0 + self.alpha * mu)))
        return weighted_sum(unit, weight)

    def check_target(self, y):
        xp = namespace(y)
        y = xp.asarray(y)
        if y.size and float(xp.min(y)) < 0:
            raise ValueError("Negative binomial family needs non-negative targets; "
                             "got a negative value.")

    def log_likelihood_sums(self, y, mu, weight=None):
        """``[log-likelihood]`` (the dispersion is fixed at 1)."""
        a = self.alpha
        unit = (xlogy(y, a * mu / (1.0 + a * mu)) - namespace(mu).log1p(a * mu) / a
                + gammaln(y + 1.0 / a) - gammaln(y + 1.0) - gammaln(1.0 / a))
        return np.array([weighted_sum(unit, weight)])

    def log_likelihood(self, sums, scale):
        return float(sums[0])

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self.alpha!r})"

    def __eq__(self, other):
        return type(self) is type(other) and self.alpha == other.alpha

    def __hash__(self):
        return hash((type(self), self.alpha))


class TweedieDistribution(Distribution):
    """Tweedie distribution with power ``p``: ``V(mu) = mu**p``.

    ``p = 0`` is the normal, 1 the Poisson, in (1, 2) compound Poisson-Gamma, 2 the Gamma,
    3 the inverse Gaussian; ``p`` in (0, 1) has no distribution and is refused.  The unit
    loss is the half unit deviance's part in ``mu``: ``mu**(2-p) / (2-p) - y mu**(1-p) /
    (1-p)`` (the Poisson and Gamma forms at 1 and 2).  Targets: any real for ``p <= 0``,
    ``>= 0`` for ``1 <= p < 2``, ``> 0`` for ``p >= 2``.  The full log-likelihood has no
    closed form for non-integer powers: :meth:`log_likelihood_sums` is None there, and an
    estimator's ``aic_`` and ``bic_`` are NaN.

    Parameters
    ----------
    power : float, default=0.0
    """

    name = "tweedie"
    canonical_link = Log()
    start_mean = 1.0

    def __init__(self, power=0.0):
        if isinstance(power, bool) or not isinstance(power, Real) or not math.isfinite(power):
            raise ValueError(f"Tweedie power must be a finite real number; got {power!r}.")
        if 0 < power < 1:
            raise ValueError(f"Tweedie power in (0, 1) has no distribution; got {power!r}.")
        self.power = float(power)

    @property
    def natural_canonical_link(self):
        """The log link is the natural one for the Poisson case (``power`` 1) only."""
        return self.power == 1.0

    @property
    def convex_in_log_link(self):
        """Convex with the log link for ``power`` in [1, 2], where the targets are >= 0."""
        return 1.0 <= self.power <= 2.0

    def log_link_curvature(self, y, mu):
        p = self.power
        return (2.0 - p) * mu ** (2.0 - p) + (p - 1.0) * y * mu ** (1.0 - p)

    def unit_loss(self, y, mu):
        p = self.power
        if p == 0:
            return GaussianDistribution().unit_loss(y, mu)
        if p == 1:
            return PoissonDistribution().unit_loss(y, mu)
        if p == 2:
            return GammaDistribution().unit_loss(y, mu)
        return mu ** (2.0 - p) / (2.0 - p) - y * mu ** (1.0 - p) / (1.0 - p)

    def unit_loss_derivative(self, y, mu):
        return (mu - y) * mu ** (-self.power)

    def variance(self, mu):
        return mu**self.power

    def variance_derivative(self, mu):
        if self.power == 0:
            return namespace(mu).zeros_like(mu)
        return self.power * mu ** (self.power - 1.0)

    def clip_mean(self, mu):
        return mu if self.power <= 0 else namespace(mu).maximum(mu, EPS)

    def deviance(self, y, mu, weight=None):
        p = self.power
        if p == 0:
            return GaussianDistribution().deviance(y, mu, weight)
        if p == 1:
            return PoissonDistribution().deviance(y, mu, weight)
        if p == 2:
            return GammaDistribution().deviance(y, mu, weight)
        first = namespace(y).maximum(y, 0.0) ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
        unit = 2.0 * (first - y * mu ** (1.0 - p) / (1.0 - p) + mu ** (2.0 - p) / (2.0 - p))
        return weighted_sum(unit, weight)

    def check_target(self, y):
        p = self.power
        xp = namespace(y)
        y = xp.asarray(y)
        if not y.size or p <= 0:
            return
        if 1 <= p < 2 and float(xp.min(y)) < 0:
            raise ValueError(f"Tweedie family with power {p:g} needs non-negative targets; "
                             "got a negative value.")
        if p >= 2 and float(xp.min(y)) <= 0:
            raise ValueError(f"Tweedie family with power {p:g} needs strictly positive "
                             "targets; got a value <= 0.")

    def _exact(self):
        return {0.0: GaussianDistribution(), 2.0: GammaDistribution(),
                3.0: InverseGaussianDistribution()}.get(self.power)

    def log_likelihood_sums(self, y, mu, weight=None):
        exact = self._exact()
        return None if exact is None else exact.log_likelihood_sums(y, mu, weight)

    def log_likelihood(self, sums, scale):
        return self._exact().log_likelihood(sums, scale)

    def __repr__(self):
        return f"{type(self).__name__}(power={self.power!r})"

    def __eq__(self, other):
        return type(self) is type(other) and self.power == other.power

    def __hash__(self):
        return hash((type(self), self.power))
