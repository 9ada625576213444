"""Cross-validated ridge regression from Gram statistics: :class:`RidgeCV`.

"Compute once, solve many": k-fold needs one read of ``X`` (every fold's Gram statistics
in one round; training sets are sums of them, every alpha of every fold is solved on the
driver); leave-one-out needs two (the Gram statistics, then every row's leverage and
error at every alpha).  Re-exported by :mod:`daskglm.estimators.cv`.
"""

from __future__ import annotations

from functools import reduce as fold_left

import numpy as np

from ..accounting.kinds import Kind
from ..compute.folds import fold_grams, leave_one_out_errors
from ..compute.kernels import gram
from ..engine.folds import fold_ids_by_partition
from ..model.families import Gaussian
from .cv_folds import _assign_folds, _positive_grid
from .linear import Ridge

__all__ = ["RidgeCV"]


def _ridge_eigen(stats, fit_intercept):
    """Eigenvalues and vectors of the (centred with an intercept) Gram matrix, and ``X^T W y``."""
    xtx, xty = (stats.sxx, stats.sxy) if fit_intercept else stats.uncentred()
    eigenvalues, vectors = np.linalg.eigh(xtx)
    return eigenvalues, vectors, xty


def _ridge_path(stats, alphas, fit_intercept):
    """Coefficients ``(n_alphas, d)`` and intercepts of ridge on Gram statistics ``stats``
    for every alpha, from one eigendecomposition."""
    eigenvalues, vectors, xty = _ridge_eigen(stats, fit_intercept)
    projected = vectors.T @ xty
    coefs = (projected[None, :] / (eigenvalues[None, :] + alphas[:, None])) @ vectors.T
    intercepts = (stats.mean_y - coefs @ stats.mean_x if fit_intercept
                  else np.zeros(alphas.size))
    return coefs, intercepts


def _ridge_errors(stats, coefs, intercepts):
    """Weighted sums of squared errors on the rows of ``stats`` for every model."""
    shift = stats.mean_y - coefs @ stats.mean_x - intercepts
    quadratic = np.einsum("ij,jk,ik->i", coefs, stats.sxx, coefs)
    return stats.syy - 2.0 * coefs @ stats.sxy + quadratic + stats.weight * shift**2


class RidgeCV(Ridge):
    __doc__ = (
        """Ridge regression with ``alpha`` chosen by cross-validation, as
    :class:`sklearn.linear_model.RidgeCV`.

    With k folds, one round reads ``X`` once and returns the weighted Gram statistics of
    every fold (``fold_gram`` in the ledger); every fold's path, the scores and the final
    fit are then solved on the driver (one eigendecomposition per fold), so the passes
    over the data do not grow with the number of alphas or folds.  Memory on the driver
    is ``n_folds * n_features^2`` floats.  With ``cv=None`` (leave-one-out, the default)
    one Gram round gives every alpha's coefficients, and one more round each row's exact
    leave-one-out error for every alpha.

    Parameters
    ----------
    alphas : array-like of float, default=(0.1, 1.0, 10.0)
        Penalty strengths to try, > 0 (``||y - X coef - intercept||^2_W + alpha
        ||coef||^2``, as :class:`Ridge`).
    fit_intercept : bool, default=True
    scoring : {None, "r2", "neg_mean_squared_error"}, default=None
        Held-out score to maximise, weighing the held-out rows by ``sample_weight`` as
        scikit-learn; None is R^2 with k folds and minus the mean of ``w e^2`` over rows
        for leave-one-out (``e`` the leave-one-out errors), as scikit-learn.
    cv : int, cross-validation splitter or None, default=None
        None: exact leave-one-out, as scikit-learn (one ``gram`` round, then one
        ``leave_one_out`` round computing every row's leverage and error for every alpha).
        Otherwise folds on the rows; every row must be held out exactly once.
    store_cv_results : bool, default=False
        With ``cv=None``, keep every row's leave-one-out result in ``cv_results_``
        (brought to the driver: ``n_samples * n_alphas`` floats).
    cache : {"auto", "memory", "none"}, default="auto"
        As for :class:`Ridge`.

    Attributes
    ----------
    alpha_ : float
        The chosen alpha.
    best_score_ : float
        Its mean held-out score over the folds.
    cv_scores_ : ndarray of shape (n_alphas, n_folds)
        Held-out score of every alpha on every fold (k-fold only).
    mse_path_ : ndarray of shape (n_alphas, n_folds)
        Held-out mean squared error of every alpha on every fold (k-fold only).
    cv_results_ : ndarray of shape (n_samples, n_alphas)
        With ``cv=None`` and ``store_cv_results``: every row's weighted squared
        leave-one-out error (``scoring=None``) or leave-one-out prediction, as scikit-learn.
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    comm_ : CommReport
        The rounds: ``validate``, then ``sizes`` (with more than one partition) and
        ``fold_gram``, or ``gram`` and ``leave_one_out`` for ``cv=None``.
    n_features_in_ : int
    """
    )

    def __init__(self, alphas=(0.1, 1.0, 10.0), *, fit_intercept=True, scoring=None, cv=None,
                 store_cv_results=False, cache="auto"):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.store_cv_results = store_cv_results
        self.cache = cache

    solver = "normal"
    solver_options = None
    verbose = 0

    def _rescalable(self):
        return False

    def fit(self, X, y, sample_weight=None):
        """Fit every fold's path from one pass over the data, choose alpha, fit all rows.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._check_params()
        alphas = _positive_grid(self.alphas, "alphas")
        if self.scoring not in (None, "r2", "neg_mean_squared_error"):
            raise ValueError(
                f"scoring must be None, 'r2' or 'neg_mean_squared_error'; got {self.scoring!r}."
            )
        if self.store_cv_results and self.cv is not None:
            raise ValueError("store_cv_results needs cv=None (leave-one-out).")
        X, y, sample_weight = self._validate_input(X, y, sample_weight)
        y = self._prepare_target(y)
        if self.cv is None:
            return self._fit_leave_one_out(X, y, sample_weight, alphas)
        fold_ids, n_folds = _assign_folds(self.cv, y, X.shape[0], classifier=False)
        with self._engine(X, y, sample_weight, Gaussian()) as engine:
            each = fold_ids_by_partition(engine, fold_ids)
            folds = engine.reduce_each(fold_grams, each, n_folds, kind=Kind.FOLD_GRAM).folds
            self.comm_ = engine.ledger
            self.comm_.method = "ridge_cv"
        mse = np.empty((alphas.size, n_folds))
        scores = np.empty((alphas.size, n_folds))
        for fold in range(n_folds):
            training = fold_left(lambda a, b: a + b,
                                 [stats for f, stats in enumerate(folds) if f != fold])
            coefs, intercepts = _ridge_path(training, alphas, self.fit_intercept)
            errors = _ridge_errors(folds[fold], coefs, intercepts)
            mse[:, fold] = errors / folds[fold].weight
            scores[:, fold] = (-mse[:, fold] if self.scoring == "neg_mean_squared_error"
                               else 1.0 - errors / folds[fold].syy)
        best = int(np.argmax(scores.mean(axis=1)))
        coef, intercept = _ridge_path(fold_left(lambda a, b: a + b, folds), alphas[best:best + 1],
                                      self.fit_intercept)
        self.alpha_ = float(alphas[best])
        self.best_score_ = float(scores[best].mean())
        self.cv_scores_, self.mse_path_ = scores, mse
        self._set_ridge(coef[0], intercept[0])
        return self

    def _set_ridge(self, coef, intercept):
        self.coef_ = np.asarray(coef).astype(self._fit_dtype)
        self.intercept_ = self._fit_dtype.type(intercept)
        self.solver_ = "normal"
        self.n_iter_, self.converged_, self.history_ = 1, True, []

    def _fit_leave_one_out(self, X, y, sample_weight, alphas):
        """Exact leave-one-out errors of every alpha: one Gram round, one error round."""
        with self._engine(X, y, sample_weight, Gaussian()) as engine:
            stats = engine.reduce(gram, kind=Kind.GRAM)
            eigenvalues, vectors, _ = _ridge_eigen(stats, self.fit_intercept)
            coefs, intercepts = _ridge_path(stats, alphas, self.fit_intercept)
            means = stats.mean_x if self.fit_intercept else None
            args = (vectors, eigenvalues, means, alphas, coefs, intercepts, stats.weight)
            if self.store_cv_results:
                parts = engine.map(leave_one_out_errors, *args, True, kind=Kind.LEAVE_ONE_OUT)
                errors = fold_left(lambda a, b: a + b, parts)
                per_row = np.concatenate([part.per_row for part in parts])
            else:
                errors = engine.reduce(leave_one_out_errors, *args, kind=Kind.LEAVE_ONE_OUT)
            self.comm_ = engine.ledger
            self.comm_.method = "ridge_cv"
        n, total = errors.rows, errors.weight
        if self.scoring is None:  # scikit-learn: the mean over rows of w e^2
            scores = -errors.weighted / n
        elif self.scoring == "neg_mean_squared_error":  # the scorers weigh rows by w
            scores = -errors.weighted / total
        else:
            scores = 1.0 - errors.weighted / (errors.y_squares - errors.y_sum**2 / total)
        best = int(np.argmax(scores))
        self.alpha_ = float(alphas[best])
        self.best_score_ = float(scores[best])
        if self.store_cv_results:
            row_weight = (np.ones(n) if sample_weight is None
                          else np.asarray(sample_weight, dtype=np.float64))
            y_rows = np.asarray(y, dtype=np.float64)
            self.cv_results_ = (row_weight[:, None] * per_row**2 if self.scoring is None
                                else y_rows[:, None] - per_row)
        self._set_ridge(coefs[best], intercepts[best])
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False  # one target: the multi-output fit is not here
        return tags
