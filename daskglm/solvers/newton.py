"""Newton's method (IRLS where the Hessian is exact, Fisher scoring elsewhere): one round
per accepted full step."""

from __future__ import annotations

import numpy as np

from ..compute.losses import loss_of
from ..model.problem import Feature
from ..optim.linalg import solve_symmetric
from .base import FirstEvaluation, History, Objective, Solver, SolverResult, StallMonitor
from .linesearch import LineSearchResult, backtracking
from .proximal import solve_composite_quadratic

__all__ = ["Newton"]

#: Predicted decrease, relative to the objective, below which function values are not
#: compared: the full step is taken when it reduces the gradient instead.
_ROUND_OFF = 1e-10


class Newton(Solver):
    """Newton's method with a backtracking line search.

    Every evaluation is one engine round returning the objective, its gradient and its
    Hessian together (each partition sends a ``d x d`` block).  The driver solves
    ``H step = -g`` (Cholesky, minimum-norm fallback for a singular ``H``) and tries the
    full step first, halving it until the Armijo condition holds.  Each trial point is
    evaluated with its Hessian, so an iteration whose full step is accepted costs exactly
    one round and the next iteration needs no further one.  For a canonical link that
    makes ``eta`` the natural parameter this is iteratively reweighted least squares
    (the negative binomial's and Tweedie's ``canonical_link``, the log, is natural for the
    Poisson only).  The log link of the Gamma, negative binomial and Tweedie (power in
    [1, 2]) distributions keeps the loss convex in ``eta`` at every target, and the rows'
    weights are the exact curvature (the family's ``hessian_d2loss``).  With any other
    link they are the expected (Fisher) information, so the method is Fisher scoring
    (statsmodels' IRLS) and its local convergence is linear rather than quadratic.  Near
    the optimum, where the predicted decrease is below what function values resolve, the
    full step is accepted when it shrinks the gradient instead.  Stops when the largest
    gradient entry is at most ``tol``.  Stops early, with ``converged`` False and a
    message starting with "stalled", when the line search finds no decrease, the step is
    below round-off relative to the parameters, or for 10 iterations neither the
    objective nor the largest gradient entry improved beyond round-off.  Every family.

    With an L1 or elastic-net penalty it is the proximal Newton method (glmnet's and glum's
    outer loop): each round's Hessian of the loss makes a quadratic model, whose
    penalised minimum is found on the driver without any round
    (:func:`~daskglm.solvers.proximal.solve_composite_quadratic`, to a tenth of the
    current optimality); the step towards it is backtracked until the penalised objective
    decreases by a tenth of a thousandth of the model's predicted decrease.  Each trial
    point is evaluated with its Hessian, so an accepted full step costs one round.  Stops
    when the largest violation of the optimality conditions is at most ``tol``.  The
    multinomial model's quadratic model is solved in coordinates that scale each class
    by its own Hessian block.

    The Hessian of the point where the fit stops is never used, so with an exact Hessian
    (the family's ``exact_hessian``, or the multinomial model) and the quadratic
    convergence it brings, the full step that is predicted to meet ``tol`` is first
    evaluated without its Hessian (a gradient round, a fraction of a Hessian round's
    cost): after two full steps in a row, the largest gradient entries ``g_prev, g`` of
    the points they reached predict ``g^3 / g_prev^2`` for the next point, and at most
    ``tol / 2`` is taken as meeting it (the prediction from the start point's step is
    left out: that step is rarely in the quadratic regime, and its prediction was 0.6
    decades optimistic in the fits measured, the later ones at most 0.3).  That point
    ends the fit if its full step is accepted and meets ``tol``; otherwise the iteration
    goes on as above, the gradient round spent, and the next prediction waits for two
    more full steps.

    Options
    -------
    max_line_search : int, default 40
        Trials per line search before giving up.
    """

    name = "newton"
    options = {"max_line_search": 40}
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.MULTINOMIAL, Feature.OFFSET,
                         Feature.NON_QUADRATIC_PENALTY, Feature.NONSMOOTH_PENALTY})

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        self._check_option("max_line_search", 1, integer=True)

    def first_evaluation(self, problem, params0):
        """The loss, gradient and Hessian at ``params0``."""
        return FirstEvaluation.of_loss(loss_of(problem), np.array(params0, dtype=float),
                                       hessian=True)

    def solve(self, problem, engine, params0):
        if not problem.penalty.smooth:
            return self._proximal_newton(problem, engine, params0)
        objective = Objective(problem, engine)
        history = History(engine)
        value_and_grad = _WithHessian(objective)

        params = np.array(params0, dtype=float)
        value, grad = value_and_grad(params)
        optimality = objective.optimality(params, grad)
        converged = optimality <= self.tol
        n_iter = 0
        monitor = StallMonitor()
        message = "converged" if converged else "maximum number of iterations reached"
        exact_hessian = objective.loss.exact_hessian
        previous_optimality, full_steps = None, 0  # full steps in a row
        while not converged and n_iter < self.max_iter:
            n_iter += 1
            direction, _ = solve_symmetric(value_and_grad.hess, -grad)
            if not float(grad @ direction) < 0:
                direction = -grad  # a singular or indefinite system: fall back to the gradient
            search, first_step = None, 1.0
            predicted = exact_hessian and full_steps >= 2 and _predicts_tol(
                optimality, previous_optimality, self.tol)
            if predicted:
                search, first_step = self._last_step(objective, value_and_grad, params, value,
                                                     grad, direction)
            if search is None and first_step == 1.0 and (
                    -float(grad @ direction) <= _ROUND_OFF * max(1.0, abs(value))):
                search = self._full_step(value_and_grad, params, grad, direction)
                first_step = 0.5  # the full step was just tried
            if search is None:
                search = self._backtrack(value_and_grad, params, value, grad, direction,
                                         first_step)
            if not search.success:
                n_iter -= 1
                message = "stalled: the line search found no decrease"
                break
            step = search.params - params
            params, value, grad = search.params, search.value, search.grad
            previous_optimality = optimality
            full_steps = full_steps + 1 if search.step == 1.0 else 0
            optimality = objective.optimality(params, grad)
            history.record(value, optimality, search.step, evaluations=search.evaluations)
            converged = optimality <= self.tol
            if predicted and not converged:
                full_steps = 0  # no prediction again before two more full steps
            message = _after_step(monitor, converged, params, step, value, optimality, message)
            if message.startswith("stalled"):
                break
        return SolverResult(params, n_iter, converged, history.entries, message)

    def _proximal_newton(self, problem, engine, params0):
        """Newton's method for a penalty with a non-smooth part (see the class docstring)."""
        objective = Objective(problem, engine)
        history = History(engine)
        penalty = problem.penalty
        penalised = _PenalisedWithHessian(objective)

        params = np.array(params0, dtype=float)
        value, smooth_grad = penalised(params)
        grad, hess, optimality = penalised.grad, penalised.hess, penalised.optimality
        converged = optimality <= self.tol
        n_iter = 0
        monitor = StallMonitor()
        message = "converged" if converged else "maximum number of iterations reached"
        while not converged and n_iter < self.max_iter:
            n_iter += 1
            target = solve_composite_quadratic(hess, grad, params, problem,
                                               tol=max(0.1 * optimality, 0.01 * self.tol))[0]
            direction = target - params
            predicted = float(grad @ direction) + penalty.value(
                problem.coef(target)) - penalty.value(problem.coef(params))
            search, first_step = None, 1.0
            if -predicted <= _ROUND_OFF * max(1.0, abs(value)):
                # below what function values resolve: the full step if it shrinks the
                # optimality violation
                trial_value, trial_grad = penalised(target)
                if np.isfinite(trial_value) and penalised.optimality < optimality:
                    search = LineSearchResult(1.0, target, trial_value, trial_grad, 1, True)
                first_step = 0.5
            if search is None:
                search = self._backtrack(penalised, params, value, smooth_grad, direction,
                                         first_step, slope=predicted)
            if not search.success:
                n_iter -= 1
                message = "stalled: the line search found no decrease"
                break
            moved = search.params - params
            params, value, smooth_grad = search.params, search.value, search.grad
            grad, hess, optimality = penalised.grad, penalised.hess, penalised.optimality
            history.record(value, optimality, search.step, evaluations=search.evaluations)
            converged = optimality <= self.tol
            message = _after_step(monitor, converged, params, moved, value, optimality, message)
            if message.startswith("stalled"):
                break
        return SolverResult(params, n_iter, converged, history.entries, message)

    def _backtrack(self, value_and_grad, params, value, grad, direction, first_step,
                   slope=None):
        """The backtracking line search from ``first_step``; a first step below 1 counts
        the full step, already tried and rejected, among its evaluations."""
        search = backtracking(value_and_grad, params, value, grad, direction, first_step,
                              slope=slope, max_evaluations=int(self.opts["max_line_search"]))
        if first_step < 1.0:
            search.evaluations += 1
        return search

    def _last_step(self, objective, value_and_grad, params, value, grad, direction):
        """The full step evaluated without its Hessian, as ``(search, first_step)``.

        ``search`` is the accepted full step when it meets ``tol`` (no Hessian needed), or
        the same point evaluated again with its Hessian when it is accepted short of
        ``tol``; None when it is not accepted, and the line search then starts at
        ``first_step = 0.5``.
        """
        if -float(grad @ direction) <= _ROUND_OFF * max(1.0, abs(value)):
            search = self._full_step(objective.value_and_grad, params, grad, direction)
        else:
            search = backtracking(objective.value_and_grad, params, value, grad, direction,
                                  1.0, max_evaluations=1)
        if search is None or not search.success:
            return None, 0.5
        if objective.optimality(search.params, search.grad) <= self.tol:
            return search, 1.0
        value, grad = value_and_grad(search.params)
        return LineSearchResult(1.0, search.params, value, grad, 2, True), 1.0

    @staticmethod
    def _full_step(value_and_grad, params, grad, direction):
        """The full step, accepted when it shrinks the gradient; None otherwise.

        Used when the predicted decrease is below what function values resolve, where the
        Armijo test compares round-off with round-off.
        """
        trial = params + direction
        trial_value, trial_grad = value_and_grad(trial)
        if np.isfinite(trial_value) and np.linalg.norm(trial_grad) < np.linalg.norm(grad):
            return LineSearchResult(1.0, trial, trial_value, trial_grad, 1, True)
        return None


class _WithHessian:
    """``params -> (value, grad)`` for the line search, one Hessian round each; the Hessian
    of the last point evaluated (the accepted one) starts the next iteration."""

    def __init__(self, objective):
        self.objective = objective
        self.hess = None

    def __call__(self, params):
        value, grad, self.hess = self.objective.value_grad_hess(params)
        return value, grad


class _PenalisedWithHessian:
    """``params -> (value, grad)`` of the penalised objective (the whole penalty in the
    value, its smooth part in the gradient), one Hessian round each, for proximal Newton's
    line search; the loss's gradient and Hessian and the optimality violation of the last
    point evaluated (the accepted one) start the next iteration."""

    def __init__(self, objective):
        self.objective = objective
        self.grad = self.hess = self.optimality = None

    def __call__(self, params):
        problem = self.objective.problem
        loss, self.grad, self.hess = self.objective.loss_grad_hess(params)
        coef = problem.coef(params)
        smooth_grad = self.grad.copy()
        smooth_grad[: coef.shape[0]] += problem.penalty.grad(coef)
        self.optimality = self.objective.optimality(params, smooth_grad)
        return loss + problem.penalty.value(coef), smooth_grad


def _after_step(monitor, converged, params, step, value, optimality, message):
    """The solver's message after an accepted step: "converged", a stall the monitor
    sees, or ``message`` unchanged."""
    if converged:
        return "converged"
    return monitor.check(params, step, value, optimality) or message


def _predicts_tol(optimality, previous_optimality, tol):
    """Whether two full Newton steps' largest gradient entries, ``previous_optimality``
    then ``optimality``, predict one at most ``tol / 2`` after the next full step:
    quadratic convergence, ``g_next = C g^2`` with ``C = g / g_prev^2``."""
    if previous_optimality is None or not 0 < optimality < previous_optimality:
        return False
    return optimality * (optimality / previous_optimality) ** 2 <= 0.5 * tol
