"""Exponential-family distributions and link functions, apart.

A :class:`Family` is a :class:`Distribution` and a :class:`Link`.  It only ever sees the
linear predictor ``eta = X @ coef + intercept``, never ``X``: it turns ``eta`` into
per-row losses, first and second derivatives, and every product with ``X`` lives in
:mod:`daskglm.compute.kernels`.  Losses are negative log-likelihoods up to terms that do not
depend on ``eta``; :meth:`Family.deviance` adds those terms back.

The distribution knows the unit loss in terms of the mean ``mu``, its variance function
``V(mu)``, the deviance, the support of the target and its canonical link.  The link
knows ``eta = g(mu)``, the mean ``mu = g^{-1}(eta)`` and the first two derivatives of the
mean in ``eta``.  The family joins them by the chain rule::

    dloss/deta = w * dl/dmu * dmu/deta = w * (mu - y) / V(mu) * dmu/deta
    d2loss     = w * (dmu/deta)**2 / V(mu)        (the expected, Fisher, information)

For a non-canonical link ``d2loss`` is the Fisher weight, the expectation over the target
of the second derivative (what statsmodels' IRLS uses).  It is never negative, as the
kernels need, and Newton's method with such a link is Fisher scoring.  With a canonical
link that makes ``eta`` the natural parameter the two coincide (:attr:`Family.exact_d2loss`;
the negative binomial's and Tweedie's ``canonical_link``, the log, is their default and
natural for the Poisson only), and :class:`Gaussian`, :class:`Binomial` and
:class:`Poisson` use their own closed forms (fast paths).  Newton's Hessian weights are
:meth:`Family.hessian_d2loss`: the exact second derivative where it is never negative
(also the log link of the Gamma, negative binomial and Tweedie with power in [1, 2]),
``d2loss`` otherwise.

A new distribution is one :class:`Distribution` subclass (``unit_loss``, ``variance``,
``deviance``, ``check_target``, ``canonical_link``); ``Family(distribution, link)`` then
works with every link.

All functions take arrays of any library of the Python array API standard (numpy,
CuPy, ...; see :mod:`daskglm.backend`) and return arrays of the same.  The canonical families stay finite for
``|eta|`` up to at least 1e3 (``exp`` overflows past about 709).  With other links the
linear predictor is clipped into each link's safe range and the mean into the
distribution's domain (:meth:`Distribution.clip_mean`), so values stay finite too; there
the losses are those of the clipped mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..backend import namespace
from .distributions import (
    BinomialDistribution,
    Distribution,
    GaussianDistribution,
    PoissonDistribution,
)
from .distributions_extra import (
    GammaDistribution,
    InverseGaussianDistribution,
    NegativeBinomialDistribution,
    TweedieDistribution,
)
from .links import Identity, Log, get_link
from .numerics import expit, scale_by_weight, split_exponent, weighted_sum

__all__ = [
    "Family", "Gaussian", "Binomial", "Poisson", "Gamma", "InverseGaussian", "Tweedie",
    "NegativeBinomial", "get_family",
]


# --------------------------------------------------------------------------------------
# families


class Family:
    """A distribution and a link: per-row loss and derivatives in ``eta``.

    ``Family(distribution, link)`` works for any pair by the chain rule (see the module
    docstring); ``link=None`` is the distribution's canonical link.  :class:`Gaussian`,
    :class:`Binomial` and :class:`Poisson` are the families of the three distributions and
    take a ``link`` too; with their canonical link they use exact closed forms.

    Families compare equal when they are of the same class with equal distribution and
    link, and pickle (they travel to Dask workers).
    """

    name = "family"
    #: Whether fits start the intercept at ``g(weighted mean target) - mean offset``, read
    #: from the data, and :meth:`start_intercept` (used before the data are read) is
    #: ``g(start_mean)`` with every link (:class:`StartAtTypicalMean`).
    starts_at_mean_target = False

    def __init__(self, distribution, link=None):
        if not isinstance(distribution, Distribution):
            raise TypeError(f"Family needs a Distribution; got {distribution!r}.")
        self.distribution = distribution
        self.link = distribution.canonical_link if link is None else get_link(link)
        self.name = distribution.name

    @property
    def canonical(self):
        """Whether the link is the distribution's canonical link."""
        return self.link == self.distribution.canonical_link

    def compiled_loss(self):
        """``(name, parameter)`` of this family's loss among the compiled row loops
        (:mod:`daskglm.compute.family_formulas`), or None: those kernels then take the generic
        path over :meth:`loss_and_dloss`.  A subclass that changes the loss must return
        None (the named families check their exact class)."""
        return None

    @property
    def exact_d2loss(self):
        """Whether :meth:`d2loss` is the loss's exact second derivative in ``eta`` (the link
        makes ``eta`` the natural parameter), not only its expectation over the target."""
        return self.canonical and self.distribution.natural_canonical_link

    @property
    def exact_hessian(self):
        """Whether :meth:`hessian_d2loss` is the loss's exact second derivative in ``eta``:
        with :attr:`exact_d2loss`, and with the log link of a distribution convex in it
        (Gamma, negative binomial, Tweedie with ``power`` in [1, 2])."""
        return self.exact_d2loss or self._convex_log_link

    @property
    def _convex_log_link(self):
        return isinstance(self.link, Log) and self.distribution.convex_in_log_link

    @property
    def quadratic(self):
        """Whether the loss is squared error: the identity link and a distribution that
        declares ``squared_error`` (the Gaussian)."""
        return self.distribution.squared_error and isinstance(self.link, Identity)

    def with_link(self, link):
        """The same distribution with another link (``None``: the canonical one)."""
        return Family(self.distribution, link)

    def _mean_and_slope(self, eta):
        """The clipped mean and ``dmu/deta``."""
        mu = self.distribution.clip_mean(self.link.inverse(eta))
        return mu, self.link.inverse_derivative(eta)

    def pointwise_loss(self, y, eta):
        mu = self.distribution.clip_mean(self.link.inverse(eta))
        return self.distribution.unit_loss(y, mu)

    def mean(self, eta):
        """Inverse link: the expected target given ``eta``."""
        return self.link.inverse(eta)

    def variance(self, eta):
        """``d2loss`` per unit weight: the Fisher weight ``(dmu/deta)**2 / V(mu)``.

        Where the link makes ``eta`` the natural parameter it equals ``dmu/deta`` and
        ``V(mu)`` alike.  It sets the curvature at the start
        (:meth:`daskglm.solvers.Problem.curvature_at`).
        """
        mu, slope = self._mean_and_slope(eta)
        return slope**2 / self.distribution.variance(mu)

    def inverse_link(self, eta):
        """Alias of :meth:`mean`."""
        return self.mean(eta)

    def start_intercept(self):
        """The intercept of a first iterate: 0 for the canonical link (unless
        :attr:`starts_at_mean_target`); otherwise ``g(start_mean)`` (1 for a Poisson with
        the identity link, 0 for a binomial with the probit link), or 0 where that is not
        finite."""
        if self.canonical and not self.starts_at_mean_target:
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eta = float(self.link.link(np.array([self.distribution.start_mean]))[0])
        return eta if math.isfinite(eta) else 0.0

    def loss(self, y, eta, weight=None):
        """Weighted SUM of the per-row losses."""
        return weighted_sum(self.pointwise_loss(y, eta), weight)

    def dloss(self, y, eta, weight=None):
        """Per-row derivative of the weighted loss with respect to ``eta``."""
        mu, slope = self._mean_and_slope(eta)
        return scale_by_weight(self.distribution.unit_loss_derivative(y, mu) * slope, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        """``(loss(y, eta, weight), dloss(y, eta, weight))`` sharing the work of both."""
        mu, slope = self._mean_and_slope(eta)
        loss = weighted_sum(self.distribution.unit_loss(y, mu), weight)
        return loss, scale_by_weight(self.distribution.unit_loss_derivative(y, mu) * slope, weight)

    def d2loss(self, y, eta, weight=None):
        """Per-row expected (Fisher) information in ``eta`` (IRLS weights): the exact
        second derivative where :attr:`exact_d2loss`."""
        return scale_by_weight(self.variance(eta), weight)

    def hessian_d2loss(self, y, eta, weight=None):
        """Per-row weights of Newton's Hessian: the exact second derivative where it is
        never negative (:attr:`exact_hessian`), else :meth:`d2loss` (Fisher scoring)."""
        if self.exact_d2loss or not self._convex_log_link:
            return self.d2loss(y, eta, weight)
        mu = self.distribution.clip_mean(self.link.inverse(eta))
        return scale_by_weight(self.distribution.log_link_curvature(y, mu), weight)

    def observed_d2loss(self, y, eta, weight=None):
        """Per-row observed second derivative of the loss in ``eta`` (the information of
        statsmodels' robust covariances); equal to :meth:`d2loss` where
        :attr:`exact_d2loss`, up to round-off.

        ``(dmu/deta)**2 * (1 / V - (mu - y) V' / V**2) + (mu - y) / V * d2mu/deta2``,
        which is the Fisher weight of :meth:`d2loss` for a truly canonical link.
        """
        mu, slope = self._mean_and_slope(eta)
        variance = self.distribution.variance(mu)
        residual = (mu - y) / variance
        curvature = self.link.inverse_second_derivative(eta)
        slope_term = 1.0 / variance - residual * self.distribution.variance_derivative(mu) / variance
        return scale_by_weight(slope**2 * slope_term + residual * curvature, weight)

    def deviance(self, y, mu, weight=None):
        """Weighted sum of unit deviances ``2 * (loglik(y; y) - loglik(y; mu))``."""
        return self.distribution.deviance(y, mu, weight)

    def check_target(self, y):
        """Raise ValueError if ``y`` holds values outside the family's support."""
        self.distribution.check_target(y)

    def __repr__(self):
        return f"{type(self).__name__}({self.distribution!r}, {self.link!r})"

    def __eq__(self, other):
        return (type(self) is type(other) and self.distribution == other.distribution
                and self.link == other.link)

    def __hash__(self):
        return hash((type(self), self.distribution, self.link))


class _NamedFamily(Family):
    """A family with its own class per distribution: ``Binomial()``, ``Binomial("probit")``."""

    _distribution: type[Distribution] = Distribution

    def __init__(self, link=None):
        super().__init__(self._distribution(), link)

    def with_link(self, link):
        return type(self)(link)

    def __repr__(self):
        if self.canonical:
            return f"{type(self).__name__}()"
        return f"{type(self).__name__}(link={self.link!r})"


class Gaussian(_NamedFamily):
    """Normal distribution, identity link by default: loss ``(y - eta)**2 / 2``."""

    name = "gaussian"
    _distribution = GaussianDistribution

    def pointwise_loss(self, y, eta):
        if not self.canonical:
            return super().pointwise_loss(y, eta)
        return 0.5 * (y - eta) ** 2

    def mean(self, eta):
        if not self.canonical:
            return super().mean(eta)
        return eta

    def variance(self, eta):
        if not self.canonical:
            return super().variance(eta)
        return namespace(eta).ones_like(eta)

    def dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().dloss(y, eta, weight)
        return scale_by_weight(self.mean(eta) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)

    def compiled_loss(self):
        return ("gaussian", 0.0) if type(self) is Gaussian and self.canonical else None


class Binomial(_NamedFamily):
    """Binomial distribution of targets in [0, 1] (labels 0 and 1, or proportions of
    successes with the numbers of trials as weights), logit link by default: loss
    ``log(1 + exp(eta)) - y * eta``; ``Binomial(link="probit")`` for probit regression."""

    name = "binomial"
    _distribution = BinomialDistribution

    def pointwise_loss(self, y, eta):
        if not self.canonical:
            return super().pointwise_loss(y, eta)
        xp = namespace(eta)
        return xp.logaddexp(0.0, eta) - y * eta

    def mean(self, eta):
        if not self.canonical:
            return super().mean(eta)
        return expit(eta)

    def variance(self, eta):
        if not self.canonical:
            return super().variance(eta)
        p = expit(eta)
        return p * (1.0 - p)

    def dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().dloss(y, eta, weight)
        return scale_by_weight(self.mean(eta) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        xp = namespace(eta)
        shrink = xp.exp(-xp.abs(eta))
        loss = xp.log1p(shrink) + xp.maximum(eta, 0.0) - y * eta
        prob = xp.where(eta >= 0, 1.0, shrink) / (1.0 + shrink)
        return weighted_sum(loss, weight), scale_by_weight(prob - y, weight)

    def compiled_loss(self):
        return ("binomial", 0.0) if type(self) is Binomial and self.canonical else None


class Poisson(_NamedFamily):
    """Poisson distribution, log link by default: loss ``exp(eta) - y * eta``.

    With the log link ``exp`` is continued quadratically above ``eta = 500`` so that
    nothing overflows.
    """

    name = "poisson"
    _distribution = PoissonDistribution

    def mean(self, eta):
        if not self.canonical:
            return super().mean(eta)
        safe, over = split_exponent(eta)
        return namespace(safe).exp(safe) * (1.0 + over + 0.5 * over**2)

    def variance(self, eta):
        if not self.canonical:
            return super().variance(eta)
        return self.mean(eta)

    def pointwise_loss(self, y, eta):
        if not self.canonical:
            return super().pointwise_loss(y, eta)
        return self.mean(eta) - y * eta

    def dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().dloss(y, eta, weight)
        safe, over = split_exponent(eta)
        return scale_by_weight(namespace(safe).exp(safe) * (1.0 + over) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)

    def d2loss(self, y, eta, weight=None):
        if not self.canonical:
            return super().d2loss(y, eta, weight)
        safe, _ = split_exponent(eta)
        return scale_by_weight(namespace(safe).exp(safe), weight)

    def compiled_loss(self):
        return ("poisson", 0.0) if type(self) is Poisson and self.canonical else None


class StartAtTypicalMean:
    """Fits start at ``g(mean target)``, or ``g(start_mean)`` before the data are read, with
    every link: for these distributions the canonical link maps ``eta = 0`` to no valid mean."""

    starts_at_mean_target = True


class Gamma(StartAtTypicalMean, _NamedFamily):
    """Gamma distribution (targets > 0), inverse link by default as in statsmodels;
    ``Gamma("log")`` is scikit-learn's :class:`~sklearn.linear_model.GammaRegressor`."""

    name = "gamma"
    _distribution = GammaDistribution

    def compiled_loss(self):
        return ("gamma_log", 0.0) if type(self) is Gamma and type(self.link) is Log else None


class InverseGaussian(StartAtTypicalMean, _NamedFamily):
    """Inverse Gaussian distribution (targets > 0), link ``1 / mu**2`` by default."""

    name = "inverse_gaussian"
    _distribution = InverseGaussianDistribution


class _ParametrisedFamily(StartAtTypicalMean, Family):
    """A family whose distribution takes one parameter (``_parameter``)."""

    _parameter = "parameter"

    def with_link(self, link):
        return type(self)(getattr(self.distribution, self._parameter), link)

    def __repr__(self):
        value = getattr(self.distribution, self._parameter)
        if self.canonical:
            return f"{type(self).__name__}({self._parameter}={value!r})"
        return f"{type(self).__name__}({self._parameter}={value!r}, link={self.link!r})"


class Tweedie(_ParametrisedFamily):
    """Tweedie distribution with variance ``mu**power``, log link by default.

    ``power`` 0 is the normal, 1 the Poisson, in (1, 2) compound Poisson-Gamma, 2 the Gamma,
    3 the inverse Gaussian (see :class:`~daskglm.model.distributions_extra.TweedieDistribution`).
    """

    name = "tweedie"
    _parameter = "power"

    def __init__(self, power=0.0, link=None):
        super().__init__(TweedieDistribution(power), link)

    @property
    def power(self):
        return self.distribution.power

    def compiled_loss(self):
        """The Gamma's loop at power 2, the Tweedie loop above 1 (the loops decide up to
        which power they hold)."""
        if type(self) is not Tweedie or type(self.link) is not Log or not self.power > 1.0:
            return None
        return ("gamma_log", 0.0) if self.power == 2.0 else ("tweedie_log", float(self.power))


class NegativeBinomial(_ParametrisedFamily):
    """Negative binomial distribution with a fixed ``alpha`` (``V(mu) = mu + alpha mu**2``),
    log link by default, as statsmodels' ``families.NegativeBinomial(alpha=alpha)``."""

    name = "negative_binomial"
    _parameter = "alpha"

    def __init__(self, alpha=1.0, link=None):
        super().__init__(NegativeBinomialDistribution(alpha), link)

    @property
    def alpha(self):
        return self.distribution.alpha

    def compiled_loss(self):
        if type(self) is not NegativeBinomial or type(self.link) is not Log:
            return None
        return "negative_binomial_log", float(self.alpha)


_FAMILIES: dict[str, Callable[..., Family]] = {cls.name: cls for cls in (Gaussian, Binomial, Poisson, Gamma, InverseGaussian)}
_FAMILIES.update({"normal": Gaussian, "logistic": Binomial, "bernoulli": Binomial,
                  "negative_binomial": lambda link=None: NegativeBinomial(1.0, link)})


def get_family(family, link=None):
    """Return a :class:`Family` instance from an instance or a name, and a link.

    Parameters
    ----------
    family : str, Family or Distribution
        ``"gaussian"`` (``"normal"``), ``"binomial"`` (``"logistic"``, ``"bernoulli"``),
        ``"poisson"``, ``"gamma"``, ``"inverse_gaussian"`` or ``"negative_binomial"``
        (``alpha=1``), a :class:`Family` instance (``Tweedie(power=1.5)``,
        ``NegativeBinomial(alpha=0.5)``), or a :class:`Distribution`.
    link : str or Link, optional
        ``"identity"``, ``"logit"``, ``"log"``, ``"inverse"``, ``"probit"``,
        ``"cloglog"``, ``"inverse_squared"``, ``"sqrt"`` or a :class:`Link` (e.g.
        ``Power(1.5)``).  ``None`` keeps the link
        of a Family instance and is the canonical link otherwise; a link given here
        replaces the link of a Family instance.
    """
    if link is not None:
        link = get_link(link)
    if isinstance(family, Family):
        return family if link is None else family.with_link(link)
    if isinstance(family, Distribution):
        return Family(family, link)
    if isinstance(family, str) and family.lower() in _FAMILIES:
        return _FAMILIES[family.lower()](link)
    hint = ""
    if isinstance(family, str) and family.lower() == "tweedie":
        hint = " The Tweedie family needs its power: pass Tweedie(power)."
    raise ValueError(
        f"Unknown family {family!r}; choose one of {sorted(set(_FAMILIES))} or pass a "
        f"Family.{hint}"
    )
