"""L-BFGS: scipy's L-BFGS-B driven by one-round evaluations of value and gradient."""

from __future__ import annotations

import numpy as np

from ..compute.coordinates import Standardised
from ..compute.losses import loss_of
from ..model.problem import Feature
from ..native_threads import one_thread
from ..optim.restarted_lbfgs import (
    MAX_RESTARTS,
    MEMORY,
    minimize_to_tol,
    projected_gradient_max,
)
from .base import FirstEvaluation, History, Objective, Solver, SolverResult
from .evaluations import preconditioned_coordinates, start_at_class_shares

__all__ = ["LBFGS"]


class LBFGS(Solver):
    """Limited-memory BFGS (scipy's L-BFGS-B; bounded only for ``positive=True``).

    Every function evaluation scipy asks for is one engine round returning the objective
    and its gradient together.  Stops when the largest gradient entry is at most ``tol``;
    scipy's relative-decrease test is switched off (``ftol=0``).

    Near the optimum the decrease of the objective falls below the round-off of its value
    long before the gradient reaches a tight ``tol``, and scipy stops because the objective
    no longer changes (or its line search fails).  The solver then restarts scipy from
    that point on the objective's change from it, estimated from gradients alone by the
    trapezoid rule ``(g(x) + g(x0)).(x - x0) / 2`` (exact for quadratics, and resolved to
    the round-off of the gradients rather than of the objective), up to
    ``max_restarts`` times while the gradient keeps improving.

    With non-negative coefficients (:class:`~daskglm.model.penalties.NonNegative`, the
    estimators' ``positive=True``) scipy gets the bounds ``coef >= 0`` (the intercept stays
    free); on that set the L1 part of a lasso or elastic-net penalty is the linear function
    ``l1 * sum(coef)``, so every penalty is smooth there and the criterion is the largest
    entry of the projected gradient.

    ``converged`` is True only when the largest gradient entry at the returned point is at
    most ``tol``.  Otherwise the message gives scipy's reason for stopping, starting with
    "stalled" when no further decrease could be resolved.  History entries report the
    objective itself, also during restarts.

    Options
    -------
    memory : int, default 10
        Number of correction pairs kept.
    max_evaluations : int, default 15000
        Cap on function evaluations (rounds).
    max_restarts : int, default 3
        Restarts on the gradient-based estimate of the objective after a stall (not
        used with ``sharded``).
    standardize : bool, default True
        Iterate in standardised coordinates (:mod:`daskglm.compute.coordinates`: as if
        ``X`` were centred and scaled to unit variance, each scale widened by the
        penalty's curvature, from the column moments of the validation round; no round
        of their own), so that columns of unequal scales or offsets (a raw-scale column
        beside 0/1 dummies) do not stall the iteration.  Up to
        :data:`~daskglm.compute.row_sample.SAMPLE_MAX_FEATURES` columns (and without
        bounds) also decorrelated, with the covariance of the validation round's sample
        of rows (:class:`~daskglm.compute.coordinates.Whitened`): correlated columns
        cost L-BFGS iterations and accuracy in the directions they nearly share.  A
        multinomial fit from zero coefficients starts at the intercepts of the classes'
        shares (read from scipy's first evaluation) and is also mapped across the
        classes, so that a rare class is as curved as the others
        (:mod:`daskglm.compute.class_coordinates`).  The stopping criterion stays on the
        gradient in the original coordinates.  With
        ``sharded`` the columns are centred and scaled the same way, the intercept
        absorbing the means (:func:`~daskglm.solvers.sharded_lbfgs.iteration_units`;
        without an intercept only scaled).
    sharded : bool, default False
        Keep the parameters, the gradient, the direction and the correction pairs in
        column shards on the workers, the driver seeing only scalars (Sandblaster
        L-BFGS, :mod:`daskglm.solvers.sharded_lbfgs`): each partition moves only the
        coefficients and gradient entries of the columns its rows touch.  For many
        features (hashed text).  The iteration is the package's own L-BFGS with a
        backtracking line search (:func:`~daskglm.optim.vector_free_lbfgs.run_lbfgs`),
        not scipy's; it stops on the same criterion.
    shards : int or None, default None
        With ``sharded``: the number of column shards (None: one per worker, or per
        engine thread in this process).
    newton_after : float or None, default None
        Switch to Newton's method mid-fit where it is predicted cheaper: the seconds of
        a Hessian round over a gradient round's (``solver="auto"`` sets it from the cost
        model, :func:`~daskglm.accounting.choice.hessian_round_ratio`, where Newton's
        method handles the problem).  From the 5th iteration on, the rate at which the
        optimality violation fell over the last 4 iterations predicts the rounds left to
        ``tol``; when those cost more than 1.15 times :data:`NEWTON_FINISH_ROUNDS`
        Hessian rounds, the fit goes on with Newton's method from that point (the
        choice and its figures in the ledger's choices, ``"switch"``).  Not used with
        ``sharded`` or non-negative coefficients.
    column_blocks : bool, default False
        With ``sharded``, for ``X`` (dense or CSR) with many rows and columns: model parallelism.
        ``X`` is cut into feature blocks, the shards' ranges, each kept on its shard's
        worker; the linear predictor is summed over the blocks per row partition and
        only vectors of a row partition's length cross the network
        (:mod:`daskglm.engine.column_blocks`; when this beats row partitions:
        :func:`~daskglm.accounting.costmodel.layout_bytes`).
    """

    name = "lbfgs"
    options = {"memory": MEMORY, "max_evaluations": 15000, "max_restarts": MAX_RESTARTS,
               "standardize": True, "sharded": False, "shards": None, "column_blocks": False,
               "newton_after": None}
    # a non-quadratic penalty only with non-negative coefficients: L-BFGS-B's bounds make
    # the L1 part linear (smooth problems with a non-smooth penalty are refused as such)
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.NON_QUADRATIC_PENALTY,
                         Feature.NONNEGATIVE, Feature.MULTINOMIAL, Feature.OFFSET})

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        self._check_option("memory", 1, integer=True)
        self._check_option("max_evaluations", 1, integer=True)
        self._check_option("max_restarts", 0, integer=True)
        if not isinstance(self.opts["standardize"], (bool, np.bool_)):
            raise ValueError(f"Option 'standardize' of solver 'lbfgs' must be True or False; "
                             f"got {self.opts['standardize']!r}.")
        if not isinstance(self.opts["sharded"], (bool, np.bool_)):
            raise ValueError(f"Option 'sharded' of solver 'lbfgs' must be True or False; "
                             f"got {self.opts['sharded']!r}.")
        if not isinstance(self.opts["column_blocks"], (bool, np.bool_)):
            raise ValueError(f"Option 'column_blocks' of solver 'lbfgs' must be True or False; "
                             f"got {self.opts['column_blocks']!r}.")
        if self.opts["column_blocks"] and not self.opts["sharded"]:
            raise ValueError("Option 'column_blocks' of solver 'lbfgs' needs sharded=True.")
        if self.opts["newton_after"] is not None:
            self._check_option("newton_after", 0, strict=True)
        if self.opts["shards"] is not None:
            self._check_option("shards", 1, integer=True)
            if not self.opts["sharded"]:
                raise ValueError("Option 'shards' of solver 'lbfgs' needs sharded=True.")

    #: What the sharded iteration (its own L-BFGS, no bounds) leaves to the in-driver one.
    NOT_SHARDED = frozenset({Feature.NONNEGATIVE, Feature.MULTINOMIAL,
                             Feature.NON_QUADRATIC_PENALTY})

    def reads_row_sample(self, problem):
        """The driver's iteration whitens the columns with the validation round's sample
        of rows, unbounded and standardised; the sharded one does not."""
        return bool(self.opts["standardize"] and not self.opts["sharded"]
                    and not getattr(problem.penalty, "nonnegative", False))

    def first_evaluation(self, problem, params0):
        """The loss and gradient at ``params0`` (scipy's first evaluation), in the driver's
        iteration; none for the sharded one."""
        if self.opts["sharded"]:
            return None
        return FirstEvaluation.of_loss(loss_of(problem), np.array(params0, dtype=float))

    def solve(self, problem, engine, params0):
        if self.opts["sharded"]:
            refused = sorted(problem.features() & self.NOT_SHARDED)
            if refused:
                raise ValueError(f"Option 'sharded' of solver 'lbfgs' does not handle "
                                 f"{' or '.join(refused)}; use sharded=False.")
            from .sharded_lbfgs import solve_sharded

            return solve_sharded(self, problem, engine, params0)
        objective = Objective(problem, engine)
        history = History(engine)
        params0 = np.array(params0, dtype=float)
        bounded = getattr(problem.penalty, "nonnegative", False)
        bounds = _nonnegative_bounds(problem) if bounded else None
        first = None
        if (self.opts["standardize"] and not bounded
                and problem.class_curvature_at(params0) is not None):
            # scipy's first evaluation, moved to the classes' shares where it tells them
            params0, *first = start_at_class_shares(problem, objective, params0,
                                                    *objective.value_and_grad(params0))
        coordinates = self._coordinates(problem, objective, params0)
        recorder = _Recorder(objective, history, params0, coordinates, self.tol, bounds)
        if first is not None:
            recorder.keep(recorder.theta0, params0, *first)
        if self.opts["newton_after"] is not None and not bounded:
            recorder.switch = SwitchToNewton(self.tol, float(self.opts["newton_after"]))
        with one_thread():  # spinning BLAS threads would slow the rounds down
            found = minimize_to_tol(
                recorder.value_and_grad, recorder.theta0, tol=recorder.theta_tol,
                max_iter=self.max_iter, max_evaluations=int(self.opts["max_evaluations"]),
                memory=int(self.opts["memory"]), max_restarts=int(self.opts["max_restarts"]),
                callback=recorder.callback, optimality=recorder.optimality, bounds=bounds,
            )
        if recorder.switch is not None and recorder.switch.reason is not None:
            return self._finish_with_newton(problem, engine, recorder, found, history)
        converged = found.optimality <= self.tol
        if converged:
            message = f"converged: largest gradient entry {found.optimality:.3g} <= tol"
        else:
            reason = "stalled: " if found.stalled else ""
            message = (f"{reason}scipy stopped with {found.message!r} at largest "
                       f"gradient entry {found.optimality:.3g} > tol {self.tol:g}")
        return SolverResult(recorder.params_of(found.x), found.n_iter, converged,
                            history.entries, message)

    def _finish_with_newton(self, problem, engine, recorder, found, history):
        """Newton's method from L-BFGS's last accepted point, for the iterations left."""
        from .newton import Newton

        switch = recorder.switch
        engine.ledger.note_choice("switch", "newton", switch.reason)
        newton = Newton(tol=self.tol, max_iter=max(1, self.max_iter - found.n_iter))
        finished = newton.solve(problem, engine, recorder.params_of(switch.theta))
        message = (f"switched to Newton's method after {found.n_iter} L-BFGS iterations "
                   f"({switch.reason}); Newton: {finished.message}")
        return SolverResult(finished.params, found.n_iter + finished.n_iter,
                            finished.converged, history.entries + finished.history, message)

    def _coordinates(self, problem, objective, params0):
        """The coordinates scipy iterates in: standardised (:func:`preconditioned_coordinates`,
        from the validation round's column moments) with ``standardize``, else the
        parameters themselves (also on an engine that holds no moments); for several
        classes also mapped across them."""
        if not self.opts["standardize"] or objective.engine.column_moments is None:
            return Standardised()
        # bounds ``coef >= 0`` hold in ``theta`` only for maps that scale each coefficient
        if getattr(problem.penalty, "nonnegative", False):
            return preconditioned_coordinates(problem, objective.column_moments(),
                                              problem.curvature_at(params0))
        return preconditioned_coordinates(problem, objective.column_moments(),
                                          problem.curvature_at(params0),
                                          covariance=objective.column_covariance(),
                                          class_curvature=problem.class_curvature_at(params0))


#: Hessian rounds Newton's method is expected to need from a point L-BFGS reached
#: (quadratic convergence near the optimum).
NEWTON_FINISH_ROUNDS = 3
#: Iterations whose fall of the optimality violation gives L-BFGS's rate.
RATE_WINDOW = 4


class SwitchToNewton:
    """Whether L-BFGS should hand over to Newton's method: its predicted rounds left to
    ``tol`` at the rate of the last :data:`RATE_WINDOW` iterations, against
    :data:`NEWTON_FINISH_ROUNDS` Hessian rounds of ``ratio`` gradient rounds each."""

    def __init__(self, tol, ratio):
        self.tol, self.ratio = tol, ratio
        self.violations = []
        #: Why it switched (None while it has not), and the point it switched at.
        self.reason, self.theta = None, None

    def after(self, theta, violation):
        """Record an iteration; True when the fit should go on with Newton's method."""
        self.violations.append(float(violation))
        recent = self.violations[-(RATE_WINDOW + 1):]
        if len(recent) <= RATE_WINDOW or not np.all(np.isfinite(recent)) \
                or min(recent) <= 0 or violation <= self.tol:
            return False
        rate = (np.log(recent[-1]) - np.log(recent[0])) / RATE_WINDOW
        left = np.inf if rate >= 0 else np.log(self.tol / recent[-1]) / rate
        newton = NEWTON_FINISH_ROUNDS * self.ratio
        if not left > 1.15 * newton:
            return False
        self.theta = np.array(theta, copy=True)
        self.reason = (f"at iteration {len(self.violations)} the violation {violation:.3g} fell "
                       f"{np.exp(-rate):.3g}x an iteration, {left:.3g} more rounds to tol, "
                       f"against {NEWTON_FINISH_ROUNDS} Hessian rounds of {self.ratio:.3g} "
                       f"gradient rounds each")
        return True


def _nonnegative_bounds(problem):
    """scipy's bounds: ``coef >= 0``, the intercept free."""
    free = [(None, None)] * (problem.n_params - problem.n_features)
    return [(0.0, None)] * problem.n_features + free


class _Recorder:
    """scipy's objective in the solver's coordinates ``theta``, one round per new point,
    and one history entry per iteration.

    The start point is evaluated at the parameters given, bit for bit, so that the
    validation round's first evaluation serves it.  scipy's callback gets the accepted
    point but, during a restart, the estimated (not the true) objective; the true value
    and gradient are looked up among the points evaluated since the last iteration.  The
    callback ends the run as soon as the accepted point meets ``tol`` in the original
    coordinates (scipy's own test, on the gradient in ``theta``, is set so that it can
    only be stricter).
    """

    def __init__(self, objective, history, params0, coordinates, tol, bounds):
        self.objective = objective
        self.history = history
        self.coordinates = coordinates
        self.tol = tol
        self.bounds = bounds
        self.params0 = params0
        self.theta0 = coordinates.to_theta(params0)
        self.previous = params0.copy()
        self.evaluations = {}
        #: a :class:`SwitchToNewton` when the fit may hand over to Newton's method
        self.switch = None
        #: largest factor from a gradient entry in ``theta`` to one in the parameters
        widest = coordinates.gradient_factor()
        factors = objective.criterion_scales((objective.problem.n_params,))
        if factors is not None:
            widest *= float(np.max(factors, initial=1.0))
        self.theta_tol = tol / widest

    def params_of(self, theta):
        if np.array_equal(theta, self.theta0):
            return self.params0
        return self.coordinates.to_params(theta)

    def keep(self, theta, params, value, grad):
        """An evaluation of the smooth objective made before the iteration (unbounded)."""
        self.evaluations[np.asarray(theta).tobytes()] = (params, value, grad, grad)

    def value_and_grad(self, theta):
        key = theta.tobytes()
        if key not in self.evaluations:
            params = self.params_of(theta)
            value, grad = self.objective.value_and_grad(params)
            full = grad
            if self.bounds is not None:
                # on the orthant coef >= 0 the L1 part of the penalty is l1 * sum(coef);
                # the history keeps the smooth gradient, from which
                # Objective.optimality measures the same violation
                problem = self.objective.problem
                n = problem.n_features
                l1 = problem.penalty.l1_strength
                value += l1 * float(np.sum(params[:n]))
                full = grad.copy()
                full[:n] += l1
            self.evaluations[key] = (params, value, grad, full)
        _, value, _, full = self.evaluations[key]
        return value, self.coordinates.grad_to_theta(full)

    def optimality(self, theta, theta_grad):
        """The largest violation of optimality at ``theta``, in the original coordinates."""
        found = self.evaluations.get(np.asarray(theta).tobytes())
        if found is None:
            params = self.params_of(theta)
            full = self.coordinates.grad_to_params(theta_grad)
        else:
            params, _, _, full = found
        if self.bounds is not None:
            return projected_gradient_max(full, params, self.bounds)
        return self.objective.optimality(params, full)

    def callback(self, intermediate_result):
        theta = intermediate_result.x
        key = theta.tobytes()
        found = self.evaluations.get(key)
        self.evaluations = {} if found is None else {key: found}
        if found is None:
            params, value, optimality = self.params_of(theta), np.nan, np.nan
        else:
            params, value, grad, _ = found
            optimality = self.objective.optimality(params, grad)
        self.history.record(value, optimality, np.linalg.norm(params - self.previous))
        self.previous = params.copy()
        if optimality <= self.tol:
            raise StopIteration
        if self.switch is not None and self.switch.after(theta, optimality):
            raise StopIteration
