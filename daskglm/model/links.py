"""Link functions ``eta = g(mu)``: the mean and its first two derivatives in ``eta``.

Each link knows its inverse (the mean), ``dmu/deta`` and ``d2mu/deta2``, and the range
of ``eta`` in which they stay finite.  :func:`get_link` turns a name into an instance.
How a link and a distribution make a family is told in :mod:`daskglm.model.families`.
"""

from __future__ import annotations

import math
from numbers import Real

from ..backend import namespace
from .numerics import EPS, EXP_MAX, LOG_MAX, PROBIT_MAX, expit, float64_array, logit, ndtr, ndtri

__all__ = ["Link", "Identity", "Logit", "Log", "Inverse", "Probit", "CLogLog", "Power", "get_link"]


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
        return float64_array(mu)

    def inverse(self, eta):
        return float64_array(eta)

    def inverse_derivative(self, eta):
        eta = float64_array(eta)
        return namespace(eta).ones_like(eta)

    def inverse_second_derivative(self, eta):
        eta = float64_array(eta)
        return namespace(eta).zeros_like(eta)


class Logit(Link):
    """``eta = log(mu / (1 - mu))``, the canonical link of the binomial."""

    name = "logit"

    def link(self, mu):
        return logit(float64_array(mu))

    def inverse(self, eta):
        return expit(float64_array(eta))

    def inverse_derivative(self, eta):
        eta = float64_array(eta)
        return expit(eta) * expit(-eta)

    def inverse_second_derivative(self, eta):
        eta = float64_array(eta)
        p, q = expit(eta), expit(-eta)
        return p * q * (q - p)


class Log(Link):
    """``eta = log(mu)``, the canonical link of the Poisson; ``eta`` is clipped at 300.

    (The Poisson family with this link uses its own closed form, which is not clipped.)
    """

    name = "log"

    def link(self, mu):
        mu = float64_array(mu)
        return namespace(mu).log(mu)

    def inverse(self, eta):
        eta = float64_array(eta)
        xp = namespace(eta)
        return xp.exp(xp.minimum(eta, LOG_MAX))

    inverse_derivative = inverse
    inverse_second_derivative = inverse


class Inverse(Link):
    """``eta = 1 / mu``; ``|eta|`` is kept at least machine epsilon (sign kept)."""

    name = "inverse"

    @staticmethod
    def _safe(eta):
        eta = float64_array(eta)
        xp = namespace(eta)
        return xp.where(eta < 0, xp.minimum(eta, -EPS), xp.maximum(eta, EPS))

    def link(self, mu):
        return 1.0 / float64_array(mu)

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
        return ndtri(float64_array(mu))

    def inverse(self, eta):
        return ndtr(float64_array(eta))

    def inverse_derivative(self, eta):
        eta = float64_array(eta)
        xp = namespace(eta)
        eta = xp.clip(eta, -PROBIT_MAX, PROBIT_MAX)
        return xp.exp(-0.5 * eta**2) / math.sqrt(2.0 * math.pi)

    def inverse_second_derivative(self, eta):
        eta = float64_array(eta)
        xp = namespace(eta)
        eta = xp.clip(eta, -PROBIT_MAX, PROBIT_MAX)
        return -eta * xp.exp(-0.5 * eta**2) / math.sqrt(2.0 * math.pi)


class CLogLog(Link):
    """``eta = log(-log(1 - mu))``, complementary log-log; ``eta`` clipped at 700."""

    name = "cloglog"

    @staticmethod
    def _safe(eta):
        eta = float64_array(eta)
        return namespace(eta).minimum(eta, EXP_MAX)

    def link(self, mu):
        mu = float64_array(mu)
        xp = namespace(mu)
        return xp.log(-xp.log1p(-mu))

    def inverse(self, eta):
        eta = self._safe(eta)
        xp = namespace(eta)
        return -xp.expm1(-xp.exp(eta))

    def inverse_derivative(self, eta):
        eta = self._safe(eta)
        xp = namespace(eta)
        return xp.exp(eta - xp.exp(eta))

    def inverse_second_derivative(self, eta):
        eta = self._safe(eta)
        xp = namespace(eta)
        e = xp.exp(eta)
        return xp.exp(eta - e) * (1.0 - e)


class Power(Link):
    """``eta = mu**power`` for positive means (``Power(0.5)``: square root).

    ``power`` is a non-zero real (``"log"`` is the limit at 0).  The mean is
    ``eta**(1 / power)`` with ``eta`` clipped at machine epsilon from below, so the link
    is for distributions with positive means; use ``"identity"`` and ``"inverse"`` for
    the powers 1 and -1 on the whole real line.
    """

    name = "power"

    def __init__(self, power):
        if isinstance(power, bool) or not isinstance(power, Real) or not math.isfinite(power):
            raise ValueError(f"Power link needs a finite real power; got {power!r}.")
        if power == 0:
            raise ValueError("Power(0) is the log link; use link='log'.")
        self.power = float(power)

    def _params(self):
        return (self.power,)

    def _safe(self, eta):
        eta = float64_array(eta)
        return namespace(eta).maximum(eta, EPS)

    def link(self, mu):
        return float64_array(mu) ** self.power

    def inverse(self, eta):
        return self._safe(eta) ** (1.0 / self.power)

    def inverse_derivative(self, eta):
        q = 1.0 / self.power
        return q * self._safe(eta) ** (q - 1.0)

    def inverse_second_derivative(self, eta):
        q = 1.0 / self.power
        return q * (q - 1.0) * self._safe(eta) ** (q - 2.0)


_LINKS = {cls.name: cls for cls in (Identity, Logit, Log, Inverse, Probit, CLogLog)}

#: Power links with a name of their own (statsmodels' ``inverse_squared`` and ``sqrt``).
_POWER_LINKS = {"inverse_squared": -2.0, "sqrt": 0.5}


def get_link(link):
    """Return a :class:`Link` instance from an instance or a name.

    Parameters
    ----------
    link : str or Link
        ``"identity"``, ``"logit"``, ``"log"``, ``"inverse"``, ``"probit"``,
        ``"cloglog"``, ``"inverse_squared"`` (``Power(-2)``) or ``"sqrt"``
        (``Power(0.5)``), or a :class:`Link` instance such as ``Power(1.5)``.
    """
    if isinstance(link, Link):
        return link
    if isinstance(link, str) and link.lower() in _LINKS:
        return _LINKS[link.lower()]()
    if isinstance(link, str) and link.lower() in _POWER_LINKS:
        return Power(_POWER_LINKS[link.lower()])
    hint = ""
    if isinstance(link, str) and link.lower() == "power":
        hint = " The power link needs its exponent: pass Power(p)."
    raise ValueError(
        f"Unknown link {link!r}; choose one of {sorted({*_LINKS, *_POWER_LINKS})} or pass a "
        f"Link instance such as Power(1.5).{hint}"
    )
