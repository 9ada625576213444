"""Sandblaster-style L-BFGS: the vectors on column shards, the driver with scalars only.

The ``lbfgs`` solver with ``solver_options={"sharded": True}`` runs here.  The
parameters, the gradient, the search direction and the L-BFGS correction pairs live in
column shards on the workers (:mod:`daskglm.engine.shards`), as in DistBelief's
Sandblaster L-BFGS (Dean et al., "Large scale distributed deep networks", NIPS 2012); the
driver is a coordinator that sends small commands and receives dot products and scalars.
Per iteration and trial step:

1. one ``sparse_gradient`` round over the partitions: each worker pulls ``x + alpha d``
   once, on the union of the columns its partitions' rows touch (computed once, in a
   ``shard_columns`` round at the start); each partition computes its loss and gradient
   sums on its columns; the worker sums those (in partition order) and pushes the sum
   once to the shards owning those columns
   (:class:`~daskglm.compute.worker_columns.WorkerColumns`); the loss comes back through
   the reduction tree;
2. one ``shard_op`` ``finish``: each shard sums the workers' pushes in a fixed order,
   adds the penalty's gradient and returns its part of the penalty, of ``g . d``, of
   ``max |g|`` and of the intercept's gradient ``g_b`` (the shard holding it);

and, per iteration, ``accept`` (move, store the pair, the new dot products with the
basis) and ``direction`` (``d`` as the combination of the basis that the two-loop
recursion computed on the driver from the Gram matrix alone:
:func:`~daskglm.optim.vector_free_lbfgs.gram_two_loop`).  The iteration itself is
:func:`~daskglm.optim.vector_free_lbfgs.run_lbfgs`, the same code that runs on numpy
vectors in :func:`~daskglm.optim.vector_free_lbfgs.plain_lbfgs`.

With ``standardize`` (the default) the iteration runs in the coordinates of the
whole-vector L-BFGS: every column centred and scaled to unit size
(:func:`iteration_units`, from the validation round's column moments).  Coefficient
``j`` is ``u_j theta_j`` and the intercept ``theta_b - m . theta`` (up to a constant),
``m_j = mu_j u_j`` with ``mu_j`` the column's weighted mean, so the gradient in ``theta``
is ``u_j (g_j - mu_j g_b)`` and ``g_b``
(:class:`~daskglm.compute.column_shards.ColumnShard`).  That costs no round of its own:
the driver sums ``g_b`` from ``finish`` and sends it with ``accept``; ``accept`` also
returns the shards' parts of ``m``'s dot products with the new basis vectors, from which
the driver has ``m . d`` for the direction's coefficients and sends it with
``direction``; the shard holding the intercept moves it by ``m . alpha d`` at each step.
Without an intercept the columns are only scaled (there is no intercept to absorb their
means); on an engine without column moments, or without ``standardize``, the iteration
runs in the parameters themselves.  Centred, the hashed click-through rows of
``benchmarks/click_through.py`` (1e5 rows x 2^20 columns) take 18 iterations, where
scaled only they did not converge in 100 (the whole-vector fit: 22): each categorical
field's one-hot columns sum to the intercept's column.

The whole parameter vector moves twice: onto the shards at the start and back at the end
(and once more each way when the shards are rebuilt after a worker was lost: see
:func:`solve_sharded`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..accounting.kinds import Kind
from ..compute.worker_columns import register_columns, sharded_loss_grad
from ..engine.column_blocks import ColumnBlocks
from ..engine.shards import ShardLostError, make_shards
from ..optim.vector_free_lbfgs import gram_two_loop, run_lbfgs
from .base import History, Objective, SolverResult

__all__ = ["ShardedSpace", "ColumnBlockSpace", "solve_sharded", "iteration_units", "MAX_REBUILDS"]

#: Times a sharded fit rebuilds its shards after losing a worker before it gives up.
MAX_REBUILDS = 3

#: Seconds a rebuild waits for the scheduler to see the worker whose loss it meets (a
#: moved partition can be the first error), so that its warning names that worker.
LOSS_NOTICE_SECONDS = 10.0


class ShardedSpace:
    """The space of :func:`~daskglm.optim.vector_free_lbfgs.run_lbfgs` on column shards.

    The driver keeps the Gram matrix of the basis ``[s_0..s_{m-1}, y_0..y_{m-1}, g]``
    (``(2 m + 1)^2`` numbers) and which slots hold pairs; everything of length ``d`` stays
    on the shards.
    """

    def __init__(self, problem, engine, shards, memory):
        self.problem = problem
        self.engine = engine
        self.shards = shards
        self.memory = int(memory)
        self.gram = np.zeros((2 * self.memory + 1, 2 * self.memory + 1))
        # dot products of the centring m with the basis (centred shards: see ColumnShard)
        self.centring_dots = np.zeros(2 * self.memory + 1)
        self.intercept_grad = 0.0  # at the last trial point
        self.order = []  # slots holding pairs, oldest first
        self.round_id = 0

    def start(self, params0):
        """Put the parameters on the shards; register each partition's touched columns
        with its worker's ``WorkerColumns`` (one ``shard_columns`` round) and their union
        with the shards (``shard_register``)."""
        engine = self.engine
        self.shards.load(params0)
        registered = engine.reduce_each(register_columns, range(engine.n_partitions),
                                        self.shards.clients, self.problem.fit_intercept,
                                        kind=Kind.SHARD_COLUMNS)
        if int(registered[0]) != engine.n_partitions:  # pragma: no cover - a broken engine
            raise RuntimeError(f"{int(registered[0])} of {engine.n_partitions} partitions "
                               f"registered their columns.")
        self.shards.seal()

    def close(self):
        """Nothing to release here: the partitions' columns go with the shards."""

    def _rows(self):
        """Basis rows of the slots holding pairs: ``s`` rows, then ``y`` rows.  The slots
        are always ``0..k-1`` (filled from 0 up, reused in turn once all are full)."""
        k = len(self.order)
        return list(range(k)) + [self.memory + i for i in range(k)]

    def evaluate(self, alpha):
        p, engine = self.problem, self.engine
        self.round_id += 1
        traffic = engine.reduce_each(
            sharded_loss_grad, range(engine.n_partitions), self.shards.clients, float(alpha),
            self.round_id, p.family, p.fit_intercept, kind=Kind.SPARSE_GRADIENT,
        )
        self.shards.record_traffic(traffic)
        return self._finish(alpha, float(traffic[1]))

    def _finish(self, alpha, loss_sum):
        """The ``finish`` command after an evaluation round whose loss sum is
        ``loss_sum``: ``(value, slope, largest)``."""
        weight = self.engine.sum_weight
        parts = np.asarray(self.shards.command("finish", self.round_id, float(alpha), weight))
        self.intercept_grad = float(parts[:, 3].sum())
        value = loss_sum / weight + float(parts[:, 0].sum())
        return value, float(parts[:, 1].sum()), float(parts[:, 2].max())

    def accept(self, alpha, keep_pair):
        m, last = self.memory, 2 * self.memory
        slot = None
        if keep_pair:  # the next free slot, or the oldest pair's once all are full
            slot = self.order.pop(0) if len(self.order) == m else len(self.order)
            self.order.append(slot)
        rows = self._rows()
        answers = self.shards.command("accept", float(alpha), slot, len(self.order),
                                      self.intercept_grad)
        dots = sum(a[0] for a in answers)
        g_dot_g, m_dot_g, m_dot_s, m_dot_y = (float(v) for v in sum(a[1] for a in answers))
        G = self.gram
        G[last, last] = g_dot_g
        G[last, rows] = G[rows, last] = dots[:, 0]
        self.centring_dots[last] = m_dot_g
        if slot is not None:
            G[slot, rows] = G[rows, slot] = dots[:, 1]
            G[m + slot, rows] = G[rows, m + slot] = dots[:, 2]
            self.centring_dots[slot], self.centring_dots[m + slot] = m_dot_s, m_dot_y

    def set_direction(self):
        m, last = self.memory, 2 * self.memory
        coefficients = gram_two_loop(self.gram, self.order, m)
        rows = self._rows()
        used = rows + [last]
        c = coefficients[used]
        self.shards.command("direction", len(self.order), coefficients[rows],
                            float(coefficients[last]), float(self.centring_dots[used] @ c))
        G = self.gram[np.ix_(used, used)]
        return float(G[-1] @ c), float(c @ G @ c)

    def forget(self):
        self.order = []


class ColumnBlockSpace(ShardedSpace):
    """:class:`ShardedSpace` whose evaluations run on column blocks of ``X`` (dense or CSR)
    (:class:`~daskglm.engine.column_blocks.ColumnBlocks`): the feature blocks are the
    shards' ranges, and each tile lives on its shard's worker."""

    def start(self, params0):
        self.shards.load(params0)
        self.blocks = ColumnBlocks(self.engine, self.shards, self.problem.n_features)

    def close(self):
        blocks = getattr(self, "blocks", None)
        if blocks is not None:
            blocks.close()

    def evaluate(self, alpha):
        self.round_id += 1
        stats = self.blocks.evaluate(float(alpha), self.round_id, self.problem.family)
        return self._finish(alpha, float(stats[1]))


def solve_sharded(solver, problem, engine, params0):
    """Run :class:`~daskglm.solvers.lbfgs.LBFGS` ``solver`` on column shards (and on
    column blocks of ``X`` with its ``column_blocks`` option).

    On a cluster, a fit survives losing a worker (up to :data:`MAX_REBUILDS` times): the
    shards and the workers' columns (or the column blocks' tiles) are made again on the
    workers left, from the iterate the surviving shards hold and, for the lost shard's
    range, the driver's copy of the starting point; the L-BFGS memory starts afresh and
    the iterations already run count against ``max_iter``.
    """
    memory = int(solver.opts["memory"])
    history = History(engine)
    space_type = ColumnBlockSpace if solver.opts["column_blocks"] else ShardedSpace
    start = np.asarray(params0, dtype=float)
    params, rebuilds = start, []
    scales = Objective(problem, engine).criterion_scales((problem.n_params,))
    units, means = _units(problem, engine, start) if solver.opts["standardize"] \
        else (None, None)
    while True:
        shards = make_shards(engine, problem.n_params, problem.n_features, problem.penalty,
                             memory, n_shards=solver.opts["shards"], criterion_scales=scales,
                             units=units, means=means)
        space = space_type(problem, engine, shards, memory)
        done = len(history.entries)
        try:
            space.start(params)
            outcome = run_lbfgs(
                space, tol=solver.tol, max_iter=solver.max_iter - done,
                max_evaluations=int(solver.opts["max_evaluations"]),
                callback=lambda value, largest, step: history.record(value, largest, step),
            )
            params = shards.values()
            break
        except ShardLostError as exc:
            if len(rebuilds) == MAX_REBUILDS or getattr(engine, "client", None) is None:
                raise
            # the error may come from a moved partition, not from the lost shard itself,
            # before the scheduler has seen the worker go
            lost, deadline = shards.lost(), time.monotonic() + LOSS_NOTICE_SECONDS
            while not lost and time.monotonic() < deadline:
                time.sleep(0.1)
                lost = shards.lost()
            rebuilds.append(str(exc) if not lost or lost in str(exc) else f"{lost}. {exc}")
            params = shards.salvage(start)
        finally:
            space.close()
            shards.close()
    message = outcome.message
    if rebuilds:
        message += (f" (the shards were rebuilt {len(rebuilds)} time(s) after losing a "
                    f"worker; the L-BFGS memory restarted each time)")
        # every rebuild's reason: after the one for the lost worker, a partition it held
        # may move again (recomputed elsewhere) and cause another
        warnings.warn(f"A sharded fit lost a worker and went on with its shards rebuilt on "
                      f"the workers left: {' Then: '.join(rebuilds)}", RuntimeWarning,
                      stacklevel=2)
    return SolverResult(params, done + outcome.n_iter, outcome.converged, history.entries,
                        message)


def _units(problem, engine, params0):
    """``(units, means)``: :func:`iteration_units` and the columns' weighted means (None
    without an intercept) from the validation round's column moments; ``(None, None)`` on
    an engine that holds none."""
    moments = getattr(engine, "column_moments", None)
    if moments is None:
        return None, None
    weight = float(moments.weight)
    squares = np.asarray(moments.squares, dtype=float).reshape(-1)
    sums = np.asarray(moments.sums, dtype=float).reshape(-1)
    if squares.shape[0] != problem.n_features or sums.shape != squares.shape:
        return None, None
    means = sums / weight if problem.fit_intercept else None
    return iteration_units(problem, squares / weight, params0, means), means


def iteration_units(problem, mean_squares, params0, means=None):
    """Each parameter's unit of iteration on the shards: ``1 / sqrt(v_j + alpha_j /
    curvature)`` for coefficient ``j`` (``v_j`` its column's weighted variance with
    ``means``, for an iteration centred on them, else its mean square; the penalty's
    curvature over the loss's at ``params0``), 1 for the intercept and for a column
    without spread (and no penalty): the iteration then sees every column centred and at
    unit size, as the whole-vector L-BFGS does in its standardised coordinates."""
    d = problem.n_features
    spread = np.asarray(mean_squares, dtype=float)
    if means is not None:
        centred = spread - np.asarray(means, dtype=float) ** 2
        # a constant column's variance is round-off of its mean square
        spread = np.where(centred > 1e-12 * spread, centred, 0.0)
    widened = spread + problem.penalty.hess_diag(np.zeros(d)) \
        / max(float(problem.curvature_at(params0)), 1e-12)
    units = np.ones(problem.n_params)
    positive = widened > 0
    units[:d][positive] = 1.0 / np.sqrt(widened[positive])
    return units
