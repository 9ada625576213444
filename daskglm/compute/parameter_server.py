"""The task of parameter-server SGD: mini-batch steps on one partition against a holder.

:func:`parameter_server_task` runs on one partition for one generation of
``solver="async"``: it joins the holder's run (a clock), reads the parameters, takes
SGD steps on mini-batches of its own rows, pushes the accumulated change every
``push_every`` steps, reads the parameters again every ``fetch_every`` steps, and with a
staleness bound waits its turn after each push (and then reads).  It stops when the
holder says the run has done its rows, after ``passes`` passes over its own rows or
``seconds`` of work, or when asked.  The holder is anything with the methods of
:class:`~daskglm.engine.parameter_holders.ParameterHolder` (its handle on a cluster); nothing
here imports Dask.

Every change a task pushes is scaled by ``1 / (tasks running when it last read)``, so
that when every task pushes once the parameters move by the mean of their steps, as one
step of synchronous SGD on their mini-batches does.  On sparse rows without a penalty
the change touches only the columns of the rows read and is pushed as a
:class:`~daskglm.compute.sparse_vectors.SparseGradient` when that is smaller.  With
``hogwild`` threads (sparse rows, L2 or no penalty, log or squared loss), the steps
between two pushes are one pass of lock-free Hogwild SGD over the rows read
(:func:`~daskglm.compute.hogwild.hogwild_epochs`) instead of mini-batch steps.

On a dense numpy partition, for the families with a compiled loss, no or an L2 penalty and
a step rule whose rate ignores the gradient (:func:`compiled_steps_apply`), the steps
between two calls to the holder run in one call of the compiled loop of local SGD
(:func:`daskglm.compute.sgd_loops.local_steps`): the same rows, rates and arithmetic as
one :func:`_minibatch_step` each, without their tens of microseconds of Python a step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backend import to_host
from .amortise import amortising_steps
from .blocked import pointwise_for
from .hogwild import hogwild_loss
from .kernels import linear_predictor
from .local_sgd_rounds import is_float_array, scalar_rule
from .sampling import partition_size, take_rows, take_rows_to_host
from .sparse_vectors import column_gradient, sparse_or_dense

__all__ = ["ParameterServerConfig", "TaskReport", "parameter_server_task",
           "compiled_steps_apply"]


@dataclass(frozen=True)
class ParameterServerConfig:
    """What a parameter-server task needs besides its partition and the holder.

    Attributes
    ----------
    family, penalty, rule, fit_intercept, n_features
        The model and the step rule (:mod:`daskglm.optim.schedules`).
    batch_size : int
        Rows per local step.
    seed : int
    push_every, fetch_every : int or None
        Local steps between two pushes, and between two reads of the parameters.
        ``push_every=None``: each task sizes it from its own timings, the smallest power
        of two of steps whose compute is at least ``amortise`` times the fixed seconds of
        its last push (its call to the holder and, with compiled steps, the Python
        around the compiled calls since the push before), at most one pass over its
        rows; ``fetch_every=None``: a read after every push (and after every push with
        ``bounded``, besides the reads of ``fetch_every``).
    amortise : float
        That ratio.
    bounded : bool
        Whether the run has a staleness bound: the task then waits its turn after every
        push and reads the parameters again.
    seconds : float
        Most seconds a task works in one generation.
    hogwild : int or None
        Threads of Hogwild SGD between two pushes (None: mini-batch steps).
    passes : float or None
        Most passes over its own rows a task reads in one generation (None: no limit).
        Where a worker thread holds several partitions their tasks run one after the
        other, and a limit of one pass gives each its turn.
    pace : callable or None
        Called before every push (a straggler's pause in tests and demos).
    """

    family: object
    penalty: object
    rule: object
    fit_intercept: bool
    n_features: int
    batch_size: int
    seed: int
    push_every: int | None = 1
    fetch_every: int | None = 1
    amortise: float = 10.0
    bounded: bool = False
    seconds: float = 1.0
    hogwild: int | None = None
    passes: float | None = None
    pace: object = None


@dataclass
class TaskReport:
    """What one task did: rows read, updates pushed, seconds waited at the bound, and the
    steps between its last two pushes."""

    rows: int = 0
    pushes: int = 0
    seconds_waiting: float = 0.0
    push_every: int = 0


class _Batches:
    """Mini-batches of a partition's rows: consecutive slices of random orders."""

    def __init__(self, n_rows, rng):
        self.n_rows, self.rng = n_rows, rng
        self.order, self.position = rng.permutation(n_rows), 0

    def take(self, count):
        if self.position >= self.n_rows:
            self.order, self.position = self.rng.permutation(self.n_rows), 0
        rows = self.order[self.position:self.position + count]
        self.position += rows.shape[0]
        return np.sort(rows)

    def take_steps(self, count, steps):
        """The rows of ``steps`` calls of :meth:`take` ``(count)``, with the same draws.

        Returns
        -------
        rows : ndarray of int64
            The steps' rows one after the other, each step's unsorted (a new array).
        bounds : ndarray of int64, shape (steps + 1,)
            Step ``k`` has rows ``rows[bounds[k]:bounds[k + 1]]``.
        """
        end = self.position + steps * count
        if self.position < self.n_rows and end <= self.n_rows:  # within the current order
            rows = self.order[self.position:end].copy()
            self.position = end
            return rows, np.arange(0, steps * count + 1, count, dtype=np.int64)
        pieces, sizes = [], []
        while steps > 0:
            if self.position >= self.n_rows:
                self.order, self.position = self.rng.permutation(self.n_rows), 0
            left = self.n_rows - self.position
            served = min(steps, -(-left // count))  # the last of them may find fewer rows
            taken = min(served * count, left)
            pieces.append(self.order[self.position:self.position + taken])
            size = np.full(served, count, dtype=np.int64)
            size[-1] = taken - (served - 1) * count
            sizes.append(size)
            self.position += taken
            steps -= served
        bounds = np.concatenate(([0], np.cumsum(np.concatenate(sizes))))
        return np.concatenate(pieces), bounds


def _minibatch_step(part, rows, local, config, scale, rule_state, step):
    """One SGD step on ``rows`` from ``local``: ``(change, loss, weight, penalty,
    rule_state, touched columns or None)``; the coefficients the step's L2 part would
    carry past zero go to zero (:func:`_clip_l2_shrink`)."""
    X_b, y_b, w_b = take_rows(part, rows)
    loss, r = config.family.loss_and_dloss(y_b, linear_predictor(X_b, local, config.fit_intercept),
                                           w_b)
    n = config.n_features
    batch_weight = float(rows.shape[0]) if w_b is None else float(w_b.sum())
    grad = np.zeros_like(local)
    touched = None
    if sp.issparse(X_b):
        touched, values = column_gradient(X_b, r)
        grad[touched] = values
    else:
        grad[:n] = np.asarray(to_host(X_b.T @ r)).ravel()
    if config.fit_intercept:
        grad[n] = float(r.sum())
    grad *= scale / rows.shape[0]
    grad[:n] += config.penalty.grad(local[:n])
    rate, rule_state = config.rule.update(grad, rule_state, step)
    penalty = batch_weight * config.penalty.value(local[:n])
    change = -rate * grad
    _clip_l2_shrink(change, local, rate, config)
    return change, loss, batch_weight, penalty, rule_state, touched


def _clip_l2_shrink(change, local, rate, config):
    """Where ``rate`` times the L2 strength exceeds 1, make ``change`` carry the coefficient
    to zero, as :func:`~daskglm.compute.stochastic.sgd_step` (and scikit-learn) do."""
    n = config.n_features
    strength = config.penalty.hess_diag(local[:n])
    past_zero = (rate if np.ndim(rate) == 0 else rate[:n]) * strength > 1.0
    if np.any(past_zero):
        change[:n][past_zero] = -local[:n][past_zero]


def compiled_steps_apply(part, config):
    """Whether a task on ``part`` runs its steps between two calls to the holder compiled.

    It needs mini-batch steps (not Hogwild), a dense numpy float32 or float64 partition
    (float targets and weights), a family with a compiled pointwise loss
    (:func:`~daskglm.compute.blocked.pointwise_for`), no penalty or L2, and a step rule
    whose rate ignores the gradient (not Adagrad).
    """
    X, y, weight = part[:3]
    return (
        not config.hogwild
        and is_float_array(X, 2) and is_float_array(y, 1)
        and (weight is None or is_float_array(weight, 1))
        and config.penalty.ridge_strength is not None
        and scalar_rule(config.rule)
        and pointwise_for(config.family) is not None
    )


def _loop_constants(config):
    """``(family code, family parameter, L2 strength)`` of the compiled loop."""
    code, parameter = pointwise_for(config.family)
    return code, parameter, config.penalty.ridge_strength or 0.0


def _compiled_steps(part, rows, bounds, local, config, scale, rule_state, first_step,
                    constants):
    """The steps of :func:`_minibatch_step` on the rows of :meth:`_Batches.take_steps`, in
    one call of :func:`~daskglm.compute.sgd_loops.local_steps`.

    Step ``k`` is step number ``first_step + k`` of the step rule; ``constants`` are those
    of :func:`_loop_constants`.  Returns ``(moved, loss, weight, penalty, rule_state,
    seconds)``: the last step's result, the sums over the steps (equal to those of the
    Python steps up to round-off), and the seconds of the steps' own work (their rates
    and the compiled call).
    """
    from .sgd_loops import local_steps

    X, y, weight_rows = part[:3]
    n_steps = bounds.shape[0] - 1
    factors = scale / np.diff(bounds)
    code, parameter, l2 = constants
    tick = time.perf_counter()
    rates = np.empty(n_steps)
    for k in range(n_steps):
        rates[k], rule_state = config.rule.update(None, rule_state, first_step + k)
    moved, loss, weight, penalty, _ = local_steps(
        X, y, np.empty(0) if weight_rows is None else weight_rows, rows, bounds, factors, rates,
        code, parameter, config.fit_intercept, l2, 0.0, False, local, np.zeros(local.shape[0]),
        -1, first_step,
    )
    return moved, loss, weight, penalty, rule_state, time.perf_counter() - tick


def _hogwild_pass(part, rows, local, config, scale, step, threads, seed):
    """One Hogwild pass over ``rows`` from ``local`` (see the module docstring)."""
    from .hogwild import hogwild_epochs

    n = config.n_features
    X_rows, y_rows, w_b = take_rows_to_host(part, rows)
    w_b = np.ones(rows.shape[0]) if w_b is None else w_b
    rate, _ = config.rule.update(None, config.rule.init(local), step)
    alpha = config.penalty.ridge_strength or 0.0
    eta = linear_predictor(X_rows, local, config.fit_intercept)
    loss, _ = config.family.loss_and_dloss(y_rows, eta, w_b)
    coef, intercept, _ = hogwild_epochs(
        X_rows, y_rows, w_b * scale, local[:n], local[n] if config.fit_intercept else 0.0,
        loss=hogwild_loss(config.family), alpha=alpha, eta0=float(rate), schedule="constant",
        epochs=1, threads=threads, seed=seed, fit_intercept=config.fit_intercept,
    )
    change = np.append(coef, intercept) if config.fit_intercept else coef
    batch_weight = float(w_b.sum())
    penalty = batch_weight * config.penalty.value(local[:n])
    return change - local, loss, batch_weight, penalty


def parameter_server_task(part, holder, config, generation):
    """Run one partition's share of a generation of parameter-server SGD.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    holder : ParameterHolder or ActorHolder
        The holder of the run (its :meth:`start_run` called by the driver).
    config : ParameterServerConfig
    generation : int
        Names the random stream with the task's slot.

    Returns
    -------
    TaskReport
    """
    n_rows, part_weight = partition_size(part)
    if n_rows == 0 or part_weight <= 0:
        return TaskReport()
    started = time.monotonic()
    slot = holder.join()
    report = TaskReport()
    try:
        _work(part, holder, config, generation, slot, n_rows, part_weight, started, report)
    finally:
        holder.leave(slot)
    return report


def _work(part, holder, config, generation, slot, n_rows, part_weight, started, report):
    rng = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(generation, slot)))
    batches = _Batches(n_rows, rng)
    scale = n_rows / part_weight  # a mini-batch's mean gradient estimates the partition's
    size = min(config.batch_size, n_rows)
    sparse_rows = sp.issparse(part[0]) and config.penalty.ridge_strength == 0
    steps_per_pass = -(-n_rows // size)
    constants = _loop_constants(config) if compiled_steps_apply(part, config) else None
    version, params, running, stop = holder.pull_for(slot)
    local = params.copy()
    pending = np.zeros_like(local)
    touched = set()
    rule_state = config.rule.init(local)
    push_every = config.push_every or 1
    since_pull = since_push = 0
    progress = [0, 0.0, 0.0, 0.0]  # rows, loss, weight, penalty since the last push
    computing = 0.0  # seconds of steps since the last push
    fixed = 0.0  # seconds of the compiled blocks' Python since the last push
    while not stop:
        tick = time.perf_counter()
        step = version * push_every // max(running, 1) + since_pull
        if config.hogwild:
            rows = batches.take(size * push_every)
            change, loss, weight, penalty = _hogwild_pass(
                part, rows, local, config, scale, step, config.hogwild,
                int(rng.integers(2**31)))
            local += change
            pending += change
            since_push += push_every
            since_pull += 1
        elif constants is not None:  # every step until the next call to the holder
            steps = push_every - since_push
            if config.fetch_every is not None:
                steps = min(steps, config.fetch_every - since_pull)
            rows, bounds = batches.take_steps(size, max(steps, 1))
            moved, loss, weight, penalty, rule_state, looped = _compiled_steps(
                part, rows, bounds, local, config, scale, rule_state, step, constants)
            pending += moved - local
            local = moved
            since_push += bounds.shape[0] - 1
            since_pull += bounds.shape[0] - 1
        else:
            rows = batches.take(size)
            change, loss, weight, penalty, rule_state, columns = _minibatch_step(
                part, rows, local, config, scale, rule_state, step)
            local += change
            pending += change
            if columns is not None:
                touched.update(columns.tolist())
            since_push += 1
            since_pull += 1
        for i, value in enumerate((rows.shape[0], loss, weight, penalty)):
            progress[i] += value
        elapsed = time.perf_counter() - tick
        if constants is None:
            computing += elapsed
        else:  # the Python around a compiled call is paid once a block: a fixed cost
            computing += looped
            fixed += elapsed - looped
        pushed = since_push >= push_every
        if pushed:
            if config.pace is not None:
                config.pace()
            delta = pending / max(running, 1)
            if sparse_rows:
                indices = np.array(sorted(touched | ({config.n_features} if config.fit_intercept
                                                     else set())), dtype=np.int64)
                delta = sparse_or_dense(local.shape[0], indices, delta[indices])
            tick = time.perf_counter()
            _, stop = holder.push_from(slot, delta, version, *progress)
            report.push_every = push_every
            if config.push_every is None:
                push_every = min(amortising_steps(time.perf_counter() - tick + fixed,
                                                  computing / since_push, config.amortise),
                                 steps_per_pass)
            report.rows += progress[0]
            report.pushes += 1
            since_push, computing, fixed = 0, 0.0, 0.0
            progress = [0, 0.0, 0.0, 0.0]
            pending[:] = 0.0
            touched.clear()
            if time.monotonic() - started > config.seconds or (
                    config.passes is not None and report.rows >= config.passes * n_rows):
                break
            if config.bounded and not stop:
                waited, stop = holder.wait_turn(slot)
                if waited:
                    report.seconds_waiting += waited
                    holder.report(seconds_waiting=waited)
        if not stop and (pushed and (config.bounded or config.fetch_every is None)
                         or config.fetch_every is not None and since_pull >= config.fetch_every):
            version, params, running, stop = holder.pull_for(slot)
            local = params + pending
            since_pull = 0
    if progress[0]:  # rows read after the last push: their progress counts, not their change
        holder.report(*progress)
        report.rows += progress[0]
