"""Coefficient matrices: predictions of ``coef_`` of shape (k, d), and multi-output fits.

:func:`matrix_predictor` is ``X @ coef_.T + intercept_`` for numpy, sparse and Dask input
(lazily, block by block), used by multi-output regression and by one-vs-rest
classification.  :class:`MultiOutputRegressionMixin` gives :class:`~daskglm.LinearRegression`,
:class:`~daskglm.Ridge`, :class:`~daskglm.Lasso` and :class:`~daskglm.ElasticNet` a 2-D
``y`` of shape (n_samples, k), as scikit-learn: with the normal equations ALL targets are
solved from ONE Gram round (the targets ride as extra columns, so ``X^T W Y`` comes with
``X^T W X``); other solvers fit each target in turn (``k`` fits: ``k`` validation rounds and
``k`` times the solver's rounds, ``X`` read once per target).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting.ledger import CommReport
from ..compute.kernels import as_csr_or_dense
from ..compute.summaries import all_finite
from ..engine import is_dask
from ..engine.driver_passes import compute_pass, records_driver_passes
from .dask_ml_params import with_dask_ml_parameters
from .validation import (
    check_dask_matrix,
    check_feature_names_match,
    check_has_rows,
    column_count,
    dask_frame_to_array,
    reject_datetimes,
)
from .weight_kinds import check_weights_kind

__all__ = ["matrix_predictor", "MultiOutputRegressionMixin", "join_targets",
           "is_two_dimensional"]


def _block_matrix_predictor(X_block, coef, intercept):
    """``X_block @ coef.T + intercept`` of one row block; NaN or infinity in the block is
    an error, found from the predictions themselves."""
    X_block = as_csr_or_dense(X_block)
    eta = np.asarray(X_block @ coef.T) + intercept
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta.astype(coef.dtype)


def matrix_predictor(estimator, X):
    """``X @ coef_.T + intercept_`` of shape (n_samples, k), for a fitted ``estimator``
    whose ``coef_`` has shape (k, n_features); a lazy Dask array for Dask input."""
    check_is_fitted(estimator)
    coef = estimator.coef_
    coef = coef.toarray() if sp.issparse(coef) else np.asarray(coef)  # after sparsify()
    intercept = np.asarray(estimator.intercept_, dtype=coef.dtype).reshape(-1)
    if is_dask(X):
        X, names = dask_frame_to_array(X)
        check_feature_names_match(estimator, names)
        check_dask_matrix(X)
        check_has_rows(X)
        if X.shape[1] != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                f"{estimator.n_features_in_} features as input."
            )
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        return X.map_blocks(_block_matrix_predictor, coef, intercept,
                            chunks=(X.chunks[0], (coef.shape[0],)), dtype=coef.dtype)
    reject_datetimes(X)
    X = validate_data(estimator, X, reset=False, accept_sparse=["csr", "csc", "coo"],
                      dtype=[np.float64, np.float32])
    return (np.asarray(X @ coef.T) + intercept).astype(coef.dtype, copy=False)


def is_two_dimensional(y):
    """Whether ``y`` is a matrix of targets (n_samples, n_targets).

    Parameters
    ----------
    y : array-like or Dask array

    Returns
    -------
    bool
    """
    if is_dask(y) or hasattr(y, "ndim"):
        return y.ndim == 2
    return np.asarray(y).ndim == 2


class MultiOutputRegressionMixin:
    """A 2-D ``y`` for the Gaussian regressors: ``coef_`` (k, d) and ``intercept_`` (k,).

    With the normal equations (``solver="normal"``, or ``"auto"`` where it picks them) all
    targets come from ONE Gram round: the targets travel as extra columns of ``X``, so that
    round returns ``X^T W Y`` with ``X^T W X`` (a ``(d + k)``-square matrix per partition
    instead of ``d``-square) and the driver solves ``k`` systems.  Other solvers fit the
    targets one after the other, each a fit of its own (``k`` times the rounds of one fit,
    ``X`` read once per target), and ``n_iter_`` holds one count per target.  As in
    scikit-learn, ``Ridge``, ``Lasso`` and ``ElasticNet`` (``_ravel_one_target``) give a 1-D
    ``coef_`` and 1-D predictions for a ``y`` of one column, ``LinearRegression`` keeps it
    2-D.
    """

    #: Whether a ``y`` of shape (n_samples, 1) gives ``coef_`` of shape (n_features,).
    _ravel_one_target = True

    @records_driver_passes
    @with_dask_ml_parameters
    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, groups=None, *,
            weights_kind=None):
        """Fit the model, to one target or to several.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,) or (n_samples, n_targets)
            With two dimensions, ``coef_`` has shape (n_targets, n_features) and
            ``intercept_`` shape (n_targets,), as in scikit-learn.
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.
        offset, exposure, groups : array-like or Dask array of shape (n_samples,), optional
            As for one target (see :meth:`daskglm.GLM.fit`); not with several targets.
        weights_kind : {"frequency", "analytic"}, optional
            What ``sample_weight`` means to inference (see :meth:`daskglm.GLM.fit`):
            ``"analytic"`` gives statsmodels' ``WLS(weights=)`` statistics.

        Returns
        -------
        self
        """
        if not is_two_dimensional(y):
            return super().fit(X, y, sample_weight, offset=offset, exposure=exposure,
                               groups=groups, weights_kind=weights_kind)
        if offset is not None or exposure is not None or groups is not None:
            raise ValueError("An offset, exposure or groups are supported with one target "
                             "only; fit each target on its own.")
        check_weights_kind(weights_kind, self._family())
        if is_dask(y) and hasattr(y, "columns"):  # a Dask DataFrame of targets
            y, _ = dask_frame_to_array(y)
        self._check_params()
        n_features = column_count(X)
        alphas = self._per_target_alphas(y)
        if alphas is not None:  # each target's fit checks its own solver
            self._fit_targets_in_turn(X, y, sample_weight, alphas)
        elif self._planned_solver(0 if n_features is None else n_features)[0] == "normal":
            self._fit_targets_at_once(X, y, sample_weight)
        else:
            self._fit_targets_in_turn(X, y, sample_weight)
        if self._ravel_one_target and self.coef_.shape[0] == 1:
            self.coef_ = self.coef_[0]
        return self

    def _fit_targets_at_once(self, X, Y, sample_weight):
        """All targets from one Gram round of the normal equations."""
        first = Y[:, 0] if is_dask(Y) else np.asarray(Y)[:, 0]
        X, first, sample_weight = self._validate_input(X, first, sample_weight)
        joined, Y = join_targets(X, Y)
        n_features, n_targets = X.shape[1], Y.shape[1]
        # the Gram round of the features and targets is the validation round
        planned = self._problem(self._constrained_penalty(1.0), n_features)
        first = self._first_evaluation(self._solver_of("normal", planned), planned, None)
        with self._engine(joined, Y[:, 0], sample_weight, self._family(),
                          first=first) as engine:
            problem = self._problem(self._constrained_penalty(engine.sum_weight), n_features)
            solver = self._solver_of("normal", problem)
            result = solver.solve_targets(problem, engine, n_targets)
            scale = engine.column_scale
            self.comm_ = engine.ledger
            self.comm_.method = "normal"
        params = result.params
        if scale is not None:  # back from the rescaled columns of X and of the targets
            target_scale = scale[n_features:, None]
            params = params / target_scale
            params[:, :n_features] *= scale[None, :n_features]
        self.coef_ = params[:, :n_features]
        self.intercept_ = params[:, n_features] if problem.fit_intercept else 0.0
        self.solver_, self.n_iter_, self.converged_ = "normal", 1, True
        self.history_ = result.history
        self._cast_fitted()
        return self

    def _per_target_alphas(self, Y):
        """``alpha`` as one strength per target when it is an array (scikit-learn's Ridge
        convention), else None; a ValueError when its length is not the number of targets."""
        alpha = getattr(self, "alpha", None)
        if alpha is None or np.ndim(alpha) == 0:
            return None
        alphas = np.asarray(alpha, dtype=np.float64).ravel()
        n_targets = Y.shape[1]
        if alphas.size == 1:
            return np.repeat(alphas, n_targets)
        if alphas.size != n_targets:
            raise ValueError("Number of targets and number of penalties do not correspond: "
                             f"{alphas.size} != {n_targets}")
        return alphas

    def _fit_targets_in_turn(self, X, Y, sample_weight, alphas=None):
        """One fit per target, one after the other (with ``alphas[j]`` for target ``j``
        when given)."""
        columns = Y if is_dask(Y) else np.asarray(Y)
        n_targets = columns.shape[1]
        previous = None
        if self.warm_start and hasattr(self, "coef_") and np.ndim(self.coef_) == 2 \
                and self.coef_.shape[0] == n_targets:
            previous = (self.coef_, np.broadcast_to(self.intercept_, (n_targets,)))
        fits = []
        for j in range(n_targets):
            single = clone(self)
            if alphas is not None:
                single.alpha = float(alphas[j])
            if previous is not None:
                single.coef_, single.intercept_ = previous[0][j], previous[1][j]
            fits.append(single.fit(X, columns[:, j], sample_weight))
        first = fits[0]
        self.coef_ = np.vstack([fit.coef_ for fit in fits])
        self.intercept_ = (np.array([fit.intercept_ for fit in fits], dtype=self.coef_.dtype)
                           if self.fit_intercept else first.intercept_)
        self.n_iter_ = np.array([fit.n_iter_ for fit in fits])
        self.converged_ = all(fit.converged_ for fit in fits)
        self.__dict__.pop("dual_gap_", None)
        if all(hasattr(fit, "dual_gap_") for fit in fits):  # Lasso's and ElasticNet's
            self.dual_gap_ = np.array([fit.dual_gap_ for fit in fits])
        self.history_ = [{**entry, "target": j} for j, fit in enumerate(fits)
                         for entry in fit.history_]
        self.comm_ = CommReport.concatenate([fit.comm_ for fit in fits])
        self.solver_, self.cache_ = first.solver_, first.cache_
        self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        else:
            self.__dict__.pop("feature_names_in_", None)
        return self

    def predict(self, X, offset=None, exposure=None):
        """Predictions ``X @ coef_.T + intercept_``: shape (n_samples,), or (n_samples,
        n_targets) after a fit to several targets; lazy for Dask input.  ``offset`` and
        ``exposure`` as for one target."""
        check_is_fitted(self)
        if np.ndim(self.coef_) == 2:
            if offset is not None or exposure is not None:
                raise ValueError("An offset or exposure is supported with one target only.")
            return matrix_predictor(self, X)
        return super().predict(X, offset=offset, exposure=exposure)

    def score(self, X, y, sample_weight=None, offset=None, exposure=None):
        """R^2, averaged over the targets with equal weights after a fit to several
        (scikit-learn's ``multioutput="uniform_average"``)."""
        check_is_fitted(self)
        if np.ndim(self.coef_) != 2 and not is_two_dimensional(y):
            return super().score(X, y, sample_weight, offset=offset, exposure=exposure)
        if offset is not None or exposure is not None:
            raise ValueError("An offset or exposure is supported with one target only.")
        predicted = self.predict(X)
        if predicted.ndim == 1:
            predicted = predicted[:, None]
        y = _as_target_columns(y, predicted.shape)
        weight = 1.0 if sample_weight is None else sample_weight[:, None]
        total = float(predicted.shape[0]) if sample_weight is None else sample_weight.sum()
        mean = (weight * y).sum(axis=0) / total
        residual = (weight * (y - predicted) ** 2).sum(axis=0)
        spread = (weight * (y - mean) ** 2).sum(axis=0)
        lazy = [a for a in (residual, spread) if is_dask(a)]
        if lazy:
            computed = iter(compute_pass(*lazy))
            residual, spread = (next(computed) if is_dask(a) else a for a in (residual, spread))
        residual, spread = np.asarray(residual, dtype=float), np.asarray(spread, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(spread > 0, 1.0 - residual / spread, np.where(residual == 0, 1.0, 0.0))
        return float(np.mean(r2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


def _as_target_columns(y, shape):
    """``y`` (numpy or Dask, one target or several) as a matrix of ``shape``, the shape of
    the predictions: a vector is one column, as scikit-learn's ``r2_score`` takes it (never
    broadcast against a column into a square)."""
    if not is_dask(y):
        y = np.asarray(y, dtype=np.float64)
        if y.size != int(np.prod(shape)):
            raise ValueError(f"y has shape {y.shape}; the predictions have shape {shape}.")
        return y.reshape(shape)
    y, _ = dask_frame_to_array(y)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[1] != shape[1]:
        raise ValueError(f"y has shape {y.shape}; the predictions have shape {shape}.")
    return y.astype(np.float64)


def join_targets(X, Y):
    """The features with the targets as extra columns, for one Gram round of them all.

    Parameters
    ----------
    X : ndarray, sparse matrix or Dask array of shape (n_samples, n_features)
    Y : array-like, Dask array or Dask DataFrame of shape (n_samples, n_targets)

    Returns
    -------
    tuple
        ``([X, Y], Y)``: the joined matrix in float64 (CSR for sparse ``X``) and ``Y`` as
        a 2-D float64 array; both Dask arrays with ``X``'s row chunks when either input
        is one.

    Raises
    ------
    ValueError
        When the rows differ, or in-memory ``Y`` holds NaN or infinity.
    """
    if is_dask(X) or is_dask(Y):
        import dask.array as da

        if is_dask(Y):
            Y, _ = dask_frame_to_array(Y)
        if not is_dask(X):
            rows = Y.chunks[0]
            X = da.from_array(X, chunks=(rows, -1))
        Y = da.asarray(Y).astype(np.float64).rechunk({0: X.chunks[0], 1: -1})
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"y has shape {Y.shape}; expected ({X.shape[0]}, n_targets).")
        return da.concatenate([X.astype(np.float64), Y], axis=1), Y
    Y = np.asarray(Y, dtype=np.float64)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {Y.shape[0]} rows; X has {X.shape[0]}.")
    if not np.isfinite(Y).all():
        raise ValueError("Input y contains NaN or infinity.")
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(Y)], format="csr", dtype=np.float64), Y
    return np.hstack([X.astype(np.float64, copy=False), Y]), Y
