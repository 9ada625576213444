"""Accelerated proximal gradient (FISTA) with backtracking, for L1 and elastic-net penalties.

The objective is split into the mean loss ``f`` (smooth, evaluated on the workers) and the
whole penalty ``g`` (on the driver, through its proximal operator; the intercept is never
penalised).  One iteration is

    x+ = prox_{g, 1/L}(y - grad f(y) / L)

at the extrapolated point ``y``, with ``L`` doubled until the descent lemma
``f(x+) <= f(y) + grad f(y).(x+ - y) + L/2 |x+ - y|^2`` holds.  Each trial costs one round
(value and gradient together), and so does each new extrapolated point.  Momentum is
restarted whenever it points uphill (O'Donoghue and Candes' gradient scheme), which makes
the method converge linearly on strongly convex problems.
"""

from __future__ import annotations

import math

import numpy as np

from .base import History, Objective, Solver, SolverResult

__all__ = ["ProximalGradient", "accelerated_proximal_gradient", "solve_composite_quadratic"]


def _prox(penalty, params, step, n_features):
    """Proximal operator of the penalty on the coefficients; the intercept passes through."""
    out = np.array(params, dtype=float, copy=True)
    out[:n_features] = penalty.prox(params[:n_features], step)
    return out


def _descent_lemma_holds(loss_new, grad_new, loss_y, grad_y, diff, lipschitz):
    """``f(x+) <= f(y) + g(y).d + L/2 |d|^2``, robust to round-off near the optimum.

    When the function values no longer differ by more than round-off, the gradient form
    ``(g(x+) - g(y)).d <= L/2 |d|^2`` (sufficient for convex ``f``) is used instead.
    """
    quadratic = 0.5 * lipschitz * float(diff @ diff)
    excess = loss_new - loss_y - float(grad_y @ diff)
    if abs(loss_new - loss_y) <= 1e-10 * max(1.0, abs(loss_y)):
        excess = float((grad_new - grad_y) @ diff)
    return excess <= quadratic


def accelerated_proximal_gradient(evaluate, problem, params0, *, step, tol, max_iter,
                                  restart=True, max_line_search=50, history=None):
    """FISTA with backtracking and adaptive restart on ``loss(params) + penalty(coef)``.

    Parameters
    ----------
    evaluate : callable
        ``params -> (loss, loss_grad)``: the smooth part without the penalty.
    problem : Problem
        Supplies the penalty, the number of penalised coefficients and the optimality
        measure.
    params0 : ndarray
        Starting point.
    step : float
        First trial step ``1 / L``.
    tol : float
        Stop when the first-order optimality violation is at most ``tol``.
    max_iter : int
        Most iterations.
    restart : bool
        Restart the momentum when it points uphill.
    max_line_search : int
        Trials per iteration before giving up.
    history : History, optional
        Receives one entry per iteration.

    Returns
    -------
    params, n_iter, converged, message
    """
    penalty, n_features = problem.penalty, problem.n_features
    optimality_of = Objective(problem, None).optimality

    def smooth_grad(params, loss_grad):
        grad = np.array(loss_grad, dtype=float, copy=True)
        grad[:n_features] += penalty.grad(params[:n_features])
        return grad

    x = np.array(params0, dtype=float)
    loss_x, grad_x = evaluate(x)
    if optimality_of(x, smooth_grad(x, grad_x)) <= tol:
        return x, 0, True, "converged"
    y, loss_y, grad_y = x, loss_x, grad_x
    lipschitz = 1.0 / step
    t = 1.0
    for n_iter in range(1, max_iter + 1):
        for trials in range(1, max_line_search + 1):
            x_new = _prox(penalty, y - grad_y / lipschitz, 1.0 / lipschitz, n_features)
            diff = x_new - y
            loss_new, grad_new = evaluate(x_new)
            if np.isfinite(loss_new) and _descent_lemma_holds(
                loss_new, grad_new, loss_y, grad_y, diff, lipschitz
            ):
                break
            lipschitz *= 2.0
        else:
            return x, n_iter - 1, False, "the backtracking found no acceptable step"
        optimality = optimality_of(x_new, smooth_grad(x_new, grad_new))
        if history is not None:
            value = loss_new + penalty.value(x_new[:n_features])
            history.record(value, optimality, 1.0 / lipschitz, evaluations=trials)
        if optimality <= tol:
            return x_new, n_iter, True, "converged"
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        if restart and float((y - x_new) @ (x_new - x)) > 0:
            t, t_next = 1.0, 1.0
        momentum = (t - 1.0) / t_next
        if momentum > 0:
            y = x_new + momentum * (x_new - x)
            loss_y, grad_y = evaluate(y)
        else:
            y, loss_y, grad_y = x_new, loss_new, grad_new
        x, t = x_new, t_next
    return x, max_iter, False, "maximum number of iterations reached"


class ProximalGradient(Solver):
    """Accelerated proximal gradient (FISTA) with backtracking and adaptive restart.

    Handles every family with no, L2, L1 or elastic-net penalty.  Every trial point and
    every extrapolated point is one engine round returning the loss and its gradient
    together, so an iteration costs two rounds when no step is rejected.  Stops when the
    largest violation of the optimality conditions (the distance of the gradient to the
    penalty's subdifferential) is at most ``tol``.

    Options
    -------
    step_size : float, default 1.0
        First trial step ``1 / L``; halved until the descent lemma holds and never
        increased, so a too small value slows the method down.
    restart : bool, default True
        Restart the momentum whenever it points uphill.
    max_line_search : int, default 50
        Trials per iteration before giving up.
    """

    name = "proximal"
    options = {"step_size": 1.0, "restart": True, "max_line_search": 50}
    handles_nonsmooth = True

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        penalty, n_features = problem.penalty, problem.n_features

        def evaluate(params):
            value, grad = objective.value_and_grad(params)
            coef = params[:n_features]
            grad = grad.copy()
            grad[:n_features] -= penalty.grad(coef)
            return value - penalty.smooth_value(coef), grad

        params, n_iter, converged, message = accelerated_proximal_gradient(
            evaluate, problem, params0,
            step=float(self.opts["step_size"]), tol=self.tol, max_iter=self.max_iter,
            restart=bool(self.opts["restart"]), max_line_search=int(self.opts["max_line_search"]),
            history=history,
        )
        return SolverResult(params, n_iter, converged, history.entries, message)


def solve_composite_quadratic(hess, grad, center, problem, *, tol=1e-12, max_iter=100_000):
    """Minimise ``grad.(x - center) + (x - center).hess.(x - center) / 2 + penalty(coef)``.

    Runs on the driver, without any round: the proximal Newton step of a model built from
    one Hessian round.  ``grad`` and ``hess`` are those of the loss alone.

    Returns
    -------
    params : ndarray
    converged : bool
    """
    center = np.asarray(center, dtype=float)

    def evaluate(params):
        diff = params - center
        model_grad = grad + hess @ diff
        return float(grad @ diff + 0.5 * diff @ (hess @ diff)), model_grad

    largest = float(np.linalg.eigvalsh(hess)[-1]) if hess.size else 0.0
    step = 1.0 / largest if largest > 0 else 1.0
    params, _, converged, _ = accelerated_proximal_gradient(
        evaluate, problem, center, step=step, tol=tol, max_iter=max_iter
    )
    return params, converged
