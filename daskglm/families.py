"""Exponential-family distributions with their canonical links.

A family only ever sees the linear predictor ``eta = X @ coef + intercept``, never ``X``:
it turns ``eta`` into per-row losses, first and second derivatives.  Every product with
``X`` lives in :mod:`daskglm.kernels`.  Losses are negative log-likelihoods up to terms
that do not depend on ``eta``; :meth:`Family.deviance` adds those terms back.

All functions are written for numpy arrays and stay finite for ``|eta|`` up to at least
1e3 (``exp`` overflows past about 709).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, xlogy

__all__ = ["Family", "Gaussian", "Binomial", "Poisson", "get_family"]

#: Above this linear predictor the Poisson mean ``exp(eta)`` is continued by its
#: second-order Taylor expansion, which keeps loss and derivatives finite and convex.
_EXP_SAFE = 500.0


def _weighted_sum(values, weight):
    if weight is None:
        return float(np.sum(values))
    return float(np.dot(weight, values))


def _split_exponent(eta):
    eta = np.asarray(eta, dtype=float)
    safe = np.minimum(eta, _EXP_SAFE)
    return safe, eta - safe


def _scale(values, weight):
    return values if weight is None else values * weight


class Family:
    """Base class: a distribution and its canonical link.

    Subclasses implement :meth:`pointwise_loss`, :meth:`mean`, :meth:`variance`;
    the canonical link makes ``dloss = mean - y`` and ``d2loss = variance``.
    """

    name = "family"

    def pointwise_loss(self, y, eta):
        raise NotImplementedError

    def mean(self, eta):
        """Inverse link: the expected target given ``eta``."""
        raise NotImplementedError

    def variance(self, eta):
        """Derivative of the mean with respect to ``eta`` (canonical link)."""
        raise NotImplementedError

    def inverse_link(self, eta):
        """Alias of :meth:`mean`."""
        return self.mean(eta)

    def loss(self, y, eta, weight=None):
        """Weighted SUM of the per-row losses."""
        return _weighted_sum(self.pointwise_loss(y, eta), weight)

    def dloss(self, y, eta, weight=None):
        """Per-row derivative of the weighted loss with respect to ``eta``."""
        return _scale(self.mean(eta) - y, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        """``(loss(y, eta, weight), dloss(y, eta, weight))`` sharing the work of both."""
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)

    def d2loss(self, y, eta, weight=None):
        """Per-row second derivative with respect to ``eta`` (IRLS / Newton weights)."""
        return _scale(self.variance(eta), weight)

    def deviance(self, y, mu, weight=None):
        """Weighted sum of unit deviances ``2 * (loglik(y; y) - loglik(y; mu))``."""
        raise NotImplementedError

    def check_target(self, y):
        """Raise ValueError if ``y`` holds values outside the family's support."""

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class Gaussian(Family):
    """Normal distribution, identity link: loss ``(y - eta)**2 / 2``."""

    name = "gaussian"

    def pointwise_loss(self, y, eta):
        return 0.5 * (y - eta) ** 2

    def mean(self, eta):
        return eta

    def variance(self, eta):
        return np.ones_like(eta)

    def deviance(self, y, mu, weight=None):
        return _weighted_sum((y - mu) ** 2, weight)


class Binomial(Family):
    """Bernoulli distribution on {0, 1}, logit link: loss ``log(1 + exp(eta)) - y * eta``."""

    name = "binomial"

    def pointwise_loss(self, y, eta):
        return np.logaddexp(0.0, eta) - y * eta

    def mean(self, eta):
        return expit(eta)

    def variance(self, eta):
        p = expit(eta)
        return p * (1.0 - p)

    def loss_and_dloss(self, y, eta, weight=None):
        shrink = np.exp(-np.abs(eta))
        loss = np.log1p(shrink) + np.maximum(eta, 0.0) - y * eta
        prob = np.where(eta >= 0, 1.0, shrink) / (1.0 + shrink)
        return _weighted_sum(loss, weight), _scale(prob - y, weight)

    def deviance(self, y, mu, weight=None):
        mu = np.clip(mu, 1e-300, 1.0 - 1e-16)
        unit = -2.0 * (xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu))
        return _weighted_sum(unit, weight)

    def check_target(self, y):
        y = np.asarray(y)
        if y.size and not np.all((y == 0) | (y == 1)):
            raise ValueError("Binomial family needs targets in {0, 1}.")


class Poisson(Family):
    """Poisson distribution, log link: loss ``exp(eta) - y * eta``.

    ``exp`` is continued quadratically above ``eta = 500`` so that nothing overflows.
    """

    name = "poisson"

    def mean(self, eta):
        safe, over = _split_exponent(eta)
        return np.exp(safe) * (1.0 + over + 0.5 * over**2)

    def variance(self, eta):
        return self.mean(eta)

    def pointwise_loss(self, y, eta):
        return self.mean(eta) - y * eta

    def dloss(self, y, eta, weight=None):
        safe, over = _split_exponent(eta)
        return _scale(np.exp(safe) * (1.0 + over) - y, weight)

    def d2loss(self, y, eta, weight=None):
        safe, _ = _split_exponent(eta)
        return _scale(np.exp(safe), weight)

    def deviance(self, y, mu, weight=None):
        unit = 2.0 * (xlogy(y, y) - xlogy(y, mu) - y + mu)
        return _weighted_sum(unit, weight)

    def check_target(self, y):
        y = np.asarray(y)
        if y.size and np.min(y) < 0:
            raise ValueError("Poisson family needs non-negative targets; got a negative value.")


_FAMILIES = {cls.name: cls for cls in (Gaussian, Binomial, Poisson)}
_FAMILIES.update({"normal": Gaussian, "logistic": Binomial, "bernoulli": Binomial})


def get_family(family):
    """Return a :class:`Family` instance from an instance or a name.

    Parameters
    ----------
    family : str or Family
        ``"gaussian"`` (``"normal"``), ``"binomial"`` (``"logistic"``, ``"bernoulli"``)
        or ``"poisson"``, or a :class:`Family` instance.
    """
    if isinstance(family, Family):
        return family
    if isinstance(family, str) and family.lower() in _FAMILIES:
        return _FAMILIES[family.lower()]()
    raise ValueError(
        f"Unknown family {family!r}; choose one of {sorted(set(_FAMILIES))} or pass a Family."
    )
