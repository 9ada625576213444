"""The families' compiled formulas: the losses, derivatives and curvatures of a chunk of
rows at their linear predictors (numba), for the compiled row loops
(:mod:`.fused_loops`, :mod:`.fused_sparse_loops`, :mod:`.sgd_loops`,
:mod:`.sparse_sgd_loops`); and those of scikit-learn's SGD losses (:mod:`.sgd_losses`),
so that ``SGDClassifier`` and ``SGDRegressor`` run their steps in the compiled loops too
(a step of the Python loop costs hundreds of microseconds).

Each family's formula is one function, ``_<family>_rows``, in loops the compiler
vectorises (:mod:`.vector_math`'s ``exp`` and ``log1p`` instead of one C library call per
row); :func:`family_rows` picks it by its code (:mod:`.loss_codes`), with a float
``parameter`` (the Tweedie power, the negative binomial's ``alpha``; 0 for the others).  A
new compiled family is one such function, one line in :func:`family_rows`, and a code.

numba's on-disk cache keys each function on its own file only: the cached loops of
:mod:`.fused_loops`, :mod:`.fused_sparse_loops` and :mod:`.sgd_loops` contain these
functions compiled in, and are not rebuilt when this file alone changes.  A change here
must touch those files too (or clear their ``__pycache__``).
"""

from __future__ import annotations

import math

import numba

from ..model.numerics import EPS, EXP_SAFE, LOG_MAX
from .loss_codes import (
    BINOMIAL,
    EPSILON_INSENSITIVE,
    GAMMA_LOG,
    HINGE,
    HUBER,
    MODIFIED_HUBER,
    NEGATIVE_BINOMIAL_LOG,
    ON_SIGNS,
    POISSON,
    SQUARED_EPSILON_INSENSITIVE,
    SQUARED_HINGE,
    TWEEDIE_LOG,
)
from .sgd_losses import MAX_DLOSS
from .vector_math import exp_into, log1p_unit

__all__ = ["family_rows", "weighted_family_rows", "FASTMATH", "CONTRACT_ONLY"]


#: Reassociation lets the compiler vectorise each row's dot product (a fixed order for a
#: given machine, so still reproducible); no assumption about NaN or infinities is made.
FASTMATH = {"reassoc", "contract", "nsz"}

#: For the elementwise loops of the formulas: exact IEEE arithmetic but for fused
#: multiply-adds, as in :mod:`.vector_math`.
CONTRACT_ONLY = {"contract"}

_EXP_SAFE_VALUE = float(EXP_SAFE)
#: The log link's limits: ``eta`` clipped at ``LOG_MAX`` (``Log.inverse``), the mean at
#: ``EPS`` from below (``GammaDistribution.clip_mean``), i.e. ``eta`` at ``log(EPS)``.
_LOG_MAX_VALUE = float(LOG_MAX)
_EPS_VALUE = float(EPS)
_LOG_EPS_VALUE = math.log(EPS)
_MAX_DLOSS_VALUE = float(MAX_DLOSS)


# --------------------------------------------------------------------------------------
# the families' formulas: losses, derivatives and curvatures of a chunk of rows
#
# Each writes ``loss[:count]`` and ``residual[:count]`` at the predictors ``eta[:count]``
# with targets ``y[:count]``, and ``curvature[:count]`` when that buffer is not empty.
# ``work`` holds the buffers: ``work[0]`` and ``work[1]`` for the exps taken, ``work[2]``
# and ``scale_bits`` for :func:`~.vector_math.exp_into`.


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _gaussian_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """Squared error: loss ``(eta - y)^2 / 2``, derivative ``eta - y``, curvature 1."""
    for i in range(count):
        value = eta[i] - y[i]
        loss[i] = 0.5 * value * value
        residual[i] = value
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 1.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _binomial_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """The logit's loss ``log1p(s) + max(eta, 0) - y eta`` with ``s = exp(-|eta|)``, one
    ``exp`` shared by the loss, the probability and its curvature ``s / (1 + s)^2``, as
    ``Binomial.loss_and_dloss``."""
    scratch = work[0]
    for i in range(count):
        scratch[i] = -abs(eta[i])
    exp_into(scratch, count, work[2], scale_bits)
    for i in range(count):
        shrink = scratch[i]
        value = eta[i]
        loss[i] = log1p_unit(shrink) + max(value, 0.0) - y[i] * value
        residual[i] = (1.0 if value >= 0 else shrink) / (1.0 + shrink) - y[i]
    if curvature.shape[0]:
        for i in range(count):
            shrink = scratch[i]
            denominator = 1.0 + shrink
            curvature[i] = shrink / (denominator * denominator)


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _poisson_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """The log link's Poisson loss ``exp(eta) - y eta``, ``exp`` continued quadratically
    above ``EXP_SAFE`` (as ``Poisson.mean``); curvature the capped ``exp`` (as
    ``Poisson.d2loss``)."""
    scratch = work[0]
    for i in range(count):
        scratch[i] = min(eta[i], _EXP_SAFE_VALUE)
    exp_into(scratch, count, work[2], scale_bits)
    for i in range(count):
        value = eta[i]
        over = value - min(value, _EXP_SAFE_VALUE)
        scale = scratch[i]
        loss[i] = scale * (1.0 + over + 0.5 * over * over) - y[i] * value
        residual[i] = scale * (1.0 + over) - y[i]
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = scratch[i]


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _gamma_log_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """The Gamma with the log link: ``mu = exp(eta)`` with ``eta`` at most ``LOG_MAX`` and
    ``mu`` at least ``EPS``; loss ``y / mu + log mu``, derivative ``(mu - y) / mu^2
    dmu/deta`` (``1 - y / mu`` where ``mu`` is not clipped), curvature ``y / mu`` (exact)."""
    scratch = work[0]
    for i in range(count):
        scratch[i] = -max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
    exp_into(scratch, count, work[2], scale_bits)
    clipped = 0
    for i in range(count):
        inverse = scratch[i]
        value = min(eta[i], _LOG_MAX_VALUE)
        loss[i] = y[i] * inverse + max(value, _LOG_EPS_VALUE)
        residual[i] = 1.0 - y[i] * inverse
        clipped += value < _LOG_EPS_VALUE
    if clipped:  # mu at EPS: dmu/deta is exp(eta), not mu
        for i in range(count):
            value = min(eta[i], _LOG_MAX_VALUE)
            if value < _LOG_EPS_VALUE:
                scratch[i] = 1.0 / _EPS_VALUE
                loss[i] = y[i] / _EPS_VALUE + _LOG_EPS_VALUE
                residual[i] = (_EPS_VALUE - y[i]) / (_EPS_VALUE * _EPS_VALUE) * math.exp(value)
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = y[i] * scratch[i]


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _tweedie_log_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """The Tweedie of power ``p = parameter`` with the log link, ``mu`` clipped as the
    Gamma's: loss ``mu^(2-p) / (2-p) - y mu^(1-p) / (1-p)``, derivative ``(mu - y) mu^(-p)
    dmu/deta`` (``mu^(2-p) - y mu^(1-p)`` unclipped); curvature ``(2-p) mu^(2-p) + (p-1) y
    mu^(1-p)`` for ``p < 2`` (exact), the Fisher weight ``(dmu/deta)^2 mu^(-p)`` above 2
    (where the exact one can be negative)."""
    power = parameter
    upper, lower = work[0], work[1]
    for i in range(count):
        value = max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
        upper[i] = (2.0 - power) * value
        lower[i] = (1.0 - power) * value
    exp_into(upper, count, work[2], scale_bits)
    exp_into(lower, count, work[2], scale_bits)
    clipped = 0
    for i in range(count):
        loss[i] = upper[i] / (2.0 - power) - y[i] * lower[i] / (1.0 - power)
        residual[i] = upper[i] - y[i] * lower[i]
        clipped += min(eta[i], _LOG_MAX_VALUE) < _LOG_EPS_VALUE
    if clipped:
        _slopes_of_clipped_means(eta, count, residual)
    if curvature.shape[0]:
        if power < 2.0:
            for i in range(count):
                curvature[i] = (2.0 - power) * upper[i] + (power - 1.0) * y[i] * lower[i]
        else:
            for i in range(count):
                curvature[i] = upper[i]
            for i in range(count):  # mu at EPS: dmu/deta = exp(eta)
                value = min(eta[i], _LOG_MAX_VALUE)
                if value < _LOG_EPS_VALUE:
                    slope = math.exp(value) / _EPS_VALUE
                    curvature[i] = upper[i] * slope * slope


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _negative_binomial_log_rows(parameter, y, eta, count, loss, residual, curvature, work,
                                scale_bits):
    """The negative binomial of ``alpha = parameter`` with the log link, ``mu`` clipped as
    the Gamma's: loss ``(y + 1/a) log1p(a mu) - y log mu``, with ``log1p(a mu) = log(a
    mu) + log1p(1 / (a mu))`` past 1; derivative ``(mu - y) / (mu + a mu^2) dmu/deta``
    (``(mu - y) / (1 + a mu)`` unclipped); curvature ``(a y + 1) mu / (1 + a mu)^2``
    (exact)."""
    alpha = parameter
    log_alpha = math.log(alpha)
    scratch = work[0]
    for i in range(count):
        scratch[i] = max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
    exp_into(scratch, count, work[2], scale_bits)
    clipped = 0
    for i in range(count):
        mu = scratch[i]
        log_mu = max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
        scaled = alpha * mu
        small = log1p_unit(min(scaled, 1.0))
        large = log_alpha + log_mu + log1p_unit(min(1.0 / scaled, 1.0))
        log1p_scaled = large if scaled > 1.0 else small
        loss[i] = (y[i] + 1.0 / alpha) * log1p_scaled - y[i] * log_mu
        residual[i] = (mu - y[i]) / (1.0 + scaled)
        clipped += min(eta[i], _LOG_MAX_VALUE) < _LOG_EPS_VALUE
    if clipped:
        _slopes_of_clipped_means(eta, count, residual)
    if curvature.shape[0]:
        for i in range(count):
            mu = scratch[i]
            denominator = 1.0 + alpha * mu
            curvature[i] = (alpha * y[i] + 1.0) * mu / (denominator * denominator)


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _slopes_of_clipped_means(eta, count, residual):
    """Where the log link's mean was clipped at ``EPS``, ``dmu/deta`` is ``exp(eta)``, not
    the mean the residual was formed with: scale those residuals by ``exp(eta) / EPS``."""
    for i in range(count):
        value = min(eta[i], _LOG_MAX_VALUE)
        if value < _LOG_EPS_VALUE:
            residual[i] *= math.exp(value) / _EPS_VALUE


# --------------------------------------------------------------------------------------
# scikit-learn's SGD losses (:mod:`.sgd_losses`), their derivatives and (where defined)
# second derivatives; the classifiers' on the signs ``s = 2 y - 1`` of 0/1 labels


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _hinge_rows(threshold, y, eta, count, loss, residual, curvature):
    """``max(0, threshold - s eta)``; derivative ``-s`` where ``s eta <= threshold``."""
    for i in range(count):
        sign = 2.0 * y[i] - 1.0
        margin = sign * eta[i]
        loss[i] = max(threshold - margin, 0.0)
        residual[i] = -sign if margin <= threshold else 0.0
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 0.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _squared_hinge_rows(threshold, y, eta, count, loss, residual, curvature):
    """``max(0, threshold - s eta)^2``."""
    for i in range(count):
        sign = 2.0 * y[i] - 1.0
        margin = threshold - sign * eta[i]
        loss[i] = max(margin, 0.0) ** 2
        residual[i] = -2.0 * sign * margin if margin > 0 else 0.0
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 2.0 if threshold - (2.0 * y[i] - 1.0) * eta[i] > 0 else 0.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _modified_huber_rows(parameter, y, eta, count, loss, residual, curvature):
    """0 for ``z = s eta >= 1``, ``(1 - z)^2`` for ``-1 <= z < 1``, ``-4 z`` below."""
    for i in range(count):
        sign = 2.0 * y[i] - 1.0
        z = sign * eta[i]
        if z >= 1.0:
            loss[i], residual[i] = 0.0, 0.0
        elif z >= -1.0:
            loss[i], residual[i] = (1.0 - z) ** 2, -2.0 * sign * (1.0 - z)
        else:
            loss[i], residual[i] = -4.0 * z, -4.0 * sign
    if curvature.shape[0]:
        for i in range(count):
            z = (2.0 * y[i] - 1.0) * eta[i]
            curvature[i] = 2.0 if -1.0 <= z < 1.0 else 0.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _huber_rows(epsilon, y, eta, count, loss, residual, curvature):
    """``r^2 / 2`` for ``|r| = |eta - y| <= epsilon``, ``epsilon |r| - epsilon^2 / 2``
    beyond."""
    for i in range(count):
        value = eta[i] - y[i]
        size = abs(value)
        if size <= epsilon:
            loss[i], residual[i] = 0.5 * size * size, value
        else:
            loss[i] = epsilon * size - 0.5 * epsilon * epsilon
            residual[i] = epsilon if value > 0 else -epsilon
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 1.0 if abs(eta[i] - y[i]) <= epsilon else 0.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy", inline="always")
def _epsilon_insensitive_rows(epsilon, squared, y, eta, count, loss, residual, curvature):
    """``max(0, |y - eta| - epsilon)``, squared when ``squared``."""
    for i in range(count):
        value = y[i] - eta[i]
        excess = max(abs(value) - epsilon, 0.0)
        if squared:
            loss[i] = excess * excess
            residual[i] = (-2.0 * (value - epsilon) if value > epsilon else
                           2.0 * (-value - epsilon) if value < -epsilon else 0.0)
        else:
            loss[i] = excess
            residual[i] = -1.0 if value > epsilon else 1.0 if -value > epsilon else 0.0
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 2.0 if squared and abs(y[i] - eta[i]) > epsilon else 0.0


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy")
def _sgd_loss_rows(family, parameter, y, eta, count, loss, residual, curvature, work,
                   scale_bits):
    """The SGD loss of code ``family`` (:data:`~.loss_codes.HINGE` and after)."""
    if family == HINGE:
        _hinge_rows(parameter, y, eta, count, loss, residual, curvature)
    elif family == SQUARED_HINGE:
        _squared_hinge_rows(parameter, y, eta, count, loss, residual, curvature)
    elif family == MODIFIED_HUBER:
        _modified_huber_rows(parameter, y, eta, count, loss, residual, curvature)
    elif family == HUBER:
        _huber_rows(parameter, y, eta, count, loss, residual, curvature)
    elif family == EPSILON_INSENSITIVE:
        _epsilon_insensitive_rows(parameter, False, y, eta, count, loss, residual, curvature)
    elif family == SQUARED_EPSILON_INSENSITIVE:
        _epsilon_insensitive_rows(parameter, True, y, eta, count, loss, residual, curvature)
    else:  # squared error (on the signs of labels)
        _gaussian_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=CONTRACT_ONLY, error_model="numpy")
def family_rows(family, parameter, y, eta, count, loss, residual, curvature, work,
                 scale_bits):
    """The formula of the family of code ``family`` on a chunk of rows (see above)."""
    if family >= HINGE:
        if family >= ON_SIGNS:  # a regression loss on the signs of 0/1 labels
            signs = work[1]
            for i in range(count):
                signs[i] = 2.0 * y[i] - 1.0
            _sgd_loss_rows(family - ON_SIGNS, parameter, signs, eta, count, loss, residual,
                           curvature, work, scale_bits)
        else:
            _sgd_loss_rows(family, parameter, y, eta, count, loss, residual, curvature, work,
                           scale_bits)
        for i in range(count):
            residual[i] = min(max(residual[i], -_MAX_DLOSS_VALUE), _MAX_DLOSS_VALUE)
    elif family == BINOMIAL:
        _binomial_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits)
    elif family == POISSON:
        _poisson_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits)
    elif family == GAMMA_LOG:
        _gamma_log_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits)
    elif family == TWEEDIE_LOG:
        _tweedie_log_rows(parameter, y, eta, count, loss, residual, curvature, work,
                          scale_bits)
    elif family == NEGATIVE_BINOMIAL_LOG:
        _negative_binomial_log_rows(parameter, y, eta, count, loss, residual, curvature, work,
                                    scale_bits)
    else:
        _gaussian_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits):
    """The family's formula at the predictors ``eta`` of rows ``first`` to ``first +
    count``, each row's loss, derivative (and curvature when not empty) times its weight."""
    family_rows(family, parameter, y[first:first + count], eta, count, row_loss, residual,
                 curvature, work, scale_bits)
    if weight.shape[0]:
        for i in range(count):
            row_loss[i] *= weight[first + i]
            residual[i] *= weight[first + i]
        if curvature.shape[0]:
            for i in range(count):
                curvature[i] *= weight[first + i]
