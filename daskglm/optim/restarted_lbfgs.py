"""scipy's L-BFGS-B run on to its gradient criterion instead of being stopped by round-off.

Near an optimum the decrease of the objective falls below the round-off of its value long
before the gradient reaches a tight tolerance; scipy then stops (the objective no longer
changes, or its line search fails).  :func:`minimize_to_tol` restarts it from that point on
the objective's change from there, estimated from gradients alone by the trapezoid rule
``(g(x) + g(x0)).(x - x0) / 2`` (exact for quadratics, and resolved to the round-off of
the gradients rather than of the objective), while the gradient keeps improving.  Used on
the driver (the ``lbfgs`` solver) and on the workers (local solves).  Pure numpy/scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize

__all__ = ["Minimised", "minimize_to_tol", "projected_gradient_max", "MEMORY", "MAX_RESTARTS",
           "EVALUATIONS_PER_ITERATION"]

#: The one L-BFGS option set, shared by the ``lbfgs`` solver (whose options default to
#: these) and the local solves on the workers: correction pairs kept, restarts after a
#: stall at round-off, calls of the objective allowed per iteration (local solves), and
#: steps of the line search.
MEMORY = 10
MAX_RESTARTS = 3
EVALUATIONS_PER_ITERATION = 20
MAX_LINE_SEARCH = 50


@dataclass
class Minimised:
    """What :func:`minimize_to_tol` found.

    Attributes
    ----------
    x : ndarray
    grad : ndarray
        The gradient at ``x``.
    n_iter : int
        L-BFGS iterations over all runs.
    optimality : float
        Largest entry of the (projected) gradient at ``x``.
    stalled : bool
        Whether the last run stopped at round-off short of ``tol``.
    message : str
        scipy's reason for stopping the last run.
    """

    x: np.ndarray
    grad: np.ndarray
    n_iter: int
    optimality: float
    stalled: bool
    message: str


class _GradientEstimate:
    """``fun``, with the value replaced, once anchored, by the change of the objective
    from the anchor estimated from gradients alone (the trapezoid rule)."""

    def __init__(self, fun):
        self.fun = fun
        self.anchor = None

    def anchor_at(self, x, grad):
        self.anchor = (np.array(x, dtype=float), np.array(grad, dtype=float))

    def __call__(self, x):
        value, grad = self.fun(x)
        if self.anchor is not None:
            anchor_x, anchor_grad = self.anchor
            value = 0.5 * float((grad + anchor_grad) @ (x - anchor_x))
        return value, grad


def projected_gradient_max(grad, x, bounds=None):
    """Largest entry of the gradient projected on ``bounds`` (lower bounds 0 or None)."""
    if bounds is None:
        return float(np.max(np.abs(grad), initial=0.0))
    bounded = np.array([low is not None for low, _ in bounds])
    free = ~bounded | (x > 0) | (grad < 0)
    return float(np.max(np.abs(np.where(free, grad, 0.0)), initial=0.0))


def minimize_to_tol(fun, x0, *, tol, max_iter, max_evaluations, memory=MEMORY, bounds=None,
                    max_restarts=MAX_RESTARTS, callback=None, optimality=None):
    """Minimise ``fun`` with L-BFGS-B until the gradient criterion holds or nothing improves.

    Parameters
    ----------
    fun : callable
        ``x -> (value, grad)``.
    x0 : ndarray
    tol : float
        Stop when ``optimality(x, grad)`` is at most ``tol`` (scipy's ``gtol``).
    max_iter, max_evaluations : int
        Caps on iterations and on calls of ``fun``, over all runs.
    memory : int
        Correction pairs kept.
    bounds : list of (low, high), optional
    max_restarts : int
        Restarts on the gradient-based estimate after a stall.
    callback : callable, optional
        scipy's per-iteration callback.
    optimality : callable, optional
        ``(x, grad) -> float``; the projected gradient's largest entry by default.

    Returns
    -------
    Minimised
    """
    if optimality is None:
        def optimality(x, grad):
            return projected_gradient_max(grad, x, bounds)

    estimated = _GradientEstimate(fun)

    x = np.asarray(x0, dtype=float)
    n_iter = n_evaluations = 0
    best = np.inf
    for _ in range(int(max_restarts) + 1):
        result = scipy.optimize.minimize(
            estimated, x, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
            options={"maxiter": max_iter - n_iter, "maxfun": max_evaluations - n_evaluations,
                     "maxcor": int(memory), "gtol": tol, "ftol": 0.0, "maxls": MAX_LINE_SEARCH},
        )
        n_iter += int(result.nit)
        n_evaluations += int(result.nfev)
        x = result.x
        violation = optimality(x, result.jac)
        # status 0 short of the gradient criterion: the objective did not change at all
        stalled = result.status in (0, 2) and violation > tol
        if not stalled or violation >= best or n_iter >= max_iter \
                or n_evaluations >= max_evaluations:
            break
        best = violation
        estimated.anchor_at(x, result.jac)
    return Minimised(x, np.asarray(result.jac, dtype=float), n_iter, violation, stalled,
                     str(result.message))
