"""Which method ``solver="auto"`` runs: the fewest rounds and least time, predicted.

:func:`predict_methods` prices every candidate method on a problem of ``n`` rows and
``d`` parameters before any data are read: the rounds it needs (the validation round
included, which the normal equations and Newton's and L-BFGS's first evaluations share,
see :class:`~daskglm.solvers.base.FirstEvaluation`) times the modelled seconds of one of
its rounds.  :func:`choose_method` takes the cheapest among the methods that handle the
problem.  The prediction uses only ``(n, d, family, penalty, tol, workers)``, the
network's figures, the columns' moments once the validation round read them and the
constants below, never the fit's timings, so the choice is the same on every run with
the same figures.

One round of a method costs

``t = ROUND_SECONDS + (1 + c) 8 n p / (W READ_BYTES_PER_SECOND) + c n p^2 / (W FLOPS)
+ messages + s p^3 / DRIVER_FLOPS``

where ``messages`` is, in this process, ``b (1 + tree depth) / 1e9`` (the bandwidth of
:data:`~daskglm.accounting.links.IN_PROCESS`), and on a
cluster, with the latency ``L`` and bandwidth ``B`` of its network (a
:class:`~daskglm.accounting.links.Link`, measured once per client or fixed by the
configuration) and ``k = min(processes, 8)`` processes the driver calls,
``2 L levels + (8 p k + b g) / B`` (the driver's network card carries the parameters out
and the ``g`` partials it gathers back: one a process, ``g = k``, until the validation
round has counted them, more where a process's partitions are not neighbours), or
``2 L levels + 16 p / B`` on column shards (each worker's card pulls and pushes its
columns)

with ``p`` the parameters, ``W`` the worker threads, ``c = 1`` for the rounds that sum
``X^T H X`` (Newton's Hessian, the Gram matrix: the rows scaled by ``sqrt(h)`` are one
more pass, the rank-k update ``n p^2`` multiply-adds) and 0 otherwise, ``b`` the bytes one task
returns (``8 p`` for a gradient, ``8 p^2`` for a Hessian or Gram matrix) and ``s = 1/3``
for the methods that factor a ``p x p`` matrix on the driver each round.  A
multinomial model of ``K`` classes adds its per-class work (:func:`_softmax_seconds`):
``K`` predictors, exponentials and residuals a row, and for its Hessian the class pairs'
products, ``d^2 K (K + 1) / 4`` multiply-adds a row, in place of ``n p^2``.  Rounds:

* ``normal``: 1 (the Gram matrix in the validation round); always taken where it
  applies up to :data:`NORMAL_MAX_PARAMS` parameters, since it is exact.
* ``newton``: :data:`NEWTON_ITERATIONS` + 1 with an exact Hessian (the family's
  ``exact_hessian``: quadratic convergence; the last of them a gradient round, the step
  predicted to meet ``tol`` evaluated without its Hessian), :data:`FISHER_ITERATIONS` + 1
  Hessian rounds with another (Fisher scoring converges linearly).
* ``lbfgs``: :data:`LBFGS_ROUNDS_PER_DECADE` per decade of ``tol / spread`` below 1,
  ``spread`` the :func:`criterion_spread` of the columns once the validation round
  measured them (1 before): L-BFGS iterates in standardised coordinates, where a column
  in the thousands must have its gradient driven that much below ``tol``.  From
  :data:`SHARDED_FEATURES` features it runs on column shards (:func:`sharded_lbfgs_seconds`):
  each iteration's evaluation round moves ``16 p`` bytes a worker instead of the driver's
  ``16 p`` per process, and adds the shards' commands and their work on the L-BFGS pairs,
  and the fit adds its setup rounds; on the whole vector the validation round's row sample
  (``p (p + 1) / 2`` floats a process, up to 128 features) crosses the network besides.
* ``proximal``: :data:`PROXIMAL_ROUNDS_PER_DECADE` per decade of ``tol / spread``.  With an L1 or elastic-net
  penalty it is weighed against proximal Newton (``newton``'s rounds) for the
  non-quadratic losses; for the squared loss it is the candidate (it stops where
  scikit-learn's lasso does, on the duality gap).

Averaging with a Newton correction is not a candidate: its result depends on the
partitioning, and it reaches the optimum only when the local solves agree, which the
choice cannot know before reading the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..compute.row_sample import sample_floats
from ..model.problem import Feature
from ..optim.restarted_lbfgs import MEMORY
from .bytemodel import tree_depth
from .costmodel import DEFAULT_SPLIT_EVERY, direct_levels
from .links import IN_PROCESS

__all__ = ["MethodCost", "predict_methods", "choose_method", "gradient_round_seconds",
           "criterion_spread", "hessian_round_ratio", "newton_applies", "SHARDED_FEATURES",
           "sharded_lbfgs_seconds"]

#: Seconds of one Dask round besides its compute and bytes (scheduling, messages).
ROUND_SECONDS = 5e-3
#: Seconds of a fit besides its rounds (the estimator's checks, making the engine, the
#: choice): 0.024 s measured in process, 0.04 to 0.055 s on two worker processes.
FIT_SECONDS = 0.04
#: Bytes of ``X`` one worker thread streams through per second in a one-pass kernel.
READ_BYTES_PER_SECOND = 2e9
#: Multiply-adds per second of one worker thread in ``X^T H X`` (BLAS rank-k update);
#: with :data:`READ_BYTES_PER_SECOND`, a Hessian round costs 2.7 gradient rounds at 50
#: columns and 4.8 at 200; measured on two one-thread workers at 3e6 x 50, 2.6
#: (``python -m benchmarks run --suite mid``, the fused Hessian kernel).
FLOPS = 1.75e10
#: Seconds per row and class of a multinomial evaluation beyond reading ``X`` (the
#: predictors, exponentials and residuals), and per row, class and column: one thread of
#: the compiled loop took 25-34 ns a row and class at 12 columns, 36-45 at 50 and 83-108 at
#: 200 (the development machine, 3 to 20 classes).
SOFTMAX_ROW_CLASS_SECONDS = 2e-8
SOFTMAX_COLUMN_SECONDS = 3.5e-10
#: Multiply-adds per second of one thread in the multinomial Hessian's class-pair products
#: (``d^2 K (K + 1) / 4`` a row, ``K`` classes): 4.9e9 measured at 12 columns and 10
#: classes, 9e9 to 1.1e10 at 20 to 200 columns.
SOFTMAX_HESSIAN_FLOPS = 1e10
#: Multiply-adds per second of the driver's factorisation of a ``p x p`` matrix.
DRIVER_FLOPS = 2e10
#: Newton iterations to ``tol`` with an exact Hessian (the family's ``exact_hessian``).
NEWTON_ITERATIONS = 6
#: Fisher-scoring iterations to ``tol`` with any other link (linear convergence).
FISHER_ITERATIONS = 25
#: L-BFGS rounds per decade of ``tol`` below 1 (about 12 to ``1e-4``, 24 to ``1e-8``).
LBFGS_ROUNDS_PER_DECADE = 3
#: Proximal-gradient rounds per decade of ``tol`` below 1: the median of 24 L1 fits of
#: logistic and Poisson GLMs (1e5 rows, 20 to 400 features, alpha 1e-3 and 1e-2, tol 1e-4
#: and 1e-8) was 9, from 3.6 (Poisson) to 22 (logistic, 400 features); proximal Newton
#: took 4 to 11 iterations on the same fits.
PROXIMAL_ROUNDS_PER_DECADE = 10
#: Up to this many parameters the normal equations are chosen wherever they apply: they
#: give the exact least-squares solution in one round, which no iterative method's
#: ``tol`` matches (its Gram matrix then takes at most 128 MiB per task).
NORMAL_MAX_PARAMS = 4096
#: From this many features on, L-BFGS runs on column shards (``{"sharded": True}``).
SHARDED_FEATURES = 2**18
#: Commands the coordinator of L-BFGS on column shards sends each iteration (``finish``
#: after its evaluation, ``accept``, ``direction``: :mod:`daskglm.solvers.sharded_lbfgs`),
#: each a direct call to every shard.
SHARD_COMMANDS = 3
#: Rounds of a fit on column shards besides its iterations: its validation pass (not
#: shared with a first evaluation), the parameters onto the shards, the partitions'
#: columns, their registration with the shards, the parameters back.
SHARDED_SETUP_ROUNDS = 5
#: Passes over a shard's columns (``8 p / shards`` bytes at :data:`READ_BYTES_PER_SECOND`)
#: that an evaluation on column shards costs besides reading ``X``: the shards' gather of
#: ``x + alpha d``, the partitions' gradients scattered into the worker's columns, their
#: sum and push (:mod:`daskglm.compute.worker_columns`), and ``finish``'s sum of the
#: pushes, penalty and optimality test (:mod:`daskglm.compute.column_shards`).  Measured
#: on two processes (1e5 rows of 20 non-zeros, 2^20 columns, load below 2.5): an
#: evaluation round took 61 ms against 22 ms for its bytes and reading ``X`` (19 passes'
#: worth), its ``finish`` 25 ms, 20 ms of them in the shards (10 passes).
EVALUATION_VECTOR_PASSES = 30
#: The same for ``accept`` and ``direction`` together, besides their products with the
#: pairs (:data:`BASIS_BYTES_PER_SECOND`): the step taken, the new pair stored, the
#: gradient and the pair stacked for one product, the centring's dot products, the new
#: direction.  Measured: 48 ms an iteration at 2^20 columns, 20 ms at 2^18, 11 ms of them
#: the two calls.
ITERATION_VECTOR_PASSES = 13
#: Passes over ``8 p`` bytes that a fit on column shards costs besides its rounds' other
#: costs: the validation round's column sums and squares of every task made, pickled and
#: summed on all ``p`` columns however few rows touch them (0.12-0.14 s at 2^20 columns
#: against 0.05 s for its bytes and reading ``X``: 22 passes), and on the driver the
#: optimality test's scales, the columns' units and auto's second look at the columns'
#: scales (66 ms at 2^20: 16 passes).
SHARDED_SETUP_VECTOR_PASSES = 38
#: Seconds that making the shards and the workers' column hubs (Dask actors, in two
#: steps) takes at the start of a fit on column shards: 53 ms measured on two processes.
SHARD_ACTORS_SECONDS = 0.05
#: Bytes per second a shard reads its L-BFGS pairs at, in ``accept`` and ``direction``
#: (products of ``2 m`` rows with a few vectors; 3.7 and 5.7 GB/s measured at 2^19
#: columns on the development machine).
BASIS_BYTES_PER_SECOND = 4e9


@dataclass(frozen=True)
class MethodCost:
    """A candidate method's predicted rounds (validation included) and seconds."""

    method: str
    rounds: int
    seconds: float
    options: dict = field(default_factory=dict)
    note: str = ""


def _decades(tol):
    return max(1.0, -math.log10(tol)) if tol > 0 else 16.0


def criterion_spread(means, squares):
    """How much tighter than ``tol`` an iteration in standardised coordinates must drive
    its gradient for the test of :meth:`~daskglm.solvers.base.Objective.optimality` to
    hold in the original ones: the largest ``max(1, 1 / rms_j) (sd_j + |mean_j|)`` over
    the columns, from the validation round's column ``means`` and mean ``squares`` (1 for
    standardised columns, about 1.4 at most for columns of root mean square below 1,
    the size of the largest column otherwise: 1,700 for an exposure in the thousands).
    First-order methods need that many more decades; Newton's method, whose steps do
    not depend on the columns' scales, does not."""
    means = np.asarray(means, dtype=float).reshape(-1)
    squares = np.asarray(squares, dtype=float).reshape(-1)
    if not means.size:
        return 1.0
    rms = np.sqrt(np.maximum(squares, 0.0))
    sd = np.sqrt(np.maximum(squares - means**2, 0.0))
    factor = np.where((rms > 0) & (rms < 1), 1.0 / np.where(rms > 0, rms, 1.0), 1.0)
    return float(max(1.0, np.max(factor * (sd + np.abs(means)))))


def _round_seconds(n, p, workers, *, products=False, payload=0, driver=False,
                   link=IN_PROCESS, sharded=False, data_bytes=None, gathered=None):
    """Modelled seconds of one round (the formula of the module docstring); ``X`` takes
    ``data_bytes`` where they are known (sparse rows), else ``8 n p``."""
    passes = 2 if products else 1
    stored = 8.0 * n * p if data_bytes is None else float(data_bytes)
    seconds = ROUND_SECONDS + passes * stored / (workers * READ_BYTES_PER_SECOND)
    if products:
        seconds += float(n) * p * p / (workers * FLOPS)
    seconds += _message_seconds(p, workers, payload, link, sharded, gathered)
    if driver:
        seconds += p**3 / 3.0 / DRIVER_FLOPS
    return seconds


def gradient_round_seconds(n, p, workers, link=IN_PROCESS, sharded=False, data_bytes=None):
    """Modelled seconds of one gradient round of ``n`` rows and ``p`` parameters on
    ``workers`` threads, its messages on ``link`` (``X`` of ``data_bytes``, or dense)."""
    return _round_seconds(n, p, max(1, int(workers)), payload=8 * p, link=link,
                          sharded=sharded, data_bytes=data_bytes)


def driver_calls(link):
    """The processes the driver calls in a round on ``link``: one a process, at most
    the tree's fan-in (0 in this process)."""
    return min(link.nodes, DEFAULT_SPLIT_EVERY) if link.networked else 0


def _message_seconds(p, workers, payload, link, sharded, gathered=None):
    """Seconds a round's messages take on ``link``.  In this process, a partial's bytes
    once per tree level.  On a network, a message step there and back per level of
    calls, and the bytes the busiest network card carries: the driver's, which sends the
    ``8 p`` bytes of the parameters to every process it calls and receives a ``payload``
    for each of the ``gathered`` partials (None: one a process it calls); on column
    shards each worker's, which pulls and pushes ``8 p`` bytes of columns (the driver
    sends and receives scalars)."""
    if not link.networked:
        return payload * (1 + tree_depth(workers, 8)) / link.bandwidth
    levels = direct_levels(link.nodes, DEFAULT_SPLIT_EVERY) or 1 + tree_depth(link.nodes, 8)
    calls = driver_calls(link)
    returned = calls if gathered is None else int(gathered)
    card_bytes = 16.0 * p if sharded else calls * 8.0 * p + returned * payload
    return 2 * levels * link.latency + card_bytes / link.bandwidth


def predict_methods(problem, n_samples, *, tol=1e-4, workers=1, pass_seconds=0.0,
                    link=IN_PROCESS, data_bytes=None, spread=1.0, gathered=None):
    """Predicted rounds and seconds of every candidate method for ``problem``.

    Parameters
    ----------
    problem : Problem
        Its family, penalty, intercept and number of features (a multinomial problem
        counts every class's parameters).
    n_samples : int
        Rows of the data.
    tol : float
        The fit's tolerance.
    workers : int
        Worker threads the rounds run on.
    pass_seconds : float
        Seconds a round spends reading the data from their source, for data streamed in
        every round (0 for data in memory): every round of these methods reads ``X`` once,
        so on a slow source the fewest passes win.
    link : Link
        The network the rounds' messages cross (:mod:`daskglm.accounting.links`):
        measured on the cluster, fixed by the configuration, or none in this process.
    data_bytes : int, optional
        Bytes the data take as stored, once the validation round has read them (a sparse
        ``X`` takes far fewer than ``8 n p``); before, ``8 n p``.
    spread : float
        :func:`criterion_spread` of the columns, once the validation round measured
        them (1 before): the first-order methods (``lbfgs``, ``proximal``) are priced
        for ``tol / spread``.
    gathered : int, optional
        The partial sums the driver gathers in a round of the whole vector, as the
        validation round counted them (its record's ``gathered``); before, one a
        process the driver calls.

    Returns
    -------
    list of MethodCost
        One per candidate (``normal``, ``newton``, ``lbfgs``, ``proximal``), whether or
        not it handles the problem; :func:`choose_method` filters them.
    """
    n, p, W = max(1, int(n_samples)), int(problem.n_params), max(1, int(workers))
    family = problem.family
    exact = getattr(family, "exact_hessian", True)
    classes = Feature.MULTINOMIAL in problem.features()
    if classes and data_bytes is None:
        data_bytes = 8.0 * n * problem.n_features
    gradient = (_round_seconds(n, p, W, payload=8 * p, link=link, data_bytes=data_bytes,
                               gathered=gathered)
                + pass_seconds + _softmax_seconds(problem, n, W))
    hessian = (_round_seconds(n, p, W, products=not classes, payload=8 * p * p, driver=True,
                              link=link, data_bytes=data_bytes, gathered=gathered)
               + pass_seconds + _softmax_seconds(problem, n, W, hessian=True))
    newton_iterations = NEWTON_ITERATIONS if exact else FISHER_ITERATIONS
    newton_seconds = newton_iterations * hessian + (gradient if exact else hessian)
    first_order_decades = _decades(tol / max(1.0, float(spread)))
    lbfgs_rounds = math.ceil(LBFGS_ROUNDS_PER_DECADE * first_order_decades)
    proximal_rounds = math.ceil(PROXIMAL_ROUNDS_PER_DECADE * first_order_decades)
    sharded = problem.n_features >= SHARDED_FEATURES
    if sharded:
        # an evaluation round and ``finish`` each, and the other commands an iteration
        lbfgs_rounds_run = (2 * lbfgs_rounds + (SHARD_COMMANDS - 1) * (lbfgs_rounds - 1)
                            + SHARDED_SETUP_ROUNDS)
        lbfgs_seconds = sharded_lbfgs_seconds(n, p, W, lbfgs_rounds - 1, link=link,
                                              data_bytes=data_bytes, pass_seconds=pass_seconds)
    else:
        lbfgs_rounds_run = lbfgs_rounds
        lbfgs_seconds = (lbfgs_rounds * gradient
                         + _row_sample_seconds(problem, link, gathered) + FIT_SECONDS)
    return [
        MethodCost("normal", 1, hessian + FIT_SECONDS,
                   note="the Gram matrix in the validation round"),
        MethodCost("newton", newton_iterations + 1, newton_seconds + FIT_SECONDS,
                   note="IRLS" if exact else "Fisher scoring (expected curvature)"),
        MethodCost("lbfgs", lbfgs_rounds_run, lbfgs_seconds,
                   {"sharded": True} if sharded else {},
                   note="on column shards" if sharded else ""),
        MethodCost("proximal", proximal_rounds, proximal_rounds * gradient + FIT_SECONDS),
    ]


def _row_sample_seconds(problem, link, gathered=None):
    """Seconds the validation round's row sample (which whole-vector L-BFGS reads, and
    the other methods do not take) adds on ``link``: one sample a partial the driver
    gathers (``gathered``, else one a process), through the driver's card; 0 in this
    process."""
    if not link.networked:
        return 0.0
    returned = driver_calls(link) if gathered is None else int(gathered)
    return returned * 8.0 * sample_floats(problem.n_features) / link.bandwidth


def _softmax_seconds(problem, n, workers, hessian=False):
    """Seconds a round of the multinomial model computes beyond reading ``X`` on
    ``workers`` threads (0 for a single-output problem): ``K`` predictors, exponentials
    and residuals a row, and with ``hessian`` the class pairs' products (in place of the
    ``n p^2`` of a single-output Hessian)."""
    if Feature.MULTINOMIAL not in problem.features():
        return 0.0
    K, d = int(problem.n_classes), int(problem.n_features)
    seconds = n * K * (SOFTMAX_ROW_CLASS_SECONDS + d * SOFTMAX_COLUMN_SECONDS)
    if hessian:
        seconds += n * d * d * K * (K + 1) / 4.0 / SOFTMAX_HESSIAN_FLOPS
    return seconds / workers


def sharded_lbfgs_seconds(n, p, workers, iterations, *, link=IN_PROCESS, data_bytes=None,
                          pass_seconds=0.0, memory=MEMORY, evaluations=None):
    """Modelled seconds of an L-BFGS fit of ``iterations`` on column shards, one per
    worker process of ``link`` (one in this process).

    Each of its ``evaluations`` (``iterations + 1`` by default: the starting point's, then
    one an iteration) is an evaluation round (``X`` read once; each worker pulls and
    pushes ``8 p`` bytes at most) and a ``finish`` call to every shard, with
    :data:`EVALUATION_VECTOR_PASSES` passes over a shard's columns; each iteration adds
    the other ``SHARD_COMMANDS - 1`` calls, :data:`ITERATION_VECTOR_PASSES` passes, and
    the shards' products with the ``2 u`` rows of the pairs they hold (``u`` of
    ``memory``: 1 at the second iteration, ``memory`` from then on), each read twice.
    The fit adds :data:`SHARDED_SETUP_ROUNDS` rounds (the validation one a pass over
    ``X``, the others calls carrying the parameters once each way and the workers'
    columns to the shards), :data:`SHARD_ACTORS_SECONDS` making the shards,
    :data:`SHARDED_SETUP_VECTOR_PASSES` passes over ``8 p`` bytes and
    :data:`FIT_SECONDS`.
    """
    W = max(1, int(workers))
    iterations = int(iterations)
    evaluations = iterations + 1 if evaluations is None else int(evaluations)
    shards = link.nodes if link.networked else 1
    column_bytes = 8.0 * p / shards
    command = ROUND_SECONDS + 2 * link.latency
    evaluation = (_round_seconds(n, p, W, payload=8 * p, link=link, sharded=True,
                                 data_bytes=data_bytes) + pass_seconds
                  + EVALUATION_VECTOR_PASSES * column_bytes / READ_BYTES_PER_SECOND + command)
    iteration = ((SHARD_COMMANDS - 1) * command
                 + ITERATION_VECTOR_PASSES * column_bytes / READ_BYTES_PER_SECOND)
    used = sum(min(i, int(memory)) for i in range(iterations))
    basis = 4.0 * used * column_bytes / BASIS_BYTES_PER_SECOND
    # the validation round: a pass over X, the columns' sums and squares back
    validation = _round_seconds(n, p, W, payload=16 * p, link=link,
                                data_bytes=data_bytes) + pass_seconds
    # the shards made, the parameters out and back, each worker's columns registered (8
    # bytes each), the full-length vectors of the validation and the driver
    setup = (validation + (SHARDED_SETUP_ROUNDS - 1) * command + SHARD_ACTORS_SECONDS
             + 24.0 * p / link.bandwidth
             + SHARDED_SETUP_VECTOR_PASSES * 8.0 * p / READ_BYTES_PER_SECOND)
    return evaluations * evaluation + iterations * iteration + basis + setup + FIT_SECONDS


def choose_method(problem, n_samples, able, *, tol=1e-4, workers=1, pass_seconds=0.0,
                  link=IN_PROCESS, spread=1.0, gathered=None):
    """The cheapest candidate of :func:`predict_methods` among the method names in
    ``able`` (those that handle the problem): least predicted seconds, then fewest
    rounds, then the order of the candidates.  The normal equations, exact in one round,
    are taken wherever they apply up to :data:`NORMAL_MAX_PARAMS` parameters.  Newton's
    method is taken for a non-quadratic loss only when the penalty is an L2 penalty with
    ``alpha > 0`` (a strongly convex problem, whose optimum is unique and finite); an
    unpenalised fit on separable data has no finite optimum, and Newton steps would race
    to infinity; an L1 part with ``alpha > 0`` bounds the optimum too, and Newton's
    method is then proximal Newton, weighed against proximal gradient by their
    predicted seconds.  For the squared loss with an L1 part proximal gradient is kept:
    it stops where scikit-learn's lasso does (the duality gap).
    None when no candidate handles the problem."""
    costs = [c for c in predict_methods(problem, n_samples, tol=tol, workers=workers,
                                        pass_seconds=pass_seconds, link=link,
                                        spread=spread, gathered=gathered)
             if c.method in able]
    if not newton_applies(problem):
        costs = [c for c in costs if c.method != "newton"]
    if not costs:
        return None
    normal = [c for c in costs if c.method == "normal"]
    if normal and problem.n_params <= NORMAL_MAX_PARAMS:
        return normal[0]
    return min(costs, key=lambda c: (c.seconds, c.rounds))


def hessian_round_ratio(p):
    """A Hessian round's seconds over a gradient round's, for many rows and ``p``
    parameters (the module's formula without its fixed costs): ``2 + p * READ / (8 FLOPS)``,
    2.7 at 50 parameters."""
    read = 8.0 * p / READ_BYTES_PER_SECOND
    return (2.0 * read + float(p) * p / FLOPS) / read


def newton_applies(problem):
    """Whether :func:`choose_method` would weigh Newton's method for ``problem``: a
    quadratic loss with a smooth penalty, or a penalty that keeps the optimum finite."""
    features = problem.features()
    if Feature.NON_QUADRATIC_LOSS in features and not _bounded(problem):
        return False
    return not (Feature.NONSMOOTH_PENALTY in features
                and Feature.NON_QUADRATIC_LOSS not in features)


def _bounded(problem):
    """Whether the penalty keeps every loss's optimum finite: an L2 penalty with
    ``alpha > 0`` (strongly convex), or one with an L1 part weighing more than 0."""
    return problem.penalty.bounds_optimum
