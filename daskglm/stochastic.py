"""Pure pieces of stochastic gradient descent: sampling, mini-batch gradients, local steps.

The same functions run on the driver (mini-batch SGD updates the coefficients there) and
in the per-partition kernels (local SGD runs several steps where a partition lives), so
that both compute exactly the same arithmetic.  Random draws depend only on
``(seed, step)`` for the split of a mini-batch over the partitions and on ``(seed, step,
partition index)`` for the rows a partition draws: a run is reproducible and does not
depend on how many workers there are or which finishes first.  Nothing here imports dask.

Sparse (CSR) partitions get two shortcuts.  A mini-batch of sparse rows touches few
columns, so its gradient is returned as a :class:`SparseGradient` ``(indices, values)``
when that is smaller than the dense vector; sums of them stay sparse while that pays.
Local SGD on a sparse partition keeps the coefficients as a :class:`ScaledVector`, so
that an L2 shrink costs O(1) and a step O(non-zeros of the mini-batch) instead of
O(features) (the lazy L2 update).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .families import Family
from .kernels import Stats, linear_predictor, loss_grad
from .penalties import L2, NoPenalty, Penalty
from .schedules import Chain, OptimalDecay, PolynomialDecay, Scale, add_states, scale_state

__all__ = [
    "SGDConfig",
    "LocalSGDStats",
    "SparseGradient",
    "ScaledVector",
    "dense_gradient",
    "column_gradient",
    "partition_size",
    "batch_counts",
    "draw_rows",
    "batch_loss_grad",
    "sgd_step",
    "l1_prox",
    "average_update",
    "local_sgd",
]


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
        From :mod:`daskglm.schedules`.
    fit_intercept : bool
    n_features : int
    batch_size : int
        Rows per step, over all partitions together.
    n_rows : int
        Rows of the whole data set.
    total_weight : float
        Sample weight of the whole data set.
    seed : int
        Root of every random draw.
    average_from : int or None
        First step (0-based) whose iterate enters the Polyak-Ruppert average; None
        without averaging.
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


def _rng(seed, *key):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def partition_size(part):
    """``(rows, total sample weight)`` of a partition, the weight summed as validation does."""
    X, _, weight = part
    return int(X.shape[0]), (float(X.shape[0]) if weight is None else float(weight.sum()))


def batch_counts(rows, batch_size, seed, step):
    """Rows each partition draws at ``step``: multinomial, in proportion to partition rows."""
    rows = np.asarray(rows, dtype=float)
    return _rng(seed, step).multinomial(batch_size, rows / rows.sum())


def draw_rows(n_rows, count, seed, step, index):
    """``count`` row indices of partition ``index``, uniform with replacement, sorted."""
    rows = _rng(seed, step, index).integers(0, n_rows, size=count)
    rows.sort()
    return rows


@dataclass
class SparseGradient:
    """A gradient vector that is zero outside ``indices``.

    The gradient of a mini-batch of sparse rows is non-zero only on the columns those rows
    use (and the intercept).  As ``(indices, values)`` it costs 12 bytes per touched entry
    (16 with 64-bit indices) instead of 8 bytes per parameter; :func:`batch_loss_grad`
    returns one only when that is smaller.  Adding two merges their indices (and gives a
    dense vector once that is smaller); adding a dense vector gives a dense vector.  So
    :class:`~daskglm.kernels.Stats` and the engines' tree sums handle both kinds alike,
    and the sums are exactly those of the dense vectors.

    Attributes
    ----------
    size : int
        Length of the dense vector.
    indices : ndarray of int
        Sorted, distinct positions of the stored entries.
    values : ndarray of float
    """

    size: int
    indices: np.ndarray
    values: np.ndarray

    #: ``ndarray + SparseGradient`` defers to :meth:`__radd__` instead of broadcasting.
    __array_ufunc__ = None

    @classmethod
    def zeros(cls, size):
        """The zero vector of length ``size``, with no stored entries."""
        return cls(int(size), np.zeros(0, dtype=_index_dtype(size)), np.zeros(0))

    @property
    def nbytes(self):
        """Bytes of the stored indices and values."""
        return int(self.indices.nbytes + self.values.nbytes)

    def toarray(self):
        """The dense vector."""
        dense = np.zeros(self.size)
        dense[self.indices] = self.values
        return dense

    def __add__(self, other):
        if isinstance(other, SparseGradient):
            if other.size != self.size:
                raise ValueError(f"Cannot add gradients of sizes {self.size} and {other.size}.")
            indices = np.union1d(self.indices, other.indices)
            values = np.zeros(indices.shape[0])
            values[np.searchsorted(indices, self.indices)] += self.values
            values[np.searchsorted(indices, other.indices)] += other.values
            return _smaller(self.size, indices, values)
        dense = np.array(other, dtype=float)  # a copy: the operands are left as they were
        dense[self.indices] += self.values
        return dense

    __radd__ = __add__


def _index_dtype(size):
    return np.int32 if size <= np.iinfo(np.int32).max else np.int64


def _smaller(size, indices, values):
    """A :class:`SparseGradient` of ``(indices, values)`` or the dense vector, the smaller."""
    sparse = SparseGradient(int(size), indices.astype(_index_dtype(size), copy=False), values)
    return sparse if sparse.nbytes < 8 * size else sparse.toarray()


def dense_gradient(grad):
    """``grad`` as a dense ndarray, whether it is one already or a :class:`SparseGradient`."""
    return grad.toarray() if isinstance(grad, SparseGradient) else grad


def column_gradient(X, r):
    """``X.T @ r`` for a CSR matrix, on the columns ``X`` uses only: ``(columns, values)``.

    Costs O(non-zeros of ``X``), however many columns ``X`` has; ``columns`` is sorted.
    Each value is summed over the rows in order, as ``X.T @ r`` sums it.
    """
    columns, position = np.unique(X.indices, return_inverse=True)
    contributions = X.data * np.repeat(r, np.diff(X.indptr))
    return columns, np.bincount(position, weights=contributions, minlength=columns.shape[0])


def _sparse_batch_loss_grad(batch, params, config):
    """:func:`~daskglm.kernels.loss_grad` of a CSR mini-batch, its gradient sent sparse."""
    X, y, weight = batch
    eta = linear_predictor(X, params, config.fit_intercept)
    loss, r = config.family.loss_and_dloss(y, eta, weight)
    columns, values = column_gradient(X, r)
    if config.fit_intercept:
        columns = np.append(columns, params.shape[0] - 1)
        values = np.append(values, r.sum())
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, loss, _smaller(params.shape[0], columns, values))


def batch_loss_grad(part, draw, params, config, step):
    """Loss and gradient SUMS over the rows partition ``draw[0]`` draws at ``step``.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    draw : tuple
        ``(partition index, number of rows to draw)``.
    params : ndarray
    config : SGDConfig
    step : int

    Returns
    -------
    Stats
        Sums over the drawn rows (``weight`` is their total sample weight).  For a sparse
        partition the gradient is a :class:`SparseGradient` when that is smaller than the
        dense vector.
    """
    index, count = draw
    X, y, weight = part
    if count == 0 or X.shape[0] == 0:
        if sp.issparse(X):
            return Stats(0.0, 0.0, SparseGradient.zeros(params.shape[0]))
        return Stats(0.0, 0.0, np.zeros(params.shape[0]))
    rows = draw_rows(X.shape[0], int(count), config.seed, step, index)
    batch = (X[rows], y[rows], None if weight is None else weight[rows])
    if sp.issparse(X):
        return _sparse_batch_loss_grad(batch, params, config)
    return loss_grad(batch, params, config.family, config.fit_intercept)


def sgd_step(params, grad_sum, weight, config, rule_state, step):
    """One step from ``params``, before the L1 part of the penalty.

    The gradient sum of the drawn rows becomes an unbiased estimate of the mean-loss
    gradient of rows holding total weight ``weight`` (the whole data set, or one
    partition in local SGD) by the factor ``n_rows / (batch_size * weight)``; the smooth
    part of the penalty adds its exact gradient.

    ``grad_sum`` may be a :class:`SparseGradient`.

    Returns
    -------
    params : ndarray
        ``params - rate * gradient``.
    rate : float or ndarray
    rule_state
    """
    grad = dense_gradient(grad_sum) * (config.n_rows / (config.batch_size * weight))
    n = config.n_features
    grad[:n] += config.penalty.grad(params[:n])
    rate, rule_state = config.rule.update(grad, rule_state, step)
    return params - rate * grad, rate, rule_state


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
    threshold = (rate if np.ndim(rate) == 0 else rate[:n]) * (penalty.alpha * penalty.l1_ratio)
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


@dataclass
class LocalSGDStats:
    """A partition's local SGD run, scaled by its share of the sample weight.

    Summing over the partitions gives the weighted averages of the last (pre-prox)
    iterates, rates, step-rule states and running means, and the sums of the loss and
    sample weight of every row drawn.
    """

    params: np.ndarray
    rate: object
    rule_state: object
    average: np.ndarray | None
    loss: float
    batch_weight: float

    def __add__(self, other):
        average = None if self.average is None else self.average + other.average
        return LocalSGDStats(
            self.params + other.params,
            self.rate + other.rate,
            add_states(self.rule_state, other.rule_state),
            average,
            self.loss + other.loss,
            self.batch_weight + other.batch_weight,
        )


def local_sgd(part, draw, params, rule_state, average, config):
    """Run SGD steps on one partition's rows, starting from the shared state.

    Step ``k`` draws ``counts[k]`` rows of this partition (the rows plain mini-batch SGD
    would draw there at that step), scales their gradient to estimate this partition's
    mean-loss gradient, and moves.  The L1 step of every step but the last is applied
    here; that of the last step is applied by the driver after averaging, so that one
    local step averaged over the partitions is exactly one step of plain mini-batch SGD.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    draw : tuple
        ``(partition index, first step, counts)`` with one count per local step.
    params : ndarray
        The shared starting point.
    rule_state
        The shared state of ``config.rule``.
    average : ndarray or None
        The shared running mean of the iterates.
    config : SGDConfig

    Returns
    -------
    LocalSGDStats
        Scaled by ``weight / config.total_weight``.
    """
    index, first_step, counts = draw
    _, weight = partition_size(part)
    if weight <= 0:
        zero = np.zeros_like(params)
        return LocalSGDStats(zero, 0.0, scale_state(rule_state, 0.0),
                             None if average is None else np.zeros_like(average), 0.0, 0.0)
    fraction = weight / config.total_weight
    if _lazy_l2_applies(part[0], config):
        y, rate, rule_state, loss, batch_weight = _lazy_local_steps(
            part, index, first_step, counts, params, rule_state, weight, config
        )
        return LocalSGDStats(
            fraction * y, fraction * rate, scale_state(rule_state, fraction), None, loss,
            batch_weight,
        )
    loss = batch_weight = 0.0
    x = y = params
    rate = 0.0
    for k, count in enumerate(counts):
        step = first_step + k
        if k > 0:
            x = l1_prox(y, rate, config)
            average = average_update(average, x, step - 1, config)
        stats = batch_loss_grad(part, (index, count), x, config, step)
        loss += stats.loss
        batch_weight += stats.weight
        y, rate, rule_state = sgd_step(x, stats.grad, weight, config, rule_state, step)
    return LocalSGDStats(
        fraction * y, fraction * rate, scale_state(rule_state, fraction),
        None if average is None else fraction * average, loss, batch_weight,
    )


# the lazy L2 update of sparse local SGD ------------------------------------------------------
class ScaledVector:
    """A vector held as ``scale * values``: scaling it costs O(1), changing k entries O(k).

    An L2 step multiplies every coefficient by ``1 - rate * alpha``, which here only
    updates ``scale``; a sparse gradient step changes the entries of the columns the
    mini-batch uses.  When ``scale`` gets small it is folded into ``values`` (an O(d)
    pass, rare) so that the division in :meth:`add_at` stays accurate.

    Parameters
    ----------
    vector : array-like
        The initial value (copied).
    """

    #: ``scale`` is folded into ``values`` when its magnitude falls below this.
    RESCALE_BELOW = 1e-9

    def __init__(self, vector):
        self.values = np.array(vector, dtype=float)
        self.scale = 1.0

    def scale_by(self, factor):
        """Multiply the vector by ``factor``."""
        self.scale *= factor
        if abs(self.scale) < self.RESCALE_BELOW:
            self.values *= self.scale
            self.scale = 1.0

    def add_at(self, indices, increments):
        """Add ``increments`` to the entries at ``indices`` (distinct)."""
        self.values[indices] += increments / self.scale

    def dot(self, X):
        """``X @ vector`` as a flat ndarray."""
        return self.scale * np.asarray(X @ self.values).ravel()

    def toarray(self):
        """The vector as an ndarray."""
        return self.scale * self.values


def _scalar_rule(rule):
    """True when ``rule``'s rate is one number that ignores the gradient."""
    if isinstance(rule, Chain):
        return all(_scalar_rule(inner) for inner in rule.rules)
    return isinstance(rule, (Scale, PolynomialDecay, OptimalDecay))


def _lazy_l2_applies(X, config):
    """Whether local SGD on ``X`` can take the lazy path and give the same iterates.

    It needs a sparse partition, a penalty that is none or L2 (no soft-thresholding, which
    touches every coefficient), one learning rate for every coordinate that does not depend
    on the gradient (not Adagrad), and no running mean of the iterates.
    """
    return (
        sp.issparse(X)
        and isinstance(config.penalty, (NoPenalty, L2))
        and _scalar_rule(config.rule)
        and config.average_from is None
    )


def _lazy_local_steps(part, index, first_step, counts, params, rule_state, weight, config):
    """:func:`local_sgd`'s steps on a CSR partition with the lazy L2 update.

    The same rows and the same update as the dense loop, ``coef <- (1 - rate * alpha) *
    coef - rate * scaled gradient``, equal to it up to round-off, at a cost per step of the
    mini-batch's non-zeros rather than of the number of features.

    Returns
    -------
    params, rate, rule_state, loss, batch_weight
    """
    X, y, weight_rows = part
    n = config.n_features
    alpha = config.penalty.alpha if isinstance(config.penalty, L2) else 0.0
    factor = config.n_rows / (config.batch_size * weight)
    coef = ScaledVector(params[:n])
    intercept = float(params[n]) if config.fit_intercept else 0.0
    loss = batch_weight = 0.0
    rate = 0.0
    for k, count in enumerate(counts):
        step = first_step + k
        rate, rule_state = config.rule.update(None, rule_state, step)
        if count > 0:
            rows = draw_rows(X.shape[0], int(count), config.seed, step, index)
            X_b, y_b = X[rows], y[rows]
            w_b = None if weight_rows is None else weight_rows[rows]
            batch_loss, r = config.family.loss_and_dloss(y_b, coef.dot(X_b) + intercept, w_b)
            loss += batch_loss
            batch_weight += float(count) if w_b is None else float(w_b.sum())
            columns, values = column_gradient(X_b, r)
        coef.scale_by(1.0 - rate * alpha)
        if count > 0:
            coef.add_at(columns, -(rate * factor) * values)
            if config.fit_intercept:
                intercept -= rate * factor * r.sum()
    params = coef.toarray()
    if config.fit_intercept:
        params = np.append(params, intercept)
    return params, rate, rule_state, loss, batch_weight
