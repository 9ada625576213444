"""Cross-validated ridge regression from Gram statistics: :class:`RidgeCV`.

"Compute once, solve many": k-fold needs one read of ``X`` (every fold's Gram statistics
in one round; training sets are sums of them, every alpha of every fold is solved on the
driver); leave-one-out needs two (the Gram statistics, then every row's leverage and
error at every alpha).
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from functools import reduce as fold_left

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import get_scorer, get_scorer_names
from sklearn.utils import check_scalar

from ..engine import is_dask
from ..engine.driver_passes import records_driver_passes
from ..fitting.cross_validation import (
    fold_gram_statistics,
    gram_statistics,
    leave_one_out_errors_by_partition,
    leave_one_out_errors_summed,
)
from ..model.families import Gaussian
from .cv_folds import assign_folds
from .linear import Ridge
from .multi_output import is_two_dimensional, join_targets
from .validation import each_with_known_rows

__all__ = ["RidgeCV"]

#: Scorers computed from Gram statistics and sums over rows (any data, k folds too).
SUMMED_SCORERS = (None, "r2", "neg_mean_squared_error")
#: With k folds, explained variance too: each fold's residual mean is in its statistics.
K_FOLD_SCORERS = SUMMED_SCORERS + ("explained_variance",)


@dataclass
class _Targets:
    """Centred weighted Gram statistics of ``X`` and ``k`` targets: ``sxy`` (d, k), the
    targets' means ``mean_y`` (k,) and centred sums of squares ``syy`` (k,)."""

    weight: float
    mean_x: np.ndarray
    mean_y: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray
    syy: np.ndarray
    #: Machine precision of the data (float32 data give float32-accurate Gram sums).
    eps: float = float(np.finfo(np.float64).eps)

    @classmethod
    def of(cls, stats, n_features, dtype=np.float64):
        """From the Gram statistics of ``X`` and its target, or of ``[X, Y]`` (the targets
        as extra columns, :func:`join_targets`: their blocks are the targets' moments)."""
        d, eps = n_features, float(np.finfo(dtype).eps)
        if stats.sxx.shape[0] == d:
            return cls(stats.weight, stats.mean_x, np.array([stats.mean_y]), stats.sxx,
                       stats.sxy[:, None], np.array([stats.syy]), eps)
        return cls(stats.weight, stats.mean_x[:d], stats.mean_x[d:], stats.sxx[:d, :d],
                   stats.sxx[:d, d:], np.diag(stats.sxx[d:, d:]).copy(), eps)

    def uncentred(self):
        """``(X^T W X, X^T W Y)`` about the origin, for fits without an intercept."""
        xtx = self.sxx + self.weight * np.outer(self.mean_x, self.mean_x)
        return xtx, self.sxy + self.weight * np.outer(self.mean_x, self.mean_y)


def _ridge_eigen(stats, fit_intercept):
    """Eigenvalues and vectors of the (centred with an intercept) Gram matrix, and ``X^T W Y``."""
    xtx, xty = (stats.sxx, stats.sxy) if fit_intercept else stats.uncentred()
    eigenvalues, vectors = np.linalg.eigh(xtx)
    # Directions the rows do not span (more features than rows, collinear columns) carry
    # no signal and no leverage: in exact arithmetic ``X^T W y`` and every ``x_i`` are
    # orthogonal to them.  Their round-off eigenvalues, divided into round-off, would blow
    # up as alpha -> 0; an infinite eigenvalue makes each such term exactly zero, which
    # gives the minimum-norm solution in that limit, as scikit-learn's n x n modes.
    largest = eigenvalues.max(initial=0.0)
    negligible = eigenvalues <= largest * xtx.shape[0] * stats.eps
    eigenvalues = np.where(negligible, np.inf, eigenvalues)
    return eigenvalues, vectors, xty


def _ridge_path(stats, alphas, fit_intercept):
    """Coefficients ``(n_alphas, k, d)`` and intercepts ``(n_alphas, k)`` of ridge on Gram
    statistics ``stats`` for every alpha and target, from one eigendecomposition."""
    eigenvalues, vectors, xty = _ridge_eigen(stats, fit_intercept)
    projected = vectors.T @ xty  # (d, k)
    # alpha 0 (k folds only) is least squares, minimum-norm: the negligible eigenvalues are inf
    shrunk = projected[None, :, :] / (eigenvalues[None, :, None] + alphas[:, None, None])
    coefs = np.einsum("ij,ajk->aki", vectors, shrunk)
    intercepts = (stats.mean_y[None, :] - coefs @ stats.mean_x if fit_intercept
                  else np.zeros((alphas.size, stats.mean_y.size)))
    return coefs, intercepts


def _ridge_alphas(alphas, leave_one_out):
    """``alphas`` checked as scikit-learn checks them: each a real, > 0 for leave-one-out,
    >= 0 with k folds."""
    bounds = dict(target_type=numbers.Real, min_val=0.0,
                  include_boundaries="neither" if leave_one_out else "left")
    if np.ndim(alphas) == 0:
        return np.atleast_1d(np.float64(check_scalar(alphas, "alphas", **bounds)))
    if len(alphas) == 0:
        raise ValueError("alphas must not be empty.")
    if len(alphas) == 1:
        check_scalar(alphas[0], "alphas", **bounds)
    else:
        for index, alpha in enumerate(alphas):
            check_scalar(alpha, f"alphas[{index}]", **bounds)
    return np.asarray(alphas, dtype=np.float64)


def _ridge_errors(stats, coefs, intercepts):
    """Weighted sums of squared errors ``(n_alphas, k)`` on the rows of ``stats``."""
    shift = stats.mean_y[None, :] - coefs @ stats.mean_x - intercepts
    quadratic = np.einsum("aki,ij,akj->ak", coefs, stats.sxx, coefs)
    cross = np.einsum("aki,ik->ak", coefs, stats.sxy)
    return stats.syy[None, :] - 2.0 * cross + quadratic + stats.weight * shift**2


def _explained_variance(stats, errors, coefs, intercepts):
    """scikit-learn's explained variance ``(n_alphas,)`` on the rows of ``stats`` (the mean
    over targets; 1 where both variances are 0, 0 where only the targets' is)."""
    mean_residual = stats.mean_y[None, :] - coefs @ stats.mean_x - intercepts
    numerator = errors - stats.weight * mean_residual**2  # the residuals' centred sum of squares
    denominator = np.broadcast_to(stats.syy[None, :], numerator.shape)
    score = np.ones_like(numerator)
    valid = (numerator != 0) & (denominator != 0)
    score[valid] = 1.0 - numerator[valid] / denominator[valid]
    score[(numerator != 0) & (denominator == 0)] = 0.0
    return score.mean(axis=1)


def _sum(stats):
    return fold_left(lambda a, b: a + b, stats)


class RidgeCV(Ridge):
    __doc__ = (
        """Ridge regression with ``alpha`` chosen by cross-validation, as
    :class:`sklearn.linear_model.RidgeCV`, for one target or several.

    With k folds, one round reads ``X`` once and returns the weighted Gram statistics of
    every fold (``fold_gram`` in the ledger); every fold's path, the scores and the final
    fit are then solved on the driver (one eigendecomposition per fold), so the passes
    over the data do not grow with the number of alphas or folds.  Memory on the driver
    is ``n_folds * n_features^2`` floats.  With ``cv=None`` (leave-one-out, the default)
    one Gram round gives every alpha's coefficients, and one more round each row's exact
    leave-one-out error for every alpha.  Several targets (``y`` of shape (n_samples, k))
    travel as ``k`` extra columns of ``X`` through the same rounds, as for :class:`Ridge`.

    Parameters
    ----------
    alphas : float or array-like of float, default=(0.1, 1.0, 10.0)
        Penalty strengths to try, > 0 (``||y - X coef - intercept||^2_W + alpha
        ||coef||^2``, as :class:`Ridge`).
    fit_intercept : bool, default=True
    scoring : str, callable or None, default=None
        Held-out score to maximise, weighing the held-out rows by ``sample_weight`` as
        scikit-learn; None is R^2 with k folds and minus the mean of ``w e^2`` over rows
        for leave-one-out (``e`` the leave-one-out errors), as scikit-learn.  With several
        targets the score is the mean over the targets (scikit-learn's uniform average).
        None, ``"r2"`` and ``"neg_mean_squared_error"`` come from the Gram statistics
        (any data, k folds or leave-one-out).  Any other scikit-learn scorer name, or a
        callable, is applied on the driver to every row's leave-one-out prediction, as
        scikit-learn: ``cv=None`` and in-memory data only (the same two rounds; the
        ``n_samples * n_targets * n_alphas`` predictions come to the driver).
    cv : int, cross-validation splitter or None, default=None
        None: exact leave-one-out, as scikit-learn (one ``gram`` round, then one
        ``leave_one_out`` round computing every row's leverage and error for every alpha).
        Otherwise folds on the rows; every row must be held out exactly once.
    gcv_mode : {None, "auto", "svd", "eigen"}, default=None
        scikit-learn's choice of decomposition for leave-one-out.  Every value gives the
        same exact leave-one-out errors here, from the eigendecomposition of the
        ``d x d`` Gram matrix ``X^T W X`` (centred with an intercept): scikit-learn's
        ``"auto"`` with ``n_samples > n_features`` (its "cov" mode).  ``"svd"`` and
        ``"eigen"`` are accepted and computed the same way (no ``n x n`` matrix is formed).
    store_cv_results : bool, default=False
        With ``cv=None``, keep every row's leave-one-out result in ``cv_results_``
        (brought to the driver: ``n_samples * n_targets * n_alphas`` floats).
    alpha_per_target : bool, default=False
        With ``cv=None`` and several targets, choose an alpha for each target (from the
        same two rounds); ``alpha_`` and ``best_score_`` are then arrays.  As in
        scikit-learn, not with k folds.
    missing : {"error", "mean"}, default="error"
        Missing values in ``X``: ``"error"`` refuses them; ``"mean"`` fills each numeric
        column's with its mean at fit (one pass over Dask data, kept in ``column_means_``
        or the table encoding for prediction) and gives a table's categorical columns a
        level of their own, ``"(missing)"``.
    cache : {"auto", "memory", "none"}, default="auto"
        As for :class:`Ridge`.

    Attributes
    ----------
    alpha_ : float or ndarray of shape (n_targets,)
        The chosen alpha (one per target with ``alpha_per_target``).
    best_score_ : float or ndarray of shape (n_targets,)
        Its held-out score (mean over the folds with k folds).
    cv_scores_ : ndarray of shape (n_alphas, n_folds)
        Held-out score of every alpha on every fold (k-fold only).
    mse_path_ : ndarray of shape (n_alphas, n_folds)
        Held-out mean squared error of every alpha on every fold, averaged over the
        targets (k-fold only).
    cv_results_ : ndarray of shape (n_samples, n_alphas) or (n_samples, n_targets, n_alphas)
        With ``cv=None`` and ``store_cv_results``: every row's weighted squared
        leave-one-out error (``scoring=None``) or leave-one-out prediction, as scikit-learn.
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    comm_ : CommReport
        The rounds: ``validate``, then ``sizes`` (with more than one partition) and
        ``fold_gram``, or ``gram`` and ``leave_one_out`` for ``cv=None``.
    n_features_in_ : int
    """
    )

    def __init__(self, alphas=(0.1, 1.0, 10.0), *, fit_intercept=True, scoring=None, cv=None,
                 gcv_mode=None, store_cv_results=False, alpha_per_target=False, cache="auto",
                 missing="error"):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results
        self.alpha_per_target = alpha_per_target
        self.cache = cache
        self.missing = missing

    solver = "normal"
    solver_options = None
    verbose = 0

    def _rescalable(self):
        return False

    def _check_cv_params(self):
        if not (callable(self.scoring) or self.scoring in SUMMED_SCORERS
                or (isinstance(self.scoring, str) and self.scoring in get_scorer_names())):
            raise ValueError(
                f"scoring must be None, a callable or one of scikit-learn's scorer names "
                f"(sklearn.metrics.get_scorer_names()); got {self.scoring!r}."
            )
        if self.gcv_mode not in (None, "auto", "svd", "eigen"):
            raise ValueError(
                f"gcv_mode must be None, 'auto', 'svd' or 'eigen'; got {self.gcv_mode!r}."
            )
        if self.cv is not None and self.store_cv_results:
            raise ValueError("cv!=None and store_cv_results=True are incompatible "
                             "(store_cv_results needs cv=None, leave-one-out).")
        if self.cv is not None and self.alpha_per_target:
            raise ValueError("cv!=None and alpha_per_target=True are incompatible "
                             "(alpha_per_target needs cv=None, leave-one-out).")
        if self.scoring not in K_FOLD_SCORERS and self.cv is not None:
            raise ValueError(
                f"scoring={self.scoring!r} with k folds: use one of the scorers computed "
                f"from the folds' Gram statistics ({', '.join(map(repr, K_FOLD_SCORERS))}), "
                f"or cv=None (leave-one-out) for any scorer on in-memory data."
            )

    @records_driver_passes
    def fit(self, X, y, sample_weight=None):
        """Fit every fold's path from one pass over the data, choose alpha, fit all rows.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like or Dask array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._check_params()
        alphas = _ridge_alphas(self.alphas, leave_one_out=self.cv is None)
        self._check_cv_params()
        several = is_two_dimensional(y)
        if several:
            first = y[:, 0] if is_dask(y) else np.asarray(y)[:, 0]
            X, first, sample_weight = self._validate_input(X, first, sample_weight)
            if self.cv is not None:  # k folds: their splits need the number of rows
                X, y, sample_weight = each_with_known_rows(X, y, sample_weight)
            data, y = join_targets(X, y)
            engine_y = y[:, 0]
        else:
            X, y, sample_weight = self._validate_input(X, y, sample_weight)
            if self.cv is not None:
                X, y, sample_weight = each_with_known_rows(X, y, sample_weight)
            data = X
            y = engine_y = self._prepare_target(y)
        n_features = int(X.shape[1])
        if self.gcv_mode == "svd" and sp.issparse(X) and self.cv is None:
            warnings.warn("The 'svd' mode is not supported for sparse X, we fallback to "
                          "`gcv_mode='eigen'` (every mode is the Gram eigendecomposition "
                          "here).", FutureWarning, stacklevel=2)
        on_driver = self.scoring not in (SUMMED_SCORERS if self.cv is None else K_FOLD_SCORERS)
        if on_driver and any(map(is_dask, (data, y, sample_weight))):
            raise ValueError(
                f"scoring={self.scoring!r} is evaluated on the driver and needs in-memory "
                f"(numpy or sparse) data; on Dask data use one of "
                f"{', '.join(map(repr, SUMMED_SCORERS))}."
            )
        if self.cv is None:
            self._fit_leave_one_out(data, y, engine_y, sample_weight, alphas, n_features)
        else:
            self._fit_k_fold(data, y, engine_y, sample_weight, alphas, n_features)
        if not several or not self.fit_intercept:  # one intercept, or none: a scalar
            self.intercept_ = self._fit_dtype.type(self.intercept_[0])
        if not several or self.coef_.shape[0] == 1:
            self.coef_ = self.coef_[0]
        return self

    def _fit_k_fold(self, data, y, engine_y, sample_weight, alphas, n_features):
        """Every fold's Gram statistics from one round; every path on the driver."""
        splits = assign_folds(self.cv, y, data.shape[0], classifier=False)
        if not splits.is_partition:
            # training sets are sums of the test sets' Gram statistics: k-fold splits only
            raise ValueError(
                "RidgeCV's cv must hold out every row exactly once, training on all the "
                "others (KFold, StratifiedKFold and the like); got overlapping or partial folds."
            )
        fold_ids, n_folds = splits.ids, splits.n_folds
        with self._engine(data, engine_y, sample_weight, Gaussian()) as engine:
            grams = fold_gram_statistics(engine, fold_ids, n_folds)
            self.comm_ = engine.ledger
            self.comm_.method = "ridge_cv"
        folds = [_Targets.of(stats, n_features, self._fit_dtype) for stats in grams]
        mse = np.empty((alphas.size, n_folds))
        scores = np.empty((alphas.size, n_folds))
        for fold in range(n_folds):
            training = _Targets.of(_sum([g for f, g in enumerate(grams) if f != fold]),
                                   n_features, self._fit_dtype)
            coefs, intercepts = _ridge_path(training, alphas, self.fit_intercept)
            errors = _ridge_errors(folds[fold], coefs, intercepts)  # (n_alphas, k)
            mse[:, fold] = (errors / folds[fold].weight).mean(axis=1)
            if self.scoring == "neg_mean_squared_error":
                scores[:, fold] = -mse[:, fold]
            elif self.scoring == "explained_variance":
                scores[:, fold] = _explained_variance(folds[fold], errors, coefs, intercepts)
            else:
                scores[:, fold] = (1.0 - errors / folds[fold].syy[None, :]).mean(axis=1)
        best = int(np.argmax(scores.mean(axis=1)))
        coef, intercept = _ridge_path(_Targets.of(_sum(grams), n_features, self._fit_dtype),
                                      alphas[best:best + 1], self.fit_intercept)
        self.alpha_ = float(alphas[best])
        self.best_score_ = float(scores[best].mean())
        self.cv_scores_, self.mse_path_ = scores, mse
        self._set_ridge(coef[0], intercept[0])

    def _set_ridge(self, coef, intercept):
        self.coef_ = np.asarray(coef).astype(self._fit_dtype)
        self.intercept_ = np.asarray(intercept).astype(self._fit_dtype)
        self.solver_ = "normal"
        self.n_iter_, self.converged_, self.history_ = 1, True, []

    def _fit_leave_one_out(self, data, y, engine_y, sample_weight, alphas, n_features):
        """Exact leave-one-out errors of every alpha and target: one Gram round, one error
        round (the targets' residuals come from the extra columns of ``data``)."""
        with self._engine(data, engine_y, sample_weight, Gaussian()) as engine:
            joined = gram_statistics(engine)
            stats = _Targets.of(joined, n_features, self._fit_dtype)
            eigenvalues, vectors, _ = _ridge_eigen(stats, self.fit_intercept)
            coefs, intercepts = _ridge_path(stats, alphas, self.fit_intercept)
            args = _leave_one_out_models(joined, stats, vectors, coefs, intercepts,
                                         self.fit_intercept)
            args = (args[0], eigenvalues, args[1], np.tile(alphas, stats.mean_y.size),
                    args[2], args[3], stats.weight)
            if self.store_cv_results or self.scoring not in SUMMED_SCORERS:
                parts = leave_one_out_errors_by_partition(engine, *args)
                errors = _sum(parts)
                per_row = np.concatenate([part.per_row for part in parts])
            else:
                errors = leave_one_out_errors_summed(engine, *args)
            self.comm_ = engine.ledger
            self.comm_.method = "ridge_cv"
        n_targets = stats.mean_y.size
        weighted = errors.weighted.reshape(n_targets, alphas.size).T  # (n_alphas, k)
        if self.scoring is None:  # scikit-learn: the mean over rows of w e^2
            scores = -weighted / errors.rows
        elif self.scoring == "neg_mean_squared_error":  # the scorers weigh rows by w
            scores = -weighted / errors.weight
        elif self.scoring == "r2":
            scores = 1.0 - weighted / stats.syy[None, :]
        else:
            scores = self._scorer_scores(per_row, y, sample_weight, n_targets, alphas.size)
        if self.alpha_per_target and n_targets > 1:
            best = np.argmax(scores, axis=0)
            self.alpha_ = alphas[best]
            self.best_score_ = scores[best, np.arange(n_targets)]
            coef, intercept = coefs[best, np.arange(n_targets)], intercepts[best, np.arange(n_targets)]
        else:
            best = int(np.argmax(scores.mean(axis=1)))
            self.alpha_ = float(alphas[best])
            self.best_score_ = float(scores[best].mean())
            coef, intercept = coefs[best], intercepts[best]
            if self.alpha_per_target and np.ndim(y) == 2:  # scikit-learn: one score per column
                self.best_score_ = scores[best].copy()
        if self.store_cv_results:
            self.cv_results_ = self._cv_results(per_row, y, sample_weight, n_targets,
                                                alphas.size)
        self._set_ridge(coef, intercept)

    def _scorer_scores(self, per_row, y, sample_weight, n_targets, n_alphas):
        """Scores ``(n_alphas, n_targets or 1)`` of any scorer on the leave-one-out
        predictions, as scikit-learn: per target with ``alpha_per_target`` and a 2-D ``y``,
        else on all targets at once."""
        scorer = get_scorer(self.scoring)
        targets = np.asarray(y, dtype=np.float64)
        predictions = targets.reshape(-1, n_targets)[:, :, None] - per_row.reshape(
            -1, n_targets, n_alphas)
        extra = {} if sample_weight is None else {
            "sample_weight": np.asarray(sample_weight, dtype=np.float64)}
        identity = _Predictions()
        by_target = self.alpha_per_target and targets.ndim == 2
        scores = np.empty((n_alphas, n_targets if by_target else 1))
        for a in range(n_alphas):
            if by_target:
                scores[a] = [scorer(identity, predictions[:, j, a], targets[:, j], **extra)
                             for j in range(n_targets)]
            else:
                predicted = predictions[:, :, a].reshape(targets.shape)
                scores[a, 0] = scorer(identity, predicted, targets, **extra)
        return scores

    def _cv_results(self, per_row, y, sample_weight, n_targets, n_alphas):
        """scikit-learn's ``cv_results_``: every row's ``w e^2`` (``scoring=None``) or
        leave-one-out prediction, per target and alpha."""
        errors = per_row.reshape(-1, n_targets, n_alphas)
        if self.scoring is None:
            row_weight = (np.ones(errors.shape[0]) if sample_weight is None
                          else np.asarray(sample_weight, dtype=np.float64))
            results = row_weight[:, None, None] * errors**2
        else:
            targets = np.asarray(y, dtype=np.float64).reshape(-1, n_targets)
            results = targets[:, :, None] - errors
        results = results[:, 0, :] if np.ndim(y) == 1 else results
        return results.astype(self._fit_dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class _Predictions(RegressorMixin, BaseEstimator):
    """A regressor whose "X" is its predictions: scorers applied to given predictions."""

    def predict(self, predictions):
        return predictions


def _leave_one_out_models(joined, stats, vectors, coefs, intercepts, fit_intercept):
    """The arguments of :func:`~daskglm.compute.folds.leave_one_out_errors` for every
    target and alpha on the columns of the engine's data (``X``, or ``[X, Y]``): the
    eigenvectors padded with
    zero rows, the column means, and one model per (target, alpha), target-major, whose
    residual ``y - x coef - intercept`` is that target's residual.

    With the targets as extra columns and the engine's ``y`` the first target, target
    ``j``'s residual is ``y_0 - (x coef_j + y_0 - y_j) - intercept_j``: its model carries
    ``+1`` on column ``y_0`` and ``-1`` on column ``y_j`` (nothing for ``j = 0``).
    """
    n_alphas, n_targets, d = coefs.shape
    width = joined.sxx.shape[0]
    basis = np.zeros((width, d))
    basis[:d] = vectors
    models = np.zeros((n_targets, n_alphas, width))
    models[:, :, :d] = np.swapaxes(coefs, 0, 1)
    for j in range(1, n_targets):
        models[j, :, d] += 1.0
        models[j, :, d + j] -= 1.0
    means = joined.mean_x if fit_intercept else None
    return basis, means, models.reshape(n_targets * n_alphas, width), intercepts.T.ravel()
