"""The plan of a fit, made before any pass (:class:`~.plan.FitPlan`): the solver
(``"auto"`` chosen for the shape of the data and the cluster's network), its options
and its problem, made again once the data's total weight or classes change it, and
whether the kernels read a table's categorical blocks."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..accounting.choice import SHARDED_FEATURES, hessian_round_ratio, newton_applies
from ..accounting.links import IN_PROCESS
from ..compute.blocked import pointwise_for
from ..compute.losses import loss_of
from ..engine.cache import kept_copies
from ..model.penalties import NonNegative
from ..solvers import SOLVERS, Problem, get_solver
from ..solvers.options import options_dict
from .auto_choice import choose_solver, cluster_link, worker_threads
from .categorical import BLOCK_SOLVERS
from .plan import FitPlan


def _auto_options(name, problem, options):
    """``solver_options`` with what ``solver="auto"`` adds for ``name``: sharded L-BFGS
    from :data:`~daskglm.accounting.choice.SHARDED_FEATURES` features on, for the problems
    it takes, and otherwise L-BFGS that may hand over to Newton's method mid-fit
    (``newton_after``) where Newton's method handles the problem, unless the options say
    otherwise."""
    options = dict(options or {})
    if name == "lbfgs" and problem.n_features >= SHARDED_FEATURES \
            and not problem.features() & SOLVERS["lbfgs"].NOT_SHARDED:
        options.setdefault("sharded", True)
    if name == "lbfgs" and not options.get("sharded") and newton_applies(problem) \
            and SOLVERS["newton"].unsupported(problem) is None \
            and problem.n_params <= NEWTON_SWITCH_MAX_PARAMS:
        options.setdefault("newton_after", hessian_round_ratio(problem.n_params))
    return options


#: Up to this many parameters ``solver="auto"``'s L-BFGS may hand over to Newton's method
#: (a Hessian of 2048^2 doubles is 32 MiB a partition).
NEWTON_SWITCH_MAX_PARAMS = 2048


class PlanningMixin:
    """The solver and problem of a fit, planned before any pass."""

    def _with_categorical_blocks(self, data, plan):
        """``data`` with a table's features as categorical blocks (numeric columns and
        level codes, :class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`) when
        the fit's kernels read them: the solvers of :data:`BLOCK_SOLVERS` (``"auto"``
        chooses among them), with their partitions of rows, on a family with compiled
        loops (:func:`~daskglm.compute.blocked.pointwise_for`) and one coefficient vector;
        ``data`` otherwise, with CSR features."""
        if data.blocks is None or (self.solver != "auto" and self.solver not in BLOCK_SOLVERS):
            return data
        options = getattr(plan.solver, "opts", {}) or {}
        if plan.solver_name not in BLOCK_SOLVERS or options.get("sharded") \
                or kept_copies() != "exact" or not loss_of(plan.problem).single_output \
                or pointwise_for(plan.problem.family) is None:
            return data
        return dataclasses.replace(data, X=data.blocks(), blocks=None)

    def _plan(self, data, init):
        """The fit's :class:`~.plan.FitPlan`: the solver (``"auto"`` chosen for the
        shape of the data) and its problem at unit total weight, checked before any pass;
        the start point; the solver's first evaluation for the validation round."""
        start = self._previous_params(init, data.n_features)
        link = cluster_link() if self.solver == "auto" else IN_PROCESS
        name, problem, solver = self._planned_solver(data.n_features, data.offset is not None,
                                                     _n_rows(data.X), link)
        self._check_inference(problem.penalty)
        first = self._first_evaluation(solver, problem, start)
        final = not self._penalty_scales_with_weight and data.labels is None
        return FitPlan(name, problem, solver, start, first, self._rescalable(), final, link)

    def _planned_solver(self, n_features, has_offset=False, n_samples=1, link=IN_PROCESS):
        """``(name, problem, solver)`` at unit total weight: the solver checked to handle
        the problem (with an offset, when ``has_offset``) and its options; ``"auto"``
        chooses for ``n_samples`` rows, its messages crossing ``link``."""
        problem = self._problem(self._constrained_penalty(1.0), n_features, has_offset)
        if self.solver == "auto":
            name = choose_solver(problem, n_samples, self.tol, worker_threads(), link=link)
        else:
            name = self.solver
        return name, problem, self._solver_of(name, problem)

    def _solver_of(self, name, problem):
        return get_solver(name, problem, tol=self.tol, max_iter=self.max_iter,
                          options=self._solver_options(name, problem))

    #: Whether :meth:`_penalty` depends on the data's total weight (``C``, ``Ridge``'s
    #: summed-loss ``alpha``): the problem is then made again once the weight is known.
    _penalty_scales_with_weight = False

    def _rescalable(self):
        """Whether columns of extreme magnitude may be rescaled: the solution of an
        unpenalised problem does not depend on column scales."""
        return getattr(self._penalty(1.0), "alpha", 0.0) == 0

    def _constrained_penalty(self, total_weight):
        """:meth:`_penalty`, with the constraint ``coef >= 0`` when ``positive`` is set."""
        penalty = self._penalty(total_weight)
        return NonNegative(penalty) if getattr(self, "positive", False) else penalty

    def _problem(self, penalty, n_features, has_offset=False):
        """The problem of this estimator's family with ``penalty``."""
        return Problem(self._family(), penalty, bool(self.fit_intercept), n_features, has_offset)

    def _solver_options(self, name, problem):
        """The solver's options: ``solver_options``, and what ``"auto"`` adds."""
        options = options_dict(self.solver_options, name)
        if self.solver == "auto":
            if self.__dict__.get("_in_grid") and name == "lbfgs":
                # paths side by side share rounds of the whole vector (fit_grid)
                options = {"sharded": False, **(options or {})}
            return _auto_options(name, problem, options)
        return options

    def _configure(self, plan, name, engines):
        """The fit's problem (its penalty scaled to the data's total weight, the family
        of the classes found) and solver: the plan's own when nothing the data hold
        changes them."""
        if plan.final and name == plan.solver_name:
            return plan.problem, plan.solver
        planned = plan.problem
        problem = self._problem(self._constrained_penalty(engines.training.sum_weight),
                                planned.n_features, planned.has_offset)
        return problem, self._solver_of(name, problem)


def _n_rows(X):
    """Rows of ``X`` (1 when a Dask array does not know them yet)."""
    rows = X.shape[0]
    return int(rows) if isinstance(rows, (int, np.integer)) else 1
