"""The compiled loops of :func:`daskglm.compute.blocked.fused_loss_grad` (numba).

Imported on the first fused gradient only, so that a worker imports numba when a kernel
needs it.  Every function here is defined at module level with ``cache=True``, and the
family is an integer argument (a code of :mod:`daskglm.compute.loss_codes`) with a float
``parameter`` (the Tweedie power, the negative binomial's ``alpha``; 0 for the others),
not a compiled function passed in: numba's on-disk cache does not keep a loop compiled
for a function argument (every new process compiles it again, about a second), while it
keeps one compiled for an integer.

Each family's compiled formula is one function, ``_<family>_rows``: the losses, the
derivatives ``r`` and, when asked, the curvatures ``h`` (the family's ``hessian_d2loss``)
of a chunk of rows at their linear predictors, in loops the compiler vectorises
(:mod:`.vector_math`'s ``exp`` and ``log1p`` instead of one C library call per row).
:func:`_family_rows` picks it by code.  A new compiled family is one such function, one
line there, and a code in :mod:`.loss_codes`.

Two loops read each row of ``X`` from memory once, a chunk of rows (:data:`CHUNK_BYTES`
of ``X``, at most a summing block) at a time -- the chunk's predictors, then the family's
formula, then the products with the rows, read again from the cache, four rows at a time:

* :func:`rows_in_chunks` (:func:`fused_rows`) -- the loss, ``X^T r`` and ``sum(r)``;
* :func:`hessian_rows` -- also ``h``: it sums ``h`` and ``h * x`` and writes each row
  scaled by ``sqrt(h)`` to a buffer, whose symmetric product (BLAS, in
  :func:`daskglm.compute.blocked.fused_loss_grad_hess`) is the block's ``X^T diag(h) X``.

:func:`fused_rows_into` is :func:`fused_rows` with its buffers passed in
(:func:`fused_workspace`), for compiled loops that call it once per step on a few rows
(:mod:`.sgd_loops`).  The costs of the loops against one read of ``X``:
``python -m benchmarks fused-kernel`` (``benchmarks/README.md``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..model.numerics import EPS, EXP_SAFE, LOG_MAX
from .loss_codes import (
    BINOMIAL,
    GAMMA_LOG,
    GAUSSIAN,
    NEGATIVE_BINOMIAL_LOG,
    POISSON,
    TWEEDIE_LOG,
)
from .vector_math import exp_into, log1p_unit

__all__ = ["GAUSSIAN", "BINOMIAL", "POISSON", "GAMMA_LOG", "TWEEDIE_LOG",
           "NEGATIVE_BINOMIAL_LOG", "fused_rows", "fused_rows_into", "fused_workspace",
           "rows_in_chunks", "hessian_rows", "fused_rows_many", "fused_csr_rows",
           "fused_csr_hessian_rows", "fused_categorical_rows",
           "fused_categorical_hessian_rows"]


#: Reassociation lets the compiler vectorise each row's dot product (a fixed order for a
#: given machine, so still reproducible); no assumption about NaN or infinities is made.
_FAST = {"reassoc", "contract", "nsz"}

#: For the elementwise loops of :func:`rows_in_chunks`: exact IEEE arithmetic but for fused
#: multiply-adds, as in :mod:`.vector_math`.
_CONTRACT = {"contract"}

_EXP_SAFE_VALUE = float(EXP_SAFE)
#: The log link's limits: ``eta`` clipped at ``LOG_MAX`` (``Log.inverse``), the mean at
#: ``EPS`` from below (``GammaDistribution.clip_mean``), i.e. ``eta`` at ``log(EPS)``.
_LOG_MAX_VALUE = float(LOG_MAX)
_EPS_VALUE = float(EPS)
_LOG_EPS_VALUE = math.log(EPS)


#: Rows summed into a partial sum before it is added to the total: summing in two levels
#: keeps the round-off of the loss and gradient sums near that of numpy's pairwise sums
#: (a plain running sum over ``n`` rows grows its error with ``n``).
BLOCK_ROWS = 128


#: Bytes of ``X`` per chunk (at most :data:`BLOCK_ROWS` rows): the chunk is read again
#: from the cache for its products.  128 KiB fits the second-level cache of current CPUs;
#: 16 KiB to 256 KiB measured alike at 50 and 500 columns (within the noise of a loaded
#: machine).
CHUNK_BYTES = 1 << 17


# --------------------------------------------------------------------------------------
# the families' formulas: losses, derivatives and curvatures of a chunk of rows
#
# Each writes ``loss[:count]`` and ``residual[:count]`` at the predictors ``eta[:count]``
# with targets ``y[:count]``, and ``curvature[:count]`` when that buffer is not empty.
# ``work`` holds the buffers: ``work[0]`` and ``work[1]`` for the exps taken, ``work[2]``
# and ``scale_bits`` for :func:`~.vector_math.exp_into`.


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
def _gaussian_rows(parameter, y, eta, count, loss, residual, curvature, work, scale_bits):
    """Squared error: loss ``(eta - y)^2 / 2``, derivative ``eta - y``, curvature 1."""
    for i in range(count):
        value = eta[i] - y[i]
        loss[i] = 0.5 * value * value
        residual[i] = value
    if curvature.shape[0]:
        for i in range(count):
            curvature[i] = 1.0


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
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


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
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


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
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


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
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


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
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


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
def _slopes_of_clipped_means(eta, count, residual):
    """Where the log link's mean was clipped at ``EPS``, ``dmu/deta`` is ``exp(eta)``, not
    the mean the residual was formed with: scale those residuals by ``exp(eta) / EPS``."""
    for i in range(count):
        value = min(eta[i], _LOG_MAX_VALUE)
        if value < _LOG_EPS_VALUE:
            residual[i] *= math.exp(value) / _EPS_VALUE


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy")
def _family_rows(family, parameter, y, eta, count, loss, residual, curvature, work,
                 scale_bits):
    """The formula of the family of code ``family`` on a chunk of rows (see above)."""
    if family == BINOMIAL:
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


# --------------------------------------------------------------------------------------
# the loops over rows


@numba.njit(cache=True, nogil=True, inline="always")
def _chunk_rows(d, itemsize):
    """Rows per chunk: :data:`CHUNK_BYTES` of ``X``, at most :data:`BLOCK_ROWS`."""
    return max(1, min(BLOCK_ROWS, CHUNK_BYTES // max(1, d * itemsize)))


@numba.njit(cache=True, nogil=True)
def fused_workspace(d, itemsize):
    """The buffers of :func:`fused_rows_into` for ``X`` of ``d`` columns of ``itemsize``
    bytes: ``(buffers, scale_bits, block_grad)``."""
    chunk = _chunk_rows(d, itemsize)
    return np.empty((6, chunk)), np.empty(chunk, dtype=np.int64), np.empty(d)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _chunk_predictors(X, first, count, coef, intercept, offset, eta):
    """``eta[:count]``: the linear predictors of rows ``first`` to ``first + count``."""
    d = X.shape[1]
    for i in range(count):
        row = X[first + i]
        value = intercept
        for j in range(d):
            value += row[j] * coef[j]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline="always")
def _add_products(X, first, count, residual, grad):
    """Add ``residual[i] * X[first + i]`` to ``grad`` for ``i < count``, four rows at a
    time: ``grad`` is loaded and stored once per four rows (about 10% of the chunked
    gradient at 50 columns)."""
    d = X.shape[1]
    i = 0
    while i + 4 <= count:
        row0, row1, row2, row3 = X[first + i], X[first + i + 1], X[first + i + 2], X[first + i + 3]
        r0, r1, r2, r3 = residual[i], residual[i + 1], residual[i + 2], residual[i + 3]
        for j in range(d):
            grad[j] += (r0 * row0[j] + r1 * row1[j]) + (r2 * row2[j] + r3 * row3[j])
        i += 4
    while i < count:
        row = X[first + i]
        r = residual[i]
        for j in range(d):
            grad[j] += r * row[j]
        i += 1


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", inline="always")
def _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first, count,
                      eta, row_loss, residual, curvature, work, scale_bits):
    """Weighted ``row_loss``, ``residual`` (and ``curvature`` when not empty) of rows
    ``first`` to ``first + count``: their predictors, then the family's formula."""
    _chunk_predictors(X, first, count, coef, intercept, offset, eta)
    _weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", inline="always")
def _weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits):
    """The family's formula at the predictors ``eta`` of rows ``first`` to ``first +
    count``, each row's loss, derivative (and curvature when not empty) times its weight."""
    _family_rows(family, parameter, y[first:first + count], eta, count, row_loss, residual,
                 curvature, work, scale_bits)
    if weight.shape[0]:
        for i in range(count):
            row_loss[i] *= weight[first + i]
            residual[i] *= weight[first + i]
        if curvature.shape[0]:
            for i in range(count):
                curvature[i] *= weight[first + i]


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_rows(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """Add each row's ``r * x`` to ``grad``; return the loss and ``sum(r)``.

    ``weight`` and ``offset`` of length 0 stand for none.  Rows are summed in blocks of
    :data:`BLOCK_ROWS`, and the blocks' sums into the totals, in row order.
    """
    return rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """:func:`fused_rows` a chunk of rows at a time: predictors, then losses, then products."""
    buffers, scale_bits, block_grad = fused_workspace(X.shape[1], X.itemsize)
    return fused_rows_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                           buffers, scale_bits, block_grad)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_rows_into(X, y, weight, offset, coef, intercept, family, parameter, grad, buffers,
                    scale_bits, block_grad):
    """:func:`fused_rows` with its buffers passed in (from :func:`fused_workspace`), for
    loops that call it many times: the same sums, nothing allocated."""
    n, d = X.shape
    chunk = buffers.shape[1]
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_loss = 0.0
        block_intercept = 0.0
        block_grad[:] = 0.0
        for first in range(start, stop, chunk):
            count = min(first + chunk, stop) - first
            _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first,
                              count, eta, row_loss, residual, no_curvature, work, scale_bits)
            for i in range(count):
                block_loss += row_loss[i]
                block_intercept += residual[i]
            _add_products(X, first, count, residual, block_grad)
        loss += block_loss
        intercept_grad += block_intercept
        for j in range(d):
            grad[j] += block_grad[j]
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", inline="always")
def _csr_chunk_stats(indptr, indices, data, y, weight, offset, coef, intercept, family,
                     parameter, first, count, eta, row_loss, residual, curvature, work,
                     scale_bits):
    """:func:`_chunk_rows_stats` for rows ``first`` to ``first + count`` of a CSR matrix:
    each row's predictor from its stored values, then the family's formula, weighted."""
    for i in range(count):
        value = intercept
        for p in range(indptr[first + i], indptr[first + i + 1]):
            value += data[p] * coef[indices[p]]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]
    _weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_csr_rows(indptr, indices, data, y, weight, offset, coef, intercept, family,
                   parameter, grad):
    """:func:`fused_rows` for a CSR partition (``indptr``, ``indices``, ``data``): each
    row's stored values are read once for its predictor and once, while still in the
    cache, for its ``r * x``, :data:`BLOCK_ROWS` rows at a time.  Returns the loss and
    ``sum(r)``."""
    n = indptr.shape[0] - 1
    buffers = np.empty((6, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _csr_chunk_stats(indptr, indices, data, y, weight, offset, coef, intercept, family,
                         parameter, first, count, eta, row_loss, residual, no_curvature, work,
                         scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            r = residual[i]
            for p in range(indptr[first + i], indptr[first + i + 1]):
                grad[indices[p]] += r * data[p]
        loss += block_loss
        intercept_grad += block_intercept
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_csr_hessian_rows(indptr, indices, data, y, weight, offset, coef, intercept, family,
                           parameter, grad, upper, col_sums):
    """:func:`fused_csr_rows` with the curvatures ``h``: adds ``r * x`` to ``grad``,
    ``h * x`` to ``col_sums`` and the products ``h x_a x_b`` of each row's stored values,
    ``b`` at or after ``a``, to ``upper`` (``d x d``; with sorted column indices, the
    upper triangle of ``X^T diag(h) X``).  Returns the loss, ``sum(r)`` and ``sum(h)``."""
    n = indptr.shape[0] - 1
    buffers = np.empty((7, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, curvature, work = (buffers[0], buffers[1], buffers[2],
                                                buffers[3], buffers[4:])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _csr_chunk_stats(indptr, indices, data, y, weight, offset, coef, intercept, family,
                         parameter, first, count, eta, row_loss, residual, curvature, work,
                         scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            block_curvature += curvature[i]
            r = residual[i]
            h = curvature[i]
            start, stop = indptr[first + i], indptr[first + i + 1]
            for a in range(start, stop):
                column = indices[a]
                grad[column] += r * data[a]
                scaled = h * data[a]
                col_sums[column] += scaled
                for b in range(a, stop):
                    upper[column, indices[b]] += scaled * data[b]
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
    return loss, intercept_grad, total_curvature


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", inline="always")
def _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                             parameter, first, count, eta, row_loss, residual, curvature,
                             work, scale_bits):
    """:func:`_chunk_rows_stats` for rows ``first`` to ``first + count`` of a categorical
    block (:class:`~.categorical_matrix.CategoricalMatrix`): each row's predictor from its
    numeric values and its levels' coefficients, then the family's formula, weighted."""
    p = numeric.shape[1]
    for i in range(count):
        row = first + i
        value = intercept
        for j in range(p):
            value += numeric[row, j] * coef[j]
        for c in range(columns.shape[1]):
            column = columns[row, c]
            if column >= 0:
                value += coef[column]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]
    _weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_categorical_rows(numeric, columns, y, weight, offset, coef, intercept, family,
                           parameter, grad):
    """:func:`fused_rows` for a categorical block (``numeric`` values and each row's
    level ``columns``): each row's ``r * x`` is its numeric values times ``r``, and ``r``
    added to the gradient of each of its levels.  Returns the loss and ``sum(r)``."""
    n, p = numeric.shape
    buffers = np.empty((6, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                                 parameter, first, count, eta, row_loss, residual,
                                 no_curvature, work, scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            r = residual[i]
            row = first + i
            for j in range(p):
                grad[j] += r * numeric[row, j]
            for c in range(columns.shape[1]):
                column = columns[row, c]
                if column >= 0:
                    grad[column] += r
        loss += block_loss
        intercept_grad += block_intercept
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_categorical_hessian_rows(numeric, columns, y, weight, offset, coef, intercept,
                                   family, parameter, grad, upper, col_sums):
    """:func:`fused_categorical_rows` with the curvatures ``h``, as
    :func:`fused_csr_hessian_rows`: ``h * x`` to ``col_sums`` and the upper triangle of
    ``X^T diag(h) X`` to ``upper``.  A row adds ``h x_a x_b`` for its numeric pairs,
    ``h x_a`` for each numeric value and level, and ``h`` for each pair of its levels
    (the levels' columns come after the numeric ones, in the order of their categorical
    columns, so every product lands at or above the diagonal).  Returns the loss,
    ``sum(r)`` and ``sum(h)``."""
    n, p = numeric.shape
    k = columns.shape[1]
    buffers = np.empty((7, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, curvature, work = (buffers[0], buffers[1], buffers[2],
                                                buffers[3], buffers[4:])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                                 parameter, first, count, eta, row_loss, residual, curvature,
                                 work, scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            block_curvature += curvature[i]
            r = residual[i]
            h = curvature[i]
            row = first + i
            for a in range(p):
                value = numeric[row, a]
                grad[a] += r * value
                scaled = h * value
                col_sums[a] += scaled
                for b in range(a, p):
                    upper[a, b] += scaled * numeric[row, b]
                for c in range(k):
                    column = columns[row, c]
                    if column >= 0:
                        upper[a, column] += scaled
            for c in range(k):
                column = columns[row, c]
                if column < 0:
                    continue
                grad[column] += r
                col_sums[column] += h
                for e in range(c, k):
                    other = columns[row, e]
                    if other >= 0:
                        upper[column, other] += h
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
    return loss, intercept_grad, total_curvature


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def fused_rows_many(X, y, weights, offset, coefs, intercepts, family, parameter, grads,
                    losses, intercept_grads):
    """:func:`fused_rows` for several coefficient vectors (``coefs[f]``, ``intercepts[f]``)
    and row weights (``weights[f]``, the rows of a 2-D array) at once: each chunk of ``X``
    is read from memory once, while it is in the cache, for all of them.

    ``grads[f]`` is added to; ``losses[f]`` and ``intercept_grads[f]`` are set.  Each
    request's rows go through the same chunks, blocks and operations as
    :func:`fused_rows`, so its sums are those of a call of its own.
    """
    n, d = X.shape
    k = coefs.shape[0]
    buffers, scale_bits, _ = fused_workspace(d, X.itemsize)
    chunk = buffers.shape[1]
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    block_grads = np.empty((k, d))
    for f in range(k):
        losses[f] = 0.0
        intercept_grads[f] = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_grads[:] = 0.0
        for f in range(k):
            block_loss = 0.0
            block_intercept = 0.0
            grad = block_grads[f]
            for first in range(start, stop, chunk):
                count = min(first + chunk, stop) - first
                _chunk_rows_stats(X, y, weights[f], offset, coefs[f], intercepts[f], family,
                                  parameter, first, count, eta, row_loss, residual,
                                  no_curvature, work, scale_bits)
                for i in range(count):
                    block_loss += row_loss[i]
                    block_intercept += residual[i]
                _add_products(X, first, count, residual, grad)
            losses[f] += block_loss
            intercept_grads[f] += block_intercept
            for j in range(d):
                grads[f, j] += grad[j]


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def hessian_rows(X, y, weight, offset, coef, intercept, family, parameter, grad, curvature_grad,
                 scaled):
    """:func:`rows_in_chunks` with the rows' curvatures ``h`` (weighted as the residuals):
    also add each row's ``h * x`` to ``curvature_grad`` and write ``sqrt(h) * x`` to the
    same row of ``scaled`` (of ``X``'s dtype, at least as many rows); return the loss,
    ``sum(r)`` and ``sum(h)``."""
    n, d = X.shape
    buffers, scale_bits, _ = fused_workspace(d, X.itemsize)
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    curvature = np.empty(buffers.shape[1])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    block_grad = np.zeros(d)
    block_curvature_grad = np.zeros(d)
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        block_grad[:] = 0.0
        block_curvature_grad[:] = 0.0
        for first in range(start, stop, buffers.shape[1]):
            count = min(first + buffers.shape[1], stop) - first
            _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first,
                              count, eta, row_loss, residual, curvature, work, scale_bits)
            for i in range(count):
                block_loss += row_loss[i]
                block_intercept += residual[i]
                block_curvature += curvature[i]
            _add_products(X, first, count, residual, block_grad)
            _add_products(X, first, count, curvature, block_curvature_grad)
            for i in range(count):
                root = math.sqrt(curvature[i])
                row = X[first + i]
                out = scaled[first + i]
                for j in range(d):
                    out[j] = root * row[j]
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
        for j in range(d):
            grad[j] += block_grad[j]
            curvature_grad[j] += block_curvature_grad[j]
    return loss, intercept_grad, total_curvature
