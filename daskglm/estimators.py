"""scikit-learn compatible estimators.

Each class maps scikit-learn's objective convention for the class of the same name onto
daskglm's ``mean weighted loss + penalty`` problem, so that the coefficients agree with
scikit-learn's.  ``__init__`` only stores parameters; everything is checked in ``fit``, so
``set_params``, ``clone``, ``Pipeline`` and ``GridSearchCV`` behave as usual.

Data may be numpy arrays, scipy CSR matrices, Dask arrays or Dask DataFrames.  With an
active ``distributed.Client`` the fit runs on its workers; otherwise in this process.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning, UndefinedMetricWarning
from sklearn.utils.fixes import parse_version
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from . import progress
from .backend import array_module, is_device, to_host
from .comm import CommReport
from .engine import is_dask, make_engine, stream_engines
from .families import Binomial, Family, Gaussian, Poisson, get_family
from .kernels import all_finite, as_csr_or_dense, linear_predictor
from .penalties import L1, L2, NoPenalty, make_penalty
from .solvers import SOLVERS, Problem, get_solver

logger = logging.getLogger("daskglm")

__all__ = [
    "GLM", "LinearRegression", "Ridge", "Lasso", "ElasticNet", "LogisticRegression",
    "PoissonRegressor", "SGDRegressor", "SGDClassifier",
]


#: scikit-learn 1.8 deprecated ``LogisticRegression(penalty=...)``: the penalty follows
#: from ``l1_ratio`` (and ``C=inf`` for none).  The defaults follow the installed version.
PENALTY_FROM_L1_RATIO = parse_version(sklearn.__version__) >= parse_version("1.8")


def _choose_solver(problem):
    """The solver ``solver="auto"`` picks: normal equations where they apply, else L-BFGS."""
    for name in ("normal", "lbfgs", "proximal"):
        if name in SOLVERS and SOLVERS[name].unsupported(problem) is None:
            return name
    return "lbfgs"


def _dask_frame_to_array(data):
    """A Dask DataFrame or Series as a Dask array with known chunk sizes, plus column names."""
    names = None
    if hasattr(data, "columns"):
        names = np.asarray(data.columns, dtype=object)
    if hasattr(data, "to_dask_array"):
        if hasattr(data, "optimize"):
            # the partitions the data will really have: a parquet read of few columns, for
            # one, fuses files, so the unoptimised count disagrees with the computed lengths
            data = data.optimize()
        data = data.to_dask_array(lengths=True)
    return data, names


def _reject_datetimes(X):
    """TypeError for datetime or timedelta features, which are not numbers to fit on."""
    dtypes = getattr(X, "dtypes", getattr(X, "dtype", None))  # data frames have dtypes
    if dtypes is None:
        return
    for dtype in np.ravel(np.asarray(dtypes, dtype=object)):
        if getattr(dtype, "kind", "") in ("m", "M"):
            raise TypeError(
                f"X has dtype {dtype}: dates and durations are not features to fit on; "
                "convert them to numbers (e.g. seconds since an origin) first."
            )


def _check_numeric_target(y, estimator):
    """ValueError for targets of strings or other non-numbers given to a regressor."""
    kind = np.dtype(y.dtype).kind if hasattr(y, "dtype") else None
    if kind in ("U", "S", "O", "M", "m") and not (kind == "O" and _all_numbers(y)):
        raise ValueError(
            f"{type(estimator).__name__} needs numeric targets y; got dtype {y.dtype}."
        )


def _all_numbers(y):
    try:
        np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _check_dask_matrix(X):
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead. Reshape your data either "
            "using array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.issubdtype(
        X.dtype, np.complexfloating
    ):
        raise TypeError(f"X must hold real numbers; got dtype {X.dtype}.")
    if X.shape[1] == 0:
        raise ValueError("Found array with 0 feature(s) while a minimum of 1 is required.")


def _check_dask_vector(a, name, n_rows, numeric=True):
    if a.ndim == 2 and a.shape[1] == 1:
        warnings.warn(
            f"A column-vector {name} was passed when a 1d array was expected; it is raveled.",
            DataConversionWarning,
            stacklevel=4,
        )
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{name} should be a 1d array, got an array of shape {a.shape} instead.")
    if a.dtype == bool and numeric:
        a = a.astype(np.float64)
    if numeric and (not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating)):
        raise TypeError(f"{name} must hold real numbers; got dtype {a.dtype}.")
    if not math.isnan(a.shape[0]) and not math.isnan(n_rows) and a.shape[0] != n_rows:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{n_rows}, {a.shape[0]}]"
        )
    return a


class _GLMBase(BaseEstimator):
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
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}.")
        if self.solver != "auto" and self.solver not in SOLVERS:
            raise ValueError(f"Unknown solver {self.solver!r}; choose 'auto' or one of {sorted(SOLVERS)}.")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise TypeError("solver_options must be a dict or None.")
        if self.cache not in ("auto", "memory", "none"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {self.cache!r}.")

    def _validate_input(self, X, y, sample_weight):
        """Cheap checks that need no pass over the data; NaN/inf come in the engine's round."""
        X, y, sample_weight = self._checked_input(X, y, sample_weight)
        self._fit_dtype = np.dtype(np.float32 if X.dtype == np.float32 else np.float64)
        return X, y, sample_weight

    def _checked_input(self, X, y, sample_weight):
        _reject_datetimes(X)
        if is_dask(X) or is_dask(y) or is_dask(sample_weight):
            X, names = _dask_frame_to_array(X) if is_dask(X) else (X, None)
            y, _ = _dask_frame_to_array(y) if is_dask(y) else (y, None)
            if not is_dask(X):
                X = validate_data(self, X, reset=True, accept_sparse=False,
                                  dtype=[np.float64, np.float32], ensure_all_finite=True)
            else:
                _check_dask_matrix(X)
                if X.shape[0] == 0:
                    raise ValueError(
                        f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 "
                        "is required."
                    )
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
                    sample_weight = _check_dask_vector(sample_weight, "sample_weight", X.shape[0])
                else:
                    sample_weight = np.asarray(sample_weight, dtype=np.float64)
                    if sample_weight.shape != (X.shape[0],):
                        raise ValueError(
                            f"sample_weight.shape == {sample_weight.shape}, expected ({X.shape[0]},)!"
                        )
            return X, y, sample_weight
        if not self._classifier:
            _check_numeric_target(np.asarray(y) if not hasattr(y, "dtype") else y, self)
        X, y = validate_data(
            self, X, y, reset=True, accept_sparse=["csr", "csc", "coo"],
            dtype=[np.float64, np.float32], y_numeric=not self._classifier, multi_output=False,
        )
        if hasattr(X, "tocsr"):
            X = X.tocsr()
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        return X, y, sample_weight

    def _prepare_target(self, y):
        """Hook for classifiers to encode labels; regressors check the family's support."""
        if not is_dask(y):
            self._family().check_target(y)
        return y

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """
        self._check_params()
        previous = self._previous_params()
        X, y, sample_weight = self._validate_input(X, y, sample_weight)
        y = self._prepare_target(y)
        n_features = int(X.shape[1])
        name = self._check_solver(n_features)  # before any pass over the data
        with self._engine(X, y, sample_weight, self._family()) as engine:
            problem, solver = self._configure(name, engine.sum_weight, n_features)
            scale = engine.column_scale
            params0 = np.zeros(problem.n_params)
            if problem.fit_intercept:
                # 0 for canonical links; g(typical mean) for others
                params0[-1] = problem.family.start_intercept()
            if previous is not None and previous.shape == params0.shape:
                params0 = previous.copy()
                if scale is not None:
                    params0[:n_features] /= scale
            with progress.watch(f"{type(self).__name__}({name})", self.max_iter, self.verbose):
                result = solver.solve(problem, engine, params0)
            self.comm_ = engine.ledger
            self.comm_.method = name
        if scale is not None:
            result.params = np.array(result.params, dtype=float)
            result.params[:n_features] *= scale
        self._record_fit(problem, result)
        self._cast_fitted()
        if not self.converged_:
            if result.n_iter >= self.max_iter:
                advice = f"increase max_iter (it ran all {self.max_iter} {self._iterations}) or tol"
            else:
                advice = f"stopped after {result.n_iter} of at most {self.max_iter} {self._iterations}"
            warnings.warn(
                f"Solver {name!r} did not converge "
                f"({result.message or 'tolerance not reached'}); {advice}.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    #: What ``max_iter`` counts.
    _iterations = "iterations"

    def _previous_params(self):
        """The fitted parameters to start from with ``warm_start``, else None."""
        if not self.warm_start or not hasattr(self, "coef_"):
            return None
        coef = np.ravel(self.coef_).astype(np.float64)
        if self.fit_intercept:
            return np.append(coef, float(np.ravel(self.intercept_)[0]))
        return coef

    def _rescalable(self):
        """Whether columns of extreme magnitude may be rescaled: the solution of an
        unpenalised problem does not depend on column scales."""
        return getattr(self._penalty(1.0), "alpha", 0.0) == 0

    def _cast_fitted(self):
        """Coefficients in the dtype of the training data (float32 stays float32)."""
        dtype = self._fit_dtype
        self.coef_ = np.asarray(self.coef_, dtype=dtype)
        if isinstance(self.intercept_, np.ndarray):
            self.intercept_ = self.intercept_.astype(dtype)
        else:
            self.intercept_ = dtype.type(self.intercept_)

    def _check_solver(self, n_features):
        """The solver's name, after checking it handles the problem and its options."""
        trial = Problem(self._family(), self._penalty(1.0), bool(self.fit_intercept), n_features)
        name = _choose_solver(trial) if self.solver == "auto" else self.solver
        get_solver(name, trial, tol=self.tol, max_iter=self.max_iter, options=self.solver_options)
        return name

    def _configure(self, name, total_weight, n_features):
        """The problem (its penalty scaled to the data's total weight) and its solver."""
        problem = Problem(
            self._family(), self._penalty(total_weight), bool(self.fit_intercept), n_features
        )
        solver = get_solver(name, problem, tol=self.tol, max_iter=self.max_iter,
                            options=self.solver_options)
        return problem, solver

    def _record_fit(self, problem, result):
        """The fitted attributes from a solver's result."""
        coef, intercept = problem.split(result.params)
        self._set_coef(coef, intercept)
        self.solver_ = self.comm_.method
        self.n_iter_ = result.n_iter
        self.converged_ = bool(result.converged)
        self.history_ = result.history

    def _engine(self, X, y, sample_weight, family):
        """The validated engine of a fit, honouring the ``cache`` policy."""
        label_dtype = self.__dict__.pop("_labels_from_engine", None)
        labels = label_dtype is not None
        engine = make_engine(X, y, sample_weight, family=family, cache=self.cache, labels=labels,
                             rescale=self._rescalable())
        if labels:
            try:
                self._classes_from_engine(engine, label_dtype)
            except BaseException:
                engine.close()
                raise
        self.cache_ = engine.cache
        logger.info("%s: cache=%r -> %r (%s)", type(self).__name__, self.cache, engine.cache,
                    engine.cache_reason)
        return engine

    def _set_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept

    # prediction ----------------------------------------------------------------------
    def _coef_vector(self):
        coef = np.ravel(self.coef_)
        return coef, coef.dtype.type(np.ravel(self.intercept_)[0])

    def _linear_predictor(self, X):
        check_is_fitted(self)
        coef, intercept = self._coef_vector()
        if is_dask(X):
            X, _ = _dask_frame_to_array(X)
            _check_dask_matrix(X)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input."
                )
            if X.numblocks[1] != 1:
                X = X.rechunk({1: -1})
            return X.map_blocks(_block_predictor, coef, intercept, drop_axis=1,
                                dtype=coef.dtype)
        _reject_datetimes(X)
        X = validate_data(self, X, reset=False, accept_sparse=["csr", "csc", "coo"],
                          dtype=[np.float64, np.float32])
        return np.asarray(X @ coef).ravel() + intercept


def _class_labels(positive, classes):
    """``classes[1]`` where ``positive``, else ``classes[0]``; on the GPU for CuPy blocks of
    numeric labels."""
    index = positive.astype(int)
    if is_device(index) and classes.dtype.kind in "biuf":
        return array_module(index).asarray(classes)[index]
    return classes[to_host(index)]


def _apply_rowwise(fn, values):
    """``fn(values)``, lazily block by block for a Dask array."""
    if is_dask(values):
        return values.map_blocks(fn, dtype=values.dtype)
    return fn(values)


def _block_predictor(X_block, coef, intercept):
    """The linear predictor of one row block; NaN or infinity in the block is an error,
    found from the predictor itself (no pass over ``X`` of its own)."""
    X_block = as_csr_or_dense(X_block)
    eta = linear_predictor(X_block, np.append(coef, intercept), True).astype(coef.dtype)
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta


def _to_float(value):
    if is_dask(value):
        value = value.compute()
    return float(value)


def _weighted_mean(values, weight):
    if weight is None:
        return values.mean()
    return (values * weight).sum() / weight.sum()


def _finite_block(block, name):
    """``block``, after checking it holds no NaN or infinity (a lazy check for Dask)."""
    if block.dtype.kind in "fc" and not np.isfinite(block).all():
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return block


def _check_score_input(X, y, sample_weight, numeric=True):
    """``(X, y, sample_weight)`` for ``score``, checked as ``fit`` checks them.

    A column-vector ``y`` is raveled (with a DataConversionWarning); lengths must agree;
    NaN or infinity in ``y`` or the weights is an error (for Dask input, raised when the
    score is computed, from the same pass).  Dask ``y`` and weights are chunked like the
    rows of a Dask ``X``.
    """
    if not (is_dask(X) or is_dask(y) or is_dask(sample_weight)):
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y, sample_weight)
        if numeric or y.dtype.kind in "fc":
            _finite_block(np.asarray(y, dtype=np.float64) if numeric else y, "y")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, y, dtype=np.float64)
        return X, y, sample_weight

    import dask.array as da

    X, _ = _dask_frame_to_array(X) if is_dask(X) else (X, None)
    n_rows = X.shape[0]
    rows = X.chunks[0] if is_dask(X) else None

    def as_dask_vector(a, name):
        if is_dask(a):
            a, _ = _dask_frame_to_array(a)
        else:
            a = np.asarray(a)
            if a.ndim == 2 and a.shape[1] == 1:
                warnings.warn(f"A column-vector {name} was passed when a 1d array was "
                              "expected; it is raveled.", DataConversionWarning, stacklevel=4)
                a = a[:, 0]
            a = da.from_array(a, chunks=-1)  # chunked like X once its length is checked
        a = _check_dask_vector(a, name, n_rows, numeric=numeric or name != "y")
        if rows is not None and a.chunks[0] != rows and not math.isnan(a.shape[0]):
            a = a.rechunk(rows)
        return a.map_blocks(_finite_block, name, dtype=a.dtype)

    y = as_dask_vector(y, "y")
    if sample_weight is not None:
        sample_weight = as_dask_vector(sample_weight, "sample_weight")
    return X, y, sample_weight


class _RegressorGLM(RegressorMixin, _GLMBase):
    def predict(self, X):
        """Predicted mean ``inverse_link(X @ coef_ + intercept_)``.

        Returns a lazy Dask array chunked like ``X``'s rows for Dask input, numpy otherwise.
        """
        return _apply_rowwise(self._family().mean, self._linear_predictor(X))

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 (Gaussian) or fraction of deviance explained D^2.

        Parameters
        ----------
        X : array-like or Dask array of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array, optional

        Returns
        -------
        float
        """
        X, y, sample_weight = _check_score_input(X, y, sample_weight)
        if not is_dask(y) and y.shape[0] < 2:
            warnings.warn("R^2 score is not well-defined with less than two samples.",
                          UndefinedMetricWarning, stacklevel=2)
            return float("nan")
        family = self._family()
        mu = self.predict(X)
        y_mean = _to_float(_weighted_mean(y, sample_weight))
        if isinstance(family, Gaussian):
            residual = _to_float(_weighted_mean((y - mu) ** 2, sample_weight))
            total = _to_float(_weighted_mean((y - y_mean) ** 2, sample_weight))
        else:
            residual = _to_float(_deviance_mean(family, y, mu, sample_weight))
            total = _to_float(_deviance_mean(family, y, y_mean, sample_weight))
        if total == 0:
            return 1.0 if residual == 0 else 0.0
        return 1.0 - residual / total


def _deviance_mean(family, y, mu, weight):
    if is_dask(y):
        import dask.array as da

        mu = mu if is_dask(mu) else da.full_like(y, mu, dtype=float)
        parts = [y, mu] + ([weight] if weight is not None else [])
        sums = da.map_blocks(
            lambda yb, mb, *wb: np.array([family.deviance(yb, mb, wb[0] if wb else None)]),
            *parts, chunks=(1,), dtype=float,
        ).sum()
        total = y.shape[0] if weight is None else weight.sum()
        return sums / total
    total = y.shape[0] if weight is None else weight.sum()
    return family.deviance(y, np.broadcast_to(mu, y.shape), weight) / total


_COMMON_DOC = """
    solver : {"auto", "normal", "gd", "lbfgs", "newton", "proximal", "admm", "averaging", \
"sgd"}, default="auto"
        Optimisation method.  ``"auto"`` uses the normal equations where they apply
        (Gaussian family, no or L2 penalty), L-BFGS for other smooth problems and
        proximal gradient for L1 and elastic-net penalties.  A solver that cannot handle
        the problem raises a ValueError naming the solvers that can.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept.
    tol : float, default=1e-4
        Stop when the largest entry of the gradient of the objective (mean loss +
        penalty) is at most ``tol`` (its distance to the subdifferential for L1 and
        elastic-net penalties; primal and dual residuals for ``"admm"``; the local
        solves' gradients for ``"averaging"``).
    max_iter : int, default=100
        Most iterations of the solver.
    solver_options : dict, optional
        Method-specific options, e.g. ``{"memory": 20}`` for ``"lbfgs"``.
    cache : {"auto", "memory", "none"}, default="auto"
        For Dask input: ``"memory"`` reads the data once and keeps the partitions on the
        workers; ``"none"`` reads them from their source (e.g. zarr) in every round, with
        memory bounded by about one partition per worker thread; ``"auto"`` keeps them
        when they take at most half of the free worker memory and streams otherwise.
        The choice is in ``cache_`` and logged; bytes read from storage are in
        ``comm_.bytes_read``.
    verbose : int, default=0
        ``1`` or more shows a progress bar (objective and gradient per iteration) and logs
        every iteration on the ``daskglm`` logger at INFO level.
    warm_start : bool, default=False
        Start ``fit`` from the coefficients of the previous fit instead of zero.
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
        seconds, time spent waiting for the slowest partition (see :mod:`daskglm.comm`).
    solver_ : str
        The solver that ran.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""


class GLM(_RegressorGLM):
    __doc__ = (
        """Generalised linear model with any link and an elastic-net penalty.

    Minimises ``mean_weighted_loss + alpha * (l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2 *
    ||coef||_2^2)`` (glmnet's convention); the intercept is never penalised.  The loss is
    the family's negative log-likelihood with the chosen link (the canonical link by
    default).  With a non-canonical link ``solver="newton"`` uses the expected (Fisher)
    information, i.e. it is Fisher scoring; the normal equations need the Gaussian family
    with the identity link.  With a non-canonical link the fit starts from the intercept
    ``link(0.5)`` (binomial) or ``link(1)`` (Gaussian, Poisson) where that is finite, so
    that a Poisson with the identity link, say, starts at a valid mean.

    Parameters
    ----------
    family : {"gaussian", "binomial", "poisson"} or Family, default="gaussian"
    link : {"identity", "logit", "log", "inverse", "probit", "cloglog"} or Link, optional
        The link function, e.g. ``"probit"`` with ``family="binomial"`` or
        ``daskglm.Power(0.5)``.  ``None`` (default) is the family's canonical link
        (identity, logit, log), or the link of a ``Family`` instance.
    penalty : {"l2", "l1", "elasticnet", "none"} or None, default="l2"
    alpha : float, default=0.0
        Penalty strength on the mean-loss scale.
    l1_ratio : float, default=0.5
        Elastic-net mixing, used with ``penalty="elasticnet"``.
"""
        + _COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, family="gaussian", penalty="l2", alpha=0.0, l1_ratio=0.5, *, solver="auto",
                 fit_intercept=True, tol=1e-4, max_iter=100, solver_options=None, cache="auto",
                 verbose=0, warm_start=False, link=None):
        self.family = family
        self.link = link
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return get_family(self.family, self.link)

    def _check_params(self):
        super()._check_params()
        self._family()  # an unknown family or link: a ValueError before any work

    def _penalty(self, total_weight):
        return make_penalty(self.penalty, self.alpha, self.l1_ratio)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = not isinstance(self._family(), Gaussian)
        return tags


class LinearRegression(_RegressorGLM):
    __doc__ = (
        """Ordinary least squares, as :class:`sklearn.linear_model.LinearRegression`.

    Parameters
    ----------
"""
        + _COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Gaussian()

    def _penalty(self, total_weight):
        return NoPenalty()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class Ridge(_RegressorGLM):
    __doc__ = (
        """Least squares with an L2 penalty, as :class:`sklearn.linear_model.Ridge`.

    Minimises ``||y - X coef - intercept||^2_W + alpha * ||coef||^2`` (sums over rows,
    weighted by ``sample_weight``).

    Parameters
    ----------
    alpha : float, default=1.0
        L2 strength, >= 0.
"""
        + _COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Gaussian()

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha / total_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class PoissonRegressor(_RegressorGLM):
    __doc__ = (
        """Poisson regression with a log link, as :class:`sklearn.linear_model.PoissonRegressor`.

    Minimises ``mean half Poisson deviance + alpha / 2 * ||coef||^2``.

    Parameters
    ----------
    alpha : float, default=1.0
        L2 strength on the mean-loss scale, >= 0.
"""
        + _COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Poisson()

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = True
        return tags


_LONG_COMMON_DOC = _COMMON_DOC.replace("max_iter : int, default=100", "max_iter : int, default=1000")


class Lasso(_RegressorGLM):
    __doc__ = (
        """Least squares with an L1 penalty, as :class:`sklearn.linear_model.Lasso`.

    Minimises ``1 / 2 * mean_W (y - X coef - intercept)^2 + alpha * ||coef||_1``, the mean
    weighted by ``sample_weight`` (scikit-learn rescales the weights to sum to
    ``n_samples``, which is the same).  ``solver="auto"`` uses proximal gradient.

    Parameters
    ----------
    alpha : float, default=1.0
        L1 strength, >= 0; ``alpha=0`` fits ordinary least squares.
"""
        + _LONG_COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=1000,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Gaussian()

    def _penalty(self, total_weight):
        return make_penalty("l1", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class ElasticNet(_RegressorGLM):
    __doc__ = (
        """Least squares with an elastic-net penalty, as :class:`sklearn.linear_model.ElasticNet`.

    Minimises ``1 / 2 * mean_W (y - X coef - intercept)^2 + alpha * l1_ratio * ||coef||_1
    + alpha * (1 - l1_ratio) / 2 * ||coef||^2``, the mean weighted by ``sample_weight``.
    ``solver="auto"`` uses proximal gradient (the normal equations when ``l1_ratio=0``).

    Parameters
    ----------
    alpha : float, default=1.0
        Penalty strength, >= 0.
    l1_ratio : float, default=0.5
        Mixing in [0, 1]: 1 is the lasso, 0 ridge.
"""
        + _LONG_COMMON_DOC
        + _FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, solver="auto", fit_intercept=True, tol=1e-4,
                 max_iter=1000, solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Gaussian()

    def _penalty(self, total_weight):
        return make_penalty("elasticnet", self.alpha, self.l1_ratio)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LogisticRegression(ClassifierMixin, _GLMBase):
    __doc__ = (
        """Binary logistic regression, as :class:`sklearn.linear_model.LogisticRegression`.

    Minimises ``C * sum_i w_i loss_i + penalty(coef)`` with penalty ``||coef||^2 / 2``
    (``"l2"``), ``||coef||_1`` (``"l1"``) or ``l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2
    * ||coef||^2`` (``"elasticnet"``); ``penalty=None`` or ``C=inf`` fits without one.

    Parameters
    ----------
    penalty : {"auto", "l2", "l1", "elasticnet"} or None
        ``"auto"`` (the default with scikit-learn 1.8 and later, which chooses the penalty
        this way and deprecates ``penalty``; ``"deprecated"`` is the same) takes the penalty
        from ``l1_ratio``: ``"l2"`` at 0, ``"l1"`` at 1, ``"elasticnet"`` in between.
        With older scikit-learn the default is ``"l2"``.
    C : float, default=1.0
        Inverse regularisation strength, > 0; ``inf`` fits without a penalty.
    l1_ratio : float, optional
        Elastic-net mixing in [0, 1] (default 0.0 with scikit-learn 1.8 and later, None
        before), required with ``penalty="elasticnet"``.
"""
        + _COMMON_DOC
        + _FITTED_DOC
        + """    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
"""
    )

    _classifier = True

    def __init__(self, penalty="auto" if PENALTY_FROM_L1_RATIO else "l2", *, C=1.0,
                 l1_ratio=0.0 if PENALTY_FROM_L1_RATIO else None, solver="auto", fit_intercept=True,
                 tol=1e-4, max_iter=100, solver_options=None, cache="auto", verbose=0,
                 warm_start=False):
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Binomial()

    def _penalty(self, total_weight):
        if not (isinstance(self.C, (int, float, np.number)) and self.C > 0):
            raise ValueError(f"C must be a positive number; got {self.C!r}.")
        penalty = self._penalty_name()
        if penalty is None or math.isinf(self.C):
            return NoPenalty()
        strength = 1.0 / (self.C * total_weight)
        if penalty == "l2":
            return L2(strength)
        if penalty == "l1":
            return L1(strength)
        return make_penalty("elasticnet", strength, self.l1_ratio)

    def _penalty_name(self):
        """``"l2"``, ``"l1"``, ``"elasticnet"`` or None, from ``penalty`` and ``l1_ratio``."""
        if self.penalty in ("auto", "deprecated"):
            l1_ratio = self.l1_ratio
            if l1_ratio is not None and not (
                isinstance(l1_ratio, (int, float, np.number)) and 0 <= l1_ratio <= 1
            ):
                raise ValueError(f"l1_ratio must be a number in [0, 1]; got {l1_ratio!r}.")
            if l1_ratio is None or l1_ratio == 0:
                return "l2"
            return "l1" if l1_ratio == 1 else "elasticnet"
        if self.penalty not in ("l2", "l1", "elasticnet", None, "none"):
            raise ValueError(
                f"penalty must be 'auto', 'l2', 'l1', 'elasticnet' or None; got {self.penalty!r}."
            )
        return None if self.penalty == "none" else self.penalty

    def _prepare_target(self, y):
        if is_dask(y) and (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            # numeric labels are found by the engine's validation round (no extra pass)
            self._labels_from_engine = y.dtype
            return y
        if is_dask(y):
            import dask.array as da

            classes = np.unique(da.unique(y).compute())
            kind = "binary" if classes.size <= 2 else "multiclass"
        else:
            kind = type_of_target(y, input_name="y")
            classes = np.unique(y)
        self._set_classes(classes, kind)
        return (y == classes[1]).astype(np.float64)

    def _set_classes(self, classes, kind):
        """Check there are exactly two classes and store them in ``classes_``."""
        if kind in ("continuous", "continuous-multioutput"):
            raise ValueError(f"Unknown label type: {kind}. Labels must be class names, not a continuous target.")
        if classes.size < 2:
            raise ValueError(
                f"This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0] if classes.size else None!r}."
            )
        if classes.size > 2:
            raise ValueError(
                f"Only binary classification is supported: {type(self).__name__} got y with "
                f"{classes.size} or more classes (target type {kind})."
            )
        self.classes_ = classes

    def _classes_from_engine(self, engine, dtype):
        """``classes_`` (of the labels' dtype) from the labels the validation round found;
        the targets are then encoded to 0/1 where they live."""
        found = np.asarray(engine.labels, dtype=np.float64)
        self._set_classes(found.astype(dtype), "binary" if found.size <= 2 else "multiclass")
        if not np.array_equal(found, [0.0, 1.0]):
            engine.relabel(found[1])

    def _set_coef(self, coef, intercept):
        self.coef_ = coef.reshape(1, -1)
        self.intercept_ = np.array([intercept])

    def decision_function(self, X):
        """Linear predictor ``X @ coef_ + intercept_``; > 0 predicts ``classes_[1]``."""
        return self._linear_predictor(X)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, 2), columns ordered as ``classes_``."""
        prob = _apply_rowwise(self._family().mean, self._linear_predictor(X))
        if is_dask(prob):
            import dask.array as da

            return da.stack([1.0 - prob, prob], axis=1)
        return np.column_stack([1.0 - prob, prob])

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predicted labels from ``classes_``."""
        positive = self._linear_predictor(X) > 0
        if is_dask(positive):
            return positive.map_blocks(_class_labels, self.classes_, dtype=self.classes_.dtype)
        return self.classes_[positive.astype(int)]

    def score(self, X, y, sample_weight=None):
        """Accuracy (weighted by ``sample_weight``)."""
        X, y, sample_weight = _check_score_input(X, y, sample_weight, numeric=False)
        correct = (self.predict(X) == y).astype(float)
        return _to_float(_weighted_mean(correct, sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


# stochastic gradient descent ---------------------------------------------------------------
def _encode_binary(y, classes):
    """``1.0`` where ``y == classes[1]``, ``0.0`` where ``y == classes[0]``, else ValueError."""
    y = np.asarray(y)
    known = (y == classes[0]) | (y == classes[1])
    if not np.all(known):
        unknown = np.unique(y[~known])
        raise ValueError(
            f"y contains labels {unknown.tolist()} that are not in classes {classes.tolist()}."
        )
    return (y == classes[1]).astype(np.float64)


class _SGDBase(_GLMBase):
    """Shared machinery of the SGD estimators: options, ``fit`` and ``partial_fit``.

    The model is ``mean weighted loss + alpha * R(coef)`` with scikit-learn's SGD penalty
    ``R``: ``||coef||^2 / 2`` (``"l2"``), ``||coef||_1`` (``"l1"``) or ``l1_ratio *
    ||coef||_1 + (1 - l1_ratio) / 2 * ||coef||^2`` (``"elasticnet"``); it is minimised by
    the ``"sgd"`` solver (:class:`daskglm.solvers.sgd.SGD`).  The run's state (iterate,
    step-rule state, step count, running mean, seed) is kept after ``fit`` and
    ``partial_fit``, and ``partial_fit`` continues it.
    """

    #: The supported ``loss`` names.
    _losses: tuple = ()

    #: Checks of :func:`sklearn.utils.estimator_checks.check_estimator` that fail by
    #: design, ``{check name: reason}``, the same as scikit-learn declares for its own SGD
    #: estimators: a stochastic fit with sample weights is not the fit with the rows
    #: repeated or removed.  scikit-learn has no tag through which a third-party estimator
    #: declares them, so pass this dict as ``check_estimator(estimator,
    #: expected_failed_checks=type(estimator)._expected_failed_checks)`` (or return it from
    #: the ``expected_failed_checks`` callable of ``parametrize_with_checks``).
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "sample_weight is not equivalent to removing/repeating samples."
        ),
        "check_sample_weight_equivalence_on_sparse_data": (
            "sample_weight is not equivalent to removing/repeating samples."
        ),
    }

    def _family(self):
        raise NotImplementedError

    def _penalty(self, total_weight):
        return make_penalty(self.penalty, self.alpha, self.l1_ratio)

    def _rescalable(self):
        return False  # partial_fit would see each chunk in its own scales

    def _check_params(self):
        name = type(self).__name__
        if self.loss not in self._losses:
            supported = ", ".join(repr(loss) for loss in self._losses)
            raise ValueError(f"{name} supports loss={supported} only; got loss={self.loss!r}.")
        if self.penalty not in ("l2", "l1", "elasticnet", None):
            raise ValueError(
                f"penalty must be 'l2', 'l1', 'elasticnet' or None; got {self.penalty!r}."
            )
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}.")
        if self.cache not in ("auto", "memory", "none"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {self.cache!r}.")

    def _problem(self, n_features):
        penalty = self._penalty(1.0)
        return Problem(self._family(), penalty, bool(self.fit_intercept), int(n_features))

    def _solver(self, problem, tol, max_iter):
        options = {
            "batch_size": self.batch_size, "learning_rate": self.learning_rate, "eta0": self.eta0,
            "power_t": self.power_t, "average": self.average,
            "n_iter_no_change": self.n_iter_no_change, "random_state": self.random_state,
            "sync_every": self.sync_every,
        }
        solver = get_solver("sgd", problem, tol=tol, max_iter=max_iter, options=options)
        solver.step_rule(problem)  # "optimal" needs alpha > 0: say so before any pass
        return solver

    def fit(self, X, y, sample_weight=None):
        """Fit by SGD from zero for up to ``max_iter`` epochs.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """
        return super().fit(X, y, sample_weight)

    _iterations = "epochs"

    def _check_solver(self, n_features):
        self._solver(self._problem(n_features), self.tol, self.max_iter)
        return "sgd"

    def _configure(self, name, total_weight, n_features):
        problem = self._problem(n_features)
        return problem, self._solver(problem, self.tol, self.max_iter)

    def _record_fit(self, problem, result):
        self.history_ = []
        self._store(problem, result.state, result.history, result.n_iter)
        self.converged_ = bool(result.converged)

    _PARTIAL_FIT_DOC = """One epoch of SGD over the given data, continuing from the current state.

        A Dask array is streamed: its row chunks are computed and processed one after the
        other (on the cluster when there is an active client), never all at once.  Each
        chunk gets ``ceil(chunk rows / batch_size)`` steps on its own rows, with gradients
        scaled to its own weighted mean loss, and the step count, step-rule state and
        running mean carry over from chunk to chunk and from call to call.  Calling it on
        the chunks one by one gives exactly the same model as one call on the Dask array,
        and ``E`` calls on the same data give exactly what ``fit`` with ``max_iter=E,
        tol=None`` gives on it when ``fit`` sees it as one partition (a Dask array of one
        chunk).  A ``fit`` over several partitions draws each mini-batch from all of them,
        which a stream, seeing one chunk at a time, cannot do.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
%(classes)s        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """

    def _partial_fit(self, X, y, sample_weight, classes):
        """:meth:`partial_fit` of both estimators; ``classes`` is None for regressors."""
        self._check_params()
        state = getattr(self, "_sgd_state", None)
        n_features = getattr(self, "n_features_in_", None)
        X, y, sample_weight = self._validate_input(X, y, sample_weight)
        if state is not None and self.n_features_in_ != n_features:
            found, self.n_features_in_ = self.n_features_in_, n_features
            raise ValueError(
                f"X has {found} features, but {type(self).__name__} is expecting {n_features} "
                "features as input."
            )
        y = self._partial_target(y, classes, first=state is None)
        problem = self._problem(X.shape[1])
        solver = self._solver(problem, None, 1)
        if state is None:
            state = solver.initial_state(problem, np.zeros(problem.n_params))
            self.comm_, self.history_, self.n_iter_ = CommReport(), [], 0
        n_epochs = self.n_iter_ + 1
        for engine in stream_engines(X, y, sample_weight, family=problem.family, ledger=self.comm_):
            result = solver.solve(problem, engine, state.params, state=state)
            state = result.state
            self._store(problem, state, result.history, n_epochs)
        self.converged_ = True
        return self

    def _partial_target(self, y, classes, first):
        return self._prepare_target(y)

    def _store(self, problem, state, history, n_iter):
        """Fitted attributes from the state of a run and its history entries."""
        self._sgd_state = state
        coef, intercept = problem.split(state.solution)
        self._set_coef(coef, intercept)
        for entry in history:
            self.history_.append({**entry, "iteration": len(self.history_) + 1})
        self.n_iter_ = int(n_iter)
        self.t_ = int(state.step)
        self.solver_ = "sgd"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


_SGD_DOC = """
    penalty : {"l2", "l1", "elasticnet"} or None, default="l2"
        ``R(coef)``: ``||coef||^2 / 2``, ``||coef||_1`` or ``l1_ratio * ||coef||_1 +
        (1 - l1_ratio) / 2 * ||coef||^2``.  The L2 part enters through the gradient, the
        L1 part through a soft-thresholding step after each update.
    alpha : float, default=0.0001
        Penalty strength, >= 0 (> 0 for ``learning_rate="optimal"``).
    l1_ratio : float, default=0.15
        Elastic-net mixing in [0, 1], used with ``penalty="elasticnet"``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept.
    max_iter : int, default=1000
        Most epochs; an epoch is ``ceil(n_samples / batch_size)`` steps.
    tol : float or None, default=1e-3
        scikit-learn's stopping rule (with ``early_stopping=False``): the objective of an
        epoch is the mean over its rows (weighted by ``sample_weight``) of each row's loss
        plus ``alpha * R(coef)``, both at the iterate before the step that uses the row
        (the current iterate, not the running mean of ``average``); an epoch whose
        objective is above the best so far minus ``tol`` makes no improvement, and ``fit``
        stops after ``n_iter_no_change`` such epochs in a row.  Every row enters each epoch
        exactly once, so the estimate has no sampling noise from the draws, and with
        ``batch_size=1`` and no sample weights it is scikit-learn's number (scikit-learn
        leaves the sample weights out of it).  None runs every epoch.
    learning_rate : {"constant", "invscaling", "optimal", "adagrad"}, default="%(learning_rate)s"
        ``eta0``, ``eta0 / (t + 1) ** power_t``, ``1 / (alpha * (t0 + t))`` with
        scikit-learn's ``t0``, or Adagrad's per-coefficient ``eta0 / sqrt(sum of squared
        gradients)``, where ``t`` counts steps from 0.
    eta0 : float, default=%(eta0)s
        Initial learning rate, > 0 unless ``learning_rate="optimal"``.
    power_t : float, default=%(power_t)s
        Exponent of ``"invscaling"``.
    average : bool or int, default=False
        Polyak-Ruppert averaging: ``coef_`` and ``intercept_`` are the mean of the iterates,
        from the first step (True) or from the step at which ``average`` rows have been
        drawn (an int).
    random_state : int, RandomState, Generator or None, default=None
        Seed of the row draws; a fit is reproducible for a fixed int and does not depend
        on the number of workers.
    n_iter_no_change : int, default=5
        Epochs without improvement before stopping.
    batch_size : int, default=16
        Rows per step.  Each epoch visits every row once in a random order (scikit-learn's
        shuffling), over all partitions; the last step of an epoch takes the rows that
        are left.  Synchronous SGD costs one communication round per step, so on a
        cluster a larger batch (with a larger ``eta0``), or ``sync_every``, is usually
        worth it; small batches make more progress per epoch, which ``tol`` measures.
    sync_every : int or None, default=None
        Local SGD: every partition takes ``sync_every`` steps on its own rows between two
        averaging rounds.  None (or 1, up to round-off) is synchronous mini-batch SGD.
    cache : {"auto", "memory", "none"}, default="auto"
        For Dask input, keep the partitions in worker memory or read them from their
        source in every round (``"auto"``: keep them when they take at most half of the
        free worker memory).  ``partial_fit`` always streams its chunks.
    verbose : int, default=0
        ``1`` or more shows a progress bar (one update per epoch) and logs every epoch on
        the ``daskglm`` logger at INFO level.
    warm_start : bool, default=False
        Start ``fit`` from the coefficients of the previous fit instead of zero.

    Attributes
    ----------
    coef_ : ndarray
    intercept_ : ndarray of shape (1,)
    n_iter_ : int
        Epochs run (``partial_fit`` adds one per call).
    t_ : int
        Steps taken.
    converged_ : bool
        Whether the early-stopping rule ended ``fit`` (always True with ``tol=None`` and
        after ``partial_fit``).
    history_ : list of dict
        One entry per epoch (per chunk with ``partial_fit``): ``objective`` (the epoch's
        objective of ``tol``), its parts ``loss`` and ``penalty``, ``step`` (learning rate),
        ``steps``, ``seconds``, ``rounds``.
    cache_ : {"memory", "none"}
        Whether the fit kept the data in memory or streamed them from their source.
    comm_ : CommReport
        Every engine round (accumulated over ``partial_fit`` calls).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""


class SGDRegressor(_SGDBase, _RegressorGLM):
    __doc__ = (
        """Linear regression by SGD, as :class:`sklearn.linear_model.SGDRegressor`.

    Minimises ``mean_W (y - X coef - intercept)^2 / 2 + alpha * R(coef)`` (scikit-learn's
    SGD objective) by mini-batch or local SGD on the partitions of the data.

    Parameters
    ----------
    loss : {"squared_error"}, default="squared_error"
"""
        + _SGD_DOC % {"learning_rate": "invscaling", "eta0": 0.01, "power_t": 0.25}
    )

    _losses = ("squared_error",)

    def __init__(self, loss="squared_error", *, penalty="l2", alpha=0.0001, l1_ratio=0.15,
                 fit_intercept=True, max_iter=1000, tol=1e-3, learning_rate="invscaling",
                 eta0=0.01, power_t=0.25, average=False, random_state=None, n_iter_no_change=5,
                 batch_size=16, sync_every=None, cache="auto", verbose=0,
                 warm_start=False):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.average = average
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.batch_size = batch_size
        self.sync_every = sync_every
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Gaussian()

    def _set_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = np.array([intercept])

    def partial_fit(self, X, y, sample_weight=None):
        return self._partial_fit(X, y, sample_weight, None)

    partial_fit.__doc__ = _SGDBase._PARTIAL_FIT_DOC % {"classes": ""}


class SGDClassifier(ClassifierMixin, _SGDBase):
    __doc__ = (
        """Binary logistic regression by SGD, as :class:`sklearn.linear_model.SGDClassifier`.

    Minimises ``mean_W log_loss + alpha * R(coef)`` (scikit-learn's SGD objective) by
    mini-batch or local SGD on the partitions of the data.

    Parameters
    ----------
    loss : {"log_loss"}, default="log_loss"
        Only the logistic loss, which gives probabilities.
"""
        + _SGD_DOC % {"learning_rate": "optimal", "eta0": 0.0, "power_t": 0.5}
        + """    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
"""
    )

    _classifier = True
    _losses = ("log_loss",)

    def __init__(self, loss="log_loss", *, penalty="l2", alpha=0.0001, l1_ratio=0.15,
                 fit_intercept=True, max_iter=1000, tol=1e-3, learning_rate="optimal", eta0=0.0,
                 power_t=0.5, average=False, random_state=None, n_iter_no_change=5,
                 batch_size=16, sync_every=None, cache="auto", verbose=0,
                 warm_start=False):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.average = average
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.batch_size = batch_size
        self.sync_every = sync_every
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Binomial()

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        return self._partial_fit(X, y, sample_weight, classes)

    partial_fit.__doc__ = _SGDBase._PARTIAL_FIT_DOC % {"classes": """\
        classes : array-like of shape (2,), default=None
            Both labels; required on the first call, and if given later, the same.
"""}

    def _partial_target(self, y, classes, first):
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            classes = np.unique(np.asarray(classes))
            if classes.size != 2:
                raise ValueError(
                    f"Only binary classification is supported: classes must hold 2 labels; "
                    f"got {classes.tolist()}."
                )
            self.classes_ = classes
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={np.unique(classes).tolist()} differs from the classes of the first "
                f"call to partial_fit, {self.classes_.tolist()}."
            )
        if is_dask(y):
            return y.map_blocks(_encode_binary, self.classes_, dtype=np.float64)
        return _encode_binary(y, self.classes_)

    # binary predictions, as LogisticRegression's
    _prepare_target = LogisticRegression._prepare_target
    _set_classes = LogisticRegression._set_classes
    _classes_from_engine = LogisticRegression._classes_from_engine
    _set_coef = LogisticRegression._set_coef
    decision_function = LogisticRegression.decision_function
    predict_proba = LogisticRegression.predict_proba
    predict_log_proba = LogisticRegression.predict_log_proba
    predict = LogisticRegression.predict
    score = LogisticRegression.score

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
