"""Per-row-block linear predictions and their variances, for prediction intervals.

:func:`linear_prediction_block` gives, for each row ``x_i`` of a block, the linear
predictor ``z_i^T params`` and its variance ``z_i^T Sigma z_i`` (``z_i = (1, x_i)`` with
an intercept, ``x_i`` without), where ``Sigma`` is the covariance of ``params``: the work
per row of :meth:`get_prediction`, done where the block lives.  Nothing in this module
imports dask.
"""

from __future__ import annotations

import numpy as np

from ..backend import to_host
from .kernels import as_csr_or_dense
from .summaries import all_finite

__all__ = ["linear_prediction_block"]


def linear_prediction_block(X_block, params, cov, fit_intercept):
    """The linear predictors of a row block and their variances, in float64.

    Parameters
    ----------
    X_block : ndarray or sparse matrix of shape (n_rows, n_features)
        Host or device; the result is on the host.
    params : ndarray of shape (n_params,)
        The intercept first (when ``fit_intercept``), then the coefficients.
    cov : ndarray of shape (n_params, n_params)
        The covariance of ``params``, in the same order.
    fit_intercept : bool

    Returns
    -------
    ndarray of shape (n_rows, 2)
        Column 0 the linear predictor (without offset), column 1 its variance.

    Raises
    ------
    ValueError
        When the block holds NaN or infinity.
    """
    X_block = as_csr_or_dense(to_host(X_block))
    if X_block.dtype != np.float64:
        X_block = X_block.astype(np.float64)
    params = np.asarray(params, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    start = 1 if fit_intercept else 0
    coef, cov_coef = params[start:], cov[start:, start:]
    eta = np.asarray(X_block @ coef).ravel()
    product = np.asarray(X_block @ cov_coef)
    if hasattr(X_block, "multiply"):  # sparse: only the stored entries
        quadratic = np.asarray(X_block.multiply(product).sum(axis=1)).ravel()
    else:
        quadratic = np.einsum("ij,ij->i", X_block, product)
    if fit_intercept:
        eta = eta + params[0]
        quadratic = quadratic + 2.0 * np.asarray(X_block @ cov[start:, 0]).ravel() + cov[0, 0]
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return np.column_stack([eta, np.maximum(quadratic, 0.0)])
