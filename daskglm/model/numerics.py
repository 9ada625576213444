"""Safe ranges and small helpers shared by the links and the distributions.

The links clip the linear predictor into these ranges and the distributions clip the
mean, so that losses and derivatives stay finite for any ``eta`` (see
:mod:`daskglm.model.families`).
"""

from __future__ import annotations

import numpy as np

from ..compute.backend import array_module

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
