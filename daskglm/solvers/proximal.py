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

from ..compute.class_coordinates import PerClassCoordinates
from ..compute.coordinates import Standardised
from ..compute.losses import loss_of
from ..model.problem import Feature
from .base import History, Objective, Solver, SolverResult, StallMonitor
from .duality_gap import DualityGap

__all__ = ["ProximalGradient", "accelerated_proximal_gradient", "solve_composite_quadratic"]

#: Iterations without a new best objective or optimality before a stall is declared: more
#: than for monotone methods, as momentum makes the optimality violation oscillate (on the
#: weighted lasso of the tests it took 17 iterations to regain its best near tol=1e-10).
_PATIENCE = 50


def _descent_lemma_holds(loss_new, grad_new, loss_y, grad_y, diff, lipschitz):
    """``f(x+) <= f(y) + g(y).d + L/2 |d|^2``, robust to round-off near the optimum.

    When the function values no longer differ by more than round-off, the gradient form
    ``(g(x+) - g(y)).d <= L/2 |d|^2`` (sufficient for convex ``f``) is used instead.
    """
    quadratic = 0.5 * lipschitz * float(diff @ diff)
    excess = loss_new - loss_y - float(grad_y @ diff)
    if abs(loss_new - loss_y) <= 1e-10 * max(1.0, abs(loss_y)):
        excess = float((grad_new - grad_y) @ diff)
    # equality holds for a quadratic f at its exact L: allow round-off in the comparison
    return excess <= quadratic * (1.0 + 1e-12) + 1e-15 * max(1.0, abs(loss_y))


def _backtrack(evaluate, prox, y, loss_y, grad_y, lipschitz, max_trials):
    """The proximal step from ``y``, doubling ``L`` until the descent lemma holds.

    Returns ``(x, loss, grad, optimality, L, trials)``, or None after ``max_trials``.
    """
    for trials in range(1, max_trials + 1):
        x = prox(y - grad_y / lipschitz, 1.0 / lipschitz)
        loss, grad, optimality = evaluate(x)
        if np.isfinite(loss) and _descent_lemma_holds(loss, grad, loss_y, grad_y, x - y, lipschitz):
            return x, loss, grad, optimality, lipschitz, trials
        lipschitz *= 2.0
    return None


def accelerated_proximal_gradient(evaluate, prox, penalty_value, x0, *, step, tol, max_iter,
                                  restart=True, max_line_search=50, history=None,
                                  small_update=None):
    """FISTA with backtracking and adaptive restart on ``loss(x) + penalty(x)``.

    Parameters
    ----------
    evaluate : callable
        ``x -> (loss, loss_grad, optimality)``: the smooth part without the penalty, its
        gradient, and the optimality violation at ``x`` that decides convergence.
    prox : callable
        ``(x, step) -> argmin_z penalty(z) + |z - x|^2 / (2 step)``.
    penalty_value : callable
        ``x -> penalty(x)``, for the history.
    x0 : ndarray
        Starting point.
    step : float
        First trial step ``1 / L``; only ever shortened.
    tol : float
        Stop when the optimality violation is at most ``tol``.
    max_iter : int
        Most iterations.
    restart : bool
        Restart the momentum when it points uphill.
    max_line_search : int
        Trials per iteration before giving up.
    history : History, optional
        Receives one entry per iteration.
    small_update : callable, optional
        ``(x_new, x) -> bool``: whether an iteration's update is small enough to stop; an
        iterate then stops the run only when it also meets ``tol`` (scikit-learn's
        coordinate descent checks its duality gap only after a small update).  The start
        point is judged by ``tol`` alone.

    Returns
    -------
    x, n_iter, converged, message
        ``converged`` False with a message starting with "stalled" when the backtracking
        finds no acceptable step, the proximal gradient step is below round-off relative
        to ``x`` (a fixed point as far as floating point can tell), or for 50 iterations
        neither the objective nor the optimality violation improved beyond round-off.
    """
    x = np.array(x0, dtype=float)
    loss_x, grad_x, optimality = evaluate(x)
    if optimality <= tol:
        return x, 0, True, "converged"
    y, loss_y, grad_y = x, loss_x, grad_x
    lipschitz = 1.0 / step
    t = 1.0
    monitor = StallMonitor(patience=_PATIENCE)
    for n_iter in range(1, max_iter + 1):
        step_found = _backtrack(evaluate, prox, y, loss_y, grad_y, lipschitz, max_line_search)
        if step_found is None:
            return x, n_iter - 1, False, "stalled: the backtracking found no acceptable step"
        x_new, loss_new, grad_new, optimality, lipschitz, trials = step_found
        value = loss_new + penalty_value(x_new)
        if history is not None:
            history.record(value, optimality, 1.0 / lipschitz, evaluations=trials)
        if optimality <= tol and (small_update is None or small_update(x_new, x)):
            return x_new, n_iter, True, "converged"
        stall = monitor.check(x_new, x_new - y, value, optimality)
        if stall:
            return x_new, n_iter, False, stall
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        if restart and float((y - x_new) @ (x_new - x)) > 0:
            t, t_next = 1.0, 1.0
        momentum = (t - 1.0) / t_next
        if momentum > 0:
            y = x_new + momentum * (x_new - x)
            loss_y, grad_y, _ = evaluate(y)
        else:
            y, loss_y, grad_y = x_new, loss_new, grad_new
        x, t = x_new, t_next
    return x, max_iter, False, "maximum number of iterations reached"


class ProximalGradient(Solver):
    """Accelerated proximal gradient (FISTA) with backtracking and adaptive restart.

    Handles every family with no, L2, L1 or elastic-net penalty, and non-negative
    coefficients (``positive=True``: the proximal step clips them at zero).  Every trial point and
    every extrapolated point is one engine round returning the loss and its gradient
    together, so an iteration costs two rounds when no step is rejected.  The iterations
    run in standardised coordinates (:mod:`daskglm.compute.coordinates`: as if ``X`` were centred
    and scaled to unit variance, without forming such a copy, from the column moments the
    validation round returns), which removes the ill-conditioning that column offsets and
    unequal column scales cause.  Stops when the largest violation of
    the optimality conditions (the distance of the gradient to the penalty's
    subdifferential, in the original coordinates) is at most ``tol``, except on Gaussian
    L1 / elastic-net problems (Lasso, ElasticNet), which stop as scikit-learn's coordinate
    descent does: when the duality gap is at most ``tol * mean_W (y - ybar)^2``
    (:mod:`daskglm.solvers.duality_gap`, computed from each gradient round, no extra read of
    the data); the result then carries that gap as ``dual_gap``.

    Options
    -------
    step_size : float, default 1.0
        First trial step ``1 / L`` (in standardised coordinates); halved until the
        descent lemma holds and never increased.
    restart : bool, default True
        Restart the momentum whenever it points uphill.
    standardize : bool, default True
        Run in standardised coordinates (no extra round).
    max_line_search : int, default 50
        Trials per iteration before giving up.
    """

    name = "proximal"
    options = {"step_size": 1.0, "restart": True, "standardize": True, "max_line_search": 50}
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.NON_QUADRATIC_PENALTY,
                         Feature.NONSMOOTH_PENALTY, Feature.NONNEGATIVE, Feature.MULTINOMIAL,
                         Feature.OFFSET})

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        self._check_option("step_size", 0, strict=True)
        self._check_option("max_line_search", 1, integer=True)

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        # the penalised parameters: every class's coefficients for a multinomial problem
        penalty, n_features = problem.penalty, getattr(problem, "n_coef", problem.n_features)
        coordinates = Standardised()
        if self.opts["standardize"]:
            coordinates = Standardised.from_moments(*objective.column_moments(),
                                                    problem.fit_intercept)
        coordinates = objective.loss.per_class(coordinates)

        moments = objective.column_moments() if engine.column_moments is not None else None
        duality = None
        # a fold's path fit keeps the optimality rule: with the gap rule, LassoCV chose a
        # different alpha for weighted rows than for the same rows repeated (scikit-learn's
        # sample-weight equivalence check), as the folds' path fits stop at different points
        if moments is not None and objective.loss.single_output \
                and not getattr(engine, "is_fold", False):
            duality = DualityGap.for_problem(problem, moments[0], engine.n_samples)
        gaps = {}  # the gap at the latest points evaluated, by theta

        def small_update(theta_new, theta_old):
            # scikit-learn's first test: the largest coefficient update <= tol * max |coef|
            new = coordinates.to_params(theta_new)[:n_features]
            update = np.abs(new - coordinates.to_params(theta_old)[:n_features])
            largest = float(np.max(np.abs(new))) if new.size else 0.0
            return largest == 0.0 or float(np.max(update)) <= self.tol * largest

        def evaluate(theta):
            params = coordinates.to_params(theta)
            value, grad = objective.value_and_grad(params)
            coef = params[:n_features]
            loss_grad = grad.copy()
            loss_grad[:n_features] -= penalty.grad(coef)
            loss = value - penalty.smooth_value(coef)
            if duality is None:
                optimality = objective.optimality(params, grad)
            else:
                if duality.scale is None and not duality.observe_scale(params, loss, loss_grad):
                    _observe_scale_at_zero(objective, duality, params, n_features)
                gap = duality.gap(params, loss, loss_grad)
                intercept_grad = float(loss_grad[-1]) if problem.fit_intercept else 0.0
                gaps.update({theta.tobytes(): (gap, intercept_grad)})
                while len(gaps) > 4:
                    del gaps[next(iter(gaps))]
                # both rules: scikit-learn's gap (what its tol means) and the coefficients'
                # optimality violation (without it, the gap alone stops up to 30 times
                # further from the optimum than scikit-learn's coordinate descent at the
                # same tol); the intercept is made exact for the coefficients at the end
                coef_grad = grad.copy()
                if problem.fit_intercept:
                    coef_grad[-1] = 0.0
                optimality = max(duality.relative(gap), objective.optimality(params, coef_grad))
            return loss, coordinates.grad_to_theta(loss_grad), optimality

        theta, n_iter, converged, message = accelerated_proximal_gradient(
            evaluate, lambda theta, step: coordinates.prox(penalty, theta, step),
            lambda theta: penalty.value(coordinates.to_params(theta)[:n_features]),
            coordinates.to_theta(np.asarray(params0, dtype=float)),
            step=float(self.opts["step_size"]), tol=self.tol, max_iter=self.max_iter,
            restart=bool(self.opts["restart"]), max_line_search=int(self.opts["max_line_search"]),
            history=history, small_update=None if duality is None else small_update,
        )
        result = SolverResult(coordinates.to_params(theta), n_iter, converged, history.entries,
                              message)
        if duality is not None:
            if theta.tobytes() not in gaps:  # a stalled run returned an older iterate
                evaluate(theta)
            result.dual_gap, intercept_grad = gaps[theta.tobytes()]
            # the gap is that of the centred problem, whose intercept is the optimal one for
            # coef: for squared error it is one exact Newton step away, b - d loss / d b
            if problem.fit_intercept:
                result.params = np.array(result.params, dtype=float)
                result.params[-1] -= intercept_grad
        return result


def _observe_scale_at_zero(objective, duality, params, n_features):
    """The duality gap's scale from one gradient round at ``coef = 0`` (a start point with
    non-zero coefficients, e.g. a warm start, does not give it)."""
    zero = np.array(params, dtype=float)
    zero[:n_features] = 0.0
    value, grad = objective.value_and_grad(zero)
    duality.observe_scale(zero, value, grad)


def solve_composite_quadratic(hess, grad, center, problem, *, tol=1e-12, max_iter=100_000,
                              return_n_iter=False):
    """Minimise ``grad.(x - center) + (x - center).hess.(x - center) / 2 + penalty(coef)``.

    Runs on the driver, without any round: the proximal Newton step of a model built from
    one Hessian round.  ``grad`` and ``hess`` are those of the loss alone (no penalty).
    The iterations run in coordinates standardised by ``hess`` itself
    (:meth:`Standardised.from_hessian`; for the multinomial model each class by its own
    block, :meth:`~daskglm.compute.class_coordinates.PerClassCoordinates.from_hessian`).

    Returns
    -------
    params : ndarray
    converged : bool
    n_iter : int
        Only with ``return_n_iter``.
    """
    # the penalised parameters: every class's coefficients for a multinomial problem
    penalty, n_features = problem.penalty, getattr(problem, "n_coef", problem.n_features)
    optimality_of = Objective(problem, None).optimality
    center = np.asarray(center, dtype=float)
    if loss_of(problem).single_output:
        coordinates = Standardised.from_hessian(hess, problem.fit_intercept)
    else:
        coordinates = PerClassCoordinates.from_hessian(hess, problem.n_features,
                                                       problem.n_classes, problem.fit_intercept)
    jacobian = coordinates.jacobian(hess.shape[0])
    theta_hess = jacobian.T @ hess @ jacobian

    def evaluate(theta):
        params = coordinates.to_params(theta)
        diff = params - center
        model_grad = grad + hess @ diff
        smooth_grad = model_grad.copy()
        smooth_grad[:n_features] += penalty.grad(params[:n_features])
        loss = float(grad @ diff + 0.5 * diff @ (hess @ diff))
        return loss, coordinates.grad_to_theta(model_grad), optimality_of(params, smooth_grad)

    largest = float(np.linalg.eigvalsh(theta_hess)[-1]) if hess.size else 0.0
    theta, n_iter, converged, _ = accelerated_proximal_gradient(
        evaluate, lambda theta, step: coordinates.prox(penalty, theta, step),
        lambda theta: penalty.value(coordinates.to_params(theta)[:n_features]),
        coordinates.to_theta(center),
        step=1.0 / largest if largest > 0 else 1.0, tol=tol, max_iter=max_iter,
    )
    if return_n_iter:
        return coordinates.to_params(theta), converged, n_iter
    return coordinates.to_params(theta), converged
