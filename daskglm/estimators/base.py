"""The shared fit template of the estimators: :class:`_GLMBase`.

``fit`` is one template (:meth:`_GLMBase._fit_template`) of four steps, each handing its
result to the next as a value (:mod:`.plan`): the checked input (:class:`~.plan.FitData`,
:mod:`.fit_input`), the plan made before any pass (:class:`~.plan.FitPlan`,
:mod:`.planning`: the solver, ``"auto"`` chosen for the shape of the data, its problem,
the start (:mod:`.start_point`) and the first evaluation the validation round computes),
the engines, and the solve (:func:`daskglm.fitting.solve.solve`), whose result becomes the
fitted attributes in the training data's dtype.  Subclasses supply the family and the
penalty (``_family``, ``_penalty``) and, for classifiers, the labels
(``_labels_for_engine``, ``_prepare_target``, ``_classes_from_engine``).  Prediction is
:mod:`.linear_predictors`, ``from_formula`` :mod:`.formula_fit`, the docstring pieces
the estimators share :mod:`.docstrings`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

# The names imported "as" themselves are imported from here by sgd.py, sgd_classifier.py
# and sgd_one_vs_rest.py; they live in the modules named.
from .. import progress
from ..engine import make_engine
from ..engine.distributed import active_client
from ..engine.driver_passes import records_driver_passes
from ..fitting.solve import solve
from ..model.families import Family
from ..solvers import SOLVERS
from ..solvers.base import DEFAULT_MAX_ITER
from ..solvers.options import options_dict
from .auto_choice import auto_choice, choice_reason, solver_after_validation
from .dask_ml_params import with_dask_ml_parameters
from .fit_input import FitInputMixin
from .fit_input import check_numbers_are_not_text as check_numbers_are_not_text
from .formula_fit import FormulaMixin
from .inference import InferenceMixin
from .linear_predictors import LinearPredictorMixin
from .linear_predictors import dense_coef as dense_coef
from .linear_predictors import to_float as to_float
from .linear_predictors import weighted_mean as weighted_mean
from .plan import FitEngines
from .planning import PlanningMixin
from .start_point import (
    StartMixin,
    follows_from_class_sums,
    mean_target_and_offset,
    n_coef_of,
    start_params,
)

logger = logging.getLogger("daskglm")


class _GLMBase(FormulaMixin, FitInputMixin, PlanningMixin, StartMixin,
               LinearPredictorMixin, InferenceMixin, BaseEstimator):
    """The fit template over its parts: the input checked (:class:`FitInputMixin`), the
    plan (:class:`PlanningMixin`), the start (:class:`StartMixin`), the engine, the
    solve and the fitted attributes; prediction (:class:`LinearPredictorMixin`) and
    inference (:class:`~.inference.InferenceMixin`)."""

    _classifier = False

    # subclass hooks ------------------------------------------------------------------
    def _family(self) -> Family:
        raise NotImplementedError

    def _penalty(self, total_weight):
        """The penalty on the mean-loss scale, given the total sample weight."""
        raise NotImplementedError

    @records_driver_passes
    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, groups=None, *,
            weights_kind=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.
        offset : array-like or Dask array of shape (n_samples,), optional
            A known term added to each row's linear predictor, ``eta = X coef + intercept
            + offset`` (statsmodels' ``offset``); it travels with the rows.  Fits with an
            offset use the solvers that handle ``Feature.OFFSET``: ``"lbfgs"`` (the default
            for smooth problems), ``"newton"``, ``"gd"`` and ``"proximal"``.
        exposure : array-like or Dask array of shape (n_samples,), optional
            Positive exposures for a log link: ``offset = log(exposure)``.
        groups : array-like, Dask array or Series of shape (n_samples,) or (n_samples, 2), optional
            Each row's cluster (two columns: two-way), for the cluster-robust covariance
            of ``inference=True`` (statsmodels' ``cov_kwds={"groups": ...}``).
        weights_kind : {"frequency", "analytic", "trials"}, optional
            What ``sample_weight`` counts for ``inference=True`` (the fit is the same):
            frequency weights (None), as statsmodels' ``freq_weights``; analytic ones, as
            its ``var_weights`` and ``WLS``; binomial trials, as R's ``cbind`` (see
            :mod:`daskglm.estimators.weight_kinds`).

        Returns
        -------
        self
        """
        return self._fit_template(X, y, sample_weight, offset, exposure, groups=groups,
                                  weights_kind=weights_kind)

    @with_dask_ml_parameters
    def _fit_template(self, X, y, sample_weight=None, offset=None, exposure=None, init=None,
                      held_out=None, labels=None, groups=None, weights_kind=None):
        """The fit: check the parameters and the input (:class:`~.plan.FitData`), plan
        before any pass (:class:`~.plan.FitPlan`), read the data once in the engine's
        validation round, solve, record the fitted attributes.

        ``init`` is ``(coef_init, intercept_init)``; ``held_out`` the rows held out for
        early stopping; ``labels`` a :class:`~.plan.LabelRequest` the caller decided (one
        class of one-vs-rest), else the estimator's own (:meth:`_labels_for_engine`);
        ``weights_kind`` what the weights are to inference
        (:mod:`~daskglm.estimators.weight_kinds`).
        """
        started = time.perf_counter()
        self._check_params()
        data = self._fit_data(X, y, sample_weight, offset, exposure, init, held_out, labels,
                              groups, weights_kind)
        plan = self._plan(data, init)
        data = self._with_categorical_blocks(data, plan)
        with self._open_engines(data, plan) as engines:
            name, result = self._fit_on_engines(data, plan, engines, started)
        self._finish_fit(name, result)
        return self

    def _fit_on_engines(self, data, plan, engines, started):
        """The template's solve on validated engines: the classes found, the problem
        configured (``"auto"`` revised after validation), the start, the solve and the
        fitted attributes.  Returns the solver's name and its result, whose ``params``
        are then on the scale of the data as given.  :func:`~.grid.fit_grid` runs it for
        every model of a grid on one engine."""
        engine = engines.training
        if data.labels is not None:
            self._classes_from_engine(engine, data.labels)
        problem, solver = self._configure(plan, plan.solver_name, engines)
        name = plan.solver_name
        if self.solver == "auto":
            name = solver_after_validation(problem, engine, self.tol, plan.link, name)
            if name != plan.solver_name:
                problem, solver = self._configure(plan, name, engines)
        scale = engine.column_scale
        means = mean_target_and_offset(engine, problem.family,
                                       getattr(self, "inference", False))
        params0 = start_params(problem, means, plan.start, scale)
        params0 = self._start_on_kept_part(plan, name, problem, solver, engine, params0)
        if data.offset is None:
            self._first_evaluation_from_classes(engine, problem, solver, params0)
        with progress.watch(f"{type(self).__name__}({name})", self.max_iter, self.verbose):
            result = solve(solver, problem, engine, params0, self._converged_means_optimum)
        if self.solver == "auto":
            self.solver_choice_ = auto_choice(plan.problem, engine, self.tol,
                                               name, plan.link,
                                               time.perf_counter() - started)
            engine.ledger.note_choice("auto", name, choice_reason(self.solver_choice_))
        params_in_scale = result.params
        self._record_fit_in_scale(problem, result, scale, data.dtype)
        self._fit_statistics(engine, problem, params_in_scale, means,
                             data.offset is not None, data.groups, data.weights_kind)
        self.comm_ = engine.ledger
        self.comm_.method = name
        self.solver_options_ = solver.options_used(self.comm_)
        return name, result

    def _record_fit_in_scale(self, problem, result, scale, dtype):
        """The fitted attributes in ``dtype``, the coefficients mapped back from the
        engine's column scale."""
        if scale is not None:
            result.params = np.array(result.params, dtype=float)
            n_coef = n_coef_of(problem)
            result.params[:n_coef] *= np.tile(scale, n_coef // problem.n_features)
        self._record_fit(problem, result)
        self._cast_fitted(dtype)

    def _finish_fit(self, name, result):
        """The solver's name and a ConvergenceWarning when it stopped short of ``tol``."""
        self.solver_ = name
        if not self.converged_:
            max_iter = DEFAULT_MAX_ITER if self.max_iter is None else self.max_iter
            if result.n_iter >= max_iter:
                advice = f"increase max_iter (it ran all {max_iter} {self._iterations}) or tol"
            else:
                advice = f"stopped after {result.n_iter} of at most {max_iter} {self._iterations}"
            warnings.warn(
                f"The {name} solver did not converge "
                f"({result.message or 'tolerance not reached'}); {advice}.",
                ConvergenceWarning,
                stacklevel=_caller_level(),
            )

    #: What ``max_iter`` counts.
    _iterations = "iterations"

    #: Whether ``converged_`` claims the optimum of the objective (``tol`` is an
    #: optimality test); scikit-learn's SGD estimators stop by its rule instead.
    _converged_means_optimum = True

    def _cast_fitted(self, dtype=None):
        """Coefficients in the dtype of the training data (float32 stays float32)."""
        dtype = self._fit_dtype = np.dtype(self._fit_dtype if dtype is None else dtype)
        self.coef_ = np.asarray(self.coef_, dtype=dtype)
        if isinstance(self.intercept_, np.ndarray):
            self.intercept_ = self.intercept_.astype(dtype)
        else:
            self.intercept_ = dtype.type(self.intercept_)

    def _record_fit(self, problem, result):
        """The fitted attributes from a solver's result."""
        coef, intercept = problem.split(result.params)
        self._set_coef(coef, intercept)
        self.n_iter_ = result.n_iter
        self.converged_ = bool(result.converged)
        self.history_ = result.history

    def _open_engines(self, data, plan):
        """The :class:`~.plan.FitEngines` of a fit: here the training rows' engine."""
        return FitEngines(self._engine(data.X, data.y, data.sample_weight, data.family,
                                       data.offset, plan.first, data.labels, plan.rescale,
                                       plan.solver.reads_row_sample(plan.problem)))

    def _engine(self, X, y, sample_weight, family, offset=None, first=None, labels=None,
                rescale=None, sample_rows=True):
        """The validated engine of a fit, honouring the ``cache`` policy; ``first`` (a
        solver's :class:`~daskglm.solvers.base.FirstEvaluation`) runs in the validation
        round unless that round collects the class labels (``labels``, a
        :class:`~.plan.LabelRequest`), which takes a sample of the rows when
        ``sample_rows`` (:meth:`~daskglm.solvers.base.Solver.reads_row_sample`)."""
        summary = False if labels is None else labels.summary
        if summary and offset is None and follows_from_class_sums(first, X):
            # the first evaluation follows from the classes' column sums
            # (:meth:`_first_evaluation_from_classes`)
            summary = "moments"
        engine = make_engine(X, y, sample_weight, family=family, cache=self.cache,
                             n_partitions=self._in_process_partitions(), labels=summary,
                             rescale=self._rescalable() if rescale is None else rescale,
                             offset=offset, first=None if summary else first,
                             sample_rows=sample_rows)
        self.cache_ = engine.cache
        logger.info("%s: cache=%r -> %r (%s)", type(self).__name__, self.cache, engine.cache,
                    engine.cache_reason)
        return engine

    def _in_process_partitions(self):
        """Row partitions of ``X`` fitted in this process (in memory, or a Dask array's
        chunks once computed): what the solver asks
        (:meth:`~daskglm.solvers.base.Solver.in_process_partitions`), else None (the
        engine's default)."""
        solver = SOLVERS.get(getattr(self, "solver", None))
        if solver is None or active_client() is not None:
            return None
        try:
            options = options_dict(getattr(self, "solver_options", None)) or {}
        except TypeError:  # refused with its reason when the fit reads its options
            return None
        return solver.in_process_partitions(options)

    def _set_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept


def _caller_level():
    """The ``stacklevel`` that points a warning raised by this function's caller at the
    first frame outside daskglm (the user's line, however many of the package's frames,
    decorators included, lie between)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
