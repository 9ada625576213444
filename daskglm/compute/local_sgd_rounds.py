"""Local SGD: a round of SGD steps where a partition lives (:func:`local_sgd`).

Step ``k`` of a round draws the rows plain mini-batch SGD would draw from this partition at
that step (:mod:`daskglm.compute.stochastic`: the same draws, the same step), so that one
local step averaged over the partitions is one step of mini-batch SGD.  A dense numpy
partition runs its steps in one compiled call where it can (:func:`compiled_local_steps`,
:mod:`daskglm.compute.sgd_loops`), a sparse one with the lazy L2 update (the coefficients
as a :class:`~daskglm.compute.sparse_vectors.ScaledVector`), a Hogwild round as one pass of
lock-free threads (:mod:`daskglm.compute.hogwild`), any other one Python step at a time.
Nothing here imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..optim.schedules import (
    Chain,
    OptimalDecay,
    PolynomialDecay,
    Scale,
    add_states,
    scale_state,
    step_rates,
)
from .blocked import pointwise_for
from .kernels import kernel_matrix, linear_predictor
from .sampling import batch_rows, draw_rows, epoch_order, partition_size, take_rows_to_host
from .sparse_vectors import ScaledVector, column_gradient
from .stochastic import average_update, batch_loss_grad, l1_prox, quiet_when_diverging, sgd_step

__all__ = ["LocalSGDStats", "local_sgd", "compiled_local_steps", "compiled_local_steps_apply",
           "scalar_rule", "is_float_array"]


@dataclass
class LocalSGDStats:
    """A partition's local SGD run, scaled by its share of the sample weight.

    Summing over the partitions gives the weighted averages of the last (pre-prox)
    iterates, rates, step-rule states and running means, and the sums of the loss, of the
    penalty and of the sample weight of every row drawn (``penalty`` sums each row's
    sample weight times the penalty at the iterate its loss was taken at).
    """

    params: np.ndarray
    rate: object
    rule_state: object
    average: np.ndarray | None
    loss: float
    batch_weight: float
    penalty: float = 0.0

    def __add__(self, other):
        average = None if self.average is None else self.average + other.average
        return LocalSGDStats(
            self.params + other.params,
            self.rate + other.rate,
            add_states(self.rule_state, other.rule_state),
            average,
            self.loss + other.loss,
            self.batch_weight + other.batch_weight,
            self.penalty + other.penalty,
        )


@quiet_when_diverging
def local_sgd(part, draw, params, rule_state, average, config):
    """Run SGD steps on one partition's rows, starting from the shared state.

    Step ``k`` draws ``counts[k]`` rows of this partition (the rows plain mini-batch SGD
    would draw there at that step), scales their gradient to estimate this partition's
    mean-loss gradient, and moves.  The L1 step of every step but the last is applied
    here; that of the last step is applied by the driver after averaging, so that one
    local step averaged over the partitions is exactly one step of plain mini-batch SGD.

    A dense numpy partition runs the steps in one compiled call where it can
    (:func:`compiled_local_steps_apply`), a sparse one with the lazy L2 update where it can, and
    ``config.hogwild`` as one pass of Hogwild SGD; otherwise (Adagrad, CuPy arrays, other
    penalties or families) one Python step at a time.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    draw : tuple
        ``(partition index, first step, counts, epoch, offset)`` with one count per local
        step: the steps take consecutive slices of the partition's order of the epoch
        that began at step ``epoch`` (default: the first step), from ``offset`` (default
        0) on.
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
    index, first_step, counts = draw[:3]
    epoch = int(draw[3]) if len(draw) > 3 else first_step
    offset = int(draw[4]) if len(draw) > 4 else 0
    _, weight = partition_size(part)
    if weight <= 0:
        zero = np.zeros_like(params)
        return LocalSGDStats(zero, 0.0, scale_state(rule_state, 0.0),
                             None if average is None else np.zeros_like(average), 0.0, 0.0)
    fraction = weight / config.total_weight
    if config.hogwild:
        return _hogwild_local_steps(part, index, first_step, counts, params, rule_state,
                                    weight, fraction, config, epoch, offset)
    if _lazy_l2_applies(part[0], config):
        from .sparse_sgd_loops import compiled_lazy_steps, compiled_lazy_steps_apply

        lazy = (compiled_lazy_steps if compiled_lazy_steps_apply(part, counts, config)
                else _lazy_local_steps)
        y, rate, rule_state, loss, batch_weight, penalty = lazy(
            part, index, first_step, counts, params, rule_state, weight, config, epoch, offset
        )
        return LocalSGDStats(
            fraction * y, fraction * rate, scale_state(rule_state, fraction), None, loss,
            batch_weight, penalty,
        )
    compiled = compiled_local_steps_apply(part, counts, config)
    steps = compiled_local_steps if compiled else _python_local_steps
    y, rate, rule_state, average, loss, batch_weight, penalty = steps(
        part, index, first_step, counts, params, rule_state, average, weight, config, epoch,
        offset,
    )
    return LocalSGDStats(
        fraction * y, fraction * rate, scale_state(rule_state, fraction),
        None if average is None else fraction * average, loss, batch_weight, penalty,
    )


def _python_local_steps(part, index, first_step, counts, params, rule_state, average, weight,
                        config, epoch, offset):
    """:func:`local_sgd`'s steps, one :func:`batch_loss_grad` and :func:`sgd_step` each.

    Every partition, family, penalty and step rule; the reference of
    :func:`compiled_local_steps`.

    Returns
    -------
    params, rate, rule_state, average, loss, batch_weight, penalty
        Not scaled.
    """
    loss = batch_weight = penalty = 0.0
    x = y = params
    rate = 0.0
    n = config.n_features
    for k, count in enumerate(counts):
        step = first_step + k
        if k > 0:
            x = l1_prox(y, rate, config)
            average = average_update(average, x, step - 1, config)
        stats = batch_loss_grad(part, (index, count, offset), x, config, epoch)
        offset += int(count)
        loss += stats.loss
        batch_weight += stats.weight
        if stats.weight:
            penalty += stats.weight * config.penalty.value(x[:n])
        y, rate, rule_state = sgd_step(x, stats.grad, weight, config, rule_state, step,
                                       batch_rows(config, epoch, step))
    return y, rate, rule_state, average, loss, batch_weight, penalty


def compiled_local_steps_apply(part, counts, config):
    """Whether :func:`compiled_local_steps` runs ``counts`` steps on ``part``.

    It needs a dense numpy float32 or float64 partition (float targets and weights), a
    family with a compiled pointwise loss (:func:`~daskglm.compute.blocked.pointwise_for`),
    no penalty, L2, L1 or the elastic net, a step rule whose rate ignores the gradient (not
    Adagrad), and at least one step.  The running mean of the iterates may be on.
    """
    X, y, weight = part[:3]
    return (
        is_float_array(X, 2) and is_float_array(y, 1) and (weight is None or is_float_array(weight, 1))
        and config.penalty.elastic_net_strengths is not None
        and scalar_rule(config.rule)
        and len(counts) > 0
        and pointwise_for(config.family) is not None
    )


def is_float_array(a, ndim):
    return isinstance(a, np.ndarray) and a.ndim == ndim and a.dtype in (np.float32, np.float64)


def compiled_local_steps(part, index, first_step, counts, params, rule_state, average, weight,
                          config, epoch, offset):
    """:func:`_python_local_steps` in one call of
    :func:`~daskglm.compute.sgd_loops.local_steps`.

    The same rows (step ``k`` takes the next ``counts[k]`` of the partition's order of the
    epoch, sorted, as :func:`draw_rows` gives them), the same rates (``config.rule``
    called once per step, as :func:`sgd_step` does), the same gradient scales and the same
    arithmetic, up to round-off (the order of the sums of the penalty and of the sample
    weights).
    """
    from .sgd_loops import local_steps

    X, y, weight_rows = part[:3]
    n_steps = len(counts)
    bounds = np.minimum(offset + np.concatenate(([0], np.cumsum(counts, dtype=np.int64))),
                        X.shape[0])
    # the round's slice of the epoch's order, each step's rows sorted apart in the loop (one
    # draw_rows for the round would sort them all together)
    rows = epoch_order(X.shape[0], config.seed, epoch, index,
                       config.shuffle)[bounds[0]:bounds[-1]].copy()
    bounds -= bounds[0]
    steps = range(first_step, first_step + n_steps)
    n_batch = np.minimum(config.batch_size,
                         config.n_rows - (np.array(steps) - epoch) * config.batch_size)
    factors = config.n_rows / (n_batch * weight)
    rates, rate, rule_state = step_rates(config.rule, rule_state, steps)
    l2, l1 = _penalty_strengths(config.penalty)
    code, parameter = pointwise_for(config.family)
    running = np.zeros(len(params)) if average is None else np.array(average, dtype=np.float64)
    moved, loss, batch_weight, penalty, averaged = local_steps(
        X, y, np.empty(0) if weight_rows is None else weight_rows, rows, bounds, factors, rates,
        code, parameter, config.fit_intercept, l2, l1, not config.penalty.smooth,
        np.asarray(params, dtype=np.float64), running,
        -1 if config.average_from is None else config.average_from, first_step,
    )
    if average is not None or averaged:
        average = running
    return moved, rate, rule_state, average, loss, batch_weight, penalty


def _penalty_strengths(penalty):
    """``(l2, l1)``: the strengths of the L2 part (as in :meth:`Penalty.grad`) and of the L1
    part (as in :func:`l1_prox`) of a penalty of the elastic-net form
    (:attr:`~daskglm.model.penalties.Penalty.elastic_net_strengths`)."""
    return penalty.elastic_net_strengths or (0.0, 0.0)


def scalar_rule(rule):
    """True when ``rule``'s rate is one number that ignores the gradient."""
    if isinstance(rule, Chain):
        return all(scalar_rule(inner) for inner in rule.rules)
    return isinstance(rule, (Scale, PolynomialDecay, OptimalDecay))


def _lazy_l2_applies(X, config):
    """Whether local SGD on ``X`` can take the lazy path and give the same iterates.

    It needs a sparse partition, a penalty that is none or L2 (no soft-thresholding, which
    touches every coefficient), one learning rate for every coordinate that does not depend
    on the gradient (not Adagrad), and no running mean of the iterates.
    """
    return (
        sp.issparse(X)
        and config.penalty.ridge_strength is not None
        and scalar_rule(config.rule)
        and config.average_from is None
    )


def _lazy_local_steps(part, index, first_step, counts, params, rule_state, weight, config,
                      epoch=None, offset=0):
    """:func:`local_sgd`'s steps on a CSR partition with the lazy L2 update.

    The same rows and the same update as the dense loop, ``coef <- (1 - rate * alpha) *
    coef - rate * scaled gradient``, equal to it up to round-off, at a cost per step of the
    mini-batch's non-zeros rather than of the number of features.

    Returns
    -------
    params, rate, rule_state, loss, batch_weight, penalty
    """
    X, y, weight_rows = part
    n = config.n_features
    epoch = first_step if epoch is None else epoch
    alpha = config.penalty.ridge_strength or 0.0
    coef = ScaledVector(params[:n])
    intercept = float(params[n]) if config.fit_intercept else 0.0
    loss = batch_weight = penalty = 0.0
    rate = 0.0
    for k, count in enumerate(counts):
        step = first_step + k
        factor = config.n_rows / (batch_rows(config, epoch, step) * weight)
        rate, rule_state = config.rule.update(None, rule_state, step)
        if count > 0:
            rows = draw_rows(X.shape[0], int(count), config.seed, epoch, index, offset,
                             config.shuffle)
            offset += int(count)
            X_b, y_b = X[rows], y[rows]
            w_b = None if weight_rows is None else weight_rows[rows]
            batch_loss, r = config.family.loss_and_dloss(y_b, coef.dot(X_b) + intercept, w_b)
            loss += batch_loss
            this_weight = float(count) if w_b is None else float(w_b.sum())
            batch_weight += this_weight
            penalty += this_weight * 0.5 * alpha * coef.sqnorm()
            columns, values = column_gradient(X_b, r)
        coef.scale_by(1.0 - rate * alpha)
        if count > 0:
            coef.add_at(columns, -(rate * factor) * values)
            if config.fit_intercept:
                intercept -= rate * factor * r.sum()
    params = coef.toarray()
    if config.fit_intercept:
        params = np.append(params, intercept)
    return params, rate, rule_state, loss, batch_weight, penalty


def _hogwild_local_steps(part, index, first_step, counts, params, rule_state, weight,
                         fraction, config, epoch, offset):
    """:func:`local_sgd`'s steps as one pass of Hogwild SGD over the same rows.

    The rows the ``len(counts)`` local steps would read are visited once, one row per
    step, by ``config.hogwild`` threads updating one coefficient vector without locks
    (:func:`~daskglm.compute.hogwild.hogwild_epochs`), at the rate of the first step
    divided by the rows per local step (so that the pass moves about as far as the
    mini-batch steps would); each row's gradient is scaled to estimate the partition's
    mean-loss gradient.  The loss is taken at the starting point.
    """
    from .hogwild import hogwild_epochs, hogwild_loss

    X = part[0]
    X = kernel_matrix(X)
    n = config.n_features
    total = int(np.sum(counts))
    rate, _ = config.rule.update(None, rule_state, first_step)
    if total == 0:
        return LocalSGDStats(fraction * params, fraction * rate, scale_state(rule_state, fraction),
                             None, 0.0, 0.0, 0.0)
    rows = draw_rows(X.shape[0], total, config.seed, epoch, index, offset, config.shuffle)
    X_b, y_b, w_b = take_rows_to_host(part, rows)
    w_b = np.ones(total) if w_b is None else w_b
    loss, _ = config.family.loss_and_dloss(y_b, linear_predictor(X_b, params, config.fit_intercept),
                                           w_b)
    alpha = config.penalty.ridge_strength or 0.0
    coef, intercept, _ = hogwild_epochs(
        X_b, y_b, w_b * (X.shape[0] / weight), params[:n],
        float(params[n]) if config.fit_intercept else 0.0, loss=hogwild_loss(config.family),
        alpha=alpha, eta0=float(rate) * len(counts) / total, schedule="constant", epochs=1,
        threads=int(config.hogwild), seed=[config.seed, epoch, index, first_step],
        fit_intercept=config.fit_intercept,
    )
    moved = np.append(coef, intercept) if config.fit_intercept else coef
    batch_weight = float(w_b.sum())
    penalty = batch_weight * config.penalty.value(params[:n])
    return LocalSGDStats(fraction * moved, fraction * rate, scale_state(rule_state, fraction), None,
                         loss, batch_weight, penalty)
