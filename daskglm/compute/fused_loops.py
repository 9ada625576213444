"""The compiled loops of :func:`daskglm.compute.blocked.fused_loss_grad` (numba).

Imported on the first fused gradient only, so that a worker imports numba when a kernel
needs it.  Every function here is defined at module level with ``cache=True``, and the
family is an integer argument (a code of :mod:`daskglm.compute.loss_codes`) with a float
``parameter`` (the Tweedie power, the negative binomial's ``alpha``; 0 for the others),
not a compiled function passed in: numba then finds its compiled code in the on-disk
cache in every new worker process instead of compiling it again.

Three loops, each reading each row of ``X`` from memory once:

* :func:`rows_one_pass` -- each row's predictor, loss and product with the row in turn,
  while the row is in registers.  The Gaussian gradient uses it.
* :func:`rows_in_chunks` -- a chunk of rows (:data:`CHUNK_BYTES` of ``X``, at most a
  summing block) at a time: the chunk's predictors, then its losses and derivatives in
  loops the compiler vectorises (:mod:`.vector_math`'s ``exp`` and ``log1p`` instead of
  one C library call per row), then the products with the rows, read again from the
  cache, four rows at a time.  All but the Gaussian gradient use it, which, with no
  transcendental function, is as fast or faster in one pass (the costs of both loops
  against one read of ``X``: ``python -m benchmarks fused-kernel``,
  ``benchmarks/README.md``).
* :func:`hessian_rows` -- :func:`rows_in_chunks` with the rows' curvatures ``h`` (the
  family's ``hessian_d2loss``): it also sums ``h`` and ``h * x`` and writes each row
  scaled by ``sqrt(h)`` to a buffer, whose symmetric product (BLAS, in
  :func:`daskglm.compute.blocked.fused_loss_grad_hess`) is the block's ``X^T diag(h) X``.

:func:`fused_rows_into` and :func:`rows_one_pass_into` are :func:`fused_rows` and
:func:`rows_one_pass` with their buffers passed in (:func:`fused_workspace`), for compiled
loops that call them once per step on a few rows (:mod:`.sgd_loops`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..model.numerics import _EPS, _EXP_SAFE, _LOG_MAX
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
           "rows_one_pass", "rows_one_pass_into", "rows_in_chunks", "hessian_rows"]


#: Reassociation lets the compiler vectorise each row's dot product (a fixed order for a
#: given machine, so still reproducible); no assumption about NaN or infinities is made.
_FAST = {"reassoc", "contract", "nsz"}

#: For the elementwise loops of :func:`rows_in_chunks`: exact IEEE arithmetic but for fused
#: multiply-adds, as in :mod:`.vector_math`.
_CONTRACT = {"contract"}

_EXP_SAFE_VALUE = float(_EXP_SAFE)
#: The log link's limits: ``eta`` clipped at ``_LOG_MAX`` (``Log.inverse``), the mean at
#: ``_EPS`` from below (``GammaDistribution.clip_mean``), i.e. ``eta`` at ``log(_EPS)``.
_LOG_MAX_VALUE = float(_LOG_MAX)
_EPS_VALUE = float(_EPS)
_LOG_EPS_VALUE = math.log(_EPS)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _pointwise(family, parameter, y, eta):
    """``(loss, dloss)`` of one row with linear predictor ``eta``."""
    if family == BINOMIAL:
        # one exp shared by the loss and the probability, as Binomial.loss_and_dloss
        shrink = math.exp(-abs(eta))
        loss = math.log1p(shrink) + max(eta, 0.0) - y * eta
        prob = (1.0 if eta >= 0 else shrink) / (1.0 + shrink)
        return loss, prob - y
    if family == POISSON:
        # exp continued quadratically above _EXP_SAFE, as Poisson.mean and Poisson.dloss
        safe = min(eta, _EXP_SAFE_VALUE)
        over = eta - safe
        scale = math.exp(safe)
        mean = scale * (1.0 + over + 0.5 * over * over)
        return mean - y * eta, scale * (1.0 + over) - y
    if family == GAMMA_LOG or family == TWEEDIE_LOG:
        # the log link's mean, clipped as in _pointwise_chunk
        value = min(eta, _LOG_MAX_VALUE)
        clipped = max(value, _LOG_EPS_VALUE)
        slope = 1.0 if value >= _LOG_EPS_VALUE else math.exp(value) / _EPS_VALUE
        if family == GAMMA_LOG:
            inverse = 1.0 / _EPS_VALUE if value < _LOG_EPS_VALUE else math.exp(-clipped)
            return y * inverse + clipped, (1.0 - y * inverse) * slope
        power = parameter
        upper = math.exp((2.0 - power) * clipped)
        lower = math.exp((1.0 - power) * clipped)
        return (upper / (2.0 - power) - y * lower / (1.0 - power),
                (upper - y * lower) * slope)
    if family == NEGATIVE_BINOMIAL_LOG:
        value = min(eta, _LOG_MAX_VALUE)
        clipped = max(value, _LOG_EPS_VALUE)
        slope = 1.0 if value >= _LOG_EPS_VALUE else math.exp(value) / _EPS_VALUE
        mu = math.exp(clipped)
        scaled = parameter * mu
        return ((y + 1.0 / parameter) * math.log1p(scaled) - y * clipped,
                (mu - y) / (1.0 + scaled) * slope)
    residual = eta - y
    return 0.5 * residual * residual, residual


#: Rows summed into a partial sum before it is added to the total: summing in two levels
#: keeps the round-off of the loss and gradient sums near that of numpy's pairwise sums
#: (a plain running sum over ``n`` rows grows its error with ``n``).
BLOCK_ROWS = 128


#: Bytes of ``X`` per chunk of :func:`rows_in_chunks` (at most :data:`BLOCK_ROWS` rows):
#: the chunk is read again from the cache for its products.  128 KiB fits the second-level
#: cache of current CPUs; 16 KiB to 256 KiB measured alike at 50 and 500 columns (within
#: the noise of a loaded machine).
CHUNK_BYTES = 1 << 17


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def fused_rows(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """Add each row's ``r * x`` to ``grad``; return the loss and ``sum(r)``.

    ``weight`` and ``offset`` of length 0 stand for none.  Rows are summed in blocks of
    :data:`BLOCK_ROWS`, and the blocks' sums into the totals, in row order.  The Gaussian
    family runs :func:`rows_one_pass`, the others :func:`rows_in_chunks`.
    """
    if family == GAUSSIAN:
        return rows_one_pass(X, y, weight, offset, coef, intercept, family, parameter, grad)
    return rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad)


@numba.njit(cache=True, nogil=True)
def fused_workspace(d, itemsize):
    """The buffers of :func:`fused_rows_into` for ``X`` of ``d`` columns of ``itemsize``
    bytes: ``(buffers, scale_bits, block_grad)``."""
    chunk = _chunk_rows(d, itemsize)
    return np.empty((6, chunk)), np.empty(chunk, dtype=np.int64), np.empty(d)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def fused_rows_into(X, y, weight, offset, coef, intercept, family, parameter, grad, buffers,
                    scale_bits, block_grad):
    """:func:`fused_rows` with its buffers passed in (from :func:`fused_workspace`), for
    loops that call it many times: the same sums, nothing allocated."""
    if family == GAUSSIAN:
        return rows_one_pass_into(X, y, weight, offset, coef, intercept, family, parameter,
                                  grad, block_grad)
    return _chunks_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                        buffers, scale_bits, block_grad)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def rows_one_pass(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """:func:`fused_rows` one row at a time: predictor, loss and product in one pass."""
    return rows_one_pass_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                              np.empty(X.shape[1]))


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def rows_one_pass_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                       block_grad):
    """:func:`rows_one_pass` with its block buffer (``d`` values) passed in.  Faster than
    :func:`fused_rows_into` on a few rows (below about 30 at 20 columns), where the
    chunks' vector loops cost more than they save."""
    n, d = X.shape
    loss = 0.0
    intercept_grad = 0.0
    for start in range(0, n, BLOCK_ROWS):
        block_loss = 0.0
        block_intercept = 0.0
        block_grad[:] = 0.0
        for i in range(start, min(start + BLOCK_ROWS, n)):
            row = X[i]
            eta = intercept
            for j in range(d):
                eta += row[j] * coef[j]
            if offset.shape[0]:
                eta += offset[i]
            row_loss, residual = _pointwise(family, parameter, y[i], eta)
            if weight.shape[0]:
                row_loss *= weight[i]
                residual *= weight[i]
            block_loss += row_loss
            block_intercept += residual
            for j in range(d):
                block_grad[j] += residual * row[j]
        loss += block_loss
        intercept_grad += block_intercept
        for j in range(d):
            grad[j] += block_grad[j]
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
def _slopes_of_clipped_means(eta, count, residual):
    """Where the log link's mean was clipped at ``_EPS``, ``dmu/deta`` is ``exp(eta)``, not
    the mean the residual was formed with: scale those residuals by ``exp(eta) / _EPS``."""
    for i in range(count):
        value = min(eta[i], _LOG_MAX_VALUE)
        if value < _LOG_EPS_VALUE:
            residual[i] *= math.exp(value) / _EPS_VALUE


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy")
def _pointwise_chunk(family, parameter, y, eta, count, loss, residual, scratch, second,
                     rounded, scale_bits):
    """``loss[:count]`` and ``residual[:count]`` at ``eta[:count]`` with targets ``y``;
    the formulas of :func:`_pointwise` (the Gamma's and Tweedie's: their distributions'
    with the log link), in loops that vectorise.  ``scratch[:count]`` is left holding the
    ``exp`` taken (Binomial: ``exp(-|eta|)``; Poisson: ``exp`` of ``eta`` capped at the
    safe limit; Gamma: ``1 / mu``; Tweedie: ``mu^(2-p)``, and ``mu^(1-p)`` in
    ``second``; negative binomial: ``mu``), from which :func:`_curvature_chunk` follows."""
    if family == BINOMIAL:
        for i in range(count):
            scratch[i] = -abs(eta[i])
        exp_into(scratch, count, rounded, scale_bits)
        for i in range(count):
            shrink = scratch[i]
            value = eta[i]
            loss[i] = log1p_unit(shrink) + max(value, 0.0) - y[i] * value
            residual[i] = (1.0 if value >= 0 else shrink) / (1.0 + shrink) - y[i]
    elif family == POISSON:
        for i in range(count):
            scratch[i] = min(eta[i], _EXP_SAFE_VALUE)
        exp_into(scratch, count, rounded, scale_bits)
        for i in range(count):
            value = eta[i]
            over = value - min(value, _EXP_SAFE_VALUE)
            scale = scratch[i]
            loss[i] = scale * (1.0 + over + 0.5 * over * over) - y[i] * value
            residual[i] = scale * (1.0 + over) - y[i]
    elif family == GAMMA_LOG:
        # mu = exp(eta) with eta at most _LOG_MAX and mu at least _EPS: loss y / mu + log mu,
        # derivative (mu - y) / mu^2 * dmu/deta, which is 1 - y / mu where mu is not clipped
        for i in range(count):
            scratch[i] = -max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
        exp_into(scratch, count, rounded, scale_bits)
        clipped = 0
        for i in range(count):
            inverse = scratch[i]
            value = min(eta[i], _LOG_MAX_VALUE)
            loss[i] = y[i] * inverse + max(value, _LOG_EPS_VALUE)
            residual[i] = 1.0 - y[i] * inverse
            clipped += value < _LOG_EPS_VALUE
        if clipped:  # mu at _EPS: dmu/deta is exp(eta), not mu
            for i in range(count):
                value = min(eta[i], _LOG_MAX_VALUE)
                if value < _LOG_EPS_VALUE:
                    scratch[i] = 1.0 / _EPS_VALUE
                    loss[i] = y[i] / _EPS_VALUE + _LOG_EPS_VALUE
                    residual[i] = (_EPS_VALUE - y[i]) / (_EPS_VALUE * _EPS_VALUE) \
                        * math.exp(value)
    elif family == TWEEDIE_LOG:
        # mu = exp(eta) clipped as the Gamma's; loss mu^(2-p) / (2-p) - y mu^(1-p) / (1-p),
        # derivative (mu - y) mu^(-p) dmu/deta, which is mu^(2-p) - y mu^(1-p) unclipped
        power = parameter
        for i in range(count):
            value = max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
            scratch[i] = (2.0 - power) * value
            second[i] = (1.0 - power) * value
        exp_into(scratch, count, rounded, scale_bits)
        exp_into(second, count, rounded, scale_bits)
        clipped = 0
        for i in range(count):
            upper, lower = scratch[i], second[i]
            loss[i] = upper / (2.0 - power) - y[i] * lower / (1.0 - power)
            residual[i] = upper - y[i] * lower
            clipped += min(eta[i], _LOG_MAX_VALUE) < _LOG_EPS_VALUE
        if clipped:
            _slopes_of_clipped_means(eta, count, residual)
    elif family == NEGATIVE_BINOMIAL_LOG:
        # mu = exp(eta) clipped as the Gamma's; loss (y + 1/a) log1p(a mu) - y log mu, with
        # log1p(a mu) = log(a mu) + log1p(1 / (a mu)) past 1; derivative (mu - y) / (mu +
        # a mu^2) dmu/deta, which is (mu - y) / (1 + a mu) unclipped
        alpha = parameter
        log_alpha = math.log(alpha)
        for i in range(count):
            scratch[i] = max(min(eta[i], _LOG_MAX_VALUE), _LOG_EPS_VALUE)
        exp_into(scratch, count, rounded, scale_bits)
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
    else:
        for i in range(count):
            value = eta[i] - y[i]
            loss[i] = 0.5 * value * value
            residual[i] = value


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy")
def _curvature_chunk(family, parameter, y, eta, count, scratch, second, curvature):
    """``curvature[:count]``, the family's ``hessian_d2loss`` at the chunk's predictors
    ``eta``, from the ``exp`` that :func:`_pointwise_chunk` left in ``scratch`` (and
    ``second``): ``p (1 - p) = s / (1 + s)^2`` with ``s = exp(-|eta|)`` (Binomial), the
    capped ``exp`` (Poisson, as ``Poisson.d2loss``), ``y / mu`` (Gamma with the log link:
    its exact curvature), ``(2-p) mu^(2-p) + (p-1) y mu^(1-p)`` (Tweedie with the log link,
    power ``p < 2``: exact) or the Fisher weight ``(dmu/deta)^2 mu^(-p)`` (power > 2,
    where the exact curvature can be negative), ``(a y + 1) mu / (1 + a mu)^2`` (negative
    binomial with the log link: exact) and 1 (Gaussian)."""
    if family == BINOMIAL:
        for i in range(count):
            shrink = scratch[i]
            denominator = 1.0 + shrink
            curvature[i] = shrink / (denominator * denominator)
    elif family == POISSON:
        for i in range(count):
            curvature[i] = scratch[i]
    elif family == GAMMA_LOG:
        for i in range(count):
            curvature[i] = y[i] * scratch[i]
    elif family == TWEEDIE_LOG:
        power = parameter
        if power < 2.0:
            for i in range(count):
                curvature[i] = (2.0 - power) * scratch[i] + (power - 1.0) * y[i] * second[i]
        else:
            for i in range(count):
                curvature[i] = scratch[i]
            for i in range(count):  # mu at _EPS: (dmu/deta)^2 mu^(-p), dmu/deta = exp(eta)
                value = min(eta[i], _LOG_MAX_VALUE)
                if value < _LOG_EPS_VALUE:
                    slope = math.exp(value) / _EPS_VALUE
                    curvature[i] = scratch[i] * slope * slope
    elif family == NEGATIVE_BINOMIAL_LOG:
        alpha = parameter
        for i in range(count):
            mu = scratch[i]
            denominator = 1.0 + alpha * mu
            curvature[i] = (alpha * y[i] + 1.0) * mu / (denominator * denominator)
    else:
        for i in range(count):
            curvature[i] = 1.0


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


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", inline="always")
def _chunk_losses(X, y, weight, offset, coef, intercept, family, parameter, first, count, eta,
                  row_loss, residual, scratch, second, rounded, scale_bits):
    """``row_loss[:count]`` and ``residual[:count]`` of rows ``first`` to ``first + count``,
    weighted: their predictors, then :func:`_pointwise_chunk` (which leaves its ``exp`` in
    ``scratch``, and ``second``)."""
    _chunk_predictors(X, first, count, coef, intercept, offset, eta)
    _pointwise_chunk(family, parameter, y[first:first + count], eta, count, row_loss, residual,
                     scratch, second, rounded, scale_bits)
    if weight.shape[0]:
        for i in range(count):
            row_loss[i] *= weight[first + i]
            residual[i] *= weight[first + i]



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


@numba.njit(cache=True, nogil=True, inline="always")
def _chunk_rows(d, itemsize):
    """Rows per chunk of :func:`rows_in_chunks`: :data:`CHUNK_BYTES` of ``X``, at most
    :data:`BLOCK_ROWS`."""
    return max(1, min(BLOCK_ROWS, CHUNK_BYTES // max(1, d * itemsize)))


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """:func:`fused_rows` a chunk of rows at a time: predictors, then losses, then products."""
    buffers, scale_bits, block_grad = fused_workspace(X.shape[1], X.itemsize)
    return _chunks_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                        buffers, scale_bits, block_grad)


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def _chunks_into(X, y, weight, offset, coef, intercept, family, parameter, grad, buffers,
                 scale_bits, block_grad):
    """:func:`rows_in_chunks` with its buffers passed in (:func:`fused_workspace`)."""
    n, d = X.shape
    chunk = buffers.shape[1]
    eta, row_loss, residual = buffers[0], buffers[1], buffers[2]
    scratch, second, rounded = buffers[3], buffers[4], buffers[5]
    loss = 0.0
    intercept_grad = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_loss = 0.0
        block_intercept = 0.0
        block_grad[:] = 0.0
        for first in range(start, stop, chunk):
            count = min(first + chunk, stop) - first
            _chunk_losses(X, y, weight, offset, coef, intercept, family, parameter, first, count,
                          eta, row_loss, residual, scratch, second, rounded, scale_bits)
            for i in range(count):
                block_loss += row_loss[i]
                block_intercept += residual[i]
            _add_products(X, first, count, residual, block_grad)
        loss += block_loss
        intercept_grad += block_intercept
        for j in range(d):
            grad[j] += block_grad[j]
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def hessian_rows(X, y, weight, offset, coef, intercept, family, parameter, grad, curvature_grad,
                 scaled):
    """:func:`rows_in_chunks` with the rows' curvatures ``h`` (weighted as the residuals):
    also add each row's ``h * x`` to ``curvature_grad`` and write ``sqrt(h) * x`` to the
    same row of ``scaled`` (of ``X``'s dtype, at least as many rows); return the loss,
    ``sum(r)`` and ``sum(h)``."""
    n, d = X.shape
    chunk = max(1, min(BLOCK_ROWS, CHUNK_BYTES // max(1, d * X.itemsize)))
    eta, row_loss, residual = np.empty(chunk), np.empty(chunk), np.empty(chunk)
    curvature, scratch, rounded = np.empty(chunk), np.empty(chunk), np.empty(chunk)
    second = np.empty(chunk)
    scale_bits = np.empty(chunk, dtype=np.int64)
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
        for first in range(start, stop, chunk):
            count = min(first + chunk, stop) - first
            _chunk_losses(X, y, weight, offset, coef, intercept, family, parameter, first, count,
                          eta, row_loss, residual, scratch, second, rounded, scale_bits)
            _curvature_chunk(family, parameter, y[first:first + count], eta, count, scratch,
                             second, curvature)
            if weight.shape[0]:
                for i in range(count):
                    curvature[i] *= weight[first + i]
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
