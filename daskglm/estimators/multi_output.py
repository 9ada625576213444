"""Coefficient matrices: predictions of ``coef_`` of shape (k, d), and multi-output fits.

:func:`matrix_predictor` is ``X @ coef_.T + intercept_`` for numpy, sparse and Dask input
(lazily, block by block), used by multi-output regression and by one-vs-rest
classification.  :class:`_MultiOutputMixin` gives :class:`~daskglm.LinearRegression`,
:class:`~daskglm.Ridge`, :class:`~daskglm.Lasso` and :class:`~daskglm.ElasticNet` a 2-D
``y`` of shape (n_samples, k), as scikit-learn: with the normal equations ALL targets are
solved from ONE Gram round (the targets ride as extra columns, so ``X^T W Y`` comes with
``X^T W X``); other solvers fit each target in turn (``k`` fits: ``k`` validation rounds and
``k`` times the solver's rounds, ``X`` read once per target).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..compute.kernels import as_csr_or_dense
from ..compute.summaries import all_finite
from ..engine import is_dask
from .validation import _check_dask_matrix, _dask_frame_to_array, _reject_datetimes

__all__ = ["matrix_predictor"]


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
    coef = np.asarray(estimator.coef_)
    intercept = np.asarray(estimator.intercept_, dtype=coef.dtype).reshape(-1)
    if is_dask(X):
        X, _ = _dask_frame_to_array(X)
        _check_dask_matrix(X)
        if X.shape[1] != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                f"{estimator.n_features_in_} features as input."
            )
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        return X.map_blocks(_block_matrix_predictor, coef, intercept,
                            chunks=(X.chunks[0], (coef.shape[0],)), dtype=coef.dtype)
    _reject_datetimes(X)
    X = validate_data(estimator, X, reset=False, accept_sparse=["csr", "csc", "coo"],
                      dtype=[np.float64, np.float32])
    return (np.asarray(X @ coef.T) + intercept).astype(coef.dtype, copy=False)
