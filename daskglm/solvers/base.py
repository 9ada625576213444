"""What every solver shares: the problem, the one-round objective, results and history."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import progress
from ..accounting.kinds import Kind
from ..compute.kernels import gram
from ..compute.losses import Loss, loss_of
from ..model.problem import Problem

__all__ = ["Objective", "SolverResult", "Solver", "History", "StallMonitor", "EarlyStopping",
           "FirstEvaluation", "ROUND_OFF"]

#: Relative change below which floating point can no longer tell two values apart.
ROUND_OFF = 8 * np.finfo(float).eps


@dataclass
class FirstEvaluation:
    """A solver's first evaluation, ``kernel(part, *args)`` summed over the partitions,
    to be run in the validation round and recorded as one round of ``kind``
    (:meth:`~daskglm.engine.validation.ValidationVerbs.validate`)."""

    kernel: object
    args: tuple
    kind: str
    #: The loss evaluated, when the evaluation is of a loss (its sums may then also come
    #: from the validation round's per-class column sums:
    #: :meth:`~daskglm.compute.losses.Loss.evaluation_from_class_counts`).
    loss: Loss | None = None
    #: Whether the evaluation includes the Hessian.
    hessian: bool = False
    #: The parameters the loss is evaluated at.
    params: object = None

    @classmethod
    def of_loss(cls, loss, params, hessian=False):
        """The evaluation of ``loss`` at ``params`` (and its Hessian with ``hessian``)."""
        kernel, args = loss.evaluation(params, hessian)
        kind = Kind.VALIDATE_HESSIAN if hessian else Kind.VALIDATE_GRADIENT
        return cls(kernel, args, kind, loss, hessian, params)


class Objective:
    """Evaluations of a :class:`Problem` on an engine's data, one engine round each.

    Losses and gradients come back from the workers as sums; they are divided by the total
    sample weight here, and the penalty is added on the driver.  An evaluation the
    validation round already computed (:class:`FirstEvaluation`) is taken from the
    engine instead of running a round.
    """

    def __init__(self, problem: Problem, engine):
        self.problem = problem
        self.loss = loss_of(problem)
        self.engine = engine
        self._criterion_scales = None

    @property
    def total_weight(self):
        return self.engine.sum_weight

    def _penalise(self, params, loss, grad, hess=None):
        p = self.problem
        coef = p.coef(params)
        value = loss / self.total_weight + p.penalty.smooth_value(coef)
        grad = grad / self.total_weight
        grad[: coef.shape[0]] += p.penalty.grad(coef)
        if hess is not None:
            hess = hess / self.total_weight
            idx = np.arange(coef.shape[0])
            hess[idx, idx] += p.penalty.hess_diag(coef)
        return value, grad, hess

    def _reduce(self, kernel, *args, kind):
        """``engine.reduce``, or the validation round's result of the same evaluation."""
        take = getattr(self.engine, "take_first_evaluation", None)
        found = None if take is None else take(kernel, *args)
        return self.engine.reduce(kernel, *args, kind=kind) if found is None else found

    def value_and_grad(self, params):
        """Smooth objective (mean loss + smooth penalty part) and its gradient: one round."""
        kernel, args = self.loss.evaluation(params)
        stats = self._reduce(kernel, *args, kind=Kind.GRADIENT)
        value, grad, _ = self._penalise(params, stats.loss, stats.grad)
        return value, grad

    def loss_grad_hess(self, params):
        """Mean loss, its gradient and its Hessian, without any penalty: one round."""
        kernel, args = self.loss.evaluation(params, hessian=True)
        stats = self._reduce(kernel, *args, kind=Kind.HESSIAN)
        weight = self.total_weight
        return stats.loss / weight, stats.grad / weight, stats.hess / weight

    def value_grad_hess(self, params):
        """Smooth objective, gradient and Hessian: one round."""
        kernel, args = self.loss.evaluation(params, hessian=True)
        stats = self._reduce(kernel, *args, kind=Kind.HESSIAN)
        return self._penalise(params, stats.loss, stats.grad, stats.hess)

    def gram(self):
        """Centred weighted Gram statistics of ``(X, y)``: one round."""
        return self._reduce(gram, kind=Kind.GRAM)

    def column_moments(self):
        """Weighted means and mean squares of the columns of ``X``, from the validation
        round (no round of their own)."""
        stats = self.engine.column_moments
        if stats is None:
            raise RuntimeError("The engine has not been validated: no column moments yet.")
        return stats.sums / stats.weight, stats.squares / stats.weight

    def column_covariance(self):
        """The columns' covariance (centred with an intercept) from the validation
        round's sample of rows (:class:`~daskglm.compute.row_sample.RowSample`), or None
        where it took none."""
        stats = self.engine.column_moments
        if stats is None or stats.sample is None:
            return None
        means, squares = self.column_moments()
        centred = self.problem.fit_intercept
        variances = squares - means**2 if centred else squares
        return stats.sample.covariance(variances, centred)

    def nonsmooth_value(self, params):
        """The part of the penalty that is not in :meth:`value_and_grad`."""
        coef = self.problem.coef(params)
        penalty = self.problem.penalty
        return penalty.value(coef) - penalty.smooth_value(coef)

    def optimality(self, params, grad):
        """Largest violation of the first-order optimality conditions (0 at the optimum),
        each coefficient's measured on the scale of its column when that is below 1.

        A coefficient's violation is its gradient component (or, under a nonsmooth
        penalty, the distance of its gradient to the penalty's subdifferential) times
        :meth:`criterion_scales`: ``max(1, 1 / rms)`` with ``rms`` its column's
        root mean square.  A rare column (a hashed feature set in a few rows of a
        million) has a gradient as small as its column whatever the distance of its
        coefficient from the optimum, so an unscaled test would be met far from it;
        scaled, the test is the one the coefficients of a column rescaled to unit
        size would meet, and it is never looser than scikit-learn's ``max |grad| <=
        tol``."""
        p = self.problem
        coef = p.coef(params)
        violation = np.abs(grad)
        if not p.penalty.smooth:
            violation = violation.copy()
            violation[: coef.shape[0]] = p.penalty.subgradient_distance(
                coef, grad[: coef.shape[0]])
        if not violation.size:
            return 0.0
        scales = self.criterion_scales(violation.shape)
        if scales is not None:
            violation = violation * scales
        return float(np.max(violation))

    def criterion_scales(self, shape):
        """The factors of :meth:`optimality`, shaped like the gradient (``shape``): for
        each coefficient ``max(1, 1 / rms)`` of its column (1 for a column of zeros and
        for the intercept), from the validation round's column moments; None on an
        engine that holds none."""
        cached = self._criterion_scales
        if cached is not None and cached.shape == shape:
            return cached
        moments = getattr(self.engine, "column_moments", None)
        d = self.problem.n_features
        if moments is None or not shape or shape[0] < d:
            return None
        squares = np.asarray(moments.squares, dtype=float).reshape(-1)
        if squares.shape[0] != d:
            return None
        rms = np.sqrt(np.maximum(squares / float(moments.weight), 0.0))
        column = np.ones(d)
        small = (rms > 0) & (rms < 1)
        column[small] = 1.0 / rms[small]
        n_coef = getattr(self.problem, "n_coef", d)  # a multinomial model's, class by class
        factors = np.ones(shape[0])
        if n_coef % d or n_coef > shape[0]:
            return None
        factors[:n_coef] = np.tile(column, n_coef // d)
        if len(shape) > 1:
            factors = np.broadcast_to(factors[:, None], shape).copy()
        self._criterion_scales = factors
        return factors


@dataclass
class SolverResult:
    """What a solver returns: the parameters and how it got there."""

    params: np.ndarray
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    message: str = ""


class History:
    """Per-iteration diagnostics: objective, optimality, step, seconds, rounds."""

    def __init__(self, engine):
        self.engine = engine
        self.entries = []
        self._start = time.perf_counter()

    def record(self, objective, grad_norm, step, **extra):
        self.entries.append(
            {
                "iteration": len(self.entries) + 1,
                "objective": float(objective),
                "grad_norm": float(grad_norm),
                "step": float(step),
                "seconds": time.perf_counter() - self._start,
                "rounds": self.engine.ledger.rounds,
                **extra,
            }
        )
        progress.report(self.entries[-1])


class StallMonitor:
    """Says when an iterative solver can make no more progress in floating point.

    A solver is stalled when its step is below round-off relative to its iterate (the
    iterate no longer changes), or when for ``patience`` iterations in a row none of the
    quantities it drives down (the objective, the optimality violation, residuals) has
    improved on its best value by more than round-off.  Linear convergence improves the
    optimality violation at almost every iteration, so only a solver at its round-off
    floor goes ``patience`` iterations without a new best.

    Parameters
    ----------
    patience : int
        Iterations without improvement before the solver is declared stalled.
    """

    def __init__(self, patience=10):
        self.patience = int(patience)
        self.best = None
        self.since_best = 0

    def check(self, iterate, step, *measures):
        """The reason the solver is stalled after this iteration, or "" if it is not.

        Parameters
        ----------
        iterate : ndarray
            The new iterate.
        step : ndarray or None
            Its change from the previous iterate; None skips the step test.
        *measures : float
            Quantities the solver drives down, in the same order at every call.
        """
        if step is not None:
            step_norm = float(np.linalg.norm(step))
            if step_norm <= ROUND_OFF * float(np.linalg.norm(iterate)):
                return (f"stalled: the step ({step_norm:.3g}) is below round-off relative to "
                        f"the parameters")
        measures = np.asarray(measures, dtype=float)
        if self.best is None:
            self.best = measures.copy()
            return ""
        improved = measures < self.best - ROUND_OFF * np.abs(self.best)
        self.best = np.where(improved, measures, self.best)
        self.since_best = 0 if improved.any() else self.since_best + 1
        if self.since_best >= self.patience:
            return (f"stalled: neither the objective nor the optimality violation improved "
                    f"beyond round-off in {self.patience} iterations")
        return ""


class EarlyStopping:
    """scikit-learn's stopping rule for SGD: stop once ``patience`` epochs in a row did not
    lower the best objective by more than ``tol`` (never when ``tol`` is None)."""

    def __init__(self, tol, patience):
        self.tol, self.patience = tol, int(patience)
        self.best, self.bad_epochs = math.inf, 0

    def should_stop(self, value):
        """Record one epoch's objective; True when the rule says stop."""
        if self.tol is None:
            return False
        self.bad_epochs = self.bad_epochs + 1 if value > self.best - self.tol else 0
        self.best = min(self.best, value)
        return self.bad_epochs >= self.patience


#: The solvers' ``max_iter`` when given None (scikit-learn's "the solver's default").
DEFAULT_MAX_ITER = 100


class Solver:
    """Base class of solvers.

    Subclasses set ``name``, ``options`` (allowed method-specific options and their
    defaults) and ``handles`` (the :class:`~daskglm.model.problem.Feature` s of a problem
    they can take beyond least squares with an L2 penalty), and implement :meth:`solve`.
    :meth:`unsupported` compares ``handles`` with the problem's features, so that the
    estimator can name the solvers that can handle a problem.
    """

    name = "solver"
    options: dict = {}
    handles: frozenset = frozenset()
    #: Whether ``tol=None`` is accepted (scikit-learn's stochastic solvers: no stopping
    #: rule, run ``max_iter`` epochs); ``self.tol`` is then None.
    accepts_no_tol = False

    def __init__(self, tol=1e-4, max_iter=100, **options):
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            allowed = ", ".join(sorted(self.options)) or "none"
            raise ValueError(
                f"Unknown option(s) {unknown} for solver {self.name!r}; allowed: {allowed}."
            )
        no_tol = tol is None and self.accepts_no_tol
        if not no_tol and not (isinstance(tol, (int, float, np.number)) and tol >= 0):
            raise ValueError(f"tol must be a number >= 0; got {tol!r}.")
        if max_iter is None:  # scikit-learn's "the solver's default"
            max_iter = DEFAULT_MAX_ITER
        valid = isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool)
        if not (valid and max_iter >= 0):
            raise ValueError(f"max_iter must be an integer >= 0 or None; got {max_iter!r}.")
        self.tol = None if no_tol else float(tol)
        self.max_iter = int(max_iter)
        self.opts = {**self.options, **options}

    def _check_option(self, key, minimum, *, integer=False, strict=False):
        """Raise ValueError unless option ``key`` is a number (an integer) >= ``minimum``.

        ``strict`` asks for ``> minimum`` instead.
        """
        value = self.opts[key]
        kinds = (int, np.integer) if integer else (int, float, np.number)
        valid = isinstance(value, kinds) and not isinstance(value, bool)
        valid = valid and (value > minimum if strict else value >= minimum)
        if not valid:
            kind = "an integer" if integer else "a number"
            relation = ">" if strict else ">="
            raise ValueError(
                f"Option {key!r} of solver {self.name!r} must be {kind} {relation} {minimum}; "
                f"got {value!r}."
            )

    def options_used(self, ledger):
        """The options of a finished fit: ``self.opts`` with the values chosen during the
        fit (``"auto"`` options, in ``ledger.choices``) in their place."""
        return {**self.opts, **{option: value for option, (value, _) in ledger.choices.items()}}

    @classmethod
    def in_process_partitions(cls, options: dict) -> int | None:
        """Row partitions this solver asks of in-memory data fitted in this process, with
        ``options`` (the user's, not checked yet); None (the default) for the engine's
        (:func:`~daskglm.engine.partitions.default_partitions`: one per 32 MiB)."""
        return None

    @classmethod
    def unsupported(cls, problem: Problem) -> str | None:
        """None when the solver handles ``problem``, else the reason it does not."""
        missing = sorted(problem.features() - cls.handles)
        if missing:
            return f"solver {cls.name!r} does not handle {' or '.join(missing)}"
        return None

    def reads_row_sample(self, problem: Problem) -> bool:
        """Whether the solver reads the validation round's sample of rows
        (:meth:`Objective.column_covariance`) on ``problem``; the round takes the
        sample (``p^2 / 2`` floats a partial) only then.  False by default."""
        return False

    def first_evaluation(self, problem: Problem, params0) -> FirstEvaluation | None:
        """The evaluation this solver starts with at ``params0``, for the validation round
        to compute in its read of the data; None (the default) when the solver's first
        round cannot be shared."""
        return None

    def solve(self, problem: Problem, engine, params0) -> SolverResult:
        raise NotImplementedError

    #: Whether ``converged`` means the optimality test of :meth:`Objective.optimality`
    #: at ``tol``.  The stochastic solvers stop by a rule on a sampled objective (no
    #: improvement by ``tol`` for some epochs), which an iterate at its noise floor meets
    #: far from the optimum.
    stops_on_optimality = True

    def solve_to_optimum(self, problem: Problem, engine, params0) -> SolverResult:
        """:meth:`solve`, with ``converged`` meaning the optimum of the objective.

        A solver whose stopping rule is not the optimality test
        (``stops_on_optimality`` False) and that says it converged is judged by ONE
        exact gradient round at its result: ``converged`` stays True only when the
        optimality violation is at most ``tol``; otherwise it becomes False and the
        message gives the violation (the solver stopped at its noise floor)."""
        result = self.solve(problem, engine, params0)
        if self.stops_on_optimality or not result.converged or self.tol is None:
            return result
        objective = Objective(problem, engine)
        _, grad = objective.value_and_grad(result.params)
        violation = objective.optimality(result.params, grad)
        if result.history:
            result.history[-1]["optimality"] = violation
        if violation > self.tol:
            result.converged = False
            result.message = (f"its stopping rule held at its noise floor, short of the "
                              f"optimum: one exact gradient round measured an optimality "
                              f"violation of {violation:.3g} > tol {self.tol:g}")
        return result
