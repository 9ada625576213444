"""Full-batch gradient descent with Barzilai-Borwein steps and a backtracking line search."""

from __future__ import annotations

import numpy as np

from ..model.problem import Feature
from .base import History, Objective, Solver, SolverResult, StallMonitor
from .communication_options import COMMUNICATION_OPTIONS, check_waits, codec_of
from .evaluations import preconditioned_coordinates, start_at_class_shares
from .gradient_communication import ApproximateRounds
from .linesearch import backtracking

__all__ = ["GradientDescent"]


class GradientDescent(Solver):
    """Full-batch gradient descent, preconditioned by the columns' moments.

    The iterations run in standardised coordinates (:mod:`daskglm.compute.coordinates`: as
    if ``X`` were centred and scaled to unit variance, from the column moments the
    validation round returns, no round of their own), with each coefficient's scale
    widened by the penalty's curvature relative to the loss's: ``sqrt(var_j + alpha / c)``,
    where ``c`` is the family's curvature (its variance function) at the starting point's
    mean.  Up to :data:`~daskglm.compute.row_sample.SAMPLE_MAX_FEATURES` columns they are
    also decorrelated, with the covariance of the validation round's sample of rows
    (:class:`~daskglm.compute.coordinates.Whitened`).  In these coordinates the
    objective's Hessian is close to ``c`` on its diagonal (whitened: close to ``c`` times
    the identity, near the start point), whatever the columns' offsets, scales and
    correlations and however strong the penalty, and the first trial step is ``1 / c``.
    A multinomial fit from zero coefficients starts at the intercepts of the classes'
    shares of the weight (read from the first gradient, no round of its own), and its
    coordinates are also mapped across the classes so that a rare class's directions are
    as curved as the others' (:mod:`daskglm.compute.class_coordinates`).

    Each iteration then tries the Barzilai-Borwein step ``s.s / s.g`` (twice the previous
    accepted step when that is not positive) and halves it until the Armijo condition
    holds (near the optimum, where function values differ by round-off, on the decrease
    estimated from the gradients); every trial point is one engine round returning value
    and gradient together.
    Stops when the largest gradient entry (in the original coordinates) is at most
    ``tol``.  Stops early, with ``converged`` False and a message starting with "stalled",
    when the line search finds no decrease or for 10 iterations neither the objective nor the largest gradient entry
    improved beyond round-off.  No penalty or L2 only.

    Options
    -------
    step_size : float or "auto", default "auto"
        First trial step (in the preconditioned coordinates); "auto" is ``1 / c``.
    standardize : bool, default True
        Run in standardised (whitened) coordinates; the penalty's curvature is used
        either way.
    max_line_search : int, default 40
        Trials per line search before giving up.
    compression, bits, k : optional
        Compress each partition's gradient sum (the loss is sent exactly), as for
        ``sgd``; see :mod:`daskglm.solvers.gradient_communication`.
    deadline, min_fraction : float, optional
        Each evaluation takes the partitions that arrive in time (or hold this share of
        the sample weight), scaled by the share of the weight that arrived.  On a
        cluster, a partition dropped from an evaluation runs in the later ones also as
        a backup task on a worker that was in time (see
        :meth:`~daskglm.engine.Engine.reduce_by_deadline`).  The first 4 evaluations
        use them and the next 2 wait for every partition; the fit keeps them only where
        they paid (:class:`~daskglm.solvers.deadline_guard.DeadlineGuard`).

    With ``compression``, ``deadline`` or ``min_fraction`` the gradients are estimates:
    the stopping criterion is confirmed by one exact round before the run stops as
    converged.
    """

    name = "gd"
    options = {"step_size": "auto", "standardize": True, "max_line_search": 40,
               **COMMUNICATION_OPTIONS}
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.MULTINOMIAL, Feature.OFFSET})

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        if not (isinstance(self.opts["step_size"], str) and self.opts["step_size"] == "auto"):
            self._check_option("step_size", 0, strict=True)
        self._check_option("max_line_search", 1, integer=True)
        self.codec = codec_of(self.opts, self.name)
        self.waits = check_waits(self.opts, self.name)

    def _approximate(self, objective):
        """The rounds that cut communication, or None when no option asks for them."""
        if self.codec is None and not self.waits:
            return None
        return ApproximateRounds(objective, self.codec, self.opts["deadline"],
                                 self.opts["min_fraction"])

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        params0 = np.asarray(params0, dtype=float)
        approximate = self._approximate(objective)
        try:
            return self._descend(problem, objective, history, params0, approximate)
        finally:
            if approximate is not None:
                approximate.close()

    def _descend(self, problem, objective, history, params0, approximate):
        if approximate is None:
            params0, first_value, first_grad = start_at_class_shares(
                problem, objective, params0, *objective.value_and_grad(params0))
        else:  # the workers' replica stays where the first round put it
            first_value, first_grad = approximate.value_and_grad(params0)
        curvature = problem.curvature_at(params0)
        coordinates = self._coordinates(problem, objective, params0)

        def exact_value_and_grad(theta):
            value, grad = objective.value_and_grad(coordinates.to_params(theta))
            return value, coordinates.grad_to_theta(grad)

        def value_and_grad(theta):
            if approximate is None:
                return exact_value_and_grad(theta)
            value, grad = approximate.value_and_grad(coordinates.to_params(theta))
            return value, coordinates.grad_to_theta(grad)

        evaluated = None
        if approximate is not None and approximate.codec is not None:
            def evaluated(trial):
                return coordinates.to_theta(approximate.replica)

        def optimality(theta, theta_grad):
            # the criterion is stated in the original coordinates; one more gradient map
            params = coordinates.to_params(theta)
            return objective.optimality(params, coordinates.grad_to_params(theta_grad))

        threshold = self.tol

        def confirm(theta, value, grad, violation):
            """``(converged, value, grad, violation)``: an estimated gradient's criterion
            is checked by one exact round."""
            nonlocal threshold
            if violation > threshold:
                return False, value, grad, violation
            if approximate is None:
                return True, value, grad, violation
            estimated = violation
            value, grad = exact_value_and_grad(theta)
            violation = optimality(theta, grad)
            if violation <= self.tol:
                return True, value, grad, violation
            threshold = 0.5 * min(threshold, estimated) if estimated > 0 else 0.0
            return False, value, grad, violation

        theta = coordinates.to_theta(params0)
        value, grad = first_value, coordinates.grad_to_theta(first_grad)
        if evaluated is not None:
            theta = evaluated(theta)
        step = (1.0 / curvature if self.opts["step_size"] == "auto"
                else float(self.opts["step_size"]))
        converged, value, grad, _ = confirm(theta, value, grad, optimality(theta, grad))
        monitor = StallMonitor()
        message = "converged" if converged else "maximum number of iterations reached"
        n_iter = 0
        while not converged and n_iter < self.max_iter:
            search = backtracking(value_and_grad, theta, value, grad, -grad, step,
                                  max_evaluations=int(self.opts["max_line_search"]),
                                  resolve_round_off=True, evaluated=evaluated)
            if not search.success:
                message = "stalled: the line search found no decrease"
                break
            n_iter += 1
            s = search.params - theta
            curvature_along = float(s @ (search.grad - grad))
            theta, value, grad = search.params, search.value, search.grad
            step = float(s @ s) / curvature_along if curvature_along > 0 else 2.0 * search.step
            converged, value, grad, violation = confirm(theta, value, grad,
                                                        optimality(theta, grad))
            history.record(value, violation, search.step)
            if converged:
                message = "converged"
            else:
                stall = monitor.check(theta, None, value, violation)
                if stall:
                    message = stall
                    break
        return SolverResult(coordinates.to_params(theta), n_iter, converged, history.entries,
                            message)

    def reads_row_sample(self, problem):
        """The standardised iteration is whitened with the validation round's sample of
        rows."""
        return bool(self.opts["standardize"])

    def _coordinates(self, problem, objective, params0):
        """Standardised coordinates with the penalty's curvature in the coefficients' scales,
        whitened where the validation round sampled rows (the same map for every class of
        a multinomial problem, and a map across the classes that evens out their
        curvatures)."""
        curvature = problem.curvature_at(params0)
        class_curvature = problem.class_curvature_at(params0)
        if not self.opts["standardize"]:
            return preconditioned_coordinates(problem, None, curvature,
                                              class_curvature=class_curvature)
        return preconditioned_coordinates(problem, objective.column_moments(), curvature,
                                          covariance=objective.column_covariance(),
                                          class_curvature=class_curvature)
