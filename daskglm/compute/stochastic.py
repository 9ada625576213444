"""Pure pieces of stochastic gradient descent: sampling, mini-batch gradients, local steps.

The same functions run on the driver (mini-batch SGD updates the coefficients there) and
in the per-partition kernels (local SGD runs several steps where a partition lives), so
that both compute exactly the same arithmetic.  An epoch visits every row exactly once, in
a random order (sampling without replacement, as scikit-learn's SGD shuffles the rows
before each epoch), ``batch_size`` rows per step.  The random draws depend only on
``(seed, epoch)`` for the split of each mini-batch over the partitions (a sequence of
multivariate hypergeometric draws: the split of a uniformly random order of all rows) and
on ``(seed, epoch, partition index)`` for the order of a partition's own rows, where an
epoch is named by the step at which it begins: a run is reproducible and does not depend
on how many workers there are or which finishes first.  Nothing here imports dask.

Sparse (CSR) partitions get two shortcuts.  A mini-batch of sparse rows touches few
columns, so its gradient is returned as a :class:`SparseGradient` ``(indices, values)``
when that is smaller than the dense vector; sums of them stay sparse while that pays.
Local SGD on a sparse partition keeps the coefficients as a :class:`ScaledVector`, so
that an L2 shrink costs O(1) and a step O(non-zeros of the mini-batch) instead of
O(features) (the lazy L2 update).

Local SGD on a dense numpy partition, for the families with a compiled loss and step rules
whose rate ignores the gradient, runs its round of steps in one compiled call
(:mod:`daskglm.compute.sgd_loops`), the same arithmetic as the Python loop without its
tens of microseconds of overhead per step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..model.families import Family
from ..model.penalties import Penalty
from .kernels import Stats, kernel_matrix, linear_predictor, loss_grad
from .sampling import (
    draw_rows,
    take_rows,
)
from .sparse_vectors import SparseGradient, column_gradient, dense_gradient, sparse_or_dense

__all__ = ["SGDConfig", "batch_loss_grad", "sgd_step", "l1_prox", "average_update",
           "quiet_when_diverging"]


@dataclass(frozen=True)
class SGDConfig:
    """Everything a step needs besides the coefficients and the step rule's state.

    Attributes
    ----------
    family : Family
    penalty : Penalty
        On the mean-loss scale; its smooth part enters through the gradient, its L1 part
        through a soft-thresholding step after each update.
    rule : step rule
        From :mod:`daskglm.optim.schedules`.
    fit_intercept : bool
    n_features : int
    batch_size : int
        Rows per step, over all partitions together (the last step of an epoch takes
        the rows that are left, possibly fewer).
    n_rows : int
        Rows of the whole data set.
    total_weight : float
        Sample weight of the whole data set.
    seed : int
        Root of every random draw.
    average_from : int or None
        First step (0-based) whose iterate enters the Polyak-Ruppert average; None
        without averaging.
    hogwild : int or None
        Threads of lock-free Hogwild SGD that run a partition's local steps
        (:func:`local_sgd`); None for mini-batch steps.
    shuffle : bool
        Whether each epoch visits the rows in a random order (else in their order).
    """

    family: Family
    penalty: Penalty
    rule: object
    fit_intercept: bool
    n_features: int
    batch_size: int
    n_rows: int
    total_weight: float
    seed: int
    average_from: int | None = None
    hogwild: int | None = None
    shuffle: bool = True


def quiet_when_diverging(kernel):
    """``kernel`` without numpy's overflow and invalid-value warnings: the iterates of a
    learning rate too large overflow, and the solver stops on them and says so once (a
    ConvergenceWarning), where numpy would warn at every step."""

    @functools.wraps(kernel)
    def quiet(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore"):
            return kernel(*args, **kwargs)

    return quiet


def _sparse_batch_loss_grad(batch, params, config):
    """:func:`~daskglm.compute.kernels.loss_grad` of a CSR mini-batch, its gradient sent sparse."""
    X, y, weight = batch
    eta = linear_predictor(X, params, config.fit_intercept)
    loss, r = config.family.loss_and_dloss(y, eta, weight)
    columns, values = column_gradient(X, r)
    if config.fit_intercept:
        columns = np.append(columns, params.shape[0] - 1)
        values = np.append(values, r.sum())
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, loss, sparse_or_dense(params.shape[0], columns, values))


@quiet_when_diverging
def batch_loss_grad(part, draw, params, config, epoch):
    """Loss and gradient SUMS over the rows partition ``draw[0]`` gives to a step.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    draw : tuple
        ``(partition index, number of rows, offset)``: the rows ``offset`` to ``offset +
        number`` of the partition's order of the epoch (see :func:`draw_rows`); the
        offset defaults to 0.
    params : ndarray
    config : SGDConfig
    epoch : int
        The step at which the epoch began.

    Returns
    -------
    Stats
        Sums over the drawn rows (``weight`` is their total sample weight).  For a sparse
        partition the gradient is a :class:`SparseGradient` when that is smaller than the
        dense vector.
    """
    index, count = draw[:2]
    offset = int(draw[2]) if len(draw) > 2 else 0
    X, y, weight = part
    X = kernel_matrix(X)
    if count == 0 or X.shape[0] == 0:
        if sp.issparse(X):
            return Stats(0.0, 0.0, SparseGradient.zeros(params.shape[0]))
        return Stats(0.0, 0.0, np.zeros(params.shape[0]))
    rows = draw_rows(X.shape[0], int(count), config.seed, epoch, index, offset, config.shuffle)
    batch = take_rows(part, rows)
    if sp.issparse(X):
        return _sparse_batch_loss_grad(batch, params, config)
    return loss_grad(batch, params, config.family, config.fit_intercept)


def sgd_step(params, grad_sum, weight, config, rule_state, step, n_batch=None):
    """One step from ``params``, before the L1 part of the penalty.

    The gradient sum of the drawn rows becomes an unbiased estimate of the mean-loss
    gradient of rows holding total weight ``weight`` (the whole data set, or one
    partition in local SGD) by the factor ``n_rows / (n_batch * weight)``, where
    ``n_batch`` (default ``batch_size``) is the step's rows over all partitions; the
    smooth part of the penalty adds its exact gradient.

    ``grad_sum`` may be a :class:`SparseGradient`.

    Returns
    -------
    params : ndarray
        ``params - rate * gradient``.
    rate : float or ndarray
    rule_state
    """
    n_batch = config.batch_size if n_batch is None else n_batch
    grad = dense_gradient(grad_sum) * (config.n_rows / (n_batch * weight))
    n = config.n_features
    grad[:n] += config.penalty.grad(params[:n])
    rate, rule_state = config.rule.update(grad, rule_state, step)
    moved = params - rate * grad
    _clip_l2_shrink(moved, params, rate, config)
    return moved, rate, rule_state


def _clip_l2_shrink(moved, params, rate, config):
    """Where ``rate`` times the L2 strength exceeds 1, the L2 part of a step would carry a
    coefficient past zero (and grow it: a huge ``alpha * eta`` makes the iterates
    overflow); there set it to zero, as scikit-learn scales its weights by ``max(0, 1 -
    eta * alpha_l2)`` after the loss's move.  Elsewhere ``moved`` is left as it is, bit
    for bit."""
    penalty = config.penalty
    if not hasattr(penalty, "hess_diag"):
        return
    n = config.n_features
    strength = penalty.hess_diag(params[:n])
    coef_rate = rate if np.ndim(rate) == 0 else rate[:n]
    past_zero = coef_rate * strength > 1.0
    if np.any(past_zero):
        moved[:n][past_zero] = 0.0


def l1_prox(params, rate, config):
    """Soft-threshold the coefficients by ``rate`` times the penalty's L1 strength.

    The proximal (truncated-gradient) step of the L1 part of an L1 or elastic-net
    penalty; ``params`` unchanged for smooth penalties.  ``rate`` may be one rate per
    parameter.
    """
    penalty = config.penalty
    if penalty.smooth:
        return params
    n = config.n_features
    threshold = (rate if np.ndim(rate) == 0 else rate[:n]) * penalty.l1_strength
    out = params.copy()
    coef = params[:n]
    out[:n] = np.sign(coef) * np.maximum(np.abs(coef) - threshold, 0.0)
    return out


def average_update(average, params, step, config):
    """The running mean of the iterates after ``step`` once averaging has begun.

    ``average`` is None until the first averaged iterate; the number of iterates in the
    mean follows from ``step`` and ``config.average_from``.
    """
    start = config.average_from
    if start is None or step < start:
        return average
    count = step - start + 1
    if count == 1:
        return params.copy()
    return average + (params - average) / count
