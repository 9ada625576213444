"""Exponential-family distributions and link functions, apart.

A :class:`Family` is a :class:`Distribution` and a :class:`Link`.  It only ever sees the
linear predictor ``eta = X @ coef + intercept``, never ``X``: it turns ``eta`` into
per-row losses, first and second derivatives, and every product with ``X`` lives in
:mod:`daskglm.kernels`.  Losses are negative log-likelihoods up to terms that do not
depend on ``eta``; :meth:`Family.deviance` adds those terms back.

The distribution knows the unit loss in terms of the mean ``mu``, its variance function
``V(mu)``, the deviance, the support of the target and its canonical link.  The link
knows ``eta = g(mu)``, the mean ``mu = g^{-1}(eta)`` and the first two derivatives of the
mean in ``eta``.  The family joins them by the chain rule::

    dloss/deta = w * dl/dmu * dmu/deta = w * (mu - y) / V(mu) * dmu/deta
    d2loss     = w * (dmu/deta)**2 / V(mu)        (the expected, Fisher, information)

For a non-canonical link ``d2loss`` is the Fisher weight, the expectation over the target
of the second derivative (what statsmodels' IRLS uses).  It is never negative, as the
kernels need, and Newton's method with such a link is Fisher scoring.  With the canonical
link the two coincide: ``d2loss`` is the exact second derivative, and :class:`Gaussian`,
:class:`Binomial` and :class:`Poisson` then use their own closed forms (fast paths).

A new distribution is one :class:`Distribution` subclass (``unit_loss``, ``variance``,
``deviance``, ``check_target``, ``canonical_link``); ``Family(distribution, link)`` then
works with every link.

All functions are written for numpy arrays.  The canonical families stay finite for
``|eta|`` up to at least 1e3 (``exp`` overflows past about 709).  With other links the
linear predictor is clipped into each link's safe range and the mean into the
distribution's domain (:meth:`Distribution.clip_mean`), so values stay finite too; there
the losses are those of the clipped mean.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit, logit, ndtr, ndtri, xlogy

from .backend import array_module

__all__ = [
    "Link", "Identity", "Logit", "Log", "Inverse", "Probit", "CLogLog", "Power", "get_link",
    "Distribution", "GaussianDistribution", "BinomialDistribution", "PoissonDistribution",
    "Family", "Gaussian", "Binomial", "Poisson", "get_family",
]

#: Above this linear predictor the Poisson mean ``exp(eta)`` is continued by its
#: second-order Taylor expansion, which keeps loss and derivatives finite and convex.
_EXP_SAFE = 500.0

#: Largest argument of ``exp`` in the cloglog link (``exp(709)`` overflows).
_EXP_MAX = 700.0

#: Largest linear predictor of the (non-canonical) log link: the square of the mean, in a
#: Gaussian loss or Fisher weight, stays finite.
_LOG_MAX = 300.0

#: The probit link's linear predictor is clipped to +-this: the normal density is zero in
#: float64 beyond about 38.6, and ``eta**2`` stays finite.
_PROBIT_MAX = 40.0

#: Smallest ``|eta|`` of the inverse link and smallest ``eta`` of a power link, and the
#: distance from the boundary at which binomial and Poisson means are clipped.
_EPS = np.finfo(float).eps


def _weighted_sum(values, weight):
    if weight is None:
        return float(np.sum(values))
    return float(np.dot(weight, values))


def _split_exponent(eta):
    eta = _float(eta)
    safe = np.minimum(eta, _EXP_SAFE)
    return safe, eta - safe


def _scale(values, weight):
    return values if weight is None else values * weight


def _float(a):
    """``a`` as a float64 array of its own library (numpy, or CuPy on a GPU)."""
    return array_module(a).asarray(a, dtype=float)


# --------------------------------------------------------------------------------------
# links


class Link:
    """A link function ``eta = g(mu)`` and its inverse, the mean ``mu = g^{-1}(eta)``.

    Subclasses implement :meth:`link`, :meth:`inverse`, :meth:`inverse_derivative`
    (``dmu/deta``) and :meth:`inverse_second_derivative` (``d2mu/deta2``), all elementwise
    and finite for any finite ``eta`` (the inverse clips ``eta`` into its safe range).
    Links compare equal when they are of the same class with the same parameters.
    """

    name = "link"

    def link(self, mu):
        """``eta = g(mu)``."""
        raise NotImplementedError

    def inverse(self, eta):
        """The mean ``mu = g^{-1}(eta)``."""
        raise NotImplementedError

    def inverse_derivative(self, eta):
        """``dmu/deta``."""
        raise NotImplementedError

    def inverse_second_derivative(self, eta):
        """``d2mu/deta2``."""
        raise NotImplementedError

    def _params(self):
        return ()

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self._params()))})"

    def __eq__(self, other):
        return type(self) is type(other) and self._params() == other._params()

    def __hash__(self):
        return hash((type(self), self._params()))


class Identity(Link):
    """``eta = mu``."""

    name = "identity"

    def link(self, mu):
        return _float(mu)

    def inverse(self, eta):
        return _float(eta)

    def inverse_derivative(self, eta):
        return np.ones_like(_float(eta))

    def inverse_second_derivative(self, eta):
        return np.zeros_like(_float(eta))


class Logit(Link):
    """``eta = log(mu / (1 - mu))``, the canonical link of the binomial."""

    name = "logit"

    def link(self, mu):
        return logit(_float(mu))

    def inverse(self, eta):
        return expit(_float(eta))

    def inverse_derivative(self, eta):
        eta = _float(eta)
        return expit(eta) * expit(-eta)

    def inverse_second_derivative(self, eta):
        eta = _float(eta)
        p, q = expit(eta), expit(-eta)
        return p * q * (q - p)


class Log(Link):
    """``eta = log(mu)``, the canonical link of the Poisson; ``eta`` is clipped at 300.

    (The Poisson family with this link uses its own closed form, which is not clipped.)
    """

    name = "log"

    def link(self, mu):
        return np.log(_float(mu))

    def inverse(self, eta):
        return np.exp(np.minimum(_float(eta), _LOG_MAX))

    inverse_derivative = inverse
    inverse_second_derivative = inverse


class Inverse(Link):
    """``eta = 1 / mu``; ``|eta|`` is kept at least machine epsilon (sign kept)."""

    name = "inverse"

    @staticmethod
    def _safe(eta):
        eta = _float(eta)
        return np.where(eta < 0, np.minimum(eta, -_EPS), np.maximum(eta, _EPS))

    def link(self, mu):
        return 1.0 / _float(mu)

    def inverse(self, eta):
        return 1.0 / self._safe(eta)

    def inverse_derivative(self, eta):
        return -1.0 / self._safe(eta) ** 2

    def inverse_second_derivative(self, eta):
        return 2.0 / self._safe(eta) ** 3


class Probit(Link):
    """``eta = Phi^{-1}(mu)``, the standard normal quantile; ``|eta|`` clipped at 40."""

    name = "probit"

    def link(self, mu):
        return ndtri(_float(mu))

    def inverse(self, eta):
        return ndtr(_float(eta))

    def inverse_derivative(self, eta):
        eta = np.clip(_float(eta), -_PROBIT_MAX, _PROBIT_MAX)
        return np.exp(-0.5 * eta**2) / np.sqrt(2.0 * np.pi)

    def inverse_second_derivative(self, eta):
        eta = np.clip(_float(eta), -_PROBIT_MAX, _PROBIT_MAX)
        return -eta * np.exp(-0.5 * eta**2) / np.sqrt(2.0 * np.pi)


class CLogLog(Link):
    """``eta = log(-log(1 - mu))``, complementary log-log; ``eta`` clipped at 700."""

    name = "cloglog"

    def link(self, mu):
        return np.log(-np.log1p(-_float(mu)))

    def inverse(self, eta):
        return -np.expm1(-np.exp(np.minimum(_float(eta), _EXP_MAX)))

    def inverse_derivative(self, eta):
        eta = np.minimum(_float(eta), _EXP_MAX)
        return np.exp(eta - np.exp(eta))

    def inverse_second_derivative(self, eta):
        eta = np.minimum(_float(eta), _EXP_MAX)
        e = np.exp(eta)
        return np.exp(eta - e) * (1.0 - e)


class Power(Link):
    """``eta = mu**power`` for positive means (``Power(0.5)``: square root).

    ``power`` is a non-zero real (``"log"`` is the limit at 0).  The mean is
    ``eta**(1 / power)`` with ``eta`` clipped at machine epsilon from below, so the link
    is for distributions with positive means; use ``"identity"`` and ``"inverse"`` for
    the powers 1 and -1 on the whole real line.
    """

    name = "power"

    def __init__(self, power):
        if isinstance(power, bool) or not isinstance(power, Real) or not np.isfinite(power):
            raise ValueError(f"Power link needs a finite real power; got {power!r}.")
        if power == 0:
            raise ValueError("Power(0) is the log link; use link='log'.")
        self.power = float(power)

    def _params(self):
        return (self.power,)

    def _safe(self, eta):
        return np.maximum(_float(eta), _EPS)

    def link(self, mu):
        return np.power(_float(mu), self.power)

    def inverse(self, eta):
        return np.power(self._safe(eta), 1.0 / self.power)

    def inverse_derivative(self, eta):
        q = 1.0 / self.power
        return q * np.power(self._safe(eta), q - 1.0)

    def inverse_second_derivative(self, eta):
        q = 1.0 / self.power
        return q * (q - 1.0) * np.power(self._safe(eta), q - 2.0)


_LINKS = {cls.name: cls for cls in (Identity, Logit, Log, Inverse, Probit, CLogLog)}


def get_link(link):
    """Return a :class:`Link` instance from an instance or a name.

    Parameters
    ----------
    link : str or Link
        ``"identity"``, ``"logit"``, ``"log"``, ``"inverse"``, ``"probit"`` or
        ``"cloglog"``, or a :class:`Link` instance such as ``Power(0.5)``.
    """
    if isinstance(link, Link):
        return link
    if isinstance(link, str) and link.lower() in _LINKS:
        return _LINKS[link.lower()]()
    hint = ""
    if isinstance(link, str) and link.lower() == "power":
        hint = " The power link needs its exponent: pass Power(p)."
    raise ValueError(
        f"Unknown link {link!r}; choose one of {sorted(_LINKS)} or pass a Link instance "
        f"such as Power(0.5).{hint}"
    )


# --------------------------------------------------------------------------------------
# distributions


class Distribution:
    """An exponential-dispersion distribution in terms of its mean ``mu``.

    Subclasses implement :meth:`unit_loss`, :meth:`variance`, :meth:`deviance`, and set
    ``name`` and ``canonical_link``; :meth:`check_target` and :meth:`clip_mean` have
    permissive defaults, and ``start_mean`` is a mean inside the domain.
    """

    name = "distribution"
    #: The link that makes ``eta`` the natural parameter.
    canonical_link: Link = Identity()
    #: A typical mean inside the domain: a non-canonical family starts its fits from the
    #: intercept ``g(start_mean)``.
    start_mean = 1.0

    def unit_loss(self, y, mu):
        """Per-row negative log-likelihood, up to terms free of ``mu``."""
        raise NotImplementedError

    def unit_loss_derivative(self, y, mu):
        """``d unit_loss / d mu``; ``(mu - y) / V(mu)`` for every exponential family."""
        return (mu - y) / self.variance(mu)

    def variance(self, mu):
        """The variance function ``V(mu)``."""
        raise NotImplementedError

    def deviance(self, y, mu, weight=None):
        """Weighted sum of unit deviances ``2 * (loglik(y; y) - loglik(y; mu))``."""
        raise NotImplementedError

    def check_target(self, y):
        """Raise ValueError if ``y`` holds values outside the distribution's support."""

    def clip_mean(self, mu):
        """``mu`` moved into the domain of the mean (where the loss is finite)."""
        return mu

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

    def unit_loss(self, y, mu):
        return 0.5 * (y - mu) ** 2

    def unit_loss_derivative(self, y, mu):
        return mu - y

    def variance(self, mu):
        return np.ones_like(_float(mu))

    def deviance(self, y, mu, weight=None):
        return _weighted_sum((y - mu) ** 2, weight)


class BinomialDistribution(Distribution):
    """Bernoulli distribution on {0, 1}: unit loss ``-y log mu - (1 - y) log(1 - mu)``,
    ``V(mu) = mu (1 - mu)``; means are clipped to ``[eps, 1 - eps]``."""

    name = "binomial"
    canonical_link = Logit()
    start_mean = 0.5

    def unit_loss(self, y, mu):
        return -(xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu))

    def variance(self, mu):
        return mu * (1.0 - mu)

    def clip_mean(self, mu):
        return np.clip(mu, _EPS, 1.0 - _EPS)

    def deviance(self, y, mu, weight=None):
        mu = np.clip(mu, 1e-300, 1.0 - 1e-16)
        unit = -2.0 * (xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu))
        return _weighted_sum(unit, weight)

    def check_target(self, y):
        y = array_module(y).asarray(y)
        if y.size and not np.all((y == 0) | (y == 1)):
            raise ValueError("Binomial family needs targets in {0, 1}.")


class PoissonDistribution(Distribution):
    """Poisson distribution: unit loss ``mu - y log mu``, ``V(mu) = mu``; means are
    clipped at ``eps`` from below."""

    name = "poisson"
    canonical_link = Log()
    start_mean = 1.0

    def unit_loss(self, y, mu):
        return mu - xlogy(y, mu)

    def unit_loss_derivative(self, y, mu):
        return 1.0 - y / mu

    def variance(self, mu):
        return mu

    def clip_mean(self, mu):
        return np.maximum(mu, _EPS)

    def deviance(self, y, mu, weight=None):
        unit = 2.0 * (xlogy(y, y) - xlogy(y, mu) - y + mu)
        return _weighted_sum(unit, weight)

    def check_target(self, y):
        y = array_module(y).asarray(y)
        if y.size and np.min(y) < 0:
            raise ValueError("Poisson family needs non-negative targets; got a negative value.")


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

        With the canonical link it equals ``dmu/deta`` and ``V(mu)`` alike.  It sets the
        curvature at the start (:meth:`daskglm.solvers.Problem.curvature_at`).
        """
        mu, slope = self._mean_and_slope(eta)
        return slope**2 / self.distribution.variance(mu)

    def inverse_link(self, eta):
        """Alias of :meth:`mean`."""
        return self.mean(eta)

    def start_intercept(self):
        """The intercept of a first iterate: 0 for the canonical link; otherwise
        ``g(start_mean)`` (1 for a Poisson with the identity link, 0 for a binomial with
        the probit link), or 0 where that is not finite."""
        if self.canonical:
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eta = float(self.link.link(np.array([self.distribution.start_mean]))[0])
        return eta if np.isfinite(eta) else 0.0

    def loss(self, y, eta, weight=None):
        """Weighted SUM of the per-row losses."""
        return _weighted_sum(self.pointwise_loss(y, eta), weight)

    def dloss(self, y, eta, weight=None):
        """Per-row derivative of the weighted loss with respect to ``eta``."""
        mu, slope = self._mean_and_slope(eta)
        return _scale(self.distribution.unit_loss_derivative(y, mu) * slope, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        """``(loss(y, eta, weight), dloss(y, eta, weight))`` sharing the work of both."""
        mu, slope = self._mean_and_slope(eta)
        loss = _weighted_sum(self.distribution.unit_loss(y, mu), weight)
        return loss, _scale(self.distribution.unit_loss_derivative(y, mu) * slope, weight)

    def d2loss(self, y, eta, weight=None):
        """Per-row second derivative in ``eta`` (IRLS / Newton weights): exact for the
        canonical link, the expected (Fisher) information otherwise."""
        return _scale(self.variance(eta), weight)

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
        return np.ones_like(eta)

    def dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().dloss(y, eta, weight)
        return _scale(self.mean(eta) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)


class Binomial(_NamedFamily):
    """Bernoulli distribution on {0, 1}, logit link by default: loss
    ``log(1 + exp(eta)) - y * eta``; ``Binomial(link="probit")`` for probit regression."""

    name = "binomial"
    _distribution = BinomialDistribution

    def pointwise_loss(self, y, eta):
        if not self.canonical:
            return super().pointwise_loss(y, eta)
        return np.logaddexp(0.0, eta) - y * eta

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
        return _scale(self.mean(eta) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        shrink = np.exp(-np.abs(eta))
        loss = np.log1p(shrink) + np.maximum(eta, 0.0) - y * eta
        prob = np.where(eta >= 0, 1.0, shrink) / (1.0 + shrink)
        return _weighted_sum(loss, weight), _scale(prob - y, weight)


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
        safe, over = _split_exponent(eta)
        return np.exp(safe) * (1.0 + over + 0.5 * over**2)

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
        safe, over = _split_exponent(eta)
        return _scale(np.exp(safe) * (1.0 + over) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        if not self.canonical:
            return super().loss_and_dloss(y, eta, weight)
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)

    def d2loss(self, y, eta, weight=None):
        if not self.canonical:
            return super().d2loss(y, eta, weight)
        safe, _ = _split_exponent(eta)
        return _scale(np.exp(safe), weight)


_FAMILIES = {cls.name: cls for cls in (Gaussian, Binomial, Poisson)}
_FAMILIES.update({"normal": Gaussian, "logistic": Binomial, "bernoulli": Binomial})


def get_family(family, link=None):
    """Return a :class:`Family` instance from an instance or a name, and a link.

    Parameters
    ----------
    family : str, Family or Distribution
        ``"gaussian"`` (``"normal"``), ``"binomial"`` (``"logistic"``, ``"bernoulli"``)
        or ``"poisson"``, a :class:`Family` instance, or a :class:`Distribution`.
    link : str or Link, optional
        ``"identity"``, ``"logit"``, ``"log"``, ``"inverse"``, ``"probit"``,
        ``"cloglog"`` or a :class:`Link` (e.g. ``Power(0.5)``).  ``None`` keeps the link
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
    raise ValueError(
        f"Unknown family {family!r}; choose one of {sorted(set(_FAMILIES))} or pass a Family."
    )
