"""Pure pieces of stochastic gradient descent: sampling, mini-batch gradients, local steps.

The same functions run on the driver (mini-batch SGD updates the coefficients there) and
in the per-partition kernels (local SGD runs several steps where a partition lives), so
that both compute exactly the same arithmetic.  Random draws depend only on
``(seed, step)`` for the split of a mini-batch over the partitions and on ``(seed, step,
partition index)`` for the rows a partition draws: a run is reproducible and does not
depend on how many workers there are or which finishes first.  Nothing here imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .families import Family
from .kernels import Stats, loss_grad
from .penalties import Penalty
from .schedules import add_states, scale_state

__all__ = [
    "SGDConfig",
    "LocalSGDStats",
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
        Sums over the drawn rows (``weight`` is their total sample weight).
    """
    index, count = draw
    X, y, weight = part
    if count == 0 or X.shape[0] == 0:
        return Stats(0.0, 0.0, np.zeros(params.shape[0]))
    rows = draw_rows(X.shape[0], int(count), config.seed, step, index)
    batch = (X[rows], y[rows], None if weight is None else weight[rows])
    return loss_grad(batch, params, config.family, config.fit_intercept)


def sgd_step(params, grad_sum, weight, config, rule_state, step):
    """One step from ``params``, before the L1 part of the penalty.

    The gradient sum of the drawn rows becomes an unbiased estimate of the mean-loss
    gradient of rows holding total weight ``weight`` (the whole data set, or one
    partition in local SGD) by the factor ``n_rows / (batch_size * weight)``; the smooth
    part of the penalty adds its exact gradient.

    Returns
    -------
    params : ndarray
        ``params - rate * gradient``.
    rate : float or ndarray
    rule_state
    """
    grad = grad_sum * (config.n_rows / (config.batch_size * weight))
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
