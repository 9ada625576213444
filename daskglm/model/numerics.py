"""Safe ranges and small helpers shared by the links and the distributions.

The links clip the linear predictor into these ranges and the distributions clip the
mean, so that losses and derivatives stay finite for any ``eta`` (see
:mod:`daskglm.model.families`).

Every helper takes arrays of any library of the array API standard (see
:mod:`daskglm.backend`).  The special functions the standard lacks come from
``scipy.special`` for numpy and ``cupyx.scipy.special`` for CuPy; for another library,
``expit``, ``logit``, ``xlogy``, ``logsumexp`` and ``softmax`` are written in the standard,
and ``ndtr``, ``ndtri`` and ``gammaln`` (no ``erf`` or ``lgamma`` in the standard) are
computed on the host and moved back.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from ..backend import from_host, is_device, is_numpy_namespace, namespace, to_host

#: Above this linear predictor the Poisson mean ``exp(eta)`` is continued by its
#: second-order Taylor expansion, which keeps loss and derivatives finite and convex.
EXP_SAFE = 500.0

#: Largest argument of ``exp`` in the cloglog link (``exp(709)`` overflows).
EXP_MAX = 700.0

#: Largest linear predictor of the (non-canonical) log link: the square of the mean, in a
#: Gaussian loss or Fisher weight, stays finite.
LOG_MAX = 300.0

#: The probit link's linear predictor is clipped to +-this: the normal density is zero in
#: float64 beyond about 38.6, and ``eta**2`` stays finite.
PROBIT_MAX = 40.0

#: Smallest ``|eta|`` of the inverse link and smallest ``eta`` of a power link, and the
#: distance from the boundary at which binomial and Poisson means are clipped.
EPS = float(np.finfo(float).eps)


def weighted_sum(values, weight):
    """``sum(weight * values)`` as a float (``sum(values)`` when ``weight`` is None)."""
    if weight is None:
        return float(namespace(values).sum(values))
    xp = namespace(values)
    if is_numpy_namespace(xp):
        return float(np.dot(weight, values))
    return float(xp.sum(weight * values))


def split_exponent(eta):
    """``(safe, over)``: ``eta`` clipped at :data:`EXP_SAFE`, and what it exceeds that by
    (the part of ``exp(eta)`` continued by its Taylor expansion)."""
    eta = float64_array(eta)
    safe = namespace(eta).minimum(eta, EXP_SAFE)
    return safe, eta - safe


def scale_by_weight(values, weight):
    """``values * weight``; ``values`` itself when ``weight`` is None."""
    return values if weight is None else values * weight


def float64_array(a):
    """``a`` as a float64 array of its own library."""
    if type(a) is np.ndarray and a.dtype == np.float64:
        return a
    xp = namespace(a)
    return xp.asarray(a, dtype=xp.float64)


# --------------------------------------------------------------------------------------
# special functions


def _library_special(xp, x, name):
    """``name`` of ``scipy.special`` (numpy) or ``cupyx.scipy.special`` (CuPy, where its
    version has it); None otherwise."""
    if is_numpy_namespace(xp):
        return getattr(scipy.special, name)
    if is_device(x):
        import cupyx.scipy.special

        return getattr(cupyx.scipy.special, name, None)
    return None


def _on_host(name, x):
    """``scipy.special.<name>`` of a standard array without the function, on the host."""
    return from_host(np.asarray(getattr(scipy.special, name)(to_host(x))), like=x)


def _special(name, x):
    xp = namespace(x)
    function = _library_special(xp, x, name)
    return None if function is None else function(x)


def expit(x):
    """The logistic function ``1 / (1 + exp(-x))``, accurate in both tails."""
    result = _special("expit", x)
    if result is not None:
        return result
    xp = namespace(x)
    shrink = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + shrink), shrink / (1.0 + shrink))


def logit(p):
    """``log(p / (1 - p))``."""
    result = _special("logit", p)
    if result is not None:
        return result
    xp = namespace(p)
    return xp.log(p) - xp.log1p(-p)


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x`` is 0."""
    xp = namespace(y)
    function = _library_special(xp, y, "xlogy")
    if function is not None:
        return function(x, y)
    zero = x == 0
    return xp.where(zero, 0.0, x * xp.log(xp.where(zero, 1.0, y)))


def ndtr(x):
    """The standard normal distribution function."""
    result = _special("ndtr", x)
    return _on_host("ndtr", x) if result is None else result


def ndtri(p):
    """The standard normal quantile function."""
    result = _special("ndtri", p)
    return _on_host("ndtri", p) if result is None else result


def gammaln(x):
    """``log |Gamma(x)|``."""
    if isinstance(x, (int, float)):
        return float(scipy.special.gammaln(x))
    result = _special("gammaln", x)
    return _on_host("gammaln", x) if result is None else result


def logsumexp(a, axis):
    """``log(sum(exp(a), axis))``, shifted by the largest entry along ``axis``."""
    xp = namespace(a)
    function = _library_special(xp, a, "logsumexp")
    if function is not None:
        return function(a, axis=axis)
    top = xp.max(a, axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
    return xp.squeeze(top, axis=axis) + xp.log(xp.sum(xp.exp(a - top), axis=axis))


def softmax(a, axis):
    """``exp(a) / sum(exp(a), axis)``."""
    xp = namespace(a)
    function = _library_special(xp, a, "softmax")
    if function is not None:
        return function(a, axis=axis)
    return xp.exp(a - xp.expand_dims(logsumexp(a, axis), axis=axis))


__all__ = ["expit", "logit", "xlogy", "ndtr", "ndtri", "gammaln", "logsumexp", "softmax"]
