"""The shared fit template of the estimators: :class:`_GLMBase`.

``fit`` is one template (:meth:`_GLMBase._fit_template`) of four steps, each handing its
result to the next as a value (:mod:`.plan`): the checked input (:class:`~.plan.FitData`),
the plan made before any pass (:class:`~.plan.FitPlan`: the solver, ``"auto"`` chosen
for the shape of the data, its problem, the start and the first evaluation the
validation round computes), the engines, and the solve, whose result becomes the fitted
attributes in the training data's dtype.  Subclasses supply the family and the penalty
(``_family``, ``_penalty``) and, for classifiers, the labels
(``_labels_for_engine``, ``_prepare_target``, ``_classes_from_engine``).  Also here: the
linear predictor of ``predict`` (block by block for Dask input), the helpers of
``score``, and the docstring pieces the estimators share (``_COMMON_DOC``,
``_FITTED_DOC``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .. import progress
from ..accounting.choice import SHARDED_FEATURES
from ..accounting.links import IN_PROCESS
from ..backend import array_module, from_host, is_device
from ..compute.blocked import pointwise_for
from ..compute.kernels import as_csr_or_dense, linear_predictor
from ..compute.losses import loss_of
from ..compute.summaries import MISSING_HINT, all_finite
from ..engine import is_dask, make_engine
from ..engine.cache import kept_copies
from ..engine.distributed import active_client
from ..engine.driver_passes import add_to, collecting, compute_pass, records_driver_passes
from ..model.families import Family
from ..model.families import StartAtTypicalMean as _StartAtTypicalMean
from ..model.penalties import NonNegative
from ..solvers import SOLVERS, Problem, get_solver
from ..solvers.base import DEFAULT_MAX_ITER, SolverResult
from ..solvers.options import options_dict
from .auto_choice import (
    auto_choice,
    choice_reason,
    choose_solver,
    cluster_link,
    solver_after_validation,
    worker_threads,
)
from .categorical import (
    BLOCK_SOLVERS,
    check_missing,
    encoded_array,
    is_table,
    is_table_with_categories,
    read_table,
)
from .dask_ml_params import with_dask_ml_parameters
from .inference import (
    _check_offset,
    _InferenceMixin,
    _start_intercept,
    _target_moments,
)
from .plan import FitData, FitEngines, FitPlan
from .robust import checked_groups
from .validation import (
    _check_dask_matrix,
    _check_dask_vector,
    _check_feature_names_match,
    _check_has_rows,
    _check_numeric_target,
    _dask_frame_to_array,
    _reject_datetimes,
)
from .weight_kinds import check_weights_kind

logger = logging.getLogger("daskglm")


def _auto_options(name, problem, options):
    """``solver_options`` with what ``solver="auto"`` adds for ``name``: sharded L-BFGS
    from :data:`~daskglm.accounting.choice.SHARDED_FEATURES` features on, for the problems
    it takes, unless the options say otherwise."""
    options = dict(options or {})
    if name == "lbfgs" and problem.n_features >= SHARDED_FEATURES \
            and not problem.features() & SOLVERS["lbfgs"].NOT_SHARDED:
        options.setdefault("sharded", True)
    return options


class _GLMBase(_InferenceMixin, BaseEstimator):
    """Shared machinery: validation, engine, solver, fitted attributes, prediction."""

    _classifier = False

    # subclass hooks ------------------------------------------------------------------
    def _family(self) -> Family:
        raise NotImplementedError

    def _penalty(self, total_weight):
        """The penalty on the mean-loss scale, given the total sample weight."""
        raise NotImplementedError

    # fitting -------------------------------------------------------------------------
    def _check_params(self):
        _check_numbers_are_not_text(self)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}.")
        if self.solver != "auto" and self.solver not in SOLVERS:
            raise ValueError(f"Unknown solver {self.solver!r}; choose 'auto' or one of {sorted(SOLVERS)}.")
        options_dict(self.solver_options)  # a dict, typed options or None
        check_missing(getattr(self, "missing", "error"))
        if self.cache not in ("auto", "memory", "none"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {self.cache!r}.")
        if not isinstance(getattr(self, "positive", False), (bool, np.bool_)):
            raise ValueError(f"positive must be True or False; got {self.positive!r}.")

    def _validate_input(self, X, y, sample_weight):
        """Cheap checks that need no pass over the data; NaN/inf come in the engine's round."""
        X, y, sample_weight, _ = self._checked_input(X, y, sample_weight)
        self._fit_dtype = _coef_dtype(X)
        return X, y, sample_weight

    def _checked_input(self, X, y, sample_weight):
        """The checked ``(X, y, sample_weight)``, and for a table with categorical columns
        a function making its features as categorical blocks (None otherwise)."""
        _reject_datetimes(X)
        missing = getattr(self, "missing", "error")
        encoding = means = blocks = None
        if is_table_with_categories(X) or (missing == "mean" and is_table(X)):
            encoding, lengths, kept = read_table(X, drop_first=not self._penalised(),
                                                 missing=missing,
                                                 cache=getattr(self, "cache", "auto"),
                                                 client=active_client())
            if encoding.levels:
                blocks = functools.partial(encoded_array, X, encoding, lengths=lengths,
                                           layout="blocks", kept=kept)
            X = encoded_array(X, encoding, compute=compute_pass, lengths=lengths, kept=kept)
        elif missing == "mean":
            X, means = _filled_with_means(X)
        X, y, sample_weight = self._checked_arrays(X, y, sample_weight)
        for name in ("table_encoding_", "feature_names_out_", "column_means_", "formula_",
                     "formula_design_"):
            self.__dict__.pop(name, None)
        if means is not None:
            self.column_means_ = means
        if encoding is not None:
            self.table_encoding_ = encoding
            self.feature_names_in_ = np.asarray(encoding.columns, dtype=object)
            self.n_features_in_ = len(encoding.columns)
            self.feature_names_out_ = encoding.feature_names_out
        return X, y, sample_weight, blocks

    @classmethod
    def from_formula(cls, formula, data, *, sample_weight=None, offset=None, exposure=None,
                     groups=None, weights_kind=None, **params):
        """Fit ``cls(**params)`` to the table ``data`` as ``formula`` describes it
        (``"claims ~ C(region) + age + np.log(density)"``, through formulaic; see
        :mod:`daskglm.estimators.formulas`).

        The formula's intercept is ``fit_intercept``; its right-hand side is evaluated per
        partition, with every categorical variable's levels found first, into CSR
        features named in ``feature_names_out_``.  ``predict`` and ``score`` then take
        tables with the formula's columns.  With ``missing="mean"`` among ``params``, the
        variables' missing values are filled before the formula is evaluated (numeric
        ones with their means, categorical ones with a level of their own).

        Parameters
        ----------
        formula : str
        data : pandas.DataFrame or dask.dataframe.DataFrame
        sample_weight, offset, exposure, groups : str, array-like or None
            As ``fit`` takes them; a string names a column of ``data`` (a list of two
            strings, two columns of ``groups``).
        weights_kind : {"frequency", "analytic", "trials"}, optional
            As ``fit`` takes it.
        **params
            The estimator's parameters (``family=``, ``alpha=``, ...); not
            ``fit_intercept``, which the formula sets.

        Returns
        -------
        estimator
            Fitted; ``formula_`` holds the formula.
        """
        from .formulas import design, name_features

        if "fit_intercept" in params:
            raise ValueError("The formula sets the intercept ('- 1' drops it); do not pass "
                             "fit_intercept.")
        estimator = cls(**params)
        missing = getattr(estimator, "missing", "error")
        with collecting() as passes:
            built = design(formula, data, full_rank=not estimator._penalised(),
                           compute=compute_pass, missing=missing)
            X = built.features(data, compute=compute_pass)
            y = data[built.target]
        estimator.set_params(fit_intercept=built.intercept)
        extra = {name: data[value] if _names_columns(value) else value
                 for name, value in (("sample_weight", sample_weight), ("offset", offset),
                                     ("exposure", exposure), ("groups", groups))
                 if value is not None}
        if weights_kind is not None:
            extra["weights_kind"] = weights_kind
        if missing == "mean":  # the design filled the variables: the features have no gaps
            estimator.set_params(missing="error")
        try:
            estimator.fit(X, y, **extra)
        finally:
            if missing == "mean":
                estimator.set_params(missing=missing)
        add_to(estimator.comm_, passes)
        estimator.formula_ = formula
        estimator.formula_design_ = built
        name_features(estimator, built)
        return estimator

    def _penalised(self):
        """Whether the fit's penalty is not zero (a table's categorical columns then keep
        every level)."""
        try:
            penalty = self._penalty(1.0)
        except AttributeError:  # a cross-validated path: every fit on it is penalised
            return True
        return bool(np.any(np.asarray(getattr(penalty, "alpha", 0.0)) > 0))

    def _checked_arrays(self, X, y, sample_weight):
        if is_dask(X) or is_dask(y) or is_dask(sample_weight):
            X, names = _dask_frame_to_array(X) if is_dask(X) else (X, None)
            y, _ = _dask_frame_to_array(y) if is_dask(y) else (y, None)
            if not is_dask(X):
                X = validate_data(self, X, reset=True, accept_sparse=False,
                                  dtype=[np.float64, np.float32], ensure_all_finite=True)
            else:
                _check_dask_matrix(X)
                _check_has_rows(X)
                self.n_features_in_ = int(X.shape[1])
                if names is not None and all(isinstance(n, str) for n in names):
                    self.feature_names_in_ = names
                elif hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            if is_dask(y):
                y = _check_dask_vector(y, "y", X.shape[0], numeric=not self._classifier)
            else:
                y = np.asarray(y)
                if not self._classifier:
                    _check_numeric_target(y, self)
            if sample_weight is not None:
                if is_dask(sample_weight):
                    sample_weight = _check_dask_vector(_dask_frame_to_array(sample_weight)[0],
                                                       "sample_weight", X.shape[0])
                else:
                    sample_weight = np.asarray(sample_weight, dtype=np.float64)
                    if sample_weight.shape != (X.shape[0],):
                        raise ValueError(
                            f"sample_weight.shape == {sample_weight.shape}, expected ({X.shape[0]},)!"
                        )
            return X, y, sample_weight
        if not self._classifier:
            _check_numeric_target(np.asarray(y) if not hasattr(y, "dtype") else y, self)
        try:
            X, y = validate_data(
                self, X, y, reset=True, accept_sparse=["csr", "csc", "coo"],
                dtype=[np.float64, np.float32], y_numeric=not self._classifier,
                multi_output=False,
            )
        except ValueError as exc:
            if str(exc).startswith("Input X contains NaN") and not sp.issparse(X):
                raise ValueError(f"{exc} {MISSING_HINT}") from exc
            raise
        if hasattr(X, "tocsr"):
            X = X.tocsr()
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        return X, y, sample_weight

    def _weigh_samples(self, y, sample_weight, labels=None):
        """Hook for weights that depend on the (encoded) target, e.g. class weights;
        with ``labels`` (a :class:`~.plan.LabelRequest`) the engine weighs the rows."""
        return sample_weight

    def _prepare_target(self, y):
        """Hook for classifiers to encode labels; regressors check the family's support."""
        if not is_dask(y):
            self._family().check_target(y)
        return y

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
            means = _target_moments(engine, problem.family, getattr(self, "inference", False))
            params0 = _start_params(problem, means, plan.start, scale)
            params0 = self._start_on_kept_part(plan, name, problem, solver, engine, params0)
            if data.offset is None:
                self._first_evaluation_from_classes(engine, problem, solver, params0)
            with progress.watch(f"{type(self).__name__}({name})", self.max_iter, self.verbose):
                result = _solve(solver, problem, engine, params0, self._converged_means_optimum)
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
        self._finish_fit(name, result)
        return self

    def _fit_data(self, X, y, sample_weight, offset, exposure, init=None, held_out=None,
                  labels=None, groups=None, weights_kind=None):
        """The checked input of one fit: cheap checks that need no pass over the data
        (NaN and infinity are found in the engine's validation round)."""
        weights_kind = check_weights_kind(weights_kind, self._family(), self._classifier)
        X, y, sample_weight, blocks = self._checked_input(X, y, sample_weight)
        self._fit_dtype = _coef_dtype(X)
        offset = _check_offset(self, offset, exposure, X, self._family())
        groups = checked_groups(self, groups, X.shape[0])
        if labels is None:
            labels = self._labels_for_engine(y, init)
        if labels is None:
            y = self._prepare_target(y)
        family = self._family()  # of the classes found on the driver
        if offset is not None and not getattr(family, "takes_offset", True):
            raise ValueError(f"The {family.name} model takes no offset.")
        sample_weight = self._weigh_samples(y, sample_weight, labels)
        return FitData(X, y, sample_weight, offset, family, _coef_dtype(X), labels, held_out,
                       blocks, groups, weights_kind)

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

    def _labels_for_engine(self, y, init):
        """The labels whose classes the validation round finds (classifiers), else None:
        regressors' targets are checked and prepared on the driver."""
        return None

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

    def _first_evaluation(self, solver, problem, start):
        """The solver's first evaluation, for the validation round to compute in the same
        read of the data, when its start point is known before that read: zero (or the
        family's own start intercept), or ``start`` (the previous fit's or
        ``coef_init``'s parameters).  None when the start needs the data (the families
        that start the intercept at the mean target) or the solver's first round cannot
        be shared."""
        params0 = _start_params(problem, None, start, None)
        return None if params0 is None else solver.first_evaluation(problem, params0)

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

    def _record_fit_in_scale(self, problem, result, scale, dtype):
        """The fitted attributes in ``dtype``, the coefficients mapped back from the
        engine's column scale."""
        if scale is not None:
            result.params = np.array(result.params, dtype=float)
            n_coef = _n_coef(problem)
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

    def _previous_params(self, init, n_features):
        """The fitted parameters to start from with ``warm_start``, else None."""
        if not self.warm_start or not hasattr(self, "coef_"):
            return None
        coef = np.ravel(_dense(self.coef_)).astype(np.float64)
        if self.fit_intercept:
            return np.append(coef, float(np.ravel(self.intercept_)[0]))
        return coef

    def _rescalable(self):
        """Whether columns of extreme magnitude may be rescaled: the solution of an
        unpenalised problem does not depend on column scales."""
        return getattr(self._penalty(1.0), "alpha", 0.0) == 0

    def _cast_fitted(self, dtype=None):
        """Coefficients in the dtype of the training data (float32 stays float32)."""
        dtype = self._fit_dtype = np.dtype(self._fit_dtype if dtype is None else dtype)
        self.coef_ = np.asarray(self.coef_, dtype=dtype)
        if isinstance(self.intercept_, np.ndarray):
            self.intercept_ = self.intercept_.astype(dtype)
        else:
            self.intercept_ = dtype.type(self.intercept_)

    def _constrained_penalty(self, total_weight):
        """:meth:`_penalty`, with the constraint ``coef >= 0`` when ``positive`` is set."""
        penalty = self._penalty(total_weight)
        return NonNegative(penalty) if getattr(self, "positive", False) else penalty

    def _start_on_kept_part(self, plan, name, problem, solver, engine, params0):
        """With ``solver="auto"`` on data partly kept in memory and partly read from their
        source in every round (``cache_ == "partial"``), start from the same solver's
        solution on the kept partitions alone: it costs no read of the source, and the
        fit on all the data then needs fewer rounds, each a read of the source.  The
        kept part's rounds go to the ledger (no bytes read) and the start to its
        choices.  ``params0`` otherwise, and for a start given (``warm_start``,
        ``coef_init``), the normal equations (one round whatever the start) and the
        multinomial model."""
        if self.solver != "auto" or engine.cache != "partial" or plan.start is not None \
                or params0 is None or name == "normal" or not loss_of(problem).single_output:
            return params0
        kept = engine.kept_part(problem.family)
        if kept is None:
            return params0
        try:
            found = _solve(solver, problem, kept, params0)
        finally:
            kept.close()
        engine.ledger.note_choice(
            "start", "kept part",
            f"{name!r} solved on the {kept.n_samples} rows kept in memory first "
            f"({found.n_iter} iterations, no read of the source), then on all "
            f"{engine.n_samples} rows from that solution")
        return np.asarray(found.params, dtype=float)

    def _problem(self, penalty, n_features, has_offset=False):
        """The problem of this estimator's family with ``penalty``."""
        return Problem(self._family(), penalty, bool(self.fit_intercept), n_features, has_offset)

    def _solver_options(self, name, problem):
        """The solver's options: ``solver_options``, and what ``"auto"`` adds."""
        options = options_dict(self.solver_options, name)
        if self.solver == "auto":
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
                                       data.offset, plan.first, data.labels, plan.rescale))

    def _engine(self, X, y, sample_weight, family, offset=None, first=None, labels=None,
                rescale=None):
        """The validated engine of a fit, honouring the ``cache`` policy; ``first`` (a
        solver's :class:`~daskglm.solvers.base.FirstEvaluation`) runs in the validation
        round unless that round collects the class labels (``labels``, a
        :class:`~.plan.LabelRequest`)."""
        summary = False if labels is None else labels.summary
        if summary and offset is None and _follows_from_class_sums(first, X):
            # the first evaluation follows from the classes' column sums
            # (:meth:`_first_evaluation_from_classes`)
            summary = "moments"
        engine = make_engine(X, y, sample_weight, family=family, cache=self.cache,
                             labels=summary,
                             rescale=self._rescalable() if rescale is None else rescale,
                             offset=offset, first=None if summary else first)
        self.cache_ = engine.cache
        logger.info("%s: cache=%r -> %r (%s)", type(self).__name__, self.cache, engine.cache,
                    engine.cache_reason)
        return engine

    def _first_evaluation_from_classes(self, engine, problem, solver, params0):
        """Hand the solver's first evaluation to the engine as computed, from the per-class
        column sums of the validation round, when that round found the classes (so could
        not run the evaluation) and the coefficients start at zero
        (:meth:`~daskglm.compute.losses.Loss.evaluation_from_class_counts`)."""
        counts = engine.label_counts
        if engine.first_evaluation is not None or counts is None or not counts.has_moments():
            return
        first = solver.first_evaluation(problem, params0)
        if first is None or np.any(problem.coef(params0)):
            return
        if first.loss is None or first.hessian:
            return
        class_weights = None
        if getattr(self, "class_weight", None) is not None:
            class_weights = self._class_weights_of_counts(counts)
        stats = first.loss.evaluation_from_class_counts(counts, class_weights, params0)
        if stats is None:
            return
        engine.keep_first_evaluation(first, stats)

    def _set_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept

    # prediction ----------------------------------------------------------------------
    def _coef_vector(self):
        coef = np.ravel(_dense(self.coef_))
        return coef, coef.dtype.type(np.ravel(self.intercept_)[0])

    def _prediction_input(self, X):
        """``X`` checked against the fit: a Dask array in one column chunk, or in memory."""
        check_is_fitted(self)
        encoding = getattr(self, "table_encoding_", None)
        if encoding is not None:
            return self._encoded_table(X, encoding)
        built = getattr(self, "formula_design_", None)
        if built is not None:
            if not is_table(X):
                raise ValueError(f"{type(self).__name__} was fitted from a formula; predict "
                                 f"takes a table with its columns {list(built.variables)} "
                                 f"(got {type(X).__name__}).")
            return built.features(X, dtype=self._fit_dtype)
        means = getattr(self, "column_means_", None)
        if means is not None:
            X = _filled_with_means(X, means)[0]
        if is_dask(X):
            X, names = _dask_frame_to_array(X)
            _check_feature_names_match(self, names)
            _check_dask_matrix(X)
            _check_has_rows(X)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input."
                )
            return X.rechunk({1: -1}) if X.numblocks[1] != 1 else X
        _reject_datetimes(X)
        return validate_data(self, X, reset=False, accept_sparse=["csr", "csc", "coo"],
                             dtype=[np.float64, np.float32])

    def _encoded_table(self, X, encoding):
        """A table like the one fitted, encoded as at fit (:mod:`.categorical`)."""
        if not (hasattr(X, "columns") and hasattr(X, "dtypes")):
            raise ValueError(f"{type(self).__name__} was fitted on a table with categorical "
                             f"columns; predict takes such a table (got {type(X).__name__}).")
        _check_feature_names_match(self, np.asarray([str(c) for c in X.columns], dtype=object))
        return encoded_array(X, encoding, dtype=self._fit_dtype)

    def _linear_predictor(self, X):
        X = self._prediction_input(X)
        coef, intercept = self._coef_vector()
        if is_dask(X):
            return X.map_blocks(_block_predictor, coef, intercept, drop_axis=1,
                                dtype=coef.dtype, meta=_dense_meta(X, 1, coef.dtype))
        return np.asarray(X @ coef).ravel() + intercept

    def _linear_predictors(self, X):
        """``X @ coef_.T + intercept_``, one column per row of a 2-D ``coef_``."""
        X = self._prediction_input(X)
        coef = _dense(self.coef_)
        intercept = np.asarray(self.intercept_, dtype=coef.dtype)
        if is_dask(X):
            return X.map_blocks(_block_predictors, coef, intercept,
                                chunks=(X.chunks[0], (coef.shape[0],)), dtype=coef.dtype,
                                meta=_dense_meta(X, 2, coef.dtype))
        return np.asarray(X @ coef.T) + intercept


def _follows_from_class_sums(first, X):
    """Whether ``first`` (a solver's first evaluation, made before the classes are known:
    for two classes, or None) is a loss and gradient at zero coefficients, which the
    validation round's per-class column sums give without a round of their own, for two
    classes or more (:meth:`_GLMBase._first_evaluation_from_classes`), on dense numpy
    ``X`` (where those sums share the validation's one compiled read)."""
    if first is None or first.loss is None or first.hessian or not first.loss.single_output:
        return False
    coef = first.params[:-1] if first.loss.fit_intercept else first.params
    meta = X._meta if is_dask(X) else X
    return type(meta) is np.ndarray and meta.dtype in (np.float32, np.float64) \
        and not np.any(coef)


def _coef_dtype(X):
    """The dtype of the coefficients fitted to ``X``: float32 stays float32."""
    return np.dtype(np.float32 if X.dtype == np.float32 else np.float64)


def _dense(coef):
    """``coef`` as an ndarray, also after ``sparsify()`` made it a sparse matrix."""
    return coef.toarray() if sp.issparse(coef) else np.asarray(coef)


def _names_columns(value):
    """Whether ``value`` names a column of a table, or a list of them."""
    return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                      and all(isinstance(v, str) for v in value))


def _n_rows(X):
    """Rows of ``X`` (1 when a Dask array does not know them yet)."""
    rows = X.shape[0]
    return int(rows) if isinstance(rows, (int, np.integer)) else 1


def _solve(solver, problem, engine, params0, judged=False):
    """``solver.solve`` (``solve_to_optimum`` when ``judged``: ``converged`` then means the
    optimum), except that ``max_iter=0`` returns the start point unconverged without
    reading the data (scikit-learn's ``max_iter=0``)."""
    if solver.max_iter == 0:
        return SolverResult(np.asarray(params0, dtype=float), 0, False, [],
                            "max_iter=0: no iteration, the start point")
    if judged:
        return solver.solve_to_optimum(problem, engine, params0)
    return solver.solve(problem, engine, params0)


def _start_params(problem, means, previous, scale):
    """The parameters a fit starts from: ``previous`` (warm start, ``coef_init``) mapped
    to the engine's column ``scale``, else zero coefficients and the start intercept (the
    family's own, or ``g(mean target) - mean offset``, :func:`_start_intercept`).  With
    ``means`` None for a family that starts from the mean target: None (not known yet)."""
    params0 = np.zeros(problem.n_params)
    if previous is not None and previous.shape == params0.shape:
        params0 = previous.copy()
        if scale is not None:
            n_coef = _n_coef(problem)
            params0[:n_coef] /= np.tile(scale, n_coef // problem.n_features)
        return params0
    if problem.fit_intercept:
        if means is None and isinstance(problem.family, _StartAtTypicalMean):
            return None
        params0[-1] = _start_intercept(problem.family, means)
    return params0


def _n_coef(problem):
    """Number of penalised parameters of ``problem`` (coefficients of every class)."""
    return getattr(problem, "n_coef", problem.n_features)


# prediction and scoring helpers ---------------------------------------------------------
def _dense_meta(X, ndim, dtype):
    """An empty dense array of the library of ``X``'s blocks (CuPy for CuPy or cupyx
    blocks, numpy otherwise): the type of the predictions of those blocks."""
    return array_module(X._meta).empty((0,) * ndim, dtype=dtype)


#: Parameters that take numbers (or arrays of them), never text.
_NUMERIC_PARAMS = ("alpha", "C", "tol", "l1_ratio", "eta0", "power_t", "epsilon",
                   "power", "n_alphas", "eps", "Cs", "alphas", "l1_ratios")


def _check_numbers_are_not_text(estimator):
    """A ValueError naming the parameter for a number given as text (as from a
    configuration file), before it fails inside the arithmetic."""
    for name in _NUMERIC_PARAMS:
        value = getattr(estimator, name, None)
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{name} must be a number; got {value!r}.")


def _apply_rowwise(fn, values):
    """``fn(values)`` in ``values``' dtype (float32 stays float32, as in scikit-learn),
    lazily block by block for a Dask array."""
    if is_dask(values):  # the blocks' own type (CuPy's too), not one inferred from fn
        return values.map_blocks(_in_dtype_of_input, fn, dtype=values.dtype,
                                 meta=values._meta)
    return _in_dtype_of_input(values, fn)


def _in_dtype_of_input(values, fn):
    result = fn(values)
    return result if result.dtype == values.dtype else result.astype(values.dtype)


def _block_predictor(X_block, coef, intercept):
    """The linear predictor of one row block; NaN or infinity in the block is an error,
    found from the predictor itself (no pass over ``X`` of its own)."""
    X_block = as_csr_or_dense(X_block)
    eta = linear_predictor(X_block, np.append(coef, intercept), True).astype(coef.dtype)
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta


def _block_predictors(X_block, coef, intercept):
    """The linear predictors ``X_block @ coef.T + intercept`` of one row block, with the
    NaN/infinity check of :func:`_block_predictor`."""
    X_block = as_csr_or_dense(X_block)
    product = X_block @ from_host(coef.T, X_block)
    if not is_device(product):
        product = np.asarray(product)
    eta = (product + from_host(intercept, X_block)).astype(coef.dtype)
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta


def _caller_level():
    """The ``stacklevel`` that points a warning raised by this function's caller at the
    first frame outside daskglm (the user's line, however many of the package's frames,
    decorators included, lie between)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _filled_with_means(X, means=None):
    """``(X with each missing value replaced by its column's mean, the means)``; the means
    are found (one pass over Dask ``X``, a ``driver_pass``) unless given.  ``X`` itself is
    never modified."""
    if sp.issparse(X) or (is_dask(X) and sp.issparse(getattr(X, "_meta", None))):
        raise ValueError("missing='mean' takes dense X (or a table); sparse X stores no "
                         "missing values to fill.")
    if is_dask(X):
        if means is None:
            means = compute_pass(_nanmean(X))[0]
            _check_means(means)
        return X.map_blocks(_fill_block, np.asarray(means), dtype=X.dtype), np.asarray(means)
    X = np.asarray(X)
    if means is None:
        with np.errstate(all="ignore"):
            means = np.nanmean(np.asarray(X, dtype=np.float64), axis=0)
        _check_means(means)
    return _fill_block(X, means), np.asarray(means)


def _check_means(means):
    empty = np.flatnonzero(~np.isfinite(means))
    if empty.size:
        raise ValueError(f"Column(s) {empty.tolist()} of X have no values to take a mean of.")


def _nanmean(X):
    import dask.array as da

    with np.errstate(all="ignore"):
        return da.nanmean(X.astype(np.float64), axis=0)


def _fill_block(block, means):
    missing = np.isnan(block)
    if not missing.any():
        return block
    return np.where(missing, np.asarray(means, dtype=block.dtype), block)


def _to_float(value):
    if is_dask(value):
        value = value.compute()
    return float(value)


def _weighted_mean(values, weight):
    if weight is None:
        return values.mean()
    return (values * weight).sum() / weight.sum()


# docstring pieces shared by the estimators -----------------------------------------------
_COMMON_DOC = """
    solver : {"auto", "normal", "gd", "lbfgs", "newton", "proximal", "admm", "averaging", \
"sgd", "async", "gossip"}, default="auto"
        Optimisation method.  ``"auto"`` runs the method of least predicted time among
        those that handle the problem (:func:`~daskglm.accounting.choice.choose_method`,
        from ``n``, ``d``, family, penalty, ``tol`` and the cluster's network, measured
        once per client; ``solver_choice_`` records the figures): the normal equations for the
        Gaussian family with no or an L2 penalty, Newton's method for an L2-penalised
        model with an exact Hessian (canonical link, or the log link of the Gamma,
        negative binomial and Tweedie with power in [1, 2]) and few features, L-BFGS
        for other smooth problems (on column shards, ``{"sharded": True}``, from 2^18
        features on) and proximal gradient for L1 and elastic-net penalties; ``solver_``
        names the pick.  ``"async"`` (parameter-server SGD) and ``"gossip"``
        (decentralised SGD) count ``max_iter`` in epochs and stop by SGD's rule on a
        sampled objective; for ``"sgd"``, ``"async"`` and ``"gossip"`` one exact
        gradient round then judges that stop, and ``converged_`` is True only when it
        meets ``tol`` (a stop at the noise floor gives a ConvergenceWarning).  A solver that cannot handle the problem raises a ValueError
        naming the solvers that can.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept.
    tol : float, default=1e-4
        Stop when the largest entry of the gradient of the objective (mean loss +
        penalty) is at most ``tol`` (its distance to the subdifferential for L1 and
        elastic-net penalties; the local solves' gradients for ``"averaging"``), each
        entry of a column whose root mean square is below 1 first divided by it: a rare
        column's gradient is small however far its coefficient is from the optimum.
        Never looser than scikit-learn's test; ``"admm"`` meets it at its consensus
        point, compressed and deadline gradient descent with one exact round.
    max_iter : int, default=100
        Most iterations of the solver.
    solver_options : dict or SolverOptions, optional
        Method-specific options, e.g. ``{"memory": 20}`` for ``"lbfgs"``.
    missing : {"error", "mean"}, default="error"
        Missing values in ``X``: ``"error"`` refuses them; ``"mean"`` fills each numeric
        column's with its mean at fit (one pass over Dask data, kept in ``column_means_``,
        the table encoding or the formula's design for prediction) and gives a table's
        (or a formula's) categorical columns a level of their own, ``"(missing)"``.
    cache : {"auto", "memory", "none"}, default="auto"
        For Dask input: ``"memory"`` reads the data once and keeps the partitions on the
        workers; ``"none"`` reads them from their source (e.g. zarr) in every round, with
        memory bounded by about one partition per worker thread; ``"auto"`` keeps them
        when they take at most half of the free worker memory, and otherwise keeps the
        leading partitions that fit in that half and streams the others (``cache_`` is
        then ``"partial"``).  The choice and its reason are logged; bytes read from
        storage are in ``comm_.bytes_read``.  With Dask's config key
        ``daskglm.kept-copies`` set to ``"float32"``, data that do not all fit keep
        float32 copies of a dense float64 ``X`` instead, up to twice as many rows in
        memory (``comm_.choices["kept copies"]``); the fit is then that of ``X`` rounded
        to float32 on those rows.
    verbose : int, default=0
        ``1`` or more shows a progress bar (objective and gradient per iteration) and logs
        every iteration on the ``daskglm`` logger at INFO level.
    warm_start : bool, default=False
        Start ``fit`` from the coefficients of the previous fit instead of zero.
"""

_POSITIVE_DOC = """    positive : bool, default=False
        Constrain the coefficients (not the intercept) to be non-negative, as
        scikit-learn's ``positive=True``.  Solved by the normal equations (non-negative
        least squares on the Gram matrix, still one round), ``"lbfgs"`` (L-BFGS-B with
        bounds), ``"proximal"`` and ``"admm"`` (the proximal step clips at zero);
        ``solver="auto"`` picks the normal equations for least squares and L-BFGS
        otherwise, and the other solvers raise a ValueError.
"""


_FITTED_DOC = """
    Attributes
    ----------
    coef_ : ndarray
        Coefficients, shaped as in scikit-learn.
    intercept_ : float or ndarray
        Intercept (0.0 when ``fit_intercept=False``).
    n_iter_ : int
        Iterations run by the solver.
    converged_ : bool
        Whether the solver met its tolerance (a ConvergenceWarning is raised otherwise).
    history_ : list of dict
        One entry per iteration: ``objective``, ``grad_norm``, ``step``, ``seconds``,
        ``rounds``.
    cache_ : {"memory", "none"}
        Whether the fit kept the data in memory or streamed them from their source.
    comm_ : CommReport
        Every engine round of the fit: kind, tasks, bytes (modelled and measured),
        seconds, time spent waiting for the slowest partition (see :mod:`daskglm.accounting.ledger`).
    solver_ : str
        The solver that ran (the one ``solver="auto"`` chose).
    solver_choice_ : dict
        Only with ``solver="auto"``: the ``solver`` chosen, the network figures the
        choice priced messages on (``link``: latency, bandwidth, worker processes and
        where the figures come from; set ``daskglm.link`` in the Dask configuration to
        fix them), every candidate's ``predicted_seconds`` and ``predicted_rounds``, and
        the fit's ``measured_seconds``.
    solver_options_ : dict
        Every option of that solver as it ran: ``solver_options`` over the defaults, with
        the values chosen during the fit in place of ``"auto"`` (the reasons are in
        ``comm_.choices``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""
