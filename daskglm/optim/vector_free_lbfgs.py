"""L-BFGS whose coordinator touches only scalars, and its plain in-memory twin.

:func:`run_lbfgs` is the iteration: pick a direction, search along it by backtracking
(:func:`backtracking`), move, keep the correction pair, stop on the largest gradient
entry.  It never sees a vector: it talks to a *space* that holds the iterate, the
gradient, the direction and the pairs, and answers with scalars:

``evaluate(alpha) -> (value, slope, largest)``
    The objective at ``x + alpha d``, its slope ``g(x + alpha d) . d`` and its largest
    gradient entry (the trial point is remembered).
``accept(alpha, keep_pair)``
    Move to the last trial point; with ``keep_pair``, store ``s = alpha d`` and
    ``y = g_new - g`` (dropping the oldest pair beyond ``memory``).
``set_direction() -> (slope, norm_squared)``
    ``d = -H g`` from the stored pairs (``-g`` without any) and ``g . d``, ``d . d``.
``forget()``
    Drop every pair (after a direction that does not descend).

:class:`DenseSpace` holds numpy vectors and computes ``H g`` by the classic two-loop
recursion (Nocedal and Wright, algorithm 7.4); :func:`plain_lbfgs` runs it on a function
``x -> (value, grad)``: the in-memory reference.  The sharded space
(:mod:`daskglm.solvers.sharded_lbfgs`) keeps the vectors on column shards and computes
the same ``H g`` from dot products alone by :func:`gram_two_loop`, the "vector-free"
form of the recursion (Chen, Wang, Chen and Ni, "Large-scale L-BFGS using MapReduce",
NIPS 2014): every vector the recursion makes is a linear combination of the basis
``s_1..s_m, y_1..y_m, g``, so its dot products follow from the basis's Gram matrix.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LineSearchResult", "LBFGSOutcome", "backtracking", "run_lbfgs", "gram_two_loop",
    "DenseSpace", "plain_lbfgs",
]

#: Sufficient-decrease constant of the line search.
ARMIJO = 1e-4
#: Trials of the line search before it gives up.
MAX_TRIALS = 40
#: Relative change of the objective below which the decrease is taken from the gradients.
RESOLUTION = 64 * np.finfo(float).eps


@dataclass
class LineSearchResult:
    """What :func:`backtracking` found: the step and the objective there."""

    ok: bool
    alpha: float
    value: float
    slope: float
    largest: float
    evaluations: int


def backtracking(evaluate, value0, slope0, alpha):
    """Backtrack from ``alpha`` until the decrease is sufficient (Armijo).

    The decrease is ``f(alpha) - f(0)``, or, once that is below the round-off of the
    objective, the trapezoid estimate ``alpha (slope(alpha) + slope(0)) / 2`` from the
    gradients (exact for quadratics).  A rejected step is replaced by the minimiser of
    the quadratic through ``f(0)``, ``slope(0)`` and ``f(alpha)``, kept within
    ``[alpha / 10, alpha / 2]``.
    """
    for trial in range(1, MAX_TRIALS + 1):
        value, slope, largest = evaluate(alpha)
        change = value - value0
        if abs(change) <= RESOLUTION * abs(value0):
            change = 0.5 * alpha * (slope + slope0)
        if np.isfinite(value) and change <= ARMIJO * alpha * slope0:
            return LineSearchResult(True, alpha, value, slope, largest, trial)
        curvature = change - slope0 * alpha
        shrunk = -slope0 * alpha * alpha / (2 * curvature) if curvature > 0 else 0.5 * alpha
        alpha = float(np.clip(shrunk, 0.1 * alpha, 0.5 * alpha)) if np.isfinite(shrunk) \
            else 0.1 * alpha
    return LineSearchResult(False, alpha, value0, slope0, np.nan, MAX_TRIALS)


@dataclass
class LBFGSOutcome:
    """What :func:`run_lbfgs` returns."""

    converged: bool
    n_iter: int
    evaluations: int
    value: float
    largest: float
    message: str


def run_lbfgs(space, *, tol, max_iter, max_evaluations, callback=None):
    """Minimise over ``space`` (see the module docstring) until the largest gradient entry
    is at most ``tol``.

    ``callback(value, largest, step_norm)`` is called after every iteration.  The first
    trial step along ``-g`` has length ``min(1, 1 / ||g||)``, later ones are 1.
    """
    value, _, largest = space.evaluate(0.0)
    space.accept(0.0, False)
    evaluations = 1
    if largest <= tol:
        return LBFGSOutcome(True, 0, evaluations, value, largest,
                            f"converged: largest gradient entry {largest:.3g} <= tol")
    has_pairs = False
    for iteration in range(1, max_iter + 1):
        slope0, norm_squared = space.set_direction()
        if not slope0 < 0 and has_pairs:
            space.forget()
            has_pairs = False
            slope0, norm_squared = space.set_direction()
        if not slope0 < 0:
            return LBFGSOutcome(False, iteration - 1, evaluations, value, largest,
                                "stalled: no descent direction (the gradient is at round-off)")
        alpha = 1.0 if has_pairs else min(1.0, 1.0 / np.sqrt(norm_squared))
        found = backtracking(space.evaluate, value, slope0, alpha)
        evaluations += found.evaluations
        if not found.ok:
            return LBFGSOutcome(False, iteration - 1, evaluations, value, largest,
                                f"stalled: the line search found no decrease in {MAX_TRIALS} "
                                f"trials at largest gradient entry {largest:.3g} > tol {tol:g}")
        curvature = found.alpha * (found.slope - slope0)  # s . y
        keep = curvature > np.finfo(float).eps * found.alpha * abs(slope0)
        space.accept(found.alpha, keep)
        has_pairs = has_pairs or keep
        value, largest = found.value, found.largest
        if callback is not None:
            callback(value, largest, found.alpha * np.sqrt(norm_squared))
        if largest <= tol:
            return LBFGSOutcome(True, iteration, evaluations, value, largest,
                                f"converged: largest gradient entry {largest:.3g} <= tol")
        if evaluations >= max_evaluations:
            return LBFGSOutcome(False, iteration, evaluations, value, largest,
                                f"stopped after {evaluations} evaluations at largest gradient "
                                f"entry {largest:.3g} > tol {tol:g}")
    return LBFGSOutcome(False, max_iter, evaluations, value, largest,
                        f"max_iter={max_iter} reached at largest gradient entry "
                        f"{largest:.3g} > tol {tol:g}")


def gram_two_loop(gram, order, memory):
    """Coefficients ``c`` of ``d = -H g`` over the basis ``[s_0..s_{m-1}, y_0..y_{m-1}, g]``.

    Parameters
    ----------
    gram : ndarray, shape (2 m + 1, 2 m + 1)
        Dot products of the basis vectors (rows of unused slots are never read).
    order : sequence of int
        The slots holding pairs, oldest first.
    memory : int
        ``m``.

    Returns
    -------
    ndarray, shape (2 m + 1,)
    """
    m = int(memory)
    q = np.zeros(2 * m + 1)
    q[2 * m] = 1.0
    if not len(order):
        return -q
    rho = {i: 1.0 / gram[i, m + i] for i in order}
    alphas = {}
    for i in reversed(order):
        alphas[i] = rho[i] * (gram[i] @ q)
        q[m + i] -= alphas[i]
    newest = order[-1]
    r = q * (gram[newest, m + newest] / gram[m + newest, m + newest])
    for i in order:
        beta = rho[i] * (gram[m + i] @ r)
        r[i] += alphas[i] - beta
    return -r


class DenseSpace:
    """The space of :func:`run_lbfgs` on numpy vectors, for ``fun(x) -> (value, grad)``.

    It iterates as the shards do (:class:`~daskglm.compute.column_shards.ColumnShard`):
    in ``theta = params / units``, and, with the coefficients' column ``means`` (the
    intercept last), on centred columns: coefficient ``j`` is ``units_j theta_j`` and the
    intercept ``theta_b - m . (theta - theta_0)`` with ``m = means * units``.
    """

    def __init__(self, fun, x0, memory, criterion_scales=None, units=None, means=None):
        self.fun = fun
        self.criterion_scales = 1.0 if criterion_scales is None else criterion_scales
        # the iteration runs in x = params / units (the shards' units of iteration)
        self.units = 1.0 if units is None else np.asarray(units, dtype=np.float64)
        self.x = np.array(x0, dtype=np.float64) / self.units
        self.centring = None
        if means is not None:
            means = np.asarray(means, dtype=np.float64)
            self.centring = means * (self.units * np.ones_like(self.x))[: means.shape[0]]
        self.shift = self.shift_step = 0.0  # m . (x - x_0), m . d
        self.d = np.zeros_like(self.x)
        self.g = None
        self.pairs = deque(maxlen=int(memory))

    def params(self, alpha=0.0):
        """The parameters at ``x + alpha d``."""
        params = self.units * (self.x + alpha * self.d)
        if self.centring is not None:
            params[-1] -= self.shift + alpha * self.shift_step
        return params

    def evaluate(self, alpha):
        self.trial_alpha = alpha
        value, grad = self.fun(self.params(alpha))
        grad = np.asarray(grad, dtype=np.float64)
        largest = np.max(np.abs(grad) * self.criterion_scales)
        self.trial_grad = self.units * grad
        if self.centring is not None:
            self.trial_grad[: self.centring.shape[0]] -= self.centring * grad[-1]
        return float(value), float(self.trial_grad @ self.d), float(largest)

    def accept(self, alpha, keep_pair):
        step = alpha * self.d
        self.x = self.x + step
        self.shift += alpha * self.shift_step
        if keep_pair:
            self.pairs.append((step, self.trial_grad - self.g))
        self.g = self.trial_grad

    def set_direction(self):
        q = self.g.copy()
        alphas = []
        for s, y in reversed(self.pairs):
            a = (s @ q) / (s @ y)
            q -= a * y
            alphas.append(a)
        if self.pairs:
            s, y = self.pairs[-1]
            q *= (s @ y) / (y @ y)
        for (s, y), a in zip(self.pairs, reversed(alphas)):
            q += s * (a - (y @ q) / (s @ y))
        self.d = -q
        if self.centring is not None:
            self.shift_step = float(self.centring @ self.d[: self.centring.shape[0]])
        return float(self.g @ self.d), float(self.d @ self.d)

    def forget(self):
        self.pairs.clear()


def plain_lbfgs(fun, x0, *, tol, max_iter, memory=10, max_evaluations=15000,
                criterion_scales=None, units=None, means=None):
    """The reference: :func:`run_lbfgs` on a :class:`DenseSpace`, its test of ``tol`` on
    the largest gradient entry times ``criterion_scales`` (each 1 when None), iterating
    in ``params / units`` (the parameters themselves when None), on columns centred on
    ``means`` (the coefficients' columns' means, the intercept last) when given.

    Returns
    -------
    x : ndarray
    outcome : LBFGSOutcome
    """
    space = DenseSpace(fun, x0, memory, criterion_scales, units, means)
    outcome = run_lbfgs(space, tol=tol, max_iter=max_iter, max_evaluations=max_evaluations)
    return space.params(), outcome
